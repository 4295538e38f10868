// Diagnostics: how every user error, warning and note reaches the author.
// Format: `file:line:col: error: message`, the source line, a caret/range under it,
// then notes. User errors exit 1; internal errors (TILEC_ICE) exit 2.
#pragma once
#include <iosfwd>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/source.h"

namespace tilec {

enum class Severity { Note, Warning, Error };

struct Diagnostic {
    Severity severity = Severity::Error;
    SourceRange range;
    std::string message;
    std::vector<Diagnostic> notes;
};

// Thrown when --error-limit errors have been reported; the driver stops and exits 1.
struct ErrorLimitReached {};

class DiagnosticEngine;

// Collects notes for one diagnostic; the diagnostic is reported when this goes away.
class DiagBuilder {
public:
    DiagBuilder(DiagnosticEngine* engine, Diagnostic d) : engine_(engine), diag_(std::move(d)) {}
    DiagBuilder(DiagBuilder&& o) noexcept : engine_(o.engine_), diag_(std::move(o.diag_)) { o.engine_ = nullptr; }
    DiagBuilder(const DiagBuilder&) = delete;
    DiagBuilder& operator=(const DiagBuilder&) = delete;
    ~DiagBuilder() noexcept(false);
    DiagBuilder& note(SourceRange range, std::string message);

private:
    DiagnosticEngine* engine_;
    Diagnostic diag_;
};

class DiagnosticEngine {
public:
    DiagnosticEngine(const SourceManager& sources, std::ostream& out) : sources_(sources), out_(out) {}

    void set_color(bool on) { color_ = on; }
    void set_error_limit(unsigned limit) { error_limit_ = limit; }  // 0 = no limit
    void set_warnings_as_errors(bool on) { werror_ = on; }
    void set_warnings_enabled(bool on) { warnings_ = on; }

    DiagBuilder error(SourceRange range, std::string message);
    DiagBuilder warning(SourceRange range, std::string message);

    // Reports a finished diagnostic (used by DiagBuilder).
    void report(const Diagnostic& d);

    // An engine with this one's settings (warnings, -Werror, error limit) that keeps what
    // is reported in `sink` instead of printing it, counting and stopping at the limit as
    // this one would: work on another thread reports into it, and the driver replays
    // `sink` into this engine afterwards, in order, so the output does not depend on
    // which thread finished first.
    DiagnosticEngine deferred(std::vector<Diagnostic>& sink) const;

    unsigned error_count() const { return errors_; }
    unsigned warning_count() const { return warnings_count_; }
    bool has_errors() const { return errors_ != 0; }
    // Renders one diagnostic as text exactly as it is printed (without colour).
    std::string render(const Diagnostic& d) const;

private:
    void print_one(const Diagnostic& d, Severity shown) const;
    const SourceManager& sources_;
    std::ostream& out_;
    bool color_ = false;
    bool werror_ = false;
    bool warnings_ = true;
    unsigned error_limit_ = 20;
    unsigned errors_ = 0;
    unsigned warnings_count_ = 0;
    std::vector<Diagnostic>* sink_ = nullptr;  // deferred(): kept here, not printed
};

// An internal compiler error: a bug in tilec, never the user's fault. The pass manager
// adds the name of the pass that was running; the driver prints it and exits 2.
class InternalError : public std::runtime_error {
public:
    InternalError(std::string msg, const char* file, int line)
        : std::runtime_error(std::move(msg)), file(file), line(line) {}
    const char* file;
    int line;
    std::string pass;  // filled in by whoever knows which pass was running
};

[[noreturn]] void internal_error(std::string msg, const char* file, int line);

}  // namespace tilec

#define TILEC_ICE(msg) ::tilec::internal_error((msg), __FILE__, __LINE__)
#define TILEC_CHECK(cond, msg) \
    do {                       \
        if (!(cond)) TILEC_ICE(std::string("check failed: " #cond ": ") + (msg)); \
    } while (0)
