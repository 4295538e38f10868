// The tokens of printed Tile IR (the reader's first stage): identifiers (names may hold
// dots: block.x, thread.x), numbers with their type suffix, strings, punctuation.
// `//` comments (the printer's `// layout` lines, --print-after-all headers) are skipped.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "support/source.h"

namespace tilec::ir::reader {

enum class TokKind : uint8_t { Ident, Number, String, Punct, End };

struct Token {
    TokKind kind = TokKind::End;
    std::string text;    // Ident/Punct: as written; Number: the digits part; String: unescaped
    std::string suffix;  // Number: the type suffix ("i32", "f16"), "" if none
    uint32_t line = 0, col = 0;
    size_t offset = 0, end = 0;  // byte range in the input (end exclusive)
};

// A malformed text: where and why. The reader turns it into a diagnostic.
struct SyntaxError {
    uint32_t line, col;
    std::string message;
};

// Splits `text` into tokens ending with one End token; throws SyntaxError on a
// character that starts no token or an unterminated string.
std::vector<Token> tokenize(std::string_view text);

}  // namespace tilec::ir::reader
