// The reader's lexer, kept apart from the parser so the grammar reads as the printer
// writes it. It knows the printer's escapes (\" \\ \n \t \r \xHH) and literal shapes.
#include "ir/reader_lexer.h"

#include <cctype>

namespace tilec::ir::reader {

namespace {

bool ident_start(char c) {
    return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool ident_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
}
bool digit(char c) {
    return std::isdigit(static_cast<unsigned char>(c)) != 0;
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// Two-character punctuation first, so "->" is not "-" then ">".
constexpr std::string_view kPunct2[] = {"->", "==", "!=", "<=", ">=", "<<", ">>", "&&", "||"};
constexpr std::string_view kPunct1 = "()[]{}<>,:=+-*/%?!~&|^@";

}  // namespace

std::vector<Token> tokenize(std::string_view s) {
    std::vector<Token> out;
    size_t i = 0;
    uint32_t line = 1, col = 1;
    auto advance = [&](size_t n) {
        for (size_t k = 0; k < n && i < s.size(); ++k, ++i) {
            if (s[i] == '\n') {
                ++line;
                col = 1;
            } else {
                ++col;
            }
        }
    };
    while (i < s.size()) {
        char c = s[i];
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
            advance(1);
            continue;
        }
        if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
            while (i < s.size() && s[i] != '\n') advance(1);
            continue;
        }
        Token t;
        t.line = line;
        t.col = col;
        t.offset = i;
        if (ident_start(c)) {
            size_t j = i;
            while (j < s.size() && ident_char(s[j])) ++j;
            t.kind = TokKind::Ident;
            t.text = std::string(s.substr(i, j - i));
            advance(j - i);
        } else if (digit(c)) {
            // digits [. digits] [e[+-]digits], then a type suffix (i32, f16, f8e4m3, ...).
            size_t j = i;
            while (j < s.size() && digit(s[j])) ++j;
            if (j + 1 < s.size() && s[j] == '.' && digit(s[j + 1])) {
                ++j;
                while (j < s.size() && digit(s[j])) ++j;
            }
            if (j < s.size() && (s[j] == 'e' || s[j] == 'E')) {
                size_t k = j + 1;
                if (k < s.size() && (s[k] == '+' || s[k] == '-')) ++k;
                if (k < s.size() && digit(s[k])) {
                    while (k < s.size() && digit(s[k])) ++k;
                    j = k;
                }
            }
            t.kind = TokKind::Number;
            t.text = std::string(s.substr(i, j - i));
            size_t k = j;
            while (k < s.size() && std::isalnum(static_cast<unsigned char>(s[k]))) ++k;
            t.suffix = std::string(s.substr(j, k - j));
            advance(k - i);
        } else if (c == '"') {
            t.kind = TokKind::String;
            advance(1);
            for (;;) {
                if (i >= s.size() || s[i] == '\n') throw SyntaxError{t.line, t.col, "unterminated string"};
                char d = s[i];
                if (d == '"') {
                    advance(1);
                    break;
                }
                if (d != '\\') {
                    t.text += d;
                    advance(1);
                    continue;
                }
                if (i + 1 >= s.size()) throw SyntaxError{line, col, "unterminated string"};
                char e = s[i + 1];
                switch (e) {
                case '"': t.text += '"'; break;
                case '\\': t.text += '\\'; break;
                case 'n': t.text += '\n'; break;
                case 't': t.text += '\t'; break;
                case 'r': t.text += '\r'; break;
                case 'x': {
                    int hi = i + 2 < s.size() ? hex_value(s[i + 2]) : -1;
                    int lo = i + 3 < s.size() ? hex_value(s[i + 3]) : -1;
                    if (hi < 0 || lo < 0)
                        throw SyntaxError{line, col, "bad \\x escape: expected two hex digits"};
                    t.text += static_cast<char>(hi * 16 + lo);
                    advance(2);
                    break;
                }
                default: throw SyntaxError{line, col, std::string("unknown escape \\") + e};
                }
                advance(2);
            }
        } else {
            t.kind = TokKind::Punct;
            for (auto p : kPunct2)
                if (s.substr(i, 2) == p) t.text = std::string(p);
            if (t.text.empty()) {
                if (kPunct1.find(c) == std::string_view::npos) {
                    std::string shown =
                        std::isprint(static_cast<unsigned char>(c)) ? std::string(1, c) : "\\x??";
                    throw SyntaxError{line, col, "unexpected character '" + shown + "'"};
                }
                t.text = std::string(1, c);
            }
            advance(t.text.size());
        }
        t.end = i;
        out.push_back(std::move(t));
    }
    // The end sits just after the last token, so "expected ..., found end of input"
    // points where the text stops rather than past trailing comments.
    Token end;
    end.line = out.empty() ? 1 : out.back().line;
    end.col = out.empty() ? 1 : out.back().col + static_cast<uint32_t>(out.back().end - out.back().offset);
    end.offset = end.end = s.size();
    out.push_back(end);
    return out;
}

}  // namespace tilec::ir::reader
