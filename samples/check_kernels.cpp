// check_kernels.cpp: the same kernels as check_kernels.c, from C++: the generated headers
// compile as C++, and the entry points report errors through tile_status and
// tile_last_error(). Exit status 0 when every check passes.
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "activations.h"
#include "saxpy.h"

namespace {

int failures = 0;

void verdict(bool ok, const std::string& what, const std::string& detail) {
    std::printf("%s %s: %s\n", ok ? "ok  " : "FAIL", what.c_str(), detail.c_str());
    failures += !ok;
}

// The worst error relative to max(|ref|, floor): floor keeps results that cancel to nearly
// 0 (saxpy) from counting as large relative errors.
double worst_relative_error(const std::vector<float>& got, const std::vector<double>& ref, double floor) {
    double worst = 0;
    for (size_t i = 0; i < got.size(); ++i) {
        double err = std::fabs(got[i] - ref[i]) / std::fmax(std::fabs(ref[i]), floor);
        if (!(err <= worst)) worst = err;  // !(<=) also catches NaN
    }
    return worst;
}

void check(const std::string& what, tile_status st, const std::vector<float>& got,
           const std::vector<double>& ref, double floor, double tol) {
    if (st != TILE_SUCCESS) {
        verdict(false, what, std::string(tile_status_string(st)) + " (" + tile_last_error() + ")");
        return;
    }
    double worst = worst_relative_error(got, ref, floor);
    char detail[96];
    std::snprintf(detail, sizeof detail, "worst relative error %.3g (tolerance %.3g)", worst, tol);
    verdict(worst <= tol, what, detail);
}

}  // namespace

int main() {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> dist(-4.0f, 4.0f);

    const int64_t n = 2049;
    std::vector<float> x(n), y(n);
    std::vector<double> ref(n);
    const float a = 0.75f;
    for (int64_t i = 0; i < n; ++i) {
        x[i] = dist(rng), y[i] = dist(rng);
        ref[i] = double(a) * x[i] + y[i];
    }
    check("saxpy_f32 N=2049", saxpy_f32_cpu(nullptr, x.data(), y.data(), n, a), y, ref, 1.0, 1e-5);

    // gelu (tanh approximation) and silu of the stdlib's activations.tile, both in f32.
    const int64_t m = 3000;
    std::vector<float> in(m), out(m);
    std::vector<double> gelu(m), silu(m);
    for (int64_t i = 0; i < m; ++i) {
        double v = in[i] = 2 * dist(rng);
        gelu[i] = 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
        silu[i] = v / (1 + std::exp(-v));
    }
    // Errors relative to max(|y|, 1): 1 + tanh(..) cancels for x << 0.
    check("gelu_f32 N=3000", gelu_f32_cpu(nullptr, in.data(), out.data(), m), out, gelu, 1.0, 1e-5);
    check("silu_f32 N=3000", silu_f32_cpu(nullptr, in.data(), out.data(), m), out, silu, 1.0, 1e-5);

    // A bad argument is an error with a message, not a crash.
    tile_status st = saxpy_f32_cpu(nullptr, nullptr, y.data(), n, a);
    verdict(st == TILE_ERROR_INVALID_ARGUMENT, "saxpy_f32 with x = NULL", tile_last_error());

    std::printf("%s\n", failures ? "check_kernels_cpp: FAILED"
                                 : "check_kernels_cpp: all results match the reference");
    return failures ? 1 : 0;
}
