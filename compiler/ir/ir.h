// Tile IR: the compiler's one intermediate form, a small tree of immutable statements
// and expressions. It holds both levels: tile level (buffers with scopes, tile ops) as
// the frontend lowers it, and thread level (thread indices, registers, barriers, later
// target ops) after tile ops are lowered. Nodes are shared, never mutated: a pass builds
// new nodes where something changes (see visitor.h: IRMutator).
//
// Identity: a Var and a Buffer are identified by their pointer, never by their name
// (two distinct Vars may share a name; the printer disambiguates).
//
// Integer semantics: every integer op wraps at its type's width (two's complement);
// IntImm values are stored normalised to their type (sign-extended for Int, zero-
// extended for UInt, 0/1 for Bool). The language's integer `/` and `%` are FloorDiv
// and FloorMod; Div and Mod are float-only. Index arithmetic (type index() = i64) is
// assumed never to overflow, which lets the simplifier use exact-integer identities.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "support/source.h"

namespace tilec::ir {

// ---------------------------------------------------------------------------------
// Types

enum class TypeKind : uint8_t { Int, UInt, Float, BFloat, Float8E4M3, Float8E5M2, Bool };

struct DataType {
    TypeKind kind = TypeKind::Int;
    uint8_t bits = 64;
    uint16_t lanes = 1;

    constexpr DataType() = default;
    constexpr DataType(TypeKind k, int b, int l = 1)
        : kind(k), bits(static_cast<uint8_t>(b)), lanes(static_cast<uint16_t>(l)) {}

    static constexpr DataType i4() { return {TypeKind::Int, 4}; }
    static constexpr DataType i8() { return {TypeKind::Int, 8}; }
    static constexpr DataType i16() { return {TypeKind::Int, 16}; }
    static constexpr DataType i32() { return {TypeKind::Int, 32}; }
    static constexpr DataType i64() { return {TypeKind::Int, 64}; }
    static constexpr DataType u4() { return {TypeKind::UInt, 4}; }
    static constexpr DataType u8() { return {TypeKind::UInt, 8}; }
    static constexpr DataType u16() { return {TypeKind::UInt, 16}; }
    static constexpr DataType u32() { return {TypeKind::UInt, 32}; }
    static constexpr DataType u64() { return {TypeKind::UInt, 64}; }
    static constexpr DataType f16() { return {TypeKind::Float, 16}; }
    static constexpr DataType bf16() { return {TypeKind::BFloat, 16}; }
    static constexpr DataType f32() { return {TypeKind::Float, 32}; }
    static constexpr DataType f64() { return {TypeKind::Float, 64}; }
    static constexpr DataType f8e4m3() { return {TypeKind::Float8E4M3, 8}; }
    static constexpr DataType f8e5m2() { return {TypeKind::Float8E5M2, 8}; }
    static constexpr DataType boolean() { return {TypeKind::Bool, 1}; }
    // The type of sizes, loop variables and block indices.
    static constexpr DataType index() { return i64(); }

    // Integer includes Int and UInt, not Bool.
    constexpr bool is_int() const { return kind == TypeKind::Int; }
    constexpr bool is_uint() const { return kind == TypeKind::UInt; }
    constexpr bool is_integer() const { return is_int() || is_uint(); }
    // Any float: f16, bf16, f32, f64, f8e4m3, f8e5m2.
    constexpr bool is_float() const {
        return kind == TypeKind::Float || kind == TypeKind::BFloat || kind == TypeKind::Float8E4M3 ||
               kind == TypeKind::Float8E5M2;
    }
    constexpr bool is_bool() const { return kind == TypeKind::Bool; }
    constexpr bool is_scalar() const { return lanes == 1; }
    constexpr DataType with_lanes(int l) const { return {kind, bits, l}; }
    constexpr DataType element_of() const { return with_lanes(1); }

    // "f16", "bf16", "i4", "bool", "f8e4m3"; vectors as "f16x8".
    std::string str() const;
    // Parses an element type name (as in the language); nullopt if unknown.
    static std::optional<DataType> from_name(std::string_view name);

    // Smallest / largest value of an integer or bool type (bool: 0, 1).
    int64_t min_value() const;
    int64_t max_value() const;

    friend constexpr bool operator==(const DataType& a, const DataType& b) {
        return a.kind == b.kind && a.bits == b.bits && a.lanes == b.lanes;
    }
    friend constexpr bool operator!=(const DataType& a, const DataType& b) { return !(a == b); }
};

// Wraps an integer to the width and signedness of `t` (Bool: v != 0).
int64_t normalize_int(int64_t v, DataType t);

// ---------------------------------------------------------------------------------
// Enums

// Where a buffer lives. Register is thread-level (explicit per-thread registers).
enum class Scope : uint8_t { Global, Shared, Fragment, Local, Register };
// Direction of a global tensor parameter.
enum class Access : uint8_t { In, Out, InOut };
// Who introduced a variable. Size: a run-time size argument (M, N); Scalar: a scalar
// parameter; Let / Loop: bound by LetStmt / For; BlockIdx / ThreadIdx: hardware indices
// with `dim` 0..2 (x, y, z).
enum class VarKind : uint8_t { Size, Scalar, Let, Loop, BlockIdx, ThreadIdx };
// Rolled: a serial loop on a cold path (an NVIDIA copy's element fallback for misaligned
// rows or the ragged edge) that the GPU code generator keeps rolled: LLVM is told not to
// unroll it (llvm.loop.unroll.disable): unrolled, such loops cost ptxas time and ran
// only at the edges.
enum class ForKind : uint8_t { Serial, Unroll, Parallel, Pipelined, Rolled };
enum class ReduceKind : uint8_t { Sum, Max, Min, AbsMax };
// The operation of a thread-level atomic read-modify-write (AtomicRmwNode).
enum class AtomicOp : uint8_t { Add };
enum class ParamKind : uint8_t { Tensor, Size, Scalar };

enum class BinaryOp : uint8_t {
    Add,
    Sub,
    Mul,
    Div,       // float division
    FloorDiv,  // integer floor division (the language's integer `/`)
    FloorMod,  // integer floor modulo (the language's integer `%`), sign of the divisor
    Mod,       // float fmod
    Min,
    Max,
    // Comparisons: yield bool.
    EQ,
    NE,
    LT,
    LE,
    GT,
    GE,
    // Logical, on bools.
    And,
    Or,
    // Bitwise, on integers (and bools for And/Or/Xor).
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
};
enum class UnaryOp : uint8_t { Neg, Not, BitNot };
// Builtin math functions, then the warp shuffles. Target ops (mma, cp.async) are added
// here or as statements at thread level.
//
// Warp shuffles (ShflXor ... ShflIdx): thread level only, never from the language (the
// lowering emits them; the verifier refuses them in a function without level=thread).
// shfl_*(value, lane_operand): `value` a bool, integer or float scalar of up to 64 bits,
// `lane_operand` an i32; the result has the value's type. W is the target's warp width
// (32 on NVIDIA and RDNA wave32, 64 on CDNA wave64); lane = thread index % W. Each lane
// gets `value` as its source lane j holds it:
//   shfl_xor(v, m):  j = lane ^ m
//   shfl_up(v, d):   j = lane - d, or the lane itself when that is below 0
//   shfl_down(v, d): j = lane + d, or the lane itself when that is W or more
//   shfl_idx(v, s):  j = s
// Contract (the simulator checks it; the backends rely on it): every lane of the warp
// that exists in the block executes the shuffle together (it is never under a
// lane-dependent `if`, loop bound, select or && / ||), the lane operand lies in [0, W),
// and j is a lane that exists in the block. Lowered to shfl.sync (NVPTX, membermask
// 0xffffffff) and ds_bpermute (AMDGPU); values narrower than 32 bits travel extended,
// 64-bit values as two 32-bit halves.
enum class CallOp : uint8_t {
    Exp,
    Exp2,
    Log,
    Log2,
    Sqrt,
    Rsqrt,
    Tanh,
    Sigmoid,
    Abs,
    Floor,
    Ceil,
    Pow,
    ShflXor,
    ShflUp,
    ShflDown,
    ShflIdx,
};
// ShflXor .. ShflIdx.
bool is_warp_shuffle(CallOp op);

const char* scope_name(Scope s);             // "global", "shared", "fragment", "local", "register"
const char* access_name(Access a);           // "in", "out", "inout"
const char* var_kind_name(VarKind k);        // "size", "scalar", "let", "loop", "block_idx", "thread_idx"
const char* for_kind_name(ForKind k);        // "serial", "unroll", "parallel", "pipelined", "rolled"
const char* reduce_kind_name(ReduceKind k);  // "sum", "max", "min", "absmax"
const char* atomic_op_name(AtomicOp op);     // "add"
const char* binary_op_name(BinaryOp op);     // "+", "-", "*", "/", "/", "%", "fmod", "min", ... "&&"
const char* unary_op_name(UnaryOp op);       // "-", "!", "~"
const char* call_op_name(CallOp op);         // "exp", "exp2", ...
bool is_comparison(BinaryOp op);             // EQ..GE
bool is_logical(BinaryOp op);                // And, Or
bool is_commutative(BinaryOp op);            // Add Mul Min Max EQ NE And Or BitAnd BitOr BitXor

// ---------------------------------------------------------------------------------
// Expressions

enum class ExprKind : uint8_t { IntImm, FloatImm, StringImm, Var, Binary, Unary, Select, Cast, Call, Load };

struct ExprNode;
struct VarNode;
struct BufferNode;
using Expr = std::shared_ptr<const ExprNode>;
using Var = std::shared_ptr<const VarNode>;
using Buffer = std::shared_ptr<const BufferNode>;

struct ExprNode {
    ExprKind kind;
    DataType type;
    SourceLoc loc;

    ExprNode(ExprKind k, DataType t, SourceLoc l) : kind(k), type(t), loc(l) {}
    // The node as a T (e.g. `e->as<BinaryNode>()`), or nullptr if it is another kind.
    template <typename T>
    const T* as() const {
        return kind == T::kKind ? static_cast<const T*>(this) : nullptr;
    }
    template <typename T>
    bool is() const {
        return kind == T::kKind;
    }
};

// Integer or bool constant (bool: value 0 or 1, type boolean()).
struct IntImmNode : ExprNode {
    static constexpr ExprKind kKind = ExprKind::IntImm;
    int64_t value;
    IntImmNode(int64_t v, DataType t, SourceLoc l) : ExprNode(kKind, t, l), value(v) {}
};

struct FloatImmNode : ExprNode {
    static constexpr ExprKind kKind = ExprKind::FloatImm;
    double value;
    FloatImmNode(double v, DataType t, SourceLoc l) : ExprNode(kKind, t, l), value(v) {}
};

// A string (print formats only). Its type is i8 (nothing computes with it).
struct StringImmNode : ExprNode {
    static constexpr ExprKind kKind = ExprKind::StringImm;
    std::string value;
    StringImmNode(std::string v, SourceLoc l) : ExprNode(kKind, DataType::i8(), l), value(std::move(v)) {}
};

struct VarNode : ExprNode {
    static constexpr ExprKind kKind = ExprKind::Var;
    std::string name;
    VarKind var_kind;
    int dim;  // 0..2 for BlockIdx / ThreadIdx, else -1
    VarNode(std::string n, DataType t, VarKind k, int d, SourceLoc l)
        : ExprNode(kKind, t, l), name(std::move(n)), var_kind(k), dim(d) {}
};

struct BinaryNode : ExprNode {
    static constexpr ExprKind kKind = ExprKind::Binary;
    BinaryOp op;
    Expr a, b;
    BinaryNode(BinaryOp o, Expr x, Expr y, DataType t, SourceLoc l)
        : ExprNode(kKind, t, l), op(o), a(std::move(x)), b(std::move(y)) {}
};

struct UnaryNode : ExprNode {
    static constexpr ExprKind kKind = ExprKind::Unary;
    UnaryOp op;
    Expr a;
    UnaryNode(UnaryOp o, Expr x, DataType t, SourceLoc l) : ExprNode(kKind, t, l), op(o), a(std::move(x)) {}
};

// cond ? t : f (both sides are evaluated-free: the IR has no side effects in exprs).
struct SelectNode : ExprNode {
    static constexpr ExprKind kKind = ExprKind::Select;
    Expr cond, t, f;
    SelectNode(Expr c, Expr x, Expr y, DataType ty, SourceLoc l)
        : ExprNode(kKind, ty, l), cond(std::move(c)), t(std::move(x)), f(std::move(y)) {}
};

// Conversion to `type` (float->int truncates toward zero; int->int wraps).
struct CastNode : ExprNode {
    static constexpr ExprKind kKind = ExprKind::Cast;
    Expr value;
    CastNode(DataType t, Expr v, SourceLoc l) : ExprNode(kKind, t, l), value(std::move(v)) {}
};

struct CallNode : ExprNode {
    static constexpr ExprKind kKind = ExprKind::Call;
    CallOp op;
    std::vector<Expr> args;
    CallNode(CallOp o, std::vector<Expr> a, DataType t, SourceLoc l)
        : ExprNode(kKind, t, l), op(o), args(std::move(a)) {}
};

// buffer[indices...]; one index per dimension (none for a rank-0 buffer).
struct LoadNode : ExprNode {
    static constexpr ExprKind kKind = ExprKind::Load;
    Buffer buffer;
    std::vector<Expr> indices;
    LoadNode(Buffer b, std::vector<Expr> i, DataType t, SourceLoc l)
        : ExprNode(kKind, t, l), buffer(std::move(b)), indices(std::move(i)) {}
};

// The node as a shared_ptr<const T>, or null if `e` is null or of another kind.
template <typename T>
std::shared_ptr<const T> expr_as(const Expr& e) {
    if (!e || e->kind != T::kKind) return nullptr;
    return std::static_pointer_cast<const T>(e);
}

// ---------------------------------------------------------------------------------
// Buffers and regions

struct BufferNode {
    std::string name;
    DataType dtype;
    std::vector<Expr> shape;    // rank 0 allowed (a `var` scalar is a rank-0 Local buffer)
    std::vector<Expr> strides;  // empty = row-major (contiguous)
    Scope scope = Scope::Global;
    Access access = Access::InOut;  // meaningful for Global tensors
    std::string layout_hint;        // from @layout annotations, "" if none
    SourceLoc loc;
    // Thread level, shared scope: the byte offset of the buffer in the block's shared
    // arena, given by the shared-memory plan (compiler/lower/shared_plan.cpp); -1 before.
    int64_t shared_offset = -1;

    size_t rank() const { return shape.size(); }
};

// A box of a buffer: full-rank start and extent. A whole buffer: start all 0, extent =
// shape (see full_region).
struct Region {
    Buffer buffer;
    std::vector<Expr> start;
    std::vector<Expr> extent;
};

// ---------------------------------------------------------------------------------
// Statements

enum class StmtKind : uint8_t {
    Seq,
    For,
    If,
    LetStmt,
    Allocate,
    Store,
    Evaluate,
    Copy,
    Gemm,
    Fill,
    Reduce,
    Cumsum,
    AtomicAdd,
    Print,
    Assert,
    Barrier,
    AtomicRmw,
    FullWrite,
    MachineOp,
};

struct StmtNode;
using Stmt = std::shared_ptr<const StmtNode>;

struct StmtNode {
    StmtKind kind;
    SourceLoc loc;
    StmtNode(StmtKind k, SourceLoc l) : kind(k), loc(l) {}
    template <typename T>
    const T* as() const {
        return kind == T::kKind ? static_cast<const T*>(this) : nullptr;
    }
    template <typename T>
    bool is() const {
        return kind == T::kKind;
    }
};

template <typename T>
std::shared_ptr<const T> stmt_as(const Stmt& s) {
    if (!s || s->kind != T::kKind) return nullptr;
    return std::static_pointer_cast<const T>(s);
}

// Statements in order. Never directly nested (make_seq flattens); may be empty.
struct SeqNode : StmtNode {
    static constexpr StmtKind kKind = StmtKind::Seq;
    std::vector<Stmt> stmts;
    SeqNode(std::vector<Stmt> s, SourceLoc l) : StmtNode(kKind, l), stmts(std::move(s)) {}
};

// for var in [min, min + extent). `stages` is the pipeline depth of a Pipelined loop
// (0 otherwise). `var` is defined in `body` only.
struct ForNode : StmtNode {
    static constexpr StmtKind kKind = StmtKind::For;
    Var var;
    Expr min, extent;
    ForKind for_kind;
    int stages;
    Stmt body;
    ForNode(Var v, Expr mn, Expr ext, ForKind k, int st, Stmt b, SourceLoc l)
        : StmtNode(kKind, l),
          var(std::move(v)),
          min(std::move(mn)),
          extent(std::move(ext)),
          for_kind(k),
          stages(st),
          body(std::move(b)) {}
};

struct IfNode : StmtNode {
    static constexpr StmtKind kKind = StmtKind::If;
    Expr cond;
    Stmt then_case;
    Stmt else_case;  // may be null
    IfNode(Expr c, Stmt t, Stmt e, SourceLoc l)
        : StmtNode(kKind, l), cond(std::move(c)), then_case(std::move(t)), else_case(std::move(e)) {}
};

// let var = value in body.
struct LetStmtNode : StmtNode {
    static constexpr StmtKind kKind = StmtKind::LetStmt;
    Var var;
    Expr value;
    Stmt body;
    LetStmtNode(Var v, Expr val, Stmt b, SourceLoc l)
        : StmtNode(kKind, l), var(std::move(v)), value(std::move(val)), body(std::move(b)) {}
};

// Declares a non-global buffer (shared, fragment, local, register), live in `body`.
struct AllocateNode : StmtNode {
    static constexpr StmtKind kKind = StmtKind::Allocate;
    Buffer buffer;
    Stmt body;
    AllocateNode(Buffer b, Stmt bd, SourceLoc l)
        : StmtNode(kKind, l), buffer(std::move(b)), body(std::move(bd)) {}
};

// buffer[indices...] = value.
struct StoreNode : StmtNode {
    static constexpr StmtKind kKind = StmtKind::Store;
    Buffer buffer;
    std::vector<Expr> indices;
    Expr value;
    StoreNode(Buffer b, std::vector<Expr> i, Expr v, SourceLoc l)
        : StmtNode(kKind, l), buffer(std::move(b)), indices(std::move(i)), value(std::move(v)) {}
};

struct EvaluateNode : StmtNode {
    static constexpr StmtKind kKind = StmtKind::Evaluate;
    Expr value;
    EvaluateNode(Expr v, SourceLoc l) : StmtNode(kKind, l), value(std::move(v)) {}
};

// copy(src -> dst): element-wise, converts dtypes, masks against the bounds of global
// buffers; source elements out of bounds read as `pad` (of src's dtype, never null).
struct CopyNode : StmtNode {
    static constexpr StmtKind kKind = StmtKind::Copy;
    Region src, dst;
    Expr pad;
    CopyNode(Region s, Region d, Expr p, SourceLoc l)
        : StmtNode(kKind, l), src(std::move(s)), dst(std::move(d)), pad(std::move(p)) {}
};

// c (+)= op(a) @ op(b); `clear` zeroes c first.
struct GemmNode : StmtNode {
    static constexpr StmtKind kKind = StmtKind::Gemm;
    Region a, b, c;
    bool trans_a, trans_b, clear;
    GemmNode(Region a_, Region b_, Region c_, bool ta, bool tb, bool cl, SourceLoc l)
        : StmtNode(kKind, l),
          a(std::move(a_)),
          b(std::move(b_)),
          c(std::move(c_)),
          trans_a(ta),
          trans_b(tb),
          clear(cl) {}
};

struct FillNode : StmtNode {
    static constexpr StmtKind kKind = StmtKind::Fill;
    Region dst;
    Expr value;  // of dst's dtype
    FillNode(Region d, Expr v, SourceLoc l) : StmtNode(kKind, l), dst(std::move(d)), value(std::move(v)) {}
};

// dst = reduce(src, over dimension `dim`) (0 <= dim < rank(src), already normalised);
// dst's extents are src's without `dim` (or with it as 1). !clear: combine with dst.
struct ReduceNode : StmtNode {
    static constexpr StmtKind kKind = StmtKind::Reduce;
    ReduceKind reduce_kind;
    Region src, dst;
    int dim;
    bool clear;
    ReduceNode(ReduceKind k, Region s, Region d, int dm, bool cl, SourceLoc l)
        : StmtNode(kKind, l), reduce_kind(k), src(std::move(s)), dst(std::move(d)), dim(dm), clear(cl) {}
};

struct CumsumNode : StmtNode {
    static constexpr StmtKind kKind = StmtKind::Cumsum;
    Region src, dst;
    int dim;
    bool reverse;
    CumsumNode(Region s, Region d, int dm, bool rev, SourceLoc l)
        : StmtNode(kKind, l), src(std::move(s)), dst(std::move(d)), dim(dm), reverse(rev) {}
};

// dst += src, atomically per element.
struct AtomicAddNode : StmtNode {
    static constexpr StmtKind kKind = StmtKind::AtomicAdd;
    Region dst, src;
    AtomicAddNode(Region d, Region s, SourceLoc l)
        : StmtNode(kKind, l), dst(std::move(d)), src(std::move(s)) {}
};

struct PrintNode : StmtNode {
    static constexpr StmtKind kKind = StmtKind::Print;
    std::string fmt;
    std::vector<Expr> args;
    PrintNode(std::string f, std::vector<Expr> a, SourceLoc l)
        : StmtNode(kKind, l), fmt(std::move(f)), args(std::move(a)) {}
};

struct AssertNode : StmtNode {
    static constexpr StmtKind kKind = StmtKind::Assert;
    Expr cond;
    std::string msg;
    AssertNode(Expr c, std::string m, SourceLoc l)
        : StmtNode(kKind, l), cond(std::move(c)), msg(std::move(m)) {}
};

// Block-wide barrier (__syncthreads); thread level.
struct BarrierNode : StmtNode {
    static constexpr StmtKind kKind = StmtKind::Barrier;
    explicit BarrierNode(SourceLoc l) : StmtNode(kKind, l) {}
};

// buffer[indices] = buffer[indices] <op> value as one indivisible read-modify-write of
// that element (thread level: what the atomic_add tile op lowers to). `value` has the
// buffer's element type. No bounds mask (the lowering guards it). Relaxed memory
// order, like CUDA's atomicAdd: atomic with respect to every other thread and block,
// ordering nothing else (a barrier does). Concurrent atomics to one element are not a
// race; the result is the same in any order up to float rounding.
struct AtomicRmwNode : StmtNode {
    static constexpr StmtKind kKind = StmtKind::AtomicRmw;
    AtomicOp op;
    Buffer buffer;
    std::vector<Expr> indices;
    Expr value;
    AtomicRmwNode(AtomicOp o, Buffer b, std::vector<Expr> i, Expr v, SourceLoc l)
        : StmtNode(kKind, l), op(o), buffer(std::move(b)), indices(std::move(i)), value(std::move(v)) {}
};

// Thread level, between lower-tile-ops and plan-shared-memory only: `body` (a lowered
// copy or fill) overwrites every element of the shared `buffer` without reading it.
// The shared-memory plan's liveness needs the fact (a loop whose first access to a
// buffer is such a write does not carry the buffer's value from one iteration to the
// next); it is a node rather than a side table so that the stage between the two passes
// can be printed, read back (tilec opt) and tested alone. plan-shared-memory removes it.
struct FullWriteNode : StmtNode {
    static constexpr StmtKind kKind = StmtKind::FullWrite;
    Buffer buffer;
    Stmt body;
    FullWriteNode(Buffer b, Stmt bd, SourceLoc l) : StmtNode(kKind, l), buffer(std::move(b)), body(std::move(bd)) {}
};

// A target instruction of the GPU lowering that loads and stores cannot say (thread
// level, NVIDIA sm_80+ and AMD's matrix instructions; lower/ emits them for targets whose
// table has the feature, and the backend of that vendor and the simulator execute them). `imm` holds the instruction's
// qualifiers; `dst` the elements it writes and `src` what it reads, each a Load naming
// one element (dst entries are written, never read: a Load is the IR's element
// reference). Per op:
//   Ldmatrix  ldmatrix.sync.aligned.m8n8.x{num}{.trans}.shared.b16; imm {num, trans};
//             src {s[i..]}: the first element of the 16-byte row this lane addresses
//             (lanes 8q..8q+7 address the rows of matrix q, q < num), s shared, of 8-,
//             16- or 32-bit elements (ldmatrix moves b16 pairs: .trans for 16-bit only);
//             dst num * 32 / bits register elements: register q's bytes low to high.
//             Warp-collective: every lane executes it with no lane-dependent guard.
//   Mma       mma.sync.aligned.m{m}n{n}k{k}.row.col; imm {m, n, k}; src: the lane's A
//             elements, then B's, then C's, in the PTX ISA's fragment order (a0, a1,
//             ...): k/2 of A, k/4 of B, 4 of C; dst: D's elements (d0..d3). The forms
//             (is_mma_form): m16n8k16 f16 or bf16 A/B (one type) with f32 C/D, or f16
//             A/B with f16 C/D; m16n8k32 i8 or u8 A/B with i32 C/D (.s32.s8.s8.s32,
//             .u8), or f8e4m3 / f8e5m2 A and B (each its own: .e4m3.e5m2 and the
//             other mixes too) with f32 C/D; m16n8k8 f32 A/B with f32 C/D, which is
//             .tf32: each A/B element is first rounded by cvt.rna.tf32.f32.
//             Warp-collective.
//   CpAsync   cp.async.{ca|cg}.shared.global (cg for 16 bytes); imm {bytes}: 4, 8 or 16;
//             dst {s[i..]} the first shared element, src {G[j..], n}: the first global
//             element and the bytes to read from it (an index expression, 0..bytes; the
//             rest of the destination is filled with zeros). The bytes land in shared
//             memory only at the cp_async_wait that completes its group.
//   CpAsyncCommit  cp.async.commit_group: the thread's uncommitted copies form a group.
//   CpAsyncWait    cp.async.wait_group n; imm {n}: wait until at most n of the
//             thread's groups are pending.
// sm_90a (issue 12), executed by the 128 threads of a warpgroup together:
//   Wgmma     wgmma.mma_async.sync.aligned.m64n{n}k16.f32.T.T with scale-d 1; imm {n,
//             trans_a, trans_b, lbo_a, sbo_a, swizzle_a, lbo_b, sbo_b, swizzle_b}
//             (byte offsets and swizzle mode of the two matrix descriptors, 0 none, 1
//             128B, 2 64B, 3 32B, PTX ISA 9.7.15.5.1.2); src {a[..], b[..], c0..}: the
//             shared elements where A's and B's descriptors start (T f16 or bf16, the
//             start addresses of the descriptors), then the n/2 f32 accumulators;
//             dst: the same n/2 accumulators. Asynchronous: the accumulators may be
//             read only after a wgmma_wait that covers it. The register form (A in
//             registers, PTX ISA 9.7.15.5.1.1.1 Figure 148; T f16 or bf16 only): src
//             {a0..a7, b[..], c0..}: the thread's 8 A elements (register elements of
//             type T, in the figure's order, packed in pairs into the 4 .f16x2
//             registers), then B's shared element and the accumulators; imm as above
//             with trans_a, lbo_a, sbo_a and swizzle_a 0 (the form takes no A
//             descriptor nor imm-trans-a). Its A registers, too, may be written only
//             after a wgmma_wait that covers it. wgmma_a_operands tells the forms apart
//             (by the operand count).
//   WgmmaFence     wgmma.fence.sync.aligned: orders the registers' earlier accesses
//             before the wgmma that follow; dst = src: the accumulators it orders.
//   WgmmaCommit    wgmma.commit_group.sync.aligned.
//   WgmmaWait      wgmma.wait_group.sync.aligned n; imm {n}; dst = src: the
//             accumulators it makes readable (so that nothing moves their reads above it).
//   FenceProxyAsync  fence.proxy.async.shared::cta: the thread's shared-memory writes
//             become visible to the async proxy that wgmma and TMA stores read through
//             (for another thread's read, the fence must precede a barrier between).
// sm_90 mbarriers and TMA (issue 12; ops/copy_tma.cpp and software-pipeline emit them in
// the pipelined loops of sm_90a): `bar` is an element of a shared u64 buffer, the mbarrier
// object.
//   MbarrierInit     mbarrier.init.shared::cta.b64 [bar], count; imm {count}; dst {bar}.
//   MbarrierArrive   mbarrier.arrive{.expect_tx}.shared::cta.b64 _, [bar]{, tx}; imm
//             {tx}: 0 a plain arrive-on, else expect-tx of tx bytes then the arrive-on;
//             dst {bar}; src {} or {rank}: with a rank (a plain arrive-on only), the
//             object at the same CTA-relative offset in the cluster's CTA of that
//             %cluster_ctarank (mapa.shared::cluster, then
//             mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote]).
//   MbarrierWait     a mbarrier.try_wait.parity.shared::cta.b64 loop; src {bar, parity}:
//             returns once the phase of that parity (the current or the preceding one)
//             has completed.
//   TmaLoad   cp.async.bulk.tensor.{r}d.shared::cluster.global.tile.mbarrier::
//             complete_tx::bytes; imm {swizzle, box_0 .. box_{r-1} [, dim_0 .. dim_{r-1}]}:
//             the tensor map's swizzle (0 none, 1 32B, 2 64B, 3 128B: CUtensorMapSwizzle)
//             and box, box_0 the innermost; map dimension i is tensor dimension dim_i
//             (default r-1-i: the last dimension innermost; tma_maps.h's tma_map_dims),
//             dim_0's stride 1; dst {s[..]}: the shared element where the box starts;
//             src {G[..], bar [, mask]}: the global tensor (its tensor map) at the box's first
//             element in the tensor's coordinates (they may lie outside: those
//             elements are zero-filled), and the mbarrier whose tx-count the box's bytes
//             complete. The bytes land when a wait on the barrier sees the phase complete.
//             With a mask (a u16 ctaMask of %cluster_ctarank bits): .multicast::cluster,
//             the box and the complete-tx land at the same CTA-relative offsets in every
//             CTA of the mask (sim/cluster.h).
//   TmaStore  cp.async.bulk.tensor.{r}d.global.shared::cta.tile.bulk_group; imm as
//             TmaLoad's (the map's swizzle and box, [dims]); dst {G[..]}: the global
//             tensor (its tensor map) at the box's first element in the tensor's
//             coordinates (elements of the box outside the tensor are not written); src
//             {s[..]}: the shared element where the box starts. Reads shared memory
//             through the async proxy (its writers fence first: FenceProxyAsync) until a
//             BulkWaitRead covers its group.
//   BulkCommit     cp.async.bulk.commit_group: the thread's uncommitted TMA stores form a
//             bulk async-group.
//   BulkWaitRead   cp.async.bulk.wait_group.read n; imm {n}: wait until at most n of the
//             thread's bulk groups still read their shared sources.
// sm_90a warp specialization (software-pipeline and split-warp-roles emit them):
//   SetMaxNReg  setmaxnreg.{inc|dec}.sync.aligned.u32 regs; imm {inc, regs}: inc 1 raises
//             the executing warpgroup's per-thread register count to regs, 0 lowers it
//             (regs 24..256, a multiple of 8); executed by all 128 threads of a warpgroup.
//             An `if` whose then branch starts with a dec and whose else branch starts
//             with an inc is a warp-role split (lower/split_warp_roles.cpp): the branches
//             run concurrently, synchronised by mbarriers only.
//   NamedBarrier  barrier.sync id, threads; imm {id, threads}: a barrier for the block's
//             first `threads` threads (a multiple of 32) on hardware barrier id (1..15);
//             the consumer warps of a warp-specialized kernel use it instead of the
//             block barrier, which the producer warps never reach.
//   BarrierArrive  barrier.arrive id, threads; imm {id, threads}: the executing threads
//             count toward barrier id's `threads` arrivals without waiting (PTX ISA,
//             barrier{.cta}); a NamedBarrier of the same id and count waits for them. The
//             ping-pong schedule of two consumer warpgroups (lower/pingpong_consumers.cpp)
//             pairs one warpgroup's sync with the other's arrive.
// sm_90 thread-block clusters (PrimFunc attribute "cluster" = "XxYxZ"):
//   ClusterArrive  barrier.cluster.arrive.release.aligned: the executing threads arrive at
//             the cluster barrier (every thread of every CTA of the cluster counts).
//   ClusterWait    barrier.cluster.wait.acquire.aligned: waits until every non-exited
//             thread of the cluster arrived (each thread arrives, then waits, once a use).
// AMD (issue 13), executed by a whole wave; operands in the element order of AMD's
// Matrix Instruction Calculator (a lane's element e of A or B is half e % 2 of its
// GPR e / 2; C/D element g is GPR g):
//   Mfma      CDNA2/3 v_mfma_f32_{m}x{n}x{k}{f16|bf16} on wave64; imm {m, n, k}: {32, 32,
//             8} or {16, 16, 16}; src: the lane's 4 A elements, 4 B elements (f16, or
//             bf16, one type), then m*n/64 f32 C elements; dst: D's m*n/64 f32 elements.
//             i8 (into i32) and CDNA3's fp8: m*k/64 bytes of A and of B a lane (byte e
//             of GPR e / 4). fp8 A and B are f8e4m3 / f8e5m2 each (the language's OCP
//             bytes): the instruction is lowered to CDNA3's FNUZ fp8 / bf8 MFMA with the
//             bytes rewritten (scalar/fp8_fnuz.h), so D = C + A * B / 4; the gemm
//             lowering scales C around it (ops/gemm_mfma.cpp).
//   Wmma      RDNA3 v_wmma_f32_16x16x16_{f16|bf16} on wave32; imm {16, 16, 16}; src: 16
//             A elements, 16 B elements, 8 f32 C; dst: 8 f32 D. Lanes l and l + 16 must
//             hold the same A and B.
// Every GPU target:
//   VectorCopy  one thread's vector load and vector store of `bytes` between global and
//             shared memory, either way (ld.shared.v4.b32 + st.global.v4.b32 for 16
//             bytes; on AMD global_load_dwordx4 + ds_write_b128); imm {bytes}: 4, 8 or
//             16; dst {X[..]}: the first element written, src {Y[..]}: the first element
//             read, one global and one shared, of one element type; both addresses
//             aligned to `bytes` (the store epilogue and the AMD fills of ops/copy.cpp,
//             which test the global side's alignment at run time). Or half of a fill
//             through the thread's registers: global -> register (the vector load alone,
//             into `bytes / element` consecutive register elements) and register ->
//             shared (the vector store alone): software-pipeline's register-staged AMD
//             fills, whose loads of the next tile are in flight during this one's MFMAs.
enum class MachineOp : uint8_t {
    Ldmatrix,
    Mma,
    CpAsync,
    CpAsyncCommit,
    CpAsyncWait,
    Wgmma,
    WgmmaFence,
    WgmmaCommit,
    WgmmaWait,
    FenceProxyAsync,
    MbarrierInit,
    MbarrierArrive,
    MbarrierWait,
    TmaLoad,
    TmaStore,
    BulkCommit,
    BulkWaitRead,
    SetMaxNReg,
    NamedBarrier,
    BarrierArrive,
    Mfma,
    Wmma,
    VectorCopy,
    ClusterArrive,
    ClusterWait
};
// "ldmatrix", "mma", "cp_async", "cp_async_commit", "cp_async_wait", "wgmma",
// "wgmma_fence", "wgmma_commit", "wgmma_wait", "fence_proxy_async", "mbarrier_init",
// "mbarrier_arrive", "mbarrier_wait", "tma_load", "tma_store", "bulk_commit", "bulk_wait_read",
// "setmaxnreg", "named_barrier", "barrier_arrive", "mfma",
// "wmma", "vector_copy", "cluster_arrive", "cluster_wait"
const char* machine_op_name(MachineOp op);
// Whether `op` is a warp-role split (SetMaxNReg above): its then branch starts with a
// setmaxnreg.dec, its else branch with a setmaxnreg.inc.
bool is_warp_role_split(const IfNode& op);
// Whether mma.sync m16n8k{k} with A elements of `a`, B elements of `b` and C/D elements
// of `cd` is a form MachineOp::Mma takes (see above).
bool is_mma_form(int64_t k, DataType a, DataType b, DataType cd);
struct MachineOpNode : StmtNode {
    static constexpr StmtKind kKind = StmtKind::MachineOp;
    MachineOp op;
    std::vector<int64_t> imm;
    std::vector<Expr> dst;
    std::vector<Expr> src;
    MachineOpNode(MachineOp o, std::vector<int64_t> i, std::vector<Expr> d, std::vector<Expr> sr, SourceLoc l)
        : StmtNode(kKind, l), op(o), imm(std::move(i)), dst(std::move(d)), src(std::move(sr)) {}
};
// How many of a Wgmma's src entries are A's (see above): 8 for the register form (src
// n/2 + 9 entries), else 1 (a shared element: the descriptor form).
size_t wgmma_a_operands(const MachineOpNode& op);

// ---------------------------------------------------------------------------------
// Functions and modules

struct Param {
    ParamKind kind = ParamKind::Tensor;
    Buffer buffer;  // Tensor: a Global buffer
    Var var;        // Size (VarKind::Size, i64) / Scalar (VarKind::Scalar)
};

// What a function's statements describe: the block's data flow over tiles (the
// frontend's output, what the CPU backend and the interpreter read), or what each
// thread does (after the GPU pass lower-tile-ops; what the GPU backends and the
// simulator read).
enum class FuncLevel : uint8_t { Tile, Thread };

// The result of layout inference kept on the function for the passes after it
// (lower-tile-ops reads it): which thread holds which element of every fragment and
// parallel loop, and how each shared buffer is laid out. Defined by the GPU lowering
// (lower::LayoutPlan); the IR only keeps and prints it, as comment lines (`str()`),
// which the IR reader skips: the layouts are recomputed by running the pass again.
struct LayoutAnnotation {
    virtual ~LayoutAnnotation() = default;
    // One line per fragment, loop and shared buffer.
    virtual std::string str() const = 0;
};

// One exported kernel specialisation: one C entry point.
struct PrimFunc {
    std::string name;              // exported C symbol, e.g. "gemm_f16"
    std::string kernel;            // source kernel name, e.g. "gemm"
    std::vector<Param> params;     // in C argument order
    std::vector<Expr> grid;        // 1..3 dims (index type)
    int64_t threads = 0;           // threads per block
    std::array<Var, 3> block_idx;  // VarKind::BlockIdx, dims 0..2; see make_block_idx_vars
    std::vector<std::pair<std::string, std::string>> constants;  // {"BM","128"}, {"T","f16"}
    std::vector<std::pair<std::string, std::string>> attrs;      // {"rasterize","8"}
    Stmt body;
    SourceLoc loc;

    // Facts the GPU passes establish for the stages after them.
    FuncLevel level = FuncLevel::Tile;                  // Thread from lower-tile-ops on
    std::shared_ptr<const LayoutAnnotation> layouts;    // from layout-inference to lower-tile-ops
    // From plan-shared-memory: the bytes of the block's shared arena (nullopt: not
    // planned yet), and whether a launch passes them as dynamic shared memory (above
    // the target's static limit).
    std::optional<int64_t> shared_bytes;
    bool dynamic_shared = false;
    // The dynamic shared bytes a launch passes (0: static or none).
    int64_t dynamic_shared_bytes() const { return dynamic_shared && shared_bytes ? *shared_bytes : 0; }
};

struct Module {
    std::vector<PrimFunc> funcs;
};

// ---------------------------------------------------------------------------------
// Factories. Types follow these rules (the frontend checks the source types; the
// verifier checks the IR): comparisons, And, Or, Not yield bool; other binary/unary ops
// yield the type of their first operand; Select yields t's type.

Expr make_int(int64_t value, DataType type = DataType::index(), SourceLoc loc = {});
Expr make_bool(bool value, SourceLoc loc = {});
Expr make_float(double value, DataType type = DataType::f32(), SourceLoc loc = {});
// Zero of `type` (IntImm or FloatImm).
Expr make_zero(DataType type, SourceLoc loc = {});
Expr make_string(std::string value, SourceLoc loc = {});
Var make_var(std::string name, DataType type, VarKind kind, SourceLoc loc = {}, int dim = -1);
// Shorthands: a loop variable, a let variable, a size (i64).
Var make_loop_var(std::string name, SourceLoc loc = {}, DataType type = DataType::index());
Var make_let_var(std::string name, DataType type, SourceLoc loc = {});
Var make_size_var(std::string name, SourceLoc loc = {});
// block.x, block.y, block.z (VarKind::BlockIdx, index type).
std::array<Var, 3> make_block_idx_vars(SourceLoc loc = {});
// thread.x (VarKind::ThreadIdx), for thread-level IR.
Var make_thread_idx_var(int dim, SourceLoc loc = {});

Expr make_binary(BinaryOp op, Expr a, Expr b, SourceLoc loc = {});
Expr make_unary(UnaryOp op, Expr a, SourceLoc loc = {});
Expr make_select(Expr cond, Expr t, Expr f, SourceLoc loc = {});
Expr make_cast(DataType type, Expr value, SourceLoc loc = {});
// Result type: the first argument's.
Expr make_call(CallOp op, std::vector<Expr> args, SourceLoc loc = {});
Expr make_call(CallOp op, std::vector<Expr> args, DataType type, SourceLoc loc);
// A warp shuffle (CallOp::ShflXor ...) of `value`; `lane` cast to i32 if it is another
// integer type.
Expr make_shuffle(CallOp op, Expr value, Expr lane, SourceLoc loc = {});
Expr make_load(Buffer buffer, std::vector<Expr> indices, SourceLoc loc = {});

// Shorthands for make_binary (loc = a's loc).
Expr add(Expr a, Expr b);
Expr sub(Expr a, Expr b);
Expr mul(Expr a, Expr b);
Expr floordiv(Expr a, Expr b);
Expr floormod(Expr a, Expr b);
// (Not min/max: std::min would win overload resolution for Var arguments via ADL.)
Expr minimum(Expr a, Expr b);
Expr maximum(Expr a, Expr b);
Expr lt(Expr a, Expr b);
Expr le(Expr a, Expr b);
Expr gt(Expr a, Expr b);
Expr ge(Expr a, Expr b);
Expr eq(Expr a, Expr b);
Expr ne(Expr a, Expr b);
Expr logical_and(Expr a, Expr b);
Expr logical_or(Expr a, Expr b);
Expr logical_not(Expr a);
// floordiv(a + b - 1, b): the language's cdiv for b > 0.
Expr cdiv(Expr a, Expr b);

Buffer make_buffer(std::string name, DataType dtype, std::vector<Expr> shape, Scope scope,
                   SourceLoc loc = {});
// A global tensor parameter (strides empty = row-major).
Buffer make_tensor(std::string name, DataType dtype, std::vector<Expr> shape, Access access,
                   SourceLoc loc = {}, std::vector<Expr> strides = {});
// Any buffer, all fields given.
Buffer make_buffer(BufferNode node);

// The whole buffer: start all 0, extent = shape.
Region full_region(const Buffer& buffer);
Region make_region(Buffer buffer, std::vector<Expr> start, std::vector<Expr> extent);
// True if start is all constant 0 and extent structurally equals the shape.
bool is_full_region(const Region& r);
// True if the copy reads 0 past its source's edges (its pad a constant 0, or none).
bool pads_with_zero(const CopyNode& c);

// Flattens nested Seqs and drops null statements; a single statement is returned as
// itself; none gives an empty Seq.
Stmt make_seq(std::vector<Stmt> stmts, SourceLoc loc = {});
Stmt make_for(Var var, Expr min, Expr extent, ForKind kind, Stmt body, SourceLoc loc = {}, int stages = 0);
Stmt make_if(Expr cond, Stmt then_case, Stmt else_case = nullptr, SourceLoc loc = {});
Stmt make_let(Var var, Expr value, Stmt body, SourceLoc loc = {});
Stmt make_allocate(Buffer buffer, Stmt body, SourceLoc loc = {});
Stmt make_store(Buffer buffer, std::vector<Expr> indices, Expr value, SourceLoc loc = {});
Stmt make_evaluate(Expr value, SourceLoc loc = {});
// `pad` null means zero of src's dtype.
Stmt make_copy(Region src, Region dst, Expr pad = nullptr, SourceLoc loc = {});
Stmt make_gemm(Region a, Region b, Region c, bool trans_a = false, bool trans_b = false, bool clear = false,
               SourceLoc loc = {});
Stmt make_fill(Region dst, Expr value, SourceLoc loc = {});
Stmt make_reduce(ReduceKind kind, Region src, Region dst, int dim, bool clear = true, SourceLoc loc = {});
Stmt make_cumsum(Region src, Region dst, int dim, bool reverse = false, SourceLoc loc = {});
Stmt make_atomic_add(Region dst, Region src, SourceLoc loc = {});
Stmt make_print(std::string fmt, std::vector<Expr> args, SourceLoc loc = {});
Stmt make_assert(Expr cond, std::string msg, SourceLoc loc = {});
Stmt make_barrier(SourceLoc loc = {});
Stmt make_full_write(Buffer buffer, Stmt body, SourceLoc loc = {});
Stmt make_atomic_rmw(AtomicOp op, Buffer buffer, std::vector<Expr> indices, Expr value, SourceLoc loc = {});
Stmt make_machine_op(MachineOp op, std::vector<int64_t> imm, std::vector<Expr> dst, std::vector<Expr> src,
                     SourceLoc loc = {});
// True for an empty Seq (a no-op).
bool is_no_op(const Stmt& s);

// ---------------------------------------------------------------------------------
// Queries

// The value of an IntImm (including bool), else nullopt.
std::optional<int64_t> as_const_int(const Expr& e);
bool is_const_int(const Expr& e, int64_t v);
// Structural equality: same tree, same types, same Var/Buffer pointers.
bool structural_equal(const Expr& a, const Expr& b);
bool structural_equal(const std::vector<Expr>& a, const std::vector<Expr>& b);

}  // namespace tilec::ir
