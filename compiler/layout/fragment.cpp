// Fragments: the standard ones are built as digit maps (thread digits, register
// digits, replication digits), which gives their expressions, their inverses and
// their reductions exactly; the mma ones transcribe the PTX ISA formulas into digits
// (groupID = lane >> 2 is a row digit of stride 4 in the lane, threadID_in_group =
// lane % 4 a column digit of stride 1), and the tests check them against the formulas.
#include "layout/fragment.h"

#include <algorithm>
#include <mutex>
#include <set>

#include "ir/printer.h"
#include "ir/visitor.h"
#include "layout/digits.h"
#include "layout/index_expr.h"
#include "support/diagnostics.h"

namespace tilec::layout {

using namespace ir;

namespace {

constexpr int kThread = 0;  // digit outputs of a fragment
constexpr int kReg = 1;
constexpr int64_t kWarp = 32;

Var make_rep_var() {
    return make_var("rep", DataType::index(), VarKind::Let);
}

}  // namespace

Fragment Fragment::from_digits(std::string name, const DigitMap& digits, int64_t threads) {
    Fragment f;
    f.name_ = std::move(name);
    f.shape_ = digits.shape;
    f.vars_ = make_index_vars(f.shape_.size());
    f.rep_var_ = make_rep_var();
    f.replicate_ = digits.rep_extent();
    f.threads_ = std::max(threads, digits.extent(kThread));
    f.regs_ = digits.extent(kReg);
    std::vector<Expr> coords(f.vars_.begin(), f.vars_.end());
    auto outs = digits.forward(coords, f.rep_var_);
    f.thread_ = outs[kThread];
    f.reg_ = outs[kReg];
    f.digits_ = std::make_shared<const DigitMap>(digits);
    // The inverse exists when threads x registers are tiled exactly once.
    if (f.threads_ == digits.extent(kThread)) {
        std::vector<Var> tr = {make_var("t", DataType::index(), VarKind::Let),
                               make_var("r", DataType::index(), VarKind::Let)};
        if (auto inv = digits.inverse({tr[0], tr[1]})) {
            std::vector<int64_t> codomain = f.shape_;
            if (f.replicate_ > 1) codomain.push_back(f.replicate_);
            std::vector<Var> fwd_vars = f.vars_;
            if (f.replicate_ > 1) fwd_vars.push_back(f.rep_var_);
            Expr thread = f.thread_, reg = f.reg_;
            Layout::ExprFn inverse_fn = [&](const std::vector<Var>& v) {
                VarMap map{{tr[0].get(), v[0]}, {tr[1].get(), v[1]}};
                std::vector<Expr> out;
                for (const Expr& e : *inv) out.push_back(substitute(e, map));
                return out;
            };
            Layout::ExprFn forward_fn = [&](const std::vector<Var>& v) {
                VarMap map;
                for (size_t d = 0; d < fwd_vars.size(); ++d) map[fwd_vars[d].get()] = v[d];
                if (f.replicate_ == 1) map[f.rep_var_.get()] = idx(0);
                return std::vector<Expr>{substitute(thread, map), substitute(reg, map)};
            };
            f.inverse_ = Layout::from_exprs("inverse(" + f.name_ + ")", {f.threads_, f.regs_}, codomain,
                                            inverse_fn, forward_fn);
        }
    }
    return f;
}

std::optional<Fragment> Fragment::parallel(std::vector<int64_t> shape, int64_t threads, int64_t vector_width) {
    int64_t n = shape_size(shape);
    if (threads <= 0 || vector_width <= 0 || n <= 0 || n % vector_width != 0) return std::nullopt;
    int64_t vectors = n / vector_width;
    std::vector<Digit> flat = {{vector_width, kReg, 1}};
    std::vector<Digit> rep;
    if (vectors >= threads) {
        if (vectors % threads != 0) return std::nullopt;
        flat.push_back({threads, kThread, 1});
        flat.push_back({vectors / threads, kReg, vector_width});
    } else {
        if (threads % vectors != 0) return std::nullopt;
        flat.push_back({vectors, kThread, 1});
        rep.push_back({threads / vectors, kThread, vectors});
    }
    auto m = DigitMap::from_flat(shape, flat, 2, rep);
    if (!m) return std::nullopt;
    return from_digits("parallel<v" + std::to_string(vector_width) + ">", *m, threads);
}

Fragment Fragment::broadcast(std::vector<int64_t> shape, int64_t threads) {
    auto m = DigitMap::from_flat(shape, {{shape_size(shape), kReg, 1}}, 2, {{threads, kThread, 1}});
    TILEC_CHECK(m.has_value(), "broadcast fragment of shape " + shape_str(shape));
    return from_digits("broadcast", *m, threads);
}

// In the three mma fragments below, lane = 4 * groupID + threadID_in_group and the
// ISA's register number i inside one atom are spelled as digits of the row / column.
namespace {

// The m16n8 C atoms over a warps_m x warps_n grid; `interleave` puts the warp-row digit
// below the atom-row digit (warp rows interleaved, as a warpgroup's wgmma holds them).
std::optional<DigitMap> mma_c_digits(int64_t m, int64_t n, int64_t warps_m, int64_t warps_n, bool interleave) {
    if (warps_m <= 0 || warps_n <= 0 || m % (16 * warps_m) != 0 || n % (8 * warps_n) != 0) return std::nullopt;
    int64_t am = m / warps_m / 16, an = n / warps_n / 8;
    DigitMap d;
    d.shape = {m, n};
    d.num_outputs = 2;
    // row = groupID + 8 * (i >> 1); col = threadID_in_group * 2 + (i & 1)
    Digit atoms{am, kReg, 4 * an}, warps{warps_m, kThread, kWarp * warps_n};
    d.dims = {{{8, kThread, 4}, {2, kReg, 2}, interleave ? warps : atoms, interleave ? atoms : warps},
              {{2, kReg, 1}, {4, kThread, 1}, {an, kReg, 4}, {warps_n, kThread, kWarp}}};
    for (auto& ds : d.dims) std::erase_if(ds, [](const Digit& g) { return g.extent == 1; });
    return d;
}

}  // namespace

std::optional<Fragment> Fragment::mma_m16n8k16_c(int64_t m, int64_t n, int64_t warps_m, int64_t warps_n) {
    auto d = mma_c_digits(m, n, warps_m, warps_n, false);
    if (!d) return std::nullopt;
    return from_digits("mma_m16n8k16_c", *d, kWarp * warps_m * warps_n);
}

std::optional<Fragment> Fragment::mma_m16n8k16_c_interleaved(int64_t m, int64_t n, int64_t warps_m, int64_t warps_n) {
    auto d = mma_c_digits(m, n, warps_m, warps_n, true);
    if (!d) return std::nullopt;
    return from_digits("mma_m16n8k16_c_interleaved", *d, kWarp * warps_m * warps_n);
}

std::optional<Fragment> Fragment::wgmma_m64nNk16_d(int64_t m, int64_t n, int64_t groups_m, int64_t groups_n) {
    if (groups_m <= 0 || groups_n <= 0 || m % (64 * groups_m) != 0 || n % (8 * groups_n) != 0) return std::nullopt;
    int64_t tiles = m / groups_m / 64, an = n / groups_n / 8;
    DigitMap d;
    d.shape = {m, n};
    d.num_outputs = 2;
    // row = 16 * warp + lane / 4 + 8 * ((i / 2) % 2); col = 8 * (i / 4) + 2 * (lane % 4) + i % 2
    d.dims = {{{8, kThread, 4}, {2, kReg, 2}, {4, kThread, kWarp}, {tiles, kReg, 4 * an},
               {groups_m, kThread, 4 * kWarp * groups_n}},
              {{2, kReg, 1}, {4, kThread, 1}, {an, kReg, 4}, {groups_n, kThread, 4 * kWarp}}};
    for (auto& ds : d.dims) std::erase_if(ds, [](const Digit& g) { return g.extent == 1; });
    return from_digits("wgmma_m64nNk16_d", d, 4 * kWarp * groups_m * groups_n);
}

std::optional<Fragment> Fragment::amd_matrix_c(AmdMatrixAtom atom, int64_t m, int64_t n, int64_t warps_m,
                                               int64_t warps_n) {
    // The atom's row and column digits (lowest first), its size and registers, its wave.
    std::vector<Digit> rows, cols;
    int64_t side = 16, regs = 4, wave = 64;
    switch (atom) {
    case AmdMatrixAtom::Mfma32:  // i = 8 * (g / 4) + 4 * (l / 32) + g % 4, j = l % 32
        side = 32, regs = 16;
        rows = {{4, kReg, 1}, {2, kThread, 32}, {4, kReg, 4}};
        cols = {{32, kThread, 1}};
        break;
    case AmdMatrixAtom::Mfma16:  // i = 4 * (l / 16) + g % 4, j = l % 16
        rows = {{4, kReg, 1}, {4, kThread, 16}};
        cols = {{16, kThread, 1}};
        break;
    case AmdMatrixAtom::Wmma16:  // i = 2 * g + l / 16, j = l % 16
        // Also v_wmma_f16_16x16x16_f16's f16 C / D: the calculator puts D[i][j] at the same
        // GPR and lane, in the half OPSEL[2] picks (tilec's lowering: 0, bits [15:0]), so
        // register g here is that half and the layout is the f32 WMMA's.
        regs = 8, wave = 32;
        rows = {{2, kThread, 16}, {8, kReg, 1}};
        cols = {{16, kThread, 1}};
        break;
    case AmdMatrixAtom::Mfma32T:  // i = l % 32, j = 8 * (g / 4) + 4 * (l / 32) + g % 4
        side = 32, regs = 16;
        rows = {{32, kThread, 1}};
        cols = {{4, kReg, 1}, {2, kThread, 32}, {4, kReg, 4}};
        break;
    case AmdMatrixAtom::Mfma16T:  // i = l % 16, j = 4 * (l / 16) + g % 4
        rows = {{16, kThread, 1}};
        cols = {{4, kReg, 1}, {4, kThread, 16}};
        break;
    }
    if (warps_m <= 0 || warps_n <= 0 || m % (side * warps_m) != 0 || n % (side * warps_n) != 0) return std::nullopt;
    int64_t am = m / warps_m / side, an = n / warps_n / side;
    DigitMap d;
    d.shape = {m, n};
    d.num_outputs = 2;
    rows.push_back({am, kReg, regs * an});
    rows.push_back({warps_m, kThread, wave * warps_n});
    cols.push_back({an, kReg, regs});
    cols.push_back({warps_n, kThread, wave});
    d.dims = {rows, cols};
    for (auto& ds : d.dims) std::erase_if(ds, [](const Digit& g) { return g.extent == 1; });
    static const char* names[] = {"mfma_32x32_c", "mfma_16x16_c", "wmma_16x16_c", "mfma_32x32_ct", "mfma_16x16_ct"};
    return from_digits(names[static_cast<int>(atom)], d, wave * warps_m * warps_n);
}

std::optional<Fragment> Fragment::mma_m16n8k16_a(int64_t m, int64_t k, int64_t warps_m, int64_t warps_n) {
    if (warps_m <= 0 || warps_n <= 0 || m % (16 * warps_m) != 0 || k % 16 != 0) return std::nullopt;
    int64_t am = m / warps_m / 16, ak = k / 16;
    DigitMap d;
    d.shape = {m, k};
    d.num_outputs = 2;
    // row = groupID + 8 * ((i >> 1) & 1); col = threadID_in_group * 2 + (i & 1) + 8 * (i >> 2)
    d.dims = {{{8, kThread, 4}, {2, kReg, 2}, {am, kReg, 8 * ak}, {warps_m, kThread, kWarp * warps_n}},
              {{2, kReg, 1}, {4, kThread, 1}, {2, kReg, 4}, {ak, kReg, 8}}};
    d.rep = {{warps_n, kThread, kWarp}};
    for (auto& ds : d.dims) std::erase_if(ds, [](const Digit& g) { return g.extent == 1; });
    std::erase_if(d.rep, [](const Digit& g) { return g.extent == 1; });
    return from_digits("mma_m16n8k16_a", d, kWarp * warps_m * warps_n);
}

std::optional<Fragment> Fragment::mma_m16n8k16_b(int64_t k, int64_t n, int64_t warps_m, int64_t warps_n) {
    if (warps_m <= 0 || warps_n <= 0 || k % 16 != 0 || n % (8 * warps_n) != 0) return std::nullopt;
    int64_t ak = k / 16, an = n / warps_n / 8;
    DigitMap d;
    d.shape = {k, n};
    d.num_outputs = 2;
    // row (k) = threadID_in_group * 2 + (i & 1) + 8 * (i >> 1); col (n) = groupID
    d.dims = {{{2, kReg, 1}, {4, kThread, 1}, {2, kReg, 2}, {ak, kReg, 4 * an}},
              {{8, kThread, 4}, {an, kReg, 4}, {warps_n, kThread, kWarp}}};
    d.rep = {{warps_m, kThread, kWarp * warps_n}};
    for (auto& ds : d.dims) std::erase_if(ds, [](const Digit& g) { return g.extent == 1; });
    std::erase_if(d.rep, [](const Digit& g) { return g.extent == 1; });
    return from_digits("mma_m16n8k16_b", d, kWarp * warps_m * warps_n);
}

Fragment Fragment::from_exprs(std::string name, std::vector<int64_t> shape, int64_t threads, int64_t replicate,
                              const ExprFn& fn) {
    Fragment f;
    f.name_ = std::move(name);
    f.shape_ = std::move(shape);
    f.threads_ = threads;
    f.replicate_ = replicate;
    f.vars_ = make_index_vars(f.shape_.size());
    f.rep_var_ = make_rep_var();
    std::tie(f.thread_, f.reg_) = fn(f.vars_, f.rep_var_);
    int64_t max_reg = -1;
    for (int64_t i = 0; i < f.size(); ++i)
        for (int64_t r = 0; r < replicate; ++r) max_reg = std::max(max_reg, f.evaluate(unflatten(i, f.shape_), r).reg);
    f.regs_ = max_reg + 1;
    return f;
}

std::optional<Fragment> Fragment::reduce_dim(size_t dim, bool keep_dim) const {
    if (!digits_ || dim >= shape_.size()) return std::nullopt;
    DigitMap m = digits_->drop_dim(dim, kThread, kReg, keep_dim);
    return from_digits(name_ + ".reduce(" + std::to_string(dim) + ")", m, threads_);
}

std::optional<Fragment> Fragment::expand_dim(size_t dim, int64_t extent, bool replace_unit_dim) const {
    if (!digits_ || extent <= 0) return std::nullopt;
    if (replace_unit_dim ? (dim >= shape_.size() || shape_[dim] != 1) : dim > shape_.size()) return std::nullopt;
    DigitMap m = *digits_;
    // Replica thread digits, lowest first: the ones the extent can absorb.
    int64_t all_rep = 1;
    for (const Digit& g : m.rep)
        if (g.out == kThread) all_rep *= g.extent;
    int64_t vec = 1;
    for (int64_t v : {int64_t{4}, int64_t{2}})
        if (extent % v == 0 && (extent / v) % all_rep == 0) {
            vec = v;
            break;
        }
    int64_t left = extent / vec;
    std::vector<Digit> used, kept;
    for (const Digit& g : m.rep) {
        if (g.out == kThread && left % g.extent == 0) {
            used.push_back(g);
            left /= g.extent;
        } else {
            kept.push_back(g);
        }
    }
    // Registers: the new dimension's vector and outer digits first (stride 1, vec), the
    // old register digits above them in their old order.
    int64_t new_regs = vec * left;
    for (auto& ds : m.dims)
        for (Digit& g : ds)
            if (g.out == kReg) g.stride *= new_regs;
    for (Digit& g : kept)
        if (g.out == kReg) g.stride *= new_regs;
    std::vector<Digit> digits;
    if (vec > 1) digits.push_back({vec, kReg, 1});
    digits.insert(digits.end(), used.begin(), used.end());
    if (left > 1) digits.push_back({left, kReg, vec});
    m.rep = kept;
    if (replace_unit_dim) {
        m.shape[dim] = extent;
        m.dims[dim] = digits;
    } else {
        m.shape.insert(m.shape.begin() + static_cast<std::ptrdiff_t>(dim), extent);
        m.dims.insert(m.dims.begin() + static_cast<std::ptrdiff_t>(dim), digits);
    }
    return from_digits(name_ + ".expand(" + std::to_string(dim) + ", " + std::to_string(extent) + ")", m, threads_);
}

// What a fragment's owners follow from: the expressions (immutable, kept alive here, so
// pointer equality is identity), their variables, the shape and the replication.
struct Fragment::Mapping {
    ir::Expr thread, reg;
    std::vector<ir::Var> vars;
    ir::Var rep_var;
    std::vector<int64_t> shape;
    int64_t replicate = 0;
    bool operator==(const Mapping&) const = default;
};

struct Fragment::Programs {
    IndexProgram thread, reg;  // slots: vars_, then rep_var_
};

// The mapping a slot table was computed from and the table: for every coordinate in
// row-major order, its replicate_ owners as sorted (thread, register) pairs; beside
// them, the compiled programs and the mapping they were compiled from.
struct Fragment::SlotTable {
    std::mutex mutex;
    Mapping mapping;
    std::shared_ptr<const std::vector<int64_t>> table;
    std::mutex programs_mutex;  // apart: the table's computation evaluates
    Mapping programs_mapping;
    std::shared_ptr<const Programs> programs;
};

std::shared_ptr<const Fragment::Programs> Fragment::programs() const {
    SlotTable& cache = *slot_table_;
    std::lock_guard<std::mutex> lock(cache.programs_mutex);
    // Compared in place: building this fragment's Mapping per evaluation (copies of its
    // vectors) cost more than the evaluation.
    const Mapping& was = cache.programs_mapping;
    if (cache.programs && was.thread == thread_ && was.reg == reg_ && was.vars == vars_ &&
        was.rep_var == rep_var_)
        return cache.programs;
    Mapping now = mapping();
    std::vector<const VarNode*> slots;
    for (const Var& v : vars_) slots.push_back(v.get());
    slots.push_back(rep_var_.get());
    auto programs =
        std::make_shared<const Programs>(Programs{IndexProgram(thread_, slots), IndexProgram(reg_, slots)});
    cache.programs_mapping = std::move(now);
    cache.programs = programs;
    return programs;
}

Fragment::Mapping Fragment::mapping() const {
    return {thread_, reg_, vars_, rep_var_, shape_, replicate_};
}

std::shared_ptr<Fragment::SlotTable> Fragment::new_slot_table() {
    return std::make_shared<SlotTable>();
}

std::shared_ptr<const std::vector<int64_t>> Fragment::slot_table() const {
    SlotTable& cache = *slot_table_;
    std::lock_guard<std::mutex> lock(cache.mutex);
    Mapping now = mapping();
    if (cache.table && cache.mapping == now) return cache.table;
    auto table = std::make_shared<std::vector<int64_t>>();
    table->reserve(size_t(size() * replicate_ * 2));
    std::vector<std::pair<int64_t, int64_t>> owners_of;
    // owners() of each coordinate, with the programs fetched once and the coordinate
    // (then the replica) stepped in place: no allocation per element.
    auto programs = this->programs();
    std::vector<int64_t> values(shape_.size() + 1, 0);  // the coordinate, then the replica
    for (int64_t i = 0; i < size(); ++i) {
        if (i > 0) next_coordinate(values.data(), shape_);
        owners_of.clear();
        for (int64_t r = 0; r < replicate_; ++r) {
            values.back() = r;
            owners_of.emplace_back(programs->thread.run(values.data()), programs->reg.run(values.data()));
        }
        std::sort(owners_of.begin(), owners_of.end());
        for (auto& [t, r] : owners_of) {
            table->push_back(t);
            table->push_back(r);
        }
    }
    cache.mapping = std::move(now);
    cache.table = table;
    return table;
}

bool Fragment::same_slots(const Fragment& other) const {
    if (threads_ != other.threads_ || regs_ != other.regs_) return false;
    Mapping mine = mapping(), theirs = other.mapping();
    if (mine.shape != theirs.shape || mine.replicate != theirs.replicate) return false;
    if (mine == theirs) return true;  // the same expressions
    return *slot_table() == *other.slot_table();
}

Fragment Fragment::compose(const Layout& inner) const {
    TILEC_CHECK(inner.codomain_shape() == shape_, "compose: " + inner.name() + " doesn't map onto the shape of " + name_);
    Fragment f;
    f.name_ = name_ + " o " + inner.name();
    f.shape_ = inner.shape();
    f.threads_ = threads_;
    f.regs_ = regs_;
    f.replicate_ = replicate_;
    f.vars_ = inner.vars();
    f.rep_var_ = rep_var_;
    std::tie(f.thread_, f.reg_) = apply(inner.index(), rep_var_);
    auto inner_inv = inner.inverse();
    if (inverse_ && inner_inv) {
        // (t, r) -> coordinate of this fragment -> coordinate of inner; rep unchanged.
        const Layout& mine = *inverse_;
        std::vector<int64_t> codomain = f.shape_;
        if (replicate_ > 1) codomain.push_back(replicate_);
        std::vector<Var> fwd_vars = f.vars_;
        if (replicate_ > 1) fwd_vars.push_back(rep_var_);
        Layout::ExprFn inverse_fn = [&](const std::vector<Var>& v) {
            std::vector<Expr> c = mine.apply({v[0], v[1]});
            std::vector<Expr> coord(c.begin(), c.begin() + shape_.size());
            std::vector<Expr> out = inner_inv->apply(coord);
            if (replicate_ > 1) out.push_back(c.back());
            return out;
        };
        Layout::ExprFn forward_fn = [&](const std::vector<Var>& v) {
            VarMap map;
            for (size_t d = 0; d < fwd_vars.size(); ++d) map[fwd_vars[d].get()] = v[d];
            if (replicate_ == 1) map[rep_var_.get()] = idx(0);
            return std::vector<Expr>{substitute(f.thread_, map), substitute(f.reg_, map)};
        };
        f.inverse_ = Layout::from_exprs("inverse(" + f.name_ + ")", {threads_, regs_}, codomain, inverse_fn,
                                        forward_fn);
    }
    return f;
}

std::optional<Fragment> Fragment::reshape(const std::vector<int64_t>& new_shape) const {
    if (shape_size(new_shape) != size()) return std::nullopt;
    if (digits_) {
        if (auto m = digits_->reshape(new_shape)) return from_digits(name_, *m, threads_);
    }
    auto view = Layout::reshape_view(new_shape, shape_);
    if (!view) return std::nullopt;
    return compose(*view);
}

int64_t Fragment::size() const {
    return shape_size(shape_);
}

std::pair<Expr, Expr> Fragment::apply(const std::vector<Expr>& coord, const Expr& rep) const {
    TILEC_CHECK(coord.size() == vars_.size(), "fragment applied to a coordinate of the wrong rank");
    VarMap map{{rep_var_.get(), rep}};
    for (size_t d = 0; d < vars_.size(); ++d) map[vars_[d].get()] = coord[d];
    return {substitute(thread_, map), substitute(reg_, map)};
}

namespace {

// A coordinate and a replica index as the programs' slots read them (vars_, rep_var_).
class SlotValues {
public:
    explicit SlotValues(const std::vector<int64_t>& coord) {
        if (coord.size() + 1 > std::size(small_)) big_.resize(coord.size() + 1);
        values_ = big_.empty() ? small_ : big_.data();
        std::copy(coord.begin(), coord.end(), values_);
        rep_ = values_ + coord.size();
    }
    const int64_t* with_rep(int64_t rep) {
        *rep_ = rep;
        return values_;
    }

private:
    int64_t small_[8];
    std::vector<int64_t> big_;
    int64_t* values_;
    int64_t* rep_;
};

}  // namespace

FragmentSlot Fragment::evaluate(const std::vector<int64_t>& coord, int64_t rep) const {
    TILEC_CHECK(coord.size() == vars_.size(), "layout coordinate rank mismatch");
    auto programs = this->programs();
    SlotValues values(coord);
    const int64_t* v = values.with_rep(rep);
    return {programs->thread.run(v), programs->reg.run(v)};
}

std::vector<FragmentSlot> Fragment::owners(const std::vector<int64_t>& coord) const {
    TILEC_CHECK(coord.size() == vars_.size(), "layout coordinate rank mismatch");
    auto programs = this->programs();
    SlotValues values(coord);
    std::vector<FragmentSlot> slots;
    slots.reserve(size_t(replicate_));
    for (int64_t r = 0; r < replicate_; ++r) {
        const int64_t* v = values.with_rep(r);
        slots.push_back({programs->thread.run(v), programs->reg.run(v)});
    }
    return slots;
}

bool Fragment::is_complete() const {
    for (int64_t i = 0; i < size(); ++i)
        for (const FragmentSlot& s : owners(unflatten(i, shape_)))
            if (s.thread < 0 || s.thread >= threads_ || s.reg < 0 || s.reg >= regs_) return false;
    return true;
}

bool Fragment::is_injective() const {
    std::vector<bool> used(size_t(threads_ * regs_), false);
    for (int64_t i = 0; i < size(); ++i) {
        std::set<int64_t> threads;
        for (const FragmentSlot& s : owners(unflatten(i, shape_))) {
            if (s.thread < 0 || s.thread >= threads_ || s.reg < 0 || s.reg >= regs_) return false;
            size_t slot = size_t(s.thread * regs_ + s.reg);
            if (used[slot] || !threads.insert(s.thread).second) return false;
            used[slot] = true;
        }
    }
    return true;
}

bool Fragment::is_exact() const {
    return is_injective() && size() * replicate_ == threads_ * regs_;
}

std::optional<Layout> Fragment::inverse() const {
    return inverse_;
}

std::string Fragment::str() const {
    std::string s = name_ + shape_str(shape_) + " -> " + std::to_string(threads_) + " threads x " +
                    std::to_string(regs_) + " regs: (";
    for (size_t d = 0; d < vars_.size(); ++d) s += (d ? ", " : "") + vars_[d]->name;
    if (replicate_ > 1) s += "; rep < " + std::to_string(replicate_);
    return s + ") -> thread " + print(thread_) + ", reg " + print(reg_);
}

}  // namespace tilec::layout
