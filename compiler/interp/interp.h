// The reference interpreter: a direct, unoptimised evaluation of tile-level Tile IR (one
// PrimFunc) in float64, the oracle that the CPU and GPU backends are compared against.
//
// Model. Every block of the grid runs, one after another (z, then y, then x innermost),
// and each block executes the body once as ONE logical thread: shared, fragment and
// local buffers are per-block arrays, `parallel` loops run serially in order, and
// `pipelined` loops are plain loops. Barriers are no-ops.
//
// Numbers. Integer expressions are computed in 64 bits and wrapped to their type's
// width (floor semantics for `/` and `%`; u64 compares and divides unsigned). Float
// expressions are computed in double whatever their type; a value is rounded to its
// type (round to nearest even, see float_formats.h) only where it is stored: a store
// into a buffer or tensor element, every element a tile op writes, a Cast, a float
// literal, and a float scalar argument. Float -> integer conversion truncates toward
// zero and saturates at the type's range (NaN -> 0); integer -> integer wraps; to bool
// is `!= 0`. Float min/max propagate NaN. `&&`, `||` and `?:` evaluate only what they
// need (so `c < N ? X[r, c] : 0` never reads X out of bounds).
//
// Tile ops follow docs/language.md section 11: `copy` squeezes extent-1 dimensions on
// both sides, reads `pad` for source elements outside a global tensor, drops writes
// outside a global destination, and converts on store; `gemm`, `reduce_*`, `cumsum` and
// `atomic_add` accumulate in double (in int64 for integer operands) and round once, on
// the store into their destination's type.
//
// Checks, reported as an error with the IR node's SourceLoc and the block: element
// accesses and tile-op regions outside a shared/fragment/local buffer, element
// accesses outside a global tensor, reads of shared/fragment/local elements never
// written (an init bit per element; fresh at each execution of its `alloc`), integer
// division or modulo by zero, shifts by a negative amount or by the width or more,
// failed `assert` (with its message), writes to an input tensor, bad arguments (counts,
// negative sizes, tensors that do not match their declared shape or are too small),
// and grids of more than 2^31 blocks.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "support/source.h"

namespace tilec::interp {

// One global tensor argument. Element (i0, i1, ...) lives at offset sum_k ik * strides[k]
// of the flat array (strides in elements), i.e. `data` is the tensor's memory with one
// entry per element (i4/u4 elements too: no packing).
struct TensorArg {
    // Element values. A tensor of a float type narrower than f64 holds values of that
    // type: run() rounds `data` to it in place when binding. Integer and bool tensors
    // may use `data` too (values are truncated to the element type on load); `ints`
    // takes precedence when non-empty and holds 64-bit integers exactly.
    std::vector<double> data;
    std::vector<int64_t> ints;
    // When non-empty, checked against the declared shape and strides (evaluated from
    // the sizes); when empty, those are used. The declared strides are row-major
    // unless the parameter has `strides(...)`.
    std::vector<int64_t> shape;
    std::vector<int64_t> strides;
};

// The arguments in the PrimFunc's parameter order, split by kind: tensors, sizes (of
// which stride names are part), scalar parameters (integer scalars must hold integral
// values; float scalars are rounded to their type).
struct RunArgs {
    std::vector<TensorArg> tensors;
    std::vector<int64_t> sizes;
    std::vector<double> scalars;
};

struct RunOptions {
    // Where `print` writes (one line per executed print); null: std::cout.
    std::ostream* print_stream = nullptr;
    // Report reads of shared/fragment/local elements that were never written.
    bool check_uninitialized = true;
    // When set, only the blocks it accepts run (e.g. the edges of a large grid).
    std::function<bool(int64_t x, int64_t y, int64_t z)> block_filter;
    // When not empty, only these blocks run, in this order (each inside the grid; then
    // block_filter is asked about these alone, and the grid may exceed 2^31 blocks).
    std::vector<std::array<int64_t, 3>> blocks;
};

struct Result {
    bool ok = true;
    std::string message;             // what went wrong (empty when ok)
    SourceLoc loc;                   // the IR node that failed (line 0 when unknown)
    bool in_block = false;           // the error happened while running a block:
    std::array<int64_t, 3> block{};  // this one (x, y, z)

    explicit operator bool() const { return ok; }
    // "LINE:COL: MESSAGE (block x, y, z)"; "ok" when ok.
    std::string str() const;
    // The same with the file's path first: "FILE:LINE:COL: ...".
    std::string str(const SourceManager& sources) const;
};

// Runs `f` over its whole grid. Tensor contents are read from and written back to
// `args.tensors` (an `out` tensor's elements that the kernel does not write keep their
// values). On an error the tensors hold whatever was written before it.
Result run(const ir::PrimFunc& f, RunArgs& args, const RunOptions& opt = {});

// The blocks a run visits (the interpreter's and the simulator's): `blocks` in order
// when not empty, else every block of a grid of `dims`, x fastest. False, having run
// nothing, when a listed block is outside the grid.
bool for_each_block(const std::array<int64_t, 3>& dims, const std::vector<std::array<int64_t, 3>>& blocks,
                    const std::function<void(int64_t x, int64_t y, int64_t z)>& run_block);

}  // namespace tilec::interp
