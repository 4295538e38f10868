// The tensor maps of a thread-level function (issue 12): one per distinct (tensor
// parameter, swizzle, box) its tma_load and tma_store instructions name, in order of first
// appearance (a load and a store of one tensor with one box share the map).
// The NVIDIA kernel takes them as __grid_constant__ parameters after its own, the entry
// point encodes them (cuTensorMapEncodeTiled), the simulator derives the same maps.
#pragma once
#include <cstdint>
#include <vector>

#include "ir/ir.h"

namespace tilec::ir {

struct TmaMapUse {
    size_t param = 0;          // index into f.params
    std::vector<int64_t> imm;  // the instruction's immediates: swizzle, box_0 (innermost), box_1, ... [, dims]
};

// The tensor dimension each dimension of a rank-`rank` tma_load's map stands for,
// innermost first: immediates {swizzle, box_0 .. box_{r-1}} alone mean the row-major
// order (r-1, ..., 0); a tensor whose contiguous dimension is another adds {dim_0 ..
// dim_{r-1}} (a transposed operand [K, N] with strides (1, K): {0, 1}). Empty where the
// immediates are neither form or the dims are not a permutation.
std::vector<size_t> tma_map_dims(const std::vector<int64_t>& imm, size_t rank);

std::vector<TmaMapUse> tma_map_uses(const PrimFunc& f);
// The index into tma_map_uses(f) of a tma_load or tma_store, or -1 if none matches.
int64_t tma_map_index(const std::vector<TmaMapUse>& maps, const PrimFunc& f, const MachineOpNode& op);

}  // namespace tilec::ir
