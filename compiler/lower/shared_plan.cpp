// Shared-memory planning (last step of lower_to_thread_level): every shared buffer of
// the thread-level body (the kernel's own, reduce scratch, gemm staging) gets a byte
// offset in one block-wide arena. Buffers whose live ranges do not overlap share bytes,
// so a kernel needs the most it uses at once rather than the sum of all it declares.
//
// Live range: the statements, numbered in program order, from a buffer's first access
// to its last. A loop that the buffer's allocation encloses carries the buffer from one
// iteration into the next (the range then covers the whole loop) unless the loop's
// first access to it is an unconditional overwrite of the whole buffer (a copy or fill
// the lowering reports in `full_writes`): flash attention's k and v tiles are reloaded
// every iteration and share bytes, each dead between its last read and the next load.
// Placement: largest first, each at the lowest aligned offset free of every placed
// buffer whose range overlaps its own; 128-byte alignment for tiles (what 16-byte
// vector accesses and TMA boxes want), 16 for small scratch. Sharing bytes costs
// barriers (see below: softmax needs 4 with its two reduce scratches on one slot, 2
// with a slot each), so buffers share only when the kernel would not fit the target's
// static shared memory otherwise (48 KiB on NVIDIA, the LDS on AMD): flash attention
// shares (80 KiB -> 64 KiB), softmax does not. On AMD, besides, a tail (a buffer first
// used after every other one's last use: gemm's epilogue staging tile) takes dead bytes
// for the price of one barrier where that lets a CU run more blocks, by its waves and
// its LDS (gemm_f16 on gfx942: 32 KiB, two blocks, rather than 64 KiB and one).
// The total decides the kind of shared memory: up to the target's static limit a
// static arena; above it, on targets with an opt-in (NVIDIA), dynamic shared memory
// of that many bytes per launch; above the target's maximum, a located user error
// naming the buffers. Barriers come after the plan (place_barriers,
// barrier_placement.cpp): it compares accesses by these byte ranges, so the last
// accesses of a buffer and the first writes of another that reuses its bytes are
// ordered like accesses of one buffer (at the price of a barrier where their threads
// differ).
#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/visitor.h"
#include "layout/index_expr.h"
#include "lower/thread_lowering.h"

namespace tilec::lower::detail {

using namespace ir;

namespace {

struct Interval {
    int64_t first = -1, last = -1;  // statement numbers; first == -1: never accessed
    void add(int64_t a, int64_t b) {
        if (first < 0 || a < first) first = a;
        if (b > last) last = b;
    }
    bool overlaps(const Interval& o) const {
        return first >= 0 && o.first >= 0 && first <= o.last && o.first <= last;
    }
};

struct BufferInfo {
    Buffer buffer;
    int64_t bytes = 0;
    int64_t align = 16;
    size_t loop_depth = 0;  // loops enclosing the allocation
    Interval live;
    int64_t offset = 0;
};

class LiveRanges : public IRVisitor {
public:
    using IRVisitor::visit;
    explicit LiveRanges(const FullWrites& full_writes) : full_writes_(full_writes) {}
    std::vector<BufferInfo> buffers;
    std::unordered_map<const BufferNode*, size_t> index;

    void visit(const Stmt& s) override {
        if (!s) return;
        ++pos_;  // every statement is a point in program order
        if (auto it = full_writes_.find(s.get()); it != full_writes_.end()) {
            // The first access of the buffer in each loop this write runs in on every
            // iteration (no if or inner loop between): that loop does not carry it.
            if (auto b = index.find(it->second); b != index.end())
                for (auto& loop : loops_)
                    if (loop.nested == 0) loop.first_is_overwrite.emplace(b->second, true);
        }
        IRVisitor::visit(s);
    }

protected:
    void visit_allocate(const AllocateNode* op) override {
        const Buffer& b = op->buffer;
        if (b->scope == Scope::Shared) {
            BufferInfo info;
            info.buffer = b;
            auto shape = const_shape(b->shape);
            if (!shape) TILEC_ICE("shared-memory plan: '" + b->name + "' has a non-constant shape");
            info.bytes = layout::shape_size(*shape) * ((b->dtype.bits + 7) / 8);
            info.align = info.bytes >= 128 ? 128 : 16;
            info.loop_depth = loops_.size();
            index[b.get()] = buffers.size();
            buffers.push_back(std::move(info));
        }
        IRVisitor::visit_allocate(op);
    }
    void visit_for(const ForNode* op) override {
        for (auto& loop : loops_) ++loop.nested;
        loops_.push_back({pos_, {}, {}, 0});
        IRVisitor::visit_for(op);
        Loop loop = std::move(loops_.back());
        loops_.pop_back();
        for (auto& outer : loops_) --outer.nested;
        for (size_t i : loop.used)
            if (buffers[i].loop_depth <= loops_.size() && !loop.first_is_overwrite.at(i))
                buffers[i].live.add(loop.start, pos_);
        if (!loops_.empty()) loops_.back().used.insert(loops_.back().used.end(), loop.used.begin(), loop.used.end());
    }
    void visit_if(const IfNode* op) override {
        for (auto& loop : loops_) ++loop.nested;
        if (is_warp_role_split(*op)) {
            // The producer's branch: split-warp-roles moves it to the top of the kernel,
            // where it runs beside everything the consumers do before the loop, so the
            // tiles it fills are live from the start (a tile used only before the loop,
            // flash attention's peeled first K tile, must not take their bytes).
            producer_ = true;
            visit(op->cond);
            visit(op->then_case);
            producer_ = false;
            if (op->else_case) visit(op->else_case);
        } else {
            IRVisitor::visit_if(op);
        }
        for (auto& loop : loops_) --loop.nested;
    }
    void visit_buffer_use(const Buffer& b) override {
        auto it = index.find(b.get());
        if (it == index.end()) return;
        buffers[it->second].live.add(producer_ ? 0 : pos_, pos_);
        for (auto& loop : loops_) loop.first_is_overwrite.emplace(it->second, false);  // kept if already seen
        if (!loops_.empty()) loops_.back().used.push_back(it->second);
    }

private:
    struct Loop {
        int64_t start;
        std::vector<size_t> used;
        // Per buffer used in the loop: whether its first access is a whole overwrite.
        std::unordered_map<size_t, bool> first_is_overwrite;
        int nested;  // ifs and inner loops open between the loop and the current statement
    };
    const FullWrites& full_writes_;
    int64_t pos_ = 0;
    bool producer_ = false;  // in a warp-role split's producer branch
    std::vector<Loop> loops_;
};

int64_t align_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

}  // namespace

FullWritesOf take_full_writes(const Stmt& body) {
    // Removing a mark may put a sequence inside a sequence, which make_seq flattens, as
    // the lowering's own sequences were flattened before the marks existed: the table
    // then points at a statement no longer in the tree, and the plan ignores it.
    struct Unmark : IRMutator {
        FullWritesOf* out;
        Stmt mutate_full_write(const FullWriteNode* op, const Stmt&) override {
            Stmt body = mutate(op->body);
            out->full_writes[body.get()] = op->buffer.get();
            out->kept.push_back(body);
            return body;
        }
    };
    FullWritesOf out;
    Unmark unmark;
    unmark.out = &out;
    out.body = unmark.mutate(body);
    return out;
}

SharedPlan plan_shared_memory(const Stmt& body, const FullWrites& full_writes,
                              const target::GpuTarget& target, int64_t threads, const std::string& kernel,
                              SourceLoc kernel_loc) {
    LiveRanges lr(full_writes);
    lr.visit(body);
    auto& bufs = lr.buffers;
    // wgmma's swizzles repeat at absolute 1024-byte boundaries (PTX ISA, the matrix
    // descriptor's base offset): tiles that may be its operands start on one.
    if (target.has_wgmma())
        for (auto& b : bufs)
            if (b.bytes >= 1024) b.align = 1024;
    std::vector<size_t> order(bufs.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return bufs[a].bytes > bufs[b].bytes; });
    // A tail: a buffer first accessed after the last access of every other one (gemm's
    // epilogue staging tile, ops/copy.cpp). Sharing bytes with it costs one barrier
    // where it starts, not one per reuse as between the reduce scratches of softmax.
    std::vector<bool> tail(bufs.size(), false);
    for (size_t i = 0; i < bufs.size(); ++i) {
        tail[i] = bufs[i].live.first >= 0;
        for (size_t j = 0; j < bufs.size() && tail[i]; ++j)
            if (j != i && bufs[j].live.first >= 0 && bufs[j].live.last >= bufs[i].live.first) tail[i] = false;
    }
    enum class Share { None, Tails, All };
    // Largest first, each at the lowest aligned offset free of every placed buffer it
    // may not share bytes with: all of them (None); those live at the same time, where
    // neither is a tail (Tails) or in any case (All).
    auto place = [&](Share share) {
        std::vector<size_t> placed;
        int64_t total = 0;
        for (size_t i : order) {
            BufferInfo& me = bufs[i];
            std::vector<std::pair<int64_t, int64_t>> taken;  // [begin, end) of buffers in the way
            for (size_t j : placed)
                if (share == Share::None || bufs[j].live.overlaps(me.live) ||
                    (share == Share::Tails && !tail[i] && !tail[j]))
                    taken.emplace_back(bufs[j].offset, bufs[j].offset + bufs[j].bytes);
            std::sort(taken.begin(), taken.end());
            int64_t off = 0;
            for (auto& [b, e] : taken) {
                if (off + me.bytes <= b) break;
                off = std::max(off, align_up(e, me.align));
            }
            me.offset = off;
            placed.push_back(i);
            total = std::max(total, off + me.bytes);
        }
        return align_up(total, 16);
    };
    int64_t total = place(Share::None);
    if (total > target.static_shared_bytes) {
        total = place(Share::All);
    } else if (target.is_amd() && target.max_waves_per_cu > 0 && total > 0) {
        // How many blocks a CU runs, by its waves and its LDS (registers may allow
        // fewer: not known yet). Tails take dead bytes where that lets it run more.
        const int64_t waves = std::max<int64_t>(1, (threads + target.warp_size - 1) / target.warp_size);
        auto blocks = [&](int64_t bytes) {
            return std::min<int64_t>(target.max_waves_per_cu / waves, target.shared_bytes_per_sm / bytes);
        };
        const int64_t alone = total, tails = place(Share::Tails);
        // Not worth it: placed again without (place writes the buffers' offsets).
        total = blocks(tails) > blocks(alone) ? tails : place(Share::None);
    }

    SharedPlan plan;
    plan.bytes = total;
    if (total > target.max_shared_bytes) {
        std::string list;
        for (size_t i : order) {
            const BufferInfo& b = bufs[i];
            list += (list.empty() ? "" : ", ") + std::string("'") + b.buffer->name + "' " + std::to_string(b.bytes) +
                    " at " + std::to_string(b.offset);
        }
        SourceLoc loc = kernel_loc;
        for (size_t i : order)
            if (bufs[i].buffer->loc.valid()) {
                loc = bufs[i].buffer->loc;
                break;
            }
        throw UserError{loc, "'" + kernel + "' needs " + std::to_string(total) + " bytes of shared memory per block (" +
                                 list + "; buffers whose live ranges do not overlap already share bytes), above the " +
                                 std::to_string(target.max_shared_bytes) + " bytes " + target.name + " allows"};
    }
    plan.dynamic = total > target.static_shared_bytes;

    struct Rewrite : IRMutator {
        std::unordered_map<const BufferNode*, Buffer> map;
        Buffer mutate_buffer(const Buffer& b) override {
            auto it = map.find(b.get());
            return it == map.end() ? b : it->second;
        }
    } rw;
    for (auto& b : bufs) {
        BufferNode n = *b.buffer;
        n.shared_offset = b.offset;
        rw.map[b.buffer.get()] = make_buffer(std::move(n));
    }
    plan.body = rw.mutate(body);
    return plan;
}

}  // namespace tilec::lower::detail
