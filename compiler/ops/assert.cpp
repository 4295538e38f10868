// The home of assert (see assert.h). The message is a string literal so that it can be
// printed without formatting at run time.
#include "ops/assert.h"

namespace tilec::ops {

using namespace ir;

Stmt elab_assert(ElabContext& ctx) {
    auto a = ctx.bind({"cond", "msg"}, 1);
    if (!a) return nullptr;
    const auto& args = *a;
    Expr c = ctx.condition(*args[0], "the condition of assert");
    std::string msg = "assertion failed";
    if (args[1]) {
        if (!args[1]->is_string) {
            ctx.diags().error(args[1]->range, "the message of assert must be a string literal");
            return nullptr;
        }
        msg = args[1]->text;
    }
    if (!c) return nullptr;
    return make_assert(c, msg, ctx.loc());
}

void assert_layout(const AssertNode&, LayoutConstraints&) {}

Stmt lower_assert(const AssertNode& op, LowerContext&) { unsupported(op.loc, "assert"); }

}  // namespace tilec::ops
