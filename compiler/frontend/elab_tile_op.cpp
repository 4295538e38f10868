// Tile ops during elaboration: the bridge between the elaborator and each op's home
// (compiler/ops/<op>.cpp), which checks the arguments and builds the IR. The op asks for
// its arguments through ops::ElabContext, so it never sees the AST, and each argument is
// evaluated when the op asks (the order of the checks, and which arguments a failed check
// leaves unreported, are the op's).
#include "frontend/elaborator.h"
#include "ops/assert.h"
#include "ops/atomic_add.h"
#include "ops/copy.h"
#include "ops/cumsum.h"
#include "ops/elab_util.h"
#include "ops/fill.h"
#include "ops/gemm.h"
#include "ops/print.h"
#include "ops/reduce.h"

namespace tilec::frontend {

using K = Value::Kind;
using ops::plural_index;

// A tile operand: `t` (a whole buffer) or `t[i, j]` (a start index).
ops::TileOperand Elaborator::tile_arg(const ast::Expr& e, const char* op, const char* role) {
    ops::TileOperand t;
    t.range = e.range;
    if (e.kind == ast::ExprKind::Index) {
        Value b = eval(*e.operands[0]);
        if (b.is_poison()) return t;
        if (b.kind != K::Tile) {
            diags_.error(e.operands[0]->range, std::string("the ") + role + " of " + op + " must be a tensor or a tile");
            return t;
        }
        size_t n = e.operands.size() - 1;
        if (n != b.buffer->rank()) {
            diags_.error(e.range, std::string("the start index of '") + b.buffer->name + "' in " + op + " needs " +
                                      plural_index(b.buffer->rank()) + " (one per dimension), but " +
                                      std::to_string(n) + (n == 1 ? " was" : " were") + " given");
            return t;
        }
        for (size_t i = 1; i < e.operands.size(); ++i) {
            ir::Expr x = expect_index(*e.operands[i], "a start index");
            if (!x) return t;
            t.start.push_back(x);
        }
        t.whole = false;
        t.buffer = b.buffer;
        return t;
    }
    Value v = eval(e);
    if (v.is_poison()) return t;
    if (v.kind != K::Tile) {
        diags_.error(e.range, std::string("the ") + role + " of " + op + " must be a tile or a tensor" +
                                  (v.kind == K::MutVar || v.is_scalar_value() ? ", not a scalar" : ""));
        return t;
    }
    t.buffer = v.buffer;
    return t;
}

// One call of a tile op, as its home sees it.
class TileOpCall final : public ops::ElabContext {
public:
    TileOpCall(Elaborator& elab, const ast::Expr& call) : elab_(elab), call_(call) {
        for (const ast::Arg& a : call.args) {
            ops::CallArg c;
            c.name = a.name;
            c.name_range = a.name_range;
            c.range = a.value->range;
            c.is_string = a.value->kind == ast::ExprKind::String;
            if (c.is_string) c.text = a.value->text;
            args_.push_back(std::move(c));
        }
    }

    DiagnosticEngine& diags() override { return elab_.diags_; }
    const std::string& name() const override { return call_.operands[0]->text; }
    SourceRange call_range() const override { return call_.range; }
    const std::vector<ops::CallArg>& args() const override { return args_; }

    std::optional<std::vector<const ops::CallArg*>> bind(const std::vector<std::string>& names,
                                                         size_t required) override {
        Elaborator::CallArgs bound = elab_.bind_args(call_, name(), names, required);
        if (!bound.ok) return std::nullopt;
        std::vector<const ops::CallArg*> out;
        for (const ast::Expr* v : bound.values) {
            const ops::CallArg* arg = nullptr;
            for (size_t i = 0; i < call_.args.size(); ++i)
                if (call_.args[i].value.get() == v) arg = &args_[i];
            out.push_back(v ? arg : nullptr);
        }
        return out;
    }

    ops::TileOperand tile(const ops::CallArg& a, const char* op, const char* role) override {
        return elab_.tile_arg(expr(a), op, role);
    }
    ir::Expr scalar(const ops::CallArg& a, ir::DataType want, const char* what) override {
        const ast::Expr& e = expr(a);
        Value v = elab_.expect_scalar(elab_.eval(e), e.range, what);
        if (v.is_poison()) return nullptr;
        return elab_.convert(v, want, e.range, what, false);
    }
    ir::Expr scalar_value(const ops::CallArg& a, const char* what) override {
        const ast::Expr& e = expr(a);
        Value v = elab_.expect_scalar(elab_.eval(e), e.range, what);
        if (v.is_poison()) return nullptr;
        return elab_.to_expr(v, e.range);
    }
    ir::Expr condition(const ops::CallArg& a, const char* what) override {
        return elab_.expect_condition(expr(a), what);
    }
    std::optional<int64_t> const_int(const ops::CallArg& a, const char* what) override {
        return elab_.expect_const_int(expr(a), what);
    }
    std::optional<bool> const_bool(const ops::CallArg& a, const char* what) override {
        return elab_.expect_const_bool(expr(a), what);
    }

    bool check_writable(const ir::Buffer& b, SourceRange where) override { return elab_.check_writable(b, where); }
    void mark_written(const ir::Buffer& b) override { elab_.written_.insert(b.get()); }
    std::optional<SourceRange> declared_at(const ir::Buffer& b) const override {
        auto it = elab_.buffer_decl_.find(b.get());
        if (it == elab_.buffer_decl_.end()) return std::nullopt;
        return it->second;
    }

private:
    const ast::Expr& expr(const ops::CallArg& a) const {
        return *call_.args[static_cast<size_t>(&a - args_.data())].value;
    }

    Elaborator& elab_;
    const ast::Expr& call_;
    std::vector<ops::CallArg> args_;
};

ir::Stmt Elaborator::elab_tile_op(Builtin b, const ast::Expr& e) {
    TileOpCall call(*this, e);
    switch (b) {
    case Builtin::Copy: return ops::elab_copy(call);
    case Builtin::Gemm: return ops::elab_gemm(call);
    case Builtin::Fill: return ops::elab_fill(call);
    case Builtin::ReduceSum: return ops::elab_reduce(call, ir::ReduceKind::Sum);
    case Builtin::ReduceMax: return ops::elab_reduce(call, ir::ReduceKind::Max);
    case Builtin::ReduceMin: return ops::elab_reduce(call, ir::ReduceKind::Min);
    case Builtin::ReduceAbsMax: return ops::elab_reduce(call, ir::ReduceKind::AbsMax);
    case Builtin::Cumsum: return ops::elab_cumsum(call);
    case Builtin::AtomicAdd: return ops::elab_atomic_add(call);
    case Builtin::Print: return ops::elab_print(call);
    case Builtin::Assert: return ops::elab_assert(call);
    default: return nullptr;
    }
}

}  // namespace tilec::frontend
