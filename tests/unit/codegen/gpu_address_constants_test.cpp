// split_address_constants and narrow_masked_fill_addresses
// (compiler/codegen/gpu_address_constants.cpp) must not change any
// address. Each test builds the address patterns of tilec's GPU code (swizzled rows, a
// masked copy's clamped index, reductions' rows, 64-bit index arithmetic truncated to a
// 32-bit shared address), computed before a loop and used in it, evaluates the addresses
// the loop sees with a small interpreter of the integer IR on random inputs, runs the
// pass, and evaluates again: the same addresses, and the constants moved into offsets.
#include <catch2/catch.hpp>

#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Operator.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "codegen/gpu_lowering.h"

namespace {

// NVPTX's layout with 32-bit shared pointers (nvptx_backend.cpp sets nvptx-short-ptr).
const char* const kLayout = "e-p3:32:32-p4:32:32-p5:32:32-i64:64-i128:128-v16:16-v32:32-n16:32:64";
constexpr uint64_t kSharedBase = 0x400, kGlobalBase = 0x7f0000000000;

unsigned gpu_kshared() { return tilec::codegen::gpu::kShared; }

// Runs the function (integer arguments, one call to @use per address the loop sees)
// and returns the addresses in order.
std::vector<uint64_t> evaluate(llvm::Function& fn, const std::vector<llvm::APInt>& args) {
    const llvm::DataLayout& dl = fn.getParent()->getDataLayout();
    std::map<const llvm::Value*, llvm::APInt> values;
    for (unsigned i = 0; i < args.size(); ++i) values[fn.getArg(i)] = args[i];
    auto value = [&](const llvm::Value* v) -> llvm::APInt {
        if (auto* c = llvm::dyn_cast<llvm::ConstantInt>(v)) return c->getValue();
        if (auto* g = llvm::dyn_cast<llvm::GlobalVariable>(v))
            return llvm::APInt(dl.getPointerSizeInBits(g->getAddressSpace()),
                               g->getAddressSpace() == gpu_kshared() ? kSharedBase : kGlobalBase);
        auto it = values.find(v);
        if (it == values.end()) FAIL("value evaluated before its definition");
        return it->second;
    };
    std::vector<uint64_t> seen;
    const llvm::BasicBlock* bb = &fn.getEntryBlock();
    for (int steps = 0; bb && steps < 100; ++steps) {
        const llvm::BasicBlock* next = nullptr;
        for (auto& inst : *bb) {
            using llvm::Instruction;
            if (auto* bo = llvm::dyn_cast<llvm::BinaryOperator>(&inst)) {
                llvm::APInt a = value(bo->getOperand(0)), b = value(bo->getOperand(1));
                llvm::APInt r;
                switch (bo->getOpcode()) {
                case Instruction::Add: r = a + b; break;
                case Instruction::Sub: r = a - b; break;
                case Instruction::Mul: r = a * b; break;
                case Instruction::Shl: r = a.shl(b); break;
                case Instruction::LShr: r = a.lshr(b); break;
                case Instruction::AShr: r = a.ashr(b); break;
                case Instruction::And: r = a & b; break;
                case Instruction::Or: r = a | b; break;
                case Instruction::Xor: r = a ^ b; break;
                default: FAIL("unexpected binary operator " << bo->getOpcodeName());
                }
                values[&inst] = r;
            } else if (auto* cast = llvm::dyn_cast<llvm::CastInst>(&inst)) {
                llvm::APInt a = value(cast->getOperand(0));
                unsigned w = cast->getType()->isPointerTy() ? dl.getPointerTypeSizeInBits(cast->getType())
                                                           : cast->getType()->getIntegerBitWidth();
                switch (cast->getOpcode()) {
                case Instruction::Trunc: values[&inst] = a.trunc(w); break;
                case Instruction::ZExt:
                case Instruction::PtrToInt: values[&inst] = a.zextOrTrunc(w); break;
                case Instruction::SExt: values[&inst] = a.sext(w); break;
                default: FAIL("unexpected cast " << cast->getOpcodeName());
                }
            } else if (auto* cmp = llvm::dyn_cast<llvm::ICmpInst>(&inst)) {
                llvm::APInt a = value(cmp->getOperand(0)), b = value(cmp->getOperand(1));
                values[&inst] = llvm::APInt(1, llvm::ICmpInst::compare(a, b, cmp->getPredicate()));
            } else if (auto* sel = llvm::dyn_cast<llvm::SelectInst>(&inst)) {
                values[&inst] = value(sel->getCondition()).getBoolValue() ? value(sel->getTrueValue())
                                                                          : value(sel->getFalseValue());
            } else if (auto* gep = llvm::dyn_cast<llvm::GetElementPtrInst>(&inst)) {
                REQUIRE(gep->getNumIndices() == 1);
                llvm::APInt base = value(gep->getPointerOperand());
                unsigned w = base.getBitWidth();
                uint64_t size = dl.getTypeAllocSize(gep->getSourceElementType());
                values[&inst] = base + value(gep->getOperand(1)).sextOrTrunc(w) * llvm::APInt(w, size);
            } else if (auto* call = llvm::dyn_cast<llvm::CallInst>(&inst)) {
                seen.push_back(value(call->getArgOperand(0)).getZExtValue());
            } else if (auto* store = llvm::dyn_cast<llvm::StoreInst>(&inst)) {
                seen.push_back(value(store->getPointerOperand()).getZExtValue());  // where, not what
            } else if (auto* br = llvm::dyn_cast<llvm::BranchInst>(&inst)) {
                next = br->isConditional() && !value(br->getCondition()).getBoolValue() ? br->getSuccessor(1)
                                                                                         : br->getSuccessor(0);
            } else if (llvm::isa<llvm::ReturnInst>(&inst)) {
                next = nullptr;
            } else {
                std::string text;
                llvm::raw_string_ostream os(text);
                inst.print(os);
                FAIL("unexpected instruction " << text);
            }
        }
        bb = next;
    }
    return seen;
}

// A kernel-shaped function: `entry` computes the addresses (as LICM leaves them), the
// loop (run once: its back edge's condition is the last argument, false) uses them.
struct Kernel {
    llvm::LLVMContext ctx;
    llvm::Module m{"t", ctx};
    llvm::Function* fn = nullptr;
    llvm::Function* use = nullptr;
    llvm::GlobalVariable* shared = nullptr;
    llvm::GlobalVariable* global = nullptr;
    std::vector<llvm::Value*> addresses;  // computed in entry

    Kernel() {
        m.setDataLayout(kLayout);
        auto* i64 = llvm::Type::getInt64Ty(ctx);
        auto* i1 = llvm::Type::getInt1Ty(ctx);
        // (tid, page, cond, again)
        fn = llvm::Function::Create(llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {i64, i64, i1, i1}, false),
                                    llvm::Function::ExternalLinkage, "k", m);
        use = llvm::Function::Create(llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {i64}, false),
                                     llvm::Function::ExternalLinkage, "use", m);
        auto* arr = llvm::ArrayType::get(llvm::Type::getInt16Ty(ctx), 1 << 16);
        shared = new llvm::GlobalVariable(m, arr, false, llvm::GlobalValue::InternalLinkage, llvm::UndefValue::get(arr),
                                          "smem", nullptr, llvm::GlobalValue::NotThreadLocal, gpu_kshared());
        global = new llvm::GlobalVariable(m, arr, false, llvm::GlobalValue::ExternalLinkage, nullptr, "gmem", nullptr,
                                          llvm::GlobalValue::NotThreadLocal, 1);
    }
    llvm::Value* tid_ = nullptr;
    // The thread index, below 1024 (the inputs are).
    llvm::Value* tid() { return tid_; }
    llvm::Value* page() { return fn->getArg(1); }
    llvm::Value* cond() { return fn->getArg(2); }

    // Finishes the function: the loop passes every address (as an integer) to @use.
    void finish(llvm::IRBuilder<>& b) {
        auto* loop = llvm::BasicBlock::Create(ctx, "loop", fn);
        auto* exit = llvm::BasicBlock::Create(ctx, "exit", fn);
        b.CreateBr(loop);
        b.SetInsertPoint(loop);
        for (auto* a : addresses) b.CreateCall(use, {b.CreatePtrToInt(a, b.getInt64Ty())});
        b.CreateCondBr(fn->getArg(3), loop, exit);
        b.SetInsertPoint(exit);
        b.CreateRetVoid();
        std::string errors;
        llvm::raw_string_ostream os(errors);
        REQUIRE_FALSE(llvm::verifyFunction(*fn, &os));
    }
};

// Removes what the pass left unused (the O3 run after it does that in the backend).
void remove_dead(llvm::Function& fn) {
    for (bool changed = true; changed;) {
        changed = false;
        for (auto& bb : fn)
            for (auto it = bb.rbegin(); it != bb.rend();) {
                llvm::Instruction& inst = *it++;
                if (inst.use_empty() && !inst.isTerminator() && !inst.mayHaveSideEffects()) {
                    inst.eraseFromParent();
                    changed = true;
                }
            }
    }
}

// x | c with x and c known to share no bit (LLVM's `or disjoint`, as InstCombine marks them).
llvm::Value* disjoint_or(llvm::IRBuilder<>& b, llvm::Value* x, uint64_t c) {
    auto* inst = llvm::cast<llvm::Instruction>(b.CreateOr(x, b.getInt64(c)));
    llvm::cast<llvm::PossiblyDisjointInst>(inst)->setIsDisjoint(true);
    return inst;
}

// Random inputs; both forms must see the same addresses.
void check_same_addresses(Kernel& k, int rewrites_at_least,
                          int (*pass)(llvm::Function&) = tilec::codegen::gpu::split_address_constants) {
    std::mt19937_64 rng(20261205);
    std::vector<std::vector<llvm::APInt>> inputs;
    for (int t = 0; t < 300; ++t) {
        uint64_t tid = t < 4 ? uint64_t(t) * 255 : rng() % 1024;
        uint64_t page = t % 7 == 0 ? uint64_t(-1) : rng() % 100000;  // a masked row
        inputs.push_back({llvm::APInt(64, tid), llvm::APInt(64, page), llvm::APInt(1, (rng() & 3) != 0),
                          llvm::APInt(1, 0)});
    }
    std::vector<std::vector<uint64_t>> before;
    for (auto& in : inputs) before.push_back(evaluate(*k.fn, in));
    int rewritten = pass(*k.fn);
    CHECK(rewritten >= rewrites_at_least);
    std::string errors;
    llvm::raw_string_ostream os(errors);
    REQUIRE_FALSE(llvm::verifyFunction(*k.fn, &os));
    for (size_t t = 0; t < inputs.size(); ++t) {
        INFO("input " << t << ": tid " << inputs[t][0].getZExtValue() << ", page " << inputs[t][1].getSExtValue());
        REQUIRE(evaluate(*k.fn, inputs[t]) == before[t]);
    }
}

// The constant index each address the loop uses adds to its base (gep(base, C) after
// the pass; 0 where the address has no constant part).
std::vector<int64_t> moved_constants(Kernel& k) {
    std::vector<int64_t> out;
    for (auto& bb : *k.fn)
        for (auto& inst : bb)
            if (auto* call = llvm::dyn_cast<llvm::CallInst>(&inst)) {
                auto* p2i = llvm::cast<llvm::PtrToIntInst>(call->getArgOperand(0));
                auto* gep = llvm::dyn_cast<llvm::GetElementPtrInst>(p2i->getOperand(0));
                auto* c = gep ? llvm::dyn_cast<llvm::ConstantInt>(gep->getOperand(1)) : nullptr;
                out.push_back(c ? c->getSExtValue() : 0);
            }
    return out;
}

}  // namespace

TEST_CASE("split_address_constants: a fragment's swizzled rows share one base", "[codegen][address]") {
    Kernel k;
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(k.ctx, "entry", k.fn));
    k.tid_ = b.CreateAnd(k.fn->getArg(0), 1023);
    // Row tid/4 % 8 + 16 r of a [64, 64] f16 tile with the 128-byte swizzle, column
    // (tid % 4) * 2: L ^ ((L >> 6) & 7) << 3, in i64, truncated to the 32-bit address.
    llvm::Value* row0 = b.CreateAnd(b.CreateLShr(k.tid(), 2), 7);
    llvm::Value* col = b.CreateMul(b.CreateAnd(k.tid(), 3), b.getInt64(2));
    for (int r = 0; r < 4; ++r) {
        llvm::Value* row = disjoint_or(b, row0, 16 * r);
        llvm::Value* l = b.CreateOr(b.CreateShl(row, 6), col);
        llvm::Value* swz = b.CreateShl(b.CreateAnd(b.CreateLShr(l, 6), 7), 3);
        llvm::Value* index = b.CreateTrunc(b.CreateXor(l, swz), b.getInt32Ty());
        k.addresses.push_back(b.CreateGEP(b.getInt16Ty(), k.shared, index));
    }
    k.finish(b);
    check_same_addresses(k, 3);  // row 0 has no constant to move
    // Rows 1-3 are base + 2048 r bytes, each base the same address as row 0's (the
    // backend's CSE merges what InstSimplify can show equal; the constants are offsets).
    CHECK(moved_constants(k) == std::vector<int64_t>{0, 1024, 2048, 3072});
}

TEST_CASE("split_address_constants: a masked copy's clamped rows", "[codegen][address]") {
    Kernel k;
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(k.ctx, "entry", k.fn));
    k.tid_ = b.CreateAnd(k.fn->getArg(0), 1023);
    // cp.async source rows of a paged cache: c ? page * 32768 | (tid / 64 % 4 + 4 r) << 9 |
    // (tid % 64) * 8 : 0 (global, 64-bit); the condition is known only in the loop.
    llvm::Value* row0 = b.CreateAnd(b.CreateLShr(k.tid(), 6), 3);
    llvm::Value* col = b.CreateShl(b.CreateAnd(k.tid(), 63), 3);
    for (int r = 0; r < 4; ++r) {
        llvm::Value* row = disjoint_or(b, row0, 4 * r);
        // Disjoint, as InstCombine marks them: row < 2^4, col < 2^9.
        llvm::Value* in_page = b.CreateOr(b.CreateShl(row, 9), col);
        llvm::cast<llvm::PossiblyDisjointInst>(in_page)->setIsDisjoint(true);
        llvm::Value* off = b.CreateOr(b.CreateMul(k.page(), b.getInt64(32768)), in_page);
        llvm::cast<llvm::PossiblyDisjointInst>(off)->setIsDisjoint(true);
        llvm::Value* index = b.CreateSelect(k.cond(), off, b.getInt64(0));
        k.addresses.push_back(b.CreateGEP(b.getInt16Ty(), k.global, index));
    }
    // A shared reduction's rows: ((tid / 4) % 8 + 8 h) * 32 + tid % 4 (f32 words).
    for (int h = 0; h < 2; ++h) {
        llvm::Value* row = b.CreateAdd(b.CreateAnd(b.CreateLShr(k.tid(), 2), 7), b.getInt64(8 * h));
        llvm::Value* index = b.CreateAdd(b.CreateMul(row, b.getInt64(32)), b.CreateAnd(k.tid(), 3));
        k.addresses.push_back(b.CreateGEP(b.getInt32Ty(), k.shared, b.CreateTrunc(index, b.getInt32Ty())));
    }
    // Negative and mixed constants: (tid * 3 - 5 + 64) ^ ((tid + 1024) & 7), tid - 100.
    llvm::Value* mixed = b.CreateAdd(b.CreateSub(b.CreateMul(k.tid(), b.getInt64(3)), b.getInt64(5)), b.getInt64(64));
    llvm::Value* low = b.CreateAnd(b.CreateAdd(k.tid(), b.getInt64(1024)), 7);
    k.addresses.push_back(b.CreateGEP(b.getInt16Ty(), k.shared, b.CreateTrunc(b.CreateXor(mixed, low), b.getInt32Ty())));
    k.addresses.push_back(b.CreateGEP(b.getInt8Ty(), k.shared, b.CreateTrunc(b.CreateSub(k.tid(), b.getInt64(100)), b.getInt32Ty())));
    k.finish(b);
    check_same_addresses(k, 6);
}

// A kernel whose addresses are used in a loop of its own blocks (entry -> loop -> exit),
// not the one Kernel::finish builds.
struct LoopBlocks {
    llvm::BasicBlock* entry;
    llvm::BasicBlock* loop;
    llvm::BasicBlock* exit;
    Kernel& k;
    explicit LoopBlocks(Kernel& kernel)
        : entry(llvm::BasicBlock::Create(kernel.ctx, "entry", kernel.fn)),
          loop(llvm::BasicBlock::Create(kernel.ctx, "loop", kernel.fn)),
          exit(llvm::BasicBlock::Create(kernel.ctx, "exit", kernel.fn)),
          k(kernel) {}
    // Ends the loop block where `b` is (again while the fourth argument is true).
    void close(llvm::IRBuilder<>& b) {
        b.CreateCondBr(k.fn->getArg(3), loop, exit);
        b.SetInsertPoint(exit);
        b.CreateRetVoid();
    }
};

TEST_CASE("split_address_constants: shared addresses in the loop are narrowed, not moved", "[codegen][address]") {
    Kernel k;
    LoopBlocks blocks(k);
    llvm::BasicBlock* loop = blocks.loop;
    llvm::IRBuilder<> b(blocks.entry);
    k.tid_ = b.CreateAnd(k.fn->getArg(0), 1023);
    llvm::Value* base = b.CreateShl(b.CreateLShr(k.tid(), 3), 7);
    b.CreateBr(loop);
    b.SetInsertPoint(loop);
    // (base + page) computed in the loop: 64-bit arithmetic, truncated.
    llvm::Value* index = b.CreateTrunc(b.CreateXor(b.CreateAdd(base, k.page()), b.CreateAnd(k.tid(), 56)), b.getInt32Ty());
    llvm::Value* addr = b.CreateGEP(b.getInt16Ty(), k.shared, index);
    b.CreateCall(k.use, {b.CreatePtrToInt(addr, b.getInt64Ty())});
    blocks.close(b);
    check_same_addresses(k, 1);
    remove_dead(*k.fn);
    // The index is now computed in i32: no 64-bit arithmetic left in the loop.
    for (auto& inst : *loop)
        if (llvm::isa<llvm::BinaryOperator>(&inst) && !inst.use_empty()) CHECK(inst.getType()->getIntegerBitWidth() == 32);
}

TEST_CASE("narrow_masked_fill_addresses: only a masked fill's store address is narrowed", "[codegen][address]") {
    Kernel k;
    LoopBlocks blocks(k);
    llvm::BasicBlock* loop = blocks.loop;
    llvm::IRBuilder<> b(blocks.entry);
    k.tid_ = b.CreateAnd(k.fn->getArg(0), 1023);
    // A K-tile fill's element: (tid / 16 * 64 + tid % 16 * 4 + page) in 64-bit arithmetic,
    // truncated to the 32-bit shared index; computed before the loop, as LLVM leaves it.
    llvm::Value* row = b.CreateShl(b.CreateLShr(k.tid(), 4), 6);
    llvm::Value* column = b.CreateShl(b.CreateAnd(k.tid(), 15), 2);
    llvm::Value* index = b.CreateAdd(b.CreateOr(row, column), k.page());
    b.CreateBr(loop);
    b.SetInsertPoint(loop);
    // The masked fill stores the loaded element or 0 (merged into a select); the
    // unmasked one stores its element as it is.
    llvm::Value* masked = b.CreateGEP(b.getInt16Ty(), k.shared, b.CreateTrunc(b.CreateAdd(index, b.getInt64(4096)), b.getInt32Ty()));
    b.CreateStore(b.CreateSelect(k.cond(), b.getInt16(7), b.getInt16(0)), masked);
    llvm::Value* plain_index = b.CreateTrunc(b.CreateAdd(index, b.getInt64(8192)), b.getInt32Ty());
    b.CreateStore(b.getInt16(7), b.CreateGEP(b.getInt16Ty(), k.shared, plain_index));
    blocks.close(b);
    check_same_addresses(k, 1, tilec::codegen::gpu::narrow_masked_fill_addresses);
    remove_dead(*k.fn);
    int stores = 0;
    for (auto& inst : *loop)
        if (auto* store = llvm::dyn_cast<llvm::StoreInst>(&inst)) {
            auto* gep = llvm::cast<llvm::GetElementPtrInst>(store->getPointerOperand());
            if (llvm::isa<llvm::SelectInst>(store->getValueOperand())) {
                // Rebuilt in i32 where the store is: no 64-bit value feeds it.
                auto* narrowed = llvm::dyn_cast<llvm::BinaryOperator>(gep->getOperand(1));
                REQUIRE(narrowed);
                CHECK(narrowed->getParent() == loop);
                CHECK(narrowed->getType()->getIntegerBitWidth() == 32);
            } else {
                CHECK(gep->getOperand(1) == plain_index);  // untouched
            }
            ++stores;
        }
    CHECK(stores == 2);
}

namespace {

// A random index expression over the kernel's inputs: the operations the pass looks
// through (and the ones it must treat as opaque), constants of every size and sign,
// swizzles, masked selects, truncations and extensions, shared subexpressions.
struct RandomIndex {
    std::mt19937_64& rng;
    llvm::IRBuilder<>& b;
    std::vector<llvm::Value*> pool;  // i64 values built so far

    int64_t constant() {
        switch (rng() % 6) {
        case 0: return int64_t(rng() % 16);
        case 1: return int64_t(rng() % 4096) * 16;
        case 2: return -int64_t(rng() % 5000);
        case 3: return int64_t(1) << (rng() % 63);
        case 4: return int64_t(rng());
        default: return int64_t(rng() % 64) << 6;
        }
    }
    llvm::Value* pick() { return pool[rng() % pool.size()]; }
    llvm::Value* node(int depth) {
        if (depth == 0 || rng() % 5 == 0) return rng() % 3 ? pick() : b.getInt64(constant());
        llvm::Value* x = node(depth - 1);
        llvm::Value* v = nullptr;
        switch (rng() % 14) {
        case 0: v = b.CreateAdd(x, node(depth - 1)); break;
        case 1: v = b.CreateSub(x, node(depth - 1)); break;
        case 2: v = b.CreateAdd(x, b.getInt64(constant())); break;
        case 3: v = b.CreateMul(x, b.getInt64(constant() % 1024)); break;
        case 4: v = b.CreateShl(x, rng() % 64); break;
        case 5: v = b.CreateLShr(x, rng() % 64); break;
        case 6: v = b.CreateAShr(x, rng() % 64); break;
        case 7: v = b.CreateAnd(x, rng() % 2 ? b.getInt64((int64_t(1) << (rng() % 20)) - 1) : node(depth - 1)); break;
        case 8: v = b.CreateOr(x, rng() % 2 ? b.getInt64(constant()) : node(depth - 1)); break;
        case 9: v = b.CreateXor(x, node(depth - 1)); break;
        case 10: {  // a swizzle: x ^ ((x >> k) & m) << j
            unsigned k = unsigned(rng() % 12), j = unsigned(rng() % 8);
            v = b.CreateXor(x, b.CreateShl(b.CreateAnd(b.CreateLShr(x, k), 7), j));
            break;
        }
        case 11: {  // x << k | (y & (2^k - 1)): disjoint by construction
            unsigned k = unsigned(1 + rng() % 12);
            llvm::Value* low = b.CreateAnd(node(depth - 1), (uint64_t(1) << k) - 1);
            v = b.CreateOr(b.CreateShl(x, k), low);
            llvm::cast<llvm::PossiblyDisjointInst>(v)->setIsDisjoint(true);
            break;
        }
        case 12: v = b.CreateSelect(b.CreateICmpSLT(x, node(depth - 1)), node(depth - 1), node(depth - 1)); break;
        default: {  // through 32 bits and back
            llvm::Value* t = b.CreateTrunc(x, b.getInt32Ty());
            t = b.CreateAdd(t, b.getInt32(int32_t(constant())));
            v = rng() % 2 ? b.CreateSExt(t, b.getInt64Ty()) : b.CreateZExt(t, b.getInt64Ty());
            break;
        }
        }
        pool.push_back(v);
        return v;
    }
};

}  // namespace

// SEED=N TRIALS=M (environment) for a longer run than ctest's.
TEST_CASE("split_address_constants: random index expressions keep their addresses", "[codegen][address]") {
    std::mt19937_64 rng(getenv("SEED") ? atoi(getenv("SEED")) : 7);
    int rewritten_total = 0;
    for (int trial = 0; trial < (getenv("TRIALS") ? atoi(getenv("TRIALS")) : 150); ++trial) {
        Kernel k;
        auto* entry = llvm::BasicBlock::Create(k.ctx, "entry", k.fn);
        auto* loop = llvm::BasicBlock::Create(k.ctx, "loop", k.fn);
        auto* exit = llvm::BasicBlock::Create(k.ctx, "exit", k.fn);
        llvm::IRBuilder<> b(entry);
        RandomIndex gen{rng, b, {k.fn->getArg(0), k.fn->getArg(1), b.CreateAnd(k.fn->getArg(0), 1023),
                                 b.CreateZExt(k.fn->getArg(2), b.getInt64Ty())}};
        auto address = [&](llvm::Value* index) {
            if (llvm::isa<llvm::Constant>(index)) index = b.CreateAdd(index, k.fn->getArg(0));  // no constant folding
            return rng() % 2 ? b.CreateGEP(b.getInt32Ty(), k.shared, b.CreateTrunc(index, b.getInt32Ty()))
                             : b.CreateGEP(b.getInt16Ty(), k.global, index);
        };
        std::vector<llvm::Value*> before_loop;
        for (int i = 0; i < 6; ++i) before_loop.push_back(address(gen.node(5)));
        b.CreateBr(loop);
        b.SetInsertPoint(loop);
        std::vector<llvm::Value*> in_loop;
        for (int i = 0; i < 2; ++i) in_loop.push_back(address(gen.node(4)));
        for (auto* a : before_loop) b.CreateCall(k.use, {b.CreatePtrToInt(a, b.getInt64Ty())});
        for (auto* a : in_loop) b.CreateCall(k.use, {b.CreatePtrToInt(a, b.getInt64Ty())});
        b.CreateCondBr(k.fn->getArg(3), loop, exit);
        b.SetInsertPoint(exit);
        b.CreateRetVoid();
        std::vector<std::vector<llvm::APInt>> inputs;
        const uint64_t edges[] = {0, 1, uint64_t(-1), uint64_t(INT64_MIN), uint64_t(INT64_MAX), 1023, 1u << 31};
        for (int t = 0; t < 40; ++t)
            inputs.push_back({llvm::APInt(64, t < 7 ? edges[t] : rng()), llvm::APInt(64, t % 3 ? rng() % 5000 : edges[t % 7]),
                              llvm::APInt(1, rng() & 1), llvm::APInt(1, 0)});
        std::vector<std::vector<uint64_t>> before;
        for (auto& in : inputs) before.push_back(evaluate(*k.fn, in));
        rewritten_total += tilec::codegen::gpu::split_address_constants(*k.fn);
        std::string errors;
        llvm::raw_string_ostream os(errors);
        REQUIRE_FALSE(llvm::verifyFunction(*k.fn, &os));
        for (size_t t = 0; t < inputs.size(); ++t) {
            INFO("trial " << trial << ", input " << t);
            REQUIRE(evaluate(*k.fn, inputs[t]) == before[t]);
        }
    }
    CHECK(rewritten_total > 100);  // the expressions do give the pass work
}
