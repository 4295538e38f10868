// Elaboration: each export becomes one ir::PrimFunc. The kernel is instantiated with
// its compile-time values, then its body is walked once: names resolve through lexical
// scopes, constants fold, types and tile shapes are checked, funcs are inlined, and
// Tile IR is built. Errors are reported with locations and elaboration goes on with a
// poison value, so one run reports several independent mistakes.
// This file: the entry (which kernels to instantiate, under which symbols) and the
// binding of compile-time parameters, run-time parameters and the launch clause; the
// walk itself is in the other elab_*.cpp files (see elaborator.h).
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <functional>

#include "frontend/elaborator.h"
#include "frontend/frontend.h"
#include "ops/elab_util.h"

namespace tilec::frontend {

using ir::DataType;
using K = Value::Kind;
using ops::plural;

std::optional<Value> Elaborator::template_value(const ast::TemplateParam& p, const ast::Expr& e) {
    Value v = eval(e);
    if (v.is_poison()) return std::nullopt;
    switch (p.kind) {
    case ast::TemplateKind::Int:
        if (v.kind == K::Int) return v;
        diags_.error(e.range, "compile-time parameter '" + p.name + "' is an int, but this is not an integer constant")
            .note(p.range, "'" + p.name + "' is declared here");
        return std::nullopt;
    case ast::TemplateKind::Bool:
        if (v.kind == K::Bool) return v;
        diags_.error(e.range, "compile-time parameter '" + p.name + "' is a bool; give true or false")
            .note(p.range, "'" + p.name + "' is declared here");
        return std::nullopt;
    case ast::TemplateKind::Type:
        if (v.kind == K::Type) return v;
        diags_.error(e.range, "compile-time parameter '" + p.name + "' is a type; give an element type such as f16")
            .note(p.range, "'" + p.name + "' is declared here");
        return std::nullopt;
    }
    return std::nullopt;
}

std::optional<Value> Elaborator::define_value(const ast::TemplateParam& p, const std::string& text) {
    auto fail = [&](const char* want) -> std::optional<Value> {
        diags_.error(p.range, "-D " + p.name + "=" + text + ": '" + p.name + "' is " + want + ", and '" + text +
                                  "' is not");
        return std::nullopt;
    };
    switch (p.kind) {
    case ast::TemplateKind::Int: {
        errno = 0;
        char* end = nullptr;
        long long v = std::strtoll(text.c_str(), &end, 0);
        if (text.empty() || *end != '\0' || errno == ERANGE) return fail("an int");
        return Value::of_int(v);
    }
    case ast::TemplateKind::Bool:
        if (text == "true" || text == "1") return Value::of_bool(true);
        if (text == "false" || text == "0") return Value::of_bool(false);
        return fail("a bool (true or false)");
    case ast::TemplateKind::Type:
        if (auto t = DataType::from_name(text)) return Value::of_type(*t);
        return fail("a type (such as f16)");
    }
    return std::nullopt;
}

static std::string value_text(const Value& v) {
    switch (v.kind) {
    case K::Int: return std::to_string(v.i);
    case K::Bool: return v.b ? "true" : "false";
    case K::Type: return v.type.str();
    default: return "?";
    }
}

bool Elaborator::bind_template_params(const ast::KernelDecl& kernel, const std::vector<ast::ExportArg>* args,
                                      SourceRange export_range, ir::PrimFunc& func) {
    bool ok = true;
    std::map<std::string, const ast::ExportArg*> given;
    if (args) {
        for (auto& a : *args) {
            auto it = std::find_if(kernel.template_params.begin(), kernel.template_params.end(),
                                   [&](const ast::TemplateParam& p) { return p.name == a.name; });
            if (it == kernel.template_params.end()) {
                diags_.error(a.name_range, "kernel '" + kernel.name + "' has no compile-time parameter '" + a.name + "'")
                    .note(kernel.name_range, "'" + kernel.name + "' is defined here");
                ok = false;
                continue;
            }
            if (!given.emplace(a.name, &a).second) {
                diags_.error(a.name_range, "compile-time parameter '" + a.name + "' is given twice");
                ok = false;
            }
        }
    }
    for (auto& p : kernel.template_params) {
        std::optional<Value> v;
        auto d = std::find_if(options_.defines.rbegin(), options_.defines.rend(),
                              [&](auto& kv) { return kv.first == p.name; });
        bool has_define = d != options_.defines.rend();
        if (auto it = given.find(p.name); it != given.end()) {
            // The export wins, but a -D value that this parameter cannot take is still an error.
            if (has_define && defines_checked_.insert(&p).second && !define_value(p, d->second)) ok = false;
            v = template_value(p, *it->second->value);
        } else if (has_define) {
            v = define_value(p, d->second);
            defines_checked_.insert(&p);
        } else if (p.default_value) {
            v = template_value(p, *p.default_value);
        } else {
            auto d = diags_.error(export_range.valid() ? export_range : p.range,
                                  "no value for compile-time parameter '" + p.name + "' of '" + kernel.name +
                                      "', which has no default; give it in the export, e.g. export " + kernel.name +
                                      "<" + p.name + " = ...> as ...");
            if (export_range.valid()) d.note(p.range, "'" + p.name + "' is declared here");
        }
        if (!v) {
            ok = false;
            bind(p.name, p.range, Value::poison(), Origin::TemplateParam);
            continue;
        }
        bind(p.name, p.range, *v, Origin::TemplateParam);
        func.constants.emplace_back(p.name, value_text(*v));
    }
    return ok;
}

bool Elaborator::bind_params(const ast::KernelDecl& kernel, ir::PrimFunc& func) {
    std::vector<ir::Buffer> tensors;
    std::vector<ir::Var> sizes, scalars;
    bool ok = true;
    // A plain name in a dimension that is not yet bound introduces a run-time size.
    auto dim_expr = [&](const ast::Expr& d, const char* what) -> ir::Expr {
        if (d.kind == ast::ExprKind::Name && !lookup(d.text) && !DataType::from_name(d.text) &&
            !is_builtin_name(d.text) && !program_.funcs.count(d.text) && !program_.kernels.count(d.text)) {
            ir::Var v = ir::make_size_var(d.text, loc_of(d.range));
            bind(d.text, d.range, Value::of_expr(v), Origin::Size);
            sizes.push_back(v);
            return v;
        }
        // Names that are not bound yet cannot be used in an expression (only as a plain
        // dimension, which binds them).
        bool unbound = false;
        std::function<void(const ast::Expr&)> find_unbound = [&](const ast::Expr& x) {
            if (x.kind == ast::ExprKind::Name && !lookup(x.text) && x.text != "block" && !DataType::from_name(x.text) &&
                !is_builtin_name(x.text) && !program_.funcs.count(x.text)) {
                diags_.error(x.range, "size '" + x.text + "' is used in an expression before it is bound; a "
                                      "dimension may use only names bound by earlier dimensions (name it as a "
                                      "plain dimension first)");
                unbound = true;
                return;
            }
            for (auto& o : x.operands) find_unbound(*o);
            for (auto& a : x.args) find_unbound(*a.value);
        };
        find_unbound(d);
        if (unbound) return nullptr;
        Value v = eval(d);
        if (v.kind == K::Int) {
            if (v.i <= 0) {
                diags_.error(d.range, std::string(what) + " must be positive, but it is " + std::to_string(v.i));
                return nullptr;
            }
            return ir::make_int(v.i, DataType::index(), loc_of(d.range));
        }
        return index_of(v, d.range, what);
    };
    for (auto& p : kernel.params) {
        auto t = resolve_type(p.type.elem, p.type.elem_range);
        if (!p.type.has_dims) {
            if (p.access != ast::Access::In) {
                diags_.error(p.access_range, "scalar parameter '" + p.name + "' cannot be '" +
                                                 (p.access == ast::Access::Out ? "out" : "inout") +
                                                 "'; only tensors are written");
                ok = false;
            }
            if (!p.type.strides.empty()) {
                diags_.error(p.type.range, "strides(...) applies to tensors; '" + p.name + "' is a scalar");
                ok = false;
            }
            if (!t) {
                ok = false;
                bind(p.name, p.range, Value::poison(), Origin::ScalarParam);
                continue;
            }
            ir::Var v = ir::make_var(p.name, *t, ir::VarKind::Scalar, loc_of(p.range));
            if (bind(p.name, p.range, Value::of_expr(v), Origin::ScalarParam)) scalars.push_back(v);
            else ok = false;
            continue;
        }
        std::vector<ir::Expr> shape, strides;
        bool pok = t.has_value();
        for (auto& d : p.type.dims) {
            ir::Expr x = dim_expr(*d, "a tensor dimension");
            if (!x) pok = false;
            shape.push_back(x);
        }
        if (!p.type.strides.empty()) {
            if (p.type.strides.size() != p.type.dims.size()) {
                diags_.error(p.type.range, "strides(...) of '" + p.name + "' has " +
                                               std::to_string(p.type.strides.size()) + (p.type.strides.size() == 1 ? " entry" : " entries") +
                                               " but '" + p.name + "' has " + plural(p.type.dims.size(), "dimension"));
                pok = false;
            } else {
                for (auto& s : p.type.strides) {
                    ir::Expr x = dim_expr(*s, "a stride");
                    if (!x) pok = false;
                    strides.push_back(x);
                }
            }
        }
        if (!pok) {
            ok = false;
            bind(p.name, p.range, Value::poison(), Origin::Tensor);
            continue;
        }
        ir::Access access = p.access == ast::Access::Out     ? ir::Access::Out
                            : p.access == ast::Access::InOut ? ir::Access::InOut
                                                             : ir::Access::In;
        ir::Buffer b = ir::make_tensor(p.name, *t, shape, access, loc_of(p.range), strides);
        buffer_decl_[b.get()] = p.range;
        if (bind(p.name, p.range, Value::of_tile(b), Origin::Tensor)) tensors.push_back(b);
        else ok = false;
    }
    for (auto& b : tensors) func.params.push_back(ir::Param{ir::ParamKind::Tensor, b, nullptr});
    for (auto& v : sizes) func.params.push_back(ir::Param{ir::ParamKind::Size, nullptr, v});
    for (auto& v : scalars) func.params.push_back(ir::Param{ir::ParamKind::Scalar, nullptr, v});
    return ok;
}

// A bad launch clause poisons no name, so the body is still checked after it.
void Elaborator::bind_launch(const ast::KernelDecl& kernel, ir::PrimFunc& func) {
    bool ok = true;

    // Launch configuration.
    if (kernel.grid.size() > 3) {
        diags_.error(kernel.grid_range, "grid(...) takes 1 to 3 dimensions, but " +
                                            std::to_string(kernel.grid.size()) + " were given");
        ok = false;
    } else if (kernel.grid.empty()) {
        func.grid.push_back(ir::make_int(1));
    } else {
        for (auto& g : kernel.grid) {
            ir::Expr x = expect_index(*g, "a grid dimension");
            if (!x) {
                ok = false;
                continue;
            }
            if (auto c = ir::as_const_int(x); c && *c <= 0) {
                diags_.error(g->range, "grid dimensions must be positive, but this is " + std::to_string(*c));
                ok = false;
            }
            func.grid.push_back(x);
        }
    }
    func.threads = 128;
    if (kernel.threads) {
        auto c = expect_const_int(*kernel.threads, "threads(...)");
        if (!c) {
            ok = false;
        } else if (*c < 1 || *c > 1024) {
            diags_.error(kernel.threads->range, "threads(" + std::to_string(*c) +
                                                    ") is out of range: a block has 1 to 1024 threads");
            ok = false;
        } else {
            func.threads = *c;
        }
    }
    (void)ok;
}

std::optional<ir::PrimFunc> Elaborator::instantiate(const ast::KernelDecl& kernel, const std::string& symbol,
                                                    const std::vector<ast::ExportArg>* args,
                                                    SourceRange export_range) {
    unsigned before = diags_.error_count();
    ir::PrimFunc func;
    func.name = symbol;
    func.kernel = kernel.name;
    func.loc = loc_of(kernel.name_range);
    scopes_.clear();
    scope_floor_ = 0;
    inlined_calls_.clear();
    written_.clear();
    attrs_.clear();
    block_idx_ = {};
    push_scope();  // compile-time parameters
    bool ok = bind_template_params(kernel, args, export_range, func);
    push_scope();  // run-time parameters
    if (ok) ok = bind_params(kernel, func);
    if (ok) bind_launch(kernel, func);
    if (ok) {
        block_idx_ = ir::make_block_idx_vars(loc_of(kernel.name_range));
        func.block_idx = block_idx_;
        push_scope();
        func.body = elab_block(kernel.body->body, 0);
        pop_scope();
        // After an error, a dropped statement may be the write; say nothing then.
        for (auto& p : func.params) {
            if (diags_.error_count() != before) break;
            if (p.kind == ir::ParamKind::Tensor && p.buffer->access != ir::Access::In && !written_.count(p.buffer.get()))
                diags_.warning(buffer_decl_.count(p.buffer.get()) ? buffer_decl_[p.buffer.get()] : SourceRange{},
                               "tensor '" + p.buffer->name + "' is marked '" + ir::access_name(p.buffer->access) +
                                   "' but kernel '" + kernel.name + "' never writes it");
        }
    }
    scopes_.clear();
    func.attrs = attrs_;
    if (diags_.error_count() != before) {
        if (export_range.valid())
            diags_.report(Diagnostic{Severity::Note, export_range,
                                     "while instantiating kernel '" + kernel.name + "' as '" + symbol + "'", {}});
        return std::nullopt;
    }
    if (!func.body) func.body = ir::make_seq({});
    return func;
}



ir::Module elaborate(const Program& program, const FrontendOptions& options, const SourceManager& sources,
                     DiagnosticEngine& diags) {
    ir::Module module;
    Elaborator elab(program, options, diags);
    std::map<std::string, SourceRange> symbols;
    std::set<std::string> template_names;
    auto claim = [&](const std::string& symbol, SourceRange where) {
        auto [it, inserted] = symbols.emplace(symbol, where);
        if (!inserted) {
            diags.error(where, "duplicate export symbol '" + symbol + "'").note(it->second, "previously exported here");
            return false;
        }
        return true;
    };
    // Every symbol the inputs export, in order, for the --export diagnostic.
    std::vector<std::string> available;
    auto selected = [&](const std::string& symbol) {
        available.push_back(symbol);
        return options.exports.empty() ||
               std::find(options.exports.begin(), options.exports.end(), symbol) != options.exports.end();
    };
    for (uint32_t id : program.input_files) {
        const ast::File* file = nullptr;
        for (auto& f : program.files)
            if (f->file_id == id) file = f.get();
        if (!file) continue;
        if (file->exports.empty()) {
            // A file without exports compiles each kernel whose parameters all have defaults.
            for (auto& k : file->kernels) {
                bool all_defaults = std::all_of(k->template_params.begin(), k->template_params.end(),
                                                [](const ast::TemplateParam& p) { return p.default_value != nullptr; });
                if (program.kernels.count(k->name) == 0 || program.kernels.at(k->name) != k.get()) continue;
                if (!all_defaults) {
                    auto p = std::find_if(k->template_params.begin(), k->template_params.end(),
                                          [](const ast::TemplateParam& t) { return !t.default_value; });
                    diags.warning(k->name_range, "kernel '" + k->name + "' is not compiled: compile-time parameter '" +
                                                     p->name + "' has no default and no export gives it");
                    continue;
                }
                for (auto& p : k->template_params) template_names.insert(p.name);
                if (!selected(k->name)) continue;
                if (!claim(k->name, k->name_range)) continue;
                if (auto f = elab.instantiate(*k, k->name, nullptr, {})) module.funcs.push_back(std::move(*f));
            }
            continue;
        }
        for (auto& e : file->exports) {
            auto it = program.kernels.find(e.kernel);
            if (it == program.kernels.end() && program.funcs.count(e.kernel)) {
                diags.error(e.kernel_range, "'" + e.kernel + "' is a func; only kernels can be exported")
                    .note(program.funcs.at(e.kernel)->name_range, "'" + e.kernel + "' is defined here");
                continue;
            }
            if (it == program.kernels.end()) {
                std::string best;
                size_t best_d = 3;
                for (auto& [n, k] : program.kernels) {
                    size_t d = edit_distance(e.kernel, n);
                    if (d < best_d) {
                        best = n;
                        best_d = d;
                    }
                }
                diags.error(e.kernel_range, "export of unknown kernel '" + e.kernel + "'" +
                                                (best.empty() ? "" : "; did you mean '" + best + "'?"));
                continue;
            }
            for (auto& p : it->second->template_params) template_names.insert(p.name);
            if (!selected(e.symbol)) continue;
            if (!claim(e.symbol, e.symbol_range)) continue;
            if (auto f = elab.instantiate(*it->second, e.symbol, &e.args, e.range)) module.funcs.push_back(std::move(*f));
        }
    }
    for (auto& name : options.exports) {
        if (std::find(available.begin(), available.end(), name) != available.end()) continue;
        std::string list, best;
        size_t best_d = 3;
        for (auto& a : available) {
            list += (list.empty() ? "" : ", ") + a;
            if (size_t d = edit_distance(name, a); d < best_d) {
                best = a;
                best_d = d;
            }
        }
        diags.error({}, "--export=" + name + ": no export of that name" +
                            (best.empty() ? "" : "; did you mean '" + best + "'?") +
                            (list.empty() ? " (the inputs export nothing)" : " (exports: " + list + ")"));
    }
    for (auto& [name, value] : options.defines)
        if (!template_names.count(name))
            diags.warning({}, "-D " + name + "=" + value + " matches no compile-time parameter of the compiled kernels");
    (void)sources;
    return module;
}

}  // namespace tilec::frontend
