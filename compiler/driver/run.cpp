// `tilec run` top to bottom: compile the chosen export, bind sizes and scalars, make the
// tensors, run the compiled kernel through the JIT, run the reference interpreter on the
// same inputs, compare, report. The compiled run is checked first (its status, guard
// bytes, untouched inputs) so a crash of the comparison never hides a kernel error.
#include "driver/run.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <functional>
#include <memory>
#include <new>
#include <set>
#include <sstream>

#include "driver/pipeline.h"
#include "driver/run_tensors.h"
#include "frontend/frontend.h"
#include "interp/interp.h"
#include "ir/pass.h"
#include "ir/printer.h"
#include "ir/size_rules.h"
#include "scalar/scalar.h"
#include "support/diagnostics.h"
#include "transform/simplify.h"
#ifdef TILEC_WITH_LLVM
#include "codegen/cpu_backend.h"
#include "codegen/cpu_jit.h"
#include "lower/gpu_passes.h"
#include "sim/sim.h"
#include "target/target.h"
#include "tile/runtime.h"
#endif

namespace tilec::driver {
namespace {

int option_error(const std::string& message) {
    std::cerr << "tilec: error: " << message << "\n";
    return 1;
}

#ifdef TILEC_WITH_LLVM
// The kinds of --sim-drop-sync=KIND:N, in the order its help and messages list them.
struct DropSyncKind {
    const char* name;
    sim::SyncKind kind;
};
constexpr DropSyncKind kDropSyncKinds[] = {
    {"barrier", sim::SyncKind::Barrier},           {"wait", sim::SyncKind::AsyncWait},
    {"wgmma_wait", sim::SyncKind::WgmmaWait},      {"mbarrier_wait", sim::SyncKind::MbarrierWait},
    {"fence_proxy_async", sim::SyncKind::ProxyFence}, {"bulk_wait_read", sim::SyncKind::BulkWaitRead},
    {"named_barrier", sim::SyncKind::NamedBarrier}, {"barrier_arrive", sim::SyncKind::BarrierArrive},
    {"cluster_wait", sim::SyncKind::ClusterWait},  {"remote_arrive", sim::SyncKind::RemoteArrive},
};

const DropSyncKind* find_drop_sync_kind(const std::string& name) {
    for (const auto& k : kDropSyncKinds)
        if (name == k.name) return &k;
    return nullptr;
}
using Clock = std::chrono::steady_clock;

// An estimate of the reference's time above this prints a note (and --no-reference).
constexpr double kSlowReferenceSeconds = 10.0;
// Tensors larger than this are refused (the reference keeps 8 bytes per element too).
constexpr double kMaxTensorBytes = 16.0 * (1ull << 30);
// tile_cpu_launch's limit on a grid's blocks (runtime/src/cpu_launch.cpp).
constexpr int64_t kMaxGridBlocks = int64_t{1} << 62;
// The most blocks the simulator and the reference interpreter run one by one (the
// interpreter's limit, interp.cpp); beyond it, --sim-blocks samples them.
constexpr int64_t kMaxBlocksOneByOne = int64_t{1} << 31;


std::string join(const std::vector<std::string>& items, const char* sep = ", ") {
    std::string out;
    for (auto& s : items) out += (out.empty() ? "" : sep) + s;
    return out;
}

std::string fmt_double(double v, const char* format = "%.3g") {
    char buf[64];
    std::snprintf(buf, sizeof buf, format, v);
    return buf;
}

// An element's value: integers exactly, floats with 9 digits, NaN without its sign.
std::string fmt_value(double v, ir::DataType t) {
    if (std::isnan(v)) return "NaN";
    if (!t.is_float() && std::isfinite(v)) return std::to_string(static_cast<long long>(v));
    return fmt_double(v, "%.9g");
}

std::string fmt_seconds(double s) {
    if (s < 1e-3) return fmt_double(s * 1e6, "%.1f us");
    if (s < 1.0) return fmt_double(s * 1e3, "%.3f ms");
    return fmt_double(s, "%.2f s");
}

std::string shape_str(ir::DataType t, const std::vector<int64_t>& shape) {
    std::string s = t.str() + "[";
    for (size_t k = 0; k < shape.size(); ++k) s += (k ? ", " : "") + std::to_string(shape[k]);
    return s + "]";
}

// The value of an integer expression of the sizes, or nullopt.
std::optional<int64_t> eval_index(const ir::Expr& e, const transform::RangeMap& known) {
    auto b = transform::bound_of(e, known);
    if (b.is_point()) return b.min;
    return ir::as_const_int(transform::simplify(e, known));
}

// A size expression's value in int64 as an entry point computes it: whether some step
// overflowed or divided by zero, or (known = false) whether it is not a function of the
// sizes at all.
struct SizeValue {
    int64_t value = 0;
    bool overflow = false;
    bool zero_divisor = false;
    bool known = true;
};

SizeValue eval_size(const ir::Expr& e, const std::map<const ir::VarNode*, int64_t>& sizes,
                    const transform::RangeMap& known) {
    SizeValue out;
    auto* bin = e->as<ir::BinaryNode>();
    if (auto* v = e->as<ir::VarNode>(); v && sizes.count(v)) {
        out.value = sizes.at(v);
    } else if (auto c = ir::as_const_int(e)) {
        out.value = *c;
    } else if (bin && e->type.is_int() && e->type.bits == 64) {
        SizeValue a = eval_size(bin->a, sizes, known), b = eval_size(bin->b, sizes, known);
        out.known = a.known && b.known;
        out.overflow = a.overflow || b.overflow;
        out.zero_divisor = a.zero_divisor || b.zero_divisor;
        switch (bin->op) {
        case ir::BinaryOp::Add: out.overflow |= __builtin_add_overflow(a.value, b.value, &out.value); break;
        case ir::BinaryOp::Sub: out.overflow |= __builtin_sub_overflow(a.value, b.value, &out.value); break;
        case ir::BinaryOp::Mul: out.overflow |= __builtin_mul_overflow(a.value, b.value, &out.value); break;
        case ir::BinaryOp::FloorDiv:
        case ir::BinaryOp::FloorMod:
            if (b.value == 0) {
                out.zero_divisor = true;
            } else if (a.value == INT64_MIN && b.value == -1) {
                out.overflow |= bin->op == ir::BinaryOp::FloorDiv;
            } else {
                out.value = bin->op == ir::BinaryOp::FloorDiv
                                ? scalar::floor_div_i64(a.value, b.value)
                                : a.value - scalar::floor_div_i64(a.value, b.value) * b.value;
            }
            break;
        default: {
            auto v = eval_index(e, known);
            out.known = v.has_value();
            out.value = v.value_or(0);
        }
        }
    } else {
        auto v = eval_index(e, known);
        out.known = v.has_value();
        out.value = v.value_or(0);
    }
    return out;
}

// The rules about sizes that NAME_cpu checks before running (codegen/entry_checks.h, in
// its order and words), checked before the tensors are allocated: the simulator runs no
// entry point, and neither can allocate what they refuse. Each error is at the tensor's
// or the kernel's declaration.
bool check_entry_sizes(const ir::PrimFunc& f, const std::map<const ir::VarNode*, int64_t>& sizes,
                       const transform::RangeMap& known, DiagnosticEngine& diags) {
    auto value = [&](const ir::Expr& e, const std::string& what, const std::string& why, SourceLoc loc,
                     int64_t& v) {
        SizeValue r = eval_size(e, sizes, known);
        if (!r.known)
            diags.error(loc, "cannot evaluate " + what + why + " from the sizes given");
        else if (r.zero_divisor)
            diags.error(loc, what + " divides by zero" + why);
        else if (r.overflow)
            diags.error(loc, what + " overflows int64" + why);
        v = r.value;
        return r.known && !r.zero_divisor && !r.overflow;
    };
    for (auto& p : f.params) {
        if (p.kind != ir::ParamKind::Tensor) continue;
        const ir::BufferNode& buf = *p.buffer;
        std::vector<int64_t> dims;
        for (size_t d = 0; d < buf.rank(); ++d) {
            const ir::Expr& e = buf.shape[d];
            std::string text = ir::print(e);
            std::string why = " (dimension " + std::to_string(d) + " of " + buf.name + " is " + text + ")";
            for (const ir::BinaryNode* div : ir::floor_divisions(e)) {
                std::string num_text = ir::print(div->a), den_text = ir::print(div->b);
                int64_t num = 0, den = 0;
                if (!value(div->a, num_text, why, buf.loc, num) ||
                    !value(div->b, den_text, why, buf.loc, den))
                    return false;
                std::string multiple =
                    num_text + " = " + std::to_string(num) + " must be a multiple of " +
                    (ir::as_const_int(div->b) ? den_text : den_text + " = " + std::to_string(den));
                if (den <= 0) {
                    diags.error(buf.loc, den_text + " = " + std::to_string(den) + " must be positive" + why);
                    return false;
                }
                if (num % den != 0) {
                    diags.error(buf.loc, multiple + why);
                    return false;
                }
            }
            int64_t v = 0;
            if (!value(e, text, why, buf.loc, v)) return false;
            if (v < 0) {
                diags.error(buf.loc, text + " = " + std::to_string(v) + " is negative" + why);
                return false;
            }
            dims.push_back(v);
        }
        int64_t bytes = std::max(1, buf.dtype.bits / 8);
        bool overflow = false, empty = false;
        for (int64_t d : dims) {
            overflow |= __builtin_mul_overflow(bytes, d, &bytes);
            empty |= d == 0;
        }
        if (overflow && !empty) {
            diags.error(buf.loc, "tensor " + buf.name + " " + shape_str(buf.dtype, dims) +
                                     " has more bytes than int64 can count");
            return false;
        }
    }
    static const char* axis[3] = {"x", "y", "z"};
    for (size_t d = 0; d < f.grid.size() && d < 3; ++d) {
        std::string what = std::string("the grid's ") + axis[d] + " extent (" + ir::print(f.grid[d]) + ")";
        int64_t v = 0;
        if (!value(f.grid[d], what, "", f.loc, v)) return false;
        if (v < 0) {
            diags.error(f.loc, what + " = " + std::to_string(v) + " is negative");
            return false;
        }
    }
    return true;
}

bool is_var(const ir::Expr& e, const ir::VarNode* v) {
    auto* node = e->as<ir::VarNode>();
    return node && node == v;
}

// Parses a whole string as a number; false if anything is left over.
bool parse_double(const std::string& s, double& out) {
    try {
        size_t used = 0;
        out = std::stod(s, &used);
        return used == s.size();
    } catch (...) {
        return false;
    }
}
bool parse_int(const std::string& s, int64_t& out) {
    try {
        size_t used = 0;
        out = std::stoll(s, &used, 0);
        return used == s.size();
    } catch (...) {
        return false;
    }
}

struct BoundScalar {
    const ir::Param* param = nullptr;
    double value = 0;     // as the interpreter takes it
    uint64_t c_slot = 0;  // the C argument's bytes (c_scalar_type)
    bool defaulted = false;
};

// `text` as a value of scalar type t; the C argument in `slot`. "" on success.
std::string bind_scalar(const std::string& name, const std::string& text, ir::DataType t, BoundScalar& out) {
    auto put = [&](auto v) {
        static_assert(sizeof(v) <= sizeof(out.c_slot));
        std::memcpy(&out.c_slot, &v, sizeof(v));
    };
    if (t.is_bool()) {
        bool v;
        if (text == "true" || text == "1")
            v = true;
        else if (text == "false" || text == "0")
            v = false;
        else
            return "--scalar " + name + "=" + text + ": expected true or false (" + name + " is bool)";
        out.value = v;
        put(static_cast<int32_t>(v));
        return "";
    }
    if (t.is_integer()) {
        int64_t v;
        if (!parse_int(text, v))
            return "--scalar " + name + "=" + text + ": expected an integer (" + name + " is " + t.str() +
                   ")";
        if (t.bits < 64 && (v < t.min_value() || v > t.max_value()))
            return "--scalar " + name + "=" + text + ": out of the range of " + t.str() + " [" +
                   std::to_string(t.min_value()) + ", " + std::to_string(t.max_value()) + "]";
        if (t.is_uint() && v < 0) return "--scalar " + name + "=" + text + ": " + t.str() + " is unsigned";
        out.value = static_cast<double>(v);
        switch (t.bits) {
        case 4:
        case 8: put(static_cast<int8_t>(v)); break;
        case 16: put(static_cast<int16_t>(v)); break;
        case 32: put(static_cast<int32_t>(v)); break;
        default: put(v); break;
        }
        return "";
    }
    double v;
    if (!parse_double(text, v))
        return "--scalar " + name + "=" + text + ": expected a number (" + name + " is " + t.str() + ")";
    if (t.kind == ir::TypeKind::Float && t.bits == 64) {
        out.value = v;
        put(v);
    } else {
        // The entry point takes a float (and rounds it to narrower types itself).
        float f = static_cast<float>(v);
        out.value = f;
        put(f);
    }
    return "";
}

// One tensor parameter and its memory.
struct BoundTensor {
    const ir::Param* param = nullptr;
    HostTensor host;
};

// A compiled kernel that goes wrong (an access far out of bounds: the code does not check
// them, the reference does) must not look like a crash of tilec, nor take tilec with it:
// a write far out of bounds that lands in tilec's heap would only show later, as a
// "double free" or a crash anywhere. So the kernel runs in a child process, on tensors
// in memory shared with tilec (SharedTensors), and tilec reads what happened from the
// child's exit (run_isolated).

// Each tensor's bytes (its span, then the guard) in a shared mapping of their own,
// followed by an inaccessible page, so that a write past the guard faults in the child
// rather than reaching another tensor.
class SharedTensors {
public:
    explicit SharedTensors(std::vector<BoundTensor>& tensors) : tensors_(tensors) {
        const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
        for (auto& t : tensors) {
            size_t bytes = t.host.bytes.size();
            size_t mapped = (bytes + page - 1) / page * page + page;
            void* p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
            if (p == MAP_FAILED) {
                ok_ = false;
                return;
            }
            maps_.push_back({static_cast<unsigned char*>(p), mapped});
            mprotect(static_cast<unsigned char*>(p) + mapped - page, page, PROT_NONE);
            if (bytes) std::memcpy(p, t.host.bytes.data(), bytes);
        }
    }
    ~SharedTensors() {
        for (auto& m : maps_) munmap(m.first, m.second);
    }
    SharedTensors(const SharedTensors&) = delete;
    SharedTensors& operator=(const SharedTensors&) = delete;

    bool ok() const { return ok_; }
    void* data(size_t i) { return maps_.at(i).first; }
    // What the kernel left in the shared memory, back into the tensors.
    void copy_back() {
        for (size_t i = 0; i < maps_.size(); ++i)
            if (!tensors_[i].host.bytes.empty())
                std::memcpy(tensors_[i].host.bytes.data(), maps_[i].first, tensors_[i].host.bytes.size());
    }

private:
    std::vector<BoundTensor>& tensors_;
    std::vector<std::pair<unsigned char*, size_t>> maps_;
    bool ok_ = true;
};

// What a child process that ran the compiled entry reports.
struct IsolatedRun {
    int signal = 0;     // the signal that ended the child, or 0
    int exit_code = 0;  // its exit status when no signal ended it (0: it reported)
    int status = 0;     // the first failing call's tile_status, or 0
    int failed_run = 0; // which call failed (0-based)
    double best = 0;    // the fastest call's seconds
    std::string message;  // tile_last_error() of the failing call
};

// Why a child died, in words.
std::string signal_words(int sig) {
    switch (sig) {
    case SIGSEGV: return "SIGSEGV, a bad memory access";
    case SIGBUS: return "SIGBUS, a bad memory access";
    case SIGFPE: return "SIGFPE, an arithmetic trap";
    case SIGILL: return "SIGILL, an illegal instruction";
    case SIGABRT: return "SIGABRT, an abort, such as the C library finding its heap corrupted";
    default: return "signal " + std::to_string(sig);
    }
}

// Runs the compiled entry once; returns its status and the wall time.
int call_entry(codegen::PackedEntry entry, const tile_cpu_options& opt, const std::vector<void*>& args,
               double& seconds) {
    auto t0 = Clock::now();
    int status = entry(&opt, args.data());
    seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    return status;
}

// Calls the compiled entry `runs` times in a child process (stopping at the first
// failure) and reports how that went; tensors must be in SharedTensors' memory.
IsolatedRun run_isolated(codegen::PackedEntry entry, const tile_cpu_options& opt, const std::vector<void*>& args,
                         int runs) {
    struct Report {
        int status;
        int failed_run;
        double best;
        char message[2048];
    };
    IsolatedRun out;
    void* mem = mmap(nullptr, sizeof(Report), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) {
        out.exit_code = -1;
        return out;
    }
    auto* report = new (mem) Report{0, 0, 0.0, {0}};
    std::cout.flush();
    std::fflush(nullptr);  // or the child would write what is buffered a second time
    pid_t pid = fork();
    if (pid == 0) {
        double best = 0;
        for (int r = 0; r < runs; ++r) {
            double s = 0;
            tile_clear_error();
            int status = call_entry(entry, opt, args, s);
            if (status != 0) {
                report->status = status;
                report->failed_run = r;
                std::snprintf(report->message, sizeof report->message, "%s", tile_last_error());
                break;
            }
            best = r == 0 ? s : std::min(best, s);
        }
        report->best = best;
        std::fflush(nullptr);
        _exit(0);
    }
    int ws = 0;
    if (pid < 0) {
        out.exit_code = -1;
    } else {
        while (waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
        }
        if (WIFSIGNALED(ws))
            out.signal = WTERMSIG(ws);
        else
            out.exit_code = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
    }
    out.status = report->status;
    out.failed_run = report->failed_run;
    out.best = report->best;
    out.message = report->message;
    munmap(mem, sizeof(Report));
    return out;
}

// The verdict on a child that did not report (crashed, or could not be started); 0 when
// it reported.
int isolated_failure(const IsolatedRun& run, const std::string& entry_name) {
    if (run.signal) {
        std::cerr << "tilec: error: the compiled kernel crashed in " << entry_name << " ("
                  << signal_words(run.signal)
                  << "); the reference interpreter, which checks every access, was not run\n";
        return 1;
    }
    if (run.exit_code != 0) {
        std::cerr << "tilec: error: cannot run " << entry_name << " in a process of its own: "
                  << (run.exit_code < 0 ? std::string(std::strerror(errno))
                                        : "it exited with status " + std::to_string(run.exit_code))
                  << "\n";
        return 1;
    }
    return 0;
}

using BlockList = std::vector<std::array<int64_t, 3>>;

// --sim-blocks N: N blocks spread over the grid in linear order (x fastest): the first,
// the last and evenly spaced ones between, so both edges of a ragged grid are seen.
// Empty when every block runs (N is 0 or covers the grid). A list, not a filter asked
// about every block, so that the cost does not grow with the grid. `total` is the
// product of `dims` (the caller checked it).
BlockList sample_blocks(const std::array<int64_t, 3>& dims, int64_t total, int64_t n) {
    if (n <= 0 || n >= total) return {};
    BlockList picked;
    for (int64_t k = 0; k < n; ++k) {
        int64_t linear = n == 1 ? 0 : static_cast<int64_t>(static_cast<__int128>(k) * (total - 1) / (n - 1));
        if (!picked.empty()) {
            auto& last = picked.back();
            if (last[0] + dims[0] * (last[1] + dims[1] * last[2]) == linear) continue;
        }
        picked.push_back({linear % dims[0], linear / dims[0] % dims[1], linear / (dims[0] * dims[1])});
    }
    return picked;
}

// --target=sim:ARCH: lowers `f` to thread level for ARCH, runs it in the simulator on
// the tensors' current contents, prints its checks' findings (as errors at their source
// lines) and, with --profile, its memory counters. `results` gets what the kernel wrote
// (the poison where it did not), `problems` a line when a check fired. Returns 0, or
// the exit status of a failure that ends the run (the lowering refused the kernel, the
// simulator could not run it).
int run_in_simulator(const ir::PrimFunc& f, const target::GpuTarget& gpu, const RunOptions& options,
                     const SourceManager& sources, DiagnosticEngine& diags, const std::vector<BoundTensor>& tensors,
                     const std::vector<int64_t>& size_values, const std::vector<BoundScalar>& scalars,
                     const BlockList& sampled, int64_t grid_blocks, std::vector<HostTensor>& results,
                     std::vector<std::string>& problems) {
    auto l0 = Clock::now();
    auto thread = lower::lower_to_thread_level(f, gpu, &diags);  // verify-thread-level included
    if (!thread || diags.has_errors()) return 1;
    if (options.sim_drop_barriers) *thread = sim::drop_barriers(*thread);
    if (!options.sim_drop_sync.empty()) {
        const std::string& d = options.sim_drop_sync;
        const std::string kind_name = d.substr(0, d.find(':'));
        const sim::SyncKind kind = find_drop_sync_kind(kind_name)->kind;  // checked by run_kernel
        auto dropped = sim::drop_sync(*thread, kind, std::stoll(d.substr(d.find(':') + 1)));
        if (!dropped) {
            std::cerr << "tilec run: error: --sim-drop-sync=" << d << ": '" << f.name << "' has no such "
                      << (kind_name == "wait" ? std::string("cp_async_wait") : kind_name) << " for " << gpu.name << "\n";
            return 1;
        }
        *thread = *dropped;
    }
    double lower_seconds = std::chrono::duration<double>(Clock::now() - l0).count();

    interp::RunArgs sa;
    for (auto& t : tensors) sa.tensors.push_back(t.host.to_interp());
    sa.sizes = size_values;
    for (auto& s : scalars) sa.scalars.push_back(s.value);
    sim::Options so;
    so.target = &gpu;
    so.blocks = sampled;
    auto s0 = Clock::now();
    sim::Result sr = sim::run(*thread, sa, so);
    double sim_seconds = std::chrono::duration<double>(Clock::now() - s0).count();
    if (!sr.ok) {
        std::string msg = "the simulator failed: " + sr.message;
        if (sr.loc.valid() && sr.loc.file != 0)
            diags.error(SourceRange(sr.loc), msg);
        else
            std::cerr << "tilec: error: " << msg << "\n";
        return 1;
    }
    std::cout << "lower to thread level (" << gpu.name << "): " << fmt_seconds(lower_seconds) << "\n";
    std::cout << "simulator: " << fmt_seconds(sim_seconds) << " (" << sr.blocks_run
              << (sr.blocks_run == 1 ? " block" : " blocks") << " of " << thread->threads << " threads, warp "
              << sr.warp_size;
    if (!sampled.empty()) std::cout << "; sampled from the grid's " << grid_blocks << " by --sim-blocks";
    std::cout << ")" << std::endl;
    // The findings, as errors at their lines (each site once, with its count).
    try {
        for (auto& is : sr.issues) {
            std::string msg = std::string("simulator: ") + issue_kind_name(is.kind) + ": " + is.message + " (block " +
                              std::to_string(is.block[0]) + ", " + std::to_string(is.block[1]) + ", " +
                              std::to_string(is.block[2]) + ", thread " + std::to_string(is.thread) + ")" +
                              (is.count > 1 ? ", " + std::to_string(is.count) + " times" : std::string());
            if (is.loc.valid() && is.loc.file != 0)
                diags.error(SourceRange(is.loc), msg);
            else
                std::cerr << "tilec: error: " << msg << "\n";
        }
    } catch (const ErrorLimitReached&) {
    }
    if (!sr.issues.empty())
        problems.push_back("the simulator's checks found " + std::to_string(sr.issues.size()) +
                           (sr.issues.size() == 1 ? " problem" : " problems") + " (" +
                           std::to_string(sr.total_issues) + " occurrences), reported above");
    if (options.profile) std::cout << sim::format_counters(sr, &sources);

    // What the kernel stored, over the poisoned memory; inputs are never written (a
    // store into one is a finding, and is dropped).
    for (size_t i = 0; i < tensors.size(); ++i) {
        const HostTensor& t = tensors[i].host;
        if (t.access == ir::Access::In) continue;
        HostTensor got = t;
        if (t.access == ir::Access::Out) got.poison();
        const auto& arg = sa.tensors[i];
        const auto& written = sr.written[i];
        for (int64_t off = 0; off < t.span && static_cast<size_t>(off) < written.size(); ++off) {
            if (!written[static_cast<size_t>(off)]) continue;
            if (t.dtype.is_float())
                got.set_float(off, arg.data[static_cast<size_t>(off)]);
            else
                got.set_int(off, arg.ints.empty() ? static_cast<int64_t>(arg.data[static_cast<size_t>(off)])
                                                  : arg.ints[static_cast<size_t>(off)]);
        }
        results.push_back(std::move(got));
    }
    return 0;
}

#endif  // TILEC_WITH_LLVM

}  // namespace

int run_kernel(const RunOptions& options) {
#ifndef TILEC_WITH_LLVM
    (void)options;
    return option_error(
        "tilec run needs the CPU backend, which this tilec was built without "
        "(configure it with -DTILEC_WITH_LLVM=ON)");
#else
    // The targets, in the order given: nullptr is the host (the JIT), else sim:ARCH (the
    // simulator of ARCH's thread-level IR). Several run on the same inputs against one
    // reference run, so that comparing targets costs one compile of the file.
    std::vector<const target::GpuTarget*> run_targets;
    std::vector<std::string> target_names;
    const target::GpuTarget* sim_target = nullptr;  // a simulator target, if any
    for (auto& t : options.targets) {
        const target::GpuTarget* gpu = nullptr;
        if (const target::Target* row = target::find_target(t); row && row->is_host()) {
        } else if (t.rfind("sim:", 0) == 0 && (gpu = target::find_gpu_target(t.substr(4)))) {
            sim_target = gpu;
        } else if (t.rfind("sim:", 0) == 0) {
            std::vector<std::string> known;
            for (auto& g : target::gpu_targets()) known.push_back("sim:" + g.name);
            return option_error("--target=" + t + ": no GPU architecture '" + t.substr(4) +
                                "' (known: " + join(known) + ")");
        } else {
            return option_error("--target=" + t +
                                ": tilec run runs kernels on the host CPU only (--target=host) or in the GPU "
                                "simulator (--target=sim:ARCH, e.g. sim:" + t + ")");
        }
        std::string name = gpu ? "sim:" + gpu->name : "host";
        if (std::find(target_names.begin(), target_names.end(), name) != target_names.end())
            return option_error("--target=" + join(options.targets, ",") + ": " + name + " is given twice");
        run_targets.push_back(gpu);
        target_names.push_back(name);
    }
    if (run_targets.empty()) {
        run_targets.push_back(nullptr);
        target_names.push_back("host");
    }
    const bool several_targets = run_targets.size() > 1;
    if (options.profile && !sim_target)
        return option_error("--profile needs the simulator (--target=sim:ARCH, e.g. sim:sm_80)");
    if (!options.sim_drop_sync.empty()) {
        if (!sim_target) return option_error("--sim-drop-sync needs the simulator (--target=sim:ARCH)");
        const std::string& d = options.sim_drop_sync;
        size_t colon = d.find(':');
        std::string kind = d.substr(0, colon), n = colon == std::string::npos ? "" : d.substr(colon + 1);
        bool digits = !n.empty() && n.size() <= 9 && n.find_first_not_of("0123456789") == std::string::npos;
        if (!find_drop_sync_kind(kind) || !digits) {
            std::string kinds;
            const size_t n_kinds = std::size(kDropSyncKinds);
            for (size_t i = 0; i < n_kinds; ++i)
                kinds += std::string(i == 0 ? "" : i + 1 == n_kinds ? " or " : ", ") + kDropSyncKinds[i].name + ":N";
            return option_error("--sim-drop-sync takes " + kinds + " (N a count from 0), not '" + d + "'");
        }
    }
    if (options.sim_drop_barriers && !sim_target)
        return option_error("--sim-drop-barriers needs the simulator (--target=sim:ARCH)");
    if (options.sim_blocks != 0 && !sim_target)
        return option_error("--sim-blocks needs the simulator (--target=sim:ARCH)");
    if (options.sim_blocks < 0) return option_error("--sim-blocks must be at least 1 (0: every block)");
    // The reference runs the sampled blocks only; the host runs every block, whose other
    // elements would then differ from the reference's unwritten ones.
    if (options.sim_blocks != 0 && several_targets &&
        std::find(run_targets.begin(), run_targets.end(), nullptr) != run_targets.end())
        return option_error("--sim-blocks samples the simulator's blocks, but the host runs every block: "
                            "run the host apart from the sim:ARCH targets");
    if (options.repeat < 1) return option_error("--repeat must be at least 1");
    if (options.threads < 0) return option_error("--threads must be 0 (the runtime's default) or more");
    if ((options.rtol && *options.rtol < 0) || (options.atol && *options.atol < 0))
        return option_error("--rtol and --atol must not be negative");

    SourceManager sources;
    DiagnosticEngine diags(sources, std::cerr);
    diags.set_color(options.color);
    diags.set_error_limit(options.error_limit);

    // 1. Compile the file to Tile IR and pick the export.
    frontend::FrontendOptions fopt;
    fopt.import_paths = options.include_dirs;
    fopt.stdlib_dir = options.stdlib_dir;
    fopt.defines = options.defines;
    ir::PrimFunc func;
    try {
        auto program = frontend::load_program({options.input}, fopt, sources, diags);
        if (!program) return 1;
        ir::Module module = frontend::elaborate(*program, fopt, sources, diags);
        if (diags.has_errors()) return 1;
        std::vector<std::string> names;
        for (auto& f : module.funcs) names.push_back(f.name);
        const ir::PrimFunc* chosen = nullptr;
        if (options.kernel.empty()) {
            if (module.funcs.size() != 1)
                return option_error(module.funcs.empty()
                                        ? options.input + " has no export to run"
                                        : options.input + " has " + std::to_string(module.funcs.size()) +
                                              " exports; choose one with --kernel NAME: " + join(names));
            chosen = &module.funcs.front();
        } else {
            for (auto& f : module.funcs)
                if (f.name == options.kernel) chosen = &f;
            if (!chosen)
                return option_error("--kernel " + options.kernel + ": " + options.input +
                                    " has no export of that name (exports: " +
                                    (names.empty() ? std::string("none") : join(names)) + ")");
        }
        ir::PassManager pm;
        add_tile_passes(pm);
        ir::PassContext ctx;
        ctx.diag = &diags;
        auto lowered = pm.run(*chosen, ctx);
        if (!lowered || diags.has_errors()) return 1;
        func = std::move(*lowered);
    } catch (const ErrorLimitReached&) {
        return 1;
    }
    const ir::PrimFunc& f = func;

    // 2. Sizes: from --size; a size used only as a whole stride may be left out and is
    // then the row-major stride of that dimension.
    std::vector<const ir::Param*> size_params, scalar_params, tensor_params;
    for (auto& p : f.params)
        (p.kind == ir::ParamKind::Size     ? size_params
         : p.kind == ir::ParamKind::Scalar ? scalar_params
                                           : tensor_params)
            .push_back(&p);
    std::vector<std::string> size_names;
    for (auto* p : size_params) size_names.push_back(p->var->name);
    std::map<std::string, int64_t> given;
    for (auto& [name, value] : options.sizes) {
        bool known = std::any_of(size_params.begin(), size_params.end(),
                                 [&](const ir::Param* p) { return p->var->name == name; });
        if (!known)
            return option_error(
                "--size " + name + "=" + std::to_string(value) + ": " + f.name + " has no size " + name +
                (size_names.empty() ? " (it takes no sizes)" : " (its sizes: " + join(size_names) + ")"));
        if (given.count(name)) return option_error("--size " + name + " is given twice");
        if (value < 0)
            return option_error("--size " + name + "=" + std::to_string(value) + ": sizes are >= 0");
        given[name] = value;
    }
    transform::RangeMap known;
    std::vector<int64_t> size_values(size_params.size(), 0);
    std::vector<bool> size_set(size_params.size(), false);
    for (size_t i = 0; i < size_params.size(); ++i) {
        auto it = given.find(size_params[i]->var->name);
        if (it == given.end()) continue;
        size_values[i] = it->second;
        size_set[i] = true;
        known.set(size_params[i]->var, transform::Interval::point(it->second));
    }
    std::vector<std::string> defaulted_sizes, missing;
    for (size_t i = 0; i < size_params.size(); ++i) {
        if (size_set[i]) continue;
        const ir::VarNode* v = size_params[i]->var.get();
        for (auto* t : tensor_params) {
            auto& buf = *t->buffer;
            for (size_t d = 0; d < buf.strides.size() && !size_set[i]; ++d) {
                if (!is_var(buf.strides[d], v)) continue;
                int64_t stride = 1;
                bool ok = true;
                for (size_t k = d + 1; k < buf.rank() && ok; ++k) {
                    auto e = eval_index(buf.shape[k], known);
                    ok = e.has_value();
                    if (ok) stride *= *e;
                }
                if (!ok) continue;
                size_values[i] = stride;
                size_set[i] = true;
                known.set(size_params[i]->var, transform::Interval::point(stride));
                defaulted_sizes.push_back(v->name);
            }
        }
        if (!size_set[i]) missing.push_back(v->name);
    }
    if (!missing.empty()) {
        std::vector<std::string> example;
        for (size_t i = 0; i < size_params.size(); ++i)
            if (!size_set[i] || given.count(size_params[i]->var->name))
                example.push_back(size_params[i]->var->name + "=" +
                                  (size_set[i] ? std::to_string(size_values[i]) : std::string("64")));
        return option_error("missing --size for " + join(missing) + ": " + f.name + " takes the sizes " +
                            join(size_names) + ", e.g. --size " + join(example, ","));
    }

    // 3. Scalars: from --scalar, else 1 (floats 1.0, integers 1, bool true).
    std::vector<std::string> scalar_names;
    for (auto* p : scalar_params) scalar_names.push_back(p->var->name);
    std::map<std::string, std::string> scalar_text;
    for (auto& [name, text] : options.scalars) {
        bool known_name = std::find(scalar_names.begin(), scalar_names.end(), name) != scalar_names.end();
        if (!known_name)
            return option_error("--scalar " + name + "=" + text + ": " + f.name + " has no scalar " + name +
                                (scalar_names.empty() ? " (it takes no scalars)"
                                                      : " (its scalars: " + join(scalar_names) + ")"));
        if (scalar_text.count(name)) return option_error("--scalar " + name + " is given twice");
        scalar_text[name] = text;
    }
    std::vector<BoundScalar> scalars;
    for (auto* p : scalar_params) {
        BoundScalar s;
        s.param = p;
        auto it = scalar_text.find(p->var->name);
        s.defaulted = it == scalar_text.end();
        ir::DataType t = p->var->type;
        std::string text = !s.defaulted ? it->second : t.is_bool() ? "true" : "1";
        std::string err = bind_scalar(p->var->name, text, t, s);
        if (!err.empty()) return option_error(err);
        scalars.push_back(s);
    }

    // 4. Tensors: shapes and strides from the sizes, seeded contents; outputs poisoned.
    {
        std::map<const ir::VarNode*, int64_t> by_var;
        for (size_t i = 0; i < size_params.size(); ++i) by_var[size_params[i]->var.get()] = size_values[i];
        if (!check_entry_sizes(f, by_var, known, diags)) return 1;
    }
    // --int-range: integer inputs drawn from [LO, HI] instead (index tensors).
    std::map<std::string, std::pair<int64_t, int64_t>> int_ranges;
    for (auto& [name, text] : options.int_ranges) {
        const ir::BufferNode* buf = nullptr;
        std::vector<std::string> int_inputs;
        for (auto* p : tensor_params) {
            const auto& b = *p->buffer;
            bool int_input = b.access != ir::Access::Out && !b.dtype.is_float() && !b.dtype.is_bool();
            if (int_input) int_inputs.push_back(b.name);
            if (b.name == name) buf = p->buffer.get();
        }
        std::string what = "--int-range " + name + "=" + text + ": ";
        if (!buf || buf->access == ir::Access::Out || buf->dtype.is_float() || buf->dtype.is_bool())
            return option_error(what + f.name + " has no integer input tensor " + name +
                                (int_inputs.empty() ? " (it takes none)" : " (its integer inputs: " + join(int_inputs) + ")"));
        if (int_ranges.count(name)) return option_error("--int-range " + name + " is given twice");
        auto colon = text.find(':');
        int64_t lo = 0, hi = 0;
        bool ok = colon != std::string::npos;
        if (ok) {
            try {
                size_t u1 = 0, u2 = 0;
                std::string a = text.substr(0, colon), b = text.substr(colon + 1);
                lo = std::stoll(a, &u1, 10);
                hi = std::stoll(b, &u2, 10);
                ok = u1 == a.size() && u2 == b.size();
            } catch (...) {
                ok = false;
            }
        }
        if (!ok) return option_error(what + "expected LO:HI, two integers, e.g. " + name + "=0:7");
        if (lo > hi) return option_error(what + "LO is above HI");
        if (lo < buf->dtype.min_value() || hi > buf->dtype.max_value())
            return option_error(what + "outside the range of " + buf->dtype.str() + " [" +
                                std::to_string(buf->dtype.min_value()) + ", " + std::to_string(buf->dtype.max_value()) +
                                "]");
        int_ranges[name] = {lo, hi};
    }
    std::vector<BoundTensor> tensors;
    SplitMix64 rng(options.seed);
    for (auto* p : tensor_params) {
        auto& buf = *p->buffer;
        std::vector<int64_t> shape, strides;
        for (size_t d = 0; d < buf.rank(); ++d) {
            auto e = eval_index(buf.shape[d], known);
            if (!e) return option_error("cannot evaluate dimension " + std::to_string(d) + " of " + buf.name);
            if (*e < 0)
                return option_error("dimension " + std::to_string(d) + " of " + buf.name + " is " +
                                    std::to_string(*e) + " with these sizes; choose sizes that make it >= 0");
            shape.push_back(*e);
        }
        if (buf.strides.empty()) {
            strides.assign(buf.rank(), 1);
            for (size_t d = buf.rank(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
        } else {
            for (size_t d = 0; d < buf.rank(); ++d) {
                auto e = eval_index(buf.strides[d], known);
                if (!e)
                    return option_error("cannot evaluate stride " + std::to_string(d) + " of " + buf.name);
                if (*e < 0)
                    return option_error("stride " + std::to_string(d) + " of " + buf.name + " is " +
                                        std::to_string(*e) + "; tilec run needs strides >= 0");
                strides.push_back(*e);
            }
        }
        // The bytes, before allocating them (an absurd size is a user error, not a crash).
        double span = 1;
        for (size_t d = 0; d < shape.size(); ++d) span += static_cast<double>(shape[d] - 1) * strides[d];
        double elements = 1;
        for (auto s : shape) elements *= static_cast<double>(s);
        if (elements > 0 && span * std::max(1.0, buf.dtype.bits / 8.0) > kMaxTensorBytes)
            return option_error(
                buf.name + " " + shape_str(buf.dtype, shape) + " needs " +
                fmt_double(span * std::max(1.0, buf.dtype.bits / 8.0) / (1ull << 30), "%.1f") +
                " GiB; tilec run allocates at most 16 GiB per tensor");
        BoundTensor t;
        t.param = p;
        t.host.name = buf.name;
        t.host.dtype = buf.dtype;
        t.host.access = buf.access;
        t.host.allocate(shape, strides);
        if (auto r = int_ranges.find(buf.name); r != int_ranges.end())
            t.host.fill_random_ints(rng, r->second.first, r->second.second);
        else if (buf.access != ir::Access::Out)
            t.host.fill_random(rng);
        tensors.push_back(std::move(t));
    }

    // What runs, before running it.
    std::ostringstream head;
    {
        std::vector<std::string> sz, sc;
        for (size_t i = 0; i < size_params.size(); ++i) {
            std::string n = size_params[i]->var->name;
            bool dflt = std::find(defaulted_sizes.begin(), defaulted_sizes.end(), n) != defaulted_sizes.end();
            sz.push_back(n + "=" + std::to_string(size_values[i]) + (dflt ? " (row-major stride)" : ""));
        }
        for (auto& s : scalars) {
            ir::DataType t = s.param->var->type;
            std::string v = t.is_bool()    ? (s.value != 0 ? "true" : "false")
                            : t.is_float() ? fmt_double(s.value, "%.9g")
                                           : std::to_string(static_cast<int64_t>(s.value));
            sc.push_back(s.param->var->name + "=" + v + (s.defaulted ? " (default)" : ""));
        }
        std::cout << "kernel: " << f.name << " (" << options.input << ")\n"
                  << "sizes: " << (sz.empty() ? "(none)" : join(sz)) << "\n"
                  << "scalars: " << (sc.empty() ? "(none)" : join(sc)) << "\n"
                  << "seed: " << options.seed << "\n";
        std::cout.flush();
    }

    // The reference's inputs are the values in memory now, before the kernel writes.
    std::vector<interp::TensorArg> ref_tensors;
    if (options.reference)
        for (auto& t : tensors) ref_tensors.push_back(t.host.to_interp());
    std::vector<std::vector<unsigned char>> inputs_before;
    for (auto& t : tensors)
        inputs_before.push_back(t.host.access == ir::Access::In ? t.host.bytes
                                                                : std::vector<unsigned char>{});

    std::array<int64_t, 3> grid_dims{1, 1, 1};
    for (size_t d = 0; d < f.grid.size() && d < 3; ++d) grid_dims[d] = eval_index(f.grid[d], known).value_or(1);
    // As tile_cpu_launch refuses (its block counters), and before anything loops over them.
    int64_t grid_blocks = 0;
    if (__builtin_mul_overflow(grid_dims[0], grid_dims[1], &grid_blocks) ||
        __builtin_mul_overflow(grid_blocks, grid_dims[2], &grid_blocks) || grid_blocks > kMaxGridBlocks) {
        diags.error(f.loc, "the grid (" + std::to_string(grid_dims[0]) + ", " + std::to_string(grid_dims[1]) + ", " +
                               std::to_string(grid_dims[2]) + ") has more than 2^62 blocks");
        return 1;
    }
    const BlockList sample = sample_blocks(grid_dims, grid_blocks, options.sim_blocks);
    const bool sampled = !sample.empty();
    // The simulator and the reference run blocks one after another: a grid beyond 2^31
    // of them would take years, and the reference refuses it.
    if (sim_target && !sampled && grid_blocks > kMaxBlocksOneByOne) {
        diags.error(f.loc, "the grid has " + std::to_string(grid_blocks) +
                               " blocks, more than the simulator runs one by one (2^31); sample some with "
                               "--sim-blocks N");
        return 1;
    }

    // 5.-6. The host: compile and run through the JIT. `results` gets what the kernel
    // wrote (per in-out and out tensor), `problems` a line per check that fired.
    auto run_on_host = [&](std::vector<HostTensor>& results, std::vector<std::string>& problems) -> int {
        // 5. Compile for the host and load the object.
        auto c0 = Clock::now();
        ir::Module one;
        one.funcs.push_back(f);
        codegen::CpuOptions copt;
        auto slash = options.input.find_last_of('/');
        copt.source_name = slash == std::string::npos ? options.input : options.input.substr(slash + 1);
        copt.sources = &sources;
        auto object = codegen::compile_cpu(one, codegen::CpuOutput::Object, copt, diags);
        if (!object) return 1;
        std::string error;
        auto jit = codegen::CpuJit::load(*object, error);
        codegen::PackedEntry entry = jit ? jit->packed_entry(f, error) : nullptr;
        if (!entry) return option_error(error);
        double compile_seconds = std::chrono::duration<double>(Clock::now() - c0).count();

        // 6. The compiled kernel: one checked run, then timed runs on the same buffers.
        // args[i] points at parameter i's C value (tensors: at the data pointer).
        std::vector<void*> args(f.params.size(), nullptr);
        std::vector<int64_t> size_args(f.params.size(), 0);
        std::vector<void*> tensor_ptrs(f.params.size(), nullptr);
        {
            size_t si = 0, ci = 0, ti = 0;
            for (size_t i = 0; i < f.params.size(); ++i) {
                switch (f.params[i].kind) {
                case ir::ParamKind::Size:
                    size_args[i] = size_values[si++];
                    args[i] = &size_args[i];
                    break;
                case ir::ParamKind::Scalar: args[i] = &scalars[ci++].c_slot; break;
                case ir::ParamKind::Tensor:
                    tensor_ptrs[i] = tensors[ti++].host.data();
                    args[i] = &tensor_ptrs[i];
                    break;
                }
            }
        }
        tile_cpu_options copts = TILE_CPU_OPTIONS_INIT;
        copts.num_threads = options.threads;
        SharedTensors shared(tensors);
        if (!shared.ok()) return option_error("cannot map shared memory for the tensors");
        for (size_t i = 0, ti = 0; i < f.params.size(); ++i)
            if (f.params[i].kind == ir::ParamKind::Tensor) tensor_ptrs[i] = shared.data(ti++);
        const std::string entry_name = codegen::cpu_entry_name(f);
        IsolatedRun first = run_isolated(entry, copts, args, 1);
        if (int rc = isolated_failure(first, entry_name)) return rc;
        if (first.status != 0) {
            std::cerr << "tilec: error: " << entry_name << " failed ("
                      << tile_status_string(static_cast<tile_status>(first.status)) << "): " << first.message << "\n";
            return 1;
        }
        shared.copy_back();
        for (size_t i = 0; i < tensors.size(); ++i) {
            auto& t = tensors[i].host;
            if (!t.guard_intact())
                problems.push_back("the compiled kernel wrote past the end of " + t.name + " (" +
                                   shape_str(t.dtype, t.shape) + ")");
            if (t.access == ir::Access::In &&
                !std::equal(t.bytes.begin(), t.bytes.begin() + static_cast<long>(t.data_bytes()),
                            inputs_before[i].begin()))
                problems.push_back("the compiled kernel changed the input tensor " + t.name);
        }
        // What the checked run wrote; the timed runs write again.
        for (auto& t : tensors)
            if (t.host.access != ir::Access::In) results.push_back(t.host);
        double best = first.best;
        if (options.repeat > 1) {
            IsolatedRun timed = run_isolated(entry, copts, args, options.repeat - 1);
            if (int rc = isolated_failure(timed, entry_name)) return rc;
            if (timed.status != 0) {
                std::cerr << "tilec: error: " << entry_name << " failed on run " << timed.failed_run + 2 << " ("
                          << tile_status_string(static_cast<tile_status>(timed.status)) << "): " << timed.message
                          << "\n";
                return 1;
            }
            best = std::min(best, timed.best);
        }

        // The compiled kernel's times now: the reference may take a while.
        std::cout << "compile: " << fmt_seconds(compile_seconds) << "\n";
        std::cout << "compiled kernel: " << fmt_seconds(best) << " (best of " << options.repeat
                  << (options.repeat == 1 ? " run" : " runs");
        if (options.threads) std::cout << ", " << options.threads << " threads";
        std::cout << ")" << std::endl;
        return 0;
    };

    // Each target in turn on the same inputs: the host run leaves its outputs in
    // `tensors`, so they are restored from a copy before the next target.
    std::vector<BoundTensor> pristine;
    if (several_targets) pristine = tensors;
    std::vector<std::vector<HostTensor>> target_results(run_targets.size());
    std::vector<std::vector<std::string>> target_problems(run_targets.size());
    for (size_t k = 0; k < run_targets.size(); ++k) {
        if (k > 0) tensors = pristine;
        if (several_targets) std::cout << "target: " << target_names[k] << std::endl;
        int rc = run_targets[k] ? run_in_simulator(f, *run_targets[k], options, sources, diags, tensors, size_values,
                                                   scalars, sample, grid_blocks, target_results[k],
                                                   target_problems[k])
                                : run_on_host(target_results[k], target_problems[k]);
        if (rc != 0) {
            if (several_targets)
                std::cerr << "tilec run: the run on " << target_names[k] << " ended it; the targets after it ("
                          << (k + 1 < run_targets.size()
                                  ? join(std::vector<std::string>(target_names.begin() + static_cast<long>(k) + 1,
                                                                  target_names.end()))
                                  : std::string("none"))
                          << ") did not run\n";
            return rc;
        }
    }

    // 7. The reference interpreter on the same inputs.
    double ref_seconds = 0;
    if (options.reference) {
        interp::RunArgs ra;
        ra.tensors = std::move(ref_tensors);
        ra.sizes = size_values;
        for (auto& s : scalars) ra.scalars.push_back(s.value);
        int64_t blocks = grid_blocks;
        interp::RunOptions ro;
        ro.print_stream = &std::cout;
        // After the first block, an estimate of the whole run; a note if it is long.
        int64_t started = 0;
        Clock::time_point r0;
        if (sampled) blocks = static_cast<int64_t>(sample.size());
        ro.blocks = sample;
        ro.block_filter = [&](int64_t, int64_t, int64_t) {
            if (++started == 2) {
                double one_block = std::chrono::duration<double>(Clock::now() - r0).count();
                double estimate = one_block * static_cast<double>(blocks);
                if (estimate > kSlowReferenceSeconds)
                    std::cerr << "tilec run: note: the reference interpreter will take about "
                              << fmt_seconds(estimate) << " (" << blocks << " blocks of "
                              << fmt_seconds(one_block) << "); --no-reference skips it\n";
            }
            return true;
        };
        r0 = Clock::now();
        interp::Result res = interp::run(f, ra, ro);
        ref_seconds = std::chrono::duration<double>(Clock::now() - r0).count();
        if (!res) {
            std::string msg = "the reference interpreter failed: " + res.message;
            if (res.in_block)
                msg += " (block " + std::to_string(res.block[0]) + ", " + std::to_string(res.block[1]) +
                       ", " + std::to_string(res.block[2]) + ")";
            if (res.loc.valid() && res.loc.file != 0) {
                SourceRange range;
                range.begin = range.end = res.loc;
                diags.error(range, msg);
            } else {
                std::cerr << "tilec: error: " << msg << "\n";
            }
            return 1;
        }
        ref_tensors = std::move(ra.tensors);
        std::cout << "reference interpreter: " << fmt_seconds(ref_seconds) << "\n";
    } else {
        std::cout << "reference interpreter: skipped (--no-reference)\n";
    }

    // 8. Compare and report, per target.
    std::vector<std::string> failed;
    for (size_t k = 0; k < run_targets.size(); ++k) {
        if (several_targets) std::cout << "target: " << target_names[k] << "\n";
        const std::vector<HostTensor>& results = target_results[k];
        bool pass = target_problems[k].empty();
        size_t ri = 0;
        int64_t total_compared = 0;
        for (size_t i = 0; i < tensors.size(); ++i) {
            auto& t = tensors[i].host;
            if (t.access == ir::Access::In) continue;
            const HostTensor& got = results[ri++];
            std::cout << "output " << t.name << ": " << shape_str(t.dtype, t.shape) << ", ";
            if (!options.reference) {
                int64_t unwritten = 0;
                if (t.access == ir::Access::Out && !t.dtype.is_integer() && !t.dtype.is_bool())
                    got.for_each(
                        [&](int64_t off, const std::vector<int64_t>&) { unwritten += got.is_poison(off); });
                std::cout << got.elements() << " elements, not compared";
                if (unwritten) std::cout << " (" << unwritten << " never written: still the poison)";
                std::cout << "\n";
                continue;
            }
            Tolerance tol = default_tolerance(t.dtype);
            if (options.rtol) tol.rtol = *options.rtol;
            if (options.atol) tol.atol = *options.atol;
            Comparison c = compare(got, ref_tensors[i], tol, sampled);
            total_compared += c.compared;
            std::cout << c.compared << " elements compared, max abs error " << fmt_double(c.max_abs, "%.3g")
                      << ", max rel error " << fmt_double(c.max_rel, "%.3g") << " (rtol "
                      << fmt_double(tol.rtol, "%g") << ", atol " << fmt_double(tol.atol, "%g")
                      << "): " << (c.pass() ? "ok" : std::to_string(c.mismatches) + " differ") << "\n";
            if (c.unwritten)
                std::cout << "  " << c.unwritten
                          << " of them never written by the compiled kernel (still the poison)\n";
            if (c.unsampled)
                std::cout << "  " << c.unsampled << " not compared: written by no sampled block (--sim-blocks)\n";
            if (c.both_nan)
                std::cout << "  note: " << c.both_nan
                          << " elements are NaN in both (never written, or NaN in the reference)\n";
            if (!c.pass()) {
                pass = false;
                auto show = [&](const char* lead, const Comparison::Element& e) {
                    std::cout << "  " << lead << element_name(t.name, e.index) << ": got "
                              << fmt_value(e.got, t.dtype) << (e.got_unwritten ? " (never written)" : "")
                              << ", expected " << fmt_value(e.ref, t.dtype)
                              << (e.ref_unwritten ? " (the reference never wrote it)" : "") << "\n";
                };
                for (auto& e : c.first) show("", e);
                if (c.mismatches > static_cast<int64_t>(c.first.size())) std::cout << "  ...\n";
                show("worst: ", c.worst);
            }
        }
        for (auto& p : target_problems[k]) std::cout << "error: " << p << "\n";
        if (!pass) failed.push_back(target_names[k]);
        const std::string on = several_targets ? " on " + target_names[k] : "";
        if (!options.reference)
            std::cout << (pass ? "RAN" : "FAIL") << ": " << f.name << on << " (not compared: --no-reference)\n";
        else
            std::cout << (pass ? "PASS" : "FAIL") << ": " << f.name << on << " against the reference, "
                      << total_compared << " elements\n";
    }
    if (several_targets) {
        const char* verdict = !failed.empty() ? "FAIL" : options.reference ? "PASS" : "RAN";
        std::cout << verdict << ": " << f.name << " on " << join(target_names) << "; "
                  << (failed.empty() ? std::string("every target ") + (options.reference ? "passed" : "ran")
                                     : "failed on " + join(failed))
                  << "\n";
    }
    return failed.empty() ? 0 : 1;
#endif
}

}  // namespace tilec::driver
