// gemm(a, b, c, trans_a, trans_b, clear): c (+)= op(a) @ op(b) for whole 2-d tiles, a
// and b on chip (shared or fragment), c a fragment. The op's home: argument checks and
// IR, layout constraints, lowering (CUDA cores today; tensor cores go here).
#pragma once
#include "ops/context.h"

namespace tilec::ops {

ir::Stmt elab_gemm(ElabContext& ctx);
// The CUDA-core lowering takes any complete fragment without replicas for c, and reads a
// and b from shared memory: no constraint. (mma operand and accumulator layouts, strict,
// will be proposed here.)
void gemm_layout(const ir::GemmNode& op, LayoutConstraints& lc);
ir::Stmt lower_gemm(const ir::GemmNode& op, LowerContext& lc);

}  // namespace tilec::ops
