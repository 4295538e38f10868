// What every generated C entry point (NAME_cpu, NAME_cuda, NAME_hip) shares: its C
// signature (a leading pointer, then the export's tensors, sizes and scalars) and the
// checks of its arguments, emitted once here so that all three report the same rules in
// the same order with the same words, named after the entry point:
//   sizes >= 0; every division in a derived dimension exact (by a positive divisor) and
//   the dimension >= 0; no arithmetic on sizes (derived dimensions, grid extents)
//   overflowing int64 or dividing by zero; a tensor NULL only without elements; each
//   tensor's bytes within int64; [GPU] each tensor aligned; each grid extent >= 0 and
//   [GPU] within the API's limit. A call with no output element runs nothing (below).
// A failed check returns tile_set_error(TILE_ERROR_INVALID_ARGUMENT, "<entry>: ...").
// Internal to compiler/codegen (LLVM types through cpu_lowering.h's declarations).
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/cpu_lowering.h"
#include "ir/ir.h"

namespace tilec::codegen {

// `tile_status entry(void* first, <tensors as ptr>, <sizes as i64>, <scalars as their C
// types>)`, external, nounwind, small integer scalars sign/zero-extended as clang marks
// them; argument 0 is named `first_name` ("opt", "stream"), the others after the
// parameters.
llvm::Function* declare_entry_function(ModuleState& ms, const ir::PrimFunc& f, const std::string& entry_name,
                                       const std::string& first_name);

struct EntryCheckRules {
    // 0: no alignment rule; else tensors with elements must be aligned to it, and the
    // message ends with `alignment_why`.
    int64_t tensor_alignment = 0;
    std::string alignment_why;
    // Per grid axis x, y, z: the largest extent the API launches (0: no limit), and the
    // API's name for the message ("CUDA", "HIP").
    std::array<int64_t, 3> grid_limit = {0, 0, 0};
    std::string api;
};

// What the checks computed, for the launch that follows.
struct CheckedArguments {
    std::vector<llvm::Value*> tensors;  // per parameter: the pointer (tensors) or nullptr
    llvm::Value* grid[3] = {nullptr, nullptr, nullptr};  // i64 extents (1 for absent axes)
    // i1: nothing to run: no output tensor has an element (in a body without print or
    // assert), which also lifts the API's grid limit, or some grid extent is 0.
    llvm::Value* empty_grid = nullptr;
};

// Emits the checks into `fn` (made by declare_entry_function) at the builder's insertion
// point, binding the sizes and scalars in `fl` (scalars converted to the values the body
// sees: bool != 0, i4 truncated, narrow floats rounded). On return the builder is in the
// block where every check passed.
CheckedArguments emit_argument_checks(ModuleState& ms, FunctionLowering& fl, llvm::Function* fn,
                                      const ir::PrimFunc& f, const std::string& entry_name,
                                      const EntryCheckRules& rules);

// Where `empty_grid` holds, `fn` returns TILE_SUCCESS (0): an empty grid runs nothing
// (after the checks). The builder continues in the block "launch".
void return_if_empty_grid(llvm::IRBuilderBase& b, llvm::Function* fn, llvm::Value* empty_grid);

// `%` doubled, for text that goes into a printf format.
std::string escape_percent(const std::string& s);

}  // namespace tilec::codegen
