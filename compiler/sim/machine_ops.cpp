// Target instructions (ir.h, MachineOpNode): each warp's lanes' operands gathered and run
// through the PTX ISA models of warp_mma.h, which know nothing of the IR; what the
// document calls undefined is reported as an issue. Shared-memory bytes the instructions
// read go through the race / initialisation shadow like any load, and their requests
// through the bank counters (ldmatrix: one pass per 8x8 matrix, as the hardware serves
// it).
#include <cstring>

#include "scalar/float_formats.h"
#include "sim/executor.h"
#include "sim/warp_mma.h"

namespace tilec::sim::detail {

using namespace ir;

void Executor::per_warp(const Active& act, const std::function<void(size_t, size_t)>& fn) const {
    for (size_t k = 0; k < act.size();) {
        size_t end = k;
        while (end < act.size() && act[end] / warp_ == act[k] / warp_) ++end;
        fn(k, end);
        k = end;
    }
}

void Executor::set_register(const Expr& dst, int t, Value v, SourceLoc loc) {
    auto* l = static_cast<const LoadNode*>(dst.get());
    Storage& s = storage(l->buffer, loc);
    if (s.scope != Scope::Register) fatal(loc, "a machine op writes '" + s.name() + "', which is not a register");
    int64_t off = offset_of(s, l->indices, loc, t, true);
    if (off < 0) return;
    int64_t slot = t * s.size + off;
    s.set(slot, v);
    if (!s.init.empty()) s.init[static_cast<size_t>(slot)] = 1;
}

void Executor::exec_machine_op(const MachineOpNode* op, const Active& act) {
    switch (op->op) {
    case MachineOp::Ldmatrix: exec_ldmatrix(op, act); return;
    case MachineOp::Mma: exec_mma(op, act); return;
    default: break;
    }
    fatal(at(op->loc), std::string("machine ") + machine_op_name(op->op) + " is not simulated");
}

namespace {

// The b16 bits of a value of a 16-bit float type, and back (the values are already of
// that format: exact).
uint16_t b16_bits(Value v, DataType t) {
    uint8_t b[2];
    encode(b, v, t);
    return static_cast<uint16_t>(b[0] | (b[1] << 8));
}

}  // namespace

void Executor::exec_ldmatrix(const MachineOpNode* op, const Active& act) {
    SourceLoc loc = at(op->loc);
    const int num = static_cast<int>(op->imm.at(0));
    const bool trans = op->imm.at(1) != 0;
    auto* src = static_cast<const LoadNode*>(op->src.at(0).get());
    Storage& s = storage(src->buffer, loc);
    if (s.scope != Scope::Shared || !s.arena || s.elem_bytes != 2)
        fatal(loc, "ldmatrix from '" + s.name() + "', which is not a 16-bit shared buffer");
    begin_statement();
    for (const auto& i : src->indices) prepare(i, act);
    std::vector<int64_t> off(static_cast<size_t>(threads_), -1);
    for (int32_t t : act) off[t] = offset_of(s, src->indices, loc, t, false);
    per_warp(act, [&](size_t k, size_t end) {
        const int first = act[k] / warp_ * warp_;
        std::array<isa::LdmatrixLane, 32> lanes{};
        for (int l = 0; l < 32; ++l) {
            lanes[l].executes = false;
            lanes[l].exited = first + l >= threads_;
        }
        for (size_t a = k; a < end; ++a) {
            int l = act[a] - first;
            lanes[l].executes = true;
            // An address outside the buffer (reported by offset_of) reads outside the view.
            lanes[l].addr = off[act[a]] < 0 ? uint32_t(-1) - 64 : static_cast<uint32_t>(s.base + off[act[a]] * 2);
        }
        isa::LdmatrixResult r = isa::ptx_ldmatrix_m8n8_b16(num, trans, arena_.bytes, lanes);
        for (const auto& is : r.issues) {
            int t = first + is.lane;
            switch (is.problem) {
            case isa::LdmatrixProblem::LaneExited:
            case isa::LdmatrixProblem::LaneNotExecuting:
                issue(IssueKind::WarpCollective, loc, act[k], [&] {
                    return "ldmatrix not executed by every lane of the warp (lane " + std::to_string(is.lane) +
                           " does not): the PTX ISA leaves the result undefined";
                });
                break;
            case isa::LdmatrixProblem::RowMisaligned:
            case isa::LdmatrixProblem::RowOutOfBounds:
                if (off[t] >= 0)
                    issue(IssueKind::MatrixAddress, loc, t, [&] {
                        return "ldmatrix row address of lane " + std::to_string(is.lane) + " ('" + s.name() +
                               "' element " + std::to_string(off[t]) + ") " +
                               (is.problem == isa::LdmatrixProblem::RowMisaligned
                                    ? "is not 16-byte aligned"
                                    : "runs past the end of shared memory");
                    });
                break;
            }
        }
        // The rows read: the shadow's checks per element, the banks per matrix pass.
        for (int l = 0; l < 8 * num; ++l) {
            if (!lanes[l].executes || off[first + l] < 0) continue;
            int64_t o = off[first + l];
            for (int e = 0; e < 8 && o + e < s.size; ++e) shared_read(s, o + e, first + l, loc, op);
            accesses_.push_back({op, loc, true, false, first + l, s.base + o * 2, 16, l / 8});
        }
        for (size_t a = k; a < end; ++a) {
            int t = act[a], l = t - first;
            for (int q = 0; q < num; ++q) {
                uint32_t bits = r.r[l][q];
                for (int h = 0; h < 2; ++h) {
                    uint8_t b[2] = {static_cast<uint8_t>(bits >> (16 * h)), static_cast<uint8_t>(bits >> (16 * h + 8))};
                    set_register(op->dst.at(2 * q + h), t, decode(b, s.dtype), loc);
                }
            }
        }
    });
    flush();
}

void Executor::exec_mma(const MachineOpNode* op, const Active& act) {
    SourceLoc loc = at(op->loc);
    if (op->imm != std::vector<int64_t>{16, 8, 16} || op->src.size() != 16 || op->dst.size() != 4)
        fatal(loc, "only mma m16n8k16 with f32 accumulators is simulated");
    const DataType ab = op->src[0]->type;
    begin_statement();
    for (const auto& e : op->src) prepare(e, act);
    std::vector<std::array<uint32_t, 10>> regs(static_cast<size_t>(threads_));
    for (int32_t t : act) {
        auto& r = regs[t];
        for (int i = 0; i < 6; ++i)
            r[i] = b16_bits(eval(op->src[2 * i], t), ab) | (uint32_t(b16_bits(eval(op->src[2 * i + 1], t), ab)) << 16);
        for (int i = 0; i < 4; ++i) {
            float f = static_cast<float>(eval(op->src[12 + i], t).f);
            std::memcpy(&r[6 + i], &f, 4);
        }
    }
    flush();
    per_warp(act, [&](size_t k, size_t end) {
        const int first = act[k] / warp_ * warp_;
        std::array<isa::MmaLane, 32> lanes{};
        for (int l = 0; l < 32; ++l) {
            lanes[l].executes = false;
            lanes[l].exited = first + l >= threads_;
        }
        for (size_t a = k; a < end; ++a) {
            int l = act[a] - first;
            const auto& r = regs[act[a]];
            lanes[l].executes = true;
            lanes[l].a = {r[0], r[1], r[2], r[3]};
            lanes[l].b = {r[4], r[5]};
            lanes[l].c = {r[6], r[7], r[8], r[9]};
        }
        isa::MmaResult res = isa::ptx_mma_sync_f32(
            isa::MmaShape::M16N8K16, ab.kind == TypeKind::BFloat ? isa::MmaAbType::Bf16 : isa::MmaAbType::F16, lanes);
        for (const auto& is : res.issues)
            issue(IssueKind::WarpCollective, loc, act[k], [&] {
                return "mma.sync not executed by every lane of the warp (lane " + std::to_string(is.lane) +
                       " does not): the PTX ISA leaves the result undefined";
            });
        for (size_t a = k; a < end; ++a) {
            int t = act[a], l = t - first;
            for (int i = 0; i < 4; ++i) {
                float f;
                std::memcpy(&f, &res.d[l][i], 4);
                set_register(op->dst[i], t, Value::of_float(f), loc);
            }
        }
    });
}

}  // namespace tilec::sim::detail
