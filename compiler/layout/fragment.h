// Fragment: where each element of a register tile lives, as a map from a tile
// coordinate to (thread, register index), with replication: an element may be held by
// several threads (after a reduction is broadcast, or an mma operand shared by the
// warps of one row). Constructors for the fragments lowering needs: parallel loops,
// fully replicated and row-replicated (reduced) tiles, and the mma.sync m16n8k16
// A / B / accumulator fragments of the PTX ISA, and the accumulators of AMD's MFMA / WMMA.
//
// Like Layout, a Fragment is held as Tile IR index expressions: `thread` and `reg`
// over one placeholder var per dimension plus `rep`, the replica number in
// [0, replicate()), so (coordinate, rep) -> (thread, reg) is one slot per replica.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/ir.h"
#include "layout/layout.h"

namespace tilec::layout {

struct DigitMap;

struct FragmentSlot {
    int64_t thread;
    int64_t reg;
    friend bool operator==(const FragmentSlot& a, const FragmentSlot& b) {
        return a.thread == b.thread && a.reg == b.reg;
    }
};

class Fragment {
public:
    // A parallel loop over `shape` run by `threads` threads: the row-major elements cut
    // into vectors of `vector_width`, vector v held by thread v % threads (strided, so a
    // warp's accesses are contiguous: coalesced global loads), registers in order. With
    // fewer vectors than threads, threads beyond them hold replicas. nullopt when the
    // sizes don't divide (size % vector_width, vectors vs threads).
    static std::optional<Fragment> parallel(std::vector<int64_t> shape, int64_t threads, int64_t vector_width = 1);
    // Every thread holds the whole (small) tile: registers row-major, replicate = threads.
    static Fragment broadcast(std::vector<int64_t> shape, int64_t threads);

    // mma.sync.aligned.m16n8k16 fragments (PTX ISA 8.x, section 9.7.14.5.8 "Matrix
    // Fragments for mma.m16n8k16 with floating point type": .f16/.bf16 A (Figure 79),
    // B and the .f16/.f32 accumulators C/D), tiled over a block: warps in a
    // warps_m x warps_n grid (warp w = wm * warps_n + wn, threads 32 * w + lane), each
    // warp a (rows / warps_m) x (cols / warps_n) tile of 16x8 (C), 16x16 (A) or 16x8
    // (B, K x N) atoms, registers atom by atom (row-major over atoms), the ISA's register
    // order inside one. A [M, K] is replicated over warps_n, B [K, N] over warps_m.
    // nullopt if the tile doesn't divide into atoms.
    static std::optional<Fragment> mma_m16n8k16_a(int64_t m, int64_t k, int64_t warps_m, int64_t warps_n);
    static std::optional<Fragment> mma_m16n8k16_b(int64_t k, int64_t n, int64_t warps_m, int64_t warps_n);
    static std::optional<Fragment> mma_m16n8k16_c(int64_t m, int64_t n, int64_t warps_m, int64_t warps_n);
    // The same C atoms with the warps' rows interleaved: warp row wm holds atom rows
    // wm, wm + warps_m, ... (16 rows each), as a warpgroup's wgmma accumulator holds them
    // (wgmma_m64nNk16_d with warps_m = 4 per group), so that an mma.sync accumulator and
    // a wgmma one of the same rows agree on which warp owns a row.
    static std::optional<Fragment> mma_m16n8k16_c_interleaved(int64_t m, int64_t n, int64_t warps_m, int64_t warps_n);

    // The wgmma.mma_async.m64nNk16 accumulator D (PTX ISA 9.0, 9.7.15.5.1.1.1, Figure
    // 149: warp w of a warpgroup holds rows 16w..16w+15 of the 64, as the m16n8 C atoms
    // along N), tiled over a block: warpgroups in a groups_m x groups_n grid (group g =
    // gm * groups_n + gn, threads 128 * g + t), each group (rows / groups_m) x
    // (cols / groups_n), m64 tiles one after another in its registers (the registers
    // of one wgmma contiguous, in the ISA's order). nullopt if the tile doesn't divide.
    static std::optional<Fragment> wgmma_m64nNk16_d(int64_t m, int64_t n, int64_t groups_m, int64_t groups_n);

    // The accumulators of AMD's matrix instructions (C and D share one layout), tiled as
    // mma_m16n8k16_c tiles its atoms: waves of `wave` lanes in a warps_m x warps_n grid,
    // each (rows / warps_m) x (cols / warps_n) of atoms, an atom's registers contiguous,
    // atoms row-major. The atoms, as AMD's Matrix Instruction Calculator gives them
    // ("Register to matrix element mapping", lane l, GPR g):
    //   Mfma32   CDNA2/3 v_mfma_f32_32x32x8{f16,bf16_1k} (wave64, 16 GPRs):
    //            i = 8 * (g / 4) + 4 * (l / 32) + g % 4,  j = l % 32
    //   Mfma16   CDNA2/3 v_mfma_f32_16x16x16{f16,bf16_1k} (wave64, 4 GPRs):
    //            i = 4 * (l / 16) + g % 4,  j = l % 16
    //   Wmma16   RDNA3 v_wmma_f32_16x16x16_{f16,bf16} (wave32, 8 GPRs):
    //            i = 2 * g + l / 16,  j = l % 16
    //   Mfma32T, Mfma16T  the same instructions issued with A and B swapped, which
    //            compute D^T: the accumulator of C = A B held as Mfma32 / Mfma16 hold C^T,
    //            i and j exchanged (Mfma16T: i = l % 16, j = 4 * (l / 16) + g % 4). A lane
    //            then holds one row of each atom, at the K slots the A operand of the next
    //            MFMA wants: flash attention's p @ v reads p from its registers.
    // nullopt if the tile doesn't divide into atoms.
    enum class AmdMatrixAtom : uint8_t { Mfma32, Mfma16, Wmma16, Mfma32T, Mfma16T };
    static std::optional<Fragment> amd_matrix_c(AmdMatrixAtom atom, int64_t m, int64_t n, int64_t warps_m,
                                                int64_t warps_n);

    // Any fragment given by expressions: fn(vars, rep) -> (thread, reg). Registers per
    // thread are counted by enumeration.
    using ExprFn = std::function<std::pair<ir::Expr, ir::Expr>(const std::vector<ir::Var>&, const ir::Var& rep)>;
    static Fragment from_exprs(std::string name, std::vector<int64_t> shape, int64_t threads, int64_t replicate,
                               const ExprFn& fn);

    // The fragment of the result of reducing dimension `dim` (e.g. a row max of an mma
    // accumulator): an element is held by every thread that held part of its row, so
    // the threads over `dim` become replicas and their registers go. `keep_dim` leaves
    // the dimension with extent 1. nullopt for fragments built from expressions.
    std::optional<Fragment> reduce_dim(size_t dim, bool keep_dim = false) const;
    // The converse of reduce_dim: a fragment over a shape with a new dimension `dim` of
    // `extent` (or, with `replace_unit_dim`, dimension `dim` of extent 1 widened to
    // `extent`) whose reduce_dim(dim) holds every element where this fragment does. The
    // replicas' threads take the new dimension's chunks (a vector of up to 4 registers,
    // then the replica threads, then further registers), so a parallel loop over the wider
    // shape reads this fragment's element of its row from its own registers. Replica
    // digits that do not divide the extent stay replicas. nullopt for fragments built from
    // expressions or an extent the vector/replicas cannot tile.
    std::optional<Fragment> expand_dim(size_t dim, int64_t extent, bool replace_unit_dim = false) const;
    // Same shape, threads and registers, and every element held in the same slots (the
    // expressions may differ): the two fragments are one layout.
    bool same_slots(const Fragment& other) const;
    // this(inner(x)): the same registers addressed through a layout whose codomain is
    // this fragment's shape (a reshape view, a transpose).
    Fragment compose(const Layout& inner) const;
    std::optional<Fragment> reshape(const std::vector<int64_t>& new_shape) const;

    const std::string& name() const { return name_; }
    const std::vector<int64_t>& shape() const { return shape_; }
    size_t rank() const { return shape_.size(); }
    int64_t size() const;
    int64_t thread_count() const { return threads_; }
    int64_t registers_per_thread() const { return regs_; }
    int64_t replicate() const { return replicate_; }

    const std::vector<ir::Var>& vars() const { return vars_; }
    const ir::Var& rep_var() const { return rep_var_; }
    const ir::Expr& thread_index() const { return thread_; }
    const ir::Expr& register_index() const { return reg_; }
    // (thread, reg) expressions of coordinate expressions and a replica number.
    std::pair<ir::Expr, ir::Expr> apply(const std::vector<ir::Expr>& coord, const ir::Expr& rep) const;
    FragmentSlot evaluate(const std::vector<int64_t>& coord, int64_t rep = 0) const;
    // The slots of all replicas of one element.
    std::vector<FragmentSlot> owners(const std::vector<int64_t>& coord) const;
    // Every element's owners at once, element by element in row-major order: for each,
    // its replicate() (thread, reg) pairs, sorted, as 2 * replicate() numbers. Computed
    // once per mapping and shared with same_slots: checks that visit every element (the
    // copy lowerings') read it instead of evaluating the expressions again.
    std::shared_ptr<const std::vector<int64_t>> all_owners() const { return slot_table(); }

    // Every replica of every element sits in a slot in range (thread < thread_count,
    // reg < registers_per_thread): every element is held by some thread.
    bool is_complete() const;
    // No slot holds two (element, replica) pairs, and the replicas of an element are in
    // distinct threads: each element is held by exactly replicate() threads.
    bool is_injective() const;
    // Complete, injective, and every slot used: no idle registers or threads.
    bool is_exact() const;

    // (thread, reg) -> (coordinate..., rep [if replicate > 1]) where this fragment is
    // exact and built from invertible pieces; lowering uses it to give each thread's
    // registers their coordinates. Its inverse() is this fragment's map again.
    std::optional<Layout> inverse() const;

    // "mma_c[16, 8] -> 32 threads x 4 regs: (i, j) -> thread ..., reg ..."; with
    // replication "(i; rep < 4) -> ...".
    std::string str() const;

private:
    Fragment() = default;
    static Fragment from_digits(std::string name, const DigitMap& digits, int64_t threads);
    std::string name_;
    std::vector<int64_t> shape_;
    int64_t threads_ = 0, regs_ = 0, replicate_ = 1;
    std::vector<ir::Var> vars_;
    ir::Var rep_var_;
    ir::Expr thread_, reg_;
    std::shared_ptr<const DigitMap> digits_;
    std::optional<Layout> inverse_;
    // same_slots compares every coordinate's owners, and layout inference asks it of the
    // same fragments again and again (flash attention: a fifth of the GPU passes' time in
    // evaluating them): the owners are computed once per mapping and kept here, shared by
    // copies and recomputed when the mapping they were taken from is not this one's.
    // The thread and register expressions are compiled (IndexProgram) on the first
    // evaluation and kept beside the table, under the same rule.
    struct Mapping;
    struct SlotTable;
    struct Programs;
    Mapping mapping() const;
    std::shared_ptr<const Programs> programs() const;
    std::shared_ptr<const std::vector<int64_t>> slot_table() const;
    static std::shared_ptr<SlotTable> new_slot_table();
    std::shared_ptr<SlotTable> slot_table_ = new_slot_table();
};

}  // namespace tilec::layout
