// The warpgroup matrix instructions of NVIDIA sm_90a (issue 12), modelled from the PTX
// ISA document and nothing else, in the style of warp_mma.h: the shared-memory matrix
// descriptor, the canonical shared-memory layouts it describes, and wgmma.mma_async's
// arithmetic and accumulator fragment. The models know nothing of tilec's IR;
// tests/unit/sim_wgmma_test.cpp checks them against the document's own tables and
// examples.
//
// Sections read (PTX ISA 9.x, "Parallel Thread Execution ISA", through stored copies of
// its text found by search):
//  - 9.7.15.5.1.2 "Shared Memory Matrix Layout": K-major for imm-trans = 0, M/N-major for
//    imm-trans = 1; the swizzle atoms (Table 38); 9.7.15.5.1.2.1.1 "Leading Dimension
//    Byte Offset" and .1.2 "Stride Dimension Byte Offset" (their definition tables);
//    9.7.15.5.1.2.1.3 "Canonical Layouts" (the CuTe table, T = 128 / element bits):
//      MN-major, none:  ((T,1,m),(8,k)) : ((1,T,SBO),(1T,LBO))      Swizzle<0,4,3>
//      MN-major, 32B/64B/128B (2^s = 2/4/8):
//                       ((T,2^s,m),(8,k)) : ((1,T,LBO),(2^s T,SBO))  Swizzle<s,4,3>
//      K-major, none:   ((8,m),(T,2k)) : ((1T,SBO),(1,LBO))          Swizzle<0,4,3>
//      K-major, 32B/64B/128B: ((8,m),(T,2k)) : ((2^s T,SBO),(1,T))   Swizzle<s,4,3>
//    with its worked examples (Figures 166-170: exact layouts with their LBO and SBO).
//  - The matrix descriptor ("Matrix Descriptor Format", in the same section; the same
//    table as tcgen05's 9.7.16.4.1 without its fixed bits): bits 0-13 start address,
//    16-29 leading dimension byte offset, 32-45 stride dimension byte offset, each
//    matrix-descriptor-encode(x) = (x & 0x3FFFF) >> 4; 49-51 base offset; 62-63 swizzle
//    mode (0 none, 1 128B, 2 64B, 3 32B). "The value of base offset is 0 when the
//    repeating pattern of the specified swizzling mode starts" at a 1024 / 512 / 256-byte
//    boundary (128B / 64B / 32B swizzle).
//  - 9.7.15.5.1.1.1 "Matrix Fragments for wgmma.mma_async.m64nNk16", Figure 149 (the
//    accumulator D, .f32: N/2 registers per thread), as quoted by texts that reproduce
//    it: warp w of the warpgroup holds rows 16w .. 16w+15; thread 0 holds (0,0), (0,1),
//    (8,0), (8,1), repeated every 8 columns; the four threads of a quad hold neighbouring
//    column pairs: register i of lane l is at row 16w + l/4 + 8*((i/2) % 2), column
//    8*(i/4) + 2*(l%4) + i%2.
//  - The same section, "Multiplicand A in registers" (.f16 / .bf16: four .f16x2
//    registers a thread, elements a0..a7 low to high), Figure 148 "WGMMA .m64nNk16
//    register fragment layout for matrix A". The figure is a picture; the text that
//    reproduces it is CuTe's ALayout_64x16 (cute/atom/mma_traits_sm90_gmma.hpp,
//    "Register source layout for 16-bit value types"): (thread, value) -> m + 64 k,
//      ((4,8,4),(2,2,2)) : ((128,1,16),(64,8,512)),
//    the figure's content: warp w of the warpgroup holds rows 16w .. 16w+15; thread 0
//    holds a0, a1 at (0,0), (0,1), a2, a3 at (8,0), (8,1), a4, a5 at (0,8), (0,9), a6, a7
//    at (8,8), (8,9); the four threads of a quad hold neighbouring column pairs, the 8
//    quads of a warp its 8 rows: element i of lane l is at row 16w + l/4 + 8*((i/2) % 2),
//    column 2*(l%4) + i%2 + 8*(i/4) (the rows of mma.m16n8k16's A, Figure 79, per warp).
//    The register form of the instruction (9.7.15.5, syntax):
//      wgmma.mma_async.sync.aligned.shape.dtype.{f16,bf16}.{f16,bf16} d, a, b-desc,
//          scale-d, imm-scale-a, imm-scale-b, imm-trans-b;
//    takes no imm-trans-a (A in registers is always K-major per thread). "Accessing the
//    accumulator register or the input registers containing fragments of matrix A of a
//    wgmma.mma_async instruction without first performing a wgmma.wait_group ... that
//    waits on a wgmma-group including that wgmma.mma_async instruction is undefined."
//
// Swizzle<B,M,S> (CuTe): of a byte address, bits [M, M+B) XOR bits [M+S, M+S+B); with
// M = 4 and S = 3 the 16-byte chunks of a 2^B * 16-byte row are XORed with the row's
// index among the 2^B rows of the pattern (address bits 7..). The model applies it to
// the whole shared address, so the pattern repeats at the boundaries the base-offset
// rule names; a descriptor with a non-zero base offset is reported as not modelled.
//
//  - 9.7.15.5 "wgmma.mma_async", its syntax: the .f16 / .bf16 forms take imm-trans-a and
//    imm-trans-b (K-major or MN-major operands in shared memory) and K = 16; the 8-bit
//    float form `wgmma.mma_async.sync.aligned.m64nNk32.dtype.atype.btype d, a-desc,
//    b-desc, scale-d, imm-scale-a, imm-scale-b` (.atype / .btype each .e4m3 or .e5m2)
//    has no transpose operands and K = 32: both operands K-major, the canonical layouts
//    above with T = 128 / 8 = 16 elements a 16-byte core-matrix row. The accumulator
//    fragment of the k32 shapes is the k16 one (Figure 149: D depends on M and N only).
//
// Arithmetic: as warp_mma.h's mma.sync model (each product exact in f32, accumulated in
// f32 in k order); wgmma's D = A * B + D with scale-d = 1 (0: D = A * B). The 8-bit
// formats as warp_mma.h decodes them (e4m3_to_float, e5m2_to_float).
#pragma once
#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "sim/warp_mma.h"

namespace tilec::sim::isa {

enum class WgmmaSwizzle : uint8_t { None = 0, B128 = 1, B64 = 2, B32 = 3 };

struct WgmmaDescriptor {
    uint32_t start = 0;  // byte address in shared memory (16-byte aligned)
    uint32_t lbo = 0;    // leading dimension byte offset
    uint32_t sbo = 0;    // stride dimension byte offset
    uint32_t base_offset = 0;
    WgmmaSwizzle swizzle = WgmmaSwizzle::None;
};
WgmmaDescriptor decode_wgmma_descriptor(uint64_t desc);
uint64_t encode_wgmma_descriptor(const WgmmaDescriptor& d);

// The swizzle's width in bytes (the row of its atom): 16 for none, else 32 / 64 / 128.
uint32_t wgmma_swizzle_bytes(WgmmaSwizzle s);
// Swizzle<s,4,3> of a shared byte address.
uint32_t wgmma_swizzle_address(WgmmaSwizzle s, uint32_t addr);

// Where element (mn, k) of an operand lies (A: mn = row m; B: mn = column n), read
// through descriptor `d` as K-major (`mn_major` false) or MN-major, for elements of
// `elem_bytes` bytes: the canonical layout's byte offset from the start address, then
// the swizzle on the address.
uint32_t wgmma_operand_address(const WgmmaDescriptor& d, bool mn_major, int elem_bytes, int mn, int k);
// The canonical layout's offset alone (no swizzle), in bytes.
uint32_t wgmma_canonical_offset(const WgmmaDescriptor& d, bool mn_major, int elem_bytes, int mn, int k);

// Register i of thread t (0..127) of the warpgroup in the m64nNk16 accumulator.
MatCoord wgmma_d_coord(int thread, int i);
// Element i (a0..a7) of thread t (0..127) of the warpgroup in the .f16 / .bf16
// m64nNk16 A fragment in registers (Figure 148).
MatCoord wgmma_a_coord(int thread, int i);

enum class WgmmaProblem : uint8_t {
    ThreadNotExecuting,  // a thread of the warpgroup does not execute it (thread index)
    BaseOffsetNotModelled,
    OutOfBounds,        // an operand element outside the shared-memory view
    BadN,               // N not a multiple of 8 in 8..256
    TransposedEightBit, // imm-trans on an 8-bit operand: the document's k32 form has none
    ARegisterCount,     // A in registers: a thread gives other than 8 elements (4 .f16x2)
    ARegisterType,      // A in registers of a type other than .f16 / .bf16 (not modelled)
};
struct WgmmaIssue {
    WgmmaProblem problem;
    int thread = 0;
};
struct WgmmaResult {
    std::vector<std::vector<float>> d;  // per thread of the warpgroup, N/2 values
    std::vector<WgmmaIssue> issues;
};
// wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,bf16}.{f16,bf16} d, a-desc, b-desc,
// scale-d, 1, 1, imm-trans-a, imm-trans-b over the bytes of `smem`; `c` holds each
// thread's accumulator (N/2 values), `executes` which of the 128 threads execute it.
WgmmaResult ptx_wgmma_m64nNk16_f32(int n, MmaAbType ab, uint64_t desc_a, uint64_t desc_b, bool scale_d,
                                   bool trans_a, bool trans_b, std::span<const uint8_t> smem,
                                   const std::vector<std::vector<float>>& c, const std::array<bool, 128>& executes);

// The operand types of wgmma's floating-point forms, each operand its own (the 8-bit
// ones may mix: .e4m3.e5m2).
enum class WgmmaAbType : uint8_t { F16, Bf16, E4m3, E5m2 };
int wgmma_ab_bytes(WgmmaAbType t);  // 2 or 1
// K of one instruction: 16 for the 16-bit types, 32 for the 8-bit ones.
int wgmma_k(WgmmaAbType t);
// wgmma.mma_async.sync.aligned.m64nNk{16,32}.f32.atype.btype: the k16 form above for
// .f16 / .bf16 (a_type == b_type), the k32 form for .e4m3 / .e5m2 (trans_a / trans_b
// must be false: reported as TransposedEightBit otherwise).
WgmmaResult ptx_wgmma_f32(int n, WgmmaAbType a_type, WgmmaAbType b_type, uint64_t desc_a, uint64_t desc_b,
                          bool scale_d, bool trans_a, bool trans_b, std::span<const uint8_t> smem,
                          const std::vector<std::vector<float>>& c, const std::array<bool, 128>& executes);

// The register form: wgmma.mma_async.sync.aligned.m64nNk16.f32.atype.btype d, a, b-desc,
// scale-d, 1, 1, imm-trans-b with .atype = .btype .f16 or .bf16; `a` holds each thread's
// A elements a0..a7 (Figure 148, the values already of the type), `c` its accumulators.
// A thread whose `a` has other than 8 elements is reported (ARegisterCount, that thread)
// and the result left 0; so is an 8-bit type (ARegisterType: the k32 register form is
// not modelled).
WgmmaResult ptx_wgmma_rs_f32(int n, WgmmaAbType ab, const std::vector<std::vector<float>>& a, uint64_t desc_b,
                             bool scale_d, bool trans_b, std::span<const uint8_t> smem,
                             const std::vector<std::vector<float>>& c, const std::array<bool, 128>& executes);

}  // namespace tilec::sim::isa
