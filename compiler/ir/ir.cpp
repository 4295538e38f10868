// Tile IR nodes: type names, enum names, factories and structural queries.
// Factories are the one place nodes are built, so type rules live here.
#include "ir/ir.h"

#include "ir/size_rules.h"

#include <cmath>

#include "support/diagnostics.h"

namespace tilec::ir {

// ---------------------------------------------------------------------------------
// DataType

std::string DataType::str() const {
    std::string s;
    switch (kind) {
    case TypeKind::Int: s = "i" + std::to_string(bits); break;
    case TypeKind::UInt: s = "u" + std::to_string(bits); break;
    case TypeKind::Float: s = "f" + std::to_string(bits); break;
    case TypeKind::BFloat: s = "bf" + std::to_string(bits); break;
    case TypeKind::Float8E4M3: s = "f8e4m3"; break;
    case TypeKind::Float8E5M2: s = "f8e5m2"; break;
    case TypeKind::Bool: s = "bool"; break;
    }
    if (lanes != 1) s += "x" + std::to_string(lanes);
    return s;
}

std::optional<DataType> DataType::from_name(std::string_view name) {
    static constexpr std::pair<std::string_view, DataType> kTypes[] = {
        {"f16", DataType::f16()},      {"bf16", DataType::bf16()},     {"f32", DataType::f32()},
        {"f64", DataType::f64()},      {"i8", DataType::i8()},         {"u8", DataType::u8()},
        {"i16", DataType::i16()},      {"u16", DataType::u16()},       {"i32", DataType::i32()},
        {"u32", DataType::u32()},      {"i64", DataType::i64()},       {"u64", DataType::u64()},
        {"bool", DataType::boolean()}, {"f8e4m3", DataType::f8e4m3()}, {"f8e5m2", DataType::f8e5m2()},
        {"i4", DataType::i4()},        {"u4", DataType::u4()},
    };
    for (const auto& [n, t] : kTypes)
        if (n == name) return t;
    return std::nullopt;
}

int64_t DataType::min_value() const {
    if (is_bool() || is_uint()) return 0;
    TILEC_CHECK(is_int(), "min_value of a non-integer type " + str());
    if (bits >= 64) return std::numeric_limits<int64_t>::min();
    return -(int64_t(1) << (bits - 1));
}

int64_t DataType::max_value() const {
    if (is_bool()) return 1;
    TILEC_CHECK(is_integer(), "max_value of a non-integer type " + str());
    if (is_uint()) return bits >= 63 ? std::numeric_limits<int64_t>::max() : (int64_t(1) << bits) - 1;
    if (bits >= 64) return std::numeric_limits<int64_t>::max();
    return (int64_t(1) << (bits - 1)) - 1;
}

int64_t normalize_int(int64_t v, DataType t) {
    if (t.is_bool()) return v != 0 ? 1 : 0;
    if (t.bits >= 64) return v;
    uint64_t mask = (uint64_t(1) << t.bits) - 1;
    uint64_t u = static_cast<uint64_t>(v) & mask;
    if (t.is_int() && (u >> (t.bits - 1)) & 1) u |= ~mask;  // sign-extend
    return static_cast<int64_t>(u);
}

// ---------------------------------------------------------------------------------
// Enum names

const char* scope_name(Scope s) {
    switch (s) {
    case Scope::Global: return "global";
    case Scope::Shared: return "shared";
    case Scope::Fragment: return "fragment";
    case Scope::Local: return "local";
    case Scope::Register: return "register";
    }
    return "?";
}

const char* access_name(Access a) {
    switch (a) {
    case Access::In: return "in";
    case Access::Out: return "out";
    case Access::InOut: return "inout";
    }
    return "?";
}

const char* var_kind_name(VarKind k) {
    switch (k) {
    case VarKind::Size: return "size";
    case VarKind::Scalar: return "scalar";
    case VarKind::Let: return "let";
    case VarKind::Loop: return "loop";
    case VarKind::BlockIdx: return "block_idx";
    case VarKind::ThreadIdx: return "thread_idx";
    }
    return "?";
}

const char* for_kind_name(ForKind k) {
    switch (k) {
    case ForKind::Serial: return "serial";
    case ForKind::Unroll: return "unroll";
    case ForKind::Parallel: return "parallel";
    case ForKind::Pipelined: return "pipelined";
    case ForKind::Rolled: return "rolled";
    }
    return "?";
}

const char* reduce_kind_name(ReduceKind k) {
    switch (k) {
    case ReduceKind::Sum: return "sum";
    case ReduceKind::Max: return "max";
    case ReduceKind::Min: return "min";
    case ReduceKind::AbsMax: return "absmax";
    }
    return "?";
}

const char* atomic_op_name(AtomicOp op) {
    switch (op) {
    case AtomicOp::Add: return "add";
    }
    return "?";
}

const char* binary_op_name(BinaryOp op) {
    switch (op) {
    case BinaryOp::Add: return "+";
    case BinaryOp::Sub: return "-";
    case BinaryOp::Mul: return "*";
    case BinaryOp::Div: return "/";
    case BinaryOp::FloorDiv: return "/";
    case BinaryOp::FloorMod: return "%";
    case BinaryOp::Mod: return "fmod";
    case BinaryOp::Min: return "min";
    case BinaryOp::Max: return "max";
    case BinaryOp::EQ: return "==";
    case BinaryOp::NE: return "!=";
    case BinaryOp::LT: return "<";
    case BinaryOp::LE: return "<=";
    case BinaryOp::GT: return ">";
    case BinaryOp::GE: return ">=";
    case BinaryOp::And: return "&&";
    case BinaryOp::Or: return "||";
    case BinaryOp::BitAnd: return "&";
    case BinaryOp::BitOr: return "|";
    case BinaryOp::BitXor: return "^";
    case BinaryOp::Shl: return "<<";
    case BinaryOp::Shr: return ">>";
    }
    return "?";
}

const char* unary_op_name(UnaryOp op) {
    switch (op) {
    case UnaryOp::Neg: return "-";
    case UnaryOp::Not: return "!";
    case UnaryOp::BitNot: return "~";
    }
    return "?";
}

const char* call_op_name(CallOp op) {
    switch (op) {
    case CallOp::Exp: return "exp";
    case CallOp::Exp2: return "exp2";
    case CallOp::Log: return "log";
    case CallOp::Log2: return "log2";
    case CallOp::Sqrt: return "sqrt";
    case CallOp::Rsqrt: return "rsqrt";
    case CallOp::Tanh: return "tanh";
    case CallOp::Sigmoid: return "sigmoid";
    case CallOp::Abs: return "abs";
    case CallOp::Floor: return "floor";
    case CallOp::Ceil: return "ceil";
    case CallOp::Pow: return "pow";
    case CallOp::ShflXor: return "shfl_xor";
    case CallOp::ShflUp: return "shfl_up";
    case CallOp::ShflDown: return "shfl_down";
    case CallOp::ShflIdx: return "shfl_idx";
    }
    return "?";
}

bool is_warp_shuffle(CallOp op) {
    return op == CallOp::ShflXor || op == CallOp::ShflUp || op == CallOp::ShflDown || op == CallOp::ShflIdx;
}

bool is_comparison(BinaryOp op) {
    return op == BinaryOp::EQ || op == BinaryOp::NE || op == BinaryOp::LT || op == BinaryOp::LE ||
           op == BinaryOp::GT || op == BinaryOp::GE;
}

bool is_logical(BinaryOp op) {
    return op == BinaryOp::And || op == BinaryOp::Or;
}

bool is_commutative(BinaryOp op) {
    switch (op) {
    case BinaryOp::Add:
    case BinaryOp::Mul:
    case BinaryOp::Min:
    case BinaryOp::Max:
    case BinaryOp::EQ:
    case BinaryOp::NE:
    case BinaryOp::And:
    case BinaryOp::Or:
    case BinaryOp::BitAnd:
    case BinaryOp::BitOr:
    case BinaryOp::BitXor: return true;
    default: return false;
    }
}

// ---------------------------------------------------------------------------------
// Expression factories

namespace {
void check_nonnull(const Expr& e, const char* what) {
    TILEC_CHECK(e != nullptr, std::string("null expression for ") + what);
}
}  // namespace

Expr make_int(int64_t value, DataType type, SourceLoc loc) {
    TILEC_CHECK(type.is_integer() || type.is_bool(), "make_int with type " + type.str());
    return std::make_shared<IntImmNode>(normalize_int(value, type), type, loc);
}

Expr make_bool(bool value, SourceLoc loc) {
    return std::make_shared<IntImmNode>(value ? 1 : 0, DataType::boolean(), loc);
}

Expr make_float(double value, DataType type, SourceLoc loc) {
    TILEC_CHECK(type.is_float(), "make_float with type " + type.str());
    return std::make_shared<FloatImmNode>(value, type, loc);
}

Expr make_zero(DataType type, SourceLoc loc) {
    if (type.is_float()) return make_float(0.0, type, loc);
    return make_int(0, type, loc);
}

Expr make_string(std::string value, SourceLoc loc) {
    return std::make_shared<StringImmNode>(std::move(value), loc);
}

Var make_var(std::string name, DataType type, VarKind kind, SourceLoc loc, int dim) {
    return std::make_shared<VarNode>(std::move(name), type, kind, dim, loc);
}

Var make_loop_var(std::string name, SourceLoc loc, DataType type) {
    return make_var(std::move(name), type, VarKind::Loop, loc);
}

Var make_let_var(std::string name, DataType type, SourceLoc loc) {
    return make_var(std::move(name), type, VarKind::Let, loc);
}

Var make_size_var(std::string name, SourceLoc loc) {
    return make_var(std::move(name), DataType::index(), VarKind::Size, loc);
}

std::array<Var, 3> make_block_idx_vars(SourceLoc loc) {
    return {make_var("block.x", DataType::index(), VarKind::BlockIdx, loc, 0),
            make_var("block.y", DataType::index(), VarKind::BlockIdx, loc, 1),
            make_var("block.z", DataType::index(), VarKind::BlockIdx, loc, 2)};
}

Var make_thread_idx_var(int dim, SourceLoc loc) {
    static const char* kNames[] = {"thread.x", "thread.y", "thread.z"};
    TILEC_CHECK(dim >= 0 && dim < 3, "thread index dim out of range");
    return make_var(kNames[dim], DataType::index(), VarKind::ThreadIdx, loc, dim);
}

Expr make_binary(BinaryOp op, Expr a, Expr b, SourceLoc loc) {
    check_nonnull(a, binary_op_name(op));
    check_nonnull(b, binary_op_name(op));
    DataType t = a->type;
    if (is_comparison(op) || is_logical(op)) t = DataType::boolean().with_lanes(a->type.lanes);
    return std::make_shared<BinaryNode>(op, std::move(a), std::move(b), t, loc);
}

Expr make_unary(UnaryOp op, Expr a, SourceLoc loc) {
    check_nonnull(a, unary_op_name(op));
    DataType t = op == UnaryOp::Not ? DataType::boolean().with_lanes(a->type.lanes) : a->type;
    return std::make_shared<UnaryNode>(op, std::move(a), t, loc);
}

Expr make_select(Expr cond, Expr t, Expr f, SourceLoc loc) {
    check_nonnull(cond, "select");
    check_nonnull(t, "select");
    check_nonnull(f, "select");
    DataType ty = t->type;
    return std::make_shared<SelectNode>(std::move(cond), std::move(t), std::move(f), ty, loc);
}

Expr make_cast(DataType type, Expr value, SourceLoc loc) {
    check_nonnull(value, "cast");
    return std::make_shared<CastNode>(type, std::move(value), loc);
}

Expr make_call(CallOp op, std::vector<Expr> args, SourceLoc loc) {
    TILEC_CHECK(!args.empty() && args[0], std::string("call without arguments: ") + call_op_name(op));
    DataType t = args[0]->type;
    return make_call(op, std::move(args), t, loc);
}

Expr make_call(CallOp op, std::vector<Expr> args, DataType type, SourceLoc loc) {
    for (const auto& a : args) check_nonnull(a, call_op_name(op));
    return std::make_shared<CallNode>(op, std::move(args), type, loc);
}

Expr make_shuffle(CallOp op, Expr value, Expr lane, SourceLoc loc) {
    TILEC_CHECK(is_warp_shuffle(op), std::string("make_shuffle of ") + call_op_name(op));
    check_nonnull(value, call_op_name(op));
    check_nonnull(lane, call_op_name(op));
    if (lane->type != DataType::i32()) {
        if (auto c = as_const_int(lane))
            lane = make_int(*c, DataType::i32(), lane->loc);
        else
            lane = make_cast(DataType::i32(), lane, lane->loc);
    }
    DataType t = value->type;
    return make_call(op, {std::move(value), std::move(lane)}, t, loc);
}

Expr make_load(Buffer buffer, std::vector<Expr> indices, SourceLoc loc) {
    TILEC_CHECK(buffer != nullptr, "load from a null buffer");
    for (const auto& i : indices) check_nonnull(i, "load index");
    DataType t = buffer->dtype;
    return std::make_shared<LoadNode>(std::move(buffer), std::move(indices), t, loc);
}

Expr add(Expr a, Expr b) {
    SourceLoc l = a ? a->loc : SourceLoc{};
    return make_binary(BinaryOp::Add, std::move(a), std::move(b), l);
}
Expr sub(Expr a, Expr b) {
    SourceLoc l = a ? a->loc : SourceLoc{};
    return make_binary(BinaryOp::Sub, std::move(a), std::move(b), l);
}
Expr mul(Expr a, Expr b) {
    SourceLoc l = a ? a->loc : SourceLoc{};
    return make_binary(BinaryOp::Mul, std::move(a), std::move(b), l);
}
Expr floordiv(Expr a, Expr b) {
    SourceLoc l = a ? a->loc : SourceLoc{};
    return make_binary(BinaryOp::FloorDiv, std::move(a), std::move(b), l);
}
Expr floormod(Expr a, Expr b) {
    SourceLoc l = a ? a->loc : SourceLoc{};
    return make_binary(BinaryOp::FloorMod, std::move(a), std::move(b), l);
}
Expr minimum(Expr a, Expr b) {
    SourceLoc l = a ? a->loc : SourceLoc{};
    return make_binary(BinaryOp::Min, std::move(a), std::move(b), l);
}
Expr maximum(Expr a, Expr b) {
    SourceLoc l = a ? a->loc : SourceLoc{};
    return make_binary(BinaryOp::Max, std::move(a), std::move(b), l);
}
Expr lt(Expr a, Expr b) {
    SourceLoc l = a ? a->loc : SourceLoc{};
    return make_binary(BinaryOp::LT, std::move(a), std::move(b), l);
}
Expr le(Expr a, Expr b) {
    SourceLoc l = a ? a->loc : SourceLoc{};
    return make_binary(BinaryOp::LE, std::move(a), std::move(b), l);
}
Expr gt(Expr a, Expr b) {
    SourceLoc l = a ? a->loc : SourceLoc{};
    return make_binary(BinaryOp::GT, std::move(a), std::move(b), l);
}
Expr ge(Expr a, Expr b) {
    SourceLoc l = a ? a->loc : SourceLoc{};
    return make_binary(BinaryOp::GE, std::move(a), std::move(b), l);
}
Expr eq(Expr a, Expr b) {
    SourceLoc l = a ? a->loc : SourceLoc{};
    return make_binary(BinaryOp::EQ, std::move(a), std::move(b), l);
}
Expr ne(Expr a, Expr b) {
    SourceLoc l = a ? a->loc : SourceLoc{};
    return make_binary(BinaryOp::NE, std::move(a), std::move(b), l);
}
Expr logical_and(Expr a, Expr b) {
    SourceLoc l = a ? a->loc : SourceLoc{};
    return make_binary(BinaryOp::And, std::move(a), std::move(b), l);
}
Expr logical_or(Expr a, Expr b) {
    SourceLoc l = a ? a->loc : SourceLoc{};
    return make_binary(BinaryOp::Or, std::move(a), std::move(b), l);
}
Expr logical_not(Expr a) {
    SourceLoc l = a ? a->loc : SourceLoc{};
    return make_unary(UnaryOp::Not, std::move(a), l);
}

Expr cdiv(Expr a, Expr b) {
    check_nonnull(a, "cdiv");
    check_nonnull(b, "cdiv");
    SourceLoc l = a->loc;
    DataType t = a->type;
    auto cb = as_const_int(b);
    Expr num = cb ? add(a, make_int(*cb - 1, t, l)) : add(a, sub(b, make_int(1, t, l)));
    return make_binary(BinaryOp::FloorDiv, num, b, l);
}

// ---------------------------------------------------------------------------------
// Buffers and regions

Buffer make_buffer(std::string name, DataType dtype, std::vector<Expr> shape, Scope scope, SourceLoc loc) {
    BufferNode n;
    n.name = std::move(name);
    n.dtype = dtype;
    n.shape = std::move(shape);
    n.scope = scope;
    n.loc = loc;
    return make_buffer(std::move(n));
}

Buffer make_tensor(std::string name, DataType dtype, std::vector<Expr> shape, Access access, SourceLoc loc,
                   std::vector<Expr> strides) {
    BufferNode n;
    n.name = std::move(name);
    n.dtype = dtype;
    n.shape = std::move(shape);
    n.strides = std::move(strides);
    n.scope = Scope::Global;
    n.access = access;
    n.loc = loc;
    return make_buffer(std::move(n));
}

Buffer make_buffer(BufferNode node) {
    for (const auto& e : node.shape) check_nonnull(e, "buffer shape");
    for (const auto& e : node.strides) check_nonnull(e, "buffer stride");
    return std::make_shared<const BufferNode>(std::move(node));
}

Region full_region(const Buffer& buffer) {
    TILEC_CHECK(buffer != nullptr, "region of a null buffer");
    Region r;
    r.buffer = buffer;
    for (const auto& s : buffer->shape) {
        r.start.push_back(make_int(0, s->type.is_integer() ? s->type : DataType::index()));
        r.extent.push_back(s);
    }
    return r;
}

Region make_region(Buffer buffer, std::vector<Expr> start, std::vector<Expr> extent) {
    TILEC_CHECK(buffer != nullptr, "region of a null buffer");
    for (const auto& e : start) check_nonnull(e, "region start");
    for (const auto& e : extent) check_nonnull(e, "region extent");
    return Region{std::move(buffer), std::move(start), std::move(extent)};
}

bool is_full_region(const Region& r) {
    if (!r.buffer || r.start.size() != r.buffer->rank() || r.extent.size() != r.buffer->rank()) return false;
    for (size_t i = 0; i < r.start.size(); ++i) {
        if (!is_const_int(r.start[i], 0)) return false;
        if (!structural_equal(r.extent[i], r.buffer->shape[i])) return false;
    }
    return true;
}

bool pads_with_zero(const CopyNode& c) {
    if (!c.pad || is_const_int(c.pad, 0)) return true;
    auto* f = c.pad->as<FloatImmNode>();
    return f && f->value == 0.0;
}

// ---------------------------------------------------------------------------------
// Statement factories

namespace {
void flatten_into(const Stmt& s, std::vector<Stmt>& out) {
    if (!s) return;
    if (auto seq = s->as<SeqNode>()) {
        for (const auto& c : seq->stmts) flatten_into(c, out);
        return;
    }
    out.push_back(s);
}
void check_region(const Region& r, const char* what) {
    TILEC_CHECK(r.buffer != nullptr, std::string("null buffer in the region of ") + what);
    for (const auto& e : r.start) check_nonnull(e, what);
    for (const auto& e : r.extent) check_nonnull(e, what);
}
Stmt body_or_empty(Stmt s) {
    return s ? std::move(s) : make_seq({});
}
}  // namespace

Stmt make_seq(std::vector<Stmt> stmts, SourceLoc loc) {
    std::vector<Stmt> flat;
    flat.reserve(stmts.size());
    for (const auto& s : stmts) flatten_into(s, flat);
    if (flat.size() == 1) return flat[0];
    if (!loc.valid() && !flat.empty()) loc = flat[0]->loc;
    return std::make_shared<SeqNode>(std::move(flat), loc);
}

Stmt make_for(Var var, Expr min, Expr extent, ForKind kind, Stmt body, SourceLoc loc, int stages) {
    TILEC_CHECK(var != nullptr, "for without a variable");
    check_nonnull(min, "for min");
    check_nonnull(extent, "for extent");
    return std::make_shared<ForNode>(std::move(var), std::move(min), std::move(extent), kind, stages,
                                     body_or_empty(std::move(body)), loc);
}

Stmt make_if(Expr cond, Stmt then_case, Stmt else_case, SourceLoc loc) {
    check_nonnull(cond, "if");
    return std::make_shared<IfNode>(std::move(cond), body_or_empty(std::move(then_case)),
                                    std::move(else_case), loc);
}

Stmt make_let(Var var, Expr value, Stmt body, SourceLoc loc) {
    TILEC_CHECK(var != nullptr, "let without a variable");
    check_nonnull(value, "let value");
    return std::make_shared<LetStmtNode>(std::move(var), std::move(value), body_or_empty(std::move(body)),
                                         loc);
}

Stmt make_allocate(Buffer buffer, Stmt body, SourceLoc loc) {
    TILEC_CHECK(buffer != nullptr, "allocate of a null buffer");
    return std::make_shared<AllocateNode>(std::move(buffer), body_or_empty(std::move(body)), loc);
}

Stmt make_store(Buffer buffer, std::vector<Expr> indices, Expr value, SourceLoc loc) {
    TILEC_CHECK(buffer != nullptr, "store to a null buffer");
    for (const auto& i : indices) check_nonnull(i, "store index");
    check_nonnull(value, "store value");
    return std::make_shared<StoreNode>(std::move(buffer), std::move(indices), std::move(value), loc);
}

Stmt make_evaluate(Expr value, SourceLoc loc) {
    check_nonnull(value, "evaluate");
    return std::make_shared<EvaluateNode>(std::move(value), loc);
}

Stmt make_copy(Region src, Region dst, Expr pad, SourceLoc loc) {
    check_region(src, "copy");
    check_region(dst, "copy");
    if (!pad) pad = make_zero(src.buffer->dtype, loc);
    return std::make_shared<CopyNode>(std::move(src), std::move(dst), std::move(pad), loc);
}

Stmt make_gemm(Region a, Region b, Region c, bool trans_a, bool trans_b, bool clear, SourceLoc loc) {
    check_region(a, "gemm");
    check_region(b, "gemm");
    check_region(c, "gemm");
    return std::make_shared<GemmNode>(std::move(a), std::move(b), std::move(c), trans_a, trans_b, clear, loc);
}

Stmt make_fill(Region dst, Expr value, SourceLoc loc) {
    check_region(dst, "fill");
    check_nonnull(value, "fill value");
    return std::make_shared<FillNode>(std::move(dst), std::move(value), loc);
}

Stmt make_reduce(ReduceKind kind, Region src, Region dst, int dim, bool clear, SourceLoc loc) {
    check_region(src, "reduce");
    check_region(dst, "reduce");
    return std::make_shared<ReduceNode>(kind, std::move(src), std::move(dst), dim, clear, loc);
}

Stmt make_cumsum(Region src, Region dst, int dim, bool reverse, SourceLoc loc) {
    check_region(src, "cumsum");
    check_region(dst, "cumsum");
    return std::make_shared<CumsumNode>(std::move(src), std::move(dst), dim, reverse, loc);
}

Stmt make_atomic_add(Region dst, Region src, SourceLoc loc) {
    check_region(dst, "atomic_add");
    check_region(src, "atomic_add");
    return std::make_shared<AtomicAddNode>(std::move(dst), std::move(src), loc);
}

Stmt make_atomic_rmw(AtomicOp op, Buffer buffer, std::vector<Expr> indices, Expr value, SourceLoc loc) {
    TILEC_CHECK(buffer != nullptr, "atomic on a null buffer");
    for (const auto& i : indices) check_nonnull(i, "atomic index");
    check_nonnull(value, "atomic value");
    return std::make_shared<AtomicRmwNode>(op, std::move(buffer), std::move(indices), std::move(value), loc);
}

Stmt make_print(std::string fmt, std::vector<Expr> args, SourceLoc loc) {
    for (const auto& a : args) check_nonnull(a, "print argument");
    return std::make_shared<PrintNode>(std::move(fmt), std::move(args), loc);
}

Stmt make_assert(Expr cond, std::string msg, SourceLoc loc) {
    check_nonnull(cond, "assert");
    return std::make_shared<AssertNode>(std::move(cond), std::move(msg), loc);
}

Stmt make_barrier(SourceLoc loc) {
    return std::make_shared<BarrierNode>(loc);
}

Stmt make_full_write(Buffer buffer, Stmt body, SourceLoc loc) {
    TILEC_CHECK(buffer != nullptr && body != nullptr, "make_full_write with a null buffer or body");
    return std::make_shared<FullWriteNode>(std::move(buffer), std::move(body), loc);
}

Stmt make_machine_op(MachineOp op, std::vector<int64_t> imm, std::vector<Expr> dst, std::vector<Expr> src,
                     SourceLoc loc) {
    for (const auto& e : dst) TILEC_CHECK(expr_as<LoadNode>(e) != nullptr, "machine op destination that is not an element");
    for (const auto& e : src) check_nonnull(e, "machine op operand");
    return std::make_shared<MachineOpNode>(op, std::move(imm), std::move(dst), std::move(src), loc);
}

const char* machine_op_name(MachineOp op) {
    switch (op) {
    case MachineOp::Ldmatrix: return "ldmatrix";
    case MachineOp::Mma: return "mma";
    case MachineOp::CpAsync: return "cp_async";
    case MachineOp::CpAsyncCommit: return "cp_async_commit";
    case MachineOp::CpAsyncWait: return "cp_async_wait";
    case MachineOp::Wgmma: return "wgmma";
    case MachineOp::WgmmaFence: return "wgmma_fence";
    case MachineOp::WgmmaCommit: return "wgmma_commit";
    case MachineOp::WgmmaWait: return "wgmma_wait";
    case MachineOp::FenceProxyAsync: return "fence_proxy_async";
    case MachineOp::SetMaxNReg: return "setmaxnreg";
    case MachineOp::NamedBarrier: return "named_barrier";
    case MachineOp::BarrierArrive: return "barrier_arrive";
    case MachineOp::ClusterArrive: return "cluster_arrive";
    case MachineOp::ClusterWait: return "cluster_wait";
    case MachineOp::MbarrierInit: return "mbarrier_init";
    case MachineOp::MbarrierArrive: return "mbarrier_arrive";
    case MachineOp::MbarrierWait: return "mbarrier_wait";
    case MachineOp::TmaLoad: return "tma_load";
    case MachineOp::TmaStore: return "tma_store";
    case MachineOp::BulkCommit: return "bulk_commit";
    case MachineOp::BulkWaitRead: return "bulk_wait_read";
    case MachineOp::Mfma: return "mfma";
    case MachineOp::Wmma: return "wmma";
    case MachineOp::VectorCopy: return "vector_copy";
    }
    return "?";
}

size_t wgmma_a_operands(const MachineOpNode& op) {
    const int64_t n = op.imm.empty() ? 0 : op.imm[0];
    return n > 0 && op.src.size() == static_cast<size_t>(n / 2 + 9) ? 8 : 1;
}

bool is_mma_form(int64_t k, DataType a, DataType b, DataType cd) {
    auto f8 = [](DataType t) { return t.kind == TypeKind::Float8E4M3 || t.kind == TypeKind::Float8E5M2; };
    if (k == 32 && f8(a) && f8(b)) return cd == DataType::f32();
    if (a != b) return false;
    const bool f16 = a.kind == TypeKind::Float && a.bits == 16;
    if (k == 16) return ((f16 || a.kind == TypeKind::BFloat) && cd == DataType::f32()) || (f16 && cd == a);
    if (k == 32) return (a == DataType::i8() || a == DataType::u8()) && cd == DataType::i32();
    if (k == 8) return a == DataType::f32() && cd == DataType::f32();
    return false;
}

bool is_no_op(const Stmt& s) {
    if (!s) return true;
    auto seq = s->as<SeqNode>();
    return seq && seq->stmts.empty();
}

// ---------------------------------------------------------------------------------
// Queries

std::optional<int64_t> as_const_int(const Expr& e) {
    if (!e) return std::nullopt;
    if (auto imm = e->as<IntImmNode>()) return imm->value;
    return std::nullopt;
}

namespace {
void collect_floor_divisions(const Expr& e, std::vector<const BinaryNode*>& out) {
    if (auto* bin = e->as<BinaryNode>()) {
        collect_floor_divisions(bin->a, out);
        collect_floor_divisions(bin->b, out);
        if (bin->op == BinaryOp::FloorDiv) out.push_back(bin);
    } else if (auto* u = e->as<UnaryNode>()) {
        collect_floor_divisions(u->a, out);
    } else if (auto* c = e->as<CastNode>()) {
        collect_floor_divisions(c->value, out);
    }
}
}  // namespace

std::vector<const BinaryNode*> floor_divisions(const Expr& e) {
    std::vector<const BinaryNode*> out;
    collect_floor_divisions(e, out);
    return out;
}

bool is_const_int(const Expr& e, int64_t v) {
    auto c = as_const_int(e);
    return c && *c == v;
}

bool structural_equal(const std::vector<Expr>& a, const std::vector<Expr>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (!structural_equal(a[i], b[i])) return false;
    return true;
}

bool structural_equal(const Expr& a, const Expr& b) {
    if (a == b) return true;
    if (!a || !b) return false;
    if (a->kind != b->kind || a->type != b->type) return false;
    switch (a->kind) {
    case ExprKind::IntImm: return a->as<IntImmNode>()->value == b->as<IntImmNode>()->value;
    case ExprKind::FloatImm: {
        double x = a->as<FloatImmNode>()->value, y = b->as<FloatImmNode>()->value;
        return x == y ? std::signbit(x) == std::signbit(y) : (std::isnan(x) && std::isnan(y));
    }
    case ExprKind::StringImm: return a->as<StringImmNode>()->value == b->as<StringImmNode>()->value;
    case ExprKind::Var: return false;  // identity only, and a != b
    case ExprKind::Binary: {
        auto x = a->as<BinaryNode>(), y = b->as<BinaryNode>();
        return x->op == y->op && structural_equal(x->a, y->a) && structural_equal(x->b, y->b);
    }
    case ExprKind::Unary: {
        auto x = a->as<UnaryNode>(), y = b->as<UnaryNode>();
        return x->op == y->op && structural_equal(x->a, y->a);
    }
    case ExprKind::Select: {
        auto x = a->as<SelectNode>(), y = b->as<SelectNode>();
        return structural_equal(x->cond, y->cond) && structural_equal(x->t, y->t) &&
               structural_equal(x->f, y->f);
    }
    case ExprKind::Cast: return structural_equal(a->as<CastNode>()->value, b->as<CastNode>()->value);
    case ExprKind::Call: {
        auto x = a->as<CallNode>(), y = b->as<CallNode>();
        return x->op == y->op && structural_equal(x->args, y->args);
    }
    case ExprKind::Load: {
        auto x = a->as<LoadNode>(), y = b->as<LoadNode>();
        return x->buffer == y->buffer && structural_equal(x->indices, y->indices);
    }
    }
    return false;
}

bool is_warp_role_split(const IfNode& op) {
    auto first_is = [](const Stmt& s, int64_t inc) {
        auto* seq = s ? s->as<SeqNode>() : nullptr;
        auto* m = seq && !seq->stmts.empty() ? seq->stmts[0]->as<MachineOpNode>() : nullptr;
        return m && m->op == MachineOp::SetMaxNReg && m->imm.at(0) == inc;
    };
    return first_is(op.then_case, 0) && first_is(op.else_case, 1);
}

}  // namespace tilec::ir
