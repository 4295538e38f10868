// split_address_constants: after LLVM's O3, rewrites addresses base + f(thread) + C as
// (base + f'(thread)) + C, so that the constant becomes the instruction's immediate offset
// ([%r + 2048]) and one register serves every address that differs only by a constant;
// and computes 32-bit shared addresses in 32-bit arithmetic.
//
// Why: a thread's unrolled accesses to a tile (the rows of a fragment it copies to shared
// memory, the partial sums of a cross-warp reduction, the rows of a cp.async fill) have
// addresses that differ by constants, but the swizzle's XOR, the shifts, the clamp of a
// masked copy (c ? i : 0) and the 64 -> 32-bit truncation hide that from LLVM: LICM hoists
// each address out of the pipelined loop as a loop-invariant register of its own, and in
// MLA decode (a 64 x 512 f32 accumulator over 256 threads, 128 registers) ~70 such
// addresses made ptxas spill 156 bytes on sm_80. LLVM's SeparateConstOffsetFromGEP looks
// only through add / sub / disjoint or and extensions; this pass also looks through the
// swizzle: x ^ s and x | s keep x's constant bits above s's width, x & m drops them, and
// the bits a swizzle's (x >> k) & m reads depend only on x's low bits. The index
// arithmetic of a 32-bit shared address is 64-bit in the IR (the Tile IR's index type):
// only its low 32 bits matter, and ring and bitwise operations compute those from their
// operands' low 32 bits, so it is rebuilt in i32 (one register per value, not a pair:
// flash attention's sm_80 kernels went from 209-219 registers to 163-168).
//
// Which addresses: those computed outside a loop that uses them, and masked copies'
// clamped ones, are split; every other shared address is only narrowed (splitting them
// all made ptxas keep more registers live in some GEMMs). Each split address + constant
// is then placed next to its users (an inline-asm operand, which CodeGenPrepare does not
// sink). Every rewrite is exact in two's-complement arithmetic (the identities hold
// modulo 2^width for every value of the variables): no address changes
// (tests/unit/codegen/gpu_address_constants_test.cpp evaluates both forms).
//
// narrow_masked_fill_addresses, AMD's variant: only the LDS addresses of masked fills
// (an element stored from a phi or select of the loaded value and 0), narrowed where the
// store is. The driver optimises an AMD export with it only when the kernel spills without
// it (driver/pipeline.cpp), because narrowing moves LLVM's register allocation either way:
// every shared address narrowed took flash attention's D = 64 causal export on gfx1100 from
// 8 bytes of scratch to 0 but gemm_f16_tn from 223 to 241 VGPRs, and the masked fills
// alone took that export to 0 but gemm_f16 to 28 bytes of scratch.
#include <llvm/Analysis/LoopInfo.h>
#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/Dominators.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Operator.h>
#include <llvm/Support/KnownBits.h>
#include <llvm/Transforms/Utils/Local.h>

#include <map>
#include <utility>
#include <vector>

#include "codegen/gpu_lowering.h"

namespace tilec::codegen::gpu {
namespace {

constexpr int kMaxDepth = 16;  // deeper index expressions are left as they are

// value == var + constant (var null: the value is the constant).
struct Split {
    llvm::Value* var = nullptr;
    llvm::APInt constant;
};

class AddressSplitter {
public:
    AddressSplitter(llvm::IRBuilder<>& b, const llvm::DataLayout& dl) : b_(b), dl_(dl) {}

    // v's low ty bits (ty: v's type, or narrower: a 32-bit shared address needs only
    // those of a 64-bit index) as var + constant.
    Split split(llvm::Value* v, llvm::IntegerType* ty, int depth) {
        auto key = std::make_pair(v, ty);
        if (auto it = memo_.find(key); it != memo_.end()) return it->second;
        Split s = split_uncached(v, ty, depth);
        memo_[key] = s;
        return s;
    }

    llvm::Value* materialize(const Split& s, llvm::IntegerType* ty) {
        if (!s.var) return llvm::ConstantInt::get(ty, s.constant);
        if (s.constant.isZero()) return s.var;
        return b_.CreateAdd(s.var, llvm::ConstantInt::get(ty, s.constant));
    }

private:
    Split split_uncached(llvm::Value* v, llvm::IntegerType* ty, int depth) {
        const unsigned width = ty->getBitWidth();
        // Narrowing rebuilds the ring operations in ty even where no constant moves.
        const bool narrowing = width < v->getType()->getIntegerBitWidth();
        if (auto* c = llvm::dyn_cast<llvm::ConstantInt>(v)) return {nullptr, c->getValue().trunc(width)};
        auto* inst = llvm::dyn_cast<llvm::Instruction>(v);
        if (!inst || depth > kMaxDepth) return leaf(v, ty);
        auto constant_operand = [&](unsigned i) { return llvm::dyn_cast<llvm::ConstantInt>(inst->getOperand(i)); };
        switch (inst->getOpcode()) {
        case llvm::Instruction::Add:
        case llvm::Instruction::Sub: {
            Split a = split(inst->getOperand(0), ty, depth + 1), c = split(inst->getOperand(1), ty, depth + 1);
            const bool add = inst->getOpcode() == llvm::Instruction::Add;
            if (!narrowing && a.constant.isZero() && c.constant.isZero()) return leaf(v, ty);
            return {combine(a.var, c.var, add), add ? a.constant + c.constant : a.constant - c.constant};
        }
        case llvm::Instruction::Mul:
            for (unsigned i = 0; i < 2; ++i)
                if (auto* k = constant_operand(1 - i)) {
                    Split a = split(inst->getOperand(i), ty, depth + 1);
                    if (!narrowing && a.constant.isZero()) return leaf(v, ty);
                    llvm::APInt kk = k->getValue().trunc(width);
                    return {a.var ? b_.CreateMul(a.var, llvm::ConstantInt::get(ty, kk)) : nullptr, a.constant * kk};
                }
            return ring(inst, ty, depth, narrowing);
        case llvm::Instruction::Shl:
            if (auto* k = constant_operand(1); k && k->getValue().ult(width)) {
                Split a = split(inst->getOperand(0), ty, depth + 1);
                if (!narrowing && a.constant.isZero()) return leaf(v, ty);
                const unsigned amount = static_cast<unsigned>(k->getZExtValue());
                return {a.var ? b_.CreateShl(a.var, amount) : nullptr, a.constant.shl(amount)};
            }
            return leaf(v, ty);
        case llvm::Instruction::Trunc:
        case llvm::Instruction::ZExt:
        case llvm::Instruction::SExt:
            // The low bits of a truncation or an extension are its operand's.
            if (inst->getOperand(0)->getType()->getIntegerBitWidth() >= width)
                return split(inst->getOperand(0), ty, depth + 1);
            return leaf(v, ty);
        case llvm::Instruction::Or:
            if (llvm::cast<llvm::PossiblyDisjointInst>(inst)->isDisjoint()) {  // an add without carries
                Split a = split(inst->getOperand(0), ty, depth + 1), c = split(inst->getOperand(1), ty, depth + 1);
                if (!narrowing && a.constant.isZero() && c.constant.isZero()) return leaf(v, ty);
                return {combine(a.var, c.var, true), a.constant + c.constant};
            }
            [[fallthrough]];
        case llvm::Instruction::Xor:
        case llvm::Instruction::And:
            return bitwise(inst, ty, depth, narrowing);
        case llvm::Instruction::Select: {
            // c ? x + C : y == (c ? x : y - C) + C: a masked copy's clamped index (the
            // y arm, 0) still reaches the same address.
            auto* sel = llvm::cast<llvm::SelectInst>(inst);
            Split x = split(sel->getTrueValue(), ty, depth + 1);
            if (!narrowing && x.constant.isZero()) return leaf(v, ty);
            Split y = split(sel->getFalseValue(), ty, depth + 1);
            y.constant -= x.constant;
            return {b_.CreateSelect(sel->getCondition(), materialize({x.var, llvm::APInt(width, 0)}, ty),
                                    materialize(y, ty)),
                    x.constant};
        }
        default: return leaf(v, ty);
        }
    }

    Split leaf(llvm::Value* v, llvm::IntegerType* ty) {
        llvm::Value* low = v->getType() == ty ? v : b_.CreateTrunc(v, ty);
        return {low, llvm::APInt(ty->getBitWidth(), 0)};
    }

    // A ring or bitwise operation rebuilt in the narrower type (their low bits depend
    // only on the operands' low bits).
    Split ring(llvm::Instruction* inst, llvm::IntegerType* ty, int depth, bool narrowing) {
        if (!narrowing) return leaf(inst, ty);
        llvm::Value* x = materialize(split(inst->getOperand(0), ty, depth + 1), ty);
        llvm::Value* y = materialize(split(inst->getOperand(1), ty, depth + 1), ty);
        return {b_.CreateBinOp(static_cast<llvm::Instruction::BinaryOps>(inst->getOpcode()), x, y),
                llvm::APInt(ty->getBitWidth(), 0)};
    }

    llvm::Value* combine(llvm::Value* a, llvm::Value* c, bool add) {
        if (!c) return a;
        if (!a) return add ? c : b_.CreateNeg(c);
        return add ? b_.CreateAdd(a, c) : b_.CreateSub(a, c);
    }

    // A value congruent to v modulo 2^bits (equal in the low bits; the bits above are
    // arbitrary: a user must mask them), with the constants that cannot reach the low
    // bits dropped.
    llvm::Value* low_bits(llvm::Value* v, unsigned bits, int depth) {
        const unsigned width = v->getType()->getIntegerBitWidth();
        if (bits >= width) return v;
        if (auto* c = llvm::dyn_cast<llvm::ConstantInt>(v))
            return llvm::ConstantInt::get(v->getType(), c->getValue() & llvm::APInt::getLowBitsSet(width, bits));
        auto* inst = llvm::dyn_cast<llvm::BinaryOperator>(v);
        if (!inst || depth > kMaxDepth) return v;
        llvm::Value* x = inst->getOperand(0);
        llvm::Value* y = inst->getOperand(1);
        auto* k = llvm::dyn_cast<llvm::ConstantInt>(y);
        switch (inst->getOpcode()) {
        case llvm::Instruction::Add:
        case llvm::Instruction::Sub:
        case llvm::Instruction::Mul:
        case llvm::Instruction::Or:
        case llvm::Instruction::Xor:
        case llvm::Instruction::And: {
            // The low bits of these depend only on their operands' low bits.
            llvm::Value* lx = low_bits(x, bits, depth + 1);
            llvm::Value* ly = low_bits(y, bits, depth + 1);
            if (lx == x && ly == y) return v;
            auto* zero = llvm::dyn_cast<llvm::ConstantInt>(ly);
            const bool identity = zero && zero->isZero() &&
                                  (inst->getOpcode() == llvm::Instruction::Add || inst->getOpcode() == llvm::Instruction::Sub ||
                                   inst->getOpcode() == llvm::Instruction::Or || inst->getOpcode() == llvm::Instruction::Xor);
            if (identity) return lx;
            return b_.CreateBinOp(inst->getOpcode(), lx, ly);
        }
        case llvm::Instruction::Shl:
            if (k && k->getValue().ult(bits)) {
                llvm::Value* lx = low_bits(x, bits - static_cast<unsigned>(k->getZExtValue()), depth + 1);
                return lx == x ? v : b_.CreateShl(lx, k);
            }
            return v;
        case llvm::Instruction::LShr:
        case llvm::Instruction::AShr:
            // Bits [0, bits) of x >> k are x's bits [k, k + bits) while k + bits stays
            // below the width (the arithmetic shift's sign copies come from above it).
            if (k && k->getValue().ult(width - bits)) {
                llvm::Value* lx = low_bits(x, bits + static_cast<unsigned>(k->getZExtValue()), depth + 1);
                return lx == x ? v : b_.CreateBinOp(inst->getOpcode(), lx, k);
            }
            return v;
        default: return v;
        }
    }

    // x op s where s < 2^bits (s's known bits): x's constant above bit `bits` passes
    // through unchanged for |, ^ (they only touch bits below it) and becomes 0 for &.
    Split bitwise(llvm::Instruction* inst, llvm::IntegerType* ty, int depth, bool narrowing) {
        const unsigned width = ty->getBitWidth();
        const unsigned full = inst->getType()->getIntegerBitWidth();
        for (unsigned i = 0; i < 2; ++i) {
            llvm::Value* x = inst->getOperand(i);
            llvm::Value* s = inst->getOperand(1 - i);
            llvm::KnownBits known = llvm::computeKnownBits(s, dl_);
            const unsigned bits = full - known.countMinLeadingZeros();
            if (bits >= width) continue;
            // s itself, not just a value congruent to it: its bits above `bits` are zero
            // and mask x's (low_bits leaves those arbitrary).
            llvm::Value* exact_s = materialize(split(s, ty, depth + 1), ty);
            if (inst->getOpcode() == llvm::Instruction::And) {
                llvm::Value* lx = low_bits(x, bits, depth + 1);
                if (!narrowing) {
                    if (lx == x) return leaf(inst, ty);
                    return {b_.CreateAnd(lx, exact_s), llvm::APInt(width, 0)};
                }
                return {b_.CreateAnd(materialize(split(lx, ty, depth + 1), ty), exact_s), llvm::APInt(width, 0)};
            }
            Split sx = split(x, ty, depth + 1);
            llvm::APInt high = sx.constant & ~llvm::APInt::getLowBitsSet(width, bits);
            if (high.isZero()) continue;
            Split low{sx.var, sx.constant - high};
            llvm::Value* rest = b_.CreateBinOp(static_cast<llvm::Instruction::BinaryOps>(inst->getOpcode()),
                                               materialize(low, ty), exact_s);
            return {rest, high};
        }
        return ring(inst, ty, depth, narrowing);
    }

    llvm::IRBuilder<>& b_;
    const llvm::DataLayout& dl_;
    std::map<std::pair<llvm::Value*, llvm::IntegerType*>, Split> memo_;
};

// Places a copy of `inst` (an address + constant, or a cast of one) next to each user in
// another block, so that the constant folds into that user's offset or costs one add
// there instead of a register live across the loop between them. Casts of it that live
// in its block are moved along first.
void sink_to_users(llvm::Instruction* inst) {
    std::vector<llvm::Use*> uses;
    for (auto& u : inst->uses()) uses.push_back(&u);
    for (auto* u : uses) {
        auto* user = llvm::cast<llvm::Instruction>(u->getUser());
        if (llvm::isa<llvm::CastInst>(user) && user->getParent() == inst->getParent()) sink_to_users(user);
    }
    uses.clear();
    for (auto& u : inst->uses()) uses.push_back(&u);
    for (auto* u : uses) {
        auto* user = llvm::cast<llvm::Instruction>(u->getUser());
        if (user->getParent() == inst->getParent() || llvm::isa<llvm::PHINode>(user)) continue;
        llvm::Instruction* copy = inst->clone();
        copy->insertBefore(user);
        u->set(copy);
    }
    if (inst->use_empty()) inst->eraseFromParent();
}

}  // namespace

// The narrowing above truncates 64-bit thread values where the addresses use them,
// inside the loops; the 64-bit value itself then stays live across the loop (two
// registers) for a 32-bit result. Where every user of a value is such a truncation to one
// type, one truncation right after the definition serves them all and the 64-bit value
// dies at once.
static int narrow_at_definitions(llvm::Function& fn) {
    // The rewrites above leave the old index arithmetic dead but in place: its uses
    // must not count.
    for (bool again = true; again;) {
        again = false;
        for (auto& bb : fn)
            for (auto it = bb.begin(); it != bb.end();) {
                llvm::Instruction& inst = *it++;
                if (llvm::isInstructionTriviallyDead(&inst)) {
                    inst.eraseFromParent();
                    again = true;
                }
            }
    }
    std::vector<llvm::Value*> values;
    for (auto& arg : fn.args()) values.push_back(&arg);
    for (auto& bb : fn)
        for (auto& inst : bb)
            if (!llvm::isa<llvm::PHINode>(inst)) values.push_back(&inst);
    int rewritten = 0;
    for (llvm::Value* v : values) {
        if (!v->getType()->isIntegerTy(64) || v->use_empty()) continue;
        llvm::Type* to = nullptr;
        bool all = true;
        for (auto* u : v->users()) {
            auto* t = llvm::dyn_cast<llvm::TruncInst>(u);
            all = t && (!to || t->getType() == to);
            if (!all) break;
            to = t->getType();
        }
        if (!all || !to) continue;
        llvm::Instruction* at = nullptr;
        if (auto* arg = llvm::dyn_cast<llvm::Argument>(v))
            at = &*arg->getParent()->getEntryBlock().getFirstInsertionPt();
        else
            at = llvm::cast<llvm::Instruction>(v)->getNextNode();
        llvm::IRBuilder<> b(at);
        llvm::Value* narrow = b.CreateTrunc(v, to, v->getName() + ".lo");
        std::vector<llvm::User*> users(v->user_begin(), v->user_end());
        for (auto* u : users)
            if (u != narrow) {
                u->replaceAllUsesWith(narrow);
                llvm::cast<llvm::Instruction>(u)->eraseFromParent();
            }
        ++rewritten;
    }
    return rewritten;
}

int narrow_masked_fill_addresses(llvm::Function& fn) {
    const llvm::DataLayout& dl = fn.getParent()->getDataLayout();
    // A masked fill's two arms (the loaded element, 0) store to one address, which
    // SimplifyCFG merges into one store of a phi (or a select).
    auto masked_fill = [](llvm::GetElementPtrInst* gep) {
        for (auto* u : gep->users())
            if (auto* store = llvm::dyn_cast<llvm::StoreInst>(u); store && store->getPointerOperand() == gep) {
                llvm::Value* v = store->getValueOperand();
                if (llvm::isa<llvm::PHINode>(v) || llvm::isa<llvm::SelectInst>(v)) return true;
            }
        return false;
    };
    std::vector<llvm::GetElementPtrInst*> geps;
    for (auto& bb : fn)
        for (auto& inst : bb)
            if (auto* gep = llvm::dyn_cast<llvm::GetElementPtrInst>(&inst))
                if (gep->getPointerAddressSpace() == kShared && gep->getNumIndices() == 1 &&
                    llvm::isa<llvm::TruncInst>(gep->getOperand(1)) && masked_fill(gep))
                    geps.push_back(gep);
    llvm::IRBuilder<> b(fn.getContext());
    for (auto* gep : geps) {
        auto* index = llvm::cast<llvm::TruncInst>(gep->getOperand(1));
        b.SetInsertPoint(gep);
        AddressSplitter splitter(b, dl);
        auto* ty = llvm::cast<llvm::IntegerType>(index->getType());
        gep->setOperand(1, splitter.materialize(splitter.split(index, ty, 0), ty));
    }
    return static_cast<int>(geps.size());
}

int split_address_constants(llvm::Function& fn) {
    const llvm::DataLayout& dl = fn.getParent()->getDataLayout();
    std::vector<llvm::GetElementPtrInst*> geps, narrow_only;
    llvm::DominatorTree dt(fn);
    llvm::LoopInfo loops(dt);
    // Only addresses computed outside a loop that uses them: those are the registers
    // held across the loop.
    auto used_deeper = [&](llvm::Instruction* inst) {
        unsigned depth = loops.getLoopDepth(inst->getParent());
        std::vector<llvm::Instruction*> work{inst};
        for (size_t w = 0; w < work.size(); ++w)
            for (auto* u : work[w]->users()) {
                auto* ui = llvm::cast<llvm::Instruction>(u);
                if (loops.getLoopDepth(ui->getParent()) > depth) return true;
                if (llvm::isa<llvm::CastInst>(ui) && ui->getParent() == inst->getParent()) work.push_back(ui);
            }
        return false;
    };
    // ... and masked copies' clamped addresses c ? x + C : 0 (each row's C made a register
    // of its own x + C, hoisted).
    auto masked = [](llvm::GetElementPtrInst* gep) {
        llvm::Value* v = gep->getOperand(1);
        while (auto* inst = llvm::dyn_cast<llvm::Instruction>(v)) {
            if (llvm::isa<llvm::SelectInst>(inst)) return true;
            bool through = llvm::isa<llvm::CastInst>(inst) || inst->getOpcode() == llvm::Instruction::Shl ||
                           inst->getOpcode() == llvm::Instruction::Mul;
            if (!through) return false;
            v = inst->getOperand(0);
        }
        return false;
    };
    for (auto& bb : fn)
        for (auto& inst : bb)
            if (auto* gep = llvm::dyn_cast<llvm::GetElementPtrInst>(&inst))
                if (gep->getNumIndices() == 1 && !llvm::isa<llvm::ConstantInt>(gep->getOperand(1)) &&
                    !llvm::isa<llvm::AllocaInst>(gep->getPointerOperand())) {
                    if (used_deeper(gep) || masked(gep))
                        geps.push_back(gep);
                    else if (gep->getPointerAddressSpace() == kShared)
                        narrow_only.push_back(gep);
                }
    int rewritten = 0;
    llvm::IRBuilder<> b(fn.getContext());
    std::vector<llvm::Instruction*> moved;
    for (auto* gep : geps) {
        b.SetInsertPoint(gep);
        AddressSplitter splitter(b, dl);
        auto* ty = llvm::cast<llvm::IntegerType>(gep->getOperand(1)->getType());
        Split s = splitter.split(gep->getOperand(1), ty, 0);
        if (!s.var) continue;  // a constant address (new code is dead: DCE drops it)
        if (s.constant.isZero()) {
            // Nothing to move, but the rewritten index is the one the other addresses of
            // the tile now use as their base (row 0 of a fragment's rows).
            gep->setOperand(1, s.var);
            continue;
        }
        llvm::Value* base = b.CreateGEP(gep->getSourceElementType(), gep->getPointerOperand(), s.var);
        llvm::Value* addr = b.CreateGEP(gep->getSourceElementType(), base, llvm::ConstantInt::get(ty, s.constant));
        addr->takeName(gep);
        gep->replaceAllUsesWith(addr);
        gep->eraseFromParent();
        if (auto* i = llvm::dyn_cast<llvm::Instruction>(addr)) moved.push_back(i);
        ++rewritten;
    }
    // The other shared addresses: their 64-bit index arithmetic narrowed to the 32 bits
    // of the address (one register instead of a pair for each value the loop holds).
    for (auto* gep : narrow_only) {
        auto* index = llvm::dyn_cast<llvm::TruncInst>(gep->getOperand(1));
        if (!index) continue;
        b.SetInsertPoint(gep);
        AddressSplitter splitter(b, dl);
        auto* ty = llvm::cast<llvm::IntegerType>(index->getType());
        gep->setOperand(1, splitter.materialize(splitter.split(index, ty, 0), ty));
        ++rewritten;
    }
    for (auto* i : moved) sink_to_users(i);
    rewritten += narrow_at_definitions(fn);
    return rewritten;
}

}  // namespace tilec::codegen::gpu
