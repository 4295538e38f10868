// Tile liveness (compiler/codegen/cpu_tile_liveness.cpp), which lets row fusion drop a
// fused loop's stores into a tile: a tile may be dropped only where no path from the
// statement reads it before a copy or fill of the whole tile overwrites it.
#include <catch2/catch.hpp>

#include "codegen/cpu_lowering.h"
#include "ir/ir.h"

using namespace tilec::ir;
using tilec::codegen::tiles_live_after;
using tilec::codegen::TileSet;

namespace {

struct Tiles {
    Buffer X = make_tensor("X", DataType::f32(), {make_int(64), make_int(64)}, Access::In);
    Buffer x = make_buffer("x", DataType::f32(), {make_int(4), make_int(8)}, Scope::Fragment);
    Buffer y = make_buffer("y", DataType::f32(), {make_int(4)}, Scope::Fragment);
    Var t = make_loop_var("t");

    // copy(X[0 : +4, 0 : +8] -> x): overwrites all of x.
    Stmt copy_in() const {
        return make_copy(make_region(X, {make_int(0), make_int(0)}, {make_int(4), make_int(8)}),
                         full_region(x));
    }
    // copy(X[...] -> x[0 : +2, 0 : +8]): half of x.
    Stmt copy_half() const {
        return make_copy(make_region(X, {make_int(0), make_int(0)}, {make_int(2), make_int(8)}),
                         make_region(x, {make_int(0), make_int(0)}, {make_int(2), make_int(8)}));
    }
    // y[0] = x[0, 0]: reads x.
    Stmt read_x() const { return make_store(y, {make_int(0)}, make_load(x, {make_int(0), make_int(0)})); }
    Stmt serial(Stmt body) const {
        return make_for(t, make_int(0), make_int(3), ForKind::Serial, std::move(body));
    }
};

bool live(const std::unordered_map<const StmtNode*, TileSet>& after, const Stmt& s, const Buffer& b) {
    auto it = after.find(s.get());
    REQUIRE(it != after.end());
    return it->second.count(b.get()) > 0;
}

}  // namespace

TEST_CASE("tile liveness: a whole copy kills, a partial one does not", "[codegen][tile-liveness]") {
    Tiles k;
    Stmt first = k.copy_in(), half = k.copy_half(), read = k.read_x();
    auto after = tiles_live_after(make_seq({first, half, read}));
    CHECK(live(after, first, k.x));  // the half copy leaves rows 2-3, which read_x may read
    CHECK(live(after, half, k.x));
    CHECK_FALSE(live(after, read, k.x));  // the end of the block
    Stmt again = k.copy_in();
    after = tiles_live_after(make_seq({first, again, read}));
    CHECK_FALSE(live(after, first, k.x));
    CHECK(live(after, again, k.x));
}

TEST_CASE("tile liveness follows a loop's back edge and its exit", "[codegen][tile-liveness]") {
    Tiles k;
    // for t { copy -> x; y[0] = x[0, 0] }: the next iteration overwrites x first.
    Stmt copy = k.copy_in(), read = k.read_x();
    auto after = tiles_live_after(k.serial(make_seq({copy, read})));
    CHECK(live(after, copy, k.x));
    CHECK_FALSE(live(after, read, k.x));
    // for t { y[0] = x[0, 0]; copy -> x }: the next iteration reads it first.
    Stmt read2 = k.read_x(), copy2 = k.copy_in();
    after = tiles_live_after(k.serial(make_seq({read2, copy2})));
    CHECK(live(after, copy2, k.x));
    // for t { copy -> x }; y[0] = x[0, 0]: read after the loop (or with no iteration).
    Stmt copy3 = k.copy_in(), read3 = k.read_x();
    after = tiles_live_after(make_seq({k.serial(copy3), read3}));
    CHECK(live(after, copy3, k.x));
    // Nested: for t { for u { copy -> x } ; y[0] = x[0, 0] }: a loop counts as maybe
    // running no iteration (even a constant one), so the next t may read the old x.
    Var u = make_loop_var("u");
    Stmt copy4 = k.copy_in(), read4 = k.read_x();
    after = tiles_live_after(
        k.serial(make_seq({make_for(u, make_int(0), make_int(2), ForKind::Serial, copy4), read4})));
    CHECK(live(after, copy4, k.x));
    CHECK(live(after, read4, k.x));
}

TEST_CASE("tile liveness joins both sides of an if", "[codegen][tile-liveness]") {
    Tiles k;
    Var n = make_var("n", DataType::i64(), VarKind::Size);
    Stmt copy = k.copy_in(), read = k.read_x(), kill = k.copy_in();
    auto after = tiles_live_after(make_seq({copy, make_if(eq(n, make_int(1)), read)}));
    CHECK(live(after, copy, k.x));  // read on one side
    after = tiles_live_after(make_seq({copy, make_if(eq(n, make_int(1)), kill, read)}));
    CHECK(live(after, copy, k.x));
    Stmt kill2 = k.copy_in();
    after = tiles_live_after(make_seq({copy, make_if(eq(n, make_int(1)), kill, kill2), read}));
    CHECK_FALSE(live(after, copy, k.x));  // overwritten on both sides before the read
    // A read in a condition or loop bound counts too.
    Stmt copy5 = k.copy_in();
    after = tiles_live_after(make_seq(
        {copy5,
         make_if(lt(make_load(k.x, {make_int(0), make_int(0)}), make_float(0.0, DataType::f32())), kill)}));
    CHECK(live(after, copy5, k.x));
}
