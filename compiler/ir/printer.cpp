// The Tile IR printer: one deterministic text form for dumps and lit tests. Names are
// assigned in order of first appearance, so distinct Vars that share a name stay apart.
#include "ir/printer.h"

#include <charconv>
#include <cmath>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "ir/precedence.h"

namespace tilec::ir {

int binary_prec(BinaryOp op) {
    switch (op) {
    case BinaryOp::Or: return kOr;
    case BinaryOp::And: return kAnd;
    case BinaryOp::BitOr: return kBitOr;
    case BinaryOp::BitXor: return kBitXor;
    case BinaryOp::BitAnd: return kBitAnd;
    case BinaryOp::EQ:
    case BinaryOp::NE: return kEquality;
    case BinaryOp::LT:
    case BinaryOp::LE:
    case BinaryOp::GT:
    case BinaryOp::GE: return kRelational;
    case BinaryOp::Shl:
    case BinaryOp::Shr: return kShift;
    case BinaryOp::Add:
    case BinaryOp::Sub: return kAdditive;
    case BinaryOp::Mul:
    case BinaryOp::Div:
    case BinaryOp::FloorDiv:
    case BinaryOp::FloorMod: return kMultiplicative;
    case BinaryOp::Min:
    case BinaryOp::Max:
    case BinaryOp::Mod: return kPrimary;  // function form
    }
    return kPrimary;
}

namespace {


std::string escape(const std::string& s) {
    std::string out = "\"";
    for (unsigned char c : s) {
        switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\t': out += "\\t"; break;
        case '\r': out += "\\r"; break;
        default:
            if (c < 0x20 || c == 0x7f) {
                static const char* kHex = "0123456789abcdef";
                out += "\\x";
                out += kHex[c >> 4];
                out += kHex[c & 15];
            } else {
                out += static_cast<char>(c);
            }
        }
    }
    return out + "\"";
}

std::string format_double(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof buf, v);
    std::string s(buf, res.ptr);
    if (s.find_first_of(".eE") == std::string::npos) s += ".0";
    return s;
}

class Printer {
public:
    std::string str() const { return os_.str(); }

    // ---- names ------------------------------------------------------------------
    const std::string& name_of(const void* key, const std::string& base) {
        auto it = names_.find(key);
        if (it != names_.end()) return it->second;
        std::string b = base.empty() ? "v" : base;
        std::string n = b;
        for (int k = 1; used_.count(n); ++k) n = b + "_" + std::to_string(k);
        used_.insert(n);
        return names_.emplace(key, n).first->second;
    }
    const std::string& var_name(const VarNode* v) { return name_of(v, v->name); }
    const std::string& buffer_name(const Buffer& b) {
        return name_of(b.get(), b->name.empty() ? "buf" : b->name);
    }

    // ---- expressions --------------------------------------------------------------
    std::string expr(const Expr& e, int min_prec = 0) {
        if (!e) return "<null>";
        int prec = kPrimary;
        std::string s = expr_body(e, &prec);
        if (prec < min_prec) return "(" + s + ")";
        return s;
    }

    std::string exprs(const std::vector<Expr>& es) {
        std::string s;
        for (size_t i = 0; i < es.size(); ++i) {
            if (i) s += ", ";
            s += expr(es[i]);
        }
        return s;
    }

    std::string expr_body(const Expr& e, int* prec) {
        switch (e->kind) {
        case ExprKind::IntImm: {
            int64_t v = e->as<IntImmNode>()->value;
            if (v < 0) *prec = kUnary;
            if (e->type.is_bool()) return v ? "true" : "false";
            std::string s = std::to_string(v);
            if (e->type != DataType::index()) s += e->type.str();
            return s;
        }
        case ExprKind::FloatImm: {
            double v = e->as<FloatImmNode>()->value;
            std::string s = format_double(v);
            if (e->type == DataType::f32()) {
                if (s[0] == '-') *prec = kUnary;
                return s;
            }
            if (std::isinf(v) || std::isnan(v)) return "cast<" + e->type.str() + ">(" + s + ")";
            if (s[0] == '-') *prec = kUnary;
            return s + e->type.str();
        }
        case ExprKind::StringImm: return escape(e->as<StringImmNode>()->value);
        case ExprKind::Var: return var_name(e->as<VarNode>());
        case ExprKind::Binary: {
            auto op = e->as<BinaryNode>();
            int p = binary_prec(op->op);
            *prec = p;
            if (op->op == BinaryOp::Min || op->op == BinaryOp::Max || op->op == BinaryOp::Mod)
                return std::string(binary_op_name(op->op)) + "(" + expr(op->a) + ", " + expr(op->b) + ")";
            return expr(op->a, p) + " " + binary_op_name(op->op) + " " + expr(op->b, p + 1);
        }
        case ExprKind::Unary: {
            auto op = e->as<UnaryNode>();
            *prec = kUnary;
            // -(3), not -3: a negative literal prints as -3 (the reader must tell them apart).
            if (op->op == UnaryOp::Neg && (op->a->is<IntImmNode>() || op->a->is<FloatImmNode>()))
                return std::string("-(") + expr(op->a) + ")";
            return unary_op_name(op->op) + expr(op->a, kPrimary);
        }
        case ExprKind::Select: {
            auto op = e->as<SelectNode>();
            *prec = kSelect;
            return expr(op->cond, kSelect + 1) + " ? " + expr(op->t, kSelect + 1) + " : " +
                   expr(op->f, kSelect);
        }
        case ExprKind::Cast: {
            auto op = e->as<CastNode>();
            // A non-f32 inf/NaN constant prints as cast<T>(inf); a real cast of an f32
            // inf/NaN gets its operand in parentheses, so the reader can tell them apart.
            auto f = op->value->as<FloatImmNode>();
            if (f && op->value->type == DataType::f32() && !std::isfinite(f->value))
                return "cast<" + op->type.str() + ">((" + expr(op->value) + "))";
            return "cast<" + op->type.str() + ">(" + expr(op->value) + ")";
        }
        case ExprKind::Call: {
            auto op = e->as<CallNode>();
            return std::string(call_op_name(op->op)) + "(" + exprs(op->args) + ")";
        }
        case ExprKind::Load: {
            auto op = e->as<LoadNode>();
            return buffer_name(op->buffer) + "[" + exprs(op->indices) + "]";
        }
        }
        return "<?>";
    }

    std::string region(const Region& r) {
        if (!r.buffer) return "<null>";
        if (is_full_region(r)) return buffer_name(r.buffer);
        std::string s = buffer_name(r.buffer) + "[";
        size_t n = std::max(r.start.size(), r.extent.size());
        for (size_t i = 0; i < n; ++i) {
            if (i) s += ", ";
            s += i < r.start.size() ? expr(r.start[i]) : "?";
            s += " : +";
            s += i < r.extent.size() ? expr(r.extent[i], kAdditive + 1) : "?";
        }
        return s + "]";
    }

    // "f16[M, K] strides(lda, 1) @layout(x)"
    std::string buffer_type(const Buffer& b) {
        std::string s = b->dtype.str() + "[" + exprs(b->shape) + "]";
        if (!b->strides.empty()) s += " strides(" + exprs(b->strides) + ")";
        if (!b->layout_hint.empty()) s += " @layout(" + b->layout_hint + ")";
        return s;
    }

    std::string buffer_decl(const Buffer& b) {
        std::string s = scope_name(b->scope);
        if (b->scope == Scope::Global) s += std::string(" ") + access_name(b->access);
        s += " " + buffer_name(b) + ": " + buffer_type(b);
        if (b->shared_offset >= 0) s += " at byte " + std::to_string(b->shared_offset);  // the shared plan's
        return s;
    }

    std::string param(const Param& p) {
        switch (p.kind) {
        case ParamKind::Tensor: {
            if (!p.buffer) return "<null>";
            std::string s = buffer_name(p.buffer) + ": " + scope_name(p.buffer->scope);
            if (p.buffer->scope == Scope::Global) s += std::string(" ") + access_name(p.buffer->access);
            return s + " " + buffer_type(p.buffer);
        }
        case ParamKind::Size:
            if (!p.var) return "<null>";
            return var_name(p.var.get()) + ": size " + p.var->type.str();
        case ParamKind::Scalar:
            if (!p.var) return "<null>";
            return var_name(p.var.get()) + ": " + p.var->type.str();
        }
        return "<?>";
    }

    // ---- statements ---------------------------------------------------------------
    void line(int indent, const std::string& s) {
        for (int i = 0; i < indent; ++i) os_ << "  ";
        os_ << s << "\n";
    }

    // Prints the statements of a block (a Seq's children, or one statement).
    void block(const Stmt& s, int indent) {
        if (!s) return;
        if (auto seq = s->as<SeqNode>()) {
            for (size_t i = 0; i < seq->stmts.size(); ++i)
                stmt(seq->stmts[i], indent, i + 1 == seq->stmts.size());
            return;
        }
        stmt(s, indent, true);
    }

    // A scoping statement (alloc, let): flat when last in its block, else braced.
    void scoped(const std::string& head, const Stmt& body, int indent, bool last) {
        if (last) {
            line(indent, head);
            block(body, indent);
        } else {
            line(indent, head + " {");
            block(body, indent + 1);
            line(indent, "}");
        }
    }

    void stmt(const Stmt& s, int indent, bool last) {
        if (!s) {
            line(indent, "<null>");
            return;
        }
        switch (s->kind) {
        case StmtKind::Seq:
            line(indent, "{");
            block(s, indent + 1);
            line(indent, "}");
            return;
        case StmtKind::For: {
            auto op = s->as<ForNode>();
            std::string h = "for " + var_name(op->var.get());
            if (op->var->type != DataType::index()) h += ": " + op->var->type.str();  // as let does
            h += std::string(" in ") + for_kind_name(op->for_kind) + "(" + expr(op->min) + ", " +
                 expr(op->extent);
            if (op->for_kind == ForKind::Pipelined) h += ", stages=" + std::to_string(op->stages);
            line(indent, h + ") {");
            block(op->body, indent + 1);
            line(indent, "}");
            return;
        }
        case StmtKind::If: {
            auto op = s->as<IfNode>();
            line(indent, "if " + expr(op->cond) + " {");
            block(op->then_case, indent + 1);
            const IfNode* cur = op;
            while (cur->else_case) {
                if (auto elif = cur->else_case->as<IfNode>()) {
                    line(indent, "} else if " + expr(elif->cond) + " {");
                    block(elif->then_case, indent + 1);
                    cur = elif;
                    continue;
                }
                line(indent, "} else {");
                block(cur->else_case, indent + 1);
                break;
            }
            line(indent, "}");
            return;
        }
        case StmtKind::LetStmt: {
            auto op = s->as<LetStmtNode>();
            std::string value = expr(op->value);  // the value cannot see the var
            std::string h = "let " + var_name(op->var.get());
            if (op->var->type != DataType::index()) h += ": " + op->var->type.str();
            scoped(h + " = " + value, op->body, indent, last);
            return;
        }
        case StmtKind::Allocate: {
            auto op = s->as<AllocateNode>();
            scoped("alloc " + buffer_decl(op->buffer), op->body, indent, last);
            return;
        }
        case StmtKind::Store: {
            auto op = s->as<StoreNode>();
            line(indent, buffer_name(op->buffer) + "[" + exprs(op->indices) + "] = " + expr(op->value));
            return;
        }
        case StmtKind::Evaluate: line(indent, "eval " + expr(s->as<EvaluateNode>()->value)); return;
        case StmtKind::Copy: {
            auto op = s->as<CopyNode>();
            line(indent,
                 "copy(" + region(op->src) + " -> " + region(op->dst) + ", pad=" + expr(op->pad) + ")");
            return;
        }
        case StmtKind::Gemm: {
            auto op = s->as<GemmNode>();
            auto b = [](bool v) { return v ? "true" : "false"; };
            line(indent, "gemm(" + region(op->a) + ", " + region(op->b) + ", " + region(op->c) +
                             ", trans_a=" + b(op->trans_a) + ", trans_b=" + b(op->trans_b) +
                             ", clear=" + b(op->clear) + ")");
            return;
        }
        case StmtKind::Fill: {
            auto op = s->as<FillNode>();
            line(indent, "fill(" + region(op->dst) + ", " + expr(op->value) + ")");
            return;
        }
        case StmtKind::Reduce: {
            auto op = s->as<ReduceNode>();
            line(indent, std::string("reduce_") + reduce_kind_name(op->reduce_kind) + "(" + region(op->src) +
                             " -> " + region(op->dst) + ", dim=" + std::to_string(op->dim) +
                             ", clear=" + (op->clear ? "true" : "false") + ")");
            return;
        }
        case StmtKind::Cumsum: {
            auto op = s->as<CumsumNode>();
            line(indent, "cumsum(" + region(op->src) + " -> " + region(op->dst) + ", dim=" +
                             std::to_string(op->dim) + ", reverse=" + (op->reverse ? "true" : "false") + ")");
            return;
        }
        case StmtKind::AtomicAdd: {
            auto op = s->as<AtomicAddNode>();
            line(indent, "atomic_add(" + region(op->src) + " -> " + region(op->dst) + ")");
            return;
        }
        case StmtKind::Print: {
            auto op = s->as<PrintNode>();
            std::string h = "print(" + escape(op->fmt);
            for (const auto& a : op->args) h += ", " + expr(a);
            line(indent, h + ")");
            return;
        }
        case StmtKind::Assert: {
            auto op = s->as<AssertNode>();
            line(indent, "assert(" + expr(op->cond) + ", " + escape(op->msg) + ")");
            return;
        }
        case StmtKind::Barrier: line(indent, "barrier()"); return;
        case StmtKind::MachineOp: {
            auto op = s->as<MachineOpNode>();
            std::string imm;
            for (int64_t v : op->imm) imm += (imm.empty() ? "" : ", ") + std::to_string(v);
            line(indent, std::string("machine ") + machine_op_name(op->op) + "[" + imm + "] {" + exprs(op->dst) +
                             "} = {" + exprs(op->src) + "}");
            return;
        }
        case StmtKind::AtomicRmw: {
            auto op = s->as<AtomicRmwNode>();
            line(indent, std::string("atomic_") + atomic_op_name(op->op) + " " + buffer_name(op->buffer) + "[" +
                             exprs(op->indices) + "], " + expr(op->value));
            return;
        }
        case StmtKind::FullWrite: {
            auto op = s->as<FullWriteNode>();
            line(indent, "full_write " + buffer_name(op->buffer) + " {");
            block(op->body, indent + 1);
            line(indent, "}");
            return;
        }
        }
    }

    void func(const PrimFunc& f) {
        std::string head = "func " + f.name + " = " + f.kernel;
        if (!f.constants.empty()) {
            head += "<";
            for (size_t i = 0; i < f.constants.size(); ++i) {
                if (i) head += ", ";
                head += f.constants[i].first + "=" + f.constants[i].second;
            }
            head += ">";
        }
        line(0, head);
        // Block indices first, so they keep their names.
        for (const auto& v : f.block_idx)
            if (v) var_name(v.get());
        std::string params = "params(";
        for (size_t i = 0; i < f.params.size(); ++i) {
            if (i) params += ", ";
            params += param(f.params[i]);
        }
        line(1, params + ")");
        line(1, "grid(" + exprs(f.grid) + ") threads(" + std::to_string(f.threads) + ")");
        if (!f.attrs.empty()) {
            std::string attrs = "attrs(";
            for (size_t i = 0; i < f.attrs.size(); ++i) {
                if (i) attrs += ", ";
                attrs += f.attrs[i].first + "=" + f.attrs[i].second;
            }
            line(1, attrs + ")");
        }
        if (f.level == FuncLevel::Thread) {
            std::string level = "level(thread)";
            if (f.shared_bytes)
                level += " shared(" + std::to_string(*f.shared_bytes) +
                         (f.dynamic_shared ? " bytes, dynamic)" : " bytes, static)");
            line(1, level);
        }
        if (f.layouts) {
            std::istringstream lines(f.layouts->str());
            for (std::string l; std::getline(lines, l);) line(1, "// layout " + l);
        }
        line(0, "{");
        block(f.body, 1);
        line(0, "}");
    }

private:
    std::ostringstream os_;
    std::unordered_map<const void*, std::string> names_;
    std::unordered_set<std::string> used_;
};

}  // namespace

std::string print(const Module& m) {
    std::string out;
    for (size_t i = 0; i < m.funcs.size(); ++i) {
        if (i) out += "\n";
        out += print(m.funcs[i]);
    }
    return out;
}

std::string print(const PrimFunc& f) {
    Printer p;
    p.func(f);
    return p.str();
}

std::string print(const Stmt& s) {
    Printer p;
    p.block(s, 0);
    return p.str();
}

std::string print(const Expr& e) {
    Printer p;
    return p.expr(e);
}

std::string print(const Region& r) {
    Printer p;
    return p.region(r);
}

std::string print_buffer_decl(const Buffer& b) {
    if (!b) return "<null>";
    Printer p;
    return p.buffer_decl(b);
}

}  // namespace tilec::ir
