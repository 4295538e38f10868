// Linear forms: integer expressions as sum of coeff * atom + constant, the canonical shape
// in which the simplifier cancels terms, then built back into IR.
#include "transform/simplify_internal.h"

namespace tilec::transform::detail {

void add_term(Sum& sum, const Expr& atom, int64_t coeff) {
    for (auto& [a, c] : sum.terms) {
        if (structural_equal(a, atom)) {
            c = coef_norm(wadd(c, coeff), sum.type);
            return;
        }
    }
    sum.terms.emplace_back(atom, coef_norm(coeff, sum.type));
}

void collect(const Expr& e, int64_t coeff, Sum& sum) {
    if (auto imm = e->as<IntImmNode>()) {
        sum.constant = coef_norm(wadd(sum.constant, wmul(imm->value, coeff)), sum.type);
        return;
    }
    if (auto b = e->as<BinaryNode>()) {
        switch (b->op) {
        case BinaryOp::Add:
            collect(b->a, coeff, sum);
            collect(b->b, coeff, sum);
            return;
        case BinaryOp::Sub:
            collect(b->a, coeff, sum);
            collect(b->b, wneg(coeff), sum);
            return;
        case BinaryOp::Mul:
            if (auto c = as_const_int(b->b)) return collect(b->a, wmul(coeff, *c), sum);
            if (auto c = as_const_int(b->a)) return collect(b->b, wmul(coeff, *c), sum);
            break;
        default: break;
        }
    }
    if (auto un = e->as<UnaryNode>(); un && un->op == UnaryOp::Neg) return collect(un->a, wneg(coeff), sum);
    add_term(sum, e, coeff);
}

// x = c * floordiv(x, c) + floormod(x, c): folds k * c * (x / c) + k * (x % c) into k * x.
bool fold_div_mod_pairs(Sum& sum) {
    for (size_t i = 0; i < sum.terms.size(); ++i) {
        auto mod = sum.terms[i].first->as<BinaryNode>();
        int64_t k = sum.terms[i].second;
        if (!mod || mod->op != BinaryOp::FloorMod || k == 0) continue;
        auto c = as_const_int(mod->b);
        if (!c || *c == 0) continue;
        for (size_t j = 0; j < sum.terms.size(); ++j) {
            auto div = sum.terms[j].first->as<BinaryNode>();
            if (!div || div->op != BinaryOp::FloorDiv || !is_const_int(div->b, *c)) continue;
            if (!structural_equal(div->a, mod->a)) continue;
            if (sum.terms[j].second != coef_norm(wmul(k, *c), sum.type)) continue;
            Expr x = mod->a;
            sum.terms[i].second = 0;
            sum.terms[j].second = 0;
            collect(x, k, sum);
            return true;
        }
    }
    return false;
}

Sum to_sum(const Expr& e) {
    Sum sum;
    sum.type = e->type;
    collect(e, 1, sum);
    while (fold_div_mod_pairs(sum)) {
    }
    return sum;
}

Expr from_sum(const Sum& sum, SourceLoc loc) {
    DataType t = sum.type;
    auto lit = [&](int64_t v) { return make_int(v, t, loc); };
    auto scaled = [&](const Expr& atom, int64_t c) {  // c > 0 or the width's minimum
        return c == 1 ? atom : make_binary(BinaryOp::Mul, atom, lit(c), loc);
    };
    Expr r;
    for (const auto& [atom, c] : sum.terms) {
        if (c <= 0) continue;
        r = r ? make_binary(BinaryOp::Add, r, scaled(atom, c), loc) : scaled(atom, c);
    }
    int64_t k = sum.constant;
    bool k_used = false;
    for (const auto& [atom, c] : sum.terms) {
        if (c >= 0) continue;
        if (!r) {
            if (k > 0) {
                r = lit(k);
                k_used = true;
            } else {
                r = c == -1 ? make_unary(UnaryOp::Neg, atom, loc)
                            : make_binary(BinaryOp::Mul, atom, lit(c), loc);
                continue;
            }
        }
        if (c == signed_min(t))
            r = make_binary(BinaryOp::Add, r, scaled(atom, c), loc);
        else
            r = make_binary(BinaryOp::Sub, r, scaled(atom, wneg(c)), loc);
    }
    if (k_used) return r;
    if (!r) return lit(k);
    if (k > 0 || k == signed_min(t)) return make_binary(BinaryOp::Add, r, lit(k), loc);
    if (k < 0) return make_binary(BinaryOp::Sub, r, lit(wneg(k)), loc);
    return r;
}

}  // namespace tilec::transform::detail
