// Internal to the CPU backend: the classes that lower Tile IR to LLVM IR, shared by the
// codegen .cpp files. LLVM types are only forward-declared here (no LLVM headers).
//
// Value model. Every IR value has a *register type* (reg_type): iN for integers of N
// bits (i4 included), i1 for bool, float for f32, double for f64, and float for the
// narrow floats f16, bf16, f8e4m3, f8e5m2, which are computed in f32 and rounded to
// their type only where the IR says so: a store into memory, a Cast, a literal (as the
// reference interpreter does, in double). In memory an element has a *storage type*
// (storage_type): half for f16, i16 for bf16, i8 for f8 and bool, i8 for i4/u4 in
// block-local buffers; in global tensors i4/u4 are packed two per byte, low nibble
// first, and element offsets count nibbles.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ir/ir.h"
#include "support/source.h"

namespace llvm {
class BasicBlock;
class Constant;
class Function;
class FunctionCallee;
class GlobalVariable;
class IRBuilderBase;
class LLVMContext;
class MDNode;
class Module;
class StructType;
class TargetMachine;
class Type;
class Value;
}  // namespace llvm

namespace tilec::codegen {

llvm::Type* reg_type(llvm::LLVMContext& ctx, ir::DataType t);
llvm::Type* storage_type(llvm::LLVMContext& ctx, ir::DataType t);
// True for f16, bf16, f8e4m3, f8e5m2 (held in f32 registers).
bool is_narrow_float(ir::DataType t);

// Per-module state: conversion helpers and constants, created on first use, so a module
// holds only what its functions need.
class ModuleState {
public:
    ModuleState(llvm::Module& m, const SourceManager* sources);
    llvm::Module& module;
    llvm::LLVMContext& ctx;
    const SourceManager* sources;  // for "file:line:col" in assert messages; may be null
    // What the code is lowered for (set from the CPU's features by compile_cpu): the
    // SIMD registers, their width in bytes and how many there are (tile ops size their
    // register blocks from them), and the AVX-512 extensions the math uses.
    struct CpuShape {
        unsigned vector_bytes = 16;
        unsigned vector_registers = 16;
        // x86 AVX-512 foundation and vector-length extensions (vscalefps on 16, 8, 4 lanes).
        bool avx512f = false;
        bool avx512vl = false;
        // AVX-512 DQ (vreduceps: exp2's fraction in one instruction, cpu_expr.cpp).
        bool avx512dq = false;
        // Appended to the names of the functions whose code depends on the fields above
        // (the block function, the math and streaming helpers): empty but while one
        // variant of an object for several CPUs is emitted.
        std::string function_suffix;
    };
    CpuShape cpu;
    // x86: stores may bypass the caches (non-temporal, made visible by an sfence).
    bool streaming_stores = false;
    // Objects for several CPUs (--cpu=LIST): each export's block function is emitted
    // once per variant, with `cpu` set to the variant's shape; compile_cpu gives the
    // functions whose names carry a variant's suffix that variant's target-cpu and the
    // rest (entry points, shared helpers) the x86-64 baseline. The entry point picks the
    // variant at each launch (tile_cpu_x86_level). Empty: one CPU.
    struct CpuVariant {
        std::string name;  // an LLVM CPU name: x86-64, x86-64-v2, x86-64-v3, x86-64-v4
        int level = 1;     // its x86-64 level, as tile_cpu_x86_level reports a CPU's
        CpuShape shape;    // function_suffix ".cpu<level>"
    };
    std::vector<CpuVariant> cpu_variants;  // ascending levels
    // Keeps functions (the vector variants of the math functions, cpu_expr.cpp) alive
    // through the optimisation pipeline, until inline_math_functions.
    void keep_until_inlined(const std::vector<llvm::Constant*>& fns);

    // "file:line:col" of a source location ("<unknown>" without one).
    std::string describe(SourceLoc loc) const;

    // Internal function `iN tilec.encode.<fmt>(double)`: rounds to the narrow float
    // format (nearest, ties to even, once) and returns its bits (i16 or i8). f8e4m3
    // saturates at +-448 (inf too); the other formats overflow to inf. NaN keeps its sign.
    llvm::Function* encoder(ir::DataType narrow);
    // Constant [256 x float] table of the values of an 8-bit float format's codes.
    llvm::GlobalVariable* f8_table(ir::DataType f8);
    // A private constant NUL-terminated string (deduplicated).
    llvm::Constant* c_string(const std::string& s);
    // Declarations of the runtime and C library functions the code calls.
    llvm::FunctionCallee tile_set_error();
    llvm::FunctionCallee tile_cpu_launch();
    llvm::FunctionCallee tile_cpu_check_options();
    llvm::FunctionCallee tile_cpu_x86_level();
    llvm::FunctionCallee libc(const std::string& name);  // malloc, free, printf, tanhf, tanh

private:
    std::map<std::string, llvm::Function*> encoders_;
    std::map<std::string, llvm::GlobalVariable*> tables_;
    std::map<std::string, llvm::Constant*> strings_;
};

// Global destinations of at least this many bytes are written with non-temporal stores
// where a copy writes a row's aligned middle from a block-local tile (cpu_tile_ops.cpp,
// and fused into a row's column loop, cpu_fusion.cpp): a kernel's output of this size is
// unlikely to be read from the caches soon, and a plain store would first read each line
// from memory (a third more DRAM traffic for a row kernel). 8 MiB: above per-core L2
// sizes, so small outputs that the next kernel reads stay cached.
constexpr uint64_t kStreamingStoreBytes = 8u << 20;

// How a loop is annotated for LLVM's loop passes. VectorizeFull: vectorized with one full
// SIMD register of 32-bit lanes per step, whatever LLVM's cost model prefers.
enum class LoopHint { None, Vectorize, VectorizeFull, Unroll };

// A non-global buffer's memory, or a global tensor's base pointer with its shape and
// strides (i64 values, in elements; nibbles for packed i4/u4).
struct BufferInfo {
    llvm::Value* base = nullptr;
    std::vector<llvm::Value*> shape;
    std::vector<llvm::Value*> strides;
    bool global = false;
    bool packed = false;  // global i4/u4
};

// Row fusion (cpu_fusion.cpp): a statement that works row by row on R rows of
// block-local tiles, with the buffers it uses.
enum class RowKind { Loop, Copy, Reduce, Fill };
struct RowUse {
    const ir::BufferNode* buffer;
    bool write;
    bool row;  // accessed only at the statement's row (first index)
    bool col;  // accessed only at [row, column] of a column statement
};
struct RowStmt {
    ir::Stmt stmt;
    RowKind kind;
    int64_t rows = 0;
    int64_t cols = 0;  // > 0: also works column by column on [0, cols)
    std::vector<RowUse> uses;  // block-local buffers
    // Global regions of a copy: their start along the rows, and whether written.
    std::vector<std::pair<ir::Expr, bool>> globals;
    const ir::ForNode* inner = nullptr;  // a Loop with cols: its loop over the columns
};

// Block-local buffers (tiles), and for each statement of a block function's body those
// whose contents may be read after it (cpu_tile_liveness.cpp).
using TileSet = std::set<const ir::BufferNode*>;
std::unordered_map<const ir::StmtNode*, TileSet> tiles_live_after(const ir::Stmt& body);

// How the gemms read a forwardable copy's tile.
struct ForwardableCopy {
    bool read_as_b = false;  // as some gemm's b (else only as a)
};

// The copies of a block function's body whose tile only later gemms of the same statement
// list read, from a global tensor nothing writes: the gemm can read the tensor in place
// (cpu_copy_forwarding.cpp).
std::unordered_map<const ir::CopyNode*, ForwardableCopy> forwardable_copies(const ir::Stmt& body);

// How many rows and columns of a gemm accumulator its one store can reach: the copy into
// a global tensor stores acc[i, j] only where i < rows and j < cols (expressions of the
// sizes, scalars and block indices; may be <= 0 or past the tile).
struct StoredExtent {
    ir::Expr rows, cols;
};

// The block-local accumulators that only fills, gemms (as c) and one copy into a global
// tensor use: the gemms need not compute what the copy cannot store
// (cpu_stored_extent.cpp).
std::unordered_map<const ir::BufferNode*, StoredExtent> accumulator_stored_extents(const ir::Stmt& body);

// Of a block function's body, the copies whose fused row loops prefetch the rows the
// grid's next block reads: the last copy out of each global tensor in program order, the
// block's last pass over those rows (cpu_fusion.cpp).
std::unordered_set<const ir::CopyNode*> prefetching_copies(const ir::Stmt& body);

// Lowers the expressions and statements of one function into `fn` at the builder's
// insertion point. Used for the block function (the body) and the entry point (grid and
// shape expressions).
class FunctionLowering {
public:
    FunctionLowering(ModuleState& ms, llvm::Function* fn, llvm::IRBuilderBase& b);

    // Binds a Var (size, scalar, block index, let, loop) to a register value.
    void bind(const ir::Var& v, llvm::Value* value);
    // Binds a global tensor to its base pointer; shape and strides are computed from the
    // bound sizes at the current insertion point.
    void bind_tensor(const ir::Buffer& b, llvm::Value* base);

    // The register value of an expression (cpu_expr.cpp).
    llvm::Value* expr(const ir::Expr& e);
    // Emits a statement (cpu_stmt.cpp) or a tile op (cpu_tile_ops.cpp).
    void stmt(const ir::Stmt& s);
    // Emits a block function's body, with the tiles' liveness known to row fusion.
    void block_body(const ir::Stmt& body);

    // Conversions between register values and storage (cpu_convert.cpp).
    // `convert` implements cast<to>(v) for a register value of type `from`: float ->
    // int truncates toward zero and saturates (NaN -> 0), int -> int wraps, to bool is
    // != 0, to a narrow float rounds to it (once).
    llvm::Value* convert(llvm::Value* v, ir::DataType from, ir::DataType to);
    // A register value of type `from` ready for to_storage(_, to): like convert, but a
    // float meant for a narrow float is left to to_storage, which rounds it once.
    llvm::Value* convert_for_store(llvm::Value* v, ir::DataType from, ir::DataType to);
    llvm::Value* to_storage(llvm::Value* v, ir::DataType t);    // register -> memory
    llvm::Value* from_storage(llvm::Value* v, ir::DataType t);  // memory -> register
    llvm::Value* const_value(double v, ir::DataType t);         // a literal, rounded to t
    llvm::Value* const_int(int64_t v, ir::DataType t);
    // Float min/max as the language defines them (cpu_expr.cpp): NaN propagates, the
    // sign of a zero result is unspecified (docs/language.md, section 10).
    llvm::Value* float_min_max(bool is_min, llvm::Value* a, llvm::Value* b);

    // Element access with integer (i64) indices, one per dimension (cpu_stmt.cpp).
    llvm::Value* load_element(const ir::Buffer& b, const std::vector<llvm::Value*>& idx);
    void store_element(const ir::Buffer& b, const std::vector<llvm::Value*>& idx, llvm::Value* reg);
    // Adds `reg` to the element atomically (global) or plainly (block-local).
    void atomic_add_element(const ir::Buffer& b, const std::vector<llvm::Value*>& idx, llvm::Value* reg);
    const BufferInfo& buffer(const ir::Buffer& b);

    // for i in [lo, lo + extent): body(i); i64 values. `access_group`, when given, is
    // listed as the loop's parallel accesses (its iterations are independent).
    void emit_loop(llvm::Value* lo, llvm::Value* extent, LoopHint hint,
                   const std::function<void(llvm::Value*)>& body, llvm::MDNode* access_group = nullptr);
    // A nest over constant extents (outermost first); body gets one i64 index per extent.
    // The innermost loop gets `inner_hint`.
    void emit_nest(const std::vector<int64_t>& extents, LoopHint inner_hint,
                   const std::function<void(const std::vector<llvm::Value*>&)>& body);
    // The same over i64 extents (run-time values; <= 0 runs nothing).
    void emit_nest(const std::vector<llvm::Value*>& extents, LoopHint inner_hint,
                   const std::function<void(const std::vector<llvm::Value*>&)>& body);
    // if (cond) then_fn(); else else_fn() (else_fn may be empty).
    void emit_if(llvm::Value* cond, const std::function<void()>& then_fn,
                 const std::function<void()>& else_fn = nullptr);
    // A prefetch of element `index` (i64) of the array at `base`, in a loop over index
    // that the vectoriser may widen (cpu_expr.cpp).
    void emit_prefetch(llvm::Value* base, llvm::Value* index, unsigned elem_bytes);
    // A non-temporal store of storage value `value` into element `index` of the array at
    // `base` (64-byte aligned), in a loop over index that the vectoriser may widen
    // (cpu_expr.cpp).
    void emit_streaming_store(llvm::Value* base, llvm::Value* index, llvm::Value* value);
    // A stack slot in the function's entry block.
    llvm::Value* entry_alloca(llvm::Type* t, uint64_t count, const std::string& name);

    llvm::IRBuilderBase& builder() { return b_; }
    ModuleState& module_state() { return ms_; }
    llvm::Function* function() { return fn_; }

    // Block-function state (set by cpu_entry.cpp): where a failed assert records its
    // message, and the block that returns (after freeing heap buffers).
    llvm::Value* error_slot = nullptr;  // i8** in the argument struct
    llvm::BasicBlock* exit_block = nullptr;
    std::vector<llvm::Value*> heap_buffers;  // freed in exit_block
    bool emitted_streaming_stores = false;   // exit_block then fences them (sfence)

private:
    // Tile ops (cpu_tile_ops.cpp).
    void lower_copy(const ir::CopyNode& s);
    // Stores src[si + j] into global dst[di + j] for j in [lo, hi) along the inner
    // dimensions s_in / d_in; the aligned middle with non-temporal vector stores when
    // the destination tensor is large (cpu_tile_ops.cpp).
    void emit_streaming_row(const ir::CopyNode& s, llvm::Value* lo, llvm::Value* hi,
                            const std::vector<llvm::Value*>& si, const std::vector<llvm::Value*>& di,
                            size_t s_in, size_t d_in);
    void lower_gemm(const ir::GemmNode& s);
    bool lower_gemm_blocked(const ir::GemmNode& s, int64_t M, int64_t N, int64_t K,
                            const std::function<llvm::Value*(llvm::Value*, llvm::Value*)>& load_a,
                            const std::function<llvm::Value*(llvm::Value*, llvm::Value*)>& load_b);
    // The rows of the global region a block-local tile was last copied from in the
    // innermost serial loop around the copy, as that region lies in the loop's next
    // iteration: where the gemm micro-kernel prefetches its operands' next tiles.
    struct NextTileRows {
        llvm::Value* first = nullptr;       // the region's first element (i8 address)
        llvm::Value* row_stride = nullptr;  // bytes from one row to the next (i64)
        int64_t rows = 0;
        int64_t bytes = 0;  // per row
        int64_t lines = 0;  // addresses prefetched per row: one per 64 bytes, and the row's last byte
    };
    std::optional<NextTileRows> next_tile_rows(const ir::Buffer& tile);
    // Records `s` as the source of its destination tile when it copies a global region
    // that moves with an enclosing serial loop.
    void note_tile_source(const ir::CopyNode& s);
    // The elements of a copy, `inside`: the caller has checked that a global source lies
    // wholly inside its tensor (no masking).
    void emit_copy_elements(const ir::CopyNode& s, bool inside);
    // A forwardable copy (forwardable_copies): where its source lies inside the tensor and
    // the tensor's rows are contiguous, no copy; the tile's gemms then read the source
    // through tile_aliases_. Returns the tile.
    const ir::BufferNode* lower_forwarded_copy(const ir::CopyNode& s, const ForwardableCopy& use);
    void lower_fill(const ir::FillNode& s);
    void lower_reduce(const ir::ReduceNode& s);
    // The reduction's starting value, and acc combined with one element x (in dst's type).
    llvm::Value* reduce_identity(const ir::ReduceNode& s);
    llvm::Value* reduce_combine(const ir::ReduceNode& s, llvm::Value* acc, llvm::Value* x);
    void lower_cumsum(const ir::CumsumNode& s);
    void lower_atomic_add(const ir::AtomicAddNode& s);
    // A statement list, with runs of row statements fused (cpu_fusion.cpp).
    void lower_seq(const std::vector<ir::Stmt>& stmts);
    // `live_after`: the tiles that may be read after the run (null: unknown, all).
    void emit_row_run(const std::vector<RowStmt>& run, const TileSet* live_after);
    // Row `row` (a bound variable) of one statement, and of a column segment in one loop.
    void emit_row_stmt(const RowStmt& rs, const ir::Var& row);
    // `dead`: tiles the segment writes that nothing reads after it, kept in registers
    // instead of stored where the loop runs.
    void emit_fused_columns(const std::vector<const RowStmt*>& seg, const ir::Var& row, const TileSet& dead);
    // Other statements (cpu_stmt.cpp).
    void lower_allocate(const ir::AllocateNode& s);
    void lower_for(const ir::ForNode& s);
    void lower_print(const ir::PrintNode& s);
    void lower_assert(const ir::AssertNode& s);
    // Expressions (cpu_expr.cpp).
    llvm::Value* lower_binary(const ir::BinaryNode& e);
    llvm::Value* lower_call(const ir::CallNode& e);
    llvm::Value* lower_select(const ir::SelectNode& e);
    llvm::Value* lower_logical(const ir::BinaryNode& e);
    // Whether evaluating `e` can neither trap nor read outside memory, so a select may
    // evaluate both sides: no integer division by a run-time value, no load but of a
    // block-local buffer at indices provably inside it (by range_of).
    bool speculatable(const ir::Expr& e) const;
    // Whether `e` may be LLVM poison: a shift whose amount is not provably in range.
    bool may_be_poison(const ir::Expr& e) const;
    // The range [lo, hi] of an integer expression built from constants and variables of
    // loops with constant bounds, or false.
    bool range_of(const ir::Expr& e, int64_t& lo, int64_t& hi) const;
    // Address of element `offset` (elements) of a non-packed buffer.
    llvm::Value* element_ptr(const ir::Buffer& b, const BufferInfo& info, llvm::Value* offset) {
        return element_ptr(*b, info, offset);
    }
    llvm::Value* element_ptr(const ir::BufferNode& b, const BufferInfo& info, llvm::Value* offset);
    llvm::Value* element_offset(const BufferInfo& info, const std::vector<llvm::Value*>& idx);
    // Attaches the enclosing parallel loops' access groups to a load or store.
    void mark_access(llvm::Value* inst, const ir::Buffer& b) { mark_access(inst, *b); }
    void mark_access(llvm::Value* inst, const ir::BufferNode& b);

    ModuleState& ms_;
    llvm::Function* fn_;
    llvm::IRBuilderBase& b_;
    std::unordered_map<const ir::VarNode*, llvm::Value*> vars_;
    std::unordered_map<const ir::BufferNode*, BufferInfo> buffers_;
    std::unordered_map<const ir::VarNode*, std::pair<int64_t, int64_t>> ranges_;  // of loop/let vars
    std::vector<llvm::MDNode*> access_groups_;  // of the enclosing parallel loops
    // The serial loops around the statement being lowered, innermost last, and the
    // region each block-local tile was last copied from in one of them (by loop depth).
    struct SerialLoop {
        const ir::VarNode* var = nullptr;
        llvm::Value* index = nullptr;  // i64
    };
    struct TileSource {
        ir::Region src;
        size_t loop = 0;  // index into serial_loops_
    };
    std::vector<SerialLoop> serial_loops_;
    std::unordered_map<const ir::BufferNode*, TileSource> tile_sources_;
    uint64_t stack_bytes_ = 0;                  // block-local buffers on the stack so far
    // Set by block_body: tiles live after each statement of the body (empty elsewhere:
    // unknown).
    std::unordered_map<const ir::StmtNode*, TileSet> live_after_;
    // Tiles whose element at the fused column loop's [row, column] lives in a one-element
    // slot (load_element / store_element use it instead of the tile).
    std::unordered_map<const ir::BufferNode*, llvm::Value*> forwarded_;
    // Compares lowered as true: column bounds that a fused loop's version covers
    // (emit_fused_columns).
    std::unordered_set<const ir::BinaryNode*> assumed_true_;
    // Set by block_body: the copies a gemm can read through (cpu_copy_forwarding.cpp).
    std::unordered_map<const ir::CopyNode*, ForwardableCopy> forwardable_;
    std::unordered_set<const ir::CopyNode*> prefetching_;  // prefetching_copies
    // Set by block_body: accumulators whose gemms may skip what is not stored.
    std::unordered_map<const ir::BufferNode*, StoredExtent> stored_extents_;
    // For a tile whose forwarded copy ran in the statement list being lowered: where its
    // element [0, 0] is (the source region's first element, or the tile's own at the
    // edges, where the copy ran) and its row stride in elements.
    struct TileAlias {
        llvm::Value* base = nullptr;
        llvm::Value* row_stride = nullptr;  // i64
        llvm::Value* in_place = nullptr;    // i1: base is the source's (no copy ran)
        // Where the copy pads with zeros: the tile's rows from valid_rows on and its
        // columns from valid_cols on are zeros (i64, may be <= 0 or past the tile's
        // extent); null otherwise.
        llvm::Value* valid_rows = nullptr;
        llvm::Value* valid_cols = nullptr;
    };
    std::unordered_map<const ir::BufferNode*, TileAlias> tile_aliases_;
};

// Emits NAME_block and NAME_cpu for one export into the module (cpu_entry.cpp).
void emit_cpu_function(ModuleState& ms, const ir::PrimFunc& f, const std::string& entry_name);

// Runs LLVM's O3 pipeline for `tm`'s target, without the optional passes named in
// `skipped`: class names, e.g. "DSEPass" (every run), or "InstCombinePass#4" (the
// fourth run on each function); the GPU modules skip some (cpu_optimize.cpp).
void optimize_module(llvm::Module& m, llvm::TargetMachine& tm, const std::vector<std::string>& skipped = {});
// Inlines the functions with vector variants (tilec.vf.*: exp, exp2, prefetch, between
// whose variants the loop vectoriser chose) into their callers and deletes them
// (cpu_optimize.cpp). Runs after optimize_module, or in its place.
void inline_math_functions(llvm::Module& m);

// The constant value of an index expression, or an internal error naming `what`.
int64_t const_extent(const ir::Expr& e, const char* what);

}  // namespace tilec::codegen
