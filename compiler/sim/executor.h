// The simulator's executor, private to compiler/sim: the state of one run and the
// declarations its source files share. What each part does is in the file that holds it:
//   storage.cpp      values as the GPU's bytes and registers; buffer storage
//   eval.cpp         per-thread expressions, loads, bounds
//   collectives.cpp  warp shuffles through the ISA models (warp_isa.h)
//   shadow.cpp       the per-byte shadow of shared memory: races, stale and clobbered reads
//   statements.cpp   SIMT lock-step statements: loops, ifs, stores, atomics, allocs, barriers
//   counters.cpp     per-warp memory requests turned into sector and bank counters
//   run.cpp          argument binding, the block loop, issues, sim::run
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <condition_variable>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/ir.h"
#include "scalar/scalar.h"
#include "sim/sim.h"
#include "sim/cluster.h"
#include "sim/lds_banks.h"
#include "sim/mbarrier_tma.h"
#include "sim/named_barrier.h"
#include "sim/warp_mma.h"

namespace tilec::sim::detail {

using scalar::Value;

// A fatal error inside the executor; run() turns it into Result::ok = false.
struct Fatal {
    SourceLoc loc;
    std::string message;
};
[[noreturn]] void fatal(SourceLoc loc, std::string message);
// Thrown when Options::max_issues is reached.
struct TooManyIssues {};

constexpr size_t kMaxRank = 16;
constexpr int kSectorBytes = 32;

// ---- values as bytes and registers (storage.cpp) -------------------------------------

// A value of type `t` in the bytes the GPU stores for it (little-endian): floats in
// their format (the value is already of that format, so encoding is exact: the rounding
// happened where the value was computed or converted), integers and bools in their
// width's bytes (i4/u4 one byte each, as the counters count them).
void encode(uint8_t* p, Value v, ir::DataType t);
Value decode(const uint8_t* p, ir::DataType t);
// The bits a register of type `t` holds for `v`, as the backends hold it (gpu_lowering.h:
// narrow floats in f32 registers, integers and bools at their width), zero-extended to
// 64; and back. A shuffle moves these bits.
uint64_t register_bits(Value v, ir::DataType t);
Value from_register_bits(uint64_t u, ir::DataType t);

// The shadow of one byte of shared memory. Per byte, not per element or word: buffers
// of different types share bytes under the shared plan, and two f16 (or i8) elements in
// one 4-byte word written by different threads are not a race.
struct ByteShadow {
    int32_t w_tid = -1, w_epoch = 0;  // the last writer and its barrier epoch (0: never)
    int32_t r_tid = -1, r_epoch = 0;  // the reader in r_epoch (-1: several)
    uint32_t w_site = 0, r_site = 0;  // those accesses (Executor::sites_; 0: none)
    int32_t writer = 0;               // the alloc instance that last wrote it (0: none yet)
    int32_t overwritten = 0;          // the instance `writer` overwrote (0: none)
};

// Shared memory of the running block: one byte array for all shared buffers, each at its
// byte offset (the shared plan's, or the next 128-byte slot), as on the GPU, so buffers
// that share bytes see each other's stores. It grows to the largest extent allocated.
struct SharedArena {
    std::vector<uint8_t> bytes;
    std::vector<ByteShadow> shadow;
    // Per byte: how many issued cp.async copies to it have not completed (landed) yet.
    std::vector<int32_t> pending;
    // Per byte: how many issued wgmma read it and are not yet complete (no wgmma_wait of
    // their warpgroup has covered their group).
    std::vector<int32_t> wgmma_reading;
    // Per byte: how many issued TMA box copies to it have not landed yet (their mbarrier
    // phase has not been seen complete by a wait).
    std::vector<int32_t> tma_pending;
    // Per byte: how many issued TMA stores read it and are not yet waited for
    // (cp.async.bulk.wait_group.read of the issuing thread).
    std::vector<int32_t> bulk_reading;
    // Per byte: the thread whose generic-proxy store (st.shared, a landed cp.async) wrote
    // it last (-1: none, or the async proxy: a TMA), and that thread's fence.proxy.async
    // count then: the async proxy (wgmma) sees the store only after the writer fences.
    std::vector<int32_t> proxy_writer;
    std::vector<uint32_t> proxy_fence;
    // Per byte, in a cluster: the thread that read it last (-1: none) and its plain
    // mbarrier arrivals then (Executor::release_*: a peer's multicast into it must have
    // acquired a later arrival of that thread).
    std::vector<int32_t> reader;
    std::vector<uint32_t> reader_arrivals;
    void ensure(int64_t n);
    // A new block: nothing written, no accesses; the bytes read as NaN until written.
    void reset();
};

// The memory of one buffer. Registers hold `size` elements per thread (thread t's
// element k at t * size + k); shared buffers and tensors one instance.
struct Storage {
    const ir::BufferNode* buffer = nullptr;
    ir::Scope scope = ir::Scope::Global;
    ir::DataType dtype;
    bool writable = true;
    std::vector<int64_t> shape, strides;
    int64_t size = 0;
    double* f = nullptr;
    int64_t* i = nullptr;
    std::vector<double> own_f;
    std::vector<int64_t> own_i;
    std::vector<uint8_t> init;                // register: written since the alloc
    std::vector<int32_t> wgmma_pending;       // register: how many wgmma in flight write it (slots)
    std::vector<uint8_t>* written = nullptr;  // tensors: stored by the kernel
    // Shared: the block's arena, which holds the values (and the shadow) at byte `base`
    // on; `instance` tells this execution of the `alloc` from any other.
    SharedArena* arena = nullptr;
    int32_t instance = 0;
    int64_t base = 0;  // byte address of offset 0 (counters; shared: the arena offset)
    int elem_bytes = 4;

    const std::string& name() const { return buffer->name; }
    // Inline: every load and store passes here.
    Value get(int64_t off) const {
        if (arena) return decode(arena->bytes.data() + base + off * elem_bytes, dtype);
        if (dtype.is_float()) return Value::of_float(f[off]);
        if (i) return Value::of_int(i[off]);
        return scalar::convert(Value::of_float(f[off]), ir::DataType::f64(), dtype);
    }
    void set(int64_t off, Value v) {
        if (arena)
            encode(arena->bytes.data() + base + off * elem_bytes, v, dtype);
        else if (dtype.is_float())
            f[off] = v.f;
        else if (i)
            i[off] = v.i;
        else
            f[off] = scalar::int_to_double(v.i, dtype);
    }
    void allocate_own(int64_t n);
};

// "shared", "register", "global"
const char* kind_word(ir::Scope s);

// One memory access of a statement, kept until the statement is done so the accesses
// of one node can be grouped per warp.
struct MemAccess {
    const void* node;
    SourceLoc loc;
    bool shared;
    bool store;
    int32_t thread;
    int64_t addr;
    int bytes;
    // The hardware's pass over the warp's request this access belongs to: ldmatrix
    // serves one 8x8 matrix (8 rows of 16 bytes) per pass, so its banks count per pass.
    int phase = 0;
    // How the thread's accesses of one node become instructions (counters.cpp):
    // Element, an element load or store that the backend's vectoriser may merge with
    // the next ones into one vector access; Instruction, an access that is one
    // instruction on its own (a machine op's); Continued, more bytes of the thread's
    // previous instruction (a TMA box's elements).
    enum class Form : uint8_t { Instruction, Element, Continued } form = Form::Instruction;
    int elems = 1;   // elements the access stands for (after merging)
    int32_t seq = 0; // the thread's instruction number for this node in the flushed window
};

struct CounterKey {
    uint32_t file, line;
    bool shared, store;
    bool operator<(const CounterKey& o) const {
        return std::tie(file, line, shared, store) < std::tie(o.file, o.line, o.shared, o.store);
    }
};

class Executor {
public:
    Executor(const ir::PrimFunc& f, const Options& opt, Result& res);

    void run(interp::RunArgs& args);

private:
    // ---- bindings (run.cpp, eval.cpp) -----------------------------------------------
    // Per-thread variables: a stack of arrays (one value per thread), reused.
    struct VarSlot {
        const ir::VarNode* var;
        std::vector<Value> vals;
    };
    std::vector<VarSlot> tvars_;
    size_t tdepth_ = 0;
    std::vector<std::pair<const ir::VarNode*, Value>> uniform_;
    std::vector<std::pair<const ir::BufferNode*, Storage*>> buffers_;

    std::vector<Value>& push_tvar(const ir::VarNode* v);
    void pop_tvar() { --tdepth_; }
    Value var_value(const ir::VarNode* v, int t, SourceLoc loc) const;
    Storage& storage(const ir::Buffer& b, SourceLoc loc) const;
    // Binds the tensor parameters to `args` (shapes and strides from the sizes, checked
    // against the arrays); the storages go to `tensors`.
    void bind_tensors(interp::RunArgs& args, std::vector<std::unique_ptr<Storage>>& tensors);

    // ---- issues (run.cpp) -----------------------------------------------------------
    void issue(IssueKind kind, SourceLoc loc, int t, const std::function<std::string()>& message);
    std::map<std::tuple<int, uint32_t, uint32_t, uint32_t>, size_t> issue_index_;

    SourceLoc at(SourceLoc loc) const { return loc.valid() ? loc : stmt_loc_; }

    // ---- expressions (eval.cpp) -----------------------------------------------------
    Value eval(const ir::Expr& e, int t);
    int64_t eval_int(const ir::Expr& e, int t) { return eval(e, t).i; }
    Value eval_binary(const ir::BinaryNode* op, int t);
    Value eval_call(const ir::CallNode* op, int t);
    // The element offset of an access by thread t (registers: within the thread's
    // array), or -1 after reporting it out of bounds.
    int64_t offset_of(const Storage& s, const std::vector<ir::Expr>& indices, SourceLoc loc, int t,
                      bool store);
    Value load(const ir::LoadNode* op, int t);

    // ---- statements (statements.cpp) ------------------------------------------------
    using Active = std::vector<int32_t>;
    void exec(const ir::Stmt& s, const Active& act);
    void exec_store(const ir::StoreNode* op, const Active& act);
    void exec_atomic_rmw(const ir::AtomicRmwNode* op, const Active& act);
    void exec_allocate(const ir::AllocateNode* op, const Active& act);
    void barrier(const ir::BarrierNode* op, const Active& act);

    // ---- warp roles (warp_roles.cpp) --------------------------------------------------
    // A warp-role split (ir.h, SetMaxNReg): the producer and consumer branches run
    // concurrently, each on its own host thread, one at a time: a branch runs until an
    // mbarrier wait it cannot pass, then the other runs; a wait nothing can complete
    // any more (both blocked, no progress) is reported as a hang and passed. Consumers
    // whose branch holds a barrier_arrive (ping-pong warpgroups) run one role per
    // warpgroup, which also switch at a barrier.sync not yet complete.
    void run_roles(const ir::IfNode* op, const Active& producers, const Active& consumers);
    // barrier.sync / barrier.arrive (ir.h NamedBarrier, BarrierArrive) on named_barriers_.
    void exec_named_barrier(const ir::MachineOpNode* op, const Active& act);
    isa::NamedBarriers named_barriers_;
    // The warpgroup role running (-1: none): such roles share the shared-memory
    // instances of the allocations they execute (the k-th execution of an alloc node in
    // one role is the same instance as the k-th in another).
    int peer_role_ = -1;
    std::map<std::pair<const void*, int>, int32_t> peer_instances_;
    std::map<std::pair<int, const void*>, int> peer_allocs_seen_;
    // Inside a role: hands control to the other role until this one may pass its wait;
    // false when the caller must give up (nothing can complete it).
    bool yield_blocked();
    // What each role keeps of its own while the other runs.
    struct RoleState {
        std::vector<VarSlot> tvars;
        size_t tdepth = 0;
        std::vector<std::pair<const ir::BufferNode*, Storage*>> buffers;
        SourceLoc stmt_loc;
        int unroll_depth = 0;
        int64_t shared_top = 0;
        std::unordered_map<const ir::CallNode*, std::vector<Value>> shuffled;
        std::vector<MemAccess> accesses;
        int peer_role = -1;
    };
    void swap_role_state(RoleState& r);
    struct Role;
    Role* current_role_ = nullptr;
    std::mutex role_mutex_;
    std::condition_variable role_cv_;
    int role_running_ = -1;        // the role holding control (-1: the scheduler)
    uint64_t sync_progress_ = 0;   // mbarrier state changes (arrivals, inits, bytes issued or landed)
    // Per mbarrier address: plain arrivals (not expect-tx) happened since the last wait
    // that passed; a wait that passes such a phase orders the arrivers' earlier accesses
    // before the waiter's later ones (release / acquire), which the race shadow models by
    // starting a new epoch.
    std::map<uint32_t, bool> released_;
    // Per mbarrier address: the thread that initialised it and the barrier epoch then.
    // Another thread's use in that same epoch is reported: mbarrier.init is a plain store,
    // visible to the others only through a barrier after it.
    struct MbarrierInit {
        int32_t thread = -1;
        int32_t epoch = 0;
    };
    std::map<uint32_t, MbarrierInit> mbarrier_inits_;
    void check_init_ordered(uint32_t bar, int t, SourceLoc loc, const char* what);

    // ---- thread-block clusters (cluster_exec.cpp) ------------------------------------
    // A kernel with the attribute "cluster" (XxYxZ, more than one CTA) runs a cluster's
    // CTAs together: one Executor per CTA (rank 0 this one, the others made for the
    // cluster and sharing its tensors, issues and counters), each on a host thread of its
    // own, one at a time (a baton, as the warp roles have): a CTA runs until a wait it
    // cannot pass (an mbarrier phase, the cluster barrier; in warp roles, once no role
    // of it can go on), then another. The cluster's models (sim/cluster.h) are shared:
    // the cluster barrier, the remote operations and exits. Multicast bytes and remote
    // arrivals act on the peer Executor's arena and mbarriers directly (the peer is
    // suspended meanwhile).
    struct ClusterRun;
    struct TmaInFlight;
    ClusterRun* cluster_ = nullptr;
    int cta_rank_ = 0;
    Executor* primary_ = nullptr;  // where issues go (null: this one)
    size_t block_slot_ = 0;         // uniform_'s block index values
    // Runs the block `b` (the per-block state reset; the body; the end-of-block checks).
    void run_block(const std::array<int64_t, 3>& b);
    // Runs the cluster whose first block is `first`.
    void run_cluster(const isa::ClusterShape& shape, const std::array<int64_t, 3>& first);
    // Hands control to the other CTAs of the cluster; false when the caller must give up
    // (nothing in the cluster can progress) or there is no cluster.
    bool yield_cluster();
    Executor& peer(int64_t rank);
    int64_t cluster_thread(int t) const { return int64_t{cta_rank_} * threads_ + t; }
    void exec_cluster_barrier(const ir::MachineOpNode* op, const Active& act);
    // The cluster-barrier arrivals of the initialising thread at each mbarrier.init (a
    // peer's remote use must come after a cluster-barrier phase that follows the init).
    std::map<uint32_t, uint64_t> init_cluster_arrivals_;
    // A remote operation by thread t (this CTA) on the mbarrier at `bar` of CTA `rank`:
    // checked (the peer exited; the object not initialised, or its init not ordered
    // before by a cluster barrier); false when it must not go on.
    bool check_remote_mbarrier(int64_t rank, uint32_t bar, int t, SourceLoc loc, const char* what);
    void report_cluster_exit(isa::ClusterExitProblem p, int64_t rank);
    // Releases across CTAs (a cluster's empty ring), tracked by what each thread acquired:
    // thread t's plain mbarrier arrivals (release_arrivals_, local and remote), per
    // mbarrier the latest arrival of each (cluster) thread in the phase under way and in
    // the last completed phase of each parity (release_known_), and per thread the latest
    // arrivals it acquired by passing such phases (release_acquired_). A multicast into a
    // peer's bytes whose last reader has no arrival after the read among those the issuer
    // acquired is reported: the peer's consumers did not release the stage to it (on the
    // GPU it may overwrite bytes they have yet to read, whatever order this run took).
    struct ReleaseKnown {
        std::map<int64_t, uint32_t> pending, done[2];
    };
    std::vector<uint32_t> release_arrivals_;
    std::map<uint32_t, ReleaseKnown> release_known_;
    std::map<int32_t, std::map<int64_t, uint32_t>> release_acquired_;
    // Every cluster thread's arrivals when this CTA's threads last passed a cluster
    // barrier (.aligned: all of them at once), which orders everything before it.
    std::vector<uint32_t> release_floor_;
    // Thread t (of this CTA) arrives on mbarrier `m` at `bar` of CTA `p`, or passes a wait
    // of parity `parity` on this CTA's `bar`.
    void release_arrive(Executor& p, uint32_t bar, const isa::Mbarrier& before, const isa::Mbarrier& after, int t);
    void release_acquire(uint32_t bar, uint32_t parity, int t);
    // Thread t's cluster-barrier arrivals so far (0 outside clusters).
    uint64_t cluster_arrivals(int t) const;
    // MbarrierArrive with a rank operand, by thread t on the object at `bar`.
    void remote_arrive(int64_t rank, uint32_t bar, int t, SourceLoc loc);
    // The ranks a multicast TmaLoad of thread t names (reported and empty when bad).
    std::vector<int> multicast_ranks(const ir::MachineOpNode* op, int t, SourceLoc loc);
    // A multicast's box into peer `rank`: the bytes `f` at the same offsets of its arena,
    // completing on its mbarrier `f.bar`; `dst` the issuer's storage of the tile.
    void multicast_into(int64_t rank, TmaInFlight f, const Storage& dst, int t, SourceLoc loc);
    // A peer's multicast bytes landed in this CTA.
    void cluster_landed(uint32_t tx);

    // ---- target instructions (machine_ops.cpp) ---------------------------------------
    void exec_machine_op(const ir::MachineOpNode* op, const Active& act);
    void exec_ldmatrix(const ir::MachineOpNode* op, const Active& act);
    void exec_mma(const ir::MachineOpNode* op, const Active& act);
    void exec_cp_async(const ir::MachineOpNode* op, const Active& act);
    void exec_vector_copy(const ir::MachineOpNode* op, const Active& act);
    void exec_wgmma(const ir::MachineOpNode* op, const Active& act);
    void exec_mbarrier(const ir::MachineOpNode* op, const Active& act);
    void exec_tma_load(const ir::MachineOpNode* op, const Active& act);
    // A tma_load's or tma_store's tensor and shared tile, checked (one element type; a
    // store's tensor out / inout; the map's innermost dimension the tensor's contiguous
    // one) and their indices (a load's mbarrier's too) prepared for the active threads.
    struct TmaOperands {
        Storage& global;
        Storage& shared;
        const ir::LoadNode* global_load;
        const ir::LoadNode* shared_load;
        std::vector<size_t> dims;  // map dimension i is tensor dimension dims[i]
    };
    TmaOperands tma_operands(const ir::MachineOpNode* op, const Active& act, SourceLoc loc);
    // The tensor map a tma_load / tma_store of `g` (the Load `gl`) names, and thread t's
    // box coordinates, innermost first (map dimension i is tensor dimension dims[i]).
    isa::TensorMapDesc tensor_map(const Storage& g, const ir::LoadNode* gl, const ir::MachineOpNode& op,
                                  const std::vector<size_t>& dims, int t, std::vector<int32_t>& coords);
    // TMA stores: the box is read from shared memory and written to the tensor at the
    // issue; its shared bytes stay "being read" (a write to them is reported) until a
    // bulk_wait_read of the issuing thread covers its bulk group.
    void exec_tma_store(const ir::MachineOpNode* op, const Active& act);
    struct BulkGroups {
        std::vector<uint32_t> open;                    // uncommitted stores' shared bytes
        std::vector<std::vector<uint32_t>> committed;  // per committed group, oldest first
    };
    std::vector<BulkGroups> bulk_groups_;  // per thread
    BulkGroups& bulk_groups_of(int t);
    // The mbarrier objects of the block, by shared byte address (mbarrier_tma.h's model),
    // and the TMA box copies in flight: their bytes, read from global memory at the issue,
    // land when a wait on their barrier finds the transaction pending (the hardware may
    // land them any time before the phase completes; the model does it as late as a
    // waiting thread can tell).
    struct TmaInFlight {
        uint32_t bar = 0;
        uint32_t tx = 0;
        bool remote = false;  // a peer CTA's multicast (its landing counts in ClusterExits)
        std::vector<std::pair<uint32_t, uint8_t>> bytes;  // shared address, value
    };
    std::map<uint32_t, isa::Mbarrier> mbarriers_;
    std::vector<TmaInFlight> tma_in_flight_;
    // The mbarrier object `bar` (a Load of a shared u64 element) names for thread t: its
    // address, or nullopt (reported) outside shared memory.
    std::optional<uint32_t> mbarrier_address(const ir::Expr& bar, int t, SourceLoc loc);
    void land_tma(uint32_t bar);
    // MFMA (wave64) / WMMA (wave32) through wave_mfma.h's models.
    void exec_amd_matrix(const ir::MachineOpNode* op, const Active& act);
    // Each thread's cp.async state (the PTX ISA model) and, per destination address of a
    // copy in flight, what the shadow needs when it lands.
    struct AsyncCopy {
        ir::Buffer buffer;
        int64_t off = 0;
        int64_t elems = 0;
        SourceLoc loc;
        const void* node = nullptr;
    };
    std::vector<std::unique_ptr<isa::CpAsyncThread>> async_;
    std::vector<std::unordered_map<uint32_t, AsyncCopy>> async_copies_;
    // Per warpgroup (thread / 128): the shared bytes its issued, uncompleted wgmma read,
    // the uncommitted ones, then one list per committed group, oldest first.
    struct WgmmaGroups {
        std::vector<uint32_t> open;
        std::vector<std::vector<uint32_t>> committed;
        // The accumulator registers (storage, slot) the same wgmma write.
        std::vector<std::pair<Storage*, int64_t>> open_regs;
        std::vector<std::vector<std::pair<Storage*, int64_t>>> committed_regs;
    };
    bool in_wgmma_ = false;  // evaluating a wgmma's own operands: its accumulators may be in flight
    void check_wgmma_register(const Storage& s, int64_t slot, int64_t off, int t, SourceLoc loc, bool write);
    std::vector<WgmmaGroups> wgmma_groups_;
    WgmmaGroups& wgmma_group_of(int t);
    void complete_wgmma_groups(int t, size_t keep);
    isa::CpAsyncThread& async_thread(int t);
    void report_async(const isa::CpAsyncThread& m, size_t& seen, int t, SourceLoc loc);
    std::vector<size_t> async_seen_;
    // Per thread: fence.proxy.async executed so far in the block; the barrier epoch of its
    // last one, and how many it had executed before that epoch.
    std::vector<uint32_t> fences_;
    std::vector<int32_t> fence_epoch_;
    std::vector<uint32_t> fences_before_epoch_;
    // Whether a generic-proxy store to shared byte `addr` is visible to an async-proxy
    // read (wgmma, a TMA store) issued by threads [lo, hi): its writer fenced since the
    // store, and, unless it is one of those threads, in an earlier barrier epoch (a fence
    // orders the writer's own stores; another thread's issue must come after a barrier
    // the fence precedes).
    bool proxy_visible(uint32_t addr, int lo, int hi) const;
    // A read or write of shared bytes whose cp.async has not completed: reported.
    void check_pending(const Storage& s, int64_t off, int t, SourceLoc loc, bool write);
    // Calls fn(first, end) for each warp's part act[first..end).
    void per_warp(const Active& act, const std::function<void(size_t, size_t)>& fn) const;
    // Writes `v` (of the element's type) to the register element `dst` names, for thread t.
    void set_register(const ir::Expr& dst, int t, Value v, SourceLoc loc);

    // ---- warp shuffles (collectives.cpp) --------------------------------------------
    // The results of the shuffles of the statement being executed, per thread; eval()
    // returns them. begin_statement() forgets the previous statement's.
    std::unordered_map<const ir::CallNode*, std::vector<Value>> shuffled_;
    void begin_statement() { shuffled_.clear(); }
    // Runs every shuffle inside `e` (innermost first) for the threads of `act`.
    void prepare(const ir::Expr& e, const Active& act);
    void shuffle(const ir::CallNode* op, const Active& act);
    // One warp's part: its executing threads act[k..end).
    void shuffle_warp(const ir::CallNode* op, SourceLoc loc, const Active& act, size_t k, size_t end,
                      const std::vector<uint64_t>& bits, const std::vector<int64_t>& lane_arg,
                      std::vector<Value>& out);

    // ---- counters (counters.cpp) ----------------------------------------------------
    void record(const void* node, SourceLoc loc, const Storage& s, bool store, int t, int64_t off) {
        if (s.scope == ir::Scope::Register) return;
        accesses_.push_back({node, at(loc), s.scope == ir::Scope::Shared, store, t,
                             s.base + off * s.elem_bytes, s.elem_bytes, 0, MemAccess::Form::Element});
    }
    // Turns the accesses of the statement just executed into counters.
    void flush();
    isa::LdsCycles shared_cycles(size_t k, size_t end) const;
    bool lds_lane_groups_ = false;  // the target's LDS serves lanes in groups (lds_banks.h)
    // Numbers each thread's accesses of a node as instructions, merging element
    // accesses into vectors (counters.cpp).
    void form_instructions();
    std::vector<MemAccess> accesses_;
    std::map<CounterKey, LineCounters> counters_;

    const ir::PrimFunc& f_;
    const Options& opt_;
    Result& res_;
    int warp_ = 32;
    int threads_ = 0;
    std::array<int64_t, 3> block_{};
    int32_t epoch_ = 1;
    int unroll_depth_ = 0;    // > 0: inside an unrolled loop, whose accesses flush at its end
    int64_t shared_top_ = 0;  // bump allocator of shared addresses

    // ---- shared memory (shadow.cpp) -------------------------------------------------
    SharedArena arena_;
    // Each execution of a shared `alloc` in the block (index 0: none): which buffer,
    // where. A byte's `writer` names one, so a read through another buffer or another
    // execution of the same alloc is told from a read of what this one stored.
    struct Instance {
        const ir::BufferNode* buffer;
        int64_t base;
        int elem_bytes;
    };
    std::vector<Instance> instances_;
    // Source locations of shared accesses, for the messages (index 0: none).
    struct Site {
        SourceLoc loc;
        const ir::BufferNode* buffer;
    };
    std::vector<Site> sites_;
    std::unordered_map<const void*, uint32_t> site_ids_;
    const void* last_site_node_ = nullptr;
    uint32_t last_site_ = 0;
    uint32_t site(const void* node, SourceLoc loc, const ir::BufferNode* b);
    // "'A'[k]" for the arena byte `byte` of instance `inst`.
    std::string element_at(int32_t inst, int64_t byte) const;
    void shared_read(const Storage& s, int64_t off, int t, SourceLoc loc, const void* node);
    void shared_write(const Storage& s, int64_t off, int t, SourceLoc loc, const void* node);
    SourceLoc stmt_loc_;
    Active all_;
};

}  // namespace tilec::sim::detail
