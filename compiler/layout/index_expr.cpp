// Folding builders and the evaluator behind every layout. The folding is deliberately
// shallow (constants and units only): the simplifier owns real rewriting, and the
// layout library must not depend on it; this keeps printed layouts readable.
#include "layout/index_expr.h"

#include <algorithm>
#include <iterator>

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

// The integer operators of index arithmetic, before wrapping to the result's type; false
// for a division by zero and for the float operators.
[[gnu::always_inline]] inline bool index_binary(BinaryOp op, int64_t x, int64_t y, int64_t& r) {
    switch (op) {
    case BinaryOp::Add: r = int64_t(uint64_t(x) + uint64_t(y)); return true;
    case BinaryOp::Sub: r = int64_t(uint64_t(x) - uint64_t(y)); return true;
    case BinaryOp::Mul: r = int64_t(uint64_t(x) * uint64_t(y)); return true;
    case BinaryOp::FloorDiv:
        if (y == 0) return false;
        r = floordiv_int(x, y);
        return true;
    case BinaryOp::FloorMod:
        if (y == 0) return false;
        r = floormod_int(x, y);
        return true;
    case BinaryOp::Min: r = x < y ? x : y; return true;
    case BinaryOp::Max: r = x > y ? x : y; return true;
    case BinaryOp::EQ: r = x == y; return true;
    case BinaryOp::NE: r = x != y; return true;
    case BinaryOp::LT: r = x < y; return true;
    case BinaryOp::LE: r = x <= y; return true;
    case BinaryOp::GT: r = x > y; return true;
    case BinaryOp::GE: r = x >= y; return true;
    case BinaryOp::And: r = (x != 0) && (y != 0); return true;
    case BinaryOp::Or: r = (x != 0) || (y != 0); return true;
    case BinaryOp::BitAnd: r = x & y; return true;
    case BinaryOp::BitOr: r = x | y; return true;
    case BinaryOp::BitXor: r = x ^ y; return true;
    case BinaryOp::Shl: r = int64_t(uint64_t(x) << (y & 63)); return true;
    case BinaryOp::Shr: r = x >> (y & 63); return true;
    default: return false;
    }
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
    bind_node(v.get(), value);
}

void IndexEnv::bind_node(const VarNode* v, int64_t value) {
    for (auto& [var, val] : binds_)
        if (var == v) {
            val = value;
            return;
        }
    binds_.emplace_back(v, value);
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
        TILEC_CHECK(y != 0 || b->op != BinaryOp::FloorDiv, "layout division by zero");
        TILEC_CHECK(y != 0 || b->op != BinaryOp::FloorMod, "layout modulo by zero");
        int64_t r = 0;
        if (!index_binary(b->op, x, y, r))
            TILEC_ICE(std::string("layout expression with a float operator ") + binary_op_name(b->op));
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

IndexProgram::IndexProgram(const Expr& e, std::vector<const VarNode*> slots)
    : expr_(e), slots_(std::move(slots)) {
    registers_ = uint32_t(slots_.size());
    ir::NodeRegisters regs;
    regs_ = &regs;
    result_ = emit(e);
    regs_ = nullptr;
}

namespace {

// The wrapping of a result of type t: none where t is a 64-bit integer.
bool is_wide(DataType t) {
    return !t.is_bool() && t.bits >= 64;
}

}  // namespace

// Appends the code of e (what eval_index computes, node by node, its failures as Fail)
// unless a scope in force has it already; returns the register holding its value.
uint32_t IndexProgram::emit(const Expr& e) {
    if (auto reg = ir::compiled_register(e, slots_, *regs_)) return *reg;
    Inst in{Op::Fail};
    in.type = e->type;
    in.wide = is_wide(e->type);
    switch (e->kind) {
    case ExprKind::IntImm:
        in.op = Op::Imm;
        in.imm = e->as<IntImmNode>()->value;
        break;
    case ExprKind::Binary: {
        const auto* b = e->as<BinaryNode>();
        ir::emit_binary_operands(in, *b, [&](const Expr& operand) { return emit(operand); });
        in.op = Op::Binary;  // a float operator fails when run, after its operands
        in.bop = b->op;
        break;
    }
    case ExprKind::Unary: {
        const auto* u = e->as<UnaryNode>();
        in.a = emit(u->a);
        switch (u->op) {
        case UnaryOp::Neg: in.op = Op::Neg; break;
        case UnaryOp::Not: in.op = Op::Not; break;
        case UnaryOp::BitNot: in.op = Op::BitNot; break;
        }
        break;
    }
    case ExprKind::Select: {
        const auto* sel = e->as<SelectNode>();
        uint32_t cond = emit(sel->cond);
        return ir::emit_select(code_, *regs_, registers_, *sel, cond,
                               [&](const Expr& side) { return emit(side); });
    }
    case ExprKind::Cast:
        if (!e->type.is_integer() && !e->type.is_bool()) break;
        in.op = Op::Normalize;
        in.a = emit(e->as<CastNode>()->value);
        break;
    default: break;  // Fail: a variable no slot binds, a float, a load
    }
    return ir::append_node(code_, *regs_, registers_, e.get(), in);
}

int64_t IndexProgram::run(const int64_t* values) const {
    int64_t small[64];
    std::vector<int64_t> big;
    int64_t* r = small;
    if (registers_ > std::size(small)) {
        big.resize(registers_);
        r = big.data();
    }
    std::copy(values, values + slots_.size(), r);
    for (size_t pc = 0; pc < code_.size();) {
        const Inst& in = code_[pc++];
        switch (in.op) {
        case Op::Imm: r[in.dst] = in.imm; break;
        case Op::Fail: report(values);
        case Op::Binary: {
            int64_t v = 0;
            if (!index_binary(in.bop, r[in.a], in.b_imm ? in.imm : r[in.b], v)) report(values);
            r[in.dst] = in.wide ? v : normalize_int(v, in.type);
            break;
        }
        case Op::Neg: {
            int64_t v = int64_t(0 - uint64_t(r[in.a]));
            r[in.dst] = in.wide ? v : normalize_int(v, in.type);
            break;
        }
        case Op::Not: r[in.dst] = r[in.a] == 0; break;
        case Op::BitNot: r[in.dst] = in.wide ? ~r[in.a] : normalize_int(~r[in.a], in.type); break;
        case Op::Normalize: r[in.dst] = in.wide ? r[in.a] : normalize_int(r[in.a], in.type); break;
        case Op::Move: r[in.dst] = r[in.a]; break;
        case Op::JumpIfZero:
            if (r[in.a] == 0) pc = size_t(in.imm);
            break;
        case Op::Jump: pc = size_t(in.imm); break;
        }
    }
    return r[result_];
}

// eval_index, with the same bindings, on what it stops at.
void IndexProgram::report(const int64_t* values) const {
    IndexEnv env;
    for (size_t k = 0; k < slots_.size(); ++k)
        if (slots_[k]) env.bind_node(slots_[k], values[k]);
    eval_index(expr_, env);
    TILEC_ICE("layout expression: the compiled evaluation fails where eval_index does not");
}

int64_t shape_size(const std::vector<int64_t>& shape) {
    int64_t n = 1;
    for (int64_t e : shape) n *= e;
    return n;
}

void next_coordinate(int64_t* coord, const std::vector<int64_t>& shape) {
    for (size_t d = shape.size(); d-- > 0;) {
        if (++coord[d] < shape[d]) return;
        coord[d] = 0;
    }
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
