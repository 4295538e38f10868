// The per-byte shadow of shared memory: races between threads within a barrier epoch,
// and reads of bytes not last stored by this execution of the buffer's own alloc.
#include "sim/executor.h"

namespace tilec::sim::detail {

using namespace ir;

namespace {

std::string line_col(SourceLoc l) {
    return std::to_string(l.line) + ":" + std::to_string(l.col);
}

}  // namespace

uint32_t Executor::site(const void* node, SourceLoc loc, const BufferNode* b) {
    if (node == last_site_node_) return last_site_;
    auto [it, fresh] = site_ids_.try_emplace(node, static_cast<uint32_t>(sites_.size()));
    if (fresh) sites_.push_back({loc, b});
    last_site_node_ = node;
    return last_site_ = it->second;
}

std::string Executor::element_at(int32_t inst, int64_t byte) const {
    const Instance& in = instances_[static_cast<size_t>(inst)];
    return "'" + in.buffer->name + "'[" + std::to_string((byte - in.base) / in.elem_bytes) + "]";
}

// The checks of shared memory, per byte of the arena: a race is two threads' accesses
// to one byte, at least one a store, in one barrier epoch, whatever buffers they went
// through; a read must find every byte last stored by this execution of its own buffer's
// alloc (never written: uninitialised; written through another buffer: a stale read
// through a reused slot, or, where this buffer had stored the byte before, a clobber of
// a live buffer by another the plan put on the same bytes).
void Executor::check_pending(const Storage& s, int64_t off, int t, SourceLoc loc, bool write) {
    // The async operations in flight on shared bytes, per byte a count: copies into them
    // (no access may touch the bytes before their wait) and reads of them (no write may).
    struct InFlight {
        const std::vector<int32_t>& count;
        bool writes_only;
        IssueKind kind;
        const char* what;
    };
    const InFlight checks[] = {
        {arena_.pending, false, IssueKind::AsyncCopy,
         " while a cp.async into it is in flight (no cp.async.wait_group completed its copy before this access)"},
        {arena_.tma_pending, false, IssueKind::AsyncCopy,
         " while a TMA copy into it is in flight (no mbarrier wait saw the phase its bytes complete before this "
         "access)"},
        {arena_.bulk_reading, true, IssueKind::AsyncRead,
         " while a TMA store that reads it is in flight (no cp.async.bulk.wait_group.read of the issuing thread "
         "covered its group before this write)"},
        {arena_.wgmma_reading, true, IssueKind::AsyncRead,
         " while a wgmma that reads it is in flight (no wgmma.wait_group of its warpgroup completed it before this "
         "write)"},
    };
    const int64_t first = s.base + off * s.elem_bytes;
    for (const InFlight& c : checks) {
        if (c.writes_only && !write) continue;
        for (int b = 0; b < s.elem_bytes; ++b)
            if (c.count[static_cast<size_t>(first + b)] > 0) {
                issue(c.kind, loc, t, [&] {
                    return std::string(write ? "write of '" : "read of '") + s.name() + "' element " +
                           std::to_string(off) + c.what;
                });
                return;
            }
    }
}

void Executor::shared_read(const Storage& s, int64_t off, int t, SourceLoc loc, const void* node) {
    check_pending(s, off, t, loc, false);
    const int64_t first = s.base + off * s.elem_bytes;
    if (cluster_)
        for (int b = 0; b < s.elem_bytes; ++b) {
            arena_.reader[static_cast<size_t>(first + b)] = t;
            arena_.reader_arrivals[static_cast<size_t>(first + b)] = release_arrivals_[static_cast<size_t>(t)];
        }
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
                    std::string head = "shared-memory race: '" + s.name() + "' element " +
                                       std::to_string(off) + " read by thread " + std::to_string(t) +
                                       " after thread " + std::to_string(x.w_tid);
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
                       (x.writer == 0 ? " (never written)"
                                      : " (not written since this execution of its alloc)");
            });
        } else if (x.overwritten == s.instance) {
            issue(IssueKind::SharedOverlap, loc, t, [&] {
                const Site& w = sites_[x.w_site];
                const std::string& other = instances_[static_cast<size_t>(x.writer)].buffer->name;
                return "read of shared element " + element + " after a store to " +
                       element_at(x.writer, first + b) + " at " + line_col(w.loc) +
                       " overwrote its bytes (arena byte " + std::to_string(first + b) + "): '" + s.name() +
                       "' and '" + other + "' share bytes while both are live";
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
    check_pending(s, off, t, loc, true);
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
                std::string who =
                    x.r_tid < 0 ? std::string("other threads") : "thread " + std::to_string(x.r_tid);
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
        arena_.proxy_writer[static_cast<size_t>(first + b)] = t;
        arena_.proxy_fence[static_cast<size_t>(first + b)] = fences_[static_cast<size_t>(t)];
        x.w_site = me;
        if (x.writer != s.instance) {
            x.overwritten = x.writer;
            x.writer = s.instance;
        }
    }
}

}  // namespace tilec::sim::detail
