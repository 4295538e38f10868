#include "driver/compile_cache.h"

#include <elf.h>
#include <link.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

namespace tilec::driver {
namespace fs = std::filesystem;

namespace {

const char kMagic[] = "tilec-cache 1\n";

// The NT_GNU_BUILD_ID note of the main executable, in hex, or "".
std::string gnu_build_id() {
    std::string id;
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* data) -> int {
            // The first object is the executable itself.
            auto* out = static_cast<std::string*>(data);
            for (int i = 0; i < info->dlpi_phnum; ++i) {
                const ElfW(Phdr)& ph = info->dlpi_phdr[i];
                if (ph.p_type != PT_NOTE) continue;
                const char* p = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
                const char* end = p + ph.p_memsz;
                while (p + sizeof(ElfW(Nhdr)) <= end) {
                    const auto* nh = reinterpret_cast<const ElfW(Nhdr)*>(p);
                    const char* name = p + sizeof(ElfW(Nhdr));
                    const char* desc = name + ((nh->n_namesz + 3) & ~3u);
                    if (desc + nh->n_descsz > end) break;
                    if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
                        static const char* digits = "0123456789abcdef";
                        for (unsigned k = 0; k < nh->n_descsz; ++k) {
                            unsigned char c = static_cast<unsigned char>(desc[k]);
                            *out += digits[c >> 4];
                            *out += digits[c & 15];
                        }
                        return 1;
                    }
                    p = desc + ((nh->n_descsz + 3) & ~3u);
                }
            }
            return 1;
        },
        &id);
    return id;
}

}  // namespace

std::string cache_dir_from_environment() {
    const char* dir = std::getenv("TILEC_CACHE_DIR");
    return dir ? std::string(dir) : std::string();
}

std::string tilec_build_identity(const std::string& version) {
    std::string id = "tilec " + version + "\n";
    std::string build = gnu_build_id();
    if (!build.empty()) return id + "build-id " + build + "\n";
    std::error_code ec;
    fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    auto size = ec ? 0 : fs::file_size(exe, ec);
    auto time = ec ? fs::file_time_type() : fs::last_write_time(exe, ec);
    return id + "executable " + exe.string() + " " + std::to_string(size) + " " +
           std::to_string(time.time_since_epoch().count()) + "\n";
}

std::optional<std::vector<CachedOutput>> cache_lookup(const std::string& dir, const std::string& key) {
    std::ifstream in(fs::path(dir) / key.substr(0, 2) / key, std::ios::binary);
    if (!in) return std::nullopt;
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string data = ss.str();
    size_t pos = sizeof kMagic - 1;
    if (data.compare(0, pos, kMagic) != 0) return std::nullopt;
    std::vector<CachedOutput> outputs;
    while (true) {
        if (data.compare(pos, std::string::npos, "end\n") == 0) return outputs;
        size_t eol = data.find('\n', pos);
        if (eol == std::string::npos) return std::nullopt;
        std::istringstream header(data.substr(pos, eol - pos));
        size_t path_size = 0, bytes_size = 0;
        if (!(header >> path_size >> bytes_size)) return std::nullopt;
        pos = eol + 1;
        if (path_size > data.size() - pos || bytes_size > data.size() - pos - path_size) return std::nullopt;
        outputs.push_back({data.substr(pos, path_size), data.substr(pos + path_size, bytes_size)});
        pos += path_size + bytes_size;
    }
}

void cache_store(const std::string& dir, const std::string& key, const std::vector<CachedOutput>& outputs) {
    std::string data = kMagic;
    for (auto& o : outputs) data += std::to_string(o.path.size()) + " " + std::to_string(o.bytes.size()) + "\n" + o.path + o.bytes;
    data += "end\n";
    fs::path folder = fs::path(dir) / key.substr(0, 2);
    std::error_code ec;
    fs::create_directories(folder, ec);
    // A name no other process picks: the pid and a random number.
    std::random_device rd;
    fs::path temp = folder / (key + ".tmp." + std::to_string(getpid()) + "." + std::to_string(rd()));
    bool ok = !ec;
    if (ok) {
        std::ofstream out(temp, std::ios::binary);
        ok = out && (out << data) && (out.flush(), static_cast<bool>(out));
    }
    if (ok) {
        fs::rename(temp, folder / key, ec);
        ok = !ec;
    }
    if (!ok) {
        fs::remove(temp, ec);
        // Once a process: the exports' entries are stored from several threads.
        static std::atomic<bool> warned{false};
        if (!warned.exchange(true))
            std::cerr << "tilec: warning: cannot write to the compile cache " << dir
                      << " (TILEC_CACHE_DIR); the outputs were written, but not cached\n";
    }
}

}  // namespace tilec::driver
