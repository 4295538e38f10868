// The arguments reduce_sum|max|min|absmax and cumsum share, (src, dst, dim, flag): both
// fold or scan a whole on-chip tile along one dimension, so their checks and messages
// are one function (the flag is reduce's `clear`, cumsum's `reverse`).
#pragma once
#include <optional>

#include "ops/context.h"

namespace tilec::ops {

struct AxisArgs {
    ir::Region src, dst;  // whole tiles
    int dim = 0;          // normalised: 0 <= dim < rank
    bool flag = false;
};

// `scan`: cumsum (dst has src's shape; the flag is `reverse`, default false); else a
// reduction (dst drops dim, keeps it as 1, or is [1] for a 1-d src; the flag is `clear`,
// default true). Marks dst written. nullopt after reporting errors.
std::optional<AxisArgs> elab_axis_args(ElabContext& ctx, bool scan);

}  // namespace tilec::ops
