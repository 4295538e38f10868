// The names the language defines itself: tile operations, math functions, debugging
// calls. Kept in one table so name resolution, redefinition checks and "did you mean"
// suggestions agree.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace tilec::frontend {

enum class Builtin {
    None,
    // tile operations (statements)
    Copy, Gemm, Fill, ReduceSum, ReduceMax, ReduceMin, ReduceAbsMax, Cumsum, AtomicAdd, Print, Assert,
    // scalar functions (expressions)
    Min, Max, Abs, Exp, Exp2, Log, Log2, Sqrt, Rsqrt, Tanh, Sigmoid, Floor, Ceil, Pow, Cdiv,
};

Builtin lookup_builtin(std::string_view name);
bool is_builtin_name(std::string_view name);
bool is_tile_op(Builtin b);
const std::vector<std::string_view>& builtin_names();

}  // namespace tilec::frontend
