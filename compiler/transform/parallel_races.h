// check-parallel-races: iterations of one `parallel` loop run in no order, so an element
// that one iteration writes may not be read or written by another iteration of the same
// loop (docs/language.md, section 12). This pass proves such races at compile time.
#pragma once
#include "ir/ir.h"
#include "ir/pass.h"

namespace tilec::transform {

// Reports, as a located error with a note at the write, the first race of each parallel
// loop of `f` that the indices prove: the loop's extents are constants, so every
// iteration's accesses are enumerated where their indices and the conditions around them
// depend only on the loop's variables, constants and inner loops of constant bounds.
// Accesses through loaded values or run-time sizes are not judged (the GPU simulator
// reports races of shared memory at run time). Returns false if it reported an error.
bool check_parallel_races(const ir::PrimFunc& f, DiagnosticEngine& diag);

// The pass for a PassManager, named "check-parallel-races" (tile level; the IR unchanged).
ir::Pass make_parallel_race_check_pass();

}  // namespace tilec::transform
