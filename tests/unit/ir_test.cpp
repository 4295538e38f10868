// Tile IR nodes: data types, factories and their type rules, structural queries, and
// the visitor / mutator / substitution machinery every pass builds on.
#include <catch2/catch.hpp>

#include <cmath>

#include "ir/ir.h"
#include "ir/printer.h"
#include "ir/visitor.h"
#include "support/diagnostics.h"

using namespace tilec::ir;

namespace {
Expr c(int64_t v) {
    return make_int(v);
}
}  // namespace

TEST_CASE("data types print and parse every language element type", "[ir]") {
    const char* names[] = {"f16", "bf16", "f32",  "f64",    "i8",     "u8", "i16", "i32",
                           "u32", "i64",  "bool", "f8e4m3", "f8e5m2", "i4", "u4"};
    for (const char* n : names) {
        auto t = DataType::from_name(n);
        INFO(n);
        REQUIRE(t);
        CHECK(t->str() == n);
    }
    CHECK_FALSE(DataType::from_name("f17"));
    CHECK_FALSE(DataType::from_name(""));
    CHECK(DataType::index() == DataType::i64());
    CHECK(DataType::from_name("i4") == DataType(TypeKind::Int, 4));
    CHECK(DataType::f16().with_lanes(8).str() == "f16x8");
}

TEST_CASE("data type predicates classify kinds", "[ir]") {
    CHECK(DataType::i32().is_int());
    CHECK(DataType::u8().is_uint());
    CHECK(DataType::u8().is_integer());
    CHECK_FALSE(DataType::boolean().is_integer());
    CHECK(DataType::boolean().is_bool());
    for (auto t : {DataType::f16(), DataType::bf16(), DataType::f32(), DataType::f64(), DataType::f8e4m3(),
                   DataType::f8e5m2()})
        CHECK(t.is_float());
    CHECK_FALSE(DataType::i8().is_float());
    CHECK(DataType::i8().min_value() == -128);
    CHECK(DataType::i8().max_value() == 127);
    CHECK(DataType::u4().max_value() == 15);
    CHECK(DataType::i4().min_value() == -8);
    CHECK(DataType::boolean().max_value() == 1);
}

TEST_CASE("normalize_int wraps to the type's width and signedness", "[ir]") {
    CHECK(normalize_int(300, DataType::u8()) == 44);
    CHECK(normalize_int(-1, DataType::u8()) == 255);
    CHECK(normalize_int(128, DataType::i8()) == -128);
    CHECK(normalize_int(15, DataType::i4()) == -1);
    CHECK(normalize_int(-1, DataType::u4()) == 15);
    CHECK(normalize_int(7, DataType::boolean()) == 1);
    CHECK(normalize_int(INT64_MIN, DataType::i64()) == INT64_MIN);
    CHECK(make_int(-1, DataType::u32())->as<IntImmNode>()->value == 4294967295LL);
}

TEST_CASE("factories apply the type rules", "[ir]") {
    Var x = make_loop_var("x");
    Var f = make_var("f", DataType::f16(), VarKind::Scalar);
    CHECK(add(x, c(1))->type == DataType::i64());
    CHECK(lt(x, c(1))->type == DataType::boolean());
    CHECK(logical_and(lt(x, c(1)), lt(x, c(2)))->type == DataType::boolean());
    CHECK(logical_not(lt(x, c(1)))->type == DataType::boolean());
    CHECK(make_unary(UnaryOp::Neg, f)->type == DataType::f16());
    CHECK(make_select(lt(x, c(1)), f, f)->type == DataType::f16());
    CHECK(make_cast(DataType::f32(), f)->type == DataType::f32());
    CHECK(make_call(CallOp::Exp, {f})->type == DataType::f16());
    Buffer b = make_buffer("b", DataType::bf16(), {c(4)}, Scope::Shared);
    CHECK(make_load(b, {x})->type == DataType::bf16());
    CHECK(make_bool(true)->type == DataType::boolean());
    CHECK(make_zero(DataType::f16())->as<FloatImmNode>() != nullptr);
    CHECK(make_zero(DataType::i8())->as<IntImmNode>() != nullptr);
    CHECK(print(cdiv(x, c(64))) == "(x + 63) / 64");
    CHECK_THROWS_AS(make_binary(BinaryOp::Add, nullptr, x), tilec::InternalError);
    CHECK_THROWS_AS(make_float(1.0, DataType::i32()), tilec::InternalError);
}

TEST_CASE("block and thread index vars carry their dims", "[ir]") {
    auto b = make_block_idx_vars();
    for (int d = 0; d < 3; ++d) {
        CHECK(b[d]->var_kind == VarKind::BlockIdx);
        CHECK(b[d]->dim == d);
        CHECK(b[d]->type == DataType::index());
    }
    CHECK(b[1]->name == "block.y");
    Var t = make_thread_idx_var(2);
    CHECK(t->var_kind == VarKind::ThreadIdx);
    CHECK(t->name == "thread.z");
}

TEST_CASE("make_seq flattens nested sequences and drops nulls", "[ir]") {
    Stmt a = make_barrier(), b = make_barrier(), d = make_barrier();
    Stmt s = make_seq({a, make_seq({b, make_seq({})}), nullptr, d});
    auto seq = stmt_as<SeqNode>(s);
    REQUIRE(seq);
    REQUIRE(seq->stmts.size() == 3);
    CHECK(seq->stmts[0] == a);
    CHECK(seq->stmts[1] == b);
    CHECK(seq->stmts[2] == d);
    CHECK(make_seq({a}) == a);
    CHECK(is_no_op(make_seq({})));
    CHECK(is_no_op(make_seq({make_seq({}), nullptr})));
    CHECK_FALSE(is_no_op(a));
}

TEST_CASE("copy gets a zero pad of the source type by default", "[ir]") {
    Buffer a = make_buffer("a", DataType::f16(), {c(4)}, Scope::Shared);
    Buffer b = make_buffer("b", DataType::f32(), {c(4)}, Scope::Fragment);
    auto copy = stmt_as<CopyNode>(make_copy(full_region(a), full_region(b)));
    REQUIRE(copy);
    REQUIRE(copy->pad);
    CHECK(copy->pad->type == DataType::f16());
    CHECK(copy->pad->as<FloatImmNode>()->value == 0.0);
}

TEST_CASE("full regions are recognised", "[ir]") {
    Var M = make_size_var("M");
    Buffer A = make_tensor("A", DataType::f32(), {M, c(8)}, Access::In);
    CHECK(is_full_region(full_region(A)));
    CHECK(is_full_region(make_region(A, {c(0), c(0)}, {M, c(8)})));
    CHECK_FALSE(is_full_region(make_region(A, {c(0), c(0)}, {M, c(4)})));
    CHECK_FALSE(is_full_region(make_region(A, {c(1), c(0)}, {M, c(8)})));
    Buffer s = make_buffer("s", DataType::f32(), {}, Scope::Local);
    CHECK(is_full_region(full_region(s)));
}

TEST_CASE("constant queries and structural equality", "[ir]") {
    Var x = make_loop_var("x"), y = make_loop_var("x");
    CHECK(as_const_int(c(5)) == 5);
    CHECK(as_const_int(make_bool(true)) == 1);
    CHECK_FALSE(as_const_int(x));
    CHECK_FALSE(as_const_int(make_float(1.0)));
    CHECK(is_const_int(c(0), 0));
    CHECK_FALSE(is_const_int(c(1), 0));
    CHECK(structural_equal(add(x, c(1)), add(x, c(1))));
    CHECK_FALSE(structural_equal(add(x, c(1)), add(y, c(1))));  // vars by identity
    CHECK_FALSE(structural_equal(c(1), make_int(1, DataType::i32())));
    CHECK_FALSE(structural_equal(make_float(0.0), make_float(-0.0)));
    CHECK(structural_equal(make_float(NAN), make_float(NAN)));
    Buffer b = make_buffer("b", DataType::f32(), {c(4)}, Scope::Shared);
    Buffer b2 = make_buffer("b", DataType::f32(), {c(4)}, Scope::Shared);
    CHECK(structural_equal(make_load(b, {x}), make_load(b, {x})));
    CHECK_FALSE(structural_equal(make_load(b, {x}), make_load(b2, {x})));
    CHECK(expr_as<BinaryNode>(add(x, c(1))) != nullptr);
    CHECK(expr_as<VarNode>(add(x, c(1))) == nullptr);
    CHECK(expr_as<VarNode>(x) == x);
}

namespace {

// Counts nodes and buffer uses, in visit order.
class Counter : public IRVisitor {
public:
    int vars = 0, loads = 0, stores = 0;
    std::vector<std::string> buffers;
    void visit_buffer_use(const Buffer& b) override { buffers.push_back(b->name); }

protected:
    void visit_var(const VarNode*) override { ++vars; }
    void visit_load(const LoadNode* op) override {
        ++loads;
        IRVisitor::visit_load(op);
    }
    void visit_store(const StoreNode* op) override {
        ++stores;
        IRVisitor::visit_store(op);
    }
};

// Replaces the constant 1 by 2 everywhere.
class OneToTwo : public IRMutator {
protected:
    Expr mutate_int_imm(const IntImmNode* op, const Expr& self) override {
        return op->value == 1 ? make_int(2, op->type, op->loc) : self;
    }
};

class SwapBuffer : public IRMutator {
public:
    Buffer from, to;
    Buffer mutate_buffer(const Buffer& b) override { return b == from ? to : b; }
};

struct Tree {
    Var i = make_loop_var("i");
    Buffer s = make_buffer("s", DataType::f32(), {c(8)}, Scope::Shared);
    Buffer t = make_buffer("t", DataType::f32(), {c(8)}, Scope::Fragment);
    Stmt kept = make_store(t, {c(0)}, make_float(3.0));
    Stmt changed = make_store(t, {add(i, c(1))}, make_load(s, {i}));
    Stmt body = make_allocate(
        s, make_allocate(t, make_for(i, c(0), c(7), ForKind::Serial,
                                     make_seq({kept, changed, make_copy(full_region(s), full_region(t))}))));
};

}  // namespace

TEST_CASE("IRVisitor visits every expression and buffer use", "[ir][visitor]") {
    Tree tree;
    Counter counter;
    counter.visit(tree.body);
    CHECK(counter.vars == 2);  // i in the index and in the load
    CHECK(counter.loads == 1);
    CHECK(counter.stores == 2);
    CHECK(counter.buffers == std::vector<std::string>{"t", "t", "s", "s", "t"});
}

TEST_CASE("IRMutator returns the same pointer when nothing changes", "[ir][visitor]") {
    Tree tree;
    IRMutator identity;
    CHECK(identity.mutate(tree.body) == tree.body);
    Expr e = add(mul(tree.i, c(4)), make_load(tree.s, {tree.i}));
    CHECK(identity.mutate(e) == e);
}

TEST_CASE("IRMutator rebuilds only the path to a change", "[ir][visitor]") {
    Tree tree;
    OneToTwo m;
    Stmt out = m.mutate(tree.body);
    REQUIRE(out != tree.body);
    auto loop = stmt_as<ForNode>(stmt_as<AllocateNode>(stmt_as<AllocateNode>(out)->body)->body);
    REQUIRE(loop);
    CHECK(loop->var == tree.i);
    auto seq = stmt_as<SeqNode>(loop->body);
    REQUIRE(seq);
    CHECK(seq->stmts[0] == tree.kept);     // untouched sibling: same node
    CHECK(seq->stmts[1] != tree.changed);  // i + 1 -> i + 2
    CHECK(print(seq->stmts[1]) == "t[i + 2] = s[i]\n");
}

TEST_CASE("IRMutator can swap a buffer everywhere it is used", "[ir][visitor]") {
    Tree tree;
    SwapBuffer m;
    m.from = tree.s;
    m.to = make_buffer("s2", DataType::f32(), {c(8)}, Scope::Shared);
    std::string text = print(m.mutate(tree.body));
    CHECK(text.find("s2") != std::string::npos);
    CHECK(text.find("s[") == std::string::npos);
    CHECK(text.find("alloc shared s2: f32[8]") != std::string::npos);
    CHECK(text.find("copy(s2 -> t") != std::string::npos);
}

TEST_CASE("substitute replaces uses of a var", "[ir][visitor]") {
    Var x = make_loop_var("x"), y = make_loop_var("y");
    Expr e = add(mul(x, c(2)), y);
    Expr s = substitute(e, VarMap{{x.get(), c(5)}});
    CHECK(print(s) == "5 * 2 + y");
    CHECK(substitute(e, VarMap{}) == e);
    CHECK(uses_var(e, x.get()));
    CHECK_FALSE(uses_var(s, x.get()));
    Buffer b = make_buffer("b", DataType::f32(), {c(8)}, Scope::Local);
    Stmt st = make_store(b, {x}, make_float(1.0));
    CHECK(print(substitute(st, VarMap{{x.get(), y}})) == "b[y] = 1.0\n");
    std::vector<std::string> seen;
    for_each_expr(e, [&](const Expr& n) { seen.push_back(print(n)); });
    CHECK(seen == std::vector<std::string>{"x * 2 + y", "x * 2", "x", "2", "y"});
}
