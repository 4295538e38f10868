// Shared-memory planning (last step of lower_to_thread_level): every shared buffer of
// the thread-level body (the kernel's own, reduce scratch, gemm staging) gets a byte
// offset in one block-wide arena. Buffers whose live ranges do not overlap share bytes,
// so a kernel needs the most it uses at once rather than the sum of all it declares.
//
// Live range: the statements, numbered in program order, from a buffer's first access
// to its last; an access inside a loop that the buffer's allocation encloses extends
// the range over the whole loop (the next iteration reads what this one wrote, and a
// buffer reused by another must not be clobbered before the loop's back-edge).
// Placement: largest first, each at the lowest aligned offset free of every placed
// buffer whose range overlaps its own; 128-byte alignment for tiles (what 16-byte
// vector accesses and TMA boxes want), 16 for small scratch.
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
    std::vector<BufferInfo> buffers;
    std::unordered_map<const BufferNode*, size_t> index;

    void visit(const Stmt& s) override {
        if (!s) return;
        ++pos_;  // every statement is a point in program order
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
        loops_.push_back({pos_, {}});
        IRVisitor::visit_for(op);
        Loop loop = std::move(loops_.back());
        loops_.pop_back();
        for (size_t i : loop.used)
            if (buffers[i].loop_depth <= loops_.size()) buffers[i].live.add(loop.start, pos_);
        if (!loops_.empty()) loops_.back().used.insert(loops_.back().used.end(), loop.used.begin(), loop.used.end());
    }
    void visit_buffer_use(const Buffer& b) override {
        auto it = index.find(b.get());
        if (it == index.end()) return;
        buffers[it->second].live.add(pos_, pos_);
        if (!loops_.empty()) loops_.back().used.push_back(it->second);
    }

private:
    struct Loop {
        int64_t start;
        std::vector<size_t> used;
    };
    int64_t pos_ = 0;
    std::vector<Loop> loops_;
};

int64_t align_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

}  // namespace

SharedPlan plan_shared_memory(const Stmt& body, const target::GpuTarget& target, const std::string& kernel,
                              SourceLoc kernel_loc) {
    LiveRanges lr;
    lr.visit(body);
    auto& bufs = lr.buffers;
    std::vector<size_t> order(bufs.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return bufs[a].bytes > bufs[b].bytes; });
    std::vector<size_t> placed;
    int64_t total = 0;
    for (size_t i : order) {
        BufferInfo& me = bufs[i];
        std::vector<std::pair<int64_t, int64_t>> taken;  // [begin, end) of overlapping live buffers
        for (size_t j : placed)
            if (bufs[j].live.overlaps(me.live)) taken.emplace_back(bufs[j].offset, bufs[j].offset + bufs[j].bytes);
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
    total = align_up(total, 16);

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
