// The simplifier never changes a value: random integer expressions over variables with
// known ranges are simplified, then both forms are evaluated exactly at random points.
#include <catch2/catch.hpp>

#include <optional>
#include <random>
#include <unordered_map>

#include "ir/ir.h"
#include "ir/printer.h"
#include "layout/index_expr.h"
#include "support/diagnostics.h"
#include "transform/eval_int.h"
#include "transform/simplify.h"

using namespace tilec::ir;
using tilec::transform::Interval;
using tilec::transform::RangeMap;
using tilec::transform::simplify;

namespace {

using I128 = __int128;

// ---- An exact evaluator, written independently of the compiler's folding ----------
// 64-bit types evaluate in exact integers (the IR assumes index arithmetic never
// overflows; a sample where the original overflows is skipped). Narrower types wrap
// at every operation, as the IR defines.

struct Eval {
    const std::unordered_map<const VarNode*, int64_t>& env;
    bool overflowed = false;  // a 64-bit intermediate left the int64 range
    bool undefined = false;   // division by zero, shift out of range

    static I128 wrap(I128 v, DataType t) {
        if (t.is_bool()) return v != 0;
        if (t.bits >= 64) return v;
        I128 m = I128(1) << t.bits;
        v %= m;
        if (v < 0) v += m;
        if (t.is_int() && v >= (m >> 1)) v -= m;
        return v;
    }
    static I128 fdiv(I128 a, I128 b) {
        I128 q = a / b;
        if (a % b != 0 && ((a < 0) != (b < 0))) q -= 1;
        return q;
    }
    static I128 fmod(I128 a, I128 b) { return a - fdiv(a, b) * b; }

    I128 done(I128 v, DataType t) {
        if (t.bits >= 64 && !t.is_bool()) {
            if (v > I128(INT64_MAX) || v < I128(INT64_MIN)) overflowed = true;
            return v;
        }
        return wrap(v, t);
    }

    I128 operator()(const Expr& e) {
        DataType t = e->type;
        if (auto imm = e->as<IntImmNode>()) return imm->value;
        if (auto v = e->as<VarNode>()) return env.at(v);
        if (auto b = e->as<BinaryNode>()) {
            I128 x = (*this)(b->a), y = (*this)(b->b);
            int bits = b->a->type.bits;
            switch (b->op) {
            case BinaryOp::Add: return done(x + y, t);
            case BinaryOp::Sub: return done(x - y, t);
            case BinaryOp::Mul: return done(x * y, t);
            case BinaryOp::FloorDiv:
                if (y == 0) return undefined = true, 0;
                return done(fdiv(x, y), t);
            case BinaryOp::FloorMod:
                if (y == 0) return undefined = true, 0;
                return done(fmod(x, y), t);
            case BinaryOp::Min: return x < y ? x : y;
            case BinaryOp::Max: return x < y ? y : x;
            case BinaryOp::EQ: return x == y;
            case BinaryOp::NE: return x != y;
            case BinaryOp::LT: return x < y;
            case BinaryOp::LE: return x <= y;
            case BinaryOp::GT: return x > y;
            case BinaryOp::GE: return x >= y;
            case BinaryOp::And: return x != 0 && y != 0;
            case BinaryOp::Or: return x != 0 || y != 0;
            case BinaryOp::BitAnd: return done(x & y, t);
            case BinaryOp::BitOr: return done(x | y, t);
            case BinaryOp::BitXor: return done(x ^ y, t);
            case BinaryOp::Shl:
                if (y < 0 || y >= bits) return undefined = true, 0;
                return done(x * (I128(1) << static_cast<int>(y)), t);
            case BinaryOp::Shr:
                if (y < 0 || y >= bits) return undefined = true, 0;
                return done(fdiv(x, I128(1) << static_cast<int>(y)), t);
            default: FAIL("unexpected op in a random expression");
            }
        }
        if (auto u = e->as<UnaryNode>()) {
            I128 x = (*this)(u->a);
            switch (u->op) {
            case UnaryOp::Neg: return done(-x, t);
            case UnaryOp::Not: return x == 0;
            case UnaryOp::BitNot: return done(-x - 1, t);
            }
        }
        if (auto s = e->as<SelectNode>()) {
            I128 c = (*this)(s->cond);
            I128 x = (*this)(s->t), y = (*this)(s->f);  // both sides: no side effects
            return c ? x : y;
        }
        if (auto c = e->as<CastNode>()) return done(wrap((*this)(c->value), t), t);
        FAIL("unexpected node in a random expression: " << print(e));
        return 0;
    }
};

// ---- Random expressions -----------------------------------------------------------

struct Gen {
    std::mt19937_64& rng;
    DataType type;
    std::vector<Var> vars;

    int64_t pick(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }
    Expr lit(int64_t v) { return make_int(v, type); }
    Expr small_const() { return lit(type.is_uint() ? pick(0, 20) : pick(-20, 20)); }
    Expr divisor() {
        static const int64_t kDivs[] = {1, 2, 3, 4, 7, 8, 16, 32, 64, 128, -1, -2, -3, -8};
        int64_t d = kDivs[pick(0, type.is_uint() ? 9 : 13)];
        return lit(d);
    }

    Expr boolean(int depth) {
        int k = static_cast<int>(pick(0, depth > 0 ? 5 : 3));
        static const BinaryOp kCmp[] = {BinaryOp::LT, BinaryOp::LE, BinaryOp::GT,
                                        BinaryOp::GE, BinaryOp::EQ, BinaryOp::NE};
        if (k <= 3) return make_binary(kCmp[pick(0, 5)], integer(depth - 1), integer(depth - 1));
        if (k == 4)
            return make_binary(pick(0, 1) ? BinaryOp::And : BinaryOp::Or, boolean(depth - 1),
                               boolean(depth - 1));
        return make_unary(UnaryOp::Not, boolean(depth - 1));
    }

    Expr integer(int depth) {
        if (depth <= 0 || pick(0, 9) < 2) {
            if (pick(0, 2) == 0) return small_const();
            return vars[pick(0, vars.size() - 1)];
        }
        switch (pick(0, 16)) {
        case 0:
        case 1: return add(integer(depth - 1), integer(depth - 1));
        case 2:
        case 3: return sub(integer(depth - 1), integer(depth - 1));
        case 4:
        case 5: return mul(integer(depth - 1), small_const());
        case 6: return mul(integer(depth - 1), integer(depth - 2));
        case 7:
        case 8: return floordiv(integer(depth - 1), divisor());
        case 9:
        case 10: return floormod(integer(depth - 1), divisor());
        case 11: return minimum(integer(depth - 1), integer(depth - 1));
        case 12: return maximum(integer(depth - 1), integer(depth - 1));
        case 13: return make_select(boolean(depth - 1), integer(depth - 1), integer(depth - 1));
        case 14: {
            static const BinaryOp kBits[] = {BinaryOp::BitAnd, BinaryOp::BitOr, BinaryOp::BitXor};
            return make_binary(kBits[pick(0, 2)], integer(depth - 1), integer(depth - 1));
        }
        case 15:
            return make_binary(pick(0, 1) ? BinaryOp::Shr : BinaryOp::Shl, integer(depth - 1),
                               lit(pick(0, 3)));
        default:
            return type.is_uint() ? make_unary(UnaryOp::BitNot, integer(depth - 1))
                                  : make_unary(UnaryOp::Neg, integer(depth - 1));
        }
    }
};

// Runs `count` random expressions of `type`; returns the number of points compared.
int64_t check_random(DataType type, uint64_t seed, int count) {
    std::mt19937_64 rng(seed);
    Gen gen{rng,
            type,
            {make_loop_var("x", {}, type), make_loop_var("y", {}, type), make_loop_var("z", {}, type)}};
    int64_t tmin = type.bits >= 64 ? -1000000 : type.min_value();
    int64_t tmax = type.bits >= 64 ? 1000000 : type.max_value();
    int64_t compared = 0;
    for (int iter = 0; iter < count; ++iter) {
        // Ranges: most vars get one (sometimes a single value), some none.
        RangeMap known;
        std::vector<std::pair<int64_t, int64_t>> ranges;
        for (const auto& v : gen.vars) {
            int64_t lo = tmin, hi = tmax;
            if (gen.pick(0, 4) != 0) {
                lo = std::min(tmax, std::max(tmin, gen.pick(type.is_uint() ? 0 : -40, 60)));
                hi = std::min(tmax, lo + gen.pick(0, gen.pick(0, 1) ? 8 : 200));
                known.set(v, Interval{lo, hi});
            }
            ranges.emplace_back(lo, hi);
        }
        Expr e = gen.integer(static_cast<int>(gen.pick(1, 5)));
        Expr s = simplify(e, known);
        INFO("type " << type.str() << ", expression " << print(e) << "\n  simplified " << print(s));
        REQUIRE(s->type == e->type);
        for (int p = 0; p < 24; ++p) {
            std::unordered_map<const VarNode*, int64_t> env;
            for (size_t k = 0; k < gen.vars.size(); ++k) {
                auto [lo, hi] = ranges[k];
                int64_t v = p == 0 ? lo : p == 1 ? hi : gen.pick(lo, hi);
                env[gen.vars[k].get()] = v;
            }
            Eval orig{env};
            I128 want = orig(e);
            if (orig.overflowed || orig.undefined) continue;
            Eval simp{env};
            I128 got = simp(s);
            INFO("x=" << env[gen.vars[0].get()] << " y=" << env[gen.vars[1].get()]
                      << " z=" << env[gen.vars[2].get()] << ": original " << static_cast<int64_t>(want)
                      << ", simplified " << static_cast<int64_t>(got));
            REQUIRE_FALSE(simp.undefined);
            REQUIRE(got == want);
            ++compared;
        }
    }
    return compared;
}

// IntProgram against eval_int on `count` random expressions of `type`: the same value or
// the same refusal at random points (the type's extremes included, where sums wrap and
// divisions overflow), with one variable sometimes left unbound. Returns the points.
int64_t check_program(DataType type, uint64_t seed, int count) {
    using tilec::transform::eval_int;
    using tilec::transform::IntEnv;
    using tilec::transform::IntProgram;
    std::mt19937_64 rng(seed);
    Gen gen{rng,
            type,
            {make_loop_var("x", {}, type), make_loop_var("y", {}, type), make_loop_var("z", {}, type)}};
    int64_t compared = 0, refused = 0;
    for (int iter = 0; iter < count; ++iter) {
        Expr e = gen.integer(static_cast<int>(gen.pick(1, 5)));
        // Slots: x, y and (mostly) z; z sometimes twice (the last one counts), x
        // sometimes missing (unbound).
        std::vector<const VarNode*> slots;
        bool unbound_x = gen.pick(0, 7) == 0;
        if (!unbound_x) slots.push_back(gen.vars[0].get());
        slots.push_back(gen.vars[2].get());
        slots.push_back(gen.vars[1].get());
        slots.push_back(gen.vars[2].get());
        IntProgram program(e, slots);
        INFO("type " << type.str() << ", expression " << print(e));
        for (int p = 0; p < 16; ++p) {
            std::vector<int64_t> values(slots.size());
            IntEnv env;
            for (size_t k = 0; k < slots.size(); ++k) {
                int64_t v = gen.pick(-50, 50);
                if (gen.pick(0, 5) == 0) v = gen.pick(0, 1) ? type.min_value() : type.max_value();
                values[k] = normalize_int(v, type);
                env.emplace_back(slots[k], values[k]);
            }
            std::optional<int64_t> want = eval_int(e, env), got = program.run(values.data());
            INFO("point " << p << ": eval_int " << (want ? std::to_string(*want) : "refused") << ", program "
                          << (got ? std::to_string(*got) : "refused"));
            REQUIRE(got.has_value() == want.has_value());
            if (want) REQUIRE(*got == *want);
            refused += !want;
            ++compared;
        }
    }
    CHECK(refused > 0);  // unbound variables and overflowing divisions were met
    return compared;
}

}  // namespace

TEST_CASE("IntProgram evaluates random expressions as eval_int does", "[eval_int][random]") {
    CHECK(check_program(DataType::i64(), 11, 3000) == 3000 * 16);
    CHECK(check_program(DataType::i32(), 12, 3000) == 3000 * 16);
    CHECK(check_program(DataType::i8(), 13, 2000) == 2000 * 16);
    CHECK(check_program(DataType::u8(), 14, 2000) == 2000 * 16);
    CHECK(check_program(DataType::u64(), 15, 2000) == 2000 * 16);
}

TEST_CASE("IntProgram evaluates only the taken side of a select", "[eval_int]") {
    using tilec::transform::eval_int;
    using tilec::transform::IntProgram;
    Var x = make_loop_var("x", {}, DataType::i32());
    // x == 0 ? 7 : 100 / x: no division by zero where x is 0.
    Expr e = make_select(make_binary(BinaryOp::EQ, x, make_int(0, DataType::i32())),
                         make_int(7, DataType::i32()), floordiv(make_int(100, DataType::i32()), x));
    IntProgram program(e, {x.get()});
    int64_t zero = 0, four = 4;
    CHECK(program.run(&zero) == std::optional<int64_t>(7));
    CHECK(program.run(&four) == std::optional<int64_t>(25));
    CHECK(eval_int(e, {{x.get(), 0}}) == std::optional<int64_t>(7));
    // The other side refused: a division by zero.
    Expr bad = make_select(make_binary(BinaryOp::NE, x, make_int(0, DataType::i32())),
                           make_int(7, DataType::i32()), floordiv(make_int(100, DataType::i32()), x));
    CHECK_FALSE(program.run(&zero) == std::nullopt);
    CHECK(IntProgram(bad, {x.get()}).run(&zero) == std::nullopt);
    CHECK(eval_int(bad, {{x.get(), 0}}) == std::nullopt);
}

TEST_CASE("simplify preserves the value of random i64 index expressions", "[simplify][random]") {
    CHECK(check_random(DataType::i64(), 1, 4000) > 40000);
}

TEST_CASE("simplify preserves the value of random i32 expressions (wrapping)", "[simplify][random]") {
    CHECK(check_random(DataType::i32(), 2, 2000) > 20000);
}

TEST_CASE("simplify preserves the value of random i8 expressions (wrapping)", "[simplify][random]") {
    CHECK(check_random(DataType::i8(), 3, 3000) > 30000);
}

TEST_CASE("simplify preserves the value of random u8 expressions (wrapping)", "[simplify][random]") {
    CHECK(check_random(DataType::u8(), 4, 3000) > 30000);
}

TEST_CASE("simplify preserves the value of random 4-bit expressions (wrapping)", "[simplify][random]") {
    CHECK(check_random(DataType::i4(), 5, 1000) > 10000);
    CHECK(check_random(DataType::u4(), 6, 1000) > 10000);
}

// layout::IndexProgram against layout::eval_index (the layouts' evaluator), and IntProgram
// against eval_int, on random expressions that share subexpressions as indices do (a
// swizzle reads its offset twice, a composition substitutes one expression for every use
// of a variable): the same value at random points, or the same internal error (eval_index)
// or refusal (eval_int) where a variable is unbound or a divisor is zero.
TEST_CASE("IndexProgram and IntProgram evaluate random shared expressions as the tree walks do",
          "[layout][eval_int][random]") {
    using tilec::InternalError;
    using tilec::layout::eval_index;
    using tilec::layout::IndexEnv;
    using tilec::layout::IndexProgram;
    int64_t compared = 0, errors = 0, int_refusals = 0;
    for (DataType type : {DataType::index(), DataType::i32(), DataType::u8()}) {
        std::mt19937_64 rng(21 + type.bits);
        Gen gen{rng,
                type,
                {make_loop_var("x", {}, type), make_loop_var("y", {}, type), make_loop_var("z", {}, type)}};
        for (int iter = 0; iter < 1500; ++iter) {
            Expr a = gen.integer(static_cast<int>(gen.pick(1, 4)));
            Expr b = gen.integer(static_cast<int>(gen.pick(0, 3)));
            Expr e;
            switch (gen.pick(0, 4)) {
            case 0:  // a swizzle's shape: a ^ ((a >> s) & m) << b
                e = make_binary(
                    BinaryOp::BitXor, a,
                    make_binary(
                        BinaryOp::Shl,
                        make_binary(BinaryOp::BitAnd, make_binary(BinaryOp::Shr, a, gen.lit(2)), gen.lit(3)),
                        gen.lit(1)));
                break;
            case 1: e = add(mul(a, gen.lit(3)), floormod(add(a, b), gen.divisor())); break;
            case 2:  // shared on one side of a select only, and on both
                e = add(make_select(make_binary(BinaryOp::LT, b, gen.lit(5)), a, add(a, b)), a);
                break;
            case 3:  // a division by a variable: by zero at some points
                e = add(floordiv(a, gen.vars[1]), a);
                break;
            default: e = sub(a, b); break;
            }
            // Slots x, z, y, z (the last z counts); x sometimes missing (unbound).
            std::vector<const VarNode*> slots;
            if (gen.pick(0, 7) != 0) slots.push_back(gen.vars[0].get());
            slots.push_back(gen.vars[2].get());
            slots.push_back(gen.vars[1].get());
            slots.push_back(gen.vars[2].get());
            IndexProgram program(e, slots);
            tilec::transform::IntProgram int_program(e, slots);
            INFO("type " << type.str() << ", expression " << print(e));
            for (int p = 0; p < 12; ++p) {
                std::vector<int64_t> values(slots.size());
                IndexEnv env;
                tilec::transform::IntEnv int_env;
                for (size_t k = 0; k < slots.size(); ++k) {
                    values[k] = normalize_int(gen.pick(-6, 40), type);
                    env.bind_node(slots[k], values[k]);
                    int_env.emplace_back(slots[k], values[k]);
                }
                std::optional<int64_t> int_want = tilec::transform::eval_int(e, int_env);
                REQUIRE(int_program.run(values.data()) == int_want);
                int_refusals += !int_want;
                std::string want_error, got_error;
                int64_t want = 0, got = 0;
                try {
                    want = eval_index(e, env);
                } catch (const InternalError& err) {
                    want_error = err.what();
                }
                try {
                    got = program.run(values.data());
                } catch (const InternalError& err) {
                    got_error = err.what();
                }
                INFO("point " << p << ": eval_index "
                              << (want_error.empty() ? std::to_string(want) : want_error) << ", program "
                              << (got_error.empty() ? std::to_string(got) : got_error));
                REQUIRE(got_error == want_error);
                REQUIRE(got == want);
                errors += !want_error.empty();
                ++compared;
            }
        }
    }
    CHECK(compared == 3 * 1500 * 12);
    CHECK(errors > 0);  // unbound variables and divisions by zero were met
    CHECK(int_refusals > 0);
}

TEST_CASE("IntProgram keys are equal exactly for the same code over the slots", "[eval_int]") {
    using tilec::transform::IntProgram;
    auto i32 = DataType::i32();
    Var x = make_loop_var("x", {}, i32), y = make_loop_var("y", {}, i32);
    Var a = make_loop_var("a", {}, i32), b = make_loop_var("b", {}, i32);
    auto key = [](const Expr& e, const std::vector<const VarNode*>& slots) {
        std::vector<int64_t> k;
        IntProgram(e, slots).append_key(k);
        return k;
    };
    auto form = [&](const Var& u, const Var& v, int64_t scale) {
        return make_binary(BinaryOp::Add, make_binary(BinaryOp::Mul, u, make_int(scale, i32)),
                           floordiv(v, make_int(4, i32)));
    };
    // The same expression over other variables in the same slots: the same key (place-barriers
    // then enumerates the footprint once).
    CHECK(key(form(x, y, 8), {x.get(), y.get()}) == key(form(a, b, 8), {a.get(), b.get()}));
    // A constant, an operator, the slots' order or a slot's absence tells them apart.
    CHECK(key(form(x, y, 8), {x.get(), y.get()}) != key(form(x, y, 16), {x.get(), y.get()}));
    CHECK(key(form(x, y, 8), {x.get(), y.get()}) != key(form(x, y, 8), {y.get(), x.get()}));
    CHECK(key(form(x, y, 8), {x.get(), y.get()}) != key(form(x, y, 8), {x.get()}));
    CHECK(key(make_binary(BinaryOp::Add, x, y), {x.get(), y.get()}) !=
          key(make_binary(BinaryOp::Sub, x, y), {x.get(), y.get()}));
    // i64 and i32 arithmetic wrap differently.
    Var x64 = make_loop_var("x", {}, DataType::i64()), y64 = make_loop_var("y", {}, DataType::i64());
    CHECK(key(make_binary(BinaryOp::Mul, x, y), {x.get(), y.get()}) !=
          key(make_binary(BinaryOp::Mul, x64, y64), {x64.get(), y64.get()}));
}
