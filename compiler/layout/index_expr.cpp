// Folding builders and the evaluator behind every layout. The folding is deliberately
// shallow (constants and units only): the simplifier owns real rewriting, and the
// layout library must not depend on it; this keeps printed layouts readable.
#include "layout/index_expr.h"

#include "support/diagnostics.h"

namespace tilec::layout {

using namespace ir;

namespace {

int64_t floordiv_int(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
int64_t floormod_int(int64_t a, int64_t b) {
    return a - floordiv_int(a, b) * b;
}

}  // namespace

Expr idx(int64_t v) {
    return make_int(v, DataType::index());
}

Expr idx_add(Expr a, Expr b) {
    auto ca = as_const_int(a), cb = as_const_int(b);
    if (ca && cb) return idx(*ca + *cb);
    if (ca && *ca == 0) return b;
    if (cb && *cb == 0) return a;
    return add(std::move(a), std::move(b));
}

Expr idx_mul(Expr a, int64_t c) {
    if (c == 0) return idx(0);
    if (c == 1) return a;
    if (auto ca = as_const_int(a)) return idx(*ca * c);
    return mul(std::move(a), idx(c));
}

Expr idx_floordiv(Expr a, int64_t c) {
    TILEC_CHECK(c > 0, "layout divisor must be positive");
    if (c == 1) return a;
    if (auto ca = as_const_int(a)) return idx(floordiv_int(*ca, c));
    return floordiv(std::move(a), idx(c));
}

Expr idx_floormod(Expr a, int64_t c) {
    TILEC_CHECK(c > 0, "layout modulus must be positive");
    if (c == 1) return idx(0);
    if (auto ca = as_const_int(a)) return idx(floormod_int(*ca, c));
    return floormod(std::move(a), idx(c));
}

Expr idx_xor(Expr a, Expr b) {
    auto ca = as_const_int(a), cb = as_const_int(b);
    if (ca && cb) return idx(*ca ^ *cb);
    if (ca && *ca == 0) return b;
    if (cb && *cb == 0) return a;
    return make_binary(BinaryOp::BitXor, std::move(a), std::move(b));
}

Expr idx_and(Expr a, int64_t mask) {
    if (mask == 0) return idx(0);
    if (auto ca = as_const_int(a)) return idx(*ca & mask);
    return make_binary(BinaryOp::BitAnd, std::move(a), idx(mask));
}

Expr idx_shr(Expr a, int64_t bits) {
    if (bits == 0) return a;
    if (auto ca = as_const_int(a)) return idx(*ca >> bits);
    return make_binary(BinaryOp::Shr, std::move(a), idx(bits));
}

Expr idx_shl(Expr a, int64_t bits) {
    if (bits == 0) return a;
    if (auto ca = as_const_int(a)) return idx(*ca << bits);
    return make_binary(BinaryOp::Shl, std::move(a), idx(bits));
}

std::vector<Var> make_index_vars(size_t n, const std::string& prefix) {
    static const char* kNames[] = {"i", "j", "k", "l", "m", "n"};
    std::vector<Var> vars;
    for (size_t d = 0; d < n; ++d) {
        std::string name = !prefix.empty() ? prefix + std::to_string(d)
                           : d < 6         ? std::string(kNames[d])
                                           : "d" + std::to_string(d);
        vars.push_back(make_var(name, DataType::index(), VarKind::Let));
    }
    return vars;
}

void IndexEnv::bind(const Var& v, int64_t value) {
    for (auto& [var, val] : binds_)
        if (var == v.get()) {
            val = value;
            return;
        }
    binds_.emplace_back(v.get(), value);
}

void IndexEnv::bind(const std::vector<Var>& vars, const std::vector<int64_t>& values) {
    TILEC_CHECK(vars.size() == values.size(), "layout coordinate rank mismatch");
    for (size_t i = 0; i < vars.size(); ++i) bind(vars[i], values[i]);
}

const int64_t* IndexEnv::find(const VarNode* v) const {
    for (const auto& [var, val] : binds_)
        if (var == v) return &val;
    return nullptr;
}

int64_t eval_index(const Expr& e, const IndexEnv& env) {
    switch (e->kind) {
    case ExprKind::IntImm: return e->as<IntImmNode>()->value;
    case ExprKind::Var: {
        const int64_t* v = env.find(e->as<VarNode>());
        TILEC_CHECK(v != nullptr, "layout expression uses an unbound variable " + e->as<VarNode>()->name);
        return *v;
    }
    case ExprKind::Binary: {
        const auto* b = e->as<BinaryNode>();
        int64_t x = eval_index(b->a, env);
        int64_t y = eval_index(b->b, env);
        int64_t r = 0;
        switch (b->op) {
        case BinaryOp::Add: r = int64_t(uint64_t(x) + uint64_t(y)); break;
        case BinaryOp::Sub: r = int64_t(uint64_t(x) - uint64_t(y)); break;
        case BinaryOp::Mul: r = int64_t(uint64_t(x) * uint64_t(y)); break;
        case BinaryOp::FloorDiv:
            TILEC_CHECK(y != 0, "layout division by zero");
            r = floordiv_int(x, y);
            break;
        case BinaryOp::FloorMod:
            TILEC_CHECK(y != 0, "layout modulo by zero");
            r = floormod_int(x, y);
            break;
        case BinaryOp::Min: r = x < y ? x : y; break;
        case BinaryOp::Max: r = x > y ? x : y; break;
        case BinaryOp::EQ: r = x == y; break;
        case BinaryOp::NE: r = x != y; break;
        case BinaryOp::LT: r = x < y; break;
        case BinaryOp::LE: r = x <= y; break;
        case BinaryOp::GT: r = x > y; break;
        case BinaryOp::GE: r = x >= y; break;
        case BinaryOp::And: r = (x != 0) && (y != 0); break;
        case BinaryOp::Or: r = (x != 0) || (y != 0); break;
        case BinaryOp::BitAnd: r = x & y; break;
        case BinaryOp::BitOr: r = x | y; break;
        case BinaryOp::BitXor: r = x ^ y; break;
        case BinaryOp::Shl: r = int64_t(uint64_t(x) << (y & 63)); break;
        case BinaryOp::Shr: r = x >> (y & 63); break;
        default: TILEC_ICE(std::string("layout expression with a float operator ") + binary_op_name(b->op));
        }
        return normalize_int(r, e->type);
    }
    case ExprKind::Unary: {
        const auto* u = e->as<UnaryNode>();
        int64_t x = eval_index(u->a, env);
        switch (u->op) {
        case UnaryOp::Neg: return normalize_int(int64_t(0 - uint64_t(x)), e->type);
        case UnaryOp::Not: return x == 0;
        case UnaryOp::BitNot: return normalize_int(~x, e->type);
        }
        break;
    }
    case ExprKind::Select: {
        const auto* s = e->as<SelectNode>();
        return eval_index(s->cond, env) != 0 ? eval_index(s->t, env) : eval_index(s->f, env);
    }
    case ExprKind::Cast: {
        const auto* c = e->as<CastNode>();
        TILEC_CHECK(e->type.is_integer() || e->type.is_bool(), "layout expression casts to a float");
        return normalize_int(eval_index(c->value, env), e->type);
    }
    default: break;
    }
    TILEC_ICE("layout expression is not integer index arithmetic");
}

int64_t shape_size(const std::vector<int64_t>& shape) {
    int64_t n = 1;
    for (int64_t e : shape) n *= e;
    return n;
}

std::vector<int64_t> unflatten(int64_t flat, const std::vector<int64_t>& shape) {
    std::vector<int64_t> coord(shape.size());
    for (size_t d = shape.size(); d-- > 0;) {
        coord[d] = flat % shape[d];
        flat /= shape[d];
    }
    return coord;
}

int64_t flatten(const std::vector<int64_t>& coord, const std::vector<int64_t>& shape) {
    int64_t flat = 0;
    for (size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + coord[d];
    return flat;
}

std::string shape_str(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t d = 0; d < shape.size(); ++d) s += (d ? ", " : "") + std::to_string(shape[d]);
    return s + "]";
}

}  // namespace tilec::layout
