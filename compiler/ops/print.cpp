// The home of print (see print.h). Its arguments are positional only: the format
// string first, then one scalar per '{}'.
#include "ops/print.h"

#include "ops/elab_util.h"

namespace tilec::ops {

using namespace ir;

Stmt elab_print(ElabContext& ctx) {
    const std::vector<CallArg>& args = ctx.args();
    DiagnosticEngine& diags = ctx.diags();
    if (args.empty() || !args[0].is_string || !args[0].name.empty()) {
        diags.error(ctx.call_range(), "print takes a format string first: print(\"x = {}\", x)");
        return nullptr;
    }
    const std::string& fmt = args[0].text;
    size_t holes = 0;
    for (size_t p = fmt.find("{}"); p != std::string::npos; p = fmt.find("{}", p + 2)) ++holes;
    if (holes != args.size() - 1) {
        diags.error(args[0].range, "the format has " + plural(holes, "'{}' placeholder") + " but " +
                                       plural(args.size() - 1, "value") + (args.size() == 2 ? " is" : " are") +
                                       " given");
        return nullptr;
    }
    std::vector<Expr> vals;
    for (size_t i = 1; i < args.size(); ++i) {
        if (!args[i].name.empty()) {
            diags.error(args[i].name_range, "print takes no named arguments");
            return nullptr;
        }
        Expr v = ctx.scalar_value(args[i], "a printed value");
        if (!v) return nullptr;
        vals.push_back(v);
    }
    return make_print(fmt, vals, ctx.loc());
}

void print_layout(const PrintNode&, LayoutConstraints&) {}

Stmt lower_print(const PrintNode& op, LowerContext&) { unsupported(op.loc, "print"); }

}  // namespace tilec::ops
