// What a tile op is given by each stage that calls into its home (compiler/ops/<op>):
// the elaborator's evaluated arguments, layout inference's constraint sink and the
// thread-level lowering's context. Interfaces only, so that compiler/ops depends on
// neither the parser (ANTLR) nor LLVM, and the frontend and lower/ both link it.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/ir.h"
#include "layout/fragment.h"
#include "support/diagnostics.h"
#include "target/target.h"

namespace tilec::ops {

// ---- elaboration (the frontend implements it: frontend/elab_tile_op.cpp) ----------------

// One argument of a tile-op call as written: its name when given by name, and whether it
// is a string literal (print's format, assert's message). Its value is evaluated only
// when the op asks, so the op decides the order of its checks and which arguments a
// failed check leaves unevaluated (and unreported).
struct CallArg {
    std::string name;  // empty for a positional argument
    SourceRange name_range;
    SourceRange range;  // of the value
    bool is_string = false;
    std::string text;  // the string literal's text
};

// A tile operand: a whole buffer, or a buffer with a start index (t[i, j]).
struct TileOperand {
    ir::Buffer buffer;
    bool whole = true;
    std::vector<ir::Expr> start;
    SourceRange range;
    bool ok() const { return buffer != nullptr; }
};

class ElabContext {
public:
    virtual ~ElabContext() = default;
    virtual DiagnosticEngine& diags() = 0;
    virtual const std::string& name() const = 0;  // the op as called, e.g. "reduce_max"
    virtual SourceRange call_range() const = 0;
    virtual const std::vector<CallArg>& args() const = 0;

    // The arguments by parameter: positional ones fill `names` in order, named ones their
    // slot; the first `required` must be given. An absent one is null. nullopt after
    // reporting a misplaced, unknown, repeated or missing argument.
    virtual std::optional<std::vector<const CallArg*>> bind(const std::vector<std::string>& names,
                                                             size_t required) = 0;

    // Evaluations of one argument; each reports its own errors and gives an empty result
    // (a null TileOperand / Expr, nullopt) after one.
    // A tile operand; `op` and `role` word the errors ("the source of copy ...").
    virtual TileOperand tile(const CallArg& a, const char* op, const char* role) = 0;
    // A scalar converted implicitly to `want`; `what` names it ("the fill value").
    virtual ir::Expr scalar(const CallArg& a, ir::DataType want, const char* what) = 0;
    // A scalar in its own type (print's values).
    virtual ir::Expr scalar_value(const CallArg& a, const char* what) = 0;
    // A run-time or compile-time bool (assert's condition).
    virtual ir::Expr condition(const CallArg& a, const char* what) = 0;
    virtual std::optional<int64_t> const_int(const CallArg& a, const char* what) = 0;
    virtual std::optional<bool> const_bool(const CallArg& a, const char* what) = 0;

    // Writes: an input tensor is refused (reported); a written tensor is remembered for
    // the "marked 'out' but never written" warning.
    virtual bool check_writable(const ir::Buffer& b, SourceRange where) = 0;
    virtual void mark_written(const ir::Buffer& b) = 0;
    // Where the user declared `b` (for notes), if known.
    virtual std::optional<SourceRange> declared_at(const ir::Buffer& b) const = 0;

    SourceLoc loc() const { return call_range().begin; }
};

// ---- layout inference (lower/layout_inference.cpp implements it) ------------------------

// The constraints an op puts between the layouts of its fragments, at two priorities
// (TileLang's InferLayout levels): strict ones (the op's own data movement demands them)
// flow before common ones (a cheaper choice), which flow before parallel loops' (free).
// Both sides must be fragments with constant shapes.
class LayoutConstraints {
public:
    virtual ~LayoutConstraints() = default;
    // What the op's choice may depend on: the target, the block's threads, and a kernel
    // annotation's value (PrimFunc::attrs, e.g. "warp_policy"; "" when absent).
    virtual const target::GpuTarget& gpu_target() const = 0;
    virtual int64_t threads() const = 0;
    virtual std::string attr(const std::string& name) const = 0;
    // Strict: `dst` is laid out as `src` reduced along `dim` (Fragment::reduce_dim, `dim`
    // kept as 1 with `keep`), and `src` as `dst` expanded when `dst` is known first.
    // `src` is also among the first nodes to get a default layout.
    virtual void reduced(const ir::Buffer& src, const ir::Buffer& dst, size_t dim, bool keep, SourceLoc loc,
                         std::string use) = 0;
    // Strict: `b` is laid out as `F` (an op whose instructions decide where each element
    // lives, e.g. gemm's accumulator on tensor cores).
    virtual void fixed(const ir::Buffer& b, layout::Fragment F, SourceLoc loc, std::string use) = 0;
    // A shared buffer's layout wanted by the op reading it (a swizzle that keeps its
    // ldmatrix reads free of bank conflicts); the first op to ask decides, an @layout
    // annotation on the buffer overrides it.
    virtual void shared_layout(const ir::Buffer& b, layout::Layout L, SourceLoc loc, std::string use) = 0;
    // The tile dimension every global fill of shared buffer `b` reads contiguously from
    // its tensor (ops/copy.h, fill_contiguous_dim); nullopt if none fills it or they
    // disagree. Dimension 0 of a 2-d tile: a transposed operand.
    virtual std::optional<size_t> shared_fill_dim(const ir::Buffer& b) const = 0;
    // Common: `a` and `b` have one layout. `use` words the use for conflict messages.
    virtual void same(const ir::Buffer& a, const ir::Buffer& b, SourceLoc loc, std::string use) = 0;
};

// ---- thread-level lowering (lower/thread_lowering.h's ThreadLowering implements it) ------

// A construct the GPU path does not cover: thrown by a lowering hook, reported by
// lower_to_thread_level as "<what> is not supported for GPU targets yet" at `loc`.
struct Unsupported {
    SourceLoc loc;
    std::string what;
};

[[noreturn]] inline void unsupported(SourceLoc loc, std::string what) { throw Unsupported{loc, std::move(what)}; }

class LowerContext {
public:
    virtual ~LowerContext() = default;
    // A fragment buffer as lowered: its per-thread register array and its Fragment.
    struct Registers {
        ir::Buffer regs;
        layout::Fragment frag;
    };
    virtual const target::GpuTarget& gpu_target() const = 0;
    virtual int64_t threads() const = 0;  // per block
    // A kernel annotation's value (PrimFunc::attrs); "" when absent.
    virtual std::string attr(const std::string& name) const = 0;
    // The layout layout inference gave a shared buffer (element offsets of its
    // coordinates; lower-tile-ops applies it to every access afterwards), null if none.
    virtual const layout::Layout* shared_layout(const ir::Buffer& b) const = 0;
    virtual ir::Var thread_idx() const = 0;
    // The registers of a fragment in scope (an internal error if it is not allocated).
    virtual const Registers& registers(const ir::Buffer& fragment) const = 0;
    // The thread split of a tile no fragment decides (a shared-memory copy or fill);
    // nullopt if it does not divide among the threads.
    virtual std::optional<layout::Fragment> default_fragment(const std::vector<int64_t>& shape) const = 0;
    // One register loop: for r in unroll(regs): let coord... = F^-1(thread, r); body.
    // `body` gets the register var, the coordinates and the replica number (constant 0
    // without replication).
    using RegBody = std::function<ir::Stmt(const ir::Var& r, const std::vector<ir::Expr>& coord, const ir::Expr& rep)>;
    virtual ir::Stmt register_loop(const layout::Fragment& F, SourceLoc loc, const RegBody& body) = 0;
    // An expression every thread evaluates alike (outside parallel loops), with locals
    // read from their per-thread copies.
    virtual ir::Expr uniform(const ir::Expr& e) = 0;
    // What the kernel's own buffers take: the bytes of its shared buffers, one filled in
    // a `pipelined` loop counted once per stage (as software-pipeline multi-buffers it),
    // which a staging buffer that lives after them may reuse; and the registers per
    // thread of each fragment (64-bit elements two). `shared_bytes_once`: each shared
    // buffer once (where no pipeline takes a second stage: AMD's register-staged
    // pipelines decide theirs with the staging copies counted).
    struct Footprint {
        int64_t shared_bytes = 0;
        int64_t shared_bytes_once = 0;
        std::vector<std::pair<const ir::BufferNode*, int64_t>> fragment_registers;
    };
    virtual Footprint kernel_footprint() const = 0;
};

}  // namespace tilec::ops
