// The simulator's executor: argument binding, the block loop, SIMT lock-step statement
// execution over an active set of threads, per-thread expression evaluation with GPU
// rounding, warp shuffles through the ISA models (warp_isa.h), shadow state for the
// checks, and the per-warp memory counters.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <unordered_map>

#include "interp/float_formats.h"
#include "interp/machine.h"
#include "ir/printer.h"
#include "sim/sim.h"
#include "sim/warp_isa.h"

namespace tilec::sim {

namespace {

using namespace ir;
using interp::detail::Value;

// A fatal error inside the executor; run() turns it into Result::ok = false.
struct Fatal {
    SourceLoc loc;
    std::string message;
};
[[noreturn]] void fatal(SourceLoc loc, std::string message) {
    throw Fatal{loc, std::move(message)};
}
// Thrown when Options::max_issues is reached.
struct TooManyIssues {};

constexpr size_t kMaxRank = 16;
constexpr int kBanks = 32;
constexpr int kBankBytes = 4;
constexpr int kSectorBytes = 32;

bool is_u64(DataType t) {
    return t.is_uint() && t.bits == 64;
}

// A float result rounded to its type, as the GPU's instruction for that type gives it.
double round_to(double v, DataType t) {
    if (t.kind == TypeKind::Float && t.bits == 64) return v;
    if (t.kind == TypeKind::Float && t.bits == 32 && std::fabs(v) <= static_cast<double>(FLT_MAX))
        return static_cast<double>(static_cast<float>(v));
    return interp::round_to_float_type(v, t);
}

int64_t wrap(uint64_t v, DataType t) {
    return normalize_int(static_cast<int64_t>(v), t);
}
bool int_less(int64_t a, int64_t b, DataType t) {
    return is_u64(t) ? static_cast<uint64_t>(a) < static_cast<uint64_t>(b) : a < b;
}
double nan_min(double a, double b) {
    return (std::isnan(a) || std::isnan(b)) ? std::nan("") : (b < a ? b : a);
}
double nan_max(double a, double b) {
    return (std::isnan(a) || std::isnan(b)) ? std::nan("") : (b > a ? b : a);
}

std::string idx_str(const std::vector<int64_t>& v) {
    std::string s = "[";
    for (size_t k = 0; k < v.size(); ++k) s += (k ? ", " : "") + std::to_string(v[k]);
    return s + "]";
}

// A value of type `t` in the bytes the GPU stores for it (little-endian): floats in
// their format (the value is already of that format, so encoding is exact: the rounding
// happened where the value was computed or converted), integers and bools in their
// width's bytes (i4/u4 one byte each, as the counters count them).
void encode(uint8_t* p, Value v, DataType t) {
    uint64_t u = 0;
    switch (t.kind) {
    case TypeKind::Float:
        if (t.bits == 64) {
            std::memcpy(p, &v.f, 8);
            return;
        }
        if (t.bits == 32) {
            float x = static_cast<float>(v.f);
            std::memcpy(p, &x, 4);
            return;
        }
        u = interp::f16_bits(v.f);
        break;
    case TypeKind::BFloat: u = interp::bf16_bits(v.f); break;
    case TypeKind::Float8E4M3: u = interp::f8e4m3_bits(v.f); break;
    case TypeKind::Float8E5M2: u = interp::f8e5m2_bits(v.f); break;
    default: u = static_cast<uint64_t>(v.i); break;
    }
    int n = std::max(1, (t.bits + 7) / 8);
    for (int b = 0; b < n; ++b) p[b] = static_cast<uint8_t>(u >> (8 * b));
}
Value decode(const uint8_t* p, DataType t) {
    if (t.kind == TypeKind::Float && t.bits >= 32) {
        if (t.bits == 64) {
            double d;
            std::memcpy(&d, p, 8);
            return Value::of_float(d);
        }
        float x;
        std::memcpy(&x, p, 4);
        return Value::of_float(static_cast<double>(x));
    }
    int n = std::max(1, (t.bits + 7) / 8);
    uint64_t u = 0;
    for (int b = 0; b < n; ++b) u |= static_cast<uint64_t>(p[b]) << (8 * b);
    switch (t.kind) {
    case TypeKind::Float: {
        // f16 loads are hot (gemm and attention tiles): every value's decoding once.
        static const std::vector<float> f16_table = [] {
            std::vector<float> v(65536);
            for (uint32_t b = 0; b < 65536; ++b) v[b] = static_cast<float>(interp::f16_value(static_cast<uint16_t>(b)));
            return v;
        }();
        return Value::of_float(static_cast<double>(f16_table[static_cast<size_t>(u & 0xffff)]));
    }
    case TypeKind::BFloat: {
        // bf16 is f32's upper half.
        uint32_t w = static_cast<uint32_t>(u & 0xffff) << 16;
        float x;
        std::memcpy(&x, &w, 4);
        return Value::of_float(static_cast<double>(x));
    }
    case TypeKind::Float8E4M3: return Value::of_float(interp::f8e4m3_value(static_cast<uint8_t>(u)));
    case TypeKind::Float8E5M2: return Value::of_float(interp::f8e5m2_value(static_cast<uint8_t>(u)));
    default: return Value::of_int(normalize_int(static_cast<int64_t>(u), t));
    }
}

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
    void ensure(int64_t n) {
        if (n <= static_cast<int64_t>(bytes.size())) return;
        bytes.resize(static_cast<size_t>(n), 0xff);  // all-ones: NaN in every float format
        shadow.resize(static_cast<size_t>(n));
    }
    // A new block: nothing written, no accesses; the bytes read as NaN until written.
    void reset() {
        std::fill(bytes.begin(), bytes.end(), uint8_t{0xff});
        std::fill(shadow.begin(), shadow.end(), ByteShadow{});
    }
};

// The memory of one buffer. Registers hold `size` elements per thread (thread t's
// element k at t * size + k); shared buffers and tensors one instance.
struct Storage {
    const BufferNode* buffer = nullptr;
    Scope scope = Scope::Global;
    DataType dtype;
    bool writable = true;
    std::vector<int64_t> shape, strides;
    int64_t size = 0;
    double* f = nullptr;
    int64_t* i = nullptr;
    std::vector<double> own_f;
    std::vector<int64_t> own_i;
    std::vector<uint8_t> init;                // register: written since the alloc
    std::vector<uint8_t>* written = nullptr;  // tensors: stored by the kernel
    // Shared: the block's arena, which holds the values (and the shadow) at byte `base`
    // on; `instance` tells this execution of the `alloc` from any other.
    SharedArena* arena = nullptr;
    int32_t instance = 0;
    int64_t base = 0;  // byte address of offset 0 (counters; shared: the arena offset)
    int elem_bytes = 4;

    const std::string& name() const { return buffer->name; }
    Value get(int64_t off) const {
        if (arena) return decode(arena->bytes.data() + base + off * elem_bytes, dtype);
        if (dtype.is_float()) return Value::of_float(f[off]);
        if (i) return Value::of_int(i[off]);
        return interp::detail::convert(Value::of_float(f[off]), DataType::f64(), dtype);
    }
    void set(int64_t off, Value v) {
        if (arena)
            encode(arena->bytes.data() + base + off * elem_bytes, v, dtype);
        else if (dtype.is_float())
            f[off] = v.f;
        else if (i)
            i[off] = v.i;
        else
            f[off] =
                is_u64(dtype) ? static_cast<double>(static_cast<uint64_t>(v.i)) : static_cast<double>(v.i);
    }
    void allocate_own(int64_t n) {
        if (dtype.is_float()) {
            own_f.assign(static_cast<size_t>(n), std::nan(""));
            f = own_f.data();
        } else {
            own_i.assign(static_cast<size_t>(n), 0);
            i = own_i.data();
        }
    }
};

const char* kind_word(Scope s) {
    return s == Scope::Shared ? "shared" : s == Scope::Register ? "register" : "global";
}

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
};

struct CounterKey {
    uint32_t file, line;
    bool shared, store;
    bool operator<(const CounterKey& o) const {
        return std::tie(file, line, shared, store) < std::tie(o.file, o.line, o.shared, o.store);
    }
};

// The bits a register of type `t` holds for `v`, as the backends hold it (gpu_lowering.h:
// narrow floats in f32 registers, integers and bools at their width), zero-extended to
// 64; and back. A shuffle moves these bits.
uint64_t register_bits(Value v, DataType t) {
    if (t.is_float()) {
        if (t.bits == 64) {
            uint64_t u;
            std::memcpy(&u, &v.f, sizeof u);
            return u;
        }
        float f = static_cast<float>(v.f);  // exact: the value is of its (<= 32-bit) type
        uint32_t u;
        std::memcpy(&u, &f, sizeof u);
        return u;
    }
    int bits = t.is_bool() ? 1 : t.bits;
    uint64_t u = static_cast<uint64_t>(v.i);
    return bits >= 64 ? u : u & ((uint64_t{1} << bits) - 1);
}
Value from_register_bits(uint64_t u, DataType t) {
    if (t.is_float()) {
        if (t.bits == 64) {
            double d;
            std::memcpy(&d, &u, sizeof d);
            return Value::of_float(d);
        }
        uint32_t w = static_cast<uint32_t>(u);
        float f;
        std::memcpy(&f, &w, sizeof f);
        return Value::of_float(static_cast<double>(f));
    }
    return Value::of_int(normalize_int(static_cast<int64_t>(u), t));
}

class Executor {
public:
    Executor(const PrimFunc& f, const Options& opt, Result& res) : f_(f), opt_(opt), res_(res) {
        warp_ = opt.target ? opt.target->warp_size : 32;
        res_.warp_size = warp_;
    }

    void run(interp::RunArgs& args);

private:
    // ---- bindings ------------------------------------------------------------------
    // Per-thread variables: a stack of arrays (one value per thread), reused.
    struct VarSlot {
        const VarNode* var;
        std::vector<Value> vals;
    };
    std::vector<VarSlot> tvars_;
    size_t tdepth_ = 0;
    std::vector<std::pair<const VarNode*, Value>> uniform_;
    std::vector<std::pair<const BufferNode*, Storage*>> buffers_;

    std::vector<Value>& push_tvar(const VarNode* v) {
        if (tdepth_ == tvars_.size())
            tvars_.push_back({v, std::vector<Value>(static_cast<size_t>(threads_))});
        tvars_[tdepth_].var = v;
        return tvars_[tdepth_++].vals;
    }
    void pop_tvar() { --tdepth_; }

    Value var_value(const VarNode* v, int t, SourceLoc loc) const {
        for (size_t k = tdepth_; k-- > 0;)
            if (tvars_[k].var == v) return tvars_[k].vals[static_cast<size_t>(t)];
        if (v->var_kind == VarKind::ThreadIdx) return Value::of_int(v->dim == 0 ? t : 0);
        for (size_t k = uniform_.size(); k-- > 0;)
            if (uniform_[k].first == v) return uniform_[k].second;
        fatal(loc.valid() ? loc : v->loc, "variable '" + v->name + "' has no value here");
    }
    Storage& storage(const Buffer& b, SourceLoc loc) const {
        for (size_t k = buffers_.size(); k-- > 0;)
            if (buffers_[k].first == b.get()) return *buffers_[k].second;
        fatal(loc, "buffer '" + b->name + "' is not allocated here");
    }

    // ---- issues --------------------------------------------------------------------
    void issue(IssueKind kind, SourceLoc loc, int t, const std::function<std::string()>& message) {
        ++res_.total_issues;
        auto key = std::make_tuple(static_cast<int>(kind), loc.file, loc.line, loc.col);
        auto it = issue_index_.find(key);
        if (it != issue_index_.end()) {
            ++res_.issues[it->second].count;
        } else {
            Issue is;
            is.kind = kind;
            is.loc = loc;
            is.message = message();
            is.block = block_;
            is.thread = t;
            issue_index_.emplace(key, res_.issues.size());
            res_.issues.push_back(std::move(is));
        }
        if (opt_.max_issues > 0 && res_.total_issues >= opt_.max_issues) throw TooManyIssues{};
    }
    std::map<std::tuple<int, uint32_t, uint32_t, uint32_t>, size_t> issue_index_;

    SourceLoc at(SourceLoc loc) const { return loc.valid() ? loc : stmt_loc_; }

    // ---- expressions ---------------------------------------------------------------
    Value eval(const Expr& e, int t);
    int64_t eval_int(const Expr& e, int t) { return eval(e, t).i; }
    Value eval_binary(const BinaryNode* op, int t);
    Value eval_call(const CallNode* op, int t);
    // The element offset of an access by thread t (registers: within the thread's
    // array), or -1 after reporting it out of bounds.
    int64_t offset_of(const Storage& s, const std::vector<Expr>& indices, SourceLoc loc, int t, bool store);
    Value load(const LoadNode* op, int t);

    // ---- statements ----------------------------------------------------------------
    using Active = std::vector<int32_t>;

    // ---- warp shuffles -------------------------------------------------------------
    // The results of the shuffles of the statement being executed, per thread; eval()
    // returns them. begin_statement() forgets the previous statement's.
    std::unordered_map<const CallNode*, std::vector<Value>> shuffled_;
    void begin_statement() { shuffled_.clear(); }
    // Runs every shuffle inside `e` (innermost first) for the threads of `act`.
    void prepare(const Expr& e, const Active& act);
    void shuffle(const CallNode* op, const Active& act);
    // One warp's part: its executing threads act[k..end).
    void shuffle_warp(const CallNode* op, SourceLoc loc, const Active& act, size_t k, size_t end,
                      const std::vector<uint64_t>& bits, const std::vector<int64_t>& lane_arg,
                      std::vector<Value>& out);

    void exec(const Stmt& s, const Active& act);
    void exec_store(const StoreNode* op, const Active& act);
    void exec_atomic_rmw(const AtomicRmwNode* op, const Active& act);
    void exec_allocate(const AllocateNode* op, const Active& act);
    void barrier(const BarrierNode* op, const Active& act);

    // ---- counters ------------------------------------------------------------------
    void record(const void* node, SourceLoc loc, const Storage& s, bool store, int t, int64_t off) {
        if (s.scope == Scope::Register) return;
        accesses_.push_back(
            {node, at(loc), s.scope == Scope::Shared, store, t, s.base + off * s.elem_bytes, s.elem_bytes});
    }
    // Turns the accesses of the statement just executed into counters.
    void flush();
    std::vector<MemAccess> accesses_;
    std::map<CounterKey, LineCounters> counters_;

    const PrimFunc& f_;
    const Options& opt_;
    Result& res_;
    int warp_ = 32;
    int threads_ = 0;
    std::array<int64_t, 3> block_{};
    int32_t epoch_ = 1;
    int unroll_depth_ = 0;    // > 0: inside an unrolled loop, whose accesses flush at its end
    int64_t shared_top_ = 0;  // bump allocator of shared addresses

    // ---- shared memory -------------------------------------------------------------
    SharedArena arena_;
    // Each execution of a shared `alloc` in the block (index 0: none): which buffer,
    // where. A byte's `writer` names one, so a read through another buffer or another
    // execution of the same alloc is told from a read of what this one stored.
    struct Instance {
        const BufferNode* buffer;
        int64_t base;
        int elem_bytes;
    };
    std::vector<Instance> instances_;
    // Source locations of shared accesses, for the messages (index 0: none).
    struct Site {
        SourceLoc loc;
        const BufferNode* buffer;
    };
    std::vector<Site> sites_;
    std::unordered_map<const void*, uint32_t> site_ids_;
    const void* last_site_node_ = nullptr;
    uint32_t last_site_ = 0;
    uint32_t site(const void* node, SourceLoc loc, const BufferNode* b) {
        if (node == last_site_node_) return last_site_;
        auto [it, fresh] = site_ids_.try_emplace(node, static_cast<uint32_t>(sites_.size()));
        if (fresh) sites_.push_back({loc, b});
        last_site_node_ = node;
        return last_site_ = it->second;
    }
    // "'A'[k]" for the arena byte `byte` of instance `inst`.
    std::string element_at(int32_t inst, int64_t byte) const {
        const Instance& in = instances_[static_cast<size_t>(inst)];
        return "'" + in.buffer->name + "'[" + std::to_string((byte - in.base) / in.elem_bytes) + "]";
    }
    static std::string line_col(SourceLoc l) { return std::to_string(l.line) + ":" + std::to_string(l.col); }
    void shared_read(const Storage& s, int64_t off, int t, SourceLoc loc, const void* node);
    void shared_write(const Storage& s, int64_t off, int t, SourceLoc loc, const void* node);
    SourceLoc stmt_loc_;
    Active all_;
};

// ---------------------------------------------------------------------------------
// Expressions

Value Executor::eval(const Expr& e, int t) {
    switch (e->kind) {
    case ExprKind::IntImm: return Value::of_int(static_cast<const IntImmNode*>(e.get())->value);
    case ExprKind::FloatImm:
        return Value::of_float(round_to(static_cast<const FloatImmNode*>(e.get())->value, e->type));
    case ExprKind::StringImm: fatal(at(e->loc), "a string is not a value");
    case ExprKind::Var: return var_value(static_cast<const VarNode*>(e.get()), t, e->loc);
    case ExprKind::Binary: return eval_binary(static_cast<const BinaryNode*>(e.get()), t);
    case ExprKind::Unary: {
        auto* op = static_cast<const UnaryNode*>(e.get());
        DataType ty = op->a->type;
        Value a = eval(op->a, t);
        switch (op->op) {
        case UnaryOp::Neg:
            if (ty.is_float()) return Value::of_float(-a.f);
            return Value::of_int(wrap(0 - static_cast<uint64_t>(a.i), ty));
        case UnaryOp::Not: return Value::of_int(a.i == 0 ? 1 : 0);
        case UnaryOp::BitNot: return Value::of_int(wrap(~static_cast<uint64_t>(a.i), ty));
        }
        break;
    }
    case ExprKind::Select: {
        auto* op = static_cast<const SelectNode*>(e.get());
        return eval(op->cond, t).i != 0 ? eval(op->t, t) : eval(op->f, t);
    }
    case ExprKind::Cast: {
        auto* op = static_cast<const CastNode*>(e.get());
        return interp::detail::convert(eval(op->value, t), op->value->type, op->type);
    }
    case ExprKind::Call: {
        auto* op = static_cast<const CallNode*>(e.get());
        if (!is_warp_shuffle(op->op)) return eval_call(op, t);
        auto it = shuffled_.find(op);
        if (it == shuffled_.end())
            fatal(at(op->loc), std::string("internal error in the simulator: ") + call_op_name(op->op) +
                                   " evaluated outside its statement's warp step");
        return it->second[static_cast<size_t>(t)];
    }
    case ExprKind::Load: return load(static_cast<const LoadNode*>(e.get()), t);
    }
    fatal(at(e->loc), "the simulator cannot evaluate this expression");
}

// ---------------------------------------------------------------------------------
// Warp shuffles

void Executor::prepare(const Expr& e, const Active& act) {
    if (!e) return;
    switch (e->kind) {
    case ExprKind::Binary: {
        auto* op = static_cast<const BinaryNode*>(e.get());
        prepare(op->a, act);
        prepare(op->b, act);
        return;
    }
    case ExprKind::Unary: prepare(static_cast<const UnaryNode*>(e.get())->a, act); return;
    case ExprKind::Select: {
        auto* op = static_cast<const SelectNode*>(e.get());
        prepare(op->cond, act);
        prepare(op->t, act);
        prepare(op->f, act);
        return;
    }
    case ExprKind::Cast: prepare(static_cast<const CastNode*>(e.get())->value, act); return;
    case ExprKind::Load:
        for (const auto& i : static_cast<const LoadNode*>(e.get())->indices) prepare(i, act);
        return;
    case ExprKind::Call: {
        auto* op = static_cast<const CallNode*>(e.get());
        for (const auto& a : op->args) prepare(a, act);
        if (is_warp_shuffle(op->op) && !shuffled_.count(op)) shuffle(op, act);
        return;
    }
    default: return;
    }
}

void Executor::shuffle(const CallNode* op, const Active& act) {
    SourceLoc loc = at(op->loc);
    if (op->args.size() != 2) fatal(loc, std::string(call_op_name(op->op)) + " takes 2 arguments");
    DataType t = op->args[0]->type;
    if (t.bits > 64) fatal(loc, std::string(call_op_name(op->op)) + " of " + t.str());
    // Every executing thread's operands first, as the warp's lanes supply them at once.
    std::vector<uint64_t> bits(static_cast<size_t>(threads_));
    std::vector<int64_t> lane_arg(static_cast<size_t>(threads_));
    for (int32_t th : act) {
        bits[th] = register_bits(eval(op->args[0], th), t);
        lane_arg[th] = eval_int(op->args[1], th);
    }
    std::vector<Value> out(static_cast<size_t>(threads_));
    for (size_t k = 0; k < act.size();) {
        size_t end = k;
        while (end < act.size() && act[end] / warp_ == act[k] / warp_) ++end;
        shuffle_warp(op, loc, act, k, end, bits, lane_arg, out);
        k = end;
    }
    shuffled_[op] = std::move(out);
}

void Executor::shuffle_warp(const CallNode* op, SourceLoc loc, const Active& act, size_t k, size_t end,
                            const std::vector<uint64_t>& bits, const std::vector<int64_t>& lane_arg,
                            std::vector<Value>& out) {
    const std::string name = call_op_name(op->op);
    const DataType t = op->args[0]->type;
    const int first = act[k] / warp_ * warp_;
    const int lanes_here = std::min(warp_, threads_ - first);  // the warp's lanes that exist
    std::vector<uint8_t> active(static_cast<size_t>(warp_), 0);
    for (size_t a = k; a < end; ++a) active[static_cast<size_t>(act[a] - first)] = 1;
    const int halves = t.bits > 32 ? 2 : 1;
    std::vector<uint64_t> result(static_cast<size_t>(warp_), 0);
    auto thread_of = [&](int lane) { return first + lane; };

    // The IR's contract (ir.h): the lane operand lies in [0, W). PTX reads only its low 5
    // bits and ds_bpermute wraps the address: either would quietly read another lane.
    for (size_t a = k; a < end; ++a) {
        int64_t m = lane_arg[act[a]];
        if (m < 0 || m >= warp_)
            issue(IssueKind::ShuffleOperand, loc, act[a], [&] {
                return "lane operand " + std::to_string(m) + " of " + name + " is outside [0, " +
                       std::to_string(warp_) + ") (the warp's lanes)";
            });
    }

    if (!opt_.target || opt_.target->vendor == target::Vendor::Nvidia) {
        // shfl.sync.MODE.b32 d, a, b, c, 0xffffffff with c = 0x1f (0 for up): the whole
        // 32-lane warp as one segment, as the NVPTX backend emits it.
        isa::ShflMode mode = op->op == CallOp::ShflXor    ? isa::ShflMode::Bfly
                             : op->op == CallOp::ShflUp   ? isa::ShflMode::Up
                             : op->op == CallOp::ShflDown ? isa::ShflMode::Down
                                                          : isa::ShflMode::Idx;
        const char* ptx = mode == isa::ShflMode::Bfly ? "bfly" : mode == isa::ShflMode::Up ? "up"
                          : mode == isa::ShflMode::Down ? "down" : "idx";
        const std::string instr = name + " (shfl.sync." + ptx + ")";
        for (int h = 0; h < halves; ++h) {
            std::array<isa::ShflSyncLane, 32> lanes{};
            for (int l = 0; l < 32; ++l) {
                isa::ShflSyncLane& ln = lanes[static_cast<size_t>(l)];
                ln.exited = l >= lanes_here;
                ln.executes = l < warp_ && active[static_cast<size_t>(l)];
                ln.membermask = 0xffffffffu;
                ln.c = op->op == CallOp::ShflUp ? 0u : 0x1fu;
                if (!ln.executes) continue;
                ln.a = static_cast<uint32_t>(bits[thread_of(l)] >> (32 * h));
                ln.b = static_cast<uint32_t>(lane_arg[thread_of(l)]);
            }
            isa::ShflSyncResult r = isa::ptx_shfl_sync(mode, lanes);
            for (int l = 0; l < 32; ++l)
                if (lanes[static_cast<size_t>(l)].executes)
                    result[static_cast<size_t>(l)] |= static_cast<uint64_t>(r.d[static_cast<size_t>(l)]) << (32 * h);
            if (h > 0) continue;  // the second half's findings are the first's
            int missing = -1, absent = 0;
            for (const auto& is : r.issues)
                if (is.problem == isa::ShflProblem::MemberNotArrived && is.lane == act[k] - first) {
                    if (missing < 0) missing = is.other;
                    ++absent;
                }
            if (missing >= 0)
                issue(IssueKind::ShuffleDivergence, loc, act[k], [&] {
                    return instr + " executed by " + std::to_string(lanes_here - absent) + " of the warp's " +
                           std::to_string(lanes_here) + " lanes: lane " + std::to_string(missing) +
                           ", named by membermask 0xffffffff, does not execute it (a shuffle under a "
                           "lane-dependent condition; undefined in PTX)";
                });
            for (const auto& is : r.issues) {
                if (is.problem == isa::ShflProblem::SourceInactive ||
                    is.problem == isa::ShflProblem::SourceNotInMembermask)
                    issue(IssueKind::ShuffleSource, loc, thread_of(is.lane), [&] {
                        return instr + " in lane " + std::to_string(is.lane) + " reads lane " +
                               std::to_string(is.other) +
                               (is.other >= lanes_here ? ", which does not exist in the block"
                                                       : ", which does not execute it") +
                               " (undefined in PTX)";
                    });
                else if (is.problem != isa::ShflProblem::MemberNotArrived)
                    issue(IssueKind::ShuffleDivergence, loc, thread_of(is.lane), [&] {
                        return instr + " in lane " + std::to_string(is.lane) +
                               ": membermasks disagree with lane " + std::to_string(is.other) +
                               " (undefined in PTX)";
                    });
            }
        }
    } else {
        // ds_bpermute_b32 with the byte address of the source lane the IR defines (ir.h),
        // computed as the AMDGPU backend computes it, in 32-bit arithmetic.
        const std::string instr = name + " (ds_bpermute_b32)";
        int executing = static_cast<int>(end - k);
        if (executing < lanes_here) {
            int missing = 0;
            while (missing < lanes_here && active[static_cast<size_t>(missing)]) ++missing;
            issue(IssueKind::ShuffleDivergence, loc, act[k], [&] {
                return instr + " executed by " + std::to_string(executing) + " of the warp's " +
                       std::to_string(lanes_here) + " lanes: lane " + std::to_string(missing) +
                       " does not execute it (a shuffle under a lane-dependent condition; "
                       "tilec's shuffles need the whole warp)";
            });
        }
        uint64_t exec = 0;
        std::vector<uint32_t> addr(static_cast<size_t>(warp_), 0), data(static_cast<size_t>(warp_), 0),
            zeros(static_cast<size_t>(warp_), 0);
        for (int l = 0; l < warp_; ++l) {
            if (!active[static_cast<size_t>(l)]) continue;
            exec |= uint64_t{1} << l;
            int32_t m = static_cast<int32_t>(lane_arg[thread_of(l)]);
            int32_t lane = l, j = 0;
            switch (op->op) {
            case CallOp::ShflXor: j = lane ^ m; break;
            case CallOp::ShflUp: j = static_cast<int32_t>(static_cast<uint32_t>(lane) - static_cast<uint32_t>(m)); j = j < 0 ? lane : j; break;
            case CallOp::ShflDown: j = static_cast<int32_t>(static_cast<uint32_t>(lane) + static_cast<uint32_t>(m)); j = j >= warp_ ? lane : j; break;
            default: j = m; break;
            }
            addr[static_cast<size_t>(l)] = static_cast<uint32_t>(j) << 2;
        }
        // gfx9 (CDNA, wave64) and gfx11 (RDNA3, wave32): the two documents' texts.
        isa::DsPermuteIsa variant = warp_ == 64 ? isa::DsPermuteIsa::Cdna : isa::DsPermuteIsa::Rdna3;
        for (int h = 0; h < halves; ++h) {
            for (int l = 0; l < warp_; ++l)
                data[static_cast<size_t>(l)] =
                    active[static_cast<size_t>(l)] ? static_cast<uint32_t>(bits[thread_of(l)] >> (32 * h)) : 0u;
            isa::DsBpermuteResult r = isa::amd_ds_bpermute(variant, warp_, exec, addr, data, 0, zeros);
            for (int l = 0; l < warp_; ++l)
                if (active[static_cast<size_t>(l)])
                    result[static_cast<size_t>(l)] |= static_cast<uint64_t>(r.vdst[static_cast<size_t>(l)]) << (32 * h);
            if (h > 0) continue;
            for (int l = 0; l < warp_; ++l)
                if (active[static_cast<size_t>(l)] && r.source_disabled[static_cast<size_t>(l)])
                    issue(IssueKind::ShuffleSource, loc, thread_of(l), [&] {
                        int src = r.source[static_cast<size_t>(l)];
                        return instr + " in lane " + std::to_string(l) + " reads lane " + std::to_string(src) +
                               (src >= lanes_here ? ", which does not exist in the block"
                                                  : ", which does not execute it") +
                               " (ds_bpermute returns 0 for a disabled lane)";
                    });
        }
    }
    for (size_t a = k; a < end; ++a)
        out[static_cast<size_t>(act[a])] = from_register_bits(result[static_cast<size_t>(act[a] - first)], t);
}

Value Executor::eval_binary(const BinaryNode* op, int t) {
    DataType ty = op->a->type;
    if (op->op == BinaryOp::And) return Value::of_int(eval(op->a, t).i != 0 && eval(op->b, t).i != 0);
    if (op->op == BinaryOp::Or) return Value::of_int(eval(op->a, t).i != 0 || eval(op->b, t).i != 0);
    Value a = eval(op->a, t), b = eval(op->b, t);
    auto truth = [](bool v) { return Value::of_int(v ? 1 : 0); };
    if (ty.is_float()) {
        double x = a.f, y = b.f;
        auto r = [&](double v) { return Value::of_float(round_to(v, ty)); };
        switch (op->op) {
        case BinaryOp::Add: return r(x + y);
        case BinaryOp::Sub: return r(x - y);
        case BinaryOp::Mul: return r(x * y);
        case BinaryOp::Div: return r(x / y);
        case BinaryOp::Mod: return r(std::fmod(x, y));
        case BinaryOp::Min: return Value::of_float(nan_min(x, y));
        case BinaryOp::Max: return Value::of_float(nan_max(x, y));
        case BinaryOp::EQ: return truth(x == y);
        case BinaryOp::NE: return truth(x != y);
        case BinaryOp::LT: return truth(x < y);
        case BinaryOp::LE: return truth(x <= y);
        case BinaryOp::GT: return truth(x > y);
        case BinaryOp::GE: return truth(x >= y);
        default: fatal(at(op->loc), std::string("operator '") + binary_op_name(op->op) + "' on floats");
        }
    }
    int64_t x = a.i, y = b.i;
    uint64_t ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
    switch (op->op) {
    case BinaryOp::Add: return Value::of_int(wrap(ux + uy, ty));
    case BinaryOp::Sub: return Value::of_int(wrap(ux - uy, ty));
    case BinaryOp::Mul: return Value::of_int(wrap(ux * uy, ty));
    case BinaryOp::FloorDiv:
    case BinaryOp::FloorMod: {
        if (y == 0) {
            issue(IssueKind::Arithmetic, at(op->loc), t, [&] {
                return std::string("integer ") + (op->op == BinaryOp::FloorDiv ? "division" : "modulo") +
                       " by zero: " + print(op->b) + " is 0";
            });
            return Value::of_int(0);
        }
        if (is_u64(ty))
            return Value::of_int(static_cast<int64_t>(op->op == BinaryOp::FloorDiv ? ux / uy : ux % uy));
        if (y == -1) return Value::of_int(op->op == BinaryOp::FloorDiv ? wrap(0 - ux, ty) : 0);
        int64_t q = x / y, r = x % y;
        if (r != 0 && ((r < 0) != (y < 0))) {
            --q;
            r += y;
        }
        return Value::of_int(wrap(static_cast<uint64_t>(op->op == BinaryOp::FloorDiv ? q : r), ty));
    }
    case BinaryOp::Min: return Value::of_int(int_less(y, x, ty) ? y : x);
    case BinaryOp::Max: return Value::of_int(int_less(x, y, ty) ? y : x);
    case BinaryOp::EQ: return truth(x == y);
    case BinaryOp::NE: return truth(x != y);
    case BinaryOp::LT: return truth(int_less(x, y, ty));
    case BinaryOp::LE: return truth(!int_less(y, x, ty));
    case BinaryOp::GT: return truth(int_less(y, x, ty));
    case BinaryOp::GE: return truth(!int_less(x, y, ty));
    case BinaryOp::BitAnd: return Value::of_int(wrap(ux & uy, ty));
    case BinaryOp::BitOr: return Value::of_int(wrap(ux | uy, ty));
    case BinaryOp::BitXor: return Value::of_int(wrap(ux ^ uy, ty));
    case BinaryOp::Shl:
    case BinaryOp::Shr: {
        int width = ty.is_bool() ? 1 : ty.bits;
        if ((!ty.is_uint() && y < 0) || uy >= static_cast<uint64_t>(width)) {
            issue(IssueKind::Arithmetic, at(op->loc), t, [&] {
                return "shift by " + std::to_string(y) + " (" + print(op->b) + ") is outside [0, " +
                       std::to_string(width) + ") for " + ty.str();
            });
            return Value::of_int(0);
        }
        if (op->op == BinaryOp::Shl) return Value::of_int(wrap(ux << y, ty));
        if (ty.is_uint()) return Value::of_int(wrap(ux >> y, ty));
        return Value::of_int(wrap(static_cast<uint64_t>(x >> y), ty));
    }
    default: break;
    }
    fatal(at(op->loc), std::string("operator '") + binary_op_name(op->op) + "' on " + ty.str());
}

Value Executor::eval_call(const CallNode* op, int t) {
    if (op->args.empty()) fatal(at(op->loc), std::string(call_op_name(op->op)) + " without arguments");
    DataType ty = op->args[0]->type;
    if (op->op == CallOp::Abs && !ty.is_float()) {
        int64_t x = eval_int(op->args[0], t);
        return Value::of_int(ty.is_int() && x < 0 ? wrap(0 - static_cast<uint64_t>(x), ty) : x);
    }
    auto arg = [&](size_t k) {
        Value v = eval(op->args[k], t);
        DataType at = op->args[k]->type;
        return at.is_float() ? v.f
                             : (is_u64(at) ? static_cast<double>(static_cast<uint64_t>(v.i))
                                           : static_cast<double>(v.i));
    };
    double x = arg(0), r = 0;
    switch (op->op) {
    case CallOp::Exp: r = std::exp(x); break;
    case CallOp::Exp2: r = std::exp2(x); break;
    case CallOp::Log: r = std::log(x); break;
    case CallOp::Log2: r = std::log2(x); break;
    case CallOp::Sqrt: r = std::sqrt(x); break;
    case CallOp::Rsqrt: r = 1.0 / std::sqrt(x); break;
    case CallOp::Tanh: r = std::tanh(x); break;
    case CallOp::Sigmoid: r = 1.0 / (1.0 + std::exp(-x)); break;
    case CallOp::Abs: r = std::fabs(x); break;
    case CallOp::Floor: r = std::floor(x); break;
    case CallOp::Ceil: r = std::ceil(x); break;
    case CallOp::Pow:
        if (op->args.size() != 2) fatal(at(op->loc), "pow takes two arguments");
        r = std::pow(x, arg(1));
        break;
    case CallOp::ShflXor:
    case CallOp::ShflUp:
    case CallOp::ShflDown:
    case CallOp::ShflIdx: fatal(at(op->loc), "internal error in the simulator: shuffle as a plain call");
    }
    if (!op->type.is_float()) return interp::detail::convert(Value::of_float(r), DataType::f64(), op->type);
    return Value::of_float(round_to(r, op->type));
}

int64_t Executor::offset_of(const Storage& s, const std::vector<Expr>& indices, SourceLoc loc, int t,
                            bool store) {
    if (indices.size() != s.shape.size())
        fatal(loc, "'" + s.name() + "' of rank " + std::to_string(s.shape.size()) + " indexed with " +
                       std::to_string(indices.size()) + " indices");
    int64_t idx[kMaxRank];
    bool inside = true;
    int64_t off = 0;
    for (size_t d = 0; d < indices.size(); ++d) {
        idx[d] = eval_int(indices[d], t);
        if (idx[d] < 0 || idx[d] >= s.shape[d]) inside = false;
        off += idx[d] * s.strides[d];
    }
    if (!inside) {
        issue(IssueKind::OutOfBounds, loc, t, [&] {
            std::vector<int64_t> v(idx, idx + indices.size());
            return std::string(store ? "store" : "load") + " out of bounds: '" + s.name() + "'" + idx_str(v) +
                   " of " + kind_word(s.scope) + (s.scope == Scope::Global ? " tensor" : " buffer") +
                   " of shape " + idx_str(s.shape);
        });
        return -1;
    }
    return off;
}

Value Executor::load(const LoadNode* op, int t) {
    SourceLoc loc = at(op->loc);
    Storage& s = storage(op->buffer, loc);
    int64_t off = offset_of(s, op->indices, loc, t, false);
    if (off < 0) return Value{};
    record(op, loc, s, false, t, off);
    int64_t slot = s.scope == Scope::Register ? t * s.size + off : off;
    if (s.scope == Scope::Shared) shared_read(s, off, t, loc, op);
    if (!s.init.empty() && !s.init[static_cast<size_t>(slot)] && opt_.check_uninitialized) {
        issue(IssueKind::Uninitialized, loc, t, [&] {
            return "read of uninitialised " + std::string(kind_word(s.scope)) + " element '" + s.name() +
                   "'[" + std::to_string(off) + "] (never written" +
                   (s.scope == Scope::Register ? " by thread " + std::to_string(t) : std::string()) + ")";
        });
    }
    return s.get(slot);
}

// The checks of shared memory, per byte of the arena: a race is two threads' accesses
// to one byte, at least one a store, in one barrier epoch, whatever buffers they went
// through; a read must find every byte last stored by this execution of its own buffer's
// alloc (never written: uninitialised; written through another buffer: a stale read
// through a reused slot, or, where this buffer had stored the byte before, a clobber of
// a live buffer by another the plan put on the same bytes).
void Executor::shared_read(const Storage& s, int64_t off, int t, SourceLoc loc, const void* node) {
    const int64_t first = s.base + off * s.elem_bytes;
    ByteShadow* sh = arena_.shadow.data() + first;
    if (opt_.check_races) {
        uint32_t me = 0;  // looked up when first needed: most reads find their epoch's reader set
        bool reported = false;
        for (int b = 0; b < s.elem_bytes; ++b) {
            ByteShadow& x = sh[b];
            if (!reported && x.w_epoch == epoch_ && x.w_tid != t) {
                reported = true;
                issue(IssueKind::Race, loc, t, [&] {
                    const Site& w = sites_[x.w_site];
                    std::string head = "shared-memory race: '" + s.name() + "' element " + std::to_string(off) +
                                       " read by thread " + std::to_string(t) + " after thread " +
                                       std::to_string(x.w_tid);
                    if (w.buffer == s.buffer) return head + " wrote it, with no barrier between";
                    return head + " wrote the same bytes as " + element_at(x.writer, first + b) + " at " +
                           line_col(w.loc) + ", with no barrier between";
                });
            }
            if (x.r_epoch != epoch_) {
                if (!me) me = site(node, loc, s.buffer);
                x.r_epoch = epoch_;
                x.r_tid = t;
                x.r_site = me;
            } else if (x.r_tid != t) {
                x.r_tid = -1;  // several readers
            }
        }
    }
    if (!opt_.check_uninitialized) return;
    for (int b = 0; b < s.elem_bytes; ++b) {
        const ByteShadow& x = sh[b];
        if (x.writer == s.instance) continue;
        std::string element = "'" + s.name() + "'[" + std::to_string(off) + "]";
        if (x.writer == 0 || instances_[static_cast<size_t>(x.writer)].buffer == s.buffer) {
            issue(IssueKind::Uninitialized, loc, t, [&] {
                return "read of uninitialised shared element " + element +
                       (x.writer == 0 ? " (never written)" : " (not written since this execution of its alloc)");
            });
        } else if (x.overwritten == s.instance) {
            issue(IssueKind::SharedOverlap, loc, t, [&] {
                const Site& w = sites_[x.w_site];
                const std::string& other = instances_[static_cast<size_t>(x.writer)].buffer->name;
                return "read of shared element " + element + " after a store to " + element_at(x.writer, first + b) +
                       " at " + line_col(w.loc) + " overwrote its bytes (arena byte " + std::to_string(first + b) +
                       "): '" + s.name() + "' and '" + other + "' share bytes while both are live";
            });
        } else {
            issue(IssueKind::Uninitialized, loc, t, [&] {
                const Site& w = sites_[x.w_site];
                const std::string& other = instances_[static_cast<size_t>(x.writer)].buffer->name;
                return "read of uninitialised shared element " + element + ": reads bytes of '" + s.name() +
                       "' last written as '" + other + "' (" + element_at(x.writer, first + b) + " at " +
                       line_col(w.loc) + "; stale data of another buffer in a reused slot)";
            });
        }
        return;
    }
}

void Executor::shared_write(const Storage& s, int64_t off, int t, SourceLoc loc, const void* node) {
    const int64_t first = s.base + off * s.elem_bytes;
    ByteShadow* sh = arena_.shadow.data() + first;
    uint32_t me = site(node, loc, s.buffer);
    bool reported = !opt_.check_races;
    for (int b = 0; b < s.elem_bytes; ++b) {
        ByteShadow& x = sh[b];
        if (!reported && x.w_epoch == epoch_ && x.w_tid != t) {
            reported = true;
            issue(IssueKind::Race, loc, t, [&] {
                const Site& w = sites_[x.w_site];
                std::string head = "shared-memory race: '" + s.name() + "' element " + std::to_string(off) +
                                   " written by thread " + std::to_string(t) + " and by thread " +
                                   std::to_string(x.w_tid);
                if (w.buffer == s.buffer) return head + " with no barrier between";
                return head + " as " + element_at(x.writer, first + b) + " at " + line_col(w.loc) +
                       ", with no barrier between";
            });
        } else if (!reported && x.r_epoch == epoch_ && x.r_tid != t) {
            reported = true;
            issue(IssueKind::Race, loc, t, [&] {
                const Site& r = sites_[x.r_site];
                std::string who = x.r_tid < 0 ? std::string("other threads") : "thread " + std::to_string(x.r_tid);
                std::string head = "shared-memory race: '" + s.name() + "' element " + std::to_string(off) +
                                   " written by thread " + std::to_string(t) + " after " + who;
                if (r.buffer == s.buffer) return head + " read it, with no barrier between";
                return head + " read the same bytes as '" + r.buffer->name + "' at " + line_col(r.loc) +
                       ", with no barrier between";
            });
        }
        if (opt_.check_races) {
            x.w_epoch = epoch_;
            x.w_tid = t;
        }
        x.w_site = me;
        if (x.writer != s.instance) {
            x.overwritten = x.writer;
            x.writer = s.instance;
        }
    }
}

// ---------------------------------------------------------------------------------
// Statements

void Executor::exec(const Stmt& s, const Active& act) {
    if (act.empty()) return;
    stmt_loc_ = s->loc.valid() ? s->loc : stmt_loc_;
    switch (s->kind) {
    case StmtKind::Seq:
        for (const auto& c : static_cast<const SeqNode*>(s.get())->stmts) exec(c, act);
        return;
    case StmtKind::For: {
        auto* op = static_cast<const ForNode*>(s.get());
        begin_statement();
        prepare(op->min, act);
        prepare(op->extent, act);
        std::vector<int64_t> mins(static_cast<size_t>(threads_)), ext(static_cast<size_t>(threads_));
        int64_t most = 0;
        for (int32_t t : act) {
            mins[t] = eval_int(op->min, t);
            ext[t] = eval_int(op->extent, t);
            most = std::max(most, ext[t]);
        }
        flush();
        // The backend turns an unrolled register loop's accesses into vector accesses:
        // count them as one request per node and warp over all iterations.
        bool vector = op->for_kind == ForKind::Unroll;
        unroll_depth_ += vector;
        std::vector<Value>& vals = push_tvar(op->var.get());
        Active sub;
        for (int64_t k = 0; k < most; ++k) {
            sub.clear();
            for (int32_t t : act)
                if (k < ext[t]) {
                    sub.push_back(t);
                    tvars_[tdepth_ - 1].vals[t] = Value::of_int(normalize_int(
                        static_cast<int64_t>(static_cast<uint64_t>(mins[t]) + k), op->var->type));
                }
            exec(op->body, sub);
        }
        (void)vals;
        pop_tvar();
        unroll_depth_ -= vector;
        flush();
        return;
    }
    case StmtKind::If: {
        auto* op = static_cast<const IfNode*>(s.get());
        begin_statement();
        prepare(op->cond, act);
        Active yes, no;
        for (int32_t t : act) (eval(op->cond, t).i != 0 ? yes : no).push_back(t);
        flush();
        exec(op->then_case, yes);
        if (op->else_case) exec(op->else_case, no);
        return;
    }
    case StmtKind::LetStmt: {
        auto* op = static_cast<const LetStmtNode*>(s.get());
        // Evaluated before the binding exists (the value may name an outer binding of
        // the same variable).
        std::vector<Value> tmp(static_cast<size_t>(threads_));
        begin_statement();
        prepare(op->value, act);
        for (int32_t t : act) tmp[t] = eval(op->value, t);
        flush();
        std::vector<Value>& vals = push_tvar(op->var.get());
        for (int32_t t : act) vals[t] = tmp[t];
        exec(op->body, act);
        pop_tvar();
        return;
    }
    case StmtKind::Allocate: exec_allocate(static_cast<const AllocateNode*>(s.get()), act); return;
    case StmtKind::Store: exec_store(static_cast<const StoreNode*>(s.get()), act); return;
    case StmtKind::Evaluate:
        begin_statement();
        prepare(static_cast<const EvaluateNode*>(s.get())->value, act);
        for (int32_t t : act) eval(static_cast<const EvaluateNode*>(s.get())->value, t);
        flush();
        return;
    case StmtKind::Barrier: barrier(static_cast<const BarrierNode*>(s.get()), act); return;
    case StmtKind::AtomicRmw: exec_atomic_rmw(static_cast<const AtomicRmwNode*>(s.get()), act); return;
    case StmtKind::FullWrite: exec(static_cast<const FullWriteNode*>(s.get())->body, act); return;  // a mark only
    case StmtKind::Print:
    case StmtKind::Assert:
    case StmtKind::Copy:
    case StmtKind::Gemm:
    case StmtKind::Fill:
    case StmtKind::Reduce:
    case StmtKind::Cumsum:
    case StmtKind::AtomicAdd: break;
    }
    fatal(s->loc, "the simulator runs thread-level IR; this statement is not thread level (lower it first)");
}

void Executor::exec_store(const StoreNode* op, const Active& act) {
    SourceLoc loc = at(op->loc);
    Storage& s = storage(op->buffer, loc);
    // All values first, then all stores: a warp's lanes read before any of them writes.
    struct Pending {
        int32_t t;
        int64_t off;
        Value v;
    };
    std::vector<Pending> pending;
    pending.reserve(act.size());
    begin_statement();
    for (const auto& i : op->indices) prepare(i, act);
    prepare(op->value, act);
    for (int32_t t : act) {
        int64_t off = offset_of(s, op->indices, loc, t, true);
        Value v = eval(op->value, t);
        if (off >= 0) pending.push_back({t, off, interp::detail::convert(v, op->value->type, s.dtype)});
    }
    for (auto& p : pending) {
        int t = p.t;
        int64_t off = p.off;
        if (s.scope == Scope::Global && !s.writable) {
            issue(IssueKind::InputWrite, loc, t,
                  [&] { return "store into the input tensor '" + s.name() + "'"; });
            continue;
        }
        record(op, loc, s, true, t, off);
        int64_t slot = s.scope == Scope::Register ? t * s.size + off : off;
        if (s.scope == Scope::Shared) shared_write(s, off, t, loc, op);
        s.set(slot, p.v);
        if (!s.init.empty()) s.init[static_cast<size_t>(slot)] = 1;
        if (s.written) (*s.written)[static_cast<size_t>(off)] = 1;
    }
    flush();
}

// Atomics: every active thread's operands first (as for a store), then the read-modify-
// writes one after another in thread order, each on the value the previous one left: the
// hardware serialises atomics to one address in some order, and thread order is one of
// them. Global memory only, where the simulator keeps no race shadow (it checks races in
// shared memory only), so atomics need no exemption there; shared-memory atomics, whose
// race rules differ (atomics do not race with each other, but do with plain accesses),
// are refused until the lowering emits them.
void Executor::exec_atomic_rmw(const AtomicRmwNode* op, const Active& act) {
    SourceLoc loc = at(op->loc);
    Storage& s = storage(op->buffer, loc);
    if (s.scope != Scope::Global)
        fatal(loc, std::string("atomics on ") + kind_word(s.scope) + " memory ('" + s.name() +
                       "') are not simulated (global tensors only)");
    DataType dt = s.dtype;
    if (!dt.is_float() && !dt.is_integer())
        fatal(loc, "atomic on '" + s.name() + "' of " + dt.str());
    struct Pending {
        int32_t t;
        int64_t off;
        Value v;
    };
    std::vector<Pending> pending;
    pending.reserve(act.size());
    for (int32_t t : act) {
        int64_t off = offset_of(s, op->indices, loc, t, true);
        Value v = eval(op->value, t);
        if (off >= 0) pending.push_back({t, off, interp::detail::convert(v, op->value->type, dt)});
    }
    for (auto& p : pending) {
        if (!s.writable) {
            issue(IssueKind::InputWrite, loc, p.t, [&] { return "atomic add into the input tensor '" + s.name() + "'"; });
            continue;
        }
        record(op, loc, s, true, p.t, p.off);
        Value old = s.get(p.off);
        switch (op->op) {
        case AtomicOp::Add:
            // One rounding of the exact sum to the element type, as the hardware's
            // atomic float add (f32: the double sum of two floats rounds to the same
            // float as the exact one) and wrapping integer add.
            if (dt.is_float())
                s.set(p.off, Value::of_float(round_to(old.f + p.v.f, dt)));
            else
                s.set(p.off, Value::of_int(wrap(static_cast<uint64_t>(old.i) + static_cast<uint64_t>(p.v.i), dt)));
            break;
        }
        if (s.written) (*s.written)[static_cast<size_t>(p.off)] = 1;
    }
    flush();
}

void Executor::exec_allocate(const AllocateNode* op, const Active& act) {
    const Buffer& b = op->buffer;
    if (b->scope != Scope::Shared && b->scope != Scope::Register)
        fatal(op->loc, std::string("the simulator runs thread-level IR; ") + scope_name(b->scope) +
                           " buffer '" + b->name + "' is not thread level (lower it first)");
    Storage st;
    st.buffer = b.get();
    st.scope = b->scope;
    st.dtype = b->dtype;
    st.elem_bytes = std::max(1, (b->dtype.bits + 7) / 8);
    if (b->rank() > kMaxRank) fatal(op->loc, "buffer '" + b->name + "' has more than 16 dimensions");
    int64_t size = 1;
    for (const auto& e : b->shape) {
        int64_t n = eval_int(e, act.front());
        if (n <= 0) fatal(op->loc, "buffer '" + b->name + "' has a dimension of size " + std::to_string(n));
        st.shape.push_back(n);
        if (size > (int64_t(1) << 28) / n)
            fatal(op->loc, "buffer '" + b->name + "' is too large to simulate");
        size *= n;
    }
    st.size = size;
    st.strides.assign(st.shape.size(), 1);
    for (size_t d = st.shape.size(); d-- > 1;) st.strides[d - 1] = st.strides[d] * st.shape[d];
    int64_t saved_top = shared_top_;
    if (b->scope == Scope::Shared) {
        if (b->dtype.lanes != 1) fatal(op->loc, "shared buffer '" + b->name + "' of vector type " + b->dtype.str());
        // Planned buffers sit where the shared plan put them, sharing bytes where it says
        // so; unplanned ones (IR written by hand) get the next 128-byte slot.
        st.base = b->shared_offset >= 0 ? b->shared_offset : (shared_top_ + 127) / 128 * 128;
        shared_top_ = std::max(shared_top_, st.base + size * st.elem_bytes);
        arena_.ensure(st.base + size * st.elem_bytes);
        st.arena = &arena_;
        st.instance = static_cast<int32_t>(instances_.size());
        instances_.push_back({b.get(), st.base, st.elem_bytes});
    } else {
        st.allocate_own(size * threads_);
        st.init.assign(static_cast<size_t>(size * threads_), 0);
    }
    buffers_.emplace_back(b.get(), &st);
    exec(op->body, act);
    buffers_.pop_back();
    shared_top_ = saved_top;
}

void Executor::barrier(const BarrierNode* op, const Active& act) {
    if (static_cast<int>(act.size()) != threads_) {
        // The first thread that is not here (act is in increasing order).
        int32_t missing = 0;
        for (int32_t t : act) {
            if (t != missing) break;
            ++missing;
        }
        issue(IssueKind::BarrierDivergence, at(op->loc), act.front(), [&] {
            return "barrier reached by " + std::to_string(act.size()) + " of the block's " +
                   std::to_string(threads_) + " threads (thread " + std::to_string(missing) +
                   " does not reach it: a barrier under a thread-dependent condition)";
        });
    }
    ++epoch_;
}

// ---------------------------------------------------------------------------------
// Counters

void Executor::flush() {
    if (accesses_.empty() || unroll_depth_ > 0) return;
    // Group by node (the accesses of one node are contiguous per thread order, but
    // different nodes interleave), then by warp.
    std::stable_sort(accesses_.begin(), accesses_.end(), [](const MemAccess& a, const MemAccess& b) {
        return a.node < b.node || (a.node == b.node && a.thread < b.thread);
    });
    size_t k = 0;
    std::vector<int64_t> units;
    while (k < accesses_.size()) {
        size_t end = k;
        const MemAccess& first = accesses_[k];
        int warp = first.thread / warp_;
        while (end < accesses_.size() && accesses_[end].node == first.node &&
               accesses_[end].thread / warp_ == warp)
            ++end;
        CounterKey key{first.loc.file, first.loc.line, first.shared, first.store};
        auto [it, fresh] = counters_.try_emplace(key);
        LineCounters& c = it->second;
        if (fresh) {
            c.loc = first.loc;
            c.shared = first.shared;
            c.store = first.store;
        }
        ++c.requests;
        c.lanes += static_cast<int64_t>(end - k);
        units.clear();
        if (first.shared) {
            // Distinct 4-byte words; per bank, the distinct words serialise.
            for (size_t a = k; a < end; ++a)
                for (int64_t w = accesses_[a].addr / kBankBytes;
                     w <= (accesses_[a].addr + accesses_[a].bytes - 1) / kBankBytes; ++w)
                    units.push_back(w);
            std::sort(units.begin(), units.end());
            units.erase(std::unique(units.begin(), units.end()), units.end());
            int per_bank[kBanks] = {};
            int most = 0;
            for (int64_t w : units) most = std::max(most, ++per_bank[w % kBanks]);
            c.transactions += most;
            c.ideal += (static_cast<int64_t>(units.size()) + kBanks - 1) / kBanks;
        } else {
            // Distinct sectors against the distinct bytes.
            std::vector<int64_t> bytes;
            for (size_t a = k; a < end; ++a) {
                for (int64_t s = accesses_[a].addr / kSectorBytes;
                     s <= (accesses_[a].addr + accesses_[a].bytes - 1) / kSectorBytes; ++s)
                    units.push_back(s);
                bytes.push_back(accesses_[a].addr);
            }
            std::sort(units.begin(), units.end());
            units.erase(std::unique(units.begin(), units.end()), units.end());
            std::sort(bytes.begin(), bytes.end());
            bytes.erase(std::unique(bytes.begin(), bytes.end()), bytes.end());
            c.transactions += static_cast<int64_t>(units.size());
            c.ideal += (static_cast<int64_t>(bytes.size()) * first.bytes + kSectorBytes - 1) / kSectorBytes;
        }
        k = end;
    }
    accesses_.clear();
}

// ---------------------------------------------------------------------------------
// The run

void Executor::run(interp::RunArgs& args) {
    using interp::detail::convert;
    if (!f_.body) fatal(f_.loc, "function without a body");
    if (f_.level != ir::FuncLevel::Thread)
        fatal(f_.loc,
              "'" + f_.name + "' is tile-level IR; the simulator runs thread-level IR (lower it first)");
    threads_ = static_cast<int>(f_.threads);
    if (f_.threads <= 0 || f_.threads > 1024)
        fatal(f_.loc, "'" + f_.name + "' has " + std::to_string(f_.threads) +
                          " threads per block (1..1024 simulated)");
    for (int t = 0; t < threads_; ++t) all_.push_back(t);
    sites_.push_back({SourceLoc{}, nullptr});

    size_t n_tensors = 0, n_sizes = 0, n_scalars = 0;
    for (const auto& p : f_.params)
        (p.kind == ParamKind::Tensor ? n_tensors : p.kind == ParamKind::Size ? n_sizes : n_scalars)++;
    auto count = [&](const char* what, size_t want, size_t got) {
        if (want != got)
            fatal(f_.loc, "'" + f_.name + "' takes " + std::to_string(want) + " " + what + ", " +
                              std::to_string(got) + " given");
    };
    count("tensors", n_tensors, args.tensors.size());
    count("sizes", n_sizes, args.sizes.size());
    count("scalars", n_scalars, args.scalars.size());
    size_t si = 0, ci = 0;
    for (const auto& p : f_.params) {
        if (p.kind == ParamKind::Size) {
            int64_t v = args.sizes[si++];
            if (v < 0)
                fatal(p.var->loc, "size '" + p.var->name + "' is negative (" + std::to_string(v) + ")");
            uniform_.emplace_back(p.var.get(), Value::of_int(normalize_int(v, p.var->type)));
        } else if (p.kind == ParamKind::Scalar) {
            uniform_.emplace_back(p.var.get(),
                                  convert(Value::of_float(args.scalars[ci++]), DataType::f64(), p.var->type));
        }
    }
    // Tensors: shapes and strides from the sizes, checked against the arrays.
    std::vector<std::unique_ptr<Storage>> tensors;
    res_.written.clear();
    res_.written.resize(n_tensors);
    size_t ti = 0;
    for (const auto& p : f_.params) {
        if (p.kind != ParamKind::Tensor) continue;
        const Buffer& b = p.buffer;
        interp::TensorArg& arg = args.tensors[ti];
        auto st = std::make_unique<Storage>();
        st->buffer = b.get();
        st->scope = Scope::Global;
        st->dtype = b->dtype;
        st->writable = b->access != Access::In;
        st->elem_bytes = std::max(1, (b->dtype.bits + 7) / 8);
        std::string what = "tensor '" + b->name + "'";
        if (b->rank() > kMaxRank) fatal(b->loc, what + " has more than 16 dimensions");
        for (const auto& e : b->shape) {
            int64_t n = eval_int(e, 0);
            if (n < 0) fatal(b->loc, what + " has a negative dimension " + std::to_string(n));
            st->shape.push_back(n);
        }
        if (b->strides.empty()) {
            st->strides.assign(st->shape.size(), 1);
            for (size_t d = st->shape.size(); d-- > 1;) st->strides[d - 1] = st->strides[d] * st->shape[d];
        } else {
            for (const auto& e : b->strides) st->strides.push_back(eval_int(e, 0));
        }
        if (!arg.shape.empty() && arg.shape != st->shape)
            fatal(b->loc, what + " is given with shape " + idx_str(arg.shape) + "; the sizes make it " +
                              idx_str(st->shape));
        if (!arg.strides.empty() && arg.strides != st->strides)
            fatal(b->loc, what + " is given with strides " + idx_str(arg.strides) + "; it is declared with " +
                              idx_str(st->strides));
        int64_t need = 1;
        for (size_t d = 0; d < st->shape.size(); ++d) {
            if (st->shape[d] == 0) need = 0;
            if (st->strides[d] < 0) fatal(b->loc, what + " has a negative stride");
        }
        if (need) {
            need = 1;
            for (size_t d = 0; d < st->shape.size(); ++d) need += (st->shape[d] - 1) * st->strides[d];
        }
        bool use_ints = !st->dtype.is_float() && !arg.ints.empty();
        int64_t have = static_cast<int64_t>(use_ints ? arg.ints.size() : arg.data.size());
        if (have < need)
            fatal(b->loc, what + " " + idx_str(st->shape) + " needs " + std::to_string(need) + " elements; " +
                              std::to_string(have) + " are given");
        if (use_ints) {
            st->i = arg.ints.data();
        } else {
            st->f = arg.data.data();
            if (st->dtype.is_float() && st->dtype != DataType::f64())
                for (double& x : arg.data) x = interp::round_to_float_type(x, st->dtype);
        }
        res_.written[ti].assign(static_cast<size_t>(have), 0);
        st->written = &res_.written[ti];
        // Each tensor in its own 2^40-byte window: 256-byte aligned, never adjacent.
        st->base = static_cast<int64_t>(ti + 1) << 40;
        buffers_.emplace_back(b.get(), st.get());
        tensors.push_back(std::move(st));
        ++ti;
    }

    if (f_.grid.empty() || f_.grid.size() > 3) fatal(f_.loc, "the grid must have 1 to 3 dimensions");
    std::array<int64_t, 3> dims = {1, 1, 1};
    for (size_t d = 0; d < f_.grid.size(); ++d) {
        dims[d] = eval_int(f_.grid[d], 0);
        if (dims[d] < 0) fatal(f_.loc, "grid dimension " + std::to_string(d) + " is negative");
    }
    for (int d = 0; d < 3; ++d)
        if (!f_.block_idx[d]) fatal(f_.loc, "missing block index variable");
    size_t block_slot = uniform_.size();
    for (int d = 0; d < 3; ++d) uniform_.emplace_back(f_.block_idx[d].get(), Value::of_int(0));
    try {
        for (int64_t z = 0; z < dims[2]; ++z)
            for (int64_t y = 0; y < dims[1]; ++y)
                for (int64_t x = 0; x < dims[0]; ++x) {
                    if (opt_.block_filter && !opt_.block_filter(x, y, z)) continue;
                    block_ = {x, y, z};
                    for (int d = 0; d < 3; ++d) uniform_[block_slot + d].second = Value::of_int(block_[d]);
                    epoch_ = 1;
                    shared_top_ = 0;
                    arena_.reset();
                    instances_.assign(1, Instance{nullptr, 0, 1});
                    exec(f_.body, all_);
                    flush();
                    ++res_.blocks_run;
                }
    } catch (const TooManyIssues&) {
        accesses_.clear();
    }
    for (auto& [key, c] : counters_) res_.counters.push_back(c);
}

}  // namespace

Result run(const ir::PrimFunc& f, interp::RunArgs& args, const Options& opt) {
    Result res;
    try {
        Executor ex(f, opt, res);
        ex.run(args);
    } catch (const Fatal& e) {
        res.ok = false;
        res.message = e.message;
        res.loc = e.loc;
    } catch (const interp::detail::InterpError& e) {
        res.ok = false;
        res.message = e.message;
        res.loc = e.loc;
    } catch (const std::exception& e) {
        res.ok = false;
        res.message = std::string("internal error in the simulator: ") + e.what();
    }
    return res;
}

}  // namespace tilec::sim
