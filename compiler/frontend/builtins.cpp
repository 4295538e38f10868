// The built-in name table (see builtins.h).
#include "frontend/builtins.h"

#include <utility>

namespace tilec::frontend {
namespace {
const std::vector<std::pair<std::string_view, Builtin>>& table() {
    static const std::vector<std::pair<std::string_view, Builtin>> t = {
        {"copy", Builtin::Copy},       {"gemm", Builtin::Gemm},
        {"fill", Builtin::Fill},       {"reduce_sum", Builtin::ReduceSum},
        {"reduce_max", Builtin::ReduceMax}, {"reduce_min", Builtin::ReduceMin},
        {"reduce_absmax", Builtin::ReduceAbsMax}, {"cumsum", Builtin::Cumsum},
        {"atomic_add", Builtin::AtomicAdd}, {"print", Builtin::Print},
        {"assert", Builtin::Assert},   {"min", Builtin::Min},
        {"max", Builtin::Max},         {"abs", Builtin::Abs},
        {"exp", Builtin::Exp},         {"exp2", Builtin::Exp2},
        {"log", Builtin::Log},         {"log2", Builtin::Log2},
        {"sqrt", Builtin::Sqrt},       {"rsqrt", Builtin::Rsqrt},
        {"tanh", Builtin::Tanh},       {"sigmoid", Builtin::Sigmoid},
        {"floor", Builtin::Floor},     {"ceil", Builtin::Ceil},
        {"pow", Builtin::Pow},         {"cdiv", Builtin::Cdiv},
    };
    return t;
}
}  // namespace

Builtin lookup_builtin(std::string_view name) {
    for (auto& [n, b] : table())
        if (n == name) return b;
    return Builtin::None;
}

bool is_builtin_name(std::string_view name) { return lookup_builtin(name) != Builtin::None || name == "block"; }

bool is_tile_op(Builtin b) { return b >= Builtin::Copy && b <= Builtin::Assert; }

const std::vector<std::string_view>& builtin_names() {
    static const std::vector<std::string_view> names = [] {
        std::vector<std::string_view> v;
        for (auto& [n, b] : table()) v.push_back(n);
        return v;
    }();
    return names;
}

}  // namespace tilec::frontend
