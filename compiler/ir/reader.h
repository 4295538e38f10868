// The textual Tile IR reader: reads what ir::print writes (tile and thread level) back
// into IR, so that a pass can be run alone on a .tir file (tilec opt) and tested with
// lit + FileCheck as LLVM's opt tests are. Reading printed IR and printing it again
// gives the same text, except for `// layout` comment lines (layout inference's result
// is not read: running the pass again recomputes it).
//
// Names: the printer gives every distinct Var/Buffer of a function its own name
// (`i`, `i_1`, ...); the reader binds each name by scope (params and block.x/y/z for the
// function; a For or let variable in its body; an alloc for the rest of its block) and
// makes thread.x/y/z on first use. Types follow from the text: literal suffixes, cast
// targets, declared buffer/param/let types, and the IR's typing rules (ir.h factories);
// `/` is Div on floats and FloorDiv on integers.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

#include "ir/ir.h"
#include "support/diagnostics.h"

namespace tilec::ir {

// Reads every function of `text`, which the caller has registered in the diagnostic
// engine's SourceManager as `file` (so errors print as file:line:col). A malformed
// text gives located errors in `diag` and nullopt, never a crash. The IR is not
// verified here (ir::verify does it; tilec opt runs it on what it read).
std::optional<Module> parse_module(std::string_view text, uint32_t file, DiagnosticEngine& diag);

}  // namespace tilec::ir
