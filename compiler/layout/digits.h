// The structured form behind the standard layouts and fragments: each coordinate is
// split into mixed-radix digits, and each digit adds `digit * stride` to one output
// (a Layout's offset; a Fragment's thread or register). This is CuTe's shape:stride
// idea reduced to what tilec needs: it gives forward index expressions, exact inverses
// (when an output's digits tile it densely), reshape, and dropping a dimension (the
// thread digits of a dropped dimension become replication).
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "ir/ir.h"

namespace tilec::layout {

// A digit of a coordinate: its value is (x / place) % extent, where place is the
// product of the extents of the digits below it in the same dimension.
struct Digit {
    int64_t extent;
    int out;         // which output it feeds
    int64_t stride;  // its weight in that output
};

struct DigitMap {
    std::vector<int64_t> shape;
    std::vector<std::vector<Digit>> dims;  // per dimension, lowest digit first
    std::vector<Digit> rep;                // digits of the replication index, lowest first
    int num_outputs = 1;

    // Splits the digits of the row-major flattened coordinate (lowest first) across
    // `shape`, cutting a digit where it straddles two dimensions; nullopt when the
    // extents don't divide (e.g. a digit of 4 over a dimension of 6) or don't cover.
    static std::optional<DigitMap> from_flat(std::vector<int64_t> shape, const std::vector<Digit>& flat,
                                             int num_outputs, std::vector<Digit> rep = {});

    int64_t rep_extent() const;
    // All digits of the flattened coordinate, lowest first (last dimension's first).
    std::vector<Digit> flat() const;
    // One past the largest value of output `out`.
    int64_t extent(int out) const;
    // True if the digits feeding `out` (replication included) tile [0, extent(out))
    // exactly once: out is then a bijection of those digits.
    bool is_dense(int out) const;

    // Output expressions of coordinate expressions (assumed in range) and `rep`.
    std::vector<ir::Expr> forward(const std::vector<ir::Expr>& coords, const ir::Expr& rep_index) const;
    std::vector<int64_t> eval(const std::vector<int64_t>& coord, int64_t rep_index) const;
    // The coordinate expressions (then the replication index, if any) that give output
    // values `outs`; nullopt unless every output is dense.
    std::optional<std::vector<ir::Expr>> inverse(const std::vector<ir::Expr>& outs) const;

    std::optional<DigitMap> reshape(const std::vector<int64_t>& new_shape) const;
    // Removes dimension `dim` (or keeps it with extent 1): its digits that feed
    // `to_rep_out` become replication digits, the others vanish, and the output
    // `densify_out` is renumbered densely (registers freed by the dropped digits).
    DigitMap drop_dim(size_t dim, int to_rep_out, int densify_out, bool keep) const;
};

}  // namespace tilec::layout
