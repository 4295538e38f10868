// GpuLowering's memory (gpu_lowering.h): the shared arena, tensor parameters and their
// strides, element addresses, and allocations (registers, planned and unplanned shared
// buffers), kept together because they decide where every load and store points.
#include "codegen/gpu_lowering.h"

namespace tilec::codegen::gpu {

void GpuLowering::set_shared_arena(int64_t bytes, bool dynamic) {
    if (bytes <= 0) return;
    auto* arr = llvm::ArrayType::get(b_.getInt8Ty(), dynamic ? 0 : static_cast<uint64_t>(bytes));
    auto* gv = new llvm::GlobalVariable(
        m_, arr, false, dynamic ? llvm::GlobalValue::ExternalLinkage : llvm::GlobalValue::InternalLinkage,
        dynamic ? nullptr : llvm::UndefValue::get(arr), fn_->getName().str() + (dynamic ? "_dynamic_smem" : "_smem"),
        nullptr, llvm::GlobalValue::NotThreadLocal, kShared);
    // wgmma's swizzle patterns repeat at absolute 1024-byte boundaries (shared_plan.cpp).
    gv->setAlignment(llvm::Align(target_.has_wgmma() ? 1024 : 128));
    shared_arena_ = gv;
}

void GpuLowering::bind_tensor(const ir::Buffer& buf, llvm::Value* base) {
    GpuBuffer g;
    g.base = base;
    g.elem = storage_type(buf->dtype);
    size_t rank = buf->rank();
    g.strides.resize(rank);
    if (!buf->strides.empty()) {
        for (size_t d = 0; d < rank; ++d) g.strides[d] = expr(buf->strides[d]);
    } else {
        llvm::Value* s = b_.getInt64(1);
        for (size_t d = rank; d-- > 0;) {
            g.strides[d] = s;
            if (d) s = b_.CreateMul(s, expr(buf->shape[d]), "", false, true);
        }
    }
    buffers_[buf.get()] = g;
}

GpuBuffer& GpuLowering::buffer(const ir::Buffer& b) {
    auto it = buffers_.find(b.get());
    if (it == buffers_.end()) TILEC_ICE(who_ + ": buffer '" + b->name + "' used outside its allocation");
    return it->second;
}

llvm::Value* GpuLowering::element_ptr(const GpuBuffer& g, const std::vector<ir::Expr>& indices) {
    llvm::Value* off = nullptr;
    for (size_t d = 0; d < indices.size(); ++d) {
        llvm::Value* i = b_.CreateSExtOrTrunc(expr(indices[d]), b_.getInt64Ty());
        llvm::Value* term = b_.CreateMul(i, g.strides[d], "", false, true);
        off = off ? b_.CreateAdd(off, term, "", false, true) : term;
    }
    if (!off) return g.base;
    return b_.CreateInBoundsGEP(g.elem, g.base, off);
}

void GpuLowering::lower_allocate(const ir::AllocateNode& a) {
    const ir::Buffer& buf = a.buffer;
    uint64_t count = 1;
    for (auto& e : buf->shape) count *= static_cast<uint64_t>(const_extent(e, "allocation extent"));
    GpuBuffer g;
    g.elem = storage_type(buf->dtype);
    auto* arr = llvm::ArrayType::get(g.elem, count);
    if (buf->scope == ir::Scope::Shared && buf->shared_offset >= 0) {
        if (!shared_arena_) TILEC_ICE(who_ + ": shared buffer '" + buf->name + "' planned without an arena");
        g.base = b_.CreateInBoundsGEP(b_.getInt8Ty(), shared_arena_, b_.getInt64(buf->shared_offset),
                                      buf->name);
    } else if (buf->scope == ir::Scope::Shared) {
        auto* gv = new llvm::GlobalVariable(m_, arr, false, llvm::GlobalValue::InternalLinkage,
                                            llvm::UndefValue::get(arr), fn_->getName().str() + "." + buf->name,
                                            nullptr, llvm::GlobalValue::NotThreadLocal, kShared);
        gv->setAlignment(llvm::Align(16));
        g.base = gv;
    } else if (buf->scope == ir::Scope::Register) {
        llvm::IRBuilder<> eb(alloca_point_);
        auto* al = eb.CreateAlloca(arr, nullptr, buf->name);
        al->setAlignment(llvm::Align(16));
        g.base = al;
    } else {
        TILEC_ICE((who_ + ": ") + ir::scope_name(buf->scope) + " buffer '" + buf->name +
                  "' at thread level");
    }
    g.strides.resize(buf->rank());
    int64_t s = 1;
    for (size_t d = buf->rank(); d-- > 0;) {
        g.strides[d] = b_.getInt64(s);
        s *= const_extent(buf->shape[d], "allocation extent");
    }
    buffers_[buf.get()] = g;
    stmt(a.body);
    buffers_.erase(buf.get());
}

}  // namespace tilec::codegen::gpu
