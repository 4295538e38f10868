// Statement execution for one block: control flow, scoped lets and allocations (fresh,
// uninitialised storage each time), element stores, print and assert.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <iostream>

#include "interp/machine.h"
#include "ir/printer.h"

namespace tilec::interp::detail {

using namespace ir;

namespace {

// A printed value: integers in decimal, bools as true/false, floats as the shortest
// text that reads back as the same value of their type (f64: double, others: float).
std::string format_value(Value v, DataType t) {
    if (t.is_bool()) return v.i ? "true" : "false";
    if (is_u64(t)) return std::to_string(static_cast<uint64_t>(v.i));
    if (!t.is_float()) return std::to_string(v.i);
    if (std::isnan(v.f)) return "nan";
    if (std::isinf(v.f)) return v.f < 0 ? "-inf" : "inf";
    char buf[64];
    std::to_chars_result r;
    if (t.kind == TypeKind::Float && t.bits == 64)
        r = std::to_chars(buf, buf + sizeof buf, v.f);
    else
        r = std::to_chars(buf, buf + sizeof buf, static_cast<float>(v.f));
    return std::string(buf, r.ptr);
}

}  // namespace

void Machine::exec_print(const PrintNode* op) {
    std::string out;
    size_t arg = 0, pos = 0;
    while (true) {
        size_t hole = op->fmt.find("{}", pos);
        if (hole == std::string::npos || arg >= op->args.size()) {
            out += op->fmt.substr(pos);
            break;
        }
        out += op->fmt.substr(pos, hole - pos);
        out += format_value(eval(op->args[arg]), op->args[arg]->type);
        ++arg;
        pos = hole + 2;
    }
    std::ostream& os = opt_.print_stream ? *opt_.print_stream : std::cout;
    os << out << '\n';
}

void Machine::race_check(const Storage& s, int64_t off, const int64_t* idx, SourceLoc loc, bool write) {
    ir::Scope scope = s.buffer->scope;
    if (scope == Scope::Local || scope == Scope::Register) return;  // per thread
    ParallelRun& run = *parallel_;
    if (run.last != &s) {
        run.last = &s;
        run.last_shadow = &run.storages[&s];
        if (!s.global && run.last_shadow->dense.empty())
            run.last_shadow->dense.resize(s.f ? s.own_f.size() : s.own_i.size());
    }
    RaceShadow& sh =
        s.global ? run.last_shadow->sparse[off] : run.last_shadow->dense[static_cast<size_t>(off)];
    const int64_t it = run.iteration;
    const char* other = nullptr;
    if (sh.writer >= 0 && sh.writer != it)
        other = "written by another iteration";
    else if (write && (sh.reader == -2 || (sh.reader >= 0 && sh.reader != it)))
        other = "read by another iteration";
    if (other)
        fail(loc, "race in a parallel loop: " + element_str(s, idx) +
                      (write ? " written here was " : " read here was ") + other +
                      " of the same loop (its iterations run in no order)");
    if (write)
        sh.writer = it;
    else if (sh.reader == -1)
        sh.reader = it;
    else if (sh.reader != it)
        sh.reader = -2;
}

void Machine::exec(const Stmt& s) {
    switch (s->kind) {
    case StmtKind::Seq:
        for (const auto& st : static_cast<const SeqNode*>(s.get())->stmts) exec(st);
        return;
    case StmtKind::For: {
        auto* op = static_cast<const ForNode*>(s.get());
        int64_t min = eval_int(op->min), extent = eval_int(op->extent);
        // A parallel nest's iterations: each run of its innermost body is one.
        bool parallel = op->for_kind == ForKind::Parallel;
        bool outermost = parallel && !parallel_;
        auto* inner = op->body->as<ForNode>();
        bool innermost = parallel && !(inner && inner->for_kind == ForKind::Parallel);
        if (outermost) parallel_.emplace();
        push_var(op->var.get(), Value{});
        for (int64_t k = 0; k < extent; ++k) {
            vars_.back().second = Value::of_int(
                normalize_int(static_cast<int64_t>(static_cast<uint64_t>(min) + k), op->var->type));
            if (innermost) ++parallel_->iteration;
            exec(op->body);
        }
        pop_var();
        if (outermost) parallel_.reset();
        return;
    }
    case StmtKind::If: {
        auto* op = static_cast<const IfNode*>(s.get());
        if (eval_bool(op->cond))
            exec(op->then_case);
        else if (op->else_case)
            exec(op->else_case);
        return;
    }
    case StmtKind::LetStmt: {
        auto* op = static_cast<const LetStmtNode*>(s.get());
        push_var(op->var.get(), eval(op->value));
        exec(op->body);
        pop_var();
        return;
    }
    case StmtKind::Allocate: {
        auto* op = static_cast<const AllocateNode*>(s.get());
        const Buffer& b = op->buffer;
        Storage st;
        st.buffer = b.get();
        st.dtype = b->dtype;
        if (b->rank() > kMaxRank) fail(op->loc, "buffer '" + b->name + "' has more than 16 dimensions");
        int64_t size = 1;
        for (const auto& e : b->shape) {
            int64_t n = eval_int(e);
            if (n <= 0)
                fail(op->loc, "buffer '" + b->name + "' has a dimension of size " + std::to_string(n));
            st.shape.push_back(n);
            if (size > (int64_t(1) << 31) / n)
                fail(op->loc, "buffer '" + b->name + "' " + shape_str(st.shape) + " has over 2^31 elements");
            size *= n;
        }
        st.strides.assign(st.shape.size(), 1);
        for (size_t d = st.shape.size(); d-- > 1;) st.strides[d - 1] = st.strides[d] * st.shape[d];
        if (st.dtype.is_float()) {
            st.own_f.assign(size, std::nan(""));
            st.f = st.own_f.data();
        } else {
            st.own_i.assign(size, 0);
            st.i = st.own_i.data();
        }
        st.track_init = opt_.check_uninitialized;
        if (st.track_init) st.init.assign(size, 0);
        push_buffer(b.get(), &st);
        exec(op->body);
        pop_buffer();
        return;
    }
    case StmtKind::Store: {
        auto* op = static_cast<const StoreNode*>(s.get());
        Storage& st = storage(op->buffer, op->loc);
        if (!st.writable) fail(op->loc, "store to input tensor '" + st.name() + "'");
        int64_t idx[kMaxRank];
        int64_t off = element_offset(st, op->indices, op->loc, idx);
        Value v = eval(op->value);
        if (parallel_) race_check(st, off, idx, op->loc, true);
        st.write(off, v, op->value->type);
        return;
    }
    case StmtKind::Evaluate: eval(static_cast<const EvaluateNode*>(s.get())->value); return;
    case StmtKind::Copy: exec_copy(static_cast<const CopyNode*>(s.get())); return;
    case StmtKind::Gemm: exec_gemm(static_cast<const GemmNode*>(s.get())); return;
    case StmtKind::Fill: exec_fill(static_cast<const FillNode*>(s.get())); return;
    case StmtKind::Reduce: exec_reduce(static_cast<const ReduceNode*>(s.get())); return;
    case StmtKind::Cumsum: exec_cumsum(static_cast<const CumsumNode*>(s.get())); return;
    case StmtKind::AtomicAdd: exec_atomic_add(static_cast<const AtomicAddNode*>(s.get())); return;
    case StmtKind::Print: exec_print(static_cast<const PrintNode*>(s.get())); return;
    case StmtKind::Assert: {
        auto* op = static_cast<const AssertNode*>(s.get());
        if (eval_bool(op->cond)) return;
        bool plain = op->msg.empty() || op->msg == "assertion failed";
        fail(op->loc, plain ? std::string("assertion failed") : "assertion failed: " + op->msg);
        return;
    }
    case StmtKind::Barrier: return;  // one logical thread per block: nothing to wait for
    case StmtKind::AtomicRmw: break;  // thread level (the simulator runs it)
    case StmtKind::FullWrite: break;  // thread level
    case StmtKind::MachineOp: {
        // Thread level, the simulator's, but for vector_copy: plain memory (a thread's n
        // consecutive elements from one buffer into another), which the serialized
        // thread-level IR of AMD's fills holds (ops/copy.cpp).
        auto* op = static_cast<const MachineOpNode*>(s.get());
        if (op->op != MachineOp::VectorCopy) break;
        auto* dl = op->dst.at(0)->as<LoadNode>();
        auto* sl = op->src.at(0)->as<LoadNode>();
        Storage& d = storage(dl->buffer, op->loc);
        const Storage& src = storage(sl->buffer, op->loc);
        if (!d.writable) fail(op->loc, "store to input tensor '" + d.name() + "'");
        int64_t di[kMaxRank], si[kMaxRank];
        int64_t doff = element_offset(d, dl->indices, op->loc, di);
        int64_t soff = element_offset(src, sl->indices, op->loc, si);
        const int64_t n = op->imm.at(0) / std::max(1, (d.dtype.bits + 7) / 8);
        // The run goes along each side's unit-stride dimension and must end in it.
        auto unit_dim = [&](const Storage& st, const int64_t* idx) {
            int unit = -1;
            for (size_t k = 0; k < st.shape.size(); ++k)
                if (st.strides[k] == 1 && st.shape[k] > 1) unit = static_cast<int>(k);
            if (unit < 0 || idx[unit] + n > st.shape[static_cast<size_t>(unit)])
                fail(op->loc, "vector_copy of " + std::to_string(n) + " elements past the end of a row of '" +
                                  st.name() + "'");
            return unit;
        };
        const int du = unit_dim(d, di), su = unit_dim(src, si);
        for (int64_t e = 0; e < n; ++e) {
            if (parallel_) {
                race_check(src, soff + e, si, op->loc, false);
                race_check(d, doff + e, di, op->loc, true);
            }
            d.write(doff + e, src.read(soff + e, si, op->loc), src.dtype);
            ++si[su];
            ++di[du];
        }
        return;
    }
    }
    fail(s->loc, "cannot execute this statement");
}

}  // namespace tilec::interp::detail
