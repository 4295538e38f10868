// Printing of diagnostics in the clang/ISPC style, with the source line and a caret.
// Kept free of global state: the engine carries colour, limits and counts.
#include "support/diagnostics.h"

#include <algorithm>
#include <iostream>
#include <sstream>

namespace tilec {

[[noreturn]] void internal_error(std::string msg, const char* file, int line) {
    throw InternalError(std::move(msg), file, line);
}

DiagBuilder::~DiagBuilder() noexcept(false) {
    if (engine_) {
        DiagnosticEngine* e = engine_;
        engine_ = nullptr;
        e->report(diag_);
    }
}

DiagBuilder& DiagBuilder::note(SourceRange range, std::string message) {
    Diagnostic n;
    n.severity = Severity::Note;
    n.range = range;
    n.message = std::move(message);
    diag_.notes.push_back(std::move(n));
    return *this;
}

DiagBuilder DiagnosticEngine::error(SourceRange range, std::string message) {
    return DiagBuilder(this, Diagnostic{Severity::Error, range, std::move(message), {}});
}

DiagBuilder DiagnosticEngine::warning(SourceRange range, std::string message) {
    return DiagBuilder(this, Diagnostic{Severity::Warning, range, std::move(message), {}});
}

namespace {
const char* kReset = "\033[0m";
const char* kBold = "\033[1m";
const char* severity_name(Severity s) {
    switch (s) {
    case Severity::Note: return "note";
    case Severity::Warning: return "warning";
    case Severity::Error: return "error";
    }
    return "error";
}
const char* severity_color(Severity s) {
    switch (s) {
    case Severity::Note: return "\033[1;36m";
    case Severity::Warning: return "\033[1;35m";
    case Severity::Error: return "\033[1;31m";
    }
    return "";
}

void render_into(std::ostream& os, const SourceManager& sources, const Diagnostic& d, Severity shown,
                 bool color) {
    const SourceRange& r = d.range;
    if (color) os << kBold;
    if (r.valid()) {
        os << sources.path(r.begin.file) << ':' << r.begin.line << ':' << r.begin.col << ": ";
    } else {
        os << "tilec: ";
    }
    if (color) os << severity_color(shown);
    os << severity_name(shown) << ": ";
    if (color) os << kReset << kBold;
    os << d.message;
    if (color) os << kReset;
    os << '\n';
    if (r.valid()) {
        std::string_view line = sources.line_text(r.begin.file, r.begin.line);
        if (!line.empty() || r.begin.col <= 1) {
            os << line << '\n';
            // Keep tabs in the underline so the caret lines up under tabbed source.
            std::string under;
            uint32_t col = std::max<uint32_t>(r.begin.col, 1);
            for (uint32_t i = 1; i < col; ++i)
                under += (i - 1 < line.size() && line[i - 1] == '\t') ? '\t' : ' ';
            uint32_t last = col;
            if (r.end.valid() && r.end.file == r.begin.file) {
                if (r.end.line == r.begin.line && r.end.col > col) last = r.end.col;
                else if (r.end.line > r.begin.line) last = std::max<uint32_t>(col, line.size());
            }
            if (color) under += "\033[1;32m";
            under += '^';
            for (uint32_t i = col + 1; i <= last; ++i) under += '~';
            if (color) under += kReset;
            os << under << '\n';
        }
    }
}
}  // namespace

std::string DiagnosticEngine::render(const Diagnostic& d) const {
    std::ostringstream os;
    render_into(os, sources_, d, d.severity, false);
    for (const Diagnostic& n : d.notes) render_into(os, sources_, n, Severity::Note, false);
    return os.str();
}

void DiagnosticEngine::print_one(const Diagnostic& d, Severity shown) const {
    render_into(out_, sources_, d, shown, color_);
}

DiagnosticEngine DiagnosticEngine::deferred(std::vector<Diagnostic>& sink) const {
    DiagnosticEngine e(sources_, out_);
    e.color_ = color_;
    e.werror_ = werror_;
    e.warnings_ = warnings_;
    e.error_limit_ = error_limit_;
    e.sink_ = &sink;
    return e;
}

void DiagnosticEngine::report(const Diagnostic& d) {
    Severity shown = d.severity;
    if (shown == Severity::Warning) {
        if (!warnings_) return;
        if (werror_) shown = Severity::Error;
    }
    if (sink_) {
        sink_->push_back(d);  // as reported: the replay promotes warnings again
    } else {
        print_one(d, shown);
        for (const Diagnostic& n : d.notes) print_one(n, Severity::Note);
        out_.flush();
    }
    if (shown == Severity::Error) {
        ++errors_;
        if (error_limit_ != 0 && errors_ >= error_limit_) {
            if (!sink_)
                out_ << "tilec: fatal error: too many errors emitted, stopping now [--error-limit=" << error_limit_
                     << "]\n";
            throw ErrorLimitReached{};
        }
    } else if (shown == Severity::Warning) {
        ++warnings_count_;
    }
}

}  // namespace tilec
