// Target instructions (ir.h, MachineOpNode): each warp's lanes' operands gathered and run
// through the PTX ISA models of warp_mma.h, which know nothing of the IR; what the
// document calls undefined is reported as an issue. Shared-memory bytes the instructions
// read go through the race / initialisation shadow like any load, and their requests
// through the bank counters (ldmatrix: one pass per 8x8 matrix, as the hardware serves
// it).
#include <cstring>

#include "scalar/float_formats.h"
#include "scalar/fp8_fnuz.h"
#include "sim/executor.h"
#include "sim/warp_mma.h"
#include "sim/warpgroup_mma.h"
#include "sim/wave_mfma.h"

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
    case MachineOp::CpAsync: exec_cp_async(op, act); return;
    case MachineOp::VectorCopy: exec_vector_copy(op, act); return;
    case MachineOp::Wgmma: exec_wgmma(op, act); return;
    case MachineOp::Mfma:
    case MachineOp::Wmma: exec_amd_matrix(op, act); return;
    // The model computes a wgmma's result when it is issued; its reads of shared memory
    // stay in flight until the wait that completes its group (a write to those bytes
    // before then is reported), as the document allows the hardware to read them late.
    case MachineOp::WgmmaCommit:
        for (size_t k = 0; k < act.size(); ++k)
            if (k == 0 || act[k] / 128 != act[k - 1] / 128) {
                auto& g = wgmma_group_of(act[k]);
                g.committed.push_back(std::move(g.open));
                g.open.clear();
                g.committed_regs.push_back(std::move(g.open_regs));
                g.open_regs.clear();
            }
        return;
    case MachineOp::WgmmaWait:
        for (size_t k = 0; k < act.size(); ++k)
            if (k == 0 || act[k] / 128 != act[k - 1] / 128)
                complete_wgmma_groups(act[k], static_cast<size_t>(op->imm.at(0)));
        return;
    case MachineOp::WgmmaFence: return;
    case MachineOp::FenceProxyAsync:
        for (int32_t t : act) {
            auto k = static_cast<size_t>(t);
            if (fence_epoch_[k] != epoch_) {
                fences_before_epoch_[k] = fences_[k];
                fence_epoch_[k] = epoch_;
            }
            ++fences_[k];
        }
        return;
    case MachineOp::MbarrierInit:
    case MachineOp::MbarrierArrive:
    case MachineOp::MbarrierWait: exec_mbarrier(op, act); return;
    case MachineOp::TmaLoad: exec_tma_load(op, act); return;
    case MachineOp::TmaStore: exec_tma_store(op, act); return;
    case MachineOp::BulkCommit:
        for (int32_t t : act) {
            auto& g = bulk_groups_of(t);
            g.committed.push_back(std::move(g.open));
            g.open.clear();
        }
        return;
    case MachineOp::BulkWaitRead:
        for (int32_t t : act) {
            auto& g = bulk_groups_of(t);
            while (g.committed.size() > static_cast<size_t>(op->imm.at(0))) {
                for (uint32_t b : g.committed.front()) --arena_.bulk_reading[b];
                g.committed.erase(g.committed.begin());
                ++sync_progress_;
            }
        }
        return;
    case MachineOp::SetMaxNReg:
        // Warpgroup-collective (.sync.aligned): whole warpgroups, no lane left out.
        for (size_t k = 0; k < act.size(); k += 128)
            if (act[k] % 128 != 0 || k + 127 >= act.size() || act[k + 127] != act[k] + 127) {
                issue(IssueKind::BarrierDivergence, at(op->loc), act[k], [&] {
                    return std::string("setmaxnreg executed by part of a warpgroup (it is warpgroup-collective)");
                });
                break;
            }
        return;
    case MachineOp::NamedBarrier:
    case MachineOp::BarrierArrive: exec_named_barrier(op, act); return;
    case MachineOp::ClusterArrive:
    case MachineOp::ClusterWait: exec_cluster_barrier(op, act); return;
    case MachineOp::CpAsyncCommit:
        for (int32_t t : act) async_thread(t).commit_group();
        return;
    case MachineOp::CpAsyncWait:
        for (int32_t t : act) {
            auto& m = async_thread(t);
            m.wait_group(static_cast<int>(op->imm.at(0)));
            report_async(m, async_seen_[t], t, at(op->loc));
        }
        return;
    }
    fatal(at(op->loc), std::string("machine ") + machine_op_name(op->op) + " is not simulated");
}

namespace {

// A warp's lanes as the ISA models take them: none executing yet, those past the
// block's last thread exited (they do not exist).
template <typename Lane>
std::array<Lane, 32> warp_lanes(int first, int threads) {
    std::array<Lane, 32> lanes{};
    for (int l = 0; l < 32; ++l) {
        lanes[l].executes = false;
        lanes[l].exited = first + l >= threads;
    }
    return lanes;
}

}  // namespace

void Executor::exec_ldmatrix(const MachineOpNode* op, const Active& act) {
    SourceLoc loc = at(op->loc);
    const int num = static_cast<int>(op->imm.at(0));
    const bool trans = op->imm.at(1) != 0;
    auto* src = static_cast<const LoadNode*>(op->src.at(0).get());
    Storage& s = storage(src->buffer, loc);
    const int eb = s.elem_bytes, per = 4 / (eb > 0 ? eb : 1);
    if (s.scope != Scope::Shared || !s.arena || (eb != 1 && eb != 2 && eb != 4))
        fatal(loc, "ldmatrix from '" + s.name() + "', which is not a shared buffer of 8-, 16- or 32-bit elements");
    begin_statement();
    for (const auto& i : src->indices) prepare(i, act);
    std::vector<int64_t> off(static_cast<size_t>(threads_), -1);
    for (int32_t t : act) off[t] = offset_of(s, src->indices, loc, t, false);
    per_warp(act, [&](size_t k, size_t end) {
        const int first = act[k] / warp_ * warp_;
        auto lanes = warp_lanes<isa::LdmatrixLane>(first, threads_);
        for (size_t a = k; a < end; ++a) {
            int l = act[a] - first;
            lanes[l].executes = true;
            // An address outside the buffer (reported by offset_of) reads outside the view.
            lanes[l].addr = off[act[a]] < 0 ? uint32_t(-1) - 64 : static_cast<uint32_t>(s.base + off[act[a]] * eb);
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
            for (int e = 0; e < 16 / eb && o + e < s.size; ++e) shared_read(s, o + e, first + l, loc, op);
            accesses_.push_back({op, loc, true, false, first + l, s.base + o * eb, 16, l / 8});
        }
        for (size_t a = k; a < end; ++a) {
            int t = act[a], l = t - first;
            // Register q's bytes, low to high: `per` elements, the first in the low bits.
            for (int q = 0; q < num; ++q) {
                uint8_t b[4];
                for (int i = 0; i < 4; ++i) b[i] = static_cast<uint8_t>(r.r[l][q] >> (8 * i));
                for (int h = 0; h < per; ++h) set_register(op->dst.at(per * q + h), t, decode(b + h * eb, s.dtype), loc);
            }
        }
    });
    flush();
}

// mma.sync of any form ir::is_mma_form admits: each lane's elements packed into the
// b32 registers of the ISA's fragments (tf32 operands through cvt.rna.tf32.f32 first, as
// the instruction's IR form says), the warp's registers run through the model of the
// form, and D's registers unpacked into the destination elements.
void Executor::exec_mma(const MachineOpNode* op, const Active& act) {
    SourceLoc loc = at(op->loc);
    const int64_t k = op->imm.size() == 3 ? op->imm[2] : 0, na = k / 2, nb = k / 4;
    if (op->src.size() != static_cast<size_t>(na + nb + 4) || op->dst.size() != 4 ||
        !is_mma_form(k, op->src[0]->type, op->src[static_cast<size_t>(na)]->type,
                     op->src[static_cast<size_t>(na + nb)]->type))
        fatal(loc, "mma form not simulated");
    const DataType ab = op->src[0]->type, bt = op->src[static_cast<size_t>(na)]->type,
                   cd = op->src[static_cast<size_t>(na + nb)]->type;
    const bool f8 = ab.kind == TypeKind::Float8E4M3 || ab.kind == TypeKind::Float8E5M2;
    const bool tf32 = k == 8;
    // Elements [first, first + count) of type t into b32 registers, 32 / bits apiece.
    auto pack = [&](int t, size_t first, size_t count, DataType et, uint32_t* out) {
        const int eb = et.bits / 8, per = 4 / eb;
        for (size_t i = 0; i < count; ++i) {
            Value v = eval(op->src[first + i], t);
            if (tf32 && first < static_cast<size_t>(na + nb)) {
                out[i] = isa::ptx_cvt_rna_tf32_f32(static_cast<float>(v.f));
                continue;
            }
            uint8_t b[4] = {0, 0, 0, 0};
            encode(b, v, et);
            if (i % per == 0) out[i / per] = 0;
            for (int j = 0; j < eb; ++j) out[i / per] |= uint32_t(b[j]) << (8 * (eb * (i % per) + j));
        }
    };
    begin_statement();
    for (const auto& e : op->src) prepare(e, act);
    std::vector<isa::MmaLane> regs(static_cast<size_t>(threads_));
    for (int32_t t : act) {
        auto& r = regs[t];
        pack(t, 0, static_cast<size_t>(na), ab, r.a.data());
        pack(t, static_cast<size_t>(na), static_cast<size_t>(nb), bt, r.b.data());
        pack(t, static_cast<size_t>(na + nb), 4, cd, r.c.data());
    }
    flush();
    per_warp(act, [&](size_t k0, size_t end) {
        const int first = act[k0] / warp_ * warp_;
        auto lanes = warp_lanes<isa::MmaLane>(first, threads_);
        for (size_t a = k0; a < end; ++a) {
            int l = act[a] - first;
            lanes[l] = regs[act[a]];
            lanes[l].executes = true;
            lanes[l].exited = false;
        }
        isa::MmaResult res = f8 ? isa::ptx_mma_sync_f32_f8(lanes, ab.kind == TypeKind::Float8E5M2,
                                                           bt.kind == TypeKind::Float8E5M2)
                             : k == 32  ? isa::ptx_mma_sync_s32_s8(lanes, ab.is_uint(), ab.is_uint())
                             : tf32   ? isa::ptx_mma_sync_f32(isa::MmaShape::M16N8K8, isa::MmaAbType::Tf32, lanes)
                             : cd != DataType::f32() ? isa::ptx_mma_sync_f16(lanes)
                             : isa::ptx_mma_sync_f32(isa::MmaShape::M16N8K16,
                                                     ab.kind == TypeKind::BFloat ? isa::MmaAbType::Bf16 : isa::MmaAbType::F16,
                                                     lanes);
        for (const auto& is : res.issues) {
            if (is.problem == isa::MmaProblem::Int32Overflow) {
                issue(IssueKind::WarpCollective, loc, act[k0], [&] {
                    return "mma.sync s32 result element (" + std::to_string(is.lane / 8) + ", " +
                           std::to_string(is.lane % 8) + ") overflows; the PTX ISA does not define it without "
                           ".satfinite";
                });
                continue;
            }
            issue(IssueKind::WarpCollective, loc, act[k0], [&] {
                return "mma.sync not executed by every lane of the warp (lane " + std::to_string(is.lane) +
                       " does not): the PTX ISA leaves the result undefined";
            });
        }
        // D element i: register i (32-bit C) or half i % 2 of register i / 2 (f16).
        const int eb = cd.bits / 8, per = 4 / eb;
        for (size_t a = k0; a < end; ++a) {
            int t = act[a], l = t - first;
            for (int i = 0; i < 4; ++i) {
                uint8_t b[4];
                for (int j = 0; j < eb; ++j) b[j] = static_cast<uint8_t>(res.d[l][i / per] >> (8 * (eb * (i % per) + j)));
                set_register(op->dst[i], t, decode(b, cd), loc);
            }
        }
    });
}

bool Executor::proxy_visible(uint32_t addr, int lo, int hi) const {
    const int32_t w = arena_.proxy_writer[addr];
    if (w < 0) return true;
    const auto k = static_cast<size_t>(w);
    const uint32_t at_store = arena_.proxy_fence[addr];
    if (w >= lo && w < hi) return fences_[k] != at_store;
    const uint32_t ordered = fence_epoch_[k] == epoch_ ? fences_before_epoch_[k] : fences_[k];
    return ordered != at_store;
}

Executor::WgmmaGroups& Executor::wgmma_group_of(int t) {
    size_t g = static_cast<size_t>(t / 128);
    if (wgmma_groups_.size() <= g) wgmma_groups_.resize(g + 1);
    return wgmma_groups_[g];
}

void Executor::complete_wgmma_groups(int t, size_t keep) {
    auto& g = wgmma_group_of(t);
    while (g.committed.size() > keep) {
        for (uint32_t b : g.committed.front()) --arena_.wgmma_reading[b];
        g.committed.erase(g.committed.begin());
        for (auto [s, slot] : g.committed_regs.front()) --s->wgmma_pending[static_cast<size_t>(slot)];
        g.committed_regs.erase(g.committed_regs.begin());
    }
}

void Executor::check_wgmma_register(const Storage& s, int64_t slot, int64_t off, int t, SourceLoc loc, bool write) {
    if (in_wgmma_ || !s.wgmma_pending[static_cast<size_t>(slot)]) return;
    issue(IssueKind::AsyncRead, loc, t, [&] {
        return std::string(write ? "write of" : "read of") + " register '" + s.name() + "'[" + std::to_string(off) +
               "] while the wgmma that writes it is in flight (no wgmma.wait_group of its warpgroup completed it)";
    });
}

void Executor::exec_wgmma(const MachineOpNode* op, const Active& act) {
    SourceLoc loc = at(op->loc);
    const int n = static_cast<int>(op->imm.at(0));
    const bool trans_a = op->imm.at(1) != 0, trans_b = op->imm.at(2) != 0;
    // The register form (A's 8 elements a thread, PTX ISA Figure 148) or the descriptor
    // form (A's shared element).
    const size_t na = ir::wgmma_a_operands(*op);
    const bool a_regs = na == 8;
    auto* la = a_regs ? nullptr : static_cast<const LoadNode*>(op->src.at(0).get());
    auto* lb = static_cast<const LoadNode*>(op->src.at(na).get());
    Storage* sa_p = a_regs ? nullptr : &storage(la->buffer, loc);
    Storage& sb = storage(lb->buffer, loc);
    auto operand_type = [&](const Storage& s, DataType t) {
        if (s.scope != Scope::Shared || !s.arena || (s.elem_bytes != 2 && s.elem_bytes != 1))
            fatal(loc, "wgmma operand '" + s.name() + "', which is not a 16- or 8-bit shared buffer");
        switch (t.kind) {
        case TypeKind::BFloat: return isa::WgmmaAbType::Bf16;
        case TypeKind::Float8E4M3: return isa::WgmmaAbType::E4m3;
        case TypeKind::Float8E5M2: return isa::WgmmaAbType::E5m2;
        default: return isa::WgmmaAbType::F16;
        }
    };
    auto register_type = [&](DataType t) {
        if (t.kind == TypeKind::BFloat) return isa::WgmmaAbType::Bf16;
        if (t.kind == TypeKind::Float && t.bits == 16) return isa::WgmmaAbType::F16;
        fatal(loc, "wgmma with A in registers of type " + t.str() + ": the register form modelled takes f16 or bf16");
    };
    const isa::WgmmaAbType type_a = a_regs ? register_type(op->src[0]->type) : operand_type(*sa_p, op->src[0]->type),
                           type_b = operand_type(sb, op->src[na]->type);
    const int eb = isa::wgmma_ab_bytes(type_a), K = isa::wgmma_k(type_a);
    begin_statement();
    in_wgmma_ = true;  // wgmma accumulating into registers a wgmma in flight writes: allowed
    for (const auto& e : op->src) prepare(e, act);
    std::vector<int64_t> off_a(static_cast<size_t>(threads_), a_regs ? 0 : -1), off_b(static_cast<size_t>(threads_), -1);
    std::vector<std::vector<float>> c(static_cast<size_t>(threads_)), a_vals(static_cast<size_t>(threads_));
    for (int32_t t : act) {
        if (!a_regs) off_a[t] = offset_of(*sa_p, la->indices, loc, t, false);
        else
            for (size_t i = 0; i < 8; ++i) a_vals[t].push_back(static_cast<float>(eval(op->src[i], t).f));
        off_b[t] = offset_of(sb, lb->indices, loc, t, false);
        for (int i = 0; i < n / 2; ++i) c[t].push_back(static_cast<float>(eval(op->src[na + 1 + i], t).f));
    }
    in_wgmma_ = false;
    flush();
    // Warpgroups: 128 consecutive threads.
    for (size_t k = 0; k < act.size();) {
        const int first = act[k] / 128 * 128;
        size_t end = k;
        while (end < act.size() && act[end] / 128 == act[k] / 128) ++end;
        std::array<bool, 128> executes{};
        std::vector<std::vector<float>> cs(128, std::vector<float>(static_cast<size_t>(n / 2), 0.0f)),
            as(128, std::vector<float>(8, 0.0f));
        for (size_t a = k; a < end; ++a) {
            executes[static_cast<size_t>(act[a] - first)] = true;
            cs[static_cast<size_t>(act[a] - first)] = c[act[a]];
            if (a_regs) as[static_cast<size_t>(act[a] - first)] = a_vals[act[a]];
        }
        const int lead = act[k];
        if (off_a[lead] < 0 || off_b[lead] < 0) {
            k = end;
            continue;  // reported by offset_of
        }
        auto descriptor = [&](const Storage& s, int64_t off, size_t imm0) {
            isa::WgmmaDescriptor d;
            d.start = static_cast<uint32_t>(s.base + off * eb);
            d.lbo = static_cast<uint32_t>(op->imm.at(imm0));
            d.sbo = static_cast<uint32_t>(op->imm.at(imm0 + 1));
            d.swizzle = static_cast<isa::WgmmaSwizzle>(op->imm.at(imm0 + 2) & 3);
            return d;
        };
        isa::WgmmaDescriptor da = a_regs ? isa::WgmmaDescriptor{} : descriptor(*sa_p, off_a[lead], 3),
                             db = descriptor(sb, off_b[lead], 6);
        for (size_t a = k; a < end; ++a)
            if (off_a[act[a]] != off_a[lead] || off_b[act[a]] != off_b[lead])
                issue(IssueKind::WarpCollective, loc, act[a], [&] {
                    return "wgmma operands that differ between the threads of a warpgroup (thread " +
                           std::to_string(act[a]) + "): the descriptors are the warpgroup's";
                });
        isa::WgmmaResult r = a_regs ? isa::ptx_wgmma_rs_f32(n, type_a, as, isa::encode_wgmma_descriptor(db), true,
                                                            trans_b, arena_.bytes, cs, executes)
                                    : isa::ptx_wgmma_f32(n, type_a, type_b, isa::encode_wgmma_descriptor(da),
                                                         isa::encode_wgmma_descriptor(db), true, trans_a, trans_b,
                                                         arena_.bytes, cs, executes);
        for (const auto& is : r.issues)
            issue(is.problem == isa::WgmmaProblem::ThreadNotExecuting ? IssueKind::WarpCollective
                                                                        : IssueKind::MatrixAddress,
                  loc, lead, [&] {
                      switch (is.problem) {
                      case isa::WgmmaProblem::ThreadNotExecuting:
                          return "wgmma not executed by every thread of the warpgroup (thread " +
                                 std::to_string(first + is.thread) + " does not): the PTX ISA leaves it undefined";
                      case isa::WgmmaProblem::OutOfBounds: return std::string("wgmma operand outside shared memory");
                      case isa::WgmmaProblem::BaseOffsetNotModelled:
                          return std::string("wgmma descriptor with a base offset (not modelled)");
                      case isa::WgmmaProblem::BadN: return "wgmma with N = " + std::to_string(n);
                      case isa::WgmmaProblem::TransposedEightBit:
                          return std::string("wgmma with a transposed (MN-major) 8-bit operand, which the "
                                             "instruction does not take");
                      case isa::WgmmaProblem::ARegisterCount:
                          return "wgmma with A in registers: thread " + std::to_string(first + is.thread) +
                                 " does not give 8 elements (four .f16x2 registers)";
                      case isa::WgmmaProblem::ARegisterType:
                          return std::string("wgmma with A in registers of an 8-bit type (not modelled)");
                      }
                      return std::string("wgmma");
                  });
        // The operands' bytes are read by the warpgroup (the shadow sees them as the
        // reads of its first thread).
        auto& inflight = wgmma_group_of(lead).open;
        auto mark = [&](Storage& s, const isa::WgmmaDescriptor& d, bool mn_major, int extent) {
            for (int mn = 0; mn < extent; ++mn)
                for (int kk = 0; kk < K; ++kk) {
                    uint32_t addr = isa::wgmma_operand_address(d, mn_major, eb, mn, kk);
                    int64_t o = (static_cast<int64_t>(addr) - s.base) / eb;
                    if (o < 0 || o >= s.size) continue;
                    shared_read(s, o, lead, loc, op);
                    for (uint32_t b = addr; b < addr + uint32_t(eb); ++b) {
                        ++arena_.wgmma_reading[b];
                        inflight.push_back(b);
                        // PTX ISA, wgmma.mma_async (its shared-memory operands are read through
                        // the async proxy) and the memory consistency model's proxies with
                        // membar / fence.proxy.async: a generic-proxy store becomes visible to
                        // the async proxy only after a proxy fence.
                        int32_t w = arena_.proxy_writer[b];
                        if (w >= 0 && !proxy_visible(b, lead, lead + 128)) {
                            issue(IssueKind::ProxyFence, loc, lead, [&] {
                                return "wgmma reads '" + s.name() + "' element " + std::to_string(o) +
                                       ", which thread " + std::to_string(w) +
                                       " stored (generic proxy) with no fence.proxy.async since that a barrier "
                                       "orders before this wgmma: the async proxy may not see the store";
                            });
                            arena_.proxy_writer[b] = -1;  // once per store
                        }
                    }
                }
        };
        if (!a_regs) mark(*sa_p, da, trans_a, 64);
        mark(sb, db, trans_b, n);
        // In flight until the wait that completes its group: the accumulators, and A's
        // registers in the register form (PTX ISA: accessing either before the
        // wgmma.wait_group is undefined).
        auto pending = [&](const Expr& reg, int t) {
            auto* l = static_cast<const LoadNode*>(reg.get());
            Storage& s = storage(l->buffer, loc);
            int64_t off = offset_of(s, l->indices, loc, t, true);
            if (off < 0) return;
            if (s.wgmma_pending.empty()) s.wgmma_pending.assign(s.init.size() ? s.init.size() : size_t(threads_ * s.size), 0);
            int64_t slot = t * s.size + off;
            ++s.wgmma_pending[static_cast<size_t>(slot)];
            wgmma_group_of(lead).open_regs.push_back({&s, slot});
        };
        for (size_t a = k; a < end && a_regs; ++a)
            for (size_t i = 0; i < 8; ++i)
                if (expr_as<LoadNode>(op->src[i])) pending(op->src[i], act[a]);
        for (size_t a = k; a < end; ++a) {
            int t = act[a];
            for (int i = 0; i < n / 2; ++i) {
                const Expr& dst = op->dst[static_cast<size_t>(i)];
                set_register(dst, t, Value::of_float(r.d[static_cast<size_t>(t - first)][static_cast<size_t>(i)]), loc);
                pending(dst, t);
            }
        }
        k = end;
    }
    flush();
}

isa::CpAsyncThread& Executor::async_thread(int t) {
    if (async_.empty()) async_.resize(static_cast<size_t>(threads_));
    auto& m = async_[static_cast<size_t>(t)];
    if (!m) {
        m = std::make_unique<isa::CpAsyncThread>(arena_.bytes);
        // A copy lands: its bytes become the thread's write (the shadow's races and
        // initialisation see it now, not at the issue), and stop being in flight.
        m->on_complete = [this, t](uint32_t dst, uint32_t size) {
            for (uint32_t b = 0; b < size; ++b) --arena_.pending[dst + b];
            auto& copies = async_copies_[static_cast<size_t>(t)];
            auto it = copies.find(dst);
            if (it == copies.end()) return;
            const AsyncCopy& c = it->second;
            Storage& s = storage(c.buffer, c.loc);
            for (int64_t e = 0; e < c.elems; ++e) shared_write(s, c.off + e, t, c.loc, c.node);
            copies.erase(it);
        };
    }
    return *m;
}

void Executor::report_async(const isa::CpAsyncThread& m, size_t& seen, int t, SourceLoc loc) {
    for (; seen < m.issues().size(); ++seen) {
        const isa::CpAsyncIssue& is = m.issues()[seen];
        issue(IssueKind::AsyncCopy, loc, t, [&] {
            const char* what = "";
            switch (is.problem) {
            case isa::CpAsyncProblem::BadCpSize: what = "cp.async of a size other than 4, 8 or 16 bytes (16 for .cg)"; break;
            case isa::CpAsyncProblem::SrcSizeTooLarge: what = "cp.async with a source size above its copy size"; break;
            case isa::CpAsyncProblem::DstMisaligned: what = "cp.async destination not aligned to its size"; break;
            case isa::CpAsyncProblem::DstOutOfBounds: what = "cp.async destination outside shared memory"; break;
            case isa::CpAsyncProblem::SameDstInGroup: what = "two cp.async copies of one group to the same bytes"; break;
            case isa::CpAsyncProblem::ReadBeforeWait: what = "read of a cp.async destination before its wait"; break;
            case isa::CpAsyncProblem::WriteBeforeWait: what = "write of a cp.async destination before its wait"; break;
            case isa::CpAsyncProblem::BadWaitN: what = "cp.async.wait_group with a negative count"; break;
            }
            return std::string(what) + " (shared byte " + std::to_string(is.addr) + ", thread " + std::to_string(t) + ")";
        });
    }
}

// cp.async: the source bytes are read at the issue (global memory, counted in sectors),
// the destination's in flight until the wait that completes its group.
void Executor::exec_cp_async(const MachineOpNode* op, const Active& act) {
    SourceLoc loc = at(op->loc);
    const int bytes = static_cast<int>(op->imm.at(0));
    auto* dl = static_cast<const LoadNode*>(op->dst.at(0).get());
    auto* sl = static_cast<const LoadNode*>(op->src.at(0).get());
    Storage& d = storage(dl->buffer, loc);
    Storage& g = storage(sl->buffer, loc);
    if (d.scope != Scope::Shared || !d.arena || g.scope != Scope::Global || d.dtype != g.dtype)
        fatal(loc, "cp.async from '" + g.name() + "' into '" + d.name() + "': global to shared of one type only");
    begin_statement();
    for (const auto& i : dl->indices) prepare(i, act);
    for (const auto& i : sl->indices) prepare(i, act);
    prepare(op->src.at(1), act);
    const int eb = d.elem_bytes;
    for (int32_t t : act) {
        int64_t doff = offset_of(d, dl->indices, loc, t, true);
        int64_t src_size = eval_int(op->src.at(1), t);
        if (doff < 0) continue;
        std::vector<uint8_t> src;
        if (src_size > 0) {
            int64_t goff = offset_of(g, sl->indices, loc, t, false);
            if (goff < 0) continue;
            int64_t n = (std::min<int64_t>(src_size, bytes) + eb - 1) / eb;
            if (goff + n > g.size) {
                issue(IssueKind::OutOfBounds, loc, t, [&] {
                    return "cp.async reads past the end of '" + g.name() + "' (" + std::to_string(src_size) +
                           " bytes from element " + std::to_string(goff) + ")";
                });
                continue;
            }
            src.resize(static_cast<size_t>(n * eb));
            for (int64_t e = 0; e < n; ++e) encode(src.data() + e * eb, g.get(goff + e), g.dtype);
            accesses_.push_back({sl, loc, false, false, t, g.base + goff * eb, static_cast<int>(n * eb)});
        }
        uint32_t dst = static_cast<uint32_t>(d.base + doff * eb);
        auto& m = async_thread(t);
        size_t before = m.uncommitted_copies();
        m.cp_async(dst, src, bytes, static_cast<int>(std::min<int64_t>(src_size, 1 << 30)), false, bytes == 16);
        report_async(m, async_seen_[t], t, loc);
        if (static_cast<size_t>(m.uncommitted_copies()) == before) continue;  // refused
        // The copy may write its bytes at any moment until its wait: an access of them by
        // another thread since the last barrier races with it now (and until it lands,
        // any access of them is one of bytes in flight).
        int64_t elems = std::min<int64_t>(bytes / eb, d.size - doff);
        for (int64_t e = 0; e < elems; ++e) shared_write(d, doff + e, t, loc, op);
        for (int b = 0; b < bytes; ++b) ++arena_.pending[dst + b];
        async_copies_[static_cast<size_t>(t)][dst] = AsyncCopy{dl->buffer, doff, elems, loc, op};
        accesses_.push_back({op, loc, true, true, t, dst, bytes, (t % warp_) * bytes / 128});
    }
    flush();
}

// vector_copy: each thread's `bytes` of shared memory read as one access (through the
// race, initialisation and cp.async shadows like any load) and stored to global memory
// as one; both addresses must be aligned to the size (PTX ISA, "Addresses as Operands":
// an address must be naturally aligned to a multiple of the access size, a vector's
// being its whole size; otherwise the behaviour is undefined: reported and not done). The shared read is served in passes of 128 bytes
// per warp, as cp.async's writes are.
// A vector copy between global and shared memory, either way: every lane's load first,
// then every lane's store (the hardware's load and store are two instructions; a warp's
// lanes all load before any stores). Both addresses must be aligned to the width.
void Executor::exec_vector_copy(const MachineOpNode* op, const Active& act) {
    SourceLoc loc = at(op->loc);
    const int bytes = static_cast<int>(op->imm.at(0));
    auto* dl = static_cast<const LoadNode*>(op->dst.at(0).get());
    auto* sl = static_cast<const LoadNode*>(op->src.at(0).get());
    Storage& d = storage(dl->buffer, loc);
    Storage& s = storage(sl->buffer, loc);
    // Global <-> shared either way, or one half of it through a thread's registers
    // (global -> registers, registers -> shared: software-pipeline's register-staged AMD
    // fills, a global_load_dwordx4 into four VGPRs and a ds_write_b128 from them).
    const bool to_global = d.scope == Scope::Global && s.scope == Scope::Shared && s.arena;
    const bool to_shared = d.scope == Scope::Shared && d.arena && (s.scope == Scope::Global || s.scope == Scope::Register);
    const bool to_register = d.scope == Scope::Register && s.scope == Scope::Global;
    if ((!to_global && !to_shared && !to_register) || s.dtype != d.dtype || s.elem_bytes <= 0 || bytes % s.elem_bytes != 0)
        fatal(loc, "vector_copy from '" + s.name() + "' into '" + d.name() +
                       "': between global and shared memory (or through registers), of one type only");
    begin_statement();
    for (const auto& i : dl->indices) prepare(i, act);
    for (const auto& i : sl->indices) prepare(i, act);
    const int eb = s.elem_bytes, n = bytes / eb;
    // The shared side's pass over the warp: NVIDIA serves 128 bytes of the request per
    // pass; AMD's lane groups are the bank model's own (lds_banks.h).
    auto phase = [&](int32_t t) { return lds_lane_groups_ ? 0 : (t % warp_) * bytes / 128; };
    // A register run is a thread's own elements (no address: no alignment to check).
    auto slot = [&](const Storage& st, int32_t t, int64_t off) {
        return st.scope == Scope::Register ? t * st.size + off : off;
    };
    struct Pending {
        int32_t t;
        int64_t doff;
        std::vector<Value> v;
    };
    std::vector<Pending> pending;
    for (int32_t t : act) {
        int64_t soff = offset_of(s, sl->indices, loc, t, false);
        int64_t doff = offset_of(d, dl->indices, loc, t, true);
        if (soff < 0 || doff < 0) continue;
        int64_t saddr = s.base + soff * eb, daddr = d.base + doff * eb;
        if ((s.scope != Scope::Register && saddr % bytes != 0) || (d.scope != Scope::Register && daddr % bytes != 0)) {
            issue(IssueKind::Misaligned, loc, t, [&] {
                return "vector_copy of " + std::to_string(bytes) + " bytes from '" + s.name() + "'[" +
                       std::to_string(soff) + "] to '" + d.name() + "'[" + std::to_string(doff) +
                       "]: an address not aligned to " + std::to_string(bytes) + " bytes";
            });
            continue;
        }
        // The global side's elements must lie in one run of its unit-stride dimension:
        // past the end of a row are another row's elements, or none of the tensor's.
        const bool global_dst = d.scope == Scope::Global;
        const Storage* g = global_dst ? &d : s.scope == Scope::Global ? &s : nullptr;
        const auto& gi = global_dst ? dl->indices : sl->indices;
        int unit = -1;
        for (size_t k = 0; g && k < gi.size(); ++k)
            if (g->strides[k] == 1 && g->shape[k] > 1) unit = static_cast<int>(k);
        const bool row_end =
            g && unit >= 0 && eval_int(gi[static_cast<size_t>(unit)], t) + n > g->shape[static_cast<size_t>(unit)];
        if (soff + n > s.size || doff + n > d.size || row_end) {
            issue(IssueKind::OutOfBounds, loc, t, [&] {
                return "vector_copy of " + std::to_string(n) + " elements past the end of " +
                       (row_end ? "a row of '" + g->name() + "'" : "'" + (soff + n > s.size ? s.name() : d.name()) + "'");
            });
            continue;
        }
        Pending p{t, doff, {}};
        for (int e = 0; e < n; ++e) {
            const int64_t from = slot(s, t, soff + e);
            if (s.scope == Scope::Shared) shared_read(s, soff + e, t, loc, op);
            if (s.scope == Scope::Register && !s.init.empty() && !s.init[static_cast<size_t>(from)] &&
                opt_.check_uninitialized)
                issue(IssueKind::Uninitialized, loc, t, [&] {
                    return "vector_copy from uninitialised register element '" + s.name() + "'[" +
                           std::to_string(soff + e) + "] (never written by thread " + std::to_string(t) + ")";
                });
            p.v.push_back(s.get(from));
        }
        if (to_global)
            accesses_.push_back({op, loc, true, false, t, saddr, bytes, phase(t)});
        else if (s.scope == Scope::Global)
            accesses_.push_back({sl, loc, false, false, t, saddr, bytes});
        pending.push_back(std::move(p));
    }
    for (auto& p : pending) {
        if (to_global && !d.writable) {
            issue(IssueKind::InputWrite, loc, p.t, [&] { return "store into the input tensor '" + d.name() + "'"; });
            continue;
        }
        for (int e = 0; e < n; ++e) {
            const int64_t to = slot(d, p.t, p.doff + e);
            if (to_shared) shared_write(d, p.doff + e, p.t, loc, op);
            d.set(to, p.v[static_cast<size_t>(e)]);
            if (!d.init.empty()) d.init[static_cast<size_t>(to)] = 1;
            if (d.written) (*d.written)[static_cast<size_t>(p.doff + e)] = 1;
        }
        if (to_global)
            accesses_.push_back({dl, loc, false, true, p.t, d.base + p.doff * eb, bytes});
        else if (to_shared)
            accesses_.push_back({op, loc, true, true, p.t, d.base + p.doff * eb, bytes, phase(p.t)});
    }
    flush();
}

// MFMA / WMMA: each lane's A and B elements packed two to a 32-bit GPR (element e in
// half e % 2 of GPR e / 2; i8 and fp8: four, byte e % 4 of GPR e / 4), C's f32 (i32) elements one per GPR
// (RDNA3's f16-accumulator WMMA: an f16 in the low half of each), the wave's GPRs run through the
// model of the instruction, D's GPRs written to the destination elements. fp8 operands
// are the language's OCP bytes; the AMDGPU lowering rewrites each lane's 8 bytes to the
// instruction's FNUZ ones (scalar/fp8_fnuz.h), and so does this, with the same formula,
// before the model reads them as FNUZ (each product then a quarter of the true one:
// ops/gemm_mfma.cpp scales the accumulator around the instructions).
void Executor::exec_amd_matrix(const MachineOpNode* op, const Active& act) {
    // The FNUZ format gfx942's instruction reads for an OCP operand type.
    auto fnuz = [](DataType t) {
        return t.kind == TypeKind::Float8E5M2 ? isa::AmdMatrixAb::Bf8 : isa::AmdMatrixAb::Fp8;
    };
    SourceLoc loc = at(op->loc);
    const bool wmma = op->op == MachineOp::Wmma;
    const DataType ab = op->src.at(0)->type;
    const bool i8 = ab.kind == TypeKind::Int && ab.bits == 8;
    const bool f8 = ab.kind == TypeKind::Float8E4M3 || ab.kind == TypeKind::Float8E5M2;
    std::optional<isa::AmdMatrixShape> i8_shape =
        i8 ? isa::amd_matrix_i8_shape(static_cast<int>(op->imm.at(0)), static_cast<int>(op->imm.at(2)))
        : f8 && !wmma ? isa::amd_matrix_f8_shape(static_cast<int>(op->imm.at(0)), static_cast<int>(op->imm.at(2)))
                      : std::nullopt;
    if (f8 && !i8_shape) fatal(loc, std::string(machine_op_name(op->op)) + " of fp8 in this shape is not simulated");
    if (i8 && wmma) i8_shape = op->imm == std::vector<int64_t>{16, 16, 16} ? std::optional(isa::AmdMatrixShape::Wmma16x16x16I8)
                                                                          : std::nullopt;
    if (i8 && !i8_shape) fatal(loc, std::string(machine_op_name(op->op)) + " of i8 in this shape is not simulated");
    const isa::AmdMatrixShape shape = i8_shape              ? *i8_shape
                                      : wmma                ? isa::AmdMatrixShape::Wmma16x16x16
                                      : op->imm.at(0) == 32 ? isa::AmdMatrixShape::Mfma32x32x8
                                                            : isa::AmdMatrixShape::Mfma16x16x16;
    const isa::AmdMatrixInfo info = isa::amd_matrix_info(shape);
    // Elements per GPR: two 16-bit halves, or four i8 / fp8 bytes.
    const size_t per_gpr = i8 || f8 ? 4 : 2, bits = 32 / per_gpr;
    const size_t ab_elems = per_gpr * static_cast<size_t>(info.a_regs), cd = static_cast<size_t>(info.c_regs);
    // v_wmma_f16_16x16x16_f16: C and D f16, each in the low half of its GPR (tilec's
    // lowering sets OPSEL[2] = 0, codegen/gpu_lowering_amd_matrix.cpp).
    const DataType cd_type = op->src.at(ab_elems * 2)->type;
    const bool acc16 = cd_type.kind == TypeKind::Float && cd_type.bits == 16;
    if (acc16 && (!wmma || ab.kind != TypeKind::Float || ab.bits != 16))
        fatal(loc, std::string(machine_op_name(op->op)) + " with an f16 accumulator is simulated for f16 WMMA only");
    if (info.wave != warp_) fatal(loc, std::string(machine_op_name(op->op)) + " on a wave of " + std::to_string(warp_));
    begin_statement();
    for (const auto& e : op->src) prepare(e, act);
    std::vector<isa::AmdMatrixLane> regs(static_cast<size_t>(threads_));
    for (int32_t t : act) {
        auto& r = regs[static_cast<size_t>(t)];
        for (size_t e = 0; e < 2 * ab_elems; ++e) {
            uint8_t b[2] = {0, 0};
            encode(b, eval(op->src[e], t), op->src[e]->type);  // fp8: A and B each its own format
            uint32_t part = per_gpr == 4 ? uint32_t(b[0]) : uint32_t(b[0]) | uint32_t(b[1]) << 8;
            auto& gprs = e < ab_elems ? r.a : r.b;
            size_t i = e % ab_elems;
            gprs[i / per_gpr] |= part << (bits * (i % per_gpr));
        }
        if (f8)
            for (auto* gprs : {&r.a, &r.b}) {
                const bool e5m2 = op->src[gprs == &r.a ? 0 : ab_elems]->type.kind == TypeKind::Float8E5M2;
                const uint64_t fnuz = scalar::fp8_ocp_to_fnuz(uint64_t((*gprs)[0]) | uint64_t((*gprs)[1]) << 32, e5m2);
                (*gprs)[0] = uint32_t(fnuz), (*gprs)[1] = uint32_t(fnuz >> 32);
            }
        for (size_t g = 0; g < cd; ++g) {
            Value c = eval(op->src[2 * ab_elems + g], t);
            if (acc16) {
                uint8_t h[2] = {0, 0};
                encode(h, c, op->src[2 * ab_elems + g]->type);
                r.c[g] = uint32_t(h[0]) | uint32_t(h[1]) << 8;  // OPSEL[2] = 0: the low half
            } else if (i8) {
                r.c[g] = static_cast<uint32_t>(c.i);
            } else {
                float f = static_cast<float>(c.f);
                std::memcpy(&r.c[g], &f, 4);
            }
        }
    }
    flush();
    per_warp(act, [&](size_t k0, size_t end) {
        const int first = act[k0] / warp_ * warp_;
        std::vector<isa::AmdMatrixLane> lanes(static_cast<size_t>(warp_));
        for (int l = 0; l < warp_; ++l) {
            lanes[static_cast<size_t>(l)].executes = false;
            lanes[static_cast<size_t>(l)].exited = first + l >= threads_;
        }
        for (size_t a = k0; a < end; ++a) lanes[static_cast<size_t>(act[a] - first)] = regs[static_cast<size_t>(act[a])];
        isa::AmdMatrixResult res =
            i8      ? isa::amd_matrix_i32(shape, lanes)
            : acc16 ? isa::amd_wmma_f16(lanes, false)
            : f8 ? isa::amd_matrix_f32(shape, fnuz(ab), fnuz(op->src.at(ab_elems)->type), lanes)
               : isa::amd_matrix_f32(shape, ab.kind == TypeKind::BFloat ? isa::AmdMatrixAb::Bf16 : isa::AmdMatrixAb::F16,
                                     lanes);
        for (const auto& is : res.issues)
            issue(IssueKind::WarpCollective, loc, act[k0], [&] {
                std::string what = std::string(machine_op_name(op->op)) + ": lane " + std::to_string(is.lane);
                if (is.problem == isa::AmdMatrixProblem::WmmaReplicaDiffers)
                    return what + " holds other A or B values than lane " + std::to_string(is.lane - 16) +
                           " (RDNA3 WMMA reads them from both)";
                return what + " does not execute it: the matrix is spread over every lane of the wave";
            });
        for (size_t a = k0; a < end; ++a) {
            int t = act[a], l = t - first;
            for (size_t g = 0; g < cd; ++g) {
                const uint32_t d = res.d[static_cast<size_t>(l)][g];
                if (acc16) {
                    const uint8_t h[2] = {uint8_t(d), uint8_t(d >> 8)};
                    set_register(op->dst[g], t, decode(h, cd_type), loc);
                    continue;
                }
                float f;
                std::memcpy(&f, &d, 4);
                set_register(op->dst[g], t, i8 ? Value::of_int(int32_t(d)) : Value::of_float(f), loc);
            }
        }
    });
}

}  // namespace tilec::sim::detail
