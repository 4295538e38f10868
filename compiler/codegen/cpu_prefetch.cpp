// Software prefetch of the next tile a serial loop copies in from global memory: while
// the block computes on tile t, the lines of tile t + 1 are already on their way.
#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>

#include "codegen/cpu_lowering.h"
#include "ir/visitor.h"

namespace tilec::codegen {

using ir::DataType;

namespace {

constexpr int64_t kCacheLine = 64;

// Whether `e` is plain index arithmetic (no loads, no calls): evaluating it again with
// another value of a loop variable has no effect but its value.
bool pure_index(const ir::Expr& e) {
    bool pure = true;
    ir::for_each_expr(e, [&](const ir::Expr& x) {
        if (x->kind == ir::ExprKind::Load || x->kind == ir::ExprKind::Call) pure = false;
    });
    return pure;
}

}  // namespace

void FunctionLowering::emit_prefetch_next(const ir::CopyNode& s) {
    const ir::Region& r = s.src;
    if (r.buffer->scope != ir::Scope::Global || s.dst.buffer->scope == ir::Scope::Global) return;
    if (r.buffer->dtype.bits < 8) return;  // packed nibbles: not worth it
    for (auto& e : r.start)
        if (!pure_index(e)) return;
    // The innermost enclosing serial loop the region moves with.
    const SerialLoop* loop = nullptr;
    for (auto it = serial_loops_.rbegin(); it != serial_loops_.rend() && !loop; ++it)
        for (auto& e : r.start)
            if (ir::uses_var(e, it->var.get())) {
                loop = &*it;
                break;
            }
    if (!loop) return;
    std::vector<int64_t> extents;
    for (auto& x : r.extent) extents.push_back(const_extent(x, "a copy extent"));
    size_t inner = extents.size();
    for (size_t d = extents.size(); d-- > 0;)
        if (extents[d] != 1) {
            inner = d;
            break;
        }
    if (inner == extents.size()) return;  // a single element
    const BufferInfo& info = buffer(r.buffer);
    const int64_t elem_bytes = storage_type(ms_.ctx, r.buffer->dtype)->getPrimitiveSizeInBits() / 8;

    llvm::Value* next = b_.CreateAdd(loop->index, b_.getInt64(1));
    emit_if(b_.CreateICmpSLT(next, loop->end), [&] {
        // The region's start in the next iteration: the same expressions, the loop
        // variable one step on.
        llvm::Value* saved = vars_[loop->var.get()];
        bind(loop->var, convert(next, DataType::i64(), loop->var->type));
        std::vector<llvm::Value*> start;
        for (auto& e : r.start) start.push_back(convert(expr(e), e->type, DataType::i64()));
        vars_[loop->var.get()] = saved;
        // Rows along the outer dimensions of extent > 1; each row's in-bounds part along
        // the inner dimension, whose elements are consecutive in memory.
        std::vector<size_t> outer_dims;
        std::vector<int64_t> outer_extents;
        for (size_t d = 0; d < inner; ++d)
            if (extents[d] != 1) {
                outer_dims.push_back(d);
                outer_extents.push_back(extents[d]);
            }
        llvm::Value* contiguous = b_.CreateICmpEQ(info.strides[inner], b_.getInt64(1));
        emit_if(contiguous, [&] {
            emit_nest(outer_extents, LoopHint::None, [&](const std::vector<llvm::Value*>& oi) {
                std::vector<llvm::Value*> idx = start;
                for (size_t k = 0; k < oi.size(); ++k) idx[outer_dims[k]] = b_.CreateAdd(idx[outer_dims[k]], oi[k]);
                llvm::Value* ok = b_.getTrue();
                for (size_t d = 0; d < idx.size(); ++d)
                    if (d != inner) ok = b_.CreateAnd(ok, b_.CreateICmpULT(idx[d], info.shape[d]));
                llvm::Value* lo = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, idx[inner], b_.getInt64(0));
                llvm::Value* hi = b_.CreateBinaryIntrinsic(
                    llvm::Intrinsic::smin, b_.CreateAdd(idx[inner], b_.getInt64(extents[inner])), info.shape[inner]);
                emit_if(b_.CreateAnd(ok, b_.CreateICmpSLT(lo, hi)), [&] {
                    idx[inner] = lo;
                    llvm::Value* p = element_ptr(r.buffer, info, element_offset(info, idx));
                    llvm::Value* bytes = b_.CreateMul(b_.CreateSub(hi, lo), b_.getInt64(elem_bytes));
                    llvm::Value* skew = b_.CreateAnd(b_.CreatePtrToInt(p, b_.getInt64Ty()), b_.getInt64(kCacheLine - 1));
                    llvm::Value* lines = b_.CreateUDiv(b_.CreateAdd(b_.CreateAdd(bytes, skew), b_.getInt64(kCacheLine - 1)),
                                                       b_.getInt64(kCacheLine));
                    llvm::Value* first = b_.CreateGEP(b_.getInt8Ty(), p, b_.CreateNeg(skew));
                    emit_loop(b_.getInt64(0), lines, LoopHint::None, [&](llvm::Value* k) {
                        llvm::Value* line = b_.CreateGEP(b_.getInt8Ty(), first, b_.CreateMul(k, b_.getInt64(kCacheLine)));
                        // read, high locality (into every cache level), data
                        b_.CreateIntrinsic(llvm::Intrinsic::prefetch, {line->getType()},
                                           {line, b_.getInt32(0), b_.getInt32(3), b_.getInt32(1)});
                    });
                });
            });
        });
    });
}

}  // namespace tilec::codegen
