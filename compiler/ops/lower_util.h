// Helpers the tile ops' layout and lowering hooks share: constant shapes, and global
// tensor regions seen per element (the indices of a tile coordinate, bounds tests).
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "layout/fragment.h"

namespace tilec::ops {

// The shape's extents, or nullopt if one is not a compile-time constant.
std::optional<std::vector<int64_t>> const_shape(const std::vector<ir::Expr>& shape);
// The same, also nullopt for an extent that is not positive (layout inference's nodes).
std::optional<std::vector<int64_t>> positive_shape(const std::vector<ir::Expr>& shape);
// The region covers its whole buffer, whose shape is constant and positive.
bool whole_tile(const ir::Region& r);

// The indices of the global region `g` at the tile coordinate `coord` of a tile of
// shape `tile` (unit dims of either side skipped); whether indices lie inside the
// tensor; whether the whole region does (the unmasked path's condition).
std::vector<ir::Expr> global_indices(const ir::Region& g, const std::vector<int64_t>& tile,
                                     const std::vector<ir::Expr>& coord);
ir::Expr in_bounds(const ir::Buffer& b, const std::vector<ir::Expr>& idx);
// The same test over dimensions [0, n) only.
ir::Expr in_bounds_dims(const ir::Buffer& b, const std::vector<ir::Expr>& idx, size_t n);
ir::Expr region_in_bounds(const ir::Region& g);

// The value of the kernel annotation `name` (PrimFunc::attrs: "rasterize", "warp_policy"),
// "" when the kernel has none.
std::string func_attr(const ir::PrimFunc& f, const std::string& name);

// Elements [first, first + count) of the register array `r`, as Loads (a machine op's
// operands and destinations).
std::vector<ir::Expr> register_elements(const ir::Buffer& r, int64_t first, int64_t count, SourceLoc loc);

// A store to memory all threads see, done by replica 0 only (`rep` from a register
// loop; unchanged when it is the constant 0).
ir::Stmt guard_replica(const ir::Expr& rep, ir::Stmt s);

// A matrix instruction reading its A operand straight from a fragment's registers
// (mma.sync, MFMA): regs[k-step][atom][slot] is the register of F that holds the element
// `element(thread, k-step, atom, slot)` = (row, column) for every one of `threads`
// threads. The instruction names one register for all threads, so nullopt where a thread
// does not hold its element or two threads hold theirs in different registers.
using OperandRegisters = std::vector<std::vector<std::vector<int64_t>>>;
std::optional<OperandRegisters> fragment_operand_registers(
    const layout::Fragment& F, int64_t threads, int64_t steps, int64_t atoms, int64_t slots,
    const std::function<std::pair<int64_t, int64_t>(int64_t, int64_t, int64_t, int64_t)>& element);

}  // namespace tilec::ops
