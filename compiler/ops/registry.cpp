// Dispatch from a tile-op node to its home (see registry.h): a new op adds one line to
// each switch here.
#include "ops/registry.h"

#include "ops/assert.h"
#include "ops/atomic_add.h"
#include "ops/copy.h"
#include "ops/cumsum.h"
#include "ops/fill.h"
#include "ops/gemm.h"
#include "ops/print.h"
#include "ops/reduce.h"

namespace tilec::ops {

using namespace ir;

bool is_tile_op(const StmtNode& s) {
    switch (s.kind) {
    case StmtKind::Copy:
    case StmtKind::Gemm:
    case StmtKind::Fill:
    case StmtKind::Reduce:
    case StmtKind::Cumsum:
    case StmtKind::AtomicAdd:
    case StmtKind::Print:
    case StmtKind::Assert: return true;
    default: return false;
    }
}

void infer_layout(const StmtNode& s, LayoutConstraints& lc) {
    switch (s.kind) {
    case StmtKind::Copy: return copy_layout(*s.as<CopyNode>(), lc);
    case StmtKind::Gemm: return gemm_layout(*s.as<GemmNode>(), lc);
    case StmtKind::Fill: return fill_layout(*s.as<FillNode>(), lc);
    case StmtKind::Reduce: return reduce_layout(*s.as<ReduceNode>(), lc);
    case StmtKind::Cumsum: return cumsum_layout(*s.as<CumsumNode>(), lc);
    case StmtKind::AtomicAdd: return atomic_add_layout(*s.as<AtomicAddNode>(), lc);
    case StmtKind::Print: return print_layout(*s.as<PrintNode>(), lc);
    case StmtKind::Assert: return assert_layout(*s.as<AssertNode>(), lc);
    default: return;
    }
}

Stmt lower(const StmtNode& s, LowerContext& lc) {
    switch (s.kind) {
    case StmtKind::Copy: return lower_copy(*s.as<CopyNode>(), lc);
    case StmtKind::Gemm: return lower_gemm(*s.as<GemmNode>(), lc);
    case StmtKind::Fill: return lower_fill(*s.as<FillNode>(), lc);
    case StmtKind::Reduce: return lower_reduce(*s.as<ReduceNode>(), lc);
    case StmtKind::Cumsum: return lower_cumsum(*s.as<CumsumNode>(), lc);
    case StmtKind::AtomicAdd: return lower_atomic_add(*s.as<AtomicAddNode>(), lc);
    case StmtKind::Print: return lower_print(*s.as<PrintNode>(), lc);
    case StmtKind::Assert: return lower_assert(*s.as<AssertNode>(), lc);
    default: TILEC_ICE("ops::lower: not a tile op");
    }
}

}  // namespace tilec::ops
