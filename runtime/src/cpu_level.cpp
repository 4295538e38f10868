// tile_cpu_x86_level: the x86-64 psABI micro-architecture level of this CPU, from CPUID
// and XGETBV (a feature counts only when the OS saves its registers: AVX needs the YMM
// state in XCR0, AVX-512 the opmask and ZMM states). The entry points of objects built
// for several CPUs (tilec --cpu=LIST) pick their block function from it, so the level's
// feature lists here are those LLVM's CPU names x86-64-v2/v3/v4 compile for.
#include <cstdlib>
#include <cstring>

#include "tile/runtime.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#endif

namespace {

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
bool has(unsigned reg, unsigned bit) { return (reg >> bit) & 1u; }

int detect_level() {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 1;
    const unsigned c1 = c;
    unsigned c81 = 0;
    if (__get_cpuid(0x80000001u, &a, &b, &c, &d)) c81 = c;
    unsigned b7 = 0;
    if (__get_cpuid_max(0, nullptr) >= 7) {
        __cpuid_count(7, 0, a, b, c, d);
        b7 = b;
    }
    // v2: CMPXCHG16B, LAHF/SAHF, POPCNT, SSE3, SSSE3, SSE4.1, SSE4.2.
    const bool v2 = has(c1, 13) && has(c81, 0) && has(c1, 23) && has(c1, 0) && has(c1, 9) && has(c1, 19) &&
                    has(c1, 20);
    if (!v2) return 1;
    // v3: AVX, AVX2, BMI1, BMI2, F16C, FMA, LZCNT, MOVBE, XSAVE, with the OS saving the
    // XMM and YMM states (XCR0 bits 1 and 2).
    unsigned long long xcr0 = 0;
    if (has(c1, 27)) {  // OSXSAVE: XGETBV is there
        unsigned lo = 0, hi = 0;
        __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        xcr0 = (static_cast<unsigned long long>(hi) << 32) | lo;
    }
    const bool ymm = (xcr0 & 0x6) == 0x6;
    const bool v3 = ymm && has(c1, 28) && has(b7, 5) && has(b7, 3) && has(b7, 8) && has(c1, 29) && has(c1, 12) &&
                    has(c81, 5) && has(c1, 22) && has(c1, 26);
    if (!v3) return 2;
    // v4: AVX-512 F, BW, CD, DQ, VL, with the opmask and ZMM states (XCR0 bits 5-7).
    const bool zmm = (xcr0 & 0xe0) == 0xe0;
    const bool v4 = zmm && has(b7, 16) && has(b7, 30) && has(b7, 28) && has(b7, 17) && has(b7, 31);
    return v4 ? 4 : 3;
}
#else
int detect_level() { return 0; }
#endif

}  // namespace

extern "C" TILE_API int tile_cpu_x86_level(void) noexcept {
    static const int detected = detect_level();
    int level = detected;
    if (const char* cap = std::getenv("TILE_CPU_MAX_LEVEL"); cap && std::strlen(cap) == 1 && cap[0] >= '0' &&
                                                             cap[0] <= '4' && cap[0] - '0' < level)
        level = cap[0] - '0';
    return level;
}
