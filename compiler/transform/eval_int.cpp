// Integer evaluation under bound values (eval_int.h), shared by the analyses that
// enumerate accesses so that they agree on what an index is.
#include "transform/eval_int.h"

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

}  // namespace tilec::transform
