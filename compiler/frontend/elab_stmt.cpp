// Statements during elaboration: blocks with let, var and buffer declarations (each
// scoping the rest of its block), loops of every kind, if (a constant condition picks a
// branch), assignments and annotations.
#include "frontend/elaborator.h"
#include "ir/printer.h"
#include "ops/elab_util.h"
#include "transform/simplify.h"

#include <limits>

namespace tilec::frontend {

using ir::DataType;
using K = Value::Kind;

using ops::plural;

ir::Stmt Elaborator::elab_block(const std::vector<ast::StmtPtr>& stmts, size_t from) {
    std::vector<ir::Stmt> out;
    for (size_t i = from; i < stmts.size(); ++i) {
        const ast::Stmt& s = *stmts[i];
        SourceLoc l = loc_of(s.range);
        if (s.kind == ast::StmtKind::Let) {
            Value v = eval(*s.value);
            if (v.kind == K::MutVar) v = Value::of_expr(ir::make_load(v.buffer, {}, loc_of(s.value->range)));
            if (v.kind == K::Block || v.kind == K::String) v = expect_scalar(v, s.value->range, "a let");
            if (s.type && !v.is_poison()) {
                if (s.type->has_dims) {
                    diags_.error(s.type->range, "a let binds a scalar or an existing tile; declare tiles with "
                                                "shared, fragment or local");
                    v = Value::poison();
                } else if (auto t = resolve_type(s.type->elem, s.type->elem_range)) {
                    ir::Expr x = convert(v, *t, s.value->range, "a let", false);
                    v = x ? Value::of_expr(x) : Value::poison();
                } else {
                    v = Value::poison();
                }
            }
            if (v.kind == K::Scalar && !v.expr->is<ir::VarNode>() && !v.expr->is<ir::IntImmNode>() &&
                !v.expr->is<ir::FloatImmNode>()) {
                ir::Var var = ir::make_let_var(s.name, v.expr->type, l);
                ir::Expr value = v.expr;
                if (!bind(s.name, s.name_range, Value::of_expr(var), Origin::Let)) continue;
                ir::Stmt rest = elab_block(stmts, i + 1);
                out.push_back(ir::make_let(var, value, rest, l));
                return ir::make_seq(out);
            }
            bind(s.name, s.name_range, v, Origin::Let);
            continue;
        }
        if (s.kind == ast::StmtKind::Var) {
            if (s.type->has_dims) {
                diags_.error(s.type->range, "var declares one scalar; for an array use 'local " + s.name + ": " +
                                                s.type->elem + "[...]'");
                continue;
            }
            auto t = resolve_type(s.type->elem, s.type->elem_range);
            if (!t) {
                bind(s.name, s.name_range, Value::poison(), Origin::Var);
                continue;
            }
            ir::Buffer buf = ir::make_buffer(s.name, *t, {}, ir::Scope::Local, l);
            buffer_decl_[buf.get()] = s.name_range;
            ir::Stmt init;
            if (s.value) {
                Value v = expect_scalar(eval(*s.value), s.value->range, "an initial value");
                if (!v.is_poison())
                    if (ir::Expr x = convert(v, *t, s.value->range, "the initial value", false))
                        init = ir::make_store(buf, {}, x, l);
            }
            Value mv;
            mv.kind = K::MutVar;
            mv.buffer = buf;
            if (!bind(s.name, s.name_range, mv, Origin::Var)) continue;
            ir::Stmt rest = elab_block(stmts, i + 1);
            out.push_back(ir::make_allocate(buf, ir::make_seq({init, rest}), l));
            return ir::make_seq(out);
        }
        if (s.kind == ast::StmtKind::Buffer) {
            ir::Buffer buf = declare_buffer(s);
            if (!buf) {
                bind(s.name, s.name_range, Value::poison(), Origin::Buffer);
                continue;
            }
            if (!bind(s.name, s.name_range, Value::of_tile(buf), Origin::Buffer)) continue;
            ir::Stmt rest = elab_block(stmts, i + 1);
            out.push_back(ir::make_allocate(buf, rest, l));
            return ir::make_seq(out);
        }
        if (ir::Stmt st = elab_simple(s)) out.push_back(st);
    }
    return ir::make_seq(out);
}

ir::Buffer Elaborator::declare_buffer(const ast::Stmt& s) {
    const char* scope_kw = s.scope == ast::BufferScope::Shared ? "shared" : s.scope == ast::BufferScope::Fragment
                                                                               ? "fragment"
                                                                               : "local";
    if (in_parallel()) {
        diags_.error(s.range, std::string("cannot declare a ") + scope_kw + " buffer inside a parallel loop");
        return nullptr;
    }
    auto t = resolve_type(s.type->elem, s.type->elem_range);
    if (!s.type->has_dims) {
        diags_.error(s.type->range, std::string(scope_kw) + " buffer '" + s.name + "' needs a shape, e.g. " +
                                        s.type->elem + "[128, 32]" +
                                        (s.scope == ast::BufferScope::Local ? "; for one scalar use var" : ""));
        return nullptr;
    }
    if (!s.type->strides.empty()) {
        diags_.error(s.type->range, "strides(...) applies to tensor parameters only; on-chip buffers get their "
                                    "layout from the compiler (or @layout)");
        return nullptr;
    }
    std::vector<ir::Expr> shape;
    bool ok = t.has_value();
    int64_t elems = 1;
    for (auto& d : s.type->dims) {
        Value v = eval(*d);
        if (v.is_poison()) {
            ok = false;
            continue;
        }
        std::optional<int64_t> c;
        if (v.kind == K::Int) c = v.i;
        else if (v.kind == K::Scalar) c = ir::as_const_int(v.expr);
        if (!c) {
            std::string why = v.kind == K::Scalar ? " ('" + ir::print(v.expr) + "' is only known at run time)" : "";
            diags_.error(d->range, std::string("the shape of ") + scope_kw + " buffer '" + s.name +
                                       "' must be compile-time constants" + why);
            ok = false;
            continue;
        }
        if (*c <= 0) {
            diags_.error(d->range, "dimension of '" + s.name + "' must be positive, but it is " + std::to_string(*c));
            ok = false;
            continue;
        }
        if (__builtin_mul_overflow(elems, *c, &elems) || elems > (int64_t(1) << 31)) {
            diags_.error(s.type->range, "buffer '" + s.name + "' is too large");
            ok = false;
            break;
        }
        shape.push_back(ir::make_int(*c, DataType::index(), loc_of(d->range)));
    }
    if (!ok) return nullptr;
    ir::Scope scope = s.scope == ast::BufferScope::Shared     ? ir::Scope::Shared
                      : s.scope == ast::BufferScope::Fragment ? ir::Scope::Fragment
                                                              : ir::Scope::Local;
    ir::Buffer b = ir::make_buffer(s.name, *t, shape, scope, loc_of(s.name_range));
    buffer_decl_[b.get()] = s.name_range;
    return b;
}

ir::Stmt Elaborator::elab_stmt_scoped(const ast::Stmt& s) {
    push_scope();
    ir::Stmt r = s.kind == ast::StmtKind::Block ? elab_block(s.body, 0) : elab_simple(s);
    pop_scope();
    return r;
}

ir::Stmt Elaborator::elab_simple(const ast::Stmt& s) {
    switch (s.kind) {
    case ast::StmtKind::Block: return elab_stmt_scoped(s);
    case ast::StmtKind::For: return elab_for(s);
    case ast::StmtKind::If: return elab_if(s);
    case ast::StmtKind::Assign: return elab_assign(s);
    case ast::StmtKind::Annotation: return elab_annotation(s);
    case ast::StmtKind::Empty: return nullptr;
    case ast::StmtKind::Return:
        if (inline_stack_.empty()) diags_.error(s.range, "'return' is not allowed in a kernel");
        else diags_.error(s.range, "'return' with a value must be the last statement of a func, which is then "
                                   "called in an expression");
        return nullptr;
    case ast::StmtKind::Break:
    case ast::StmtKind::Continue:
        diags_.error(s.range, std::string("'") + (s.kind == ast::StmtKind::Break ? "break" : "continue") +
                                  "' is not supported: loops have a fixed trip count; guard the body with 'if'");
        return nullptr;
    case ast::StmtKind::Expr: {
        const ast::Expr& e = *s.value;
        if (e.kind == ast::ExprKind::Call) return elab_call_stmt(e);
        Value v = eval(e);
        if (!v.is_poison()) diags_.warning(e.range, "expression result unused");
        return nullptr;
    }
    case ast::StmtKind::Let:
    case ast::StmtKind::Var:
    case ast::StmtKind::Buffer: {
        // A declaration as the whole body of an if/else: scoped to nothing.
        std::vector<ast::StmtPtr> none;
        return elab_stmt_scoped(s);
    }
    }
    return nullptr;
}

ir::Stmt Elaborator::elab_for(const ast::Stmt& s) {
    const std::string& kind = s.name;
    SourceLoc l = loc_of(s.range);
    ir::ForKind fk;
    if (kind == "range") fk = ir::ForKind::Serial;
    else if (kind == "unroll") fk = ir::ForKind::Unroll;
    else if (kind == "parallel") fk = ir::ForKind::Parallel;
    else if (kind == "pipelined") fk = ir::ForKind::Pipelined;
    else {
        diags_.error(s.name_range, "unknown loop kind '" + kind + "'; expected range, unroll, parallel or pipelined");
        return nullptr;
    }
    bool inside_parallel = std::find(loop_stack_.begin(), loop_stack_.end(), ir::ForKind::Parallel) != loop_stack_.end();
    if (inside_parallel && (fk == ir::ForKind::Parallel || fk == ir::ForKind::Pipelined)) {
        diags_.error(s.name_range, fk == ir::ForKind::Parallel
                                       ? "parallel loops cannot be nested; write one loop over several "
                                         "variables, e.g. for i, j in parallel(M, N)"
                                       : "a pipelined loop cannot be inside a parallel loop");
        return nullptr;
    }
    std::vector<const ast::Expr*> positional;
    const ast::Expr* stages_arg = nullptr;
    for (auto& a : s.args) {
        if (a.name.empty()) {
            positional.push_back(a.value.get());
        } else if (a.name == "stages" && fk == ir::ForKind::Pipelined) {
            stages_arg = a.value.get();
        } else {
            diags_.error(a.name_range, "'" + kind + "' has no argument named '" + a.name + "'" +
                                           (fk == ir::ForKind::Pipelined ? " (it takes 'stages')" : ""));
            return nullptr;
        }
    }
    size_t nvars = s.loop_vars.size();
    std::vector<ir::Expr> mins, extents;
    std::vector<ir::Expr> starts;  // range with start/step: i = start + v * step
    int64_t step = 1;
    int stages = 0;
    if (fk == ir::ForKind::Parallel) {
        if (positional.size() != nvars) {
            diags_.error(s.range, "parallel has " + plural(positional.size(), "extent") + " but " +
                                      plural(nvars, "loop variable") + "; give one extent per variable");
            return nullptr;
        }
        for (auto* p : positional) {
            auto c = expect_const_int(*p, "the extent of a parallel loop");
            if (!c) return nullptr;
            if (*c <= 0) {
                diags_.error(p->range, "the extent of a parallel loop must be positive");
                return nullptr;
            }
            mins.push_back(ir::make_int(0));
            extents.push_back(ir::make_int(*c));
        }
    } else {
        if (nvars != 1) {
            diags_.error(s.loop_vars[1].range, "'" + kind + "' loops take one variable; only parallel takes several");
            return nullptr;
        }
        size_t max_args = fk == ir::ForKind::Pipelined ? 2 : 3;
        if (positional.empty() || positional.size() > max_args) {
            diags_.error(s.name_range, kind + " takes " + (fk == ir::ForKind::Pipelined ? "(n) or (start, end)"
                                                                                       : "(n), (start, end) or (start, end, step)"));
            return nullptr;
        }
        ir::Expr start = positional.size() == 1 ? ir::make_int(0) : expect_index(*positional[0], "a loop bound");
        ir::Expr end = expect_index(*positional[positional.size() == 1 ? 0 : 1], "a loop bound");
        if (!start || !end) return nullptr;
        if (positional.size() == 3) {
            auto c = expect_const_int(*positional[2], "the step of a range");
            if (!c) return nullptr;
            if (*c == 0) {
                diags_.error(positional[2]->range, "the step of a range must not be zero");
                return nullptr;
            }
            if (*c == std::numeric_limits<int64_t>::min()) {
                // Its trip count needs -step, which does not exist for INT64_MIN.
                diags_.error(positional[2]->range, "the step of a range must be greater than -9223372036854775808");
                return nullptr;
            }
            step = *c;
        }
        ir::Expr extent;
        if (step == 1) extent = ir::sub(end, start);
        else if (step > 0) extent = ir::floordiv(ir::add(ir::sub(end, start), ir::make_int(step - 1)), ir::make_int(step));
        else extent = ir::floordiv(ir::add(ir::sub(start, end), ir::make_int(-step - 1)), ir::make_int(-step));
        if (fk == ir::ForKind::Unroll && !ir::as_const_int(transform::simplify(extent))) {
            diags_.error(s.name_range, "the trip count of an unroll loop must be a compile-time constant");
            return nullptr;
        }
        if (fk == ir::ForKind::Pipelined) {
            stages = 2;
            if (stages_arg) {
                auto c = expect_const_int(*stages_arg, "the number of pipeline stages");
                if (!c) return nullptr;
                if (*c < 1 || *c > 16) {
                    diags_.error(stages_arg->range, "stages must be between 1 and 16, but it is " + std::to_string(*c));
                    return nullptr;
                }
                stages = static_cast<int>(*c);
            }
        }
        if (step == 1) {
            mins.push_back(start);
            extents.push_back(extent);
        } else {
            mins.push_back(ir::make_int(0));
            extents.push_back(extent);
            starts.push_back(start);
        }
    }
    push_scope();
    std::vector<ir::Var> vars;
    for (auto& lv : s.loop_vars) {
        ir::Var v = ir::make_loop_var(lv.name, loc_of(lv.range));
        vars.push_back(v);
    }
    // With a step, the loop runs over a counter and binds the variable to start + k*step.
    ir::Var counter;
    if (!starts.empty()) {
        counter = ir::make_loop_var(s.loop_vars[0].name + "_k", loc_of(s.loop_vars[0].range));
        ir::Var iv = ir::make_let_var(s.loop_vars[0].name, DataType::index(), loc_of(s.loop_vars[0].range));
        vars[0] = iv;
    }
    bool ok = true;
    for (size_t i = 0; i < vars.size(); ++i) ok &= bind(s.loop_vars[i].name, s.loop_vars[i].range, Value::of_expr(vars[i]), Origin::Loop);
    loop_stack_.push_back(fk);
    ir::Stmt body = ok ? elab_block(s.then_branch->body, 0) : nullptr;
    loop_stack_.pop_back();
    pop_scope();
    if (!ok) return nullptr;
    if (!body) body = ir::make_seq({});
    if (counter) {
        body = ir::make_let(vars[0], ir::add(starts[0], ir::mul(counter, ir::make_int(step))), body, l);
        return ir::make_for(counter, mins[0], extents[0], fk, body, l, stages);
    }
    for (size_t i = vars.size(); i > 0; --i) body = ir::make_for(vars[i - 1], mins[i - 1], extents[i - 1], fk, body, l, stages);
    return body;
}

ir::Stmt Elaborator::elab_if(const ast::Stmt& s) {
    Value c = expect_scalar(eval(*s.value), s.value->range, "a condition");
    if (c.kind == K::Bool) {
        // A compile-time condition: only the taken branch is elaborated (like `if
        // constexpr`), so the other may be ill-formed for this instantiation.
        if (c.b) return elab_stmt_scoped(*s.then_branch);
        if (s.else_branch) return elab_stmt_scoped(*s.else_branch);
        return nullptr;
    }
    ir::Expr cond;
    if (!c.is_poison()) {
        if (!natural_type(c).is_bool()) {
            diags_.error(s.value->range, "the condition of 'if' must be a bool, but it has type " +
                                             (c.is_const() ? std::string("number") : natural_type(c).str()) +
                                             "; compare it explicitly (e.g. x != 0)");
        } else {
            cond = to_expr(c, s.value->range);
        }
    }
    ir::Stmt then_s = elab_stmt_scoped(*s.then_branch);
    ir::Stmt else_s = s.else_branch ? elab_stmt_scoped(*s.else_branch) : nullptr;
    if (!cond) return nullptr;
    return ir::make_if(cond, then_s ? then_s : ir::make_seq({}), else_s, loc_of(s.range));
}

bool Elaborator::check_writable(const ir::Buffer& b, SourceRange where) {
    if (b->scope == ir::Scope::Global && b->access == ir::Access::In) {
        auto d = diags_.error(where, "cannot write to '" + b->name + "': it is an input tensor; mark it 'out' or "
                                                                     "'inout' in the kernel's parameters");
        if (buffer_decl_.count(b.get())) d.note(buffer_decl_[b.get()], "'" + b->name + "' is declared here");
        return false;
    }
    written_.insert(b.get());
    return true;
}

ir::Stmt Elaborator::elab_assign(const ast::Stmt& s) {
    const ast::Expr& target = *s.target;
    SourceLoc l = loc_of(s.range);
    ir::Buffer buf;
    std::vector<ir::Expr> idx;
    SourceRange target_range = target.range;
    if (target.kind == ast::ExprKind::Name) {
        const Binding* b = lookup(target.text);
        if (!b) {
            eval_name(target);
            return nullptr;
        }
        if (b->value.is_poison()) return nullptr;
        if (b->value.kind == K::MutVar) {
            buf = b->value.buffer;
        } else {
            const char* what = "it is not a var";
            switch (b->origin) {
            case Origin::Let: what = "it is declared with 'let'; use 'var' for a mutable scalar"; break;
            case Origin::Loop: what = "it is a loop variable"; break;
            case Origin::TemplateParam: what = "it is a compile-time parameter"; break;
            case Origin::Size: what = "it is a tensor size"; break;
            case Origin::ScalarParam: what = "it is a scalar parameter"; break;
            case Origin::FuncParam: what = "it is a func parameter"; break;
            case Origin::Tensor:
            case Origin::Buffer: what = "it is a whole tile; assign elements (t[i, j] = ...) or use fill/copy"; break;
            case Origin::Var: break;
            }
            diags_.error(target.range, "cannot assign to '" + target.text + "': " + what)
                .note(b->where, "'" + target.text + "' is declared here");
            return nullptr;
        }
    } else if (target.kind == ast::ExprKind::Index) {
        if (!element_ref(target, buf, idx)) return nullptr;
        if (!check_writable(buf, target.range)) return nullptr;
    } else {
        diags_.error(target.range, "cannot assign to this expression; assign to a var or an element t[i, j]");
        return nullptr;
    }
    Value rhs = expect_scalar(eval(*s.value), s.value->range, "an assigned value");
    if (rhs.is_poison()) return nullptr;
    if (s.assign_op != "=") {
        static const std::map<std::string, ast::BinaryOp> ops = {
            {"+=", ast::BinaryOp::Add}, {"-=", ast::BinaryOp::Sub}, {"*=", ast::BinaryOp::Mul},
            {"/=", ast::BinaryOp::Div}, {"%=", ast::BinaryOp::Mod}, {"&=", ast::BinaryOp::BitAnd},
            {"|=", ast::BinaryOp::BitOr}, {"^=", ast::BinaryOp::BitXor}, {"<<=", ast::BinaryOp::Shl},
            {">>=", ast::BinaryOp::Shr}};
        Value cur = Value::of_expr(ir::make_load(buf, idx, l));
        rhs = apply_binary(ops.at(s.assign_op), cur, rhs, target_range, s.value->range, s.op_range);
        if (rhs.is_poison()) return nullptr;
    }
    ir::Expr v = convert(rhs, buf->dtype, s.value->range, ("the assignment to '" + buf->name + "'").c_str(), false);
    if (!v) return nullptr;
    return ir::make_store(buf, idx, v, l);
}

ir::Stmt Elaborator::elab_annotation(const ast::Stmt& s) {
    auto name_arg = [&](size_t i) -> std::string {
        if (i >= s.args.size() || s.args[i].value->kind != ast::ExprKind::Name) return "";
        return s.args[i].value->text;
    };
    if (s.name == "rasterize") {
        if (s.args.size() != 1 || (!s.args[0].name.empty() && s.args[0].name != "panel")) {
            diags_.error(s.range, "@rasterize takes one argument: @rasterize(panel = N)");
            return nullptr;
        }
        auto c = expect_const_int(*s.args[0].value, "the rasterization panel");
        if (!c) return nullptr;
        if (*c < 1) {
            diags_.error(s.args[0].value->range, "the rasterization panel must be at least 1");
            return nullptr;
        }
        for (const auto& [k, v] : attrs_)
            if (k == "cluster") {
                diags_.error(s.range, "@rasterize with @cluster is not supported yet (the grouped launch order "
                                      "would move the blocks of a cluster apart)");
                return nullptr;
            }
        attrs_.emplace_back("rasterize", std::to_string(*c));
        return nullptr;
    }
    if (s.name == "cluster") {
        // sm_90a: launch the grid in thread-block clusters of x * y * z blocks (at most 8,
        // the portable size) and multicast the TMA fills of pipelined loops that the
        // blocks of a cluster row or column load from the same coordinates
        // (lower/cluster_multicast.cpp).
        // @cluster(x = 2), or positional (2, 1, 1); 1 x 1 x 1 is off.
        int64_t dims[3] = {1, 1, 1};
        static const char* const names[3] = {"x", "y", "z"};
        if (s.args.empty() || s.args.size() > 3) {
            diags_.error(s.range, "@cluster takes the cluster's dimensions: @cluster(x = 2), @cluster(x = 2, y = 1, z = 1)");
            return nullptr;
        }
        bool seen[3] = {false, false, false};
        for (size_t i = 0; i < s.args.size(); ++i) {
            int d = static_cast<int>(i);
            if (!s.args[i].name.empty()) {
                d = s.args[i].name == "x" ? 0 : s.args[i].name == "y" ? 1 : s.args[i].name == "z" ? 2 : -1;
                if (d < 0) {
                    diags_.error(s.args[i].name_range, "@cluster has no argument '" + s.args[i].name + "' (x, y, z)");
                    return nullptr;
                }
            }
            if (seen[d]) {
                diags_.error(s.args[i].value->range, std::string("@cluster's ") + names[d] + " is given twice");
                return nullptr;
            }
            seen[d] = true;
            const std::string what = std::string("the cluster's ") + names[d] + " dimension";
            auto c = expect_const_int(*s.args[i].value, what.c_str());
            if (!c) return nullptr;
            if (*c < 1 || *c > 8) {
                diags_.error(s.args[i].value->range, what + " must be 1 .. 8, not " + std::to_string(*c));
                return nullptr;
            }
            dims[d] = *c;
        }
        if (dims[0] * dims[1] * dims[2] > 8) {
            diags_.error(s.range, "a cluster of " + std::to_string(dims[0] * dims[1] * dims[2]) +
                                      " blocks is over the portable size of 8");
            return nullptr;
        }
        for (const auto& [k, v] : attrs_)
            if (k == "rasterize") {
                diags_.error(s.range, "@cluster with @rasterize is not supported yet (the grouped launch order "
                                      "would move the blocks of a cluster apart)");
                return nullptr;
            }
        if (dims[0] * dims[1] * dims[2] > 1)
            attrs_.emplace_back("cluster", std::to_string(dims[0]) + "x" + std::to_string(dims[1]) + "x" +
                                               std::to_string(dims[2]));
        return nullptr;
    }
    if (s.name == "warp_policy") {
        std::string p = name_arg(0);
        if (s.args.size() != 1 || (p != "full_row" && p != "full_col" && p != "square")) {
            diags_.error(s.range, "@warp_policy takes one of full_row, full_col, square");
            return nullptr;
        }
        attrs_.emplace_back("warp_policy", p);
        return nullptr;
    }
    if (s.name == "allow_tf32") {
        if (!s.args.empty()) {
            diags_.error(s.range, "@allow_tf32 takes no arguments");
            return nullptr;
        }
        attrs_.emplace_back("allow_tf32", "true");
        return nullptr;
    }
    if (s.name == "warp_specialize" || s.name == "pingpong") {
        // sm_90a: @warp_specialize, the producer / consumer warp roles of pipelined wgmma
        // loops (lower/software_pipeline.cpp); @pingpong, the ping-pong of two consumer
        // warpgroups in attention loops (lower/pingpong_consumers.cpp). Both on by
        // default where they apply; the argument is any compile-time boolean, so an
        // export can choose through a template parameter.
        if (s.args.size() > 1) {
            diags_.error(s.range, "@" + s.name + " takes true or false: @" + s.name + "(false)");
            return nullptr;
        }
        bool on = true;
        if (s.args.size() == 1) {
            const std::string what = "the @" + s.name + " argument";
            auto v = expect_const_bool(*s.args[0].value, what.c_str());
            if (!v) return nullptr;
            on = *v;
        }
        attrs_.emplace_back(s.name, on ? "true" : "false");
        return nullptr;
    }
    if (s.name == "layout") {
        std::string buf = name_arg(0), kind = name_arg(1);
        if (s.args.size() != 2 || buf.empty() || (kind != "swizzle" && kind != "row_major" && kind != "padded")) {
            diags_.error(s.range, "@layout takes a shared buffer and a layout: @layout(buf, swizzle | row_major | "
                                  "padded)");
            return nullptr;
        }
        Value v = eval(*s.args[0].value);
        if (v.is_poison()) return nullptr;
        if (v.kind != K::Tile || v.buffer->scope != ir::Scope::Shared) {
            diags_.error(s.args[0].value->range, "@layout applies to shared buffers; '" + buf + "' is not one");
            return nullptr;
        }
        attrs_.emplace_back("layout(" + buf + ")", kind);
        return nullptr;
    }
    diags_.warning(s.name_range, "unknown annotation '@" + s.name + "' ignored (known: @allow_tf32, @cluster, @layout, "
                                                                   "@pingpong, @rasterize, @warp_policy, "
                                                                   "@warp_specialize)");
    return nullptr;
}

}  // namespace tilec::frontend
