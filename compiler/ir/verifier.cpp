// The Tile IR verifier. It walks a function once with the scopes of vars and buffers,
// collecting every violation rather than stopping at the first, so one dump shows all.
#include "ir/verifier.h"

#include <unordered_set>

#include "ir/printer.h"
#include "ir/tma_maps.h"
#include "ir/visitor.h"

namespace tilec::ir {

namespace {

class Verifier : public IRVisitor {
public:
    explicit Verifier(const PrimFunc& f) : f_(f) {}

    std::vector<std::string> run() {
        check_function();
        return std::move(errors_);
    }

    using IRVisitor::visit;

private:
    // ---- reporting ----------------------------------------------------------------
    void error(SourceLoc loc, const std::string& msg) {
        std::string s;
        if (loc.valid()) s = std::to_string(loc.line) + ":" + std::to_string(loc.col) + ": ";
        errors_.push_back(s + msg);
    }

    static std::string quoted(const std::string& name) { return "'" + name + "'"; }

    // ---- definitions --------------------------------------------------------------
    void define_var(const Var& v, SourceLoc loc) {
        if (!v) {
            error(loc, "null variable definition");
            return;
        }
        if (!ever_vars_.insert(v.get()).second)
            error(loc, "variable " + quoted(v->name) + " is defined twice");
        live_vars_.insert(v.get());
    }
    void undefine_var(const Var& v) {
        if (v) live_vars_.erase(v.get());
    }
    void define_buffer(const Buffer& b, SourceLoc loc) {
        if (!ever_buffers_.insert(b.get()).second)
            error(loc, "buffer " + quoted(b->name) + " is defined twice");
        live_buffers_.insert(b.get());
    }

    // ---- expressions --------------------------------------------------------------
    void check_integer(const Expr& e, const std::string& what) {
        if (!e) {
            error({}, "null expression for " + what);
            return;
        }
        if (!e->type.is_integer() || !e->type.is_scalar())
            error(e->loc, what + " must be an integer, not " + e->type.str() + " (" + print(e) + ")");
    }
    void check_bool(const Expr& e, const std::string& what) {
        if (!e) {
            error({}, "null expression for " + what);
            return;
        }
        if (!e->type.is_bool())
            error(e->loc, what + " must be bool, not " + e->type.str() + " (" + print(e) + ")");
    }

    void visit_var(const VarNode* op) override {
        if (live_vars_.count(op)) return;
        if (op->var_kind == VarKind::BlockIdx) {
            for (const auto& b : f_.block_idx)
                if (b.get() == op) return;
            error(op->loc, "block index " + quoted(op->name) + " is not one of the function's block indices");
            return;
        }
        if (op->var_kind == VarKind::ThreadIdx) return;
        error(op->loc, "use of undefined variable " + quoted(op->name));
    }

    void visit_binary(const BinaryNode* op) override {
        if (is_logical(op->op) && op->a && op->b) {
            // The right side of && / || may not be evaluated: no warp shuffle there.
            visit(op->a);
            ++conditional_;
            visit(op->b);
            --conditional_;
        } else {
            IRVisitor::visit_binary(op);
        }
        if (!op->a || !op->b) {
            error(op->loc, std::string("null operand of ") + binary_op_name(op->op));
            return;
        }
        DataType ta = op->a->type, tb = op->b->type;
        std::string name = quoted(binary_op_name(op->op));
        if (ta != tb)
            error(op->loc, "operands of " + name + " have different types " + ta.str() + " and " + tb.str() +
                               " (" + print(Expr(op->a)) + ", " + print(Expr(op->b)) + ")");
        bool want_bool_result = is_comparison(op->op) || is_logical(op->op);
        if (want_bool_result && !op->type.is_bool()) error(op->loc, name + " must yield bool");
        if (!want_bool_result && op->type != ta) error(op->loc, name + " must yield its operands' type");
        switch (op->op) {
        case BinaryOp::And:
        case BinaryOp::Or:
            if (!ta.is_bool()) error(op->loc, "operands of " + name + " must be bool, not " + ta.str());
            break;
        case BinaryOp::FloorDiv:
        case BinaryOp::FloorMod:
        case BinaryOp::Shl:
        case BinaryOp::Shr:
            if (!ta.is_integer())
                error(op->loc, "operands of " + name + " must be integers, not " + ta.str());
            break;
        case BinaryOp::BitAnd:
        case BinaryOp::BitOr:
        case BinaryOp::BitXor:
            if (!ta.is_integer() && !ta.is_bool())
                error(op->loc, "operands of " + name + " must be integers, not " + ta.str());
            break;
        case BinaryOp::Div:
        case BinaryOp::Mod:
            if (!ta.is_float()) error(op->loc, "operands of " + name + " must be floats, not " + ta.str());
            break;
        case BinaryOp::Add:
        case BinaryOp::Sub:
        case BinaryOp::Mul:
        case BinaryOp::Min:
        case BinaryOp::Max:
            if (ta.is_bool()) error(op->loc, "operands of " + name + " must be numbers, not bool");
            break;
        default: break;
        }
    }

    void visit_unary(const UnaryNode* op) override {
        IRVisitor::visit_unary(op);
        if (!op->a) return;
        DataType t = op->a->type;
        switch (op->op) {
        case UnaryOp::Neg:
            if (t.is_bool()) error(op->loc, "operand of '-' must be a number, not bool");
            break;
        case UnaryOp::Not:
            if (!t.is_bool()) error(op->loc, "operand of '!' must be bool, not " + t.str());
            break;
        case UnaryOp::BitNot:
            if (!t.is_integer()) error(op->loc, "operand of '~' must be an integer, not " + t.str());
            break;
        }
    }

    void visit_select(const SelectNode* op) override {
        if (op->cond) visit(op->cond);
        ++conditional_;  // a backend may evaluate only the chosen side
        if (op->t) visit(op->t);
        if (op->f) visit(op->f);
        --conditional_;
        check_bool(op->cond, "select condition");
        if (op->t && op->f && op->t->type != op->f->type)
            error(op->loc,
                  "select branches have different types " + op->t->type.str() + " and " + op->f->type.str());
    }

    void visit_call(const CallNode* op) override {
        IRVisitor::visit_call(op);
        if (is_warp_shuffle(op->op)) {
            check_shuffle(op);
            return;
        }
        size_t want = op->op == CallOp::Pow ? 2 : 1;
        if (op->args.size() != want) {
            error(op->loc, std::string(call_op_name(op->op)) + " takes " + std::to_string(want) +
                               " argument(s), got " + std::to_string(op->args.size()));
            return;
        }
        for (const auto& a : op->args) {
            if (!a) continue;
            bool ok = a->type.is_float() || (op->op == CallOp::Abs && a->type.is_integer());
            if (!ok)
                error(op->loc, std::string("argument of ") + call_op_name(op->op) + " must be a float, not " +
                                   a->type.str());
        }
    }

    // ir.h, CallOp: a warp shuffle's operands, and where it may stand.
    void check_shuffle(const CallNode* op) {
        std::string name = call_op_name(op->op);
        if (f_.level != FuncLevel::Thread)
            error(op->loc, name + " in a function that is not thread level");
        if (conditional_ > 0)
            error(op->loc, name + " inside a select or the right side of && / || (the whole warp must execute it)");
        if (op->args.size() != 2) {
            error(op->loc, name + " takes 2 arguments (value, lane), got " + std::to_string(op->args.size()));
            return;
        }
        const Expr& v = op->args[0];
        const Expr& lane = op->args[1];
        if (!v || !lane) return;
        DataType t = v->type;
        if (!t.is_scalar() || !(t.is_bool() || t.is_integer() || t.is_float()) || t.bits > 64)
            error(op->loc, "value of " + name + " must be a scalar of up to 64 bits, not " + t.str());
        if (lane->type != DataType::i32())
            error(op->loc, "lane operand of " + name + " must be i32, not " + lane->type.str());
        if (op->type != t) error(op->loc, name + " must yield its value's type " + t.str() + ", not " + op->type.str());
    }

    void check_buffer_live(const Buffer& b, SourceLoc loc) {
        if (!b) {
            error(loc, "null buffer");
            return;
        }
        if (!live_buffers_.count(b.get()))
            error(loc, "use of buffer " + quoted(b->name) + " outside its allocation (or not a parameter)");
    }

    void check_indices(const Buffer& b, const std::vector<Expr>& indices, SourceLoc loc) {
        if (!b) return;
        if (indices.size() != b->rank())
            error(loc, "buffer " + quoted(b->name) + " of rank " + std::to_string(b->rank()) +
                           " indexed with " + std::to_string(indices.size()) + " indices");
        for (const auto& i : indices) check_integer(i, "index of " + quoted(b->name));
    }

    void visit_load(const LoadNode* op) override {
        check_buffer_live(op->buffer, op->loc);
        IRVisitor::visit_load(op);
        check_indices(op->buffer, op->indices, op->loc);
        if (op->buffer && op->type != op->buffer->dtype)
            error(op->loc, "load from " + quoted(op->buffer->name) + " has type " + op->type.str() +
                               ", not " + op->buffer->dtype.str());
    }

    // ---- regions ------------------------------------------------------------------
    void check_region(const Region& r, SourceLoc loc, const char* what, bool written) {
        if (!r.buffer) {
            error(loc, std::string("null buffer in ") + what);
            return;
        }
        check_buffer_live(r.buffer, loc);
        visit_region(r);
        const Buffer& b = r.buffer;
        std::string name = quoted(b->name);
        if (r.start.size() != b->rank() || r.extent.size() != b->rank()) {
            error(loc, std::string(what) + ": region of " + name + " has " + std::to_string(r.start.size()) +
                           " starts and " + std::to_string(r.extent.size()) + " extents for rank " +
                           std::to_string(b->rank()));
            return;
        }
        for (size_t i = 0; i < b->rank(); ++i) {
            check_integer(r.start[i], std::string(what) + " region start");
            check_integer(r.extent[i], std::string(what) + " region extent");
            auto ext = as_const_int(r.extent[i]);
            if (ext && *ext <= 0)
                error(loc, std::string(what) + ": region of " + name + " has a non-positive extent " +
                               std::to_string(*ext));
            if (b->scope == Scope::Global) continue;
            if (!ext) {
                error(loc, std::string(what) + ": region of " + scope_name(b->scope) + " buffer " + name +
                               " has a non-constant extent " + print(r.extent[i]));
                continue;
            }
            auto st = as_const_int(r.start[i]);
            auto dim = as_const_int(b->shape[i]);
            if (st && dim && (*st < 0 || *st + *ext > *dim))
                error(loc, std::string(what) + ": region [" + std::to_string(*st) + ", " +
                               std::to_string(*st + *ext) + ") of " + name + " exceeds dimension " +
                               std::to_string(i) + " of size " + std::to_string(*dim));
        }
        if (written) check_writable(b, loc, what);
    }

    void check_writable(const Buffer& b, SourceLoc loc, const char* what) {
        if (b && b->scope == Scope::Global && b->access == Access::In)
            error(loc, std::string(what) + " writes to input tensor " + quoted(b->name));
    }

    // Extents with unit dimensions dropped; nullopt if any extent is not constant.
    static std::optional<std::vector<int64_t>> squeezed(const Region& r) {
        std::vector<int64_t> out;
        for (const auto& e : r.extent) {
            auto c = as_const_int(e);
            if (!c) return std::nullopt;
            if (*c != 1) out.push_back(*c);
        }
        return out;
    }

    static std::string shape_str(const std::vector<int64_t>& s) {
        std::string out = "[";
        for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
        return out + "]";
    }

    void check_same_extents(const Region& a, const Region& b, SourceLoc loc, const char* what) {
        auto sa = squeezed(a), sb = squeezed(b);
        if (sa && sb && *sa != *sb)
            error(loc, std::string(what) + ": extents " + shape_str(*sa) + " of " + quoted(a.buffer->name) +
                           " and " + shape_str(*sb) + " of " + quoted(b.buffer->name) + " differ");
    }

    // ---- statements ---------------------------------------------------------------
    void visit_for(const ForNode* op) override {
        visit(op->min);
        visit(op->extent);
        check_integer(op->min, "loop start");
        check_integer(op->extent, "loop extent");
        if (op->var) {
            if (op->var->var_kind != VarKind::Loop)
                error(op->loc, "loop variable " + quoted(op->var->name) + " has kind " +
                                   var_kind_name(op->var->var_kind));
            if (!op->var->type.is_integer())
                error(op->loc, "loop variable " + quoted(op->var->name) + " must be an integer");
        }
        if (op->for_kind == ForKind::Pipelined && op->stages < 1)
            error(op->loc, "pipelined loop with " + std::to_string(op->stages) + " stages");
        if (!op->body) error(op->loc, "loop without a body");
        define_var(op->var, op->loc);
        visit(op->body);
        undefine_var(op->var);
    }

    void visit_let(const LetStmtNode* op) override {
        visit(op->value);
        if (op->var) {
            if (op->var->var_kind != VarKind::Let)
                error(op->loc, "let variable " + quoted(op->var->name) + " has kind " +
                                   var_kind_name(op->var->var_kind));
            if (op->value && op->value->type != op->var->type)
                error(op->loc, "let " + quoted(op->var->name) + " of type " + op->var->type.str() +
                                   " bound to a value of type " + op->value->type.str());
        }
        if (!op->body) error(op->loc, "let without a body");
        define_var(op->var, op->loc);
        visit(op->body);
        undefine_var(op->var);
    }

    void visit_allocate(const AllocateNode* op) override {
        const Buffer& b = op->buffer;
        if (!b) {
            error(op->loc, "allocate of a null buffer");
            return;
        }
        if (b->scope == Scope::Global) error(op->loc, "allocate of global buffer " + quoted(b->name));
        for (size_t i = 0; i < b->rank(); ++i) {
            auto c = as_const_int(b->shape[i]);
            if (!c || *c <= 0)
                error(op->loc, "allocated buffer " + quoted(b->name) + " has dimension " + std::to_string(i) +
                                   " of size " + print(b->shape[i]) + "; must be a positive constant");
        }
        define_buffer(b, op->loc);
        if (!op->body) error(op->loc, "allocate without a body");
        visit(op->body);
        live_buffers_.erase(b.get());
    }

    void visit_store(const StoreNode* op) override {
        check_buffer_live(op->buffer, op->loc);
        IRVisitor::visit_store(op);
        check_indices(op->buffer, op->indices, op->loc);
        if (op->buffer && op->value && op->value->type != op->buffer->dtype)
            error(op->loc, "store of " + op->value->type.str() + " into " + quoted(op->buffer->name) +
                               " of " + op->buffer->dtype.str());
        check_writable(op->buffer, op->loc, "store");
    }

    // ir.h, MachineOpNode: operand counts and types per op.
    void visit_machine_op(const MachineOpNode* op) override {
        IRVisitor::visit_machine_op(op);
        std::string name = std::string("machine ") + machine_op_name(op->op);
        if (f_.level != FuncLevel::Thread) error(op->loc, name + " in a function that is not thread level");
        for (const auto& d : op->dst)
            if (auto l = expr_as<LoadNode>(d)) check_writable(l->buffer, op->loc, "machine op");
        auto counts = [&](size_t imm, size_t dst, size_t src) {
            if (op->imm.size() == imm && op->dst.size() == dst && op->src.size() == src) return true;
            error(op->loc, name + " takes " + std::to_string(imm) + " immediates, " + std::to_string(dst) +
                               " destinations and " + std::to_string(src) + " operands");
            return false;
        };
        auto scope_of = [](const Expr& e) { return expr_as<LoadNode>(e) ? expr_as<LoadNode>(e)->buffer->scope : Scope::Register; };
        auto is_mbarrier = [&](const Expr& e) { return scope_of(e) == Scope::Shared && e->type == DataType::u64(); };
        switch (op->op) {
        case MachineOp::Ldmatrix: {
            if (op->imm.size() != 2) return (void)counts(2, 0, 1);
            int64_t num = op->imm[0];
            if (num != 1 && num != 2 && num != 4) return error(op->loc, name + " of " + std::to_string(num) + " matrices");
            const DataType et = op->src.empty() ? DataType::f16() : op->src[0]->type;
            const int bits = et.bits;
            if (!et.is_scalar() || (bits != 8 && bits != 16 && bits != 32) || !counts(2, num * 32 / bits, 1)) {
                if (op->src.size() == 1) error(op->loc, name + " reads a shared buffer of 8-, 16- or 32-bit elements");
                return;
            }
            if (scope_of(op->src[0]) != Scope::Shared) error(op->loc, name + " reads a shared buffer");
            if (op->imm[1] != 0 && bits != 16) error(op->loc, name + ".trans of " + std::to_string(bits) + "-bit elements");
            for (const auto& d : op->dst)
                if (scope_of(d) != Scope::Register || d->type != op->src[0]->type)
                    error(op->loc, name + " writes registers of its source's type");
            return;
        }
        case MachineOp::Mma: {
            if (op->imm.size() != 3 || op->imm[0] != 16 || op->imm[1] != 8 ||
                (op->imm[2] != 8 && op->imm[2] != 16 && op->imm[2] != 32))
                return error(op->loc, name + ": only m16n8k8, m16n8k16 and m16n8k32 are modelled");
            const int64_t k = op->imm[2], na = k / 2, nb = k / 4;
            if (!counts(3, 4, static_cast<size_t>(na + nb + 4))) return;
            DataType a = op->src[0]->type, b = op->src[na]->type, cd = op->src[na + nb]->type;
            if (!is_mma_form(k, a, b, cd))
                error(op->loc, name + " m16n8k" + std::to_string(k) + " of " + a.str() + " x " + b.str() +
                                   " operands into " + cd.str());
            for (int64_t i = 0; i < na + nb; ++i)
                if (op->src[i]->type != (i < na ? a : b)) error(op->loc, name + ": A elements of one type, B's of one");
            for (int64_t i = na + nb; i < na + nb + 4; ++i)
                if (op->src[i]->type != cd) error(op->loc, name + ": C elements of one type");
            for (const auto& d : op->dst)
                if (d->type != cd || scope_of(d) != Scope::Register)
                    error(op->loc, name + ": D elements are registers of C's type");
            return;
        }
        case MachineOp::CpAsync: {
            if (!counts(1, 1, 2)) return;
            int64_t bytes = op->imm[0];
            if (bytes != 4 && bytes != 8 && bytes != 16) error(op->loc, name + " of " + std::to_string(bytes) + " bytes");
            if (scope_of(op->dst[0]) != Scope::Shared || scope_of(op->src[0]) != Scope::Global)
                error(op->loc, name + " copies global memory to shared memory");
            if (op->dst[0]->type != op->src[0]->type) error(op->loc, name + " between different element types");
            if (!op->src[1]->type.is_integer()) error(op->loc, name + ": the source byte count is an integer");
            return;
        }
        case MachineOp::VectorCopy: {
            if (!counts(1, 1, 1)) return;
            int64_t bytes = op->imm[0];
            if (bytes != 4 && bytes != 8 && bytes != 16) error(op->loc, name + " of " + std::to_string(bytes) + " bytes");
            const Scope ds = scope_of(op->dst[0]), ss = scope_of(op->src[0]);
            if (!((ds == Scope::Global && ss == Scope::Shared) || (ds == Scope::Shared && ss == Scope::Global) ||
                  (ds == Scope::Register && ss == Scope::Global) || (ds == Scope::Shared && ss == Scope::Register)))
                error(op->loc, name + " copies between global and shared memory, or through registers");
            if (op->dst[0]->type != op->src[0]->type) error(op->loc, name + " between different element types");
            else if (bytes % std::max(1, op->dst[0]->type.bits / 8) != 0)
                error(op->loc, name + " of " + std::to_string(bytes) + " bytes: not whole elements");
            return;
        }
        case MachineOp::CpAsyncCommit: counts(0, 0, 0); return;
        case MachineOp::CpAsyncWait:
            if (counts(1, 0, 0) && op->imm[0] < 0) error(op->loc, name + " of a negative group count");
            return;
        case MachineOp::Wgmma: {
            if (op->imm.size() != 9) return (void)counts(9, 0, 0);
            int64_t n = op->imm[0];
            if (n < 8 || n > 256 || n % 8 != 0) return error(op->loc, name + " with n = " + std::to_string(n));
            // The register form: A's 8 elements first (wgmma_a_operands).
            const size_t na = wgmma_a_operands(*op);
            if (!counts(9, size_t(n / 2), size_t(n / 2) + na + 1)) return;
            DataType ab = op->src[0]->type, bt = op->src[na]->type;
            if (na == 8) {
                bool regs = true, same = true;
                for (size_t i = 0; i < 8; ++i) {
                    regs = regs && scope_of(op->src[i]) == Scope::Register;
                    same = same && op->src[i]->type == ab;
                }
                if (!regs || !same) error(op->loc, name + ": A's 8 register elements are registers of one type");
                if (!(((ab.kind == TypeKind::Float && ab.bits == 16) || ab.kind == TypeKind::BFloat) && bt == ab))
                    error(op->loc, name + " with A in registers: A and B are f16 x f16 or bf16 x bf16");
                if (scope_of(op->src[8]) != Scope::Shared) error(op->loc, name + ": B is an element of a shared buffer");
                if (op->imm[1] != 0 || op->imm[3] != 0 || op->imm[4] != 0 || op->imm[5] != 0)
                    error(op->loc, name + " with A in registers takes no transpose nor descriptor of A (0)");
                for (size_t i = 0; i < size_t(n / 2); ++i)
                    if (op->src[9 + i]->type != DataType::f32() || op->dst[i]->type != DataType::f32() ||
                        scope_of(op->dst[i]) != Scope::Register)
                        error(op->loc, name + ": the accumulators are f32 registers");
                return;
            }
            bool is16 = (ab.kind == TypeKind::Float && ab.bits == 16) || ab.kind == TypeKind::BFloat;
            auto is_f8 = [](DataType t) { return t.kind == TypeKind::Float8E4M3 || t.kind == TypeKind::Float8E5M2; };
            bool f8 = is_f8(ab) && is_f8(bt);
            if (!(is16 && bt == ab) && !f8)
                error(op->loc, name + ": A and B are f16 x f16, bf16 x bf16, or 8-bit floats (e4m3 / e5m2)");
            if (scope_of(op->src[0]) != Scope::Shared || scope_of(op->src[1]) != Scope::Shared)
                error(op->loc, name + ": A and B are elements of shared buffers");
            if (f8 && (op->imm[1] != 0 || op->imm[2] != 0))
                error(op->loc, name + ": 8-bit operands are K-major (no transpose)");
            for (size_t i = 0; i < size_t(n / 2); ++i) {
                if (op->src[2 + i]->type != DataType::f32() || op->dst[i]->type != DataType::f32() ||
                    scope_of(op->dst[i]) != Scope::Register)
                    error(op->loc, name + ": the accumulators are f32 registers");
            }
            return;
        }
        case MachineOp::WgmmaFence:
        case MachineOp::WgmmaWait:
            if (op->imm.size() != (op->op == MachineOp::WgmmaWait ? 1u : 0u) || op->dst.size() != op->src.size())
                return error(op->loc, name + " takes " + (op->op == MachineOp::WgmmaWait ? "1 immediate" : "no immediate") +
                                          " and the same registers as destinations and operands");
            if (op->op == MachineOp::WgmmaWait && op->imm[0] < 0) error(op->loc, name + " of a negative group count");
            for (const auto& d : op->dst)
                if (scope_of(d) != Scope::Register) error(op->loc, name + " names registers");
            // 16-bit elements (wgmma's A registers) in pairs of one type: one .b32 each.
            for (size_t i = 0; i < op->dst.size(); ++i) {
                DataType t = op->dst[i]->type;
                if (t.bits != 16) continue;
                if (i + 1 == op->dst.size() || op->dst[i + 1]->type != t || op->src[i]->type != t ||
                    op->src[i + 1]->type != t)
                    return error(op->loc, name + ": 16-bit registers come in pairs of one type (a .b32 register)");
                ++i;
            }
            return;
        case MachineOp::WgmmaCommit:
        case MachineOp::FenceProxyAsync: counts(0, 0, 0); return;
        case MachineOp::MbarrierInit:
        case MachineOp::MbarrierArrive: {
            // A remote arrive (MbarrierArrive with a cluster rank operand) is a plain arrive-on.
            const bool remote = op->op == MachineOp::MbarrierArrive && op->src.size() == 1;
            if (remote && (op->imm.size() != 1 || op->imm[0] != 0 || op->dst.size() != 1 || !op->src[0]->type.is_integer()))
                return error(op->loc, name + " to a cluster rank takes {0}, the mbarrier and an integer rank");
            if (!remote && !counts(1, 1, 0)) return;
            if (!is_mbarrier(op->dst[0])) error(op->loc, name + " names an element of a shared u64 buffer");
            if (op->op == MachineOp::MbarrierInit && (op->imm[0] < 1 || op->imm[0] >= (int64_t{1} << 20)))
                error(op->loc, name + " count outside 1 .. 2^20 - 1");
            if (op->op == MachineOp::MbarrierArrive && (op->imm[0] < 0 || op->imm[0] >= (int64_t{1} << 20)))
                error(op->loc, name + " of a transaction count outside 0 .. 2^20 - 1");
            return;
        }
        case MachineOp::MbarrierWait:
            if (!counts(0, 0, 2)) return;
            if (!is_mbarrier(op->src[0])) error(op->loc, name + " names an element of a shared u64 buffer");
            if (!op->src[1]->type.is_integer()) error(op->loc, name + ": the phase parity is an integer");
            return;
        case MachineOp::TmaLoad:
        case MachineOp::TmaStore: {
            // The global side: a load's first operand, a store's destination.
            const bool store = op->op == MachineOp::TmaStore;
            const std::vector<Expr>& global_side = store ? op->dst : op->src;
            auto g = global_side.empty() ? nullptr : expr_as<LoadNode>(global_side[0]);
            size_t rank = g ? g->indices.size() : 0;
            if (!g) return error(op->loc, name + (store ? "'s destination" : "'s first operand") + " is a load of the global tensor");
            if (op->imm.size() != 2 * rank + 1 && !counts(rank + 1, 1, store ? 1 : (op->src.size() == 3 ? 3 : 2))) return;
            // A load's optional third operand: the multicast's ctaMask.
            if (op->dst.size() != 1 || (store ? op->src.size() != 1u : op->src.size() != 2u && op->src.size() != 3u))
                return error(op->loc, name + (store ? " takes one destination and one operand"
                                                    : " takes one destination and two operands (three with a ctaMask)"));
            if (!store && op->src.size() == 3 && !op->src[2]->type.is_integer())
                error(op->loc, name + "'s ctaMask is an integer");
            const std::vector<size_t> dims = tma_map_dims(op->imm, rank);
            if (dims.empty()) return error(op->loc, name + "'s map dimensions are not a permutation of the tensor's");
            const Buffer& t = g->buffer;
            const Expr& shared_side = store ? op->src[0] : op->dst[0];
            if (scope_of(shared_side) != Scope::Shared || t->scope != Scope::Global ||
                !(t->strides.empty() ? dims[0] + 1 == rank : is_const_int(t->strides[dims[0]], 1)))
                error(op->loc, store ? name + " copies shared memory to a global tensor whose innermost map dimension is contiguous"
                                     : name + " copies a global tensor whose innermost map dimension is contiguous to shared memory");
            if (op->dst[0]->type != op->src[0]->type) error(op->loc, name + " between different element types");
            if (rank < 1 || rank > 5) error(op->loc, name + " of a rank-" + std::to_string(rank) + " tensor (1..5)");
            if (op->imm[0] < 0 || op->imm[0] > 3) error(op->loc, name + " swizzle mode " + std::to_string(op->imm[0]));
            for (size_t i = 1; i <= rank; ++i)
                if (op->imm[i] < 1 || op->imm[i] > 256) error(op->loc, name + " box dimension outside 1..256");
            if (!store && !is_mbarrier(op->src[1])) error(op->loc, name + " completes on an element of a shared u64 buffer");
            return;
        }
        case MachineOp::BulkCommit:
        case MachineOp::ClusterArrive:
        case MachineOp::ClusterWait: counts(0, 0, 0); return;
        case MachineOp::BulkWaitRead:
            if (counts(1, 0, 0) && op->imm[0] < 0) error(op->loc, name + " of a negative group count");
            return;
        case MachineOp::SetMaxNReg:
            if (!counts(2, 0, 0)) return;
            if ((op->imm[0] != 0 && op->imm[0] != 1) || op->imm[1] < 24 || op->imm[1] > 256 || op->imm[1] % 8 != 0)
                error(op->loc, name + " takes {inc 0 or 1, registers 24..256, a multiple of 8}");
            return;
        case MachineOp::NamedBarrier:
        case MachineOp::BarrierArrive:
            if (!counts(2, 0, 0)) return;
            if (op->imm[0] < 1 || op->imm[0] > 15 || op->imm[1] < 32 || op->imm[1] > 1024 || op->imm[1] % 32 != 0)
                error(op->loc, name + " takes {id 1..15, threads 32..1024, a multiple of 32}");
            return;
        case MachineOp::Mfma:
        case MachineOp::Wmma: {
            const bool wmma = op->op == MachineOp::Wmma;
            const std::vector<int64_t> mnk = op->imm;
            // f16 / bf16 into f32: 32x32x8, 16x16x16 (WMMA 16x16x16); i8 into i32 (MFMA):
            // 32x32x8, 16x16x16 (CDNA2), 32x32x16, 16x16x32 (CDNA3); fp8 into f32 (MFMA,
            // CDNA3): 32x32x16, 16x16x32 only, A and B each f8e4m3 or f8e5m2.
            const DataType t = op->src.empty() ? DataType::f32() : op->src[0]->type;
            const bool i8 = t == DataType::i8();
            auto is_f8 = [](DataType x) { return x.kind == TypeKind::Float8E4M3 || x.kind == TypeKind::Float8E5M2; };
            const bool f8 = is_f8(t) && !wmma;
            const bool k_doubled = mnk == std::vector<int64_t>{32, 32, 16} || mnk == std::vector<int64_t>{16, 16, 32};
            const bool shape_ok =
                wmma ? mnk == std::vector<int64_t>{16, 16, 16}
                : f8 ? k_doubled
                     : mnk == std::vector<int64_t>{32, 32, 8} || mnk == std::vector<int64_t>{16, 16, 16} || (i8 && k_doubled);
            if (!shape_ok)
                return error(op->loc, name + ": only " +
                                          (wmma ? "16x16x16"
                                                : "32x32x8 and 16x16x16 (i8 also 32x32x16 and 16x16x32; fp8 only those)") +
                                          " are modelled");
            const size_t ab = wmma ? 16 : static_cast<size_t>(mnk[0] * mnk[2] / 64),  // i8 WMMA: 16 too
                         cd = static_cast<size_t>(mnk[0] * mnk[1] / (wmma ? 32 : 64));
            if (!counts(3, cd, 2 * ab + cd)) return;
            if (!((t.kind == TypeKind::Float && t.bits == 16) || t.kind == TypeKind::BFloat || i8 || f8))
                error(op->loc, name + ": A and B are f16, bf16, i8 or (MFMA) f8e4m3 / f8e5m2");
            // fp8: A's elements one type, B's one type, either of the two.
            const DataType tb = f8 ? op->src[ab]->type : t;
            if (f8 && !is_f8(tb)) error(op->loc, name + ": B of fp8 A is f8e4m3 or f8e5m2");
            for (size_t i = 0; i < 2 * ab; ++i)
                if (op->src[i]->type != (i < ab ? t : tb)) error(op->loc, name + ": A and B elements of one type");
            // RDNA3's v_wmma_f16_16x16x16_f16: f16 A and B into f16 C and D.
            const bool acc16 = wmma && t == DataType::f16() && cd > 0 && op->src[2 * ab]->type == DataType::f16();
            const DataType acc = i8 ? DataType::i32() : acc16 ? DataType::f16() : DataType::f32();
            for (size_t i = 0; i < cd; ++i)
                if (op->src[2 * ab + i]->type != acc || op->dst[i]->type != acc ||
                    scope_of(op->dst[i]) != Scope::Register)
                    error(op->loc, name + ": C and D are f32 (i32 for i8; f16 WMMA: all f16, or f32), D in registers");
            return;
        }
        }
    }

    void visit_atomic_rmw(const AtomicRmwNode* op) override {
        check_buffer_live(op->buffer, op->loc);
        IRVisitor::visit_atomic_rmw(op);
        check_indices(op->buffer, op->indices, op->loc);
        if (op->buffer && op->value && op->value->type != op->buffer->dtype)
            error(op->loc, std::string("atomic_") + atomic_op_name(op->op) + " of " + op->value->type.str() +
                               " into " + quoted(op->buffer->name) + " of " + op->buffer->dtype.str());
        if (op->buffer && !op->buffer->dtype.is_float() && !op->buffer->dtype.is_integer())
            error(op->loc, "atomic on " + quoted(op->buffer->name) + " of " + op->buffer->dtype.str());
        check_writable(op->buffer, op->loc, "atomic");
    }

    void visit_if(const IfNode* op) override {
        check_bool(op->cond, "if condition");
        if (!op->then_case) error(op->loc, "if without a then branch");
        IRVisitor::visit_if(op);
    }

    void visit_assert(const AssertNode* op) override {
        check_bool(op->cond, "assert condition");
        IRVisitor::visit_assert(op);
    }

    void visit_evaluate(const EvaluateNode* op) override {
        if (!op->value) error(op->loc, "evaluate of a null expression");
        IRVisitor::visit_evaluate(op);
    }

    void visit_copy(const CopyNode* op) override {
        check_region(op->src, op->loc, "copy", false);
        check_region(op->dst, op->loc, "copy", true);
        visit(op->pad);
        if (!op->pad) {
            error(op->loc, "copy without a pad value");
        } else if (op->src.buffer && op->pad->type != op->src.buffer->dtype) {
            error(op->loc, "copy pad of type " + op->pad->type.str() + " for a source of " +
                               op->src.buffer->dtype.str());
        }
        if (op->src.buffer && op->dst.buffer) check_same_extents(op->src, op->dst, op->loc, "copy");
    }

    void visit_gemm(const GemmNode* op) override {
        check_region(op->a, op->loc, "gemm", false);
        check_region(op->b, op->loc, "gemm", false);
        check_region(op->c, op->loc, "gemm", true);
        if (!op->a.buffer || !op->b.buffer || !op->c.buffer) return;
        if (op->c.buffer->scope != Scope::Fragment)
            error(op->loc, "gemm accumulator " + quoted(op->c.buffer->name) + " must be a fragment, not " +
                               scope_name(op->c.buffer->scope));
        if (op->a.extent.size() != 2 || op->b.extent.size() != 2 || op->c.extent.size() != 2) {
            error(op->loc, "gemm operands must be 2-D");
            return;
        }
        auto dim = [](const Region& r, size_t i) { return as_const_int(r.extent[i]); };
        auto m_a = dim(op->a, op->trans_a ? 1 : 0), k_a = dim(op->a, op->trans_a ? 0 : 1);
        auto k_b = dim(op->b, op->trans_b ? 1 : 0), n_b = dim(op->b, op->trans_b ? 0 : 1);
        auto m_c = dim(op->c, 0), n_c = dim(op->c, 1);
        auto mismatch = [&](const char* which, std::optional<int64_t> x, std::optional<int64_t> y) {
            if (x && y && *x != *y)
                error(op->loc, std::string("gemm ") + which + " mismatch: " + std::to_string(*x) + " vs " +
                                   std::to_string(*y));
        };
        mismatch("M", m_a, m_c);
        mismatch("N", n_b, n_c);
        mismatch("K", k_a, k_b);
    }

    void visit_fill(const FillNode* op) override {
        check_region(op->dst, op->loc, "fill", true);
        visit(op->value);
        if (!op->value) {
            error(op->loc, "fill without a value");
        } else if (op->dst.buffer && op->value->type != op->dst.buffer->dtype) {
            error(op->loc, "fill of " + quoted(op->dst.buffer->name) + " (" + op->dst.buffer->dtype.str() +
                               ") with a value of type " + op->value->type.str());
        }
    }

    void visit_reduce(const ReduceNode* op) override {
        check_region(op->src, op->loc, "reduce", false);
        check_region(op->dst, op->loc, "reduce", true);
        size_t rank = op->src.extent.size();
        if (op->dim < 0 || static_cast<size_t>(op->dim) >= rank) {
            error(op->loc,
                  "reduce dim " + std::to_string(op->dim) + " out of range for rank " + std::to_string(rank));
            return;
        }
        // dst extents: src's without `dim`, or with it as 1.
        std::vector<Expr> want;
        for (size_t i = 0; i < rank; ++i)
            if (i != static_cast<size_t>(op->dim)) want.push_back(op->src.extent[i]);
        const auto& got = op->dst.extent;
        bool ok = false;
        auto same = [](const Expr& a, const Expr& b) {
            auto x = as_const_int(a), y = as_const_int(b);
            return (x && y) ? *x == *y : structural_equal(a, b);
        };
        if (got.size() + 1 == rank) {
            ok = true;
            for (size_t i = 0; i < want.size(); ++i) ok = ok && same(want[i], got[i]);
        } else if (got.size() == rank) {
            ok = is_const_int(got[op->dim], 1);
            for (size_t i = 0, j = 0; i < rank; ++i)
                if (i != static_cast<size_t>(op->dim)) ok = ok && same(want[j++], got[i]);
        }
        if (!ok)
            error(op->loc, "reduce destination " + quoted(op->dst.buffer ? op->dst.buffer->name : "?") +
                               " does not match the source with dim " + std::to_string(op->dim) + " removed");
    }

    void visit_cumsum(const CumsumNode* op) override {
        check_region(op->src, op->loc, "cumsum", false);
        check_region(op->dst, op->loc, "cumsum", true);
        if (op->dim < 0 || static_cast<size_t>(op->dim) >= op->src.extent.size())
            error(op->loc, "cumsum dim " + std::to_string(op->dim) + " out of range");
        if (op->src.buffer && op->dst.buffer) check_same_extents(op->src, op->dst, op->loc, "cumsum");
    }

    void visit_atomic_add(const AtomicAddNode* op) override {
        check_region(op->dst, op->loc, "atomic_add", true);
        check_region(op->src, op->loc, "atomic_add", false);
        if (op->src.buffer && op->dst.buffer) check_same_extents(op->src, op->dst, op->loc, "atomic_add");
    }

    void visit_seq(const SeqNode* op) override {
        for (const auto& s : op->stmts)
            if (!s) error(op->loc, "null statement in a sequence");
        IRVisitor::visit_seq(op);
    }

    // ---- the function -------------------------------------------------------------
    void check_function() {
        SourceLoc loc = f_.loc;
        if (f_.name.empty()) error(loc, "function without a name");
        for (int d = 0; d < 3; ++d) {
            const Var& v = f_.block_idx[d];
            if (!v) {
                error(loc, "missing block index variable " + std::to_string(d));
            } else if (v->var_kind != VarKind::BlockIdx || v->dim != d) {
                error(loc, "block index " + std::to_string(d) + " has kind " + var_kind_name(v->var_kind) +
                               " and dim " + std::to_string(v->dim));
            }
        }
        // Define every parameter first: tensor shapes may name sizes that come later.
        for (const auto& p : f_.params) {
            switch (p.kind) {
            case ParamKind::Tensor:
                if (!p.buffer) {
                    error(loc, "tensor parameter without a buffer");
                    break;
                }
                if (p.buffer->scope != Scope::Global)
                    error(p.buffer->loc, "tensor parameter " + quoted(p.buffer->name) + " is not global");
                define_buffer(p.buffer, p.buffer->loc);
                break;
            case ParamKind::Size:
            case ParamKind::Scalar: {
                if (!p.var) {
                    error(loc, "parameter without a variable");
                    break;
                }
                VarKind want = p.kind == ParamKind::Size ? VarKind::Size : VarKind::Scalar;
                if (p.var->var_kind != want)
                    error(p.var->loc, "parameter " + quoted(p.var->name) + " has kind " +
                                          var_kind_name(p.var->var_kind) + ", expected " +
                                          var_kind_name(want));
                if (p.kind == ParamKind::Size && !p.var->type.is_integer())
                    error(p.var->loc, "size parameter " + quoted(p.var->name) + " must be an integer");
                define_var(p.var, p.var->loc);
                break;
            }
            }
        }
        for (const auto& p : f_.params) {
            if (p.kind != ParamKind::Tensor || !p.buffer) continue;
            for (const auto& e : p.buffer->shape) {
                visit(e);
                check_integer(e, "dimension of " + quoted(p.buffer->name));
            }
            for (const auto& e : p.buffer->strides) {
                visit(e);
                check_integer(e, "stride of " + quoted(p.buffer->name));
            }
            if (!p.buffer->strides.empty() && p.buffer->strides.size() != p.buffer->rank())
                error(p.buffer->loc, "tensor " + quoted(p.buffer->name) + " has " +
                                         std::to_string(p.buffer->strides.size()) + " strides for rank " +
                                         std::to_string(p.buffer->rank()));
        }
        if (f_.grid.empty() || f_.grid.size() > 3)
            error(loc, "grid has " + std::to_string(f_.grid.size()) + " dimensions; expected 1 to 3");
        for (const auto& g : f_.grid) {
            visit(g);
            check_integer(g, "grid dimension");
        }
        if (f_.threads <= 0)
            error(loc, "threads per block must be positive, not " + std::to_string(f_.threads));
        if (!f_.body) {
            error(loc, "function without a body");
            return;
        }
        visit(f_.body);
    }

    const PrimFunc& f_;
    int conditional_ = 0;  // > 0: inside an expression that may not be evaluated
    std::vector<std::string> errors_;
    std::unordered_set<const VarNode*> live_vars_, ever_vars_;
    std::unordered_set<const BufferNode*> live_buffers_, ever_buffers_;
};

}  // namespace

std::vector<std::string> verify(const PrimFunc& f) {
    return Verifier(f).run();
}

}  // namespace tilec::ir
