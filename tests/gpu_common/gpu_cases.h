// What the NVPTX and AMDGPU backend tests (tests/nvptx, tests/amdgpu) share: the stdlib
// kernels they compile, grouped by what each group exercises, lowered to thread level for
// a target; a kernel doing every warp shuffle on one value type; and small string checks.
// Each backend test picks the groups its backend covers.
#pragma once
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "interp/testing.h"
#include "ir/ir.h"
#include "lower/gpu_passes.h"
#include "lower/thread_lower.h"
#include "target/target.h"

namespace tilec::gpu_test {

// A stdlib (or samples/) file and the exports of it that are compiled.
struct Case {
    std::string file;
    std::vector<std::string> exports;
};

inline std::string source_path(const std::string& relative) { return std::string(TILEC_SOURCE_DIR) + "/" + relative; }

// Element-wise kernels.
inline std::vector<Case> elementwise_cases() {
    return {{source_path("stdlib/kernels/vector_add.tile"), {"vector_add_f32", "vector_add_f16", "vector_add_bf16"}},
            {source_path("samples/saxpy.tile"), {"saxpy_f32", "saxpy_f16"}},
            {source_path("stdlib/kernels/activations.tile"),
             {"gelu_f16", "gelu_bf16", "gelu_f32", "silu_f16", "silu_bf16", "silu_f32", "swiglu_f16", "swiglu_bf16"}}};
}

// Row reductions: per-thread partials, a shared scratch and barriers.
inline std::vector<Case> reduction_cases() {
    return {{source_path("stdlib/kernels/softmax.tile"), {"softmax_f16", "softmax_bf16", "softmax_f32"}},
            {source_path("stdlib/kernels/rmsnorm.tile"), {"rmsnorm_f16", "rmsnorm_bf16", "rmsnorm_f32"}},
            {source_path("stdlib/kernels/layernorm.tile"), {"layernorm_f16", "layernorm_bf16", "layernorm_f32"}}};
}

// gemm on CUDA cores (two of its exports: each is large PTX).
inline std::vector<Case> gemm_cases() {
    return {{source_path("stdlib/kernels/gemm.tile"), {"gemm_f16_m64", "gemm_bf16_nt"}}};
}

// Scans through shared memory (LDS); split-K gemm whose only global writes are atomics.
inline std::vector<Case> scan_and_atomic_cases() {
    return {{source_path("stdlib/kernels/cumsum.tile"), {"cumsum_f32", "cumsum_f16", "cumsum_bf16", "cumsum_f32_reverse"}},
            {source_path("stdlib/kernels/gemm_splitk.tile"), {"gemm_splitk_f16", "gemm_splitk_bf16", "gemm_splitk_f16_s8"}}};
}

// The groups one after the other.
inline std::vector<Case> joined(std::initializer_list<std::vector<Case>> groups) {
    std::vector<Case> out;
    for (const auto& group : groups) out.insert(out.end(), group.begin(), group.end());
    return out;
}

// The case's exports compiled from its file and lowered to thread level for `t`, each
// checked by the thread-level verifier.
inline std::vector<ir::PrimFunc> thread_level(const Case& c, const target::GpuTarget& t) {
    auto compiled = interp::testing::compile_file(c.file);
    INFO(compiled.diagnostics);
    REQUIRE(compiled.ok);
    std::vector<ir::PrimFunc> out;
    for (auto& name : c.exports) {
        const ir::PrimFunc* f = compiled.find(name);
        INFO(name);
        REQUIRE(f != nullptr);
        auto low = lower::lower_to_thread_level(*f, t, nullptr);
        REQUIRE(low.has_value());
        REQUIRE(lower::verify_thread_level(*low).empty());
        out.push_back(*low);
    }
    return out;
}

inline bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

// How many times `what` occurs in `s` (overlapping occurrences included).
inline size_t count(const std::string& s, const std::string& what) {
    size_t n = 0;
    for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
    return n;
}

// A thread-level kernel of 128 threads doing every warp shuffle on values of `t`:
// Y[4 tx + 0..3] = shfl_xor(X[tx], 1), shfl_up(X[tx], 1), shfl_down(X[tx], 1),
// shfl_idx(X[tx], 0).
inline ir::PrimFunc shuffle_kernel(ir::DataType t) {
    ir::PrimFunc f;
    auto tx = ir::make_thread_idx_var(0);
    auto x = ir::make_tensor("X", t, {ir::make_int(1024)}, ir::Access::In);
    auto y = ir::make_tensor("Y", t, {ir::make_int(4096)}, ir::Access::Out);
    f.name = "shuffles_" + t.str();
    f.params = {ir::Param{ir::ParamKind::Tensor, x, nullptr}, ir::Param{ir::ParamKind::Tensor, y, nullptr}};
    f.grid = {ir::make_int(1)};
    f.threads = 128;
    f.block_idx = ir::make_block_idx_vars();
    f.level = ir::FuncLevel::Thread;
    std::vector<ir::Stmt> stores;
    int k = 0;
    for (auto op : {ir::CallOp::ShflXor, ir::CallOp::ShflUp, ir::CallOp::ShflDown, ir::CallOp::ShflIdx}) {
        auto v = ir::make_shuffle(op, ir::make_load(x, {tx}), ir::make_int(op == ir::CallOp::ShflIdx ? 0 : 1, ir::DataType::i32()));
        stores.push_back(ir::make_store(y, {ir::add(ir::mul(tx, ir::make_int(4)), ir::make_int(k++))}, v));
    }
    f.body = ir::make_seq(stores);
    return f;
}

// The value types shuffle_kernel is tested on: every width, float and integer, and bool.
inline const ir::DataType kShuffleTypes[] = {
    ir::DataType::f32(), ir::DataType::f16(), ir::DataType::bf16(), ir::DataType::f64(), ir::DataType::i32(),
    ir::DataType::i16(), ir::DataType::u8(),  ir::DataType::i64(),  ir::DataType::u64(), ir::DataType::boolean()};

}  // namespace tilec::gpu_test
