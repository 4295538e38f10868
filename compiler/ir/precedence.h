// Operator precedence of the Tile IR's text form, shared by the printer (which brackets
// a child only where its slot binds tighter) and the reader (precedence climbing), so
// the two cannot drift apart.
#pragma once
#include "ir/ir.h"

namespace tilec::ir {

// Precedence levels, loosest first; a child binds at least as tight as its slot needs.
enum Prec : int {
    kSelect = 1,
    kOr,
    kAnd,
    kBitOr,
    kBitXor,
    kBitAnd,
    kEquality,
    kRelational,
    kShift,
    kAdditive,
    kMultiplicative,
    kUnary,
    kPrimary,
};

// The level of a binary operator; kPrimary for those printed as calls (min, max, mod).
int binary_prec(BinaryOp op);

}  // namespace tilec::ir
