// Parsing: .tile source text -> ast::File, with syntax errors phrased for humans.
// The only module that sees ANTLR; its headers never leave parser.cpp.
#pragma once
#include <memory>

#include "frontend/ast.h"
#include "support/diagnostics.h"

namespace tilec::frontend {

// Parses one registered file. Returns null (after reporting located errors) when the
// text has syntax errors; never throws for bad input.
std::unique_ptr<ast::File> parse_file(uint32_t file_id, const SourceManager& sources, DiagnosticEngine& diags);

}  // namespace tilec::frontend
