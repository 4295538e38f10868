// Integer evaluation under bound values (eval_int.h), shared by the analyses that
// enumerate accesses so that they agree on what an index is.
#include "transform/eval_int.h"

#include <algorithm>
#include <iterator>

#include "transform/simplify.h"

namespace tilec::transform {

using namespace ir;

std::optional<int64_t> eval_int(const Expr& e, const IntEnv& env) {
    switch (e->kind) {
    case ExprKind::IntImm: return static_cast<const IntImmNode*>(e.get())->value;
    case ExprKind::Var: {
        auto* v = static_cast<const VarNode*>(e.get());
        for (size_t k = env.size(); k-- > 0;)
            if (env[k].first == v) return env[k].second;
        return std::nullopt;
    }
    case ExprKind::Cast: {
        if (!e->type.is_integer() && e->type.kind != TypeKind::Bool) return std::nullopt;
        auto v = eval_int(static_cast<const CastNode*>(e.get())->value, env);
        if (v && e->type.kind == TypeKind::Bool) return *v != 0;
        return v;
    }
    case ExprKind::Unary: {
        auto* u = static_cast<const UnaryNode*>(e.get());
        auto a = eval_int(u->a, env);
        if (!a) return std::nullopt;
        switch (u->op) {
        case UnaryOp::Neg: return static_cast<int64_t>(0 - static_cast<uint64_t>(*a));
        case UnaryOp::Not: return *a == 0;
        case UnaryOp::BitNot: return ~*a;
        }
        return std::nullopt;
    }
    case ExprKind::Select: {
        auto* s = static_cast<const SelectNode*>(e.get());
        auto c = eval_int(s->cond, env);
        if (!c) return std::nullopt;
        return eval_int(*c ? s->t : s->f, env);
    }
    case ExprKind::Binary: {
        auto* b = static_cast<const BinaryNode*>(e.get());
        if (!b->a->type.is_integer() && b->a->type.kind != TypeKind::Bool) return std::nullopt;
        auto x = eval_int(b->a, env);
        if (!x) return std::nullopt;
        auto y = eval_int(b->b, env);
        if (!y) return std::nullopt;
        return fold_int_binary(b->op, *x, *y, b->a->type);
    }
    default: return std::nullopt;
    }
}

IntProgram::IntProgram(const Expr& e, const std::vector<const VarNode*>& slots) : slot_count_(slots.size()) {
    registers_ = static_cast<uint32_t>(slots.size());
    slots_ = &slots;
    ir::NodeRegisters regs;
    regs_ = &regs;
    result_ = emit(e);
    slots_ = nullptr;
    regs_ = nullptr;
}

// Appends the code of e (what eval_int computes, node by node, its refusals as Fail)
// unless a scope in force has it already; returns the register holding its value.
uint32_t IntProgram::emit(const Expr& e) {
    if (auto reg = ir::compiled_register(e, *slots_, *regs_)) return *reg;
    Inst in{Op::Fail};
    switch (e->kind) {
    case ExprKind::IntImm:
        in.op = Op::Imm;
        in.imm = static_cast<const IntImmNode*>(e.get())->value;
        break;
    case ExprKind::Cast:
        if (!e->type.is_integer() && e->type.kind != TypeKind::Bool) break;
        if (e->type.kind != TypeKind::Bool) return emit(static_cast<const CastNode*>(e.get())->value);
        in.op = Op::ToBool;
        in.a = emit(static_cast<const CastNode*>(e.get())->value);
        break;
    case ExprKind::Unary: {
        auto* u = static_cast<const UnaryNode*>(e.get());
        in.a = emit(u->a);
        switch (u->op) {
        case UnaryOp::Neg: in.op = Op::Neg; break;
        case UnaryOp::Not: in.op = Op::Not; break;
        case UnaryOp::BitNot: in.op = Op::BitNot; break;
        }
        break;
    }
    case ExprKind::Select: {
        auto* sel = static_cast<const SelectNode*>(e.get());
        uint32_t cond = emit(sel->cond);
        return ir::emit_select(code_, *regs_, registers_, *sel, cond,
                               [&](const Expr& side) { return emit(side); });
    }
    case ExprKind::Binary: {
        auto* b = static_cast<const BinaryNode*>(e.get());
        const DataType& t = b->a->type;
        if (!t.is_integer() && t.kind != TypeKind::Bool) break;
        ir::emit_binary_operands(in, *b, [&](const Expr& operand) { return emit(operand); });
        in.op = Op::Binary;
        in.bop = b->op;
        in.type = t;
        if (t.is_integer() && !t.is_bool() && (t.bits == 64 || (t.is_int() && t.bits == 32)))
            in.wrap_bits = static_cast<uint8_t>(t.bits);
        break;
    }
    default: break;  // Fail: an unbound variable, a float, a load
    }
    return ir::append_node(code_, *regs_, registers_, e.get(), in);
}

namespace {

// What fold_int_binary gives for the arithmetic that the indices use, on 64-bit
// integers and i32 (`wrap_bits`), or nullopt for fold_int_binary to compute (or refuse):
// sums and products wrap to the type's width; floor division and modulo by a positive
// divisor; bitwise operators and shifts by less than the width wrap likewise.
inline std::optional<int64_t> fast_binary(BinaryOp op, uint8_t wrap_bits, int64_t a, int64_t b) {
    if (wrap_bits == 0) return std::nullopt;
    auto wrap = [&](uint64_t v) {
        return wrap_bits == 32 ? static_cast<int64_t>(static_cast<int32_t>(static_cast<uint32_t>(v)))
                               : static_cast<int64_t>(v);
    };
    auto ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
    switch (op) {
    case BinaryOp::Add: return wrap(ua + ub);
    case BinaryOp::Sub: return wrap(ua - ub);
    case BinaryOp::Mul: return wrap(ua * ub);
    case BinaryOp::FloorDiv:
    case BinaryOp::FloorMod: {
        if (b <= 0) return std::nullopt;
        int64_t q = a / b, r = a % b;
        if (r < 0) --q, r += b;
        if (op == BinaryOp::FloorMod) return wrap(static_cast<uint64_t>(r));
        if (wrap(static_cast<uint64_t>(q)) != q) return std::nullopt;  // fold_int_binary refuses it
        return q;
    }
    case BinaryOp::BitAnd: return wrap(ua & ub);
    case BinaryOp::BitOr: return wrap(ua | ub);
    case BinaryOp::BitXor: return wrap(ua ^ ub);
    case BinaryOp::Shl:
        if (b < 0 || b >= wrap_bits) return std::nullopt;
        return wrap(ua << b);
    case BinaryOp::Shr:
        if (b < 0 || b >= wrap_bits) return std::nullopt;
        return wrap(static_cast<uint64_t>(a >> b));
    default: return std::nullopt;  // comparisons, logic, min, max: fold_int_binary's as they are
    }
}

}  // namespace

void IntProgram::append_key(std::vector<int64_t>& key) const {
    key.insert(key.end(),
               {int64_t(slot_count_), int64_t(registers_), int64_t(result_), int64_t(code_.size())});
    for (const Inst& in : code_) {
        key.insert(key.end(), {int64_t(in.op), int64_t(in.bop), int64_t(in.wrap_bits), int64_t(in.b_imm),
                               int64_t(in.type.kind), int64_t(in.type.bits), int64_t(in.type.lanes),
                               int64_t(in.dst), int64_t(in.a), int64_t(in.b), in.imm});
    }
}

std::optional<int64_t> IntProgram::run(const int64_t* values) const {
    int64_t small[64];
    std::vector<int64_t> big;
    int64_t* r = small;
    if (registers_ > std::size(small)) {
        big.resize(registers_);
        r = big.data();
    }
    std::copy(values, values + slot_count_, r);
    for (size_t pc = 0; pc < code_.size();) {
        const Inst& in = code_[pc++];
        switch (in.op) {
        case Op::Imm: r[in.dst] = in.imm; break;
        case Op::Fail: return std::nullopt;
        case Op::ToBool: r[in.dst] = r[in.a] != 0; break;
        case Op::Neg: r[in.dst] = static_cast<int64_t>(0 - static_cast<uint64_t>(r[in.a])); break;
        case Op::Not: r[in.dst] = r[in.a] == 0; break;
        case Op::BitNot: r[in.dst] = ~r[in.a]; break;
        case Op::Binary: {
            int64_t a = r[in.a], b = in.b_imm ? in.imm : r[in.b];
            std::optional<int64_t> v = fast_binary(in.bop, in.wrap_bits, a, b);
            if (!v) v = fold_int_binary(in.bop, a, b, in.type);
            if (!v) return std::nullopt;
            r[in.dst] = *v;
            break;
        }
        case Op::Move: r[in.dst] = r[in.a]; break;
        case Op::JumpIfZero:
            if (r[in.a] == 0) pc = static_cast<size_t>(in.imm);
            break;
        case Op::Jump: pc = static_cast<size_t>(in.imm); break;
        }
    }
    return r[result_];
}

}  // namespace tilec::transform
