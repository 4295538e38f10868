// Source files and positions. Every diagnostic and every IR node points back here, so
// an error (or, later, a simulator report) can name the line the author wrote.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tilec {

// A position in a source file. Lines and columns are 1-based; line 0 means "unknown".
struct SourceLoc {
    uint32_t file = 0;  // id from SourceManager; 0 = none
    uint32_t line = 0;
    uint32_t col = 0;
    bool valid() const { return line != 0; }
};

// A range of characters; `end` is the last character (inclusive). Ranges that span
// lines are underlined to the end of the first line only.
struct SourceRange {
    SourceLoc begin;
    SourceLoc end;
    SourceRange() = default;
    SourceRange(SourceLoc b) : begin(b), end(b) {}
    SourceRange(SourceLoc b, SourceLoc e) : begin(b), end(e) {}
    bool valid() const { return begin.valid(); }
};

// Owns the text of every file the compiler reads, and finds lines in it.
class SourceManager {
public:
    // Registers a file's text; returns its id (>= 1).
    uint32_t add_file(std::string path, std::string contents);
    // Reads a file from disk; nullopt (and `error` set) when it cannot be read.
    std::optional<uint32_t> load_file(const std::string& path, std::string* error);
    // The id of an already-loaded file with this (normalised) path, if any.
    std::optional<uint32_t> find_file(const std::string& path) const;

    const std::string& path(uint32_t id) const;
    const std::string& contents(uint32_t id) const;
    std::string_view line_text(uint32_t id, uint32_t line) const;
    size_t file_count() const { return files_.size(); }

private:
    struct File {
        std::string path;
        std::string contents;
        std::vector<uint32_t> line_starts;
    };
    std::vector<File> files_;
};

}  // namespace tilec
