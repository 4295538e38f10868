// A stable, indented text form of the syntax tree (`tilec --emit=ast`), for debugging
// the parser and for lit tests of parsing alone.
#include "frontend/ast.h"

#include <sstream>

namespace tilec::ast {

const char* to_string(UnaryOp op) {
    switch (op) {
    case UnaryOp::Neg: return "-";
    case UnaryOp::Plus: return "+";
    case UnaryOp::Not: return "!";
    case UnaryOp::BitNot: return "~";
    }
    return "?";
}

const char* to_string(BinaryOp op) {
    switch (op) {
    case BinaryOp::Add: return "+";
    case BinaryOp::Sub: return "-";
    case BinaryOp::Mul: return "*";
    case BinaryOp::Div: return "/";
    case BinaryOp::Mod: return "%";
    case BinaryOp::Shl: return "<<";
    case BinaryOp::Shr: return ">>";
    case BinaryOp::Lt: return "<";
    case BinaryOp::Le: return "<=";
    case BinaryOp::Gt: return ">";
    case BinaryOp::Ge: return ">=";
    case BinaryOp::Eq: return "==";
    case BinaryOp::Ne: return "!=";
    case BinaryOp::BitAnd: return "&";
    case BinaryOp::BitXor: return "^";
    case BinaryOp::BitOr: return "|";
    case BinaryOp::And: return "&&";
    case BinaryOp::Or: return "||";
    }
    return "?";
}

namespace {

void print_expr(std::ostream& os, const Expr& e);

void print_args(std::ostream& os, const std::vector<Arg>& args) {
    for (size_t i = 0; i < args.size(); ++i) {
        if (i) os << ", ";
        if (!args[i].name.empty()) os << args[i].name << " = ";
        print_expr(os, *args[i].value);
    }
}

void print_type(std::ostream& os, const TypeSpec& t) {
    os << t.elem;
    if (t.has_dims) {
        os << '[';
        for (size_t i = 0; i < t.dims.size(); ++i) {
            if (i) os << ", ";
            print_expr(os, *t.dims[i]);
        }
        os << ']';
    }
    if (!t.strides.empty()) {
        os << " strides(";
        for (size_t i = 0; i < t.strides.size(); ++i) {
            if (i) os << ", ";
            print_expr(os, *t.strides[i]);
        }
        os << ')';
    }
}

// Fully parenthesised so the tree's shape is visible.
void print_expr(std::ostream& os, const Expr& e) {
    switch (e.kind) {
    case ExprKind::Int: os << (e.text.empty() ? std::to_string(e.int_value) : e.text); break;
    case ExprKind::Float: os << e.text; break;
    case ExprKind::Bool: os << (e.bool_value ? "true" : "false"); break;
    case ExprKind::Inf: os << "inf"; break;
    case ExprKind::String: {
        os << '"';
        for (char c : e.text) {
            if (c == '\n') os << "\\n";
            else if (c == '"' || c == '\\') os << '\\' << c;
            else os << c;
        }
        os << '"';
        break;
    }
    case ExprKind::Name: os << e.text; break;
    case ExprKind::Unary:
        os << '(' << to_string(e.unary_op);
        print_expr(os, *e.operands[0]);
        os << ')';
        break;
    case ExprKind::Binary:
        os << '(';
        print_expr(os, *e.operands[0]);
        os << ' ' << to_string(e.binary_op) << ' ';
        print_expr(os, *e.operands[1]);
        os << ')';
        break;
    case ExprKind::Ternary:
        os << '(';
        print_expr(os, *e.operands[0]);
        os << " ? ";
        print_expr(os, *e.operands[1]);
        os << " : ";
        print_expr(os, *e.operands[2]);
        os << ')';
        break;
    case ExprKind::Index:
        print_expr(os, *e.operands[0]);
        os << '[';
        for (size_t i = 1; i < e.operands.size(); ++i) {
            if (i > 1) os << ", ";
            print_expr(os, *e.operands[i]);
        }
        os << ']';
        break;
    case ExprKind::Call:
        print_expr(os, *e.operands[0]);
        os << '(';
        print_args(os, e.args);
        os << ')';
        break;
    case ExprKind::Member:
        print_expr(os, *e.operands[0]);
        os << '.' << e.text;
        break;
    case ExprKind::Cast:
        os << "cast<";
        print_type(os, *e.cast_type);
        os << ">(";
        print_expr(os, *e.operands[0]);
        os << ')';
        break;
    }
}

void indent(std::ostream& os, int n) {
    for (int i = 0; i < n; ++i) os << "  ";
}

void print_stmt(std::ostream& os, const Stmt& s, int depth) {
    indent(os, depth);
    switch (s.kind) {
    case StmtKind::Block:
        os << "{\n";
        for (auto& b : s.body) print_stmt(os, *b, depth + 1);
        indent(os, depth);
        os << "}\n";
        return;
    case StmtKind::Let:
        os << "let " << s.name;
        if (s.type) {
            os << ": ";
            print_type(os, *s.type);
        }
        os << " = ";
        print_expr(os, *s.value);
        os << '\n';
        return;
    case StmtKind::Var:
        os << "var " << s.name << ": ";
        print_type(os, *s.type);
        if (s.value) {
            os << " = ";
            print_expr(os, *s.value);
        }
        os << '\n';
        return;
    case StmtKind::Buffer:
        os << (s.scope == BufferScope::Shared ? "shared " : s.scope == BufferScope::Fragment ? "fragment " : "local ")
           << s.name << ": ";
        print_type(os, *s.type);
        os << '\n';
        return;
    case StmtKind::For:
        os << "for ";
        for (size_t i = 0; i < s.loop_vars.size(); ++i) os << (i ? ", " : "") << s.loop_vars[i].name;
        os << " in " << s.name << '(';
        print_args(os, s.args);
        os << ")\n";
        print_stmt(os, *s.then_branch, depth + 1);
        return;
    case StmtKind::If:
        os << "if ";
        print_expr(os, *s.value);
        os << '\n';
        print_stmt(os, *s.then_branch, depth + 1);
        if (s.else_branch) {
            indent(os, depth);
            os << "else\n";
            print_stmt(os, *s.else_branch, depth + 1);
        }
        return;
    case StmtKind::Return:
        os << "return";
        if (s.value) {
            os << ' ';
            print_expr(os, *s.value);
        }
        os << '\n';
        return;
    case StmtKind::Break: os << "break\n"; return;
    case StmtKind::Continue: os << "continue\n"; return;
    case StmtKind::Annotation:
        os << '@' << s.name << '(';
        print_args(os, s.args);
        os << ")\n";
        return;
    case StmtKind::Assign:
        print_expr(os, *s.target);
        os << ' ' << s.assign_op << ' ';
        print_expr(os, *s.value);
        os << '\n';
        return;
    case StmtKind::Expr:
        print_expr(os, *s.value);
        os << '\n';
        return;
    case StmtKind::Empty: os << ";\n"; return;
    }
}

}  // namespace

std::string print(const Expr& e) {
    std::ostringstream os;
    print_expr(os, e);
    return os.str();
}

std::string print(const File& file) {
    std::ostringstream os;
    for (auto& i : file.imports) os << "import \"" << i.path << "\"\n";
    for (auto& f : file.funcs) {
        os << "func " << f->name << '(';
        for (size_t i = 0; i < f->params.size(); ++i) {
            if (i) os << ", ";
            os << f->params[i].name;
            if (f->params[i].type) {
                os << ": ";
                print_type(os, *f->params[i].type);
            }
        }
        os << ")\n";
        print_stmt(os, *f->body, 0);
    }
    for (auto& k : file.kernels) {
        os << "kernel " << k->name;
        if (!k->template_params.empty()) {
            os << '<';
            for (size_t i = 0; i < k->template_params.size(); ++i) {
                auto& t = k->template_params[i];
                os << (i ? ", " : "") << t.name << ": "
                   << (t.kind == TemplateKind::Int ? "int" : t.kind == TemplateKind::Bool ? "bool" : "type");
                if (t.default_value) {
                    os << " = ";
                    print_expr(os, *t.default_value);
                }
            }
            os << '>';
        }
        os << '(';
        for (size_t i = 0; i < k->params.size(); ++i) {
            auto& p = k->params[i];
            os << (i ? ", " : "") << p.name << ": "
               << (p.access == Access::Out ? "out " : p.access == Access::InOut ? "inout " : "");
            print_type(os, p.type);
        }
        os << ")";
        if (!k->grid.empty()) {
            os << " grid(";
            for (size_t i = 0; i < k->grid.size(); ++i) {
                if (i) os << ", ";
                print_expr(os, *k->grid[i]);
            }
            os << ')';
        }
        if (k->threads) {
            os << " threads(";
            print_expr(os, *k->threads);
            os << ')';
        }
        os << '\n';
        print_stmt(os, *k->body, 0);
    }
    for (auto& e : file.exports) {
        os << "export " << e.kernel;
        if (!e.args.empty()) {
            os << '<';
            for (size_t i = 0; i < e.args.size(); ++i) {
                os << (i ? ", " : "") << e.args[i].name << " = ";
                print_expr(os, *e.args[i].value);
            }
            os << '>';
        }
        os << " as " << e.symbol << '\n';
    }
    return os.str();
}

}  // namespace tilec::ast
