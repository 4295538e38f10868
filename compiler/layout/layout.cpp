// Layouts as index expressions with an optional structured (digit) form. Every
// constructor builds both directions at once where it can, so inverses are exact
// expressions rather than tables; the tests check them against enumeration.
#include "layout/layout.h"

#include <mutex>

#include "ir/printer.h"
#include "ir/visitor.h"
#include "layout/digits.h"
#include "layout/index_expr.h"
#include "support/diagnostics.h"

namespace tilec::layout {

using namespace ir;

// ---------------------------------------------------------------------------------
// Swizzle

Swizzle::Swizzle(int b, int m, int s) : bits(b), base(m), shift(s) {
    TILEC_CHECK(b >= 0 && m >= 0 && s >= b && m + s + b < 62, "invalid swizzle " + str());
}

int64_t Swizzle::apply(int64_t offset) const {
    if (bits == 0) return offset;
    int64_t mask = (int64_t(1) << bits) - 1;
    return offset ^ (((offset >> (base + shift)) & mask) << base);
}

Expr Swizzle::apply(const Expr& offset) const {
    if (bits == 0) return offset;
    int64_t mask = (int64_t(1) << bits) - 1;
    return idx_xor(offset, idx_shl(idx_and(idx_shr(offset, base + shift), mask), base));
}

std::string Swizzle::str() const {
    return "Swizzle<" + std::to_string(bits) + ", " + std::to_string(base) + ", " + std::to_string(shift) + ">";
}

const char* smem_swizzle_name(SmemSwizzle s) {
    switch (s) {
    case SmemSwizzle::None: return "none";
    case SmemSwizzle::B32: return "32B";
    case SmemSwizzle::B64: return "64B";
    case SmemSwizzle::B128: return "128B";
    }
    return "?";
}

int64_t smem_swizzle_bytes(SmemSwizzle s) {
    switch (s) {
    case SmemSwizzle::None: return 0;
    case SmemSwizzle::B32: return 32;
    case SmemSwizzle::B64: return 64;
    case SmemSwizzle::B128: return 128;
    }
    return 0;
}

namespace {

int log2_exact(int64_t v) {
    int l = 0;
    while ((int64_t(1) << l) < v) ++l;
    return (int64_t(1) << l) == v ? l : -1;
}

// Element sizes a swizzle can address: whole bytes dividing a 16-byte chunk.
bool swizzle_element_ok(int elem_bits) {
    return elem_bits == 8 || elem_bits == 16 || elem_bits == 32 || elem_bits == 64;
}

}  // namespace

Swizzle smem_swizzle_functor(SmemSwizzle s, int elem_bits) {
    if (s == SmemSwizzle::None) return {};
    TILEC_CHECK(swizzle_element_ok(elem_bits), "no shared-memory swizzle for " + std::to_string(elem_bits) + "-bit elements");
    int chunk_elems_log2 = log2_exact(128 / elem_bits);  // elements in a 16-byte chunk
    int b = log2_exact(smem_swizzle_bytes(s) / 16);
    return Swizzle(b, chunk_elems_log2, 3);
}

// ---------------------------------------------------------------------------------
// Construction

Layout Layout::from_digits(std::string name, const DigitMap& digits, const Swizzle& swizzle,
                           std::vector<int64_t> codomain) {
    Layout l;
    l.name_ = std::move(name);
    l.shape_ = digits.shape;
    l.vars_ = make_index_vars(l.shape_.size());
    std::vector<Expr> coords(l.vars_.begin(), l.vars_.end());
    l.index_ = digits.forward(coords, idx(0));
    std::vector<int64_t> natural;
    for (int o = 0; o < digits.num_outputs; ++o) natural.push_back(digits.extent(o));
    if (codomain.empty()) codomain = natural;
    TILEC_CHECK(codomain.size() == natural.size(), "layout codomain rank mismatch");
    l.codomain_ = codomain;
    l.digits_ = std::make_shared<const DigitMap>(digits);
    l.swizzle_ = swizzle;
    if (!swizzle.is_identity()) {
        TILEC_CHECK(l.index_.size() == 1, "a swizzle applies to a rank-1 offset");
        l.index_[0] = swizzle.apply(l.index_[0]);
    }
    // Invertible when the digits tile the codomain exactly and the swizzle permutes it.
    bool exact = codomain == natural &&
                 (swizzle.is_identity() || codomain[0] % swizzle.period() == 0);
    if (exact) {
        l.inv_vars_ = codomain.size() == 1 ? std::vector<Var>{make_var("o", DataType::index(), VarKind::Let)}
                                           : make_index_vars(codomain.size(), "o");
        std::vector<Expr> outs(l.inv_vars_.begin(), l.inv_vars_.end());
        if (!swizzle.is_identity()) outs[0] = swizzle.apply(outs[0]);
        if (auto inv = digits.inverse(outs)) l.inv_index_ = *inv;
        else l.inv_vars_.clear();
    }
    return l;
}

Layout Layout::row_major(std::vector<int64_t> shape) {
    std::vector<Digit> flat;
    int64_t stride = 1;
    for (size_t d = shape.size(); d-- > 0;) {
        flat.push_back({shape[d], 0, stride});
        stride *= shape[d];
    }
    auto m = DigitMap::from_flat(shape, flat, 1);
    TILEC_CHECK(m.has_value(), "row-major layout of shape " + shape_str(shape));
    return from_digits("row_major", *m);
}

Layout Layout::col_major(std::vector<int64_t> shape) {
    DigitMap m;
    m.shape = shape;
    m.num_outputs = 1;
    int64_t stride = 1;
    for (int64_t e : shape) {
        m.dims.push_back(e > 1 ? std::vector<Digit>{{e, 0, stride}} : std::vector<Digit>{});
        stride *= e;
    }
    return from_digits("col_major", m);
}

Layout Layout::strided(std::vector<int64_t> shape, std::vector<int64_t> strides) {
    TILEC_CHECK(shape.size() == strides.size(), "strided layout: one stride per dimension");
    DigitMap m;
    m.shape = shape;
    m.num_outputs = 1;
    std::string name = "strided(";
    for (size_t d = 0; d < shape.size(); ++d) {
        TILEC_CHECK(strides[d] >= 0, "strided layout with a negative stride");
        m.dims.push_back(shape[d] > 1 ? std::vector<Digit>{{shape[d], 0, strides[d]}} : std::vector<Digit>{});
        name += (d ? ", " : "") + std::to_string(strides[d]);
    }
    return from_digits(name + ")", m);
}

Layout Layout::padded(std::vector<int64_t> shape, int64_t pad) {
    TILEC_CHECK(!shape.empty() && pad >= 0, "padded layout needs a dimension and pad >= 0");
    std::vector<int64_t> strides(shape.size());
    int64_t stride = 1;
    for (size_t d = shape.size(); d-- > 0;) {
        strides[d] = stride;
        stride *= d + 1 == shape.size() ? shape[d] + pad : shape[d];
    }
    Layout l = strided(shape, strides);
    l.name_ = "padded(+" + std::to_string(pad) + ")";
    l.codomain_ = {stride};
    if (pad != 0) {
        l.inv_vars_.clear();
        l.inv_index_.clear();
    }
    return l;
}

std::optional<Layout> Layout::swizzled(int64_t rows, int64_t cols, int elem_bits, SmemSwizzle mode) {
    if (mode == SmemSwizzle::None) return row_major({rows, cols});
    if (!swizzle_element_ok(elem_bits) || rows <= 0 || rows % 8 != 0) return std::nullopt;
    int64_t width = smem_swizzle_bytes(mode) * 8 / elem_bits;  // columns of one panel
    if (cols <= 0 || cols % width != 0) return std::nullopt;
    DigitMap m;
    m.shape = {rows, cols};
    m.num_outputs = 1;
    m.dims = {{{rows, 0, width}}, {{width, 0, 1}}};
    if (cols > width) m.dims[1].push_back({cols / width, 0, rows * width});
    std::string name = std::string("swizzle") + smem_swizzle_name(mode) + "<b" + std::to_string(elem_bits) + ">";
    return from_digits(name, m, smem_swizzle_functor(mode, elem_bits));
}

SmemSwizzle Layout::widest_swizzle(int64_t rows, int64_t cols, int elem_bits) {
    for (SmemSwizzle s : {SmemSwizzle::B128, SmemSwizzle::B64, SmemSwizzle::B32})
        if (swizzled(rows, cols, elem_bits, s)) return s;
    return SmemSwizzle::None;
}

Layout Layout::from_exprs(std::string name, std::vector<int64_t> shape, std::vector<int64_t> codomain,
                          const ExprFn& forward, const ExprFn& inverse) {
    Layout l;
    l.name_ = std::move(name);
    l.shape_ = std::move(shape);
    l.codomain_ = std::move(codomain);
    l.vars_ = make_index_vars(l.shape_.size());
    l.index_ = forward(l.vars_);
    TILEC_CHECK(l.index_.size() == l.codomain_.size(), "layout expressions don't match the codomain rank");
    if (inverse) {
        l.inv_vars_ = l.codomain_.size() == 1 ? std::vector<Var>{make_var("o", DataType::index(), VarKind::Let)}
                                              : make_index_vars(l.codomain_.size(), "o");
        l.inv_index_ = inverse(l.inv_vars_);
        TILEC_CHECK(l.inv_index_.size() == l.shape_.size(), "layout inverse doesn't match the rank");
    }
    return l;
}

std::optional<Layout> Layout::reshape_view(std::vector<int64_t> new_shape, std::vector<int64_t> old_shape) {
    // Output d of the view is old coordinate d: the flattened position's digits are the
    // old dimensions' extents, lowest (last dimension) first.
    std::vector<Digit> flat;
    for (size_t d = old_shape.size(); d-- > 0;) flat.push_back({old_shape[d], int(d), 1});
    if (shape_size(new_shape) != shape_size(old_shape)) return std::nullopt;
    auto m = DigitMap::from_flat(new_shape, flat, int(old_shape.size()));
    if (!m) return std::nullopt;
    return from_digits("reshape", *m, {}, old_shape);
}

Layout Layout::with_swizzle(const Swizzle& s) const {
    TILEC_CHECK(codomain_.size() == 1, "a swizzle applies to a rank-1 offset");
    if (s.is_identity()) return *this;
    if (digits_ && swizzle_.is_identity()) {
        Layout l = from_digits(name_ + "." + s.str(), *digits_, s, codomain_);
        return l;
    }
    Layout l = *this;
    l.programs_ = new_programs();  // its index_ changes
    l.name_ = name_ + "." + s.str();
    l.index_[0] = s.apply(index_[0]);
    l.digits_ = nullptr;
    if (has_inverse() && codomain_[0] % s.period() == 0) {
        VarMap map{{inv_vars_[0].get(), s.apply(inv_vars_[0])}};
        for (auto& e : l.inv_index_) e = substitute(e, map);
    } else {
        l.inv_vars_.clear();
        l.inv_index_.clear();
    }
    return l;
}

// ---------------------------------------------------------------------------------
// Queries

int64_t Layout::size() const {
    return shape_size(shape_);
}

int64_t Layout::codomain_size() const {
    return shape_size(codomain_);
}

std::vector<Expr> Layout::apply(const std::vector<Expr>& coord) const {
    TILEC_CHECK(coord.size() == vars_.size(), "layout applied to a coordinate of the wrong rank");
    VarMap map;
    for (size_t d = 0; d < vars_.size(); ++d) map[vars_[d].get()] = coord[d];
    std::vector<Expr> out;
    for (const Expr& e : index_) out.push_back(substitute(e, map));
    return out;
}

struct Layout::Programs {
    std::mutex mutex;
    std::vector<Var> vars;  // what `programs` were compiled from
    std::vector<Expr> index;
    std::shared_ptr<const std::vector<IndexProgram>> programs;
    // offsets(), and the programs it was computed with.
    std::shared_ptr<const std::vector<int64_t>> offsets;
    std::shared_ptr<const std::vector<IndexProgram>> offsets_from;
};

std::shared_ptr<Layout::Programs> Layout::new_programs() {
    return std::make_shared<Programs>();
}

std::shared_ptr<const std::vector<IndexProgram>> Layout::programs() const {
    Programs& cache = *programs_;
    std::lock_guard<std::mutex> lock(cache.mutex);
    if (cache.programs && cache.vars == vars_ && cache.index == index_) return cache.programs;
    std::vector<const VarNode*> slots;
    for (const Var& v : vars_) slots.push_back(v.get());
    auto programs = std::make_shared<std::vector<IndexProgram>>();
    for (const Expr& e : index_) programs->emplace_back(e, slots);
    cache.vars = vars_;
    cache.index = index_;
    cache.programs = programs;
    return programs;
}

std::vector<int64_t> Layout::evaluate(const std::vector<int64_t>& coord) const {
    TILEC_CHECK(coord.size() == vars_.size(), "layout coordinate rank mismatch");
    auto programs = this->programs();
    std::vector<int64_t> out;
    out.reserve(programs->size());
    for (const IndexProgram& p : *programs) out.push_back(p.run(coord.data()));
    return out;
}

int64_t Layout::offset(const std::vector<int64_t>& coord) const {
    TILEC_CHECK(index_.size() == 1, "offset of a layout with a multi-dimensional codomain");
    TILEC_CHECK(coord.size() == vars_.size(), "layout coordinate rank mismatch");
    return (*programs())[0].run(coord.data());
}

std::shared_ptr<const std::vector<int64_t>> Layout::offsets() const {
    TILEC_CHECK(index_.size() == 1, "offsets of a layout with a multi-dimensional codomain");
    auto programs = this->programs();
    Programs& cache = *programs_;
    std::lock_guard<std::mutex> lock(cache.mutex);
    if (cache.offsets && cache.offsets_from == programs) return cache.offsets;
    auto out = std::make_shared<std::vector<int64_t>>();
    out->reserve(static_cast<size_t>(size()));
    const IndexProgram& p = (*programs)[0];
    std::vector<int64_t> coord(shape_.size(), 0);
    for (int64_t n = 0, total = size(); n < total; ++n) {
        out->push_back(p.run(coord.data()));
        next_coordinate(coord.data(), shape_);
    }
    cache.offsets = out;
    cache.offsets_from = programs;
    return out;
}

namespace {

// Marks every output of every coordinate; false on a repeat or an out-of-range value.
bool all_distinct_in_range(const Layout& l) {
    int64_t total = l.codomain_size();
    std::vector<bool> seen(size_t(total), false);
    for (int64_t f = 0; f < l.size(); ++f) {
        std::vector<int64_t> out = l.evaluate(unflatten(f, l.shape()));
        for (size_t d = 0; d < out.size(); ++d)
            if (out[d] < 0 || out[d] >= l.codomain_shape()[d]) return false;
        int64_t pos = flatten(out, l.codomain_shape());
        if (seen[size_t(pos)]) return false;
        seen[size_t(pos)] = true;
    }
    return true;
}

}  // namespace

bool Layout::is_injective() const {
    return all_distinct_in_range(*this);
}

bool Layout::is_bijective() const {
    return size() == codomain_size() && all_distinct_in_range(*this);
}

std::optional<Layout> Layout::inverse() const {
    if (!has_inverse()) return std::nullopt;
    Layout l;
    l.name_ = "inverse(" + name_ + ")";
    l.shape_ = codomain_;
    l.codomain_ = shape_;
    l.vars_ = inv_vars_;
    l.index_ = inv_index_;
    l.inv_vars_ = vars_;
    l.inv_index_ = index_;
    return l;
}

Layout Layout::compose(const Layout& inner) const {
    TILEC_CHECK(inner.codomain_.size() == shape_.size(),
                "compose: " + inner.name_ + " maps to rank " + std::to_string(inner.codomain_.size()) + ", " +
                    name_ + " takes rank " + std::to_string(shape_.size()));
    for (size_t d = 0; d < shape_.size(); ++d)
        TILEC_CHECK(inner.codomain_[d] <= shape_[d], "compose: " + inner.name_ + " maps outside the shape of " + name_);
    Layout l;
    l.name_ = name_ + " o " + inner.name_;
    l.shape_ = inner.shape_;
    l.codomain_ = codomain_;
    l.vars_ = inner.vars_;
    l.index_ = apply(inner.index_);
    if (has_inverse() && inner.has_inverse() && inner.codomain_ == shape_) {
        l.inv_vars_ = inv_vars_;
        VarMap map;
        for (size_t d = 0; d < inner.inv_vars_.size(); ++d) map[inner.inv_vars_[d].get()] = inv_index_[d];
        for (const Expr& e : inner.inv_index_) l.inv_index_.push_back(substitute(e, map));
    }
    return l;
}

std::optional<Layout> Layout::reshape(const std::vector<int64_t>& new_shape) const {
    if (shape_size(new_shape) != size()) return std::nullopt;
    if (digits_) {
        if (auto m = digits_->reshape(new_shape)) return from_digits(name_, *m, swizzle_, codomain_);
    }
    auto view = reshape_view(new_shape, shape_);
    if (!view) return std::nullopt;
    return compose(*view);
}

std::optional<Layout> Layout::fuse(size_t dim) const {
    if (dim + 1 >= shape_.size()) return std::nullopt;
    std::vector<int64_t> s = shape_;
    s[dim] *= s[dim + 1];
    s.erase(s.begin() + dim + 1);
    return reshape(s);
}

std::optional<Layout> Layout::split(size_t dim, int64_t inner) const {
    if (dim >= shape_.size() || inner <= 0 || shape_[dim] % inner != 0) return std::nullopt;
    std::vector<int64_t> s = shape_;
    s[dim] /= inner;
    s.insert(s.begin() + dim + 1, inner);
    return reshape(s);
}

namespace {

std::string var_list(const std::vector<Var>& vars) {
    std::string s = "(";
    for (size_t i = 0; i < vars.size(); ++i) s += (i ? ", " : "") + vars[i]->name;
    return s + ")";
}

}  // namespace

std::string Layout::str() const {
    std::string s = name_ + shape_str(shape_) + " -> " + shape_str(codomain_) + ": " + var_list(vars_) + " -> ";
    if (index_.size() == 1) return s + print(index_[0]);
    s += "(";
    for (size_t i = 0; i < index_.size(); ++i) s += (i ? ", " : "") + print(index_[i]);
    return s + ")";
}

}  // namespace tilec::layout
