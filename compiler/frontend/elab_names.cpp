// Names during elaboration: binding in lexical scopes (redefinitions, built-in and
// func names refused) and "did you mean" suggestions for names that do not resolve.
#include "frontend/elaborator.h"

namespace tilec::frontend {

using ir::DataType;
using K = Value::Kind;

size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        cur[0] = i;
        for (size_t j = 1; j <= b.size(); ++j)
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
        std::swap(prev, cur);
    }
    return prev[b.size()];
}


bool Elaborator::bind(const std::string& name, SourceRange where, Value v, Origin origin) {
    auto& names = scopes_.back().names;
    auto it = names.find(name);
    if (it != names.end()) {
        diags_.error(where, "redefinition of '" + name + "'").note(it->second.where, "previous definition is here");
        return false;
    }
    if (is_builtin_name(name) || program_.funcs.count(name)) {
        diags_.error(where, "'" + name + "' is already the name of a " +
                                (is_builtin_name(name) ? std::string("built-in operation") : std::string("func")) +
                                "; choose another name");
        names.emplace(name, Binding{Value::poison(), origin, where});  // silence later uses
        return false;
    }
    names.emplace(name, Binding{std::move(v), origin, where});
    return true;
}

std::string Elaborator::suggest(const std::string& name) const {
    std::string best;
    size_t best_d = name.size() <= 2 ? 1 : 2;
    auto consider = [&](const std::string& cand) {
        size_t d = edit_distance(name, cand);
        if (d <= best_d && d > 0 && (best.empty() || d < best_d)) {
            best = cand;
            best_d = d;
        }
    };
    for (size_t i = scopes_.size(); i > scope_floor_; --i)
        for (auto& [n, b] : scopes_[i - 1].names) consider(n);
    for (auto n : builtin_names()) consider(std::string(n));
    consider("block");
    for (auto& [n, f] : program_.funcs) consider(n);
    static const char* kTypes[] = {"f16", "bf16", "f32", "f64", "i8", "u8", "i16", "i32", "u32", "i64", "bool",
                                   "f8e4m3", "f8e5m2", "i4", "u4"};
    for (auto* t : kTypes) consider(t);
    return best;
}

void Elaborator::undeclared(const std::string& name, SourceRange where) {
    std::string s = suggest(name);
    diags_.error(where, "use of undeclared name '" + name + "'" + (s.empty() ? "" : "; did you mean '" + s + "'?"));
}

}  // namespace tilec::frontend
