// Integer evaluation under bound values (eval_int.h), shared by the analyses that
// enumerate accesses so that they agree on what an index is.
#include "transform/eval_int.h"

#include <algorithm>

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

IntProgram::IntProgram(const Expr& e, const std::vector<const VarNode*>& slots) {
    emit(e, slots, 0);
}

// Appends code that leaves e's value on the stack, `depth` values being below it.
void IntProgram::emit(const Expr& e, const std::vector<const VarNode*>& slots, size_t depth) {
    max_depth_ = std::max(max_depth_, depth + 1);
    auto fail = [&] { code_.push_back({Op::Fail}); };
    switch (e->kind) {
    case ExprKind::IntImm:
        code_.push_back({Op::Imm, BinaryOp::Add, {}, static_cast<const IntImmNode*>(e.get())->value});
        return;
    case ExprKind::Var: {
        for (size_t k = slots.size(); k-- > 0;)
            if (slots[k] == e.get()) {
                code_.push_back({Op::Slot, BinaryOp::Add, {}, static_cast<int64_t>(k)});
                return;
            }
        fail();
        return;
    }
    case ExprKind::Cast:
        if (!e->type.is_integer() && e->type.kind != TypeKind::Bool) return fail();
        emit(static_cast<const CastNode*>(e.get())->value, slots, depth);
        if (e->type.kind == TypeKind::Bool) code_.push_back({Op::ToBool});
        return;
    case ExprKind::Unary: {
        auto* u = static_cast<const UnaryNode*>(e.get());
        emit(u->a, slots, depth);
        switch (u->op) {
        case UnaryOp::Neg: code_.push_back({Op::Neg}); return;
        case UnaryOp::Not: code_.push_back({Op::Not}); return;
        case UnaryOp::BitNot: code_.push_back({Op::BitNot}); return;
        }
        return fail();
    }
    case ExprKind::Select: {
        auto* sel = static_cast<const SelectNode*>(e.get());
        emit(sel->cond, slots, depth);
        size_t to_else = code_.size();
        code_.push_back({Op::JumpIfZero});
        emit(sel->t, slots, depth);
        size_t to_end = code_.size();
        code_.push_back({Op::Jump});
        code_[to_else].arg = static_cast<int64_t>(code_.size());
        emit(sel->f, slots, depth);
        code_[to_end].arg = static_cast<int64_t>(code_.size());
        return;
    }
    case ExprKind::Binary: {
        auto* b = static_cast<const BinaryNode*>(e.get());
        if (!b->a->type.is_integer() && b->a->type.kind != TypeKind::Bool) return fail();
        emit(b->a, slots, depth);
        emit(b->b, slots, depth + 1);
        code_.push_back({Op::Binary, b->op, b->a->type});
        const DataType& t = b->a->type;
        if (t.is_integer() && !t.is_bool() && (t.bits == 64 || (t.is_int() && t.bits == 32)))
            code_.back().wrap_bits = static_cast<uint8_t>(t.bits);
        return;
    }
    default: return fail();
    }
}

namespace {

// What fold_int_binary gives for the arithmetic that the indices use most, on 64-bit
// integers and i32 (`wrap_bits`), or nullopt for fold_int_binary to compute: sums and
// products wrap to the type's width, floor division and modulo by a positive divisor.
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
    default: return std::nullopt;
    }
}

}  // namespace

std::optional<int64_t> IntProgram::run(const int64_t* values) const {
    int64_t small[32];
    std::vector<int64_t> big;
    int64_t* st = small;
    if (max_depth_ > 32) {
        big.resize(max_depth_);
        st = big.data();
    }
    size_t sp = 0;  // values on the stack
    for (size_t pc = 0; pc < code_.size();) {
        const Inst& in = code_[pc++];
        switch (in.op) {
        case Op::Imm: st[sp++] = in.arg; break;
        case Op::Slot: st[sp++] = values[in.arg]; break;
        case Op::Fail: return std::nullopt;
        case Op::ToBool: st[sp - 1] = st[sp - 1] != 0; break;
        case Op::Neg: st[sp - 1] = static_cast<int64_t>(0 - static_cast<uint64_t>(st[sp - 1])); break;
        case Op::Not: st[sp - 1] = st[sp - 1] == 0; break;
        case Op::BitNot: st[sp - 1] = ~st[sp - 1]; break;
        case Op::Binary: {
            int64_t a = st[sp - 2], b = st[sp - 1];
            std::optional<int64_t> v = fast_binary(in.bop, in.wrap_bits, a, b);
            if (!v) v = fold_int_binary(in.bop, a, b, in.type);
            if (!v) return std::nullopt;
            st[sp - 2] = *v;
            --sp;
            break;
        }
        case Op::JumpIfZero:
            if (st[--sp] == 0) pc = static_cast<size_t>(in.arg);
            break;
        case Op::Jump: pc = static_cast<size_t>(in.arg); break;
        }
    }
    return st[0];
}

}  // namespace tilec::transform
