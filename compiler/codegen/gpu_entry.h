// GPU images in the host object and the GPU entry points that launch them.
//
// The driver compiles the device code (cubins and PTX for sm_XX targets, HSACO for gfx
// targets) and hands the bytes here as a GpuEmbedding; compile_cpu (CpuOptions::gpu) then
// writes into the same host LLVM module, for the whole file:
//   the image bytes           internal constants in section .rodata.tilec.gpu
//                             (tilec.gpu.cubin.sm_80, tilec.gpu.ptx.compute_80,
//                             tilec.gpu.hsaco.gfx942, ...)
//   tile_gpu_image[]          tilec.gpu.images (kind, arch, data, size), constant
//   tile_gpu_module           tilec.gpu.module, writable: its `cache` slot starts NULL and
//                             is the runtime's (module loaded once per context/device)
// and per export and API:
//   tile_status NAME_cuda(void* stream, <tensors>, <sizes>, <scalars>)
//   tile_status NAME_hip (void* stream, <tensors>, <sizes>, <scalars>)
// which check the arguments as NAME_cpu does (entry_checks.h; plus 16-byte alignment of
// tensors and the API's grid limits), return TILE_SUCCESS for an empty grid without
// touching the driver, and otherwise call tile_cuda_launch / tile_hip_launch. One module
// serves both APIs: each launcher only looks at its own image kinds. No LLVM in this
// header.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "ir/tma_maps.h"

namespace llvm {
class Module;
}

namespace tilec::codegen {

class ModuleState;

// The values of tile_gpu_image_kind (tile/runtime.h; ABI).
enum class GpuImageKind : uint32_t { Cubin = 1, Ptx = 2, Hsaco = 3 };

struct GpuImage {
    GpuImageKind kind = GpuImageKind::Cubin;
    std::string arch;  // "sm_80", "compute_80", "gfx942"
    std::string data;  // the image's bytes (PTX: the text; a NUL is appended when embedded)
};

enum class GpuApi { Cuda, Hip };

// One kernel in the images and how its entry point launches it.
struct GpuKernel {
    std::string export_name;   // the ir::PrimFunc (tile level) whose arguments it takes
    std::string symbol;        // the kernel's name in the images (PTX .entry)
    int64_t threads = 0;       // the block: threads x 1 x 1
    // The block of the images of tma_archs where it differs (warp-specialized kernels: a
    // producer warpgroup more); 0: threads.
    int64_t tma_threads = 0;
    // Bytes of dynamic shared memory per launch, per API (the plan is the same on every
    // arch, but NVIDIA needs dynamic shared memory above 48 KiB where AMD's LDS is static).
    int64_t cuda_dynamic_smem = 0;
    int64_t hip_dynamic_smem = 0;
    bool cuda = false;         // emit NAME_cuda
    bool hip = false;          // emit NAME_hip
    // The tensor maps of its TMA copies (ir/tma_maps.h), the same in every image whose
    // kernel takes them, and those images' archs ("sm_90a"): NAME_cuda then encodes them
    // (tile_cuda_launch_tma) for those images only.
    std::vector<ir::TmaMapUse> tma_maps;
    std::vector<std::string> tma_archs;
    // Thread-block clusters of an image (lower/cluster_multicast.cpp: x x y x 1, its PTX's
    // .reqnctapercluster): NAME_cuda rounds the grid's x and y up to multiples of them, as
    // the lowered kernel's grid is (the extra blocks' copies and stores are masked). 1: none.
    int64_t cluster_x = 1;
    int64_t cluster_y = 1;
};

struct GpuEmbedding {
    std::string module_name;  // tile_gpu_module.name, for the runtime's messages
    std::vector<GpuImage> images;
    std::vector<GpuKernel> kernels;
};

// NAME_cuda / NAME_hip.
std::string gpu_entry_name(const std::string& export_name, GpuApi api);

// The arch label of PTX assembled for `sm_arch`: its row's ptx_arch (sm_80 -> compute_80,
// sm_90a -> compute_90a).
std::string ptx_arch_label(const std::string& sm_arch);

// Writes the images, the module and the entry points into the host module. Every kernel
// must name a function of `module`; its parameters are the kernel's, in order (the NVPTX
// backend declares the kernel's parameters as the C entry point's). Internal errors on
// inconsistent input.
void emit_gpu_embedding(ModuleState& ms, const ir::Module& module, const GpuEmbedding& gpu);

// Replaces the bytes of each image global emit_gpu_embedding wrote (tilec.gpu.KIND.ARCH)
// with `images`' (the same kinds and archs in the same order), each new global where the
// old one was, with its attributes, and the sizes in the image table: the module
// emit_gpu_embedding would have written with these bytes. Used after the host module's
// optimisation (cpu_backend.h, optimize_cpu / emit_cpu). A module without the table (none
// written: no kernels; or O3 removed it with the images: no entry point can launch) has
// nothing to fill.
void fill_gpu_images(llvm::Module& m, const std::vector<GpuImage>& images);

}  // namespace tilec::codegen
