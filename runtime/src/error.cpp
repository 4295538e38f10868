// Status strings and the per-thread error message: how a failing call explains itself to
// its caller without printing or exiting (tile/runtime.h, "Error messages").
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "tile/runtime.h"

static_assert(TILE_RUNTIME_VERSION_MAJOR == TILEC_VERSION_MAJOR &&
                  TILE_RUNTIME_VERSION_MINOR == TILEC_VERSION_MINOR &&
                  TILE_RUNTIME_VERSION_PATCH == TILEC_VERSION_PATCH,
              "tile/runtime.h's TILE_RUNTIME_VERSION_* must match project(tilec VERSION ...)");

namespace {

// Global mutable state, and why: the message of the last failing call belongs to the
// thread that made the call (like errno), so a C caller can ask for it after a status
// came back without passing a buffer to every entry point. It is thread-local, so no
// thread ever sees or races on another's message, and it needs no allocation, so it
// works when memory has run out.
thread_local char tls_message[TILE_ERROR_MESSAGE_MAX];

constexpr char kEllipsis[] = "...";

// Formats into `out` (TILE_ERROR_MESSAGE_MAX bytes); a message that does not fit is cut
// at a UTF-8 character boundary and ends with "...".
void format_message(char* out, const char* fmt, va_list args) {
    int needed = std::vsnprintf(out, TILE_ERROR_MESSAGE_MAX, fmt, args);
    if (needed < 0) {
        std::snprintf(out, TILE_ERROR_MESSAGE_MAX, "(the error message could not be formatted: \"%.200s\")",
                      fmt);
        return;
    }
    if (needed < TILE_ERROR_MESSAGE_MAX) return;
    size_t cut = TILE_ERROR_MESSAGE_MAX - sizeof(kEllipsis);  // room for "..." and the NUL
    // Never keep half a character: back up over UTF-8 continuation bytes (10xxxxxx).
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
    std::memcpy(out + cut, kEllipsis, sizeof(kEllipsis));
}

}  // namespace

extern "C" {

TILE_API const char* tile_status_string(tile_status status) noexcept {
    switch (status) {
    case TILE_SUCCESS: return "success";
    case TILE_ERROR_INVALID_ARGUMENT: return "invalid argument";
    case TILE_ERROR_OUT_OF_MEMORY: return "out of memory";
    case TILE_ERROR_NO_DRIVER: return "GPU driver library not found";
    case TILE_ERROR_NO_DEVICE: return "no GPU device";
    case TILE_ERROR_NO_IMAGE_FOR_DEVICE: return "no kernel image for this device";
    case TILE_ERROR_LAUNCH: return "kernel launch failed";
    case TILE_ERROR_INTERNAL: return "internal error";
    case TILE_ERROR_DRIVER: return "GPU driver call failed";
    }
    return "unknown status";
}

TILE_API const char* tile_last_error(void) noexcept {
    return tls_message;
}

TILE_API void tile_clear_error(void) noexcept {
    tls_message[0] = '\0';
}

TILE_API tile_status tile_set_error_v(tile_status status, const char* fmt, va_list args) noexcept {
    if (status == TILE_SUCCESS) {
        tile_clear_error();
        return status;
    }
    if (fmt == nullptr) {
        std::snprintf(tls_message, TILE_ERROR_MESSAGE_MAX, "%s", tile_status_string(status));
        return status;
    }
    // Format into a local buffer first: the arguments may point into tls_message (e.g.
    // "%s: %s", name, tile_last_error()).
    char buffer[TILE_ERROR_MESSAGE_MAX];
    format_message(buffer, fmt, args);
    std::memcpy(tls_message, buffer, std::strlen(buffer) + 1);
    return status;
}

TILE_API tile_status tile_set_error(tile_status status, const char* fmt, ...) noexcept {
    va_list args;
    va_start(args, fmt);
    tile_status result = tile_set_error_v(status, fmt, args);
    va_end(args);
    return result;
}

TILE_API int tile_runtime_version(void) noexcept {
    return TILE_RUNTIME_VERSION;
}

}  // extern "C"
