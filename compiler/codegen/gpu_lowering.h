// The GPU backends' shared lowering: thread-level Tile IR (compiler/lower) -> LLVM IR,
// the same for NVPTX (nvptx_backend.cpp) and AMDGPU (amdgpu_backend.cpp). A backend
// supplies GpuTargetHooks (hardware indices, barrier, exp2/log2, 32-bit warp shuffles) and its kernel calling
// convention and attributes; everything else (the value model, conversions, memory,
// control flow) is GpuLowering's, so both backends compute the same values from the same
// IR. This header declares it; the bodies are in gpu_lowering_values.cpp (types and
// conversions), gpu_lowering_expr.cpp, gpu_lowering_stmt.cpp and gpu_lowering_memory.cpp,
// and the kernel signature, target machine and tools in gpu_lowering.cpp.
//
// Value model, as on the CPU: narrow floats (f16, bf16, f8e4m3, f8e5m2) are held in f32
// registers and rounded to nearest even where the IR says (a store, a Cast): fptrunc,
// or for the 8-bit floats, which LLVM has no type for, the conversions of
// gpu_lowering_f8.cpp (PTX cvt on sm_89+, integer arithmetic elsewhere) to and from bytes. sqrt and
// division are IEEE; exp/log/pow/sigmoid/tanh are built on the target's exp2 and log2.
//
// Internal to compiler/codegen: it includes LLVM headers, which the rest of the
// compiler never sees.
#pragma once
#include <optional>
#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "codegen/cpu_lowering.h"  // const_extent
#include "ir/ir.h"
#include "ir/tma_maps.h"
#include "support/diagnostics.h"
#include "target/target.h"

namespace tilec::codegen::gpu {

using ir::DataType;

constexpr unsigned kGlobal = 1;  // the address spaces of global and shared memory: the same on NVPTX and AMDGPU
constexpr unsigned kShared = 3;

// What one GPU target does its own way.
class GpuTargetHooks {
public:
    virtual ~GpuTargetHooks() = default;
    // "NVPTX backend", "AMDGPU backend": the prefix of internal errors.
    virtual const char* backend_name() const = 0;
    // threadIdx (thread) or blockIdx (!thread) of dimension `dim` (0..2), as an i32.
    virtual llvm::Value* hardware_index(llvm::IRBuilder<>& b, bool thread, int dim) = 0;
    // A block-wide barrier that also orders shared-memory accesses across it.
    virtual void barrier(llvm::IRBuilder<>& b) = 0;
    // 2^x and log2(x) of an f32.
    virtual llvm::Value* exp2(llvm::IRBuilder<>& b, llvm::Value* x) = 0;
    virtual llvm::Value* log2(llvm::IRBuilder<>& b, llvm::Value* x) = 0;
    // The scope of a relaxed atomic on global memory that every block of the kernel
    // must see (CUDA's atomicAdd: the device), and what the target wants to know about
    // it (AMDGPU: metadata that lets it use its float atomic instructions).
    virtual llvm::SyncScope::ID device_scope(llvm::LLVMContext& /*ctx*/) { return llvm::SyncScope::System; }
    virtual void annotate_atomic(llvm::AtomicRMWInst* /*inst*/) {}
    // One 32-bit warp shuffle `op` (ir.h, CallOp::ShflXor ...) of the i32 `value` by the
    // i32 lane operand `lane`, executed by the whole warp: the result of the lane's
    // source lane as the IR defines it.
    virtual llvm::Value* shuffle_i32(llvm::IRBuilder<>& b, ir::CallOp op, llvm::Value* value, llvm::Value* lane) = 0;
};

struct GpuBuffer {
    llvm::Value* base = nullptr;
    llvm::Type* elem = nullptr;  // storage type
    std::vector<llvm::Value*> strides;
};

// Thread-level Tile IR -> LLVM IR for one kernel, target-independent: expressions,
// statements, register buffers (allocas, promoted by SROA), shared memory (addrspace 3
// globals), loops, masks, conversions. What differs between GPUs goes through the hooks.
class GpuLowering {
public:
    GpuLowering(llvm::Module& m, llvm::Function* fn, const target::GpuTarget& t, GpuTargetHooks& hooks);
    void finish(llvm::Value* ret = nullptr);
    llvm::IRBuilder<>& builder() { return b_; }

    // The block's shared arena (the thread-level plan's bytes; every planned shared
    // buffer is an offset in it): a static array, or with `dynamic` the external
    // zero-length array that dynamic shared memory is (CUDA's `extern __shared__`),
    // sized by the launch.
    void set_shared_arena(int64_t bytes, bool dynamic);
    void bind(const ir::Var& v, llvm::Value* value) { vars_[v.get()] = value; }
    // The value block.x / .y / .z (dim 0..2) read as, instead of the hardware's index
    // (block rasterization); set before the body is lowered.
    void set_block_index(int dim, llvm::Value* v) { sregs_[dim] = v; }
    void bind_tensor(const ir::Buffer& buf, llvm::Value* base);
    // The tensor maps of `f`'s tma_load instructions (ir/tma_maps.h) and the generic
    // address of each (its __grid_constant__ parameter).
    void bind_tensor_maps(const ir::PrimFunc& f, std::vector<ir::TmaMapUse> maps, std::vector<llvm::Value*> addrs) {
        tma_func_ = &f;
        tma_maps_ = std::move(maps);
        tma_addrs_ = std::move(addrs);
    }

    // ---- types ---------------------------------------------------------------------
    llvm::Type* reg_type(DataType t);
    llvm::Type* storage_type(DataType t);
    // f16, bf16, f8e4m3, f8e5m2: held in f32 registers.
    static bool is_narrow(DataType t);
    static bool is_f8(DataType t);
    llvm::Value* to_storage(llvm::Value* v, DataType t);
    llvm::Value* from_storage(llvm::Value* v, DataType t);
    // The storage value (the bits in memory) of `e`, an expression of type `t`: a load
    // of an element of that type is its bits as they are (no decode / encode round
    // trip, which the 8-bit floats' conversions would cost).
    llvm::Value* storage_value(const ir::Expr& e, DataType t);

    // The 8-bit floats (gpu_lowering_f8.cpp): an f32 register value rounded to `t`
    // (nearest even; f8e4m3 saturates at +-448, f8e5m2 overflows to +-inf, as
    // scalar/float_formats.h says) as its byte, and a byte's exact value as f32.
    llvm::Value* f8_encode(llvm::Value* f32_value, DataType t);
    llvm::Value* f8_decode(llvm::Value* byte, DataType t);

    // Rounds an f32 register value to the narrow float `t` (and back to f32).
    llvm::Value* round_narrow(llvm::Value* v, DataType t);

    // cast<to>(v): float -> int truncates toward zero and saturates (NaN -> 0), int ->
    // int wraps, to bool is != 0, to a narrow float rounds once (the CPU's rules).
    llvm::Value* convert(llvm::Value* v, DataType from, DataType to);

    // Before sm_90, PTX converts to bf16 only from f32 (cvt.rn.bf16.f32), and LLVM goes
    // through f32 with two roundings, which can differ from one. Rounding to f32 "to
    // odd" (truncate, then set the last bit if anything was lost) keeps the information
    // that the final round-to-nearest-even to bf16 (16 fewer bits) needs: one rounding.
    llvm::Value* f64_to_f32_odd(llvm::Value* x);

    // An integer as an f32 rounded to odd (see above): its magnitude normalised to the
    // top of 64 bits, cut to 24 bits with the bits below folded into the last one (which
    // f32 holds exactly), then scaled back by a power of two (exact).
    llvm::Value* int_to_f32_odd(llvm::Value* v, DataType from);

    // ---- expressions ---------------------------------------------------------------
    llvm::Value* expr(const ir::Expr& e);
    static bool has_load(const ir::Expr& e);
    llvm::Value* branch(llvm::Value* cond, const std::function<llvm::Value*()>& t,
                        const std::function<llvm::Value*()>& f, llvm::Type* type);
    llvm::Value* var(const ir::VarNode& v);
    llvm::Value* binary(const ir::BinaryNode& e);

    // A warp shuffle of a scalar of up to 64 bits, as the 32-bit shuffles of the target
    // (ir.h, CallOp): f32 registers (f32, and f16 / bf16, which live in them) as their
    // bits, narrower integers and bools zero-extended, 64-bit values in two halves
    // shuffled from the same source lane.
    llvm::Value* shuffle(const ir::CallNode& e);
    llvm::Value* call(const ir::CallNode& e);

    // ---- memory --------------------------------------------------------------------
    GpuBuffer& buffer(const ir::Buffer& b);
    llvm::Value* element_ptr(const GpuBuffer& g, const std::vector<ir::Expr>& indices);

    // ---- statements ----------------------------------------------------------------
    void stmt(const ir::Stmt& s);

    // buffer[i] += v, relaxed (monotonic) at device scope: atomic against every thread
    // of every block, ordering nothing else, as the IR says. NVPTX: atom.global.add
    // (.f32, .f64, .u32, .u64) with an unused result; AMDGPU: its no-return global
    // atomics where the target has them (see its hooks), a compare-and-swap loop
    // elsewhere (f64 on gfx1100).
    void atomic_rmw(const ir::AtomicRmwNode& a);
    void lower_for(const ir::ForNode& f);
    // A target instruction (gpu_lowering_machine.cpp); AMD's matrix instructions in
    // amd_matrix_op (gpu_lowering_amd_matrix.cpp).
    void machine_op(const ir::MachineOpNode& m);
    void amd_matrix_op(const ir::MachineOpNode& m);
    void amd_matrix_i8(const ir::MachineOpNode& m, unsigned cd);  // i8 into i32 MFMA
    void amd_matrix_f8(const ir::MachineOpNode& m, unsigned cd);  // OCP fp8 on CDNA3's FNUZ MFMA
    void wgmma(const ir::MachineOpNode& m);
    void mma_f8(const ir::MachineOpNode& m);  // m16n8k32 on .e4m3 / .e5m2 operands
    // Inline PTX `text` whose outputs are m.dst, each tied to its m.src (none: no operands).
    void tied_registers_asm(const std::string& text, const ir::MachineOpNode& m);
    // mbarrier and TMA instructions as inline PTX (LLVM 19 has no intrinsics for them).
    void mbarrier_or_tma(const ir::MachineOpNode& m);
    // Stores a value of the storage type to the element `dst` (a Load) names.
    void store_element(const ir::Expr& dst, llvm::Value* storage_value);
    void lower_allocate(const ir::AllocateNode& a);

private:
    const ir::PrimFunc* tma_func_ = nullptr;
    std::vector<ir::TmaMapUse> tma_maps_;
    std::vector<llvm::Value*> tma_addrs_;

    llvm::Module& m_;
    llvm::LLVMContext& ctx_;
    llvm::Function* fn_;
    llvm::IRBuilder<> b_;
    llvm::Instruction* alloca_point_ = nullptr;
    llvm::Value* shared_arena_ = nullptr;
    std::unordered_map<const ir::VarNode*, llvm::Value*> vars_;
    std::unordered_map<const ir::BufferNode*, GpuBuffer> buffers_;
    llvm::Value* sregs_[6] = {};
    // Integer arithmetic emitted in the current block, by operator, operand type and
    // operands: unrolled register loops recompute the same index arithmetic (thread.x / 4,
    // a floor division's whole sequence) for every element, and the first LLVM passes
    // spent their time merging it again (flash attention: 104k lines of IR before them,
    // 7.5k after O3). Reused only in the block it was emitted in, so it dominates the use.
    using ArithKey = std::tuple<int, int, int, int, const llvm::Value*, const llvm::Value*>;
    std::map<ArithKey, llvm::Value*> arith_;
    llvm::Value* binary_value(const ir::BinaryNode& e, llvm::Value* a, llvm::Value* b);
    llvm::Value* arith(const ir::BinaryNode& e, llvm::Value* a, llvm::Value* b);
    const target::GpuTarget& target_;
    GpuTargetHooks& hooks_;
    std::string who_;
};

// The C type of a scalar parameter (as the CPU entry point and the header pass it).
llvm::Type* scalar_arg_type(llvm::LLVMContext& ctx, DataType t);

// Defines the kernel for `f` in `m`: parameters in the order of the CPU entry point
// (tensors as 16-byte-aligned global pointers, sizes as int64, scalars as their C
// types), calling convention `cc`, body lowered with `hooks`. Returns the function, for
// the backend's own attributes and metadata.
llvm::Function* emit_kernel(llvm::Module& m, const ir::PrimFunc& f, const target::GpuTarget& target,
                            GpuTargetHooks& hooks, llvm::CallingConv::ID cc);

// The target machine of a GPU backend for `target`: LLVM's target for `triple` (`who`,
// e.g. "NVPTX", names the backend and that target in internal errors), `target`'s CPU,
// `features`, relocation model `reloc`, O3 code generation.
std::unique_ptr<llvm::TargetMachine> create_target_machine(const std::string& triple,
                                                           const target::GpuTarget& target,
                                                           const std::string& features,
                                                           std::optional<llvm::Reloc::Model> reloc,
                                                           const std::string& who);

// Registers promoted, alignment inferred and adjacent loads and stores combined into
// vectors, before the O3 pipeline (see gpu_lowering.cpp).
void vectorize_early(llvm::Module& m, llvm::TargetMachine& tm, const std::string& who);

// Rewrites addresses base + f(thread) + C held across a loop (and masked copies'
// clamped ones) as (base + f'(thread)) + C, and shared addresses' 64-bit index
// arithmetic in 32 bits, after O3 (gpu_address_constants.cpp); returns how many
// addresses it rewrote.
int split_address_constants(llvm::Function& fn);
// AMD, on request: the LDS addresses of masked fills' stores narrowed to 32-bit
// arithmetic where they are (gpu_address_constants.cpp); returns how many.
int narrow_masked_fill_addresses(llvm::Function& fn);

// The first half of finish_module: attributes, verification, early vectorisation and
// O3, LLVM's errors checked. Exposed for a backend that optimises each export in its
// own module (on the driver's thread pool) and generates code for them linked together.
// `narrow_masked_fills`: AMD, also narrow_masked_fill_addresses.
void optimize_gpu_module(llvm::Module& m, llvm::TargetMachine& tm, const target::GpuTarget& target,
                         const std::string& features, const std::string& who, const std::string& llvm_errors,
                         bool narrow_masked_fills = false);

// The second half: the module as LLVM IR text (no `kind`) or as the target's assembly /
// object.
std::string emit_gpu_module(llvm::Module& m, llvm::TargetMachine& tm, const target::GpuTarget& target,
                            const std::string& who, const std::string& llvm_errors,
                            std::optional<llvm::CodeGenFileType> kind);

// The tail both GPU backends share: `target`'s CPU and `features` on every function,
// verification, early vectorisation and O3, then the module as LLVM IR text (no `kind`)
// or as the target's assembly / object. `who` names the backend in internal errors;
// `llvm_errors` is the string the module's diagnostic handler (codegen::on_llvm_diagnostic,
// module_output.h) appends to, checked after optimising and after code generation.
std::string finish_module(llvm::Module& m, llvm::TargetMachine& tm, const target::GpuTarget& target,
                          const std::string& features, const std::string& who, const std::string& llvm_errors,
                          std::optional<llvm::CodeGenFileType> kind);

// Runs `tool args...` with its standard output and error captured; returns the exit
// status (-1 if it did not exit normally, 127 if it could not be started) and the output.
struct ToolResult {
    int status = -1;
    std::string output;
};
ToolResult run_tool(const std::string& tool, const std::vector<std::string>& args);

// A fresh temporary folder (under the system's), removed when this goes out of scope.
class TempDir {
public:
    explicit TempDir(const std::string& prefix);
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::string& path() const { return path_; }

private:
    std::string path_;
};

std::string read_file_bytes(const std::string& path);
void write_file_bytes(const std::string& path, const std::string& bytes);

}  // namespace tilec::codegen::gpu
