// The GPU simulator: runs thread-level Tile IR (the output of the GPU passes, lower/gpu_passes.h)
// on the CPU with the semantics of a GPU, checks what a GPU would not, and counts the
// memory traffic a GPU would see. It is how the GPU lowering is tested where no GPU
// exists, and `tilec run --target=sim:ARCH`.
//
// Model. Every block of the grid (or those a filter accepts) runs, one after another.
// Within a block all `threads` threads run in SIMT lock step: each statement executes
// for every active thread before the next one starts; an `if` on a per-thread value
// splits the active set (the `then` side runs first, then the `else` side); a loop runs
// while any thread has iterations left, each iteration with the threads that do. A
// statement evaluates its values for all active threads first and then stores them
// (as a warp does), so a thread never sees another's store of the same statement.
// Atomics (AtomicRmwNode, global tensors) apply one after another in thread order,
// each on the value the previous one left, rounded once to the element type.
// Threads are grouped in warps of the target's width (thread t is lane t % W of warp
// t / W): memory counters are per warp request, and warp-collective operations (see
// "Collectives" below) see every active lane of their warp at once. A barrier must be
// reached by every thread of the block at the same time (the same dynamic barrier);
// it then ends a race epoch.
//
// Values, as the GPU computes them (the simulator models the GPU, not the float64
// reference): integers wrap to their width; every float operation rounds its result to
// the register type the generated code computes it in (f64 in double; f32 for f32 and
// for f16 / bf16 / the 8-bit floats, which the GPU code holds in f32 registers), and a
// store or conversion to a narrow type rounds to its format with round-to-nearest-even
// (scalar/float_formats.h); conversions follow the shared
// rules (float -> integer truncates and saturates, NaN -> 0). Transcendentals (exp,
// tanh, ...) are the correctly rounded libm results, not the GPU's approximations.
//
// Checks, each reported with the IR node's SourceLoc, the block and the thread; each
// site (kind, location) is reported once with a count of its occurrences:
// Shared memory is one byte arena per block, as on the GPU: each shared buffer at its
// BufferNode::shared_offset (the shared plan's; buffers whose live ranges do not
// overlap share bytes), an unplanned one (offset -1, IR written by hand) at the next
// 128-byte aligned offset. Values are stored as the bytes of their type (f16, bf16, f8
// in their format, rounded to nearest even when stored, f32/f64 IEEE, integers in their
// width; i4/u4 one byte each); a buffer reading bytes another
// stored sees what the GPU would. The shadow is per byte (two f16 elements of one 4-byte
// word stored by different threads are no race): the last writer and its barrier epoch,
// the reader in the current epoch (or "several"), the source locations of both, and the
// execution of an `alloc` that last stored the byte.
//
// - shared-memory races: a byte written by one thread and read or written by another
//   in the same barrier epoch, through the same buffer or any two buffers on those
//   bytes (the message then names both, with the other access's line);
// - out-of-bounds accesses: global elements outside the tensor's extents (per
//   dimension), shared and register elements outside the buffer's own shape, even
//   where a shared index lands inside the arena (the access is then skipped: a load
//   gives 0);
// - reads of uninitialised register elements (an init bit per element, fresh at each
//   execution of the `alloc`) and of shared bytes not last stored by this execution of
//   the buffer's own `alloc`: never written, or written through another buffer (a
//   stale read through a reused slot: "reads bytes of 'B' last written as 'A'");
// - overlapping shared buffers: a read of bytes this buffer had stored that a store
//   through another buffer then overwrote (a plan that put two live buffers on the
//   same bytes);
// - barriers not reached by all threads of the block (inside a thread-dependent `if`,
//   or a loop with a thread-dependent trip count);
// - integer division by zero and out-of-range shifts; stores into an input tensor;
// - warp shuffles not executed by the whole warp, reading a lane that does not execute
//   them, or with a lane operand outside [0, warp size) (see "Collectives").
//
// Counters (per source line of the access): global-memory 32-byte sectors per warp
// request against the ideal (the distinct bytes requested / 32, rounded up); shared-
// memory wavefronts per warp request (32 banks of 4 bytes: distinct 4-byte words in
// one bank serialise, the same word is a broadcast) against the ideal (the distinct
// words / 32, rounded up); the difference is the bank conflicts. The accesses one node
// makes in all iterations of an unrolled register loop (`for r in unroll(R)`) count as
// one request per warp, as the backend emits them as vector accesses (ld.v4 and the
// like); every other execution of an access is its own request. Tensors start at
// 256-byte aligned addresses, shared buffers at their arena offsets.
//
// Collectives: the warp shuffles (ir::CallOp::ShflXor ...; ldmatrix and mma would
// take the same path). Lock step makes them natural: every active lane of a warp is at
// the same statement, so a statement first evaluates the operands of its shuffles for
// all active threads (innermost shuffle first), groups them by warp (lane = thread %
// warp size) and runs the instruction the backend emits, modelled from the vendor's ISA
// document (warp_isa.h): shfl.sync on NVIDIA (c = 0x1f, or 0 for up; membermask
// 0xffffffff; 64-bit values as two 32-bit halves, narrower ones extended as the
// backends do), ds_bpermute on AMD (the byte address of the source lane the IR
// defines). The per-thread evaluation then reads each lane's result. Reported as
// shuffle issues: what the ISA leaves undefined (a lane named by the membermask that
// does not execute the shuffle, a source lane that does not), and what the IR's
// contract forbids though the ISA defines it (ir.h, CallOp: a lane operand outside
// [0, W); on AMD, a warp not executing the shuffle whole, a disabled source lane, for
// which ds_bpermute gives 0).
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "interp/interp.h"
#include "ir/ir.h"
#include "support/source.h"
#include "target/target.h"

namespace tilec::sim {

struct Options {
    // The warp width comes from here (32 when null).
    const target::GpuTarget* target = nullptr;
    // When set, only the blocks it accepts run.
    std::function<bool(int64_t x, int64_t y, int64_t z)> block_filter;
    // When not empty, only these blocks run, in this order (each inside the grid), at a
    // cost that does not grow with the grid as asking block_filter about every block does.
    std::vector<std::array<int64_t, 3>> blocks;
    bool check_races = true;
    bool check_uninitialized = true;
    // Stop after this many issues in total (occurrences, not sites); 0: never.
    int64_t max_issues = 100000;
};

enum class IssueKind : uint8_t {
    Race,
    OutOfBounds,
    Uninitialized,
    BarrierDivergence,
    Arithmetic,  // integer division by zero, shift out of range
    InputWrite,  // a store into an `in` tensor
    // Warp shuffles outside their contract (ir.h, CallOp) or undefined by the ISA:
    ShuffleDivergence,  // not executed by the whole warp
    ShuffleSource,      // reads a lane that does not execute it (or does not exist)
    ShuffleOperand,     // a lane operand outside [0, warp size)
    // A shared buffer read after a store through another buffer overwrote bytes it had
    // stored: the two share arena bytes while both are live (a wrong shared plan).
    SharedOverlap,
    // Target instructions (ir.h, MachineOpNode) outside what the PTX ISA defines:
    WarpCollective,  // ldmatrix / mma not executed by every lane of the warp
    MatrixAddress,   // an ldmatrix row address misaligned or outside shared memory
    AsyncCopy,       // cp.async: a read or write of its destination before the wait that completes it, a bad size
    AsyncRead,       // wgmma / TMA store: a write of shared bytes it reads before the wait that completes it
    Mbarrier,        // an mbarrier used outside its rules, or a wait on a phase nothing can complete (a hang)
    Tma,             // a TMA copy the tensor map or destination rules refuse
    ProxyFence,      // wgmma / TMA store reads shared bytes a thread stored (generic proxy) with no fence.proxy.async since
    Misaligned,      // a vector access (vector_copy) whose address is not aligned to its size
    Cluster,         // thread-block clusters: barrier.cluster misuse, remote operations unordered or into an exited CTA
};
const char* issue_kind_name(IssueKind k);  // "race", "out-of-bounds", ...

// One site that went wrong: the first occurrence's details and how often it happened.
struct Issue {
    IssueKind kind;
    SourceLoc loc;
    std::string message;  // the first occurrence, with the element and the threads
    std::array<int64_t, 3> block{};
    int64_t thread = 0;
    int64_t count = 1;
    // "LINE:COL: MESSAGE (block x, y, z, thread t)[, N times]"; with `sources`, the
    // file's path first.
    std::string str(const SourceManager* sources = nullptr) const;
};

// Memory traffic of the accesses on one source line, of one kind.
struct LineCounters {
    SourceLoc loc;             // of the first access seen on that line
    bool shared = false;       // shared memory (else global)
    bool store = false;        // stores (else loads)
    int64_t requests = 0;      // warp requests (one per warp per dynamic execution)
    int64_t lanes = 0;         // element accesses over all requests (lanes x vector width)
    int64_t transactions = 0;  // global: 32-byte sectors; shared: wavefronts
    int64_t ideal = 0;         // the same if the request were perfectly coalesced / conflict-free
};

struct Result {
    // A fatal error: the run stopped (bad arguments, IR the simulator cannot run).
    bool ok = true;
    std::string message;
    SourceLoc loc;
    // What the checks found (the run went on after each).
    std::vector<Issue> issues;
    int64_t total_issues = 0;            // occurrences
    std::vector<LineCounters> counters;  // sorted by file, line, kind
    int64_t blocks_run = 0;
    int warp_size = 32;
    // Per tensor argument (in order), one byte per element of its array: 1 where the
    // kernel stored (so a caller can tell unwritten outputs).
    std::vector<std::vector<uint8_t>> written;

    bool clean() const { return ok && issues.empty(); }
};

// Runs the thread-level function `f` (it must carry the attribute level=thread) on
// `args`, laid out as for the reference interpreter (interp::RunArgs: tensors as
// arrays, narrow floats rounded in place when bound). Tensors are updated in place.
Result run(const ir::PrimFunc& f, interp::RunArgs& args, const Options& opt = {});

// `f` without its barriers: for tests that the race check fires (tilec run
// --sim-drop-barriers).
ir::PrimFunc drop_barriers(const ir::PrimFunc& f);

// `f` without one synchronisation statement: the `index`-th (from 0, in the order the
// IR prints) barrier() or cp_async_wait; nullopt if `f` has no such one. For tests that
// the simulator catches a dropped barrier (a race) or wait (a read of bytes in flight):
// tilec run --sim-drop-sync=barrier:N / wait:N.
enum class SyncKind { Barrier, AsyncWait, WgmmaWait, MbarrierWait, ProxyFence, BulkWaitRead, NamedBarrier, BarrierArrive, ClusterWait,
                      RemoteArrive };
std::optional<ir::PrimFunc> drop_sync(const ir::PrimFunc& f, SyncKind kind, int64_t index);

// The counters as a table, one line per source line and kind (--profile).
std::string format_counters(const Result& r, const SourceManager* sources = nullptr);

}  // namespace tilec::sim
