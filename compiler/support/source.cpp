// Source text storage and line lookup for diagnostics.
// Files are read once and kept for the whole compilation, so ranges stay valid.
#include "support/source.h"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace tilec {

uint32_t SourceManager::add_file(std::string path, std::string contents) {
    File f;
    f.path = std::move(path);
    f.contents = std::move(contents);
    f.line_starts.push_back(0);
    for (uint32_t i = 0; i < f.contents.size(); ++i)
        if (f.contents[i] == '\n') f.line_starts.push_back(i + 1);
    files_.push_back(std::move(f));
    return static_cast<uint32_t>(files_.size());
}

std::optional<uint32_t> SourceManager::find_file(const std::string& path) const {
    std::error_code ec;
    auto want = std::filesystem::weakly_canonical(path, ec);
    for (size_t i = 0; i < files_.size(); ++i) {
        auto have = std::filesystem::weakly_canonical(files_[i].path, ec);
        if (have == want) return static_cast<uint32_t>(i + 1);
    }
    return std::nullopt;
}

std::optional<uint32_t> SourceManager::load_file(const std::string& path, std::string* error) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) {
        if (error) *error = "is a directory";
        return std::nullopt;
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        if (error) *error = "no such file or not readable";
        return std::nullopt;
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    return add_file(path, ss.str());
}

static const std::string kEmpty;

const std::string& SourceManager::path(uint32_t id) const {
    return id >= 1 && id <= files_.size() ? files_[id - 1].path : kEmpty;
}

const std::string& SourceManager::contents(uint32_t id) const {
    return id >= 1 && id <= files_.size() ? files_[id - 1].contents : kEmpty;
}

std::string_view SourceManager::line_text(uint32_t id, uint32_t line) const {
    if (id < 1 || id > files_.size()) return {};
    const File& f = files_[id - 1];
    if (line < 1 || line > f.line_starts.size()) return {};
    uint32_t start = f.line_starts[line - 1];
    uint32_t end = line < f.line_starts.size() ? f.line_starts[line] - 1 : f.contents.size();
    std::string_view text(f.contents.data() + start, end - start);
    if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    return text;
}

}  // namespace tilec
