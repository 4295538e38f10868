// Wording and region helpers of the tile ops' argument checks (see elab_util.h): one
// copy, so that every op words a shape or a scope the same way.
#include "ops/elab_util.h"

namespace tilec::ops {

std::string plural(size_t n, const char* word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); }

std::string plural_index(size_t n) { return std::to_string(n) + (n == 1 ? " index" : " indices"); }

std::string shape_str(const std::vector<ir::Expr>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) {
        if (i) s += ", ";
        if (auto c = ir::as_const_int(shape[i])) s += std::to_string(*c);
        else if (auto v = ir::expr_as<ir::VarNode>(shape[i])) s += v->name;
        else s += "?";
    }
    return s + "]";
}

const char* scope_word(ir::Scope s) {
    switch (s) {
    case ir::Scope::Global: return "a global tensor";
    case ir::Scope::Shared: return "a shared buffer";
    case ir::Scope::Fragment: return "a fragment";
    case ir::Scope::Local: return "a local buffer";
    case ir::Scope::Register: return "a register buffer";
    }
    return "a buffer";
}

bool shape_values(const ir::Buffer& b, std::vector<int64_t>& out) {
    out.clear();
    for (auto& d : b->shape) {
        auto c = ir::as_const_int(d);
        if (!c) return false;
        out.push_back(*c);
    }
    return true;
}

bool same_shape(const std::vector<ir::Expr>& a, const std::vector<ir::Expr>& b) {
    return a.size() == b.size() && ir::structural_equal(a, b);
}

std::optional<ir::Region> region_for(DiagnosticEngine& diags, const TileOperand& indexed,
                                     const std::vector<ir::Expr>& tile_shape, SourceRange where, const char* op) {
    const ir::Buffer& b = indexed.buffer;
    size_t R = b->rank(), r = tile_shape.size();
    if (r > R) {
        diags.error(where, std::string(op) + " of a " + std::to_string(r) + "-d tile with " +
                                       std::to_string(R) + "-d '" + b->name +
                                       "': the tile has more dimensions than the tensor");
        return std::nullopt;
    }
    std::vector<ir::Expr> extent;
    for (size_t i = 0; i < R - r; ++i) extent.push_back(ir::make_int(1));
    for (auto& d : tile_shape) extent.push_back(d);
    if (b->scope != ir::Scope::Global) {
        for (size_t d = 0; d < R; ++d) {
            auto n = ir::as_const_int(b->shape[d]);
            auto x = ir::as_const_int(extent[d]);
            auto s = ir::as_const_int(indexed.start[d]);
            if (!n || !x) continue;
            if (*x > *n || (s && (*s < 0 || *s + *x > *n))) {
                diags.error(indexed.range, std::string(op) + " reaches outside '" + b->name + "' " +
                                               shape_str(b->shape) + " in dimension " + std::to_string(d) + ": " +
                                               (s ? "[" + std::to_string(*s) + ", " + std::to_string(*s + *x) + ")"
                                                  : std::to_string(*x) + " elements") +
                                               "; only global tensors are bounds-masked");
                return std::nullopt;
            }
        }
    }
    return ir::make_region(b, indexed.start, extent);
}

}  // namespace tilec::ops
