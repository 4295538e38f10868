// Tile liveness for the CPU backend (entry: tiles_live_after): for each statement of a
// block function's body, the block-local buffers (tiles) whose contents may still be
// read after it. Row fusion (cpu_fusion.cpp) uses it to keep a tile that a fused column
// loop writes and reads in registers, without storing it, when nothing reads the tile
// afterwards: a norm kernel's [rows, columns] tile is overwritten by the next copy into
// it on every path, and its stores were 8% of rmsnorm's time.
//
// A backward may-analysis over the structured statements, conservative wherever it is
// not exact: every buffer a statement mentions counts as read by it, except the
// destination of a copy or fill that covers the whole buffer (start 0, extent its
// shape), which is overwritten and so kills it; a loop's body runs zero or more
// times (its live-in joins what follows the loop, to a fixpoint); an `if` joins both
// sides; nothing is live at the end of the body (tiles are the block's own). A statement
// node that appears in several places gets the union of its live-after sets.
#include "codegen/cpu_lowering.h"
#include "ir/visitor.h"

namespace tilec::codegen {

namespace {

class TileUses : public ir::IRVisitor {
public:
    TileSet found;

protected:
    void visit_buffer_use(const ir::Buffer& b) override {
        if (b->scope != ir::Scope::Global) found.insert(b.get());
    }
};

// Whether the region is a whole block-local buffer (start 0, extent its shape).
bool covers_buffer(const ir::Region& r) {
    return r.buffer->scope != ir::Scope::Global && ir::is_full_region(r);
}

class Liveness {
public:
    std::unordered_map<const ir::StmtNode*, TileSet> after;

    // The tiles live before `s`, given those live after it.
    TileSet live_in(const ir::Stmt& s, const TileSet& out) {
        if (!s) return out;
        after[s.get()].insert(out.begin(), out.end());
        switch (s->kind) {
        case ir::StmtKind::Seq: {
            TileSet live = out;
            auto& stmts = s->as<ir::SeqNode>()->stmts;
            for (size_t k = stmts.size(); k-- > 0;) live = live_in(stmts[k], live);
            return live;
        }
        case ir::StmtKind::For: {
            auto* f = s->as<ir::ForNode>();
            // Live at the end of the body: what follows the loop, and what the next
            // iteration reads first; iterated until the body's live-in stops growing.
            TileSet body_in;
            for (;;) {
                TileSet end = out;
                end.insert(body_in.begin(), body_in.end());
                TileSet next = live_in(f->body, end);
                if (next == body_in) break;
                body_in = std::move(next);
            }
            TileSet live = out;
            live.insert(body_in.begin(), body_in.end());
            add_uses(live, f->min);
            add_uses(live, f->extent);
            return live;
        }
        case ir::StmtKind::If: {
            auto* n = s->as<ir::IfNode>();
            TileSet live = live_in(n->then_case, out);
            TileSet other = n->else_case ? live_in(n->else_case, out) : out;
            live.insert(other.begin(), other.end());
            add_uses(live, n->cond);
            return live;
        }
        case ir::StmtKind::LetStmt: {
            auto* n = s->as<ir::LetStmtNode>();
            TileSet live = live_in(n->body, out);
            add_uses(live, n->value);
            return live;
        }
        case ir::StmtKind::Allocate: return live_in(s->as<ir::AllocateNode>()->body, out);
        case ir::StmtKind::Copy: {
            auto* c = s->as<ir::CopyNode>();
            if (!covers_buffer(c->dst)) break;
            TileSet live = out;
            live.erase(c->dst.buffer.get());
            TileUses uses;
            uses.visit_region(c->src);
            for (auto& e : c->dst.start) uses.visit(e);
            for (auto& e : c->dst.extent) uses.visit(e);
            uses.visit(c->pad);
            live.insert(uses.found.begin(), uses.found.end());
            return live;
        }
        case ir::StmtKind::Fill: {
            auto* f = s->as<ir::FillNode>();
            if (!covers_buffer(f->dst)) break;
            TileSet live = out;
            live.erase(f->dst.buffer.get());
            add_uses(live, f->value);
            return live;
        }
        default: break;
        }
        TileUses uses;
        uses.visit(s);
        TileSet live = out;
        live.insert(uses.found.begin(), uses.found.end());
        return live;
    }

private:
    static void add_uses(TileSet& live, const ir::Expr& e) {
        TileUses uses;
        uses.visit(e);
        live.insert(uses.found.begin(), uses.found.end());
    }
};

}  // namespace

std::unordered_map<const ir::StmtNode*, TileSet> tiles_live_after(const ir::Stmt& body) {
    Liveness l;
    l.live_in(body, {});
    return std::move(l.after);
}

}  // namespace tilec::codegen
