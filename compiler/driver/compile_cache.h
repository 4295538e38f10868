// The compile cache (TILEC_CACHE_DIR): the outputs of a compilation stored under the
// SHA-256 of everything they depend on, so an unchanged kernel library rebuilds for the
// cost of parsing its sources. The key is made by the driver (pipeline.cpp); this file
// stores and finds entries. An entry is written to a temporary file in the cache and
// renamed into place, so concurrent compilations never see half an entry; an entry that
// does not read back whole is a miss.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace tilec::driver {

struct CachedOutput {
    std::string path;  // as the compilation wrote it; "-" for standard output
    std::string bytes;
};

// $TILEC_CACHE_DIR, or "" (the cache is off) when unset or empty.
std::string cache_dir_from_environment();

// This tilec binary's identity: its version and the GNU build id the linker gave it (or,
// without one, the executable's size and modification time), so a rebuilt tilec does
// not reuse the entries of the old one.
std::string tilec_build_identity(const std::string& version);

std::optional<std::vector<CachedOutput>> cache_lookup(const std::string& dir, const std::string& key);

// Best effort: a cache that cannot be written is reported on standard error (once a
// process) and does not fail the compilation. Safe to call from several threads.
void cache_store(const std::string& dir, const std::string& key, const std::vector<CachedOutput>& outputs);

}  // namespace tilec::driver
