// Layout: a map from a tile coordinate (static shape) to a linear offset, the
// shared-memory address of an element in elements. Row-major, column-major, strided,
// padded and XOR-swizzled layouts; composition, inverse (where bijective), reshape,
// fuse and split of dimensions; evaluation on integers and application to IR index
// expressions (what lowering emits). Also the Swizzle functor of CUTLASS/TileLang and
// the standard 32B/64B/128B shared-memory swizzles used by ldmatrix and TMA.
//
// A Layout is held as index expressions (Tile IR, i64) over placeholder variables, one
// per input dimension, so the same object prints, evaluates and lowers. A Layout may
// map to several outputs (codomain rank > 1), e.g. the view maps that reshape uses.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace tilec::layout {

struct DigitMap;
class IndexProgram;

// CUTLASS's Swizzle<B, M, S> (include/cute/swizzle.hpp, "A generic Swizzle functor"):
// of an offset 0b...YYY...ZZZ..., keep the low M bits, and XOR the B bits at
// [M + S, M + S + B) into the B bits at [M, M + B):
//   apply(o) = o ^ (((o >> (M + S)) & (2^B - 1)) << M).
// Only S >= B is allowed (CUTLASS asserts |S| >= B): the two bit ranges are then
// disjoint, the high bits pass through unchanged, and apply is its own inverse.
struct Swizzle {
    int bits = 0;   // B: how many bits are XORed
    int base = 0;   // M: low bits kept as they are (log2 of the unit swizzled: a 16-byte chunk)
    int shift = 0;  // S: distance from the source bits down to the target bits

    Swizzle() = default;
    Swizzle(int b, int m, int s);
    bool is_identity() const { return bits == 0; }
    // 2^(M + S + B): the swizzle permutes each aligned block of this many offsets.
    int64_t period() const { return int64_t(1) << (base + shift + bits); }
    int64_t apply(int64_t offset) const;
    ir::Expr apply(const ir::Expr& offset) const;
    std::string str() const;  // "Swizzle<3, 3, 3>"
    friend bool operator==(const Swizzle& a, const Swizzle& b) {
        return a.bits == b.bits && a.base == b.base && a.shift == b.shift;
    }
};

// The shared-memory swizzle modes of TMA (CU_TENSOR_MAP_SWIZZLE_32B/64B/128B) and of
// CUTLASS's SW32/SW64/SW128 atoms: 16-byte chunks of a row of 32/64/128 bytes are
// XORed with bits of the row index, so the 8 chunks that ldmatrix (or a column of a
// copy) reads from 8 consecutive rows fall in 8 different bank groups.
enum class SmemSwizzle { None, B32, B64, B128 };
const char* smem_swizzle_name(SmemSwizzle s);  // "none", "32B", "64B", "128B"
int64_t smem_swizzle_bytes(SmemSwizzle s);     // 0, 32, 64, 128
// The functor of a mode for elements of `elem_bits` bits, on element offsets:
// Swizzle<log2(bytes / 16), log2(16 bytes / element size), 3> (in bytes CUTLASS's
// Swizzle<3,4,3> is SW128; 16-bit elements drop one base bit, 32-bit ones two).
Swizzle smem_swizzle_functor(SmemSwizzle s, int elem_bits);

class Layout {
public:
    // Offsets of the usual dense layouts.
    static Layout row_major(std::vector<int64_t> shape);
    static Layout col_major(std::vector<int64_t> shape);
    // offset = sum(coord[d] * strides[d]); may be non-injective (stride 0: broadcast).
    static Layout strided(std::vector<int64_t> shape, std::vector<int64_t> strides);
    // Row-major with the last dimension padded by `pad` elements (the classic fix for
    // bank conflicts without a swizzle); injective, not bijective onto its codomain
    // (the allocation, prod(shape[:-1]) * (shape[-1] + pad)).
    static Layout padded(std::vector<int64_t> shape, int64_t pad);
    // A rows x cols tile of `elem_bits`-bit elements in shared memory with a swizzle
    // mode: the columns split into panels as wide as the swizzle (128 bytes for 128B),
    // panels stored one after another, each panel row-major and swizzled. nullopt if
    // the shape doesn't fit the mode (rows % 8, cols % panel width, element size).
    static std::optional<Layout> swizzled(int64_t rows, int64_t cols, int elem_bits, SmemSwizzle mode);
    // The widest mode that fits the shape (None if none does), as TileLang chooses.
    static SmemSwizzle widest_swizzle(int64_t rows, int64_t cols, int elem_bits);
    // Any map given by expressions over placeholder vars; `inverse`, if given, maps
    // placeholder vars of the codomain back to the coordinate (checked by the tests of
    // whoever builds it, not here).
    using ExprFn = std::function<std::vector<ir::Expr>(const std::vector<ir::Var>&)>;
    static Layout from_exprs(std::string name, std::vector<int64_t> shape, std::vector<int64_t> codomain,
                             const ExprFn& forward, const ExprFn& inverse = nullptr);
    // The view that reads a coordinate of `new_shape` as the coordinate of `old_shape`
    // with the same row-major position (what reshape composes with).
    static std::optional<Layout> reshape_view(std::vector<int64_t> new_shape, std::vector<int64_t> old_shape);

    // This layout followed by `s` on its (rank-1) offset.
    Layout with_swizzle(const Swizzle& s) const;

    const std::string& name() const { return name_; }
    const std::vector<int64_t>& shape() const { return shape_; }
    size_t rank() const { return shape_.size(); }
    int64_t size() const;  // number of coordinates
    const std::vector<int64_t>& codomain_shape() const { return codomain_; }
    int64_t codomain_size() const;  // e.g. the allocation in elements

    // Placeholder vars (one per dimension) and the output expressions over them.
    const std::vector<ir::Var>& vars() const { return vars_; }
    const std::vector<ir::Expr>& index() const { return index_; }
    // The output expressions of coordinate expressions (lowering's index arithmetic).
    std::vector<ir::Expr> apply(const std::vector<ir::Expr>& coord) const;
    // Evaluates the expressions on an integer coordinate.
    std::vector<int64_t> evaluate(const std::vector<int64_t>& coord) const;
    // The offset of a layout with a rank-1 codomain.
    int64_t offset(const std::vector<int64_t>& coord) const;
    // offset() of every coordinate, in row-major order of the shape: computed once and
    // shared by copies of this layout (the lowerings that check a layout element by
    // element, e.g. which swizzle a wgmma operand's tile has, read it).
    std::shared_ptr<const std::vector<int64_t>> offsets() const;

    // By enumeration: no two coordinates share an output (and all are in range).
    bool is_injective() const;
    // Injective and onto: a permutation of [0, codomain_size()).
    bool is_bijective() const;
    // The inverse (codomain -> coordinate) where this layout is bijective and built
    // from invertible pieces (dense layouts, swizzles, compositions and reshapes of
    // them, or from_exprs with an inverse); nullopt otherwise.
    std::optional<Layout> inverse() const;
    bool has_inverse() const { return !inv_index_.empty(); }

    // this(inner(x)): inner's codomain must be this layout's shape.
    Layout compose(const Layout& inner) const;
    // The same elements addressed by a coordinate of another shape with the same
    // size (row-major order); fuse merges dims d and d+1; split cuts dim d into
    // (shape[d] / inner, inner). nullopt if sizes don't agree.
    std::optional<Layout> reshape(const std::vector<int64_t>& new_shape) const;
    std::optional<Layout> fuse(size_t dim) const;
    std::optional<Layout> split(size_t dim, int64_t inner) const;

    // "swizzle128B<f16>[64, 64] -> [4096]: (i, j) -> ...": name, shapes, expressions.
    std::string str() const;

    // The structured form, when the layout came from one (internal: reshape uses it).
    static Layout from_digits(std::string name, const DigitMap& digits, const Swizzle& swizzle = {},
                              std::vector<int64_t> codomain = {});

private:
    Layout() = default;
    std::string name_;
    std::vector<int64_t> shape_, codomain_;
    std::vector<ir::Var> vars_;
    std::vector<ir::Expr> index_;
    std::vector<ir::Var> inv_vars_;  // over the codomain; empty with inv_index_ if no inverse
    std::vector<ir::Expr> inv_index_;
    std::shared_ptr<const DigitMap> digits_;  // null unless built from digits
    Swizzle swizzle_;                         // applied after digits_
    // index_ compiled (IndexProgram) on the first evaluation, shared by copies and
    // compiled again when the expressions it was compiled from are not this one's.
    struct Programs;
    std::shared_ptr<const std::vector<IndexProgram>> programs() const;
    static std::shared_ptr<Programs> new_programs();
    std::shared_ptr<Programs> programs_ = new_programs();
};

}  // namespace tilec::layout
