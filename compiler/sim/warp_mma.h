// The tensor-core instructions of NVIDIA sm_80/86/89 (issue 11), modelled one by one from
// the PTX ISA document and nothing else, in the style of warp_isa.h: ldmatrix (warp-level
// matrix load), mma.sync (warp-level matrix multiply-accumulate) and cp.async with its
// group completion (commit_group / wait_group). Operands are what the document says they
// are: b32 registers per lane, byte addresses into a shared-memory view. The models know
// nothing of tilec's IR; tests/unit/sim_warp_mma_test.cpp checks them against the
// document's own statements, figures and formulas. What the document calls undefined is
// reported as a problem, never guessed (a placeholder value, 0, stands in the result).
//
// Sections read (PTX ISA 8.x/9.0, "Parallel Thread Execution ISA"; read through stored
// copies of the document's text found by search, not NVIDIA's site itself: the PTX 9.0
// instruction descriptions, and quotations of the fragment sections and figures):
//  - 9.7.14.5.15 "Warp-level matrix load instruction: ldmatrix" (numbers here as an
//    index of the PTX 8.x document gives them), its description text, which says what
//    its Figure 104 of the 8x8 fragment shows ("A group of four threads loads an entire
//    row of the matrix"; the figure itself was not read).
//  - 9.7.14.5.8 "Matrix Fragments for mma.m16n8k16 with floating point type" (Figure 79,
//    A for .f16/.bf16, and its row/col formulas for a_i, b_i, c_i/d_i), 9.7.14.5.7 "...
//    for mma.m16n8k8" (.f16/.bf16) and 9.7.14.5.10 "... for mma.m16n8k32" (Figure 88, A
//    for .s8/.u8); 9.7.14.5.14 "Multiply-and-Accumulate Instruction: mma" (description,
//    syntax).
//  - "Data Movement and Conversion Instructions: cp.async", 9.7.9.25.3.2 "...:
//    cp.async.commit_group" and 9.7.9.25.3.3 "...: cp.async.wait_group /
//    cp.async.wait_all" (that copy's numbering; 9.7.9.26.3.x in a later version).
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace tilec::sim::isa {

// ---------------------------------------------------------------------------------
// ldmatrix.sync.aligned.m8n8.num{.trans}.shared{::cta}.b16  r, [p];   .num = .x1/.x2/.x4
//
// The document: "Collectively load one or more matrices across all threads in a warp";
// "Each address corresponds to the start of a matrix row. Addresses addr0-addr7
// correspond to the rows of the first matrix, addresses addr8-addr15 correspond to the
// rows of the second matrix, and so on" (the addresses come from lanes 0-7, 8-15, 16-23,
// 24-31; for .x1 only lanes 0-7's, for .x2 lanes 0-15's are used); "Consecutive instances
// of row need not be stored contiguously in memory"; "When reading 8x8 matrices, a group
// of four consecutive threads loads 16 bytes. The matrix addresses must be naturally
// aligned accordingly" (a row is 8 b16 = 16 bytes: each row address 16-byte aligned);
// "Each thread in a warp loads fragments of a row, with thread 0 receiving the first
// fragment in its register r" and "A group of four threads loads an entire row" (so, as
// issue 11 states the figure: lane l holds row l/4, elements 2*(l%4) and 2*(l%4)+1, the
// lower-numbered element in the register's low 16 bits, as in the mma fragments); "When .num = .x2, the
// elements of the second matrix are loaded in the next destination register ... .x4, ... third and fourth
// matrices ... in the subsequent destination registers"; "Optional qualifier .trans
// indicates that the matrix is loaded in column-major format" (lane l then holds column
// l/4, rows 2*(l%4) and 2*(l%4)+1 of the matrix as stored). Elements are little-endian
// b16 in the view.
//
// Problems: "The behavior of ldmatrix is undefined if all threads do not use the same
// qualifiers, or if any thread in the warp has exited"; ".aligned ... all threads in the
// warp must execute the same ldmatrix instruction"; misaligned row addresses; a row
// outside the shared-memory view (the document: generic addresses outside .shared are
// undefined; here the view is the whole of what exists).
struct LdmatrixLane {
    bool executes = true;  // the lane executes this ldmatrix
    bool exited = false;   // the lane has exited (or does not exist)
    uint32_t addr = 0;     // the row address it supplies (shared-window byte address)
};
enum class LdmatrixProblem : uint8_t {
    LaneExited,        // `lane` has exited: undefined for the whole warp
    LaneNotExecuting,  // `lane` does not execute it (.sync.aligned: all 32 must)
    RowMisaligned,     // `lane`'s row address (a used one) is not 16-byte aligned
    RowOutOfBounds,    // `lane`'s row [addr, addr+16) is outside the shared view
};
struct LdmatrixIssue {
    LdmatrixProblem problem;
    int lane = 0;
};
struct LdmatrixResult {
    std::array<std::array<uint32_t, 4>, 32> r{};  // r[lane][i], i < num
    std::vector<LdmatrixIssue> issues;
};
// `num`: 1, 2 or 4.
LdmatrixResult ptx_ldmatrix_m8n8_b16(int num, bool trans, std::span<const uint8_t> smem,
                                     const std::array<LdmatrixLane, 32>& lanes);

// ---------------------------------------------------------------------------------
// mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32  d, a, b, c;
// mma.sync.aligned.m16n8k8.row.col.f32.{f16,bf16}.{f16,bf16}.f32   d, a, b, c;
// mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32                  d, a, b, c;
// D (MxN) = A (MxK) * B (KxN) + C (MxN).
//
// Fragments (the document's formulas; groupID = %laneid >> 2, threadID_in_group =
// %laneid % 4; a register .f16x2/.bf16x2 holds elements 2j (low 16 bits) and 2j+1):
//  m16n8k16, A: a0..a7 in 4 registers:
//     row = groupID for a_i, 0 <= i < 2 || 4 <= i < 6; groupID + 8 otherwise
//     col = threadID_in_group*2 + (i & 0x1) for i < 4; ... + 8 for i >= 4
//  m16n8k16, B: b0..b3 in 2 registers:
//     row = threadID_in_group*2 + (i & 0x1) for i < 2; ... + 8 for i >= 2;  col = groupID
//  m16n8k8, A: a0..a3 in 2 registers: row = groupID for i < 2, groupID + 8 otherwise;
//     col = threadID_in_group*2 + (i & 0x1)
//  m16n8k8, B: b0, b1 in 1 register: row = threadID_in_group*2 + i; col = groupID
//  both, C/D (.f32): c0..c3 / d0..d3 in 4 registers:
//     row = groupID for i < 2, groupID + 8 otherwise; col = threadID_in_group*2 + (i & 0x1)
//
// Arithmetic (the document fixes neither the order of the K additions nor intermediate
// precision): each product a*b of two f16 (11-bit significands) or two bf16 (8-bit) is
// exact in f32 (22 or 16 significand bits) unless it leaves f32's range, so the model
// forms it in f32 and accumulates in f32, round-to-nearest-even, in the order
//     d = c;  for k = 0 .. K-1:  d = fl32(d + fl32(a[m][k] * b[k][n]))
// Hardware may differ from this in the last bits for inputs whose partial sums round;
// for inputs whose sums are exact in f32 (small integers, few significant bits) the
// result is the exact one and order does not matter.
//
// Problems: "The mandatory .sync qualifier indicates that mma instruction causes the
// executing thread to wait until all threads in the warp execute the same mma
// instruction"; ".aligned ... all threads in the warp must execute the same mma
// instruction"; "The behavior of mma instruction is undefined if all threads in the same warp
// do not use the same qualifiers, or if any thread in the warp has exited."
//
// mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32  d, a, b, c;  ("Matrix Fragments for
// mma.m16n8k32", .s8: four .s8 elements per .b32 register, a_i / b_i in the order low
// byte to high byte):
//  A: a0..a15 in 4 registers: row = groupID for a_i, 0 <= i < 4 || 8 <= i < 12; groupID
//     + 8 otherwise; col = threadID_in_group*4 + (i & 0x3) for i < 8; ... + 16 for i >= 8
//  B: b0..b7 in 2 registers: row = threadID_in_group*4 + (i & 0x3) for i < 4; ... + 16
//     for i >= 4; col = groupID
//  C/D (.s32): as for the floating-point shapes.
// The integer sum is exact (computed in 64 bits). The syntax's optional {.satfinite}
// (clamping) is not modelled, and the text read does not say what an s32 overflow gives
// without it: such a result is reported (Int32Overflow) and 0 stands in that element.
//
// mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32  d, a, b, c;  (9.7.14.5.7, "Matrix
// Fragments for mma.m16n8k8", .tf32: one .tf32 element per .b32 register, Figure 72):
//  A: a0..a3 in 4 registers: row = groupID for a0 and a2, groupID + 8 for a1 and a3;
//     col = threadID_in_group for a0 and a1, threadID_in_group + 4 for a2 and a3
//  B: b0, b1 in 2 registers: row = threadID_in_group for b0, + 4 for b1; col = groupID
//  C/D (.f32): as for the other shapes.
// A .tf32 operand is a .b32 register holding a tf32 value as cvt.rna.tf32.f32 leaves it:
// f32's sign, 8-bit exponent and the top 10 mantissa bits, the low 13 bits zero. The
// model reads the value with those 13 bits cleared (tilec always converts first, so
// they are zero); products of two 11-bit significands are exact in f32 and accumulate
// as for f16.
//
// mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16  d, a, b, c;  (9.7.14.5.8, C/D .f16:
// "two .f16x2 registers", c0..c3 / d0..d3 at the .f32 formulas, element 2j in the low
// half of register j). The document fixes neither the order of the additions nor the
// precision of the partial sums; the model sums the exact products onto c in f32, in
// the order above, and rounds d once to f16 (round to nearest even).
//
// mma.sync.aligned.m16n8k32.row.col.f32.{e4m3,e5m2}.{e4m3,e5m2}.f32  d, a, b, c;  (sm_89+,
// PTX ISA 8.4; 9.7.14.5.10: the .e4m3 / .e5m2 rows of its A and B tables hold four
// elements per .b32 register, and Figures 88, 90 and 91 and their formulas are the ones
// of .s8 / .u8 above; C/D .f32 as for the other shapes). The element formats are those
// of the document's "Alternate Floating Point Data Formats": .e4m3 with 4 exponent bits
// (bias 7), 3 mantissa bits, no infinities and S.1111.111 the only NaN; .e5m2 with 5
// exponent bits (bias 15), 2 mantissa bits and IEEE infinities and NaNs. A product of
// two such values (at most 4 significant bits each) is exact in f32; the sum is formed
// as for f16, in f32 in the order k = 0 .. 31.
enum class MmaShape : uint8_t { M16N8K16, M16N8K8, M16N8K32 };
enum class MmaAbType : uint8_t { F16, Bf16, Tf32 };

struct MmaShapeInfo {
    int m, n, k, a_regs, b_regs, c_regs;
    int per_reg;  // A/B elements per .b32 register: 1 (tf32), 2 (f16, bf16) or 4 (s8)
};
MmaShapeInfo mma_shape_info(MmaShape shape, MmaAbType ab = MmaAbType::F16);

// The document's fragment formulas: where element i of a lane's A / B / C (= D) fragment
// lies in the full matrix (`ab` tells the .tf32 fragments of m16n8k8 from the others).
struct MatCoord {
    int row = 0, col = 0;
};
MatCoord mma_a_coord(MmaShape shape, int lane, int i, MmaAbType ab = MmaAbType::F16);
MatCoord mma_b_coord(MmaShape shape, int lane, int i, MmaAbType ab = MmaAbType::F16);
MatCoord mma_c_coord(MmaShape shape, int lane, int i);

struct MmaLane {
    bool executes = true;
    bool exited = false;
    std::array<uint32_t, 4> a{};  // .f16x2/.bf16x2 registers (a_regs used)
    std::array<uint32_t, 2> b{};  // (b_regs used)
    std::array<uint32_t, 4> c{};  // .f32 bits
};
enum class MmaProblem : uint8_t {
    LaneExited,
    LaneNotExecuting,
    ShapeTypeMismatch,  // the shape is not one this entry point models (lane -1)
    Int32Overflow,      // s32 result element (row, col) = (lane / 8, lane % 8) overflows
};
struct MmaIssue {
    MmaProblem problem;
    int lane = 0;
};
struct MmaResult {
    std::array<std::array<uint32_t, 4>, 32> d{};  // .f32 bits per lane
    std::vector<MmaIssue> issues;
};
MmaResult ptx_mma_sync_f32(MmaShape shape, MmaAbType ab, const std::array<MmaLane, 32>& lanes);
// m16n8k32 .s32.s8.s8.s32 (.u8 for an unsigned operand): `c` and `d` hold s32 bits.
MmaResult ptx_mma_sync_s32_s8(const std::array<MmaLane, 32>& lanes, bool a_unsigned = false,
                              bool b_unsigned = false);
// m16n8k16 .f16.f16.f16.f16: `c` and `d` hold two .f16x2 registers (c[0], c[1]).
MmaResult ptx_mma_sync_f16(const std::array<MmaLane, 32>& lanes);
// m16n8k32 .f32.{e4m3,e5m2}.{e4m3,e5m2}.f32: A's elements .e5m2 when `a_e5m2`, else
// .e4m3; B's likewise; `c` and `d` hold .f32 bits.
MmaResult ptx_mma_sync_f32_f8(const std::array<MmaLane, 32>& lanes, bool a_e5m2, bool b_e5m2);

// cvt.rna.tf32.f32 d, a ("Data Movement and Conversion Instructions: cvt": .rna is
// "round to nearest, ties away from zero"; the .tf32 result is a .b32 register): a
// finite f32 rounded to 10 mantissa bits, the low 13 bits of the result zero. NaN and
// infinity pass through as f32 bits (the model is not used for them).
uint32_t ptx_cvt_rna_tf32_f32(float a);

// The element decoders the model uses (exact): f16 (IEEE binary16) and bf16 bits to f32.
float f16_to_float(uint16_t bits);
float bf16_to_float(uint16_t bits);
// And the 8-bit formats of the fp8 mma (see above), exact in f32.
float e4m3_to_float(uint8_t bits);
float e5m2_to_float(uint8_t bits);

// ---------------------------------------------------------------------------------
// cp.async.{ca,cg}.shared.global [dst], [src], cp-size{, src-size};
// cp.async.commit_group;  cp.async.wait_group N;  cp.async.wait_all;
//
// One thread's state (the document: commit_group "creates a new cp.async-group per
// thread and batches all prior cp.async instructions initiated by the executing thread
// but not committed to any cp.async-group into the new cp.async-group. If there are no
// uncommitted cp.async instructions then cp.async.commit_group results in an empty
// cp.async-group"; wait_group "will cause executing thread to wait till only N or fewer
// of the most recent cp.async-groups are pending and all the prior cp.async-groups
// committed by the executing threads are complete"; "cp.async.wait_all is equivalent to:
// cp.async.commit_group; cp.async.wait_group 0;"; "Writes performed by cp.async
// operations are made visible to the executing thread only after ... the completion of
// cp.async.wait_group on the cp.async-group in which the cp.async belongs to").
//
// The model lands a copy's bytes in the shared view exactly when its group completes
// (the latest moment the document allows), and reports an access to a destination byte
// whose copy has not completed: the missing wait. The source bytes are taken when the
// cp.async is issued (the model does not see later writes to global memory).
// From cp.async's text: "cp-size can only be 4, 8 and 16"; "src-size ... must be less
// than cp-size. In such case, remaining bytes in destination dst are filled with zeros.
// Specifying src-size larger than cp-size results in undefined behavior"; ignore-src:
// "zeros will be copied to destination dst"; .cg takes cp-size 16 only (its syntax);
// alignment per "Addresses as Operands" (an address naturally aligned to the access
// size: dst % cp-size == 0); and from commit_group's: "two or more cp.async operations
// within a cp.async-group copying data to the same location results in undefined
// behavior".
enum class CpAsyncProblem : uint8_t {
    BadCpSize,        // cp-size not 4, 8 or 16 (or .cg with cp-size != 16)
    SrcSizeTooLarge,  // src-size > cp-size (undefined), or more than the source bytes given
    DstMisaligned,    // dst not a multiple of cp-size
    DstOutOfBounds,   // [dst, dst + cp-size) outside the shared view
    SameDstInGroup,   // two copies of one group (or of the uncommitted batch) overlap
    ReadBeforeWait,   // a read of a byte whose cp.async has not completed (missing wait)
    WriteBeforeWait,  // a write to such a byte (unordered with the copy)
    BadWaitN,         // wait_group with N < 0
};
struct CpAsyncIssue {
    CpAsyncProblem problem;
    uint32_t addr = 0;  // the byte range concerned
    uint32_t size = 0;
};

class CpAsyncThread {
public:
    explicit CpAsyncThread(std::vector<uint8_t>& smem) : smem_(smem) {}

    // `src`: the source bytes (at least src-size of them); `src_size` < 0: = cp_size.
    void cp_async(uint32_t dst, std::span<const uint8_t> src, int cp_size, int src_size = -1,
                  bool ignore_src = false, bool cg = false);
    void commit_group();
    void wait_group(int n);
    void wait_all();

    // A load / store of the executing thread, checked against the incomplete copies.
    // read() returns the view's bytes (a pending destination byte reads what the view
    // holds then: the old contents).
    std::vector<uint8_t> read(uint32_t addr, uint32_t size);
    void write(uint32_t addr, std::span<const uint8_t> bytes);

    int committed_pending_groups() const { return static_cast<int>(groups_.size()); }
    // Called for each copy as its bytes land in the view (at the wait that completes its
    // group), so a user of the model can follow when the destination becomes readable.
    std::function<void(uint32_t dst, uint32_t size)> on_complete;
    int uncommitted_copies() const { return static_cast<int>(open_.size()); }
    const std::vector<CpAsyncIssue>& issues() const { return issues_; }

private:
    struct Copy {
        uint32_t dst = 0;
        std::vector<uint8_t> bytes;  // cp-size bytes: src-size of data, then zeros
    };
    void complete(const std::vector<Copy>& group);
    bool pending_overlap(uint32_t addr, uint32_t size) const;

    std::vector<uint8_t>& smem_;
    std::vector<Copy> open_;                 // issued, not yet committed
    std::vector<std::vector<Copy>> groups_;  // committed and pending, oldest first
    std::vector<CpAsyncIssue> issues_;
};

}  // namespace tilec::sim::isa
