// Mixed-radix digit maps. Everything here is exact integer reasoning on static shapes;
// the layout tests check each result against enumeration.
#include "layout/digits.h"

#include <algorithm>
#include <deque>

#include "layout/index_expr.h"
#include "support/diagnostics.h"

namespace tilec::layout {

using ir::Expr;

std::optional<DigitMap> DigitMap::from_flat(std::vector<int64_t> shape, const std::vector<Digit>& flat,
                                            int num_outputs, std::vector<Digit> rep) {
    DigitMap m;
    m.shape = std::move(shape);
    m.dims.resize(m.shape.size());
    m.num_outputs = num_outputs;
    for (const Digit& d : rep)
        if (d.extent > 1) m.rep.push_back(d);
    std::deque<Digit> queue;
    for (const Digit& d : flat)
        if (d.extent > 1) queue.push_back(d);
    for (size_t d = m.shape.size(); d-- > 0;) {
        int64_t remaining = m.shape[d];
        if (remaining <= 0) return std::nullopt;
        while (remaining > 1) {
            if (queue.empty()) return std::nullopt;
            Digit f = queue.front();
            if (f.extent <= remaining) {
                if (remaining % f.extent != 0) return std::nullopt;
                m.dims[d].push_back(f);
                remaining /= f.extent;
                queue.pop_front();
            } else {
                if (f.extent % remaining != 0) return std::nullopt;
                m.dims[d].push_back({remaining, f.out, f.stride});
                queue.front() = {f.extent / remaining, f.out, f.stride * remaining};
                remaining = 1;
            }
        }
    }
    if (!queue.empty()) return std::nullopt;
    return m;
}

int64_t DigitMap::rep_extent() const {
    int64_t r = 1;
    for (const Digit& d : rep) r *= d.extent;
    return r;
}

std::vector<Digit> DigitMap::flat() const {
    std::vector<Digit> out;
    for (size_t d = dims.size(); d-- > 0;) out.insert(out.end(), dims[d].begin(), dims[d].end());
    return out;
}

int64_t DigitMap::extent(int out) const {
    int64_t max = 0;
    auto add = [&](const std::vector<Digit>& ds) {
        for (const Digit& g : ds)
            if (g.out == out) max += (g.extent - 1) * g.stride;
    };
    for (const auto& ds : dims) add(ds);
    add(rep);
    return max + 1;
}

namespace {

// A digit with where it came from: dimension `dim` (or -1 for replication) and its
// place value there.
struct PlacedDigit {
    Digit digit;
    int dim;
    int64_t place;
};

std::vector<PlacedDigit> placed_digits(const DigitMap& m, int out) {
    std::vector<PlacedDigit> ds;
    for (size_t d = 0; d < m.dims.size(); ++d) {
        int64_t place = 1;
        for (const Digit& g : m.dims[d]) {
            if (g.out == out) ds.push_back({g, int(d), place});
            place *= g.extent;
        }
    }
    int64_t place = 1;
    for (const Digit& g : m.rep) {
        if (g.out == out) ds.push_back({g, -1, place});
        place *= g.extent;
    }
    std::stable_sort(ds.begin(), ds.end(),
                     [](const PlacedDigit& a, const PlacedDigit& b) { return a.digit.stride < b.digit.stride; });
    return ds;
}

}  // namespace

bool DigitMap::is_dense(int out) const {
    int64_t expected = 1;
    for (const PlacedDigit& p : placed_digits(*this, out)) {
        if (p.digit.stride != expected) return false;
        expected *= p.digit.extent;
    }
    return true;
}

std::vector<Expr> DigitMap::forward(const std::vector<Expr>& coords, const Expr& rep_index) const {
    TILEC_CHECK(coords.size() == dims.size(), "layout applied to a coordinate of the wrong rank");
    std::vector<Expr> outs(num_outputs, idx(0));
    auto add = [&](const Expr& x, const std::vector<Digit>& ds, int64_t total) {
        int64_t place = 1;
        for (const Digit& g : ds) {
            Expr v = idx_floordiv(x, place);
            if (place * g.extent < total) v = idx_floormod(v, g.extent);
            outs[g.out] = idx_add(outs[g.out], idx_mul(v, g.stride));
            place *= g.extent;
        }
    };
    for (size_t d = 0; d < dims.size(); ++d) add(coords[d], dims[d], shape[d]);
    if (!rep.empty()) add(rep_index, rep, rep_extent());
    return outs;
}

std::vector<int64_t> DigitMap::eval(const std::vector<int64_t>& coord, int64_t rep_index) const {
    std::vector<int64_t> outs(num_outputs, 0);
    auto add = [&](int64_t x, const std::vector<Digit>& ds) {
        for (const Digit& g : ds) {
            outs[g.out] += (x % g.extent) * g.stride;
            x /= g.extent;
        }
    };
    for (size_t d = 0; d < dims.size(); ++d) add(coord[d], dims[d]);
    add(rep_index, rep);
    return outs;
}

std::optional<std::vector<Expr>> DigitMap::inverse(const std::vector<Expr>& outs) const {
    TILEC_CHECK(int(outs.size()) == num_outputs, "layout inverse applied to the wrong number of outputs");
    std::vector<Expr> coords(dims.size(), idx(0));
    Expr rep_index = idx(0);
    for (int o = 0; o < num_outputs; ++o) {
        if (!is_dense(o)) return std::nullopt;
        int64_t total = extent(o);
        for (const PlacedDigit& p : placed_digits(*this, o)) {
            Expr v = idx_floordiv(outs[o], p.digit.stride);
            if (p.digit.stride * p.digit.extent < total) v = idx_floormod(v, p.digit.extent);
            Expr& target = p.dim >= 0 ? coords[p.dim] : rep_index;
            target = idx_add(target, idx_mul(v, p.place));
        }
    }
    if (!rep.empty()) coords.push_back(rep_index);
    return coords;
}

std::optional<DigitMap> DigitMap::reshape(const std::vector<int64_t>& new_shape) const {
    if (shape_size(new_shape) != shape_size(shape)) return std::nullopt;
    return from_flat(new_shape, flat(), num_outputs, rep);
}

DigitMap DigitMap::drop_dim(size_t dim, int to_rep_out, int densify_out, bool keep) const {
    TILEC_CHECK(dim < dims.size(), "dropped dimension out of range");
    DigitMap m = *this;
    for (const Digit& g : dims[dim])
        if (g.out == to_rep_out) m.rep.push_back(g);
    if (keep) {
        m.shape[dim] = 1;
        m.dims[dim].clear();
    } else {
        m.shape.erase(m.shape.begin() + dim);
        m.dims.erase(m.dims.begin() + dim);
    }
    std::vector<Digit*> ds;
    for (auto& v : m.dims)
        for (Digit& g : v)
            if (g.out == densify_out) ds.push_back(&g);
    for (Digit& g : m.rep)
        if (g.out == densify_out) ds.push_back(&g);
    std::stable_sort(ds.begin(), ds.end(), [](const Digit* a, const Digit* b) { return a->stride < b->stride; });
    int64_t stride = 1;
    for (Digit* g : ds) {
        g->stride = stride;
        stride *= g->extent;
    }
    return m;
}

}  // namespace tilec::layout
