// The interpreter's internal state, shared by its source files: values, buffer storage
// with init bits, scoped bindings of vars and buffers, and the evaluation entry points.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "interp/interp.h"
#include "ir/ir.h"
#include "scalar/scalar.h"

namespace tilec::interp::detail {

// Scalars and their rules (conversions, integer wrap, floor division) are the shared
// ones of compiler/scalar; the interpreter's own part is when it rounds (interp.h).
using scalar::convert;
using scalar::int_to_double;
using scalar::is_u64;
using scalar::Value;

// Thrown inside the interpreter; run() turns it into a Result.
struct InterpError {
    SourceLoc loc;
    std::string message;
};
[[noreturn]] void fail(SourceLoc loc, std::string message);

// "[4, 16]"
inline std::string shape_str(const std::vector<int64_t>& s) {
    return scalar::list_str(s);
}

// The memory of one buffer: a tensor argument's array, or a fresh array per `alloc`.
struct Storage {
    const ir::BufferNode* buffer = nullptr;
    ir::DataType dtype;
    bool global = false;
    bool writable = true;
    std::vector<int64_t> shape;
    std::vector<int64_t> strides;
    // Float types use `f`; integer and bool types use `i`, or `f` for a tensor given
    // as doubles.
    double* f = nullptr;
    int64_t* i = nullptr;
    // Non-global buffers: 1 once an element was written (when tracking is on).
    std::vector<uint8_t> init;
    bool track_init = false;
    std::vector<double> own_f;
    std::vector<int64_t> own_i;

    const std::string& name() const { return buffer->name; }
    // True if every index is within the shape.
    bool in_bounds(const int64_t* idx) const {
        for (size_t d = 0; d < shape.size(); ++d)
            if (idx[d] < 0 || idx[d] >= shape[d]) return false;
        return true;
    }
    int64_t offset(const int64_t* idx) const {
        int64_t off = 0;
        for (size_t d = 0; d < shape.size(); ++d) off += idx[d] * strides[d];
        return off;
    }
    // The element at `off`; reports an uninitialised read at `loc`.
    Value read(int64_t off, const int64_t* idx, SourceLoc loc) const;
    // Stores `v` (of type `from`), converted to the element type.
    void write(int64_t off, Value v, ir::DataType from);
};

// The most dimensions a buffer may have.
constexpr size_t kMaxRank = 16;

// "'a'[3, 40]"
std::string element_str(const Storage& s, const int64_t* idx);

// One run of a function: bindings and the evaluation of expressions and statements.
class Machine {
public:
    explicit Machine(const RunOptions& opt) : opt_(opt) {}

    // ---- bindings (scoped: pushed on entry, popped on exit; looked up from the top) --
    void push_var(const ir::VarNode* v, Value val) { vars_.emplace_back(v, val); }
    void pop_var() { vars_.pop_back(); }
    Value var_value(const ir::VarNode* v, SourceLoc loc) const;
    void push_buffer(const ir::BufferNode* b, Storage* s) { buffers_.emplace_back(b, s); }
    void pop_buffer() { buffers_.pop_back(); }
    Storage& storage(const ir::Buffer& b, SourceLoc loc) const;
    const RunOptions& options() const { return opt_; }

    // ---- expressions (eval_expr.cpp) ----
    Value eval(const ir::Expr& e);
    double eval_float(const ir::Expr& e);  // e of a float type
    int64_t eval_int(const ir::Expr& e);   // e of an integer or bool type
    bool eval_bool(const ir::Expr& e) { return eval_int(e) != 0; }
    // Evaluates indices into `idx` (kMaxRank entries) and checks them against the
    // buffer's shape; returns the element's offset.
    int64_t element_offset(const Storage& s, const std::vector<ir::Expr>& indices, SourceLoc loc,
                           int64_t* idx);

    // ---- statements (exec_stmt.cpp) ----
    void exec(const ir::Stmt& s);

    // ---- tile ops (tile_ops.cpp) ----
    void exec_copy(const ir::CopyNode* op);
    void exec_gemm(const ir::GemmNode* op);
    void exec_fill(const ir::FillNode* op);
    void exec_reduce(const ir::ReduceNode* op);
    void exec_cumsum(const ir::CumsumNode* op);
    void exec_atomic_add(const ir::AtomicAddNode* op);

    // ---- races within a parallel loop (exec_stmt.cpp) ----
    // While a parallel loop runs, each access to an element of a shared, fragment or
    // global buffer is checked against the loop's earlier accesses: an element that one
    // iteration writes and another reads or writes is a race (language.md, section 12),
    // reported at the access.
    void race_check(const Storage& s, int64_t off, const int64_t* idx, SourceLoc loc, bool write);

private:
    struct RaceShadow {
        int64_t writer = -1;  // the iteration that wrote the element, -1: none
        int64_t reader = -1;  // the iteration that read it, -1: none, -2: several
    };
    struct StorageShadow {
        std::vector<RaceShadow> dense;                   // a tile: every element
        std::unordered_map<int64_t, RaceShadow> sparse;  // a tensor: those accessed
    };
    struct ParallelRun {
        int64_t iteration = -1;  // of the innermost loop of the nest, counted from 0
        std::unordered_map<const Storage*, StorageShadow> storages;
        const Storage* last = nullptr;  // the storage of the previous access, and its shadow
        StorageShadow* last_shadow = nullptr;
    };
    std::optional<ParallelRun> parallel_;  // set while a parallel loop runs

    Value eval_binary(const ir::BinaryNode* op);
    Value eval_call(const ir::CallNode* op);
    void exec_print(const ir::PrintNode* op);

    const RunOptions& opt_;
    std::vector<std::pair<const ir::VarNode*, Value>> vars_;
    std::vector<std::pair<const ir::BufferNode*, Storage*>> buffers_;
};

}  // namespace tilec::interp::detail
