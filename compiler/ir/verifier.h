// The Tile IR verifier: structural and type invariants every pass must keep. The pass
// manager runs it after each pass; a failure there is a compiler bug, never a user error.
#pragma once
#include <string>
#include <vector>

#include "ir/ir.h"

namespace tilec::ir {

// Returns one message per violation ("line:col: message" when the node has a loc); empty
// when the function is well formed. Checks, among others:
//  - every Var used is defined: a Size/Scalar param, one of the function's block_idx,
//    a ThreadIdx var, or an enclosing For / LetStmt; no Var is defined twice;
//  - every Buffer used is a Tensor param or inside its Allocate; none defined twice;
//    Allocate is never Global, and its shape is constant positive ints;
//  - Load/Store index counts match the rank, indices are integers, Load's type and
//    Store's value type equal the buffer dtype; no Store/copy/fill into an `in` tensor;
//  - regions: start/extent sizes equal the rank; extents of non-global buffers are
//    constant positive ints and within the shape where constant;
//  - tile ops: copy/atomic_add extents agree (ignoring unit dims); gemm operands are
//    rank 2 with agreeing M/N/K, c is a Fragment; reduce/cumsum dims in range;
//    fill/pad values of the buffer's dtype;
//  - types: operands of a binary op agree; If/Assert/Select conditions and And/Or/Not
//    operands are bool; For min/extent integer; integer-only / float-only ops;
//  - warp shuffles (CallOp::ShflXor ...): only in a function with level=thread, never
//    inside a select or the right side of && / ||; a scalar value of up to 64 bits, an
//    i32 lane operand, the value's type as result;
//  - the function: 1..3 grid dims, threads > 0, params of the right kinds.
std::vector<std::string> verify(const PrimFunc& f);

}  // namespace tilec::ir
