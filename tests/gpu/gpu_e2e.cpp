// The stdlib kernels on a real NVIDIA GPU: every export of the objects tests/gpu builds
// (tilec --target=host,sm_80,sm_90a -o X.o) is run through NAME_cuda on device memory and
// through NAME_cpu on the same inputs, and the two outputs compared element by element
// with a bound that fits the output's dtype. Inputs are random (seeded), shapes ragged
// (not multiples of the kernels' tiles), outputs poisoned (all bits set: NaN in every
// float format) before both runs, so an element the kernel never writes is reported.
// The CPU entry points are the reference here; they are themselves checked against the
// float64 reference interpreter by tests/e2e.
//
// The CUDA driver API is loaded with dlopen, as the runtime loads it ($TILE_CUDA_LIBRARY
// if set, else libcuda.so.1), with prototypes declared below: no CUDA header or toolkit
// is needed to build or run this. Exit status: 0 every case passed, 1 some case failed
// (each failure is printed), 77 with "SKIP: <reason>" where there is no driver or no
// device to run on (ctest shows that as skipped, never as passed).
//
// Usage: tilec_gpu_e2e [--list] [--filter SUBSTRING] [--seed N] [--cpu-as-device]
//
// --cpu-as-device is the harness's self-test with tests/runtime's fake libcuda, whose
// "device memory" is host memory: NAME_cpu runs on the device buffers in place of
// NAME_cuda, so every comparison must pass (and, without the flag, the fake runs no
// kernel and every comparison must fail on the poison). Never on a real driver.
//
// Adding an export: one CASE line below (its family says which tensors, sizes and scalars
// the export takes); adding a kernel file: its name in TILEC_GPU_E2E_KERNELS
// (tests/gpu/CMakeLists.txt), which builds its object and defines TILE_GPU_E2E_HAS_<file>.
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "tile/runtime.h"

#ifdef TILE_GPU_E2E_HAS_vector_add
#include "gpu_vector_add.h"
#endif
#ifdef TILE_GPU_E2E_HAS_activations
#include "gpu_activations.h"
#endif
#ifdef TILE_GPU_E2E_HAS_softmax
#include "gpu_softmax.h"
#endif
#ifdef TILE_GPU_E2E_HAS_rmsnorm
#include "gpu_rmsnorm.h"
#endif
#ifdef TILE_GPU_E2E_HAS_layernorm
#include "gpu_layernorm.h"
#endif
#ifdef TILE_GPU_E2E_HAS_gemm
#include "gpu_gemm.h"
#endif
#ifdef TILE_GPU_E2E_HAS_cumsum
#include "gpu_cumsum.h"
#endif
#ifdef TILE_GPU_E2E_HAS_gemm_splitk
#include "gpu_gemm_splitk.h"
#endif
#ifdef TILE_GPU_E2E_HAS_mla_decode
#include "gpu_mla_decode.h"
#endif
#ifdef TILE_GPU_E2E_HAS_flash_attn
#include "gpu_flash_attn.h"
#endif
#ifdef TILE_GPU_E2E_HAS_row_kernels
#include "gpu_row_kernels.h"
#endif

namespace {

constexpr int kSkip = 77;

// ---- the CUDA driver API, the few functions used (cuda.h's _v2 names) -------------------

using CUresult = int;
using CUdevice = int;
using CUcontext = void*;
using CUdeviceptr = unsigned long long;
constexpr CUresult kCudaSuccess = 0;
constexpr CUresult kCudaErrorNoDevice = 100;
constexpr int kAttrComputeCapabilityMajor = 75;
constexpr int kAttrComputeCapabilityMinor = 76;

struct Driver {
    CUresult (*cuInit)(unsigned) = nullptr;
    CUresult (*cuGetErrorName)(CUresult, const char**) = nullptr;
    CUresult (*cuDeviceGetCount)(int*) = nullptr;
    CUresult (*cuDeviceGet)(CUdevice*, int) = nullptr;
    CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice) = nullptr;
    CUresult (*cuDeviceGetName)(char*, int, CUdevice) = nullptr;  // optional
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice) = nullptr;
    CUresult (*cuCtxSetCurrent)(CUcontext) = nullptr;
    CUresult (*cuCtxSynchronize)() = nullptr;
    CUresult (*cuMemAlloc)(CUdeviceptr*, size_t) = nullptr;
    CUresult (*cuMemFree)(CUdeviceptr) = nullptr;
    CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void*, size_t) = nullptr;
    CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, size_t) = nullptr;

    std::string error(CUresult r) const {
        const char* name = nullptr;
        if (cuGetErrorName && cuGetErrorName(r, &name) == kCudaSuccess && name) return name;
        return "CUresult " + std::to_string(r);
    }
};

Driver driver;

[[noreturn]] void skip(const std::string& reason) {
    std::printf("SKIP: %s\n", reason.c_str());
    std::fflush(stdout);
    std::exit(kSkip);
}

template <typename F>
bool bind(void* library, const char* name, F* out) {
    *out = reinterpret_cast<F>(dlsym(library, name));
    return *out != nullptr;
}

// Loads the driver the runtime will use and makes device 0's primary context current
// (the context NAME_cuda launches in). Skips where that is impossible.
std::string open_device() {
    const char* env = std::getenv("TILE_CUDA_LIBRARY");
    std::string path = env && *env ? env : "libcuda.so.1";
    void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) skip("no CUDA driver found (" + path + ": " + dlerror() + ")");
    const char* missing = nullptr;
#define TILE_BIND(field, symbol) \
    if (!bind(library, symbol, &driver.field) && !missing) missing = symbol
    TILE_BIND(cuInit, "cuInit");
    TILE_BIND(cuGetErrorName, "cuGetErrorName");
    TILE_BIND(cuDeviceGetCount, "cuDeviceGetCount");
    TILE_BIND(cuDeviceGet, "cuDeviceGet");
    TILE_BIND(cuDeviceGetAttribute, "cuDeviceGetAttribute");
    TILE_BIND(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    TILE_BIND(cuCtxSetCurrent, "cuCtxSetCurrent");
    TILE_BIND(cuCtxSynchronize, "cuCtxSynchronize");
    TILE_BIND(cuMemAlloc, "cuMemAlloc_v2");
    TILE_BIND(cuMemFree, "cuMemFree_v2");
    TILE_BIND(cuMemcpyHtoD, "cuMemcpyHtoD_v2");
    TILE_BIND(cuMemcpyDtoH, "cuMemcpyDtoH_v2");
#undef TILE_BIND
    bind(library, "cuDeviceGetName", &driver.cuDeviceGetName);
    if (missing) skip("the CUDA driver library " + path + " lacks " + missing);
    CUresult r = driver.cuInit(0);
    if (r == kCudaErrorNoDevice) skip("no CUDA device (cuInit: " + driver.error(r) + ")");
    if (r != kCudaSuccess) skip("the CUDA driver cannot be initialised (cuInit: " + driver.error(r) + ")");
    int count = 0;
    r = driver.cuDeviceGetCount(&count);
    if (r != kCudaSuccess || count == 0) skip("no CUDA device (cuDeviceGetCount: " + driver.error(r) + ")");
    CUdevice device = 0;
    int major = 0, minor = 0;
    if ((r = driver.cuDeviceGet(&device, 0)) != kCudaSuccess) skip("cuDeviceGet(0): " + driver.error(r));
    driver.cuDeviceGetAttribute(&major, kAttrComputeCapabilityMajor, device);
    driver.cuDeviceGetAttribute(&minor, kAttrComputeCapabilityMinor, device);
    char name[256] = "unnamed device";
    if (driver.cuDeviceGetName) driver.cuDeviceGetName(name, sizeof(name), device);
    std::string what = std::string(name) + ", compute capability " + std::to_string(major) + "." +
                       std::to_string(minor) + ", driver " + path;
    // The objects hold sm_80 and sm_90 cubins and compute_80 PTX: nothing older runs them.
    if (major < 8) skip(what + ": the objects need compute capability 8.0 or later");
    CUcontext ctx = nullptr;
    if ((r = driver.cuDevicePrimaryCtxRetain(&ctx, device)) != kCudaSuccess)
        skip("cuDevicePrimaryCtxRetain: " + driver.error(r));
    if ((r = driver.cuCtxSetCurrent(ctx)) != kCudaSuccess) skip("cuCtxSetCurrent: " + driver.error(r));
    return what;
}

// ---- element types ----------------------------------------------------------------------

// I8 cases (integer gemm) write I32 outputs; integers compare exactly (eps 0).
enum class DType { F32, F16, BF16, I8, I32, F8E4M3, F8E5M2 };

size_t dtype_bytes(DType t) {
    return t == DType::F32 || t == DType::I32 ? 4 : t == DType::I8 || t == DType::F8E4M3 || t == DType::F8E5M2 ? 1 : 2;
}
const char* dtype_name(DType t) {
    switch (t) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::I8: return "i8";
    case DType::I32: return "i32";
    case DType::F8E4M3: return "f8e4m3";
    case DType::F8E5M2: return "f8e5m2";
    }
    return "?";
}
// The spacing of the dtype's numbers relative to their magnitude (one ulp at 1.0).
double dtype_eps(DType t) {
    return t == DType::F32 ? 0x1p-23 : t == DType::F16 ? 0x1p-10 : t == DType::BF16 ? 0x1p-7 : 0.0;
}

uint32_t float_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
float bits_float(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

// IEEE binary16 <-> float, rounding to nearest even (for normal and subnormal results).
uint16_t float_to_f16(float f) {
    uint32_t x = float_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    float a = std::fabs(f);
    if (std::isnan(f)) return static_cast<uint16_t>(sign | 0x7e00u);
    if (a >= 65520.0f) return static_cast<uint16_t>(sign | 0x7c00u);
    if (a < 0x1p-14f) {  // subnormal: a multiple of 2^-24, rounded to nearest even by rint
        return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(a * 0x1p24f)));
    }
    uint32_t ax = float_bits(a);
    uint32_t mant = ax & 0x7fffffu;
    int32_t exp = static_cast<int32_t>(ax >> 23) - 127 + 15;
    uint32_t h = (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
    uint32_t rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // may carry into the exponent: right
    return static_cast<uint16_t>(sign | h);
}
float f16_to_float(uint16_t h) {
    uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    float mag;
    if (exp == 0) mag = std::ldexp(static_cast<float>(mant), -24);
    else if (exp == 31) mag = mant ? NAN : INFINITY;
    else mag = std::ldexp(static_cast<float>(mant | 0x400u), static_cast<int>(exp) - 25);
    return bits_float(float_bits(mag) | sign);
}
uint16_t float_to_bf16(float f) {
    uint32_t x = float_bits(f);
    if (std::isnan(f)) return static_cast<uint16_t>((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return static_cast<uint16_t>(x >> 16);
}
float bf16_to_float(uint16_t b) { return bits_float(static_cast<uint32_t>(b) << 16); }

// OCP fp8: e4m3 (bias 7, no infinities, S.1111.111 NaN), e5m2 (bias 15, IEEE-like).
float f8_to_float(uint8_t b, bool e5m2) {
    const int man_bits = e5m2 ? 2 : 3, bias = e5m2 ? 15 : 7;
    const int exp = (b & 0x7f) >> man_bits, man = b & ((1 << man_bits) - 1), top = (1 << (7 - man_bits)) - 1;
    float mag;
    if (e5m2 && exp == top) mag = man ? NAN : INFINITY;
    else if (!e5m2 && exp == top && man == 7) mag = NAN;
    else if (exp == 0) mag = std::ldexp(static_cast<float>(man), 1 - bias - man_bits);
    else mag = std::ldexp(static_cast<float>(man | (1 << man_bits)), exp - bias - man_bits);
    return b & 0x80 ? -mag : mag;
}
// The nearest fp8 value (ties to the even code), by search: inputs are in range here.
uint8_t float_to_f8(float f, bool e5m2) {
    uint8_t best = 0;
    double best_err = INFINITY;
    for (unsigned c = 0; c < 256; ++c) {
        float v = f8_to_float(static_cast<uint8_t>(c), e5m2);
        if (!std::isfinite(v)) continue;
        double err = std::fabs(static_cast<double>(v) - f);
        if (err < best_err || (err == best_err && (c & 1) == 0)) best = static_cast<uint8_t>(c), best_err = err;
    }
    return best;
}

// Element i of a buffer of dtype t, as a double.
double load(const std::vector<unsigned char>& buf, DType t, size_t i) {
    if (t == DType::I8) return static_cast<int8_t>(buf[i]);
    if (t == DType::F8E4M3 || t == DType::F8E5M2) return f8_to_float(buf[i], t == DType::F8E5M2);
    if (t == DType::I32) {
        int32_t v;
        std::memcpy(&v, buf.data() + 4 * i, 4);
        return v;
    }
    if (t == DType::F32) {
        float f;
        std::memcpy(&f, buf.data() + 4 * i, 4);
        return f;
    }
    uint16_t h;
    std::memcpy(&h, buf.data() + 2 * i, 2);
    return t == DType::F16 ? f16_to_float(h) : bf16_to_float(h);
}
// Integers take v scaled to [-8, 8] and rounded (small: i32 sums stay exact).
void store(std::vector<unsigned char>& buf, DType t, size_t i, float v) {
    if (t == DType::I8) {
        buf[i] = static_cast<unsigned char>(static_cast<int8_t>(std::lrint(4 * v)));
        return;
    }
    if (t == DType::F8E4M3 || t == DType::F8E5M2) {
        buf[i] = float_to_f8(v, t == DType::F8E5M2);
        return;
    }
    if (t == DType::I32) {
        int32_t x = static_cast<int32_t>(std::lrint(4 * v));
        std::memcpy(buf.data() + 4 * i, &x, 4);
        return;
    }
    if (t == DType::F32) {
        std::memcpy(buf.data() + 4 * i, &v, 4);
        return;
    }
    uint16_t h = t == DType::F16 ? float_to_f16(v) : float_to_bf16(v);
    std::memcpy(buf.data() + 2 * i, &h, 2);
}

// ---- what a case is ---------------------------------------------------------------------

enum class Role { In, Out, InOut };

// A tensor parameter: its element type (`same` as the case's dtype, or fixed), role,
// and element count as a product of size names and integers ("B*H*S*128").
struct TensorSpec {
    const char* name;
    Role role;
    const char* elements;
    bool fixed_f32 = false;  // f32 whatever the case's dtype (gemm_splitk's C)
    bool fixed_e5m2 = false;  // f8e5m2 whatever the case's dtype (an fp8 gemm's mixed B)
    // An i32 index tensor whatever the case's dtype, uniform in [0, this product of sizes
    // and integers - 1]: MLA's block table (page numbers below NP) and sequence lengths.
    const char* index_below = nullptr;
};

// How the outputs may differ: within `ulps` units of the output dtype's eps, relative to
// |cpu value| + `scale_fraction` * (the largest |cpu value| of the tensor). Reductions and
// dot products sum in another order on the GPU, and the GPU's exp2/log2 are PTX's
// approximate forms: hence a magnitude floor, and more ulps for f32.
struct Tolerance {
    double ulps_narrow;  // f16, bf16
    double ulps_f32;
    double scale_fraction;
};

struct Family {
    std::vector<TensorSpec> tensors;
    std::vector<const char*> sizes;    // the size parameters, in the entry point's order
    std::vector<double> scalars;       // the scalar parameters' values, in order
    std::vector<std::vector<int64_t>> shapes;  // values of `sizes`, one run each
    Tolerance tolerance;
};

// The arguments of one call: tensors in order, then the sizes and scalars in order.
struct Arguments {
    std::vector<void*> tensors;
    std::vector<double> numbers;
};

// Calls `fn(first, args...)`, each tensor parameter (a pointer type) taking the next
// tensor and each arithmetic parameter the next number. A braced list evaluates in
// order, so the picks happen left to right.
template <typename First, typename... P>
std::function<tile_status(const Arguments&)> invoker(tile_status (*fn)(First, P...)) {
    return [fn](const Arguments& a) {
        size_t t = 0, n = 0;
        auto pick = [&](auto type_tag) {
            using T = typename decltype(type_tag)::type;
            if constexpr (std::is_pointer_v<T>) {
                return static_cast<T>(a.tensors.at(t++));
            } else {
                static_assert(std::is_arithmetic_v<T>, "an entry point parameter is a pointer or a number");
                return static_cast<T>(a.numbers.at(n++));
            }
        };
        std::tuple<P...> args{pick(std::common_type<P>{})...};
        return std::apply([&](auto... p) { return fn(First{}, p...); }, args);
    };
}

struct Case {
    const char* name;
    DType dtype;
    const Family* family;
    std::function<tile_status(const Arguments&)> cuda, cpu;
};

#define CASE(export_name, dtype, family) \
    Case { #export_name, DType::dtype, &family, invoker(&export_name##_cuda), invoker(&export_name##_cpu) }

// ---- the families of the stdlib kernels -------------------------------------------------

const Tolerance kElementwise = {1, 64, 1.0 / 64};  // both round one f32 value; f32: exp2/log2 approx
const Tolerance kReduction = {2, 512, 1.0 / 16};
const Tolerance kDot = {2, 512, 1.0 / 8};
// Long sums in another order: a prefix sum of 4096 elements (rounding grows with the
// sqrt of the length, ~64 ulps of the running sum), split-K's f32 atomics over K = 1000.
const Tolerance kScan = {4, 8192, 1.0 / 4};
const Tolerance kLongDot = {2, 4096, 1.0 / 8};

// Shapes several families share: rows (one, a few long, many short, a few of 4096
// elements) and attention's B, H, S.
const std::vector<std::vector<int64_t>> kRowShapes = {{1, 1}, {7, 1500}, {130, 77}, {5, 4096}};
const std::vector<std::vector<int64_t>> kAttentionShapes = {{1, 1, 1}, {1, 2, 100}, {2, 1, 200}};

const Family kVectorAdd = {{{"A", Role::In, "N"}, {"B", Role::In, "N"}, {"C", Role::Out, "N"}},
                           {"N"}, {}, {{1}, {1000}, {1024}, {4097}, {100003}}, kElementwise};
const Family kUnary = {{{"X", Role::In, "N"}, {"Y", Role::Out, "N"}},
                       {"N"}, {}, {{1}, {2047}, {2049}, {70001}}, kElementwise};
const Family kSwiglu = {{{"G", Role::In, "N"}, {"U", Role::In, "N"}, {"Y", Role::Out, "N"}},
                        {"N"}, {}, {{1}, {2047}, {70001}}, kElementwise};
const Family kRows = {{{"X", Role::In, "M*N"}, {"Y", Role::Out, "M*N"}},
                      {"M", "N"}, {}, kRowShapes, kReduction};
const Family kRmsnorm = {{{"X", Role::In, "M*N"}, {"weight", Role::In, "N"}, {"Y", Role::Out, "M*N"}},
                         {"M", "N"}, {1e-5}, kRowShapes, kReduction};
const Family kLayernorm = {{{"X", Role::In, "M*N"}, {"gamma", Role::In, "N"}, {"beta", Role::In, "N"},
                            {"Y", Role::Out, "M*N"}},
                           {"M", "N"}, {1e-5}, kRowShapes, kReduction};
// Transposed operands change the strides, not the element counts: the same buffers serve.
const Family kGemm = {{{"A", Role::In, "M*K"}, {"B", Role::In, "K*N"}, {"C", Role::Out, "M*N"}},
                      {"M", "K", "N"}, {}, {{1, 1, 1}, {130, 45, 67}, {200, 129, 300}, {64, 32, 128}}, kDot};
// f16 accumulators: the GPU rounds each mma's sum to f16, the CPU each product's: both
// carry f16 rounding of running sums of up to ~80 over K = 300 (many ulps).
const Family kGemmAcc16 = {kGemm.tensors, kGemm.sizes, {}, kGemm.shapes, {128, 512, 1.0 / 8}};
// fp8 inputs (f32 outputs: the case's dtype is the inputs'), B in the other format.
const Family kGemmF8Mixed = {{{"A", Role::In, "M*K"}, {"B", Role::In, "K*N", false, true}, {"C", Role::Out, "M*N"}},
                             kGemm.sizes, {}, kGemm.shapes, kDot};
const Family kScanRows = {{{"X", Role::In, "M*N"}, {"Y", Role::Out, "M*N"}},
                          {"M", "N"}, {}, kRowShapes, kScan};
const Family kGemmSplitK = {{{"A", Role::In, "M*K"}, {"B", Role::In, "K*N"}, {"C", Role::InOut, "M*N", true}},
                            {"M", "K", "N"}, {}, {{1, 1, 1}, {33, 1000, 70}, {130, 257, 129}}, kLongDot};
const Family kAttention128 = {{{"Q", Role::In, "B*H*S*128"}, {"K", Role::In, "B*H*S*128"},
                               {"V", Role::In, "B*H*S*128"}, {"O", Role::Out, "B*H*S*128"}},
                              {"B", "H", "S"}, {0.08838834764831845}, kAttentionShapes, kDot};
const Family kAttention64 = {{{"Q", Role::In, "B*H*S*64"}, {"K", Role::In, "B*H*S*64"},
                              {"V", Role::In, "B*H*S*64"}, {"O", Role::Out, "B*H*S*64"}},
                             {"B", "H", "S"}, {0.125}, kAttentionShapes, kDot};
// MLA decode (DV = 512, DPE = 64, pages of 64): B, H, NP pages in the cache, MP pages a
// sequence; the block table draws pages at random (batches may share them) and the
// lengths from [0, MP * 64 - 1] (0: an empty sequence, output 0).
const Family kMlaDecode = {{{"q_nope", Role::In, "B*H*512"}, {"q_pe", Role::In, "B*H*64"},
                            {"kv_c", Role::In, "NP*64*512"}, {"k_pe", Role::In, "NP*64*64"},
                            {"block_table", Role::In, "B*MP", false, false, "NP"},
                            {"cache_seqlens", Role::In, "B", false, false, "MP*64"},
                            {"o", Role::Out, "B*H*512"}},
                           {"B", "H", "NP", "MP"}, {0.04166666666666666}, {{1, 1, 1, 1}, {2, 20, 6, 3}, {3, 128, 10, 4}},
                           kDot};

const std::vector<Case>& cases() {
    static const std::vector<Case> all = {
#ifdef TILE_GPU_E2E_HAS_vector_add
        CASE(vector_add_f32, F32, kVectorAdd),
        CASE(vector_add_f16, F16, kVectorAdd),
        CASE(vector_add_bf16, BF16, kVectorAdd),
#endif
#ifdef TILE_GPU_E2E_HAS_activations
        CASE(gelu_f16, F16, kUnary),
        CASE(gelu_bf16, BF16, kUnary),
        CASE(gelu_f32, F32, kUnary),
        CASE(silu_f16, F16, kUnary),
        CASE(silu_bf16, BF16, kUnary),
        CASE(silu_f32, F32, kUnary),
        CASE(swiglu_f16, F16, kSwiglu),
        CASE(swiglu_bf16, BF16, kSwiglu),
#endif
#ifdef TILE_GPU_E2E_HAS_softmax
        CASE(softmax_f16, F16, kRows),
        CASE(softmax_bf16, BF16, kRows),
        CASE(softmax_f32, F32, kRows),
#endif
#ifdef TILE_GPU_E2E_HAS_rmsnorm
        CASE(rmsnorm_f16, F16, kRmsnorm),
        CASE(rmsnorm_bf16, BF16, kRmsnorm),
        CASE(rmsnorm_f32, F32, kRmsnorm),
#endif
#ifdef TILE_GPU_E2E_HAS_layernorm
        CASE(layernorm_f16, F16, kLayernorm),
        CASE(layernorm_bf16, BF16, kLayernorm),
        CASE(layernorm_f32, F32, kLayernorm),
#endif
#ifdef TILE_GPU_E2E_HAS_gemm
        CASE(gemm_f16, F16, kGemm),
        CASE(gemm_bf16, BF16, kGemm),
        CASE(gemm_f16_nt, F16, kGemm),
        CASE(gemm_f16_tn, F16, kGemm),
        CASE(gemm_f16_tt, F16, kGemm),
        CASE(gemm_bf16_nt, BF16, kGemm),
        CASE(gemm_bf16_tn, BF16, kGemm),
        CASE(gemm_bf16_tt, BF16, kGemm),
        CASE(gemm_f16_m64, F16, kGemm),
        CASE(gemm_bf16_m64, BF16, kGemm),
        CASE(gemm_f16_acc16, F16, kGemmAcc16),
        CASE(gemm_i8, I8, kGemm),
        CASE(gemm_i8_nt, I8, kGemm),
        CASE(gemm_f8e4m3, F8E4M3, kGemm),
        CASE(gemm_f8e4m3_nt, F8E4M3, kGemm),
        CASE(gemm_f8e4m3_f8e5m2_nt, F8E4M3, kGemmF8Mixed),
#endif
#ifdef TILE_GPU_E2E_HAS_cumsum
        CASE(cumsum_f32, F32, kScanRows),
        CASE(cumsum_f16, F16, kScanRows),
        CASE(cumsum_bf16, BF16, kScanRows),
        CASE(cumsum_f32_reverse, F32, kScanRows),
#endif
#ifdef TILE_GPU_E2E_HAS_gemm_splitk
        CASE(gemm_splitk_f16, F16, kGemmSplitK),
        CASE(gemm_splitk_bf16, BF16, kGemmSplitK),
        CASE(gemm_splitk_f16_s8, F16, kGemmSplitK),
#endif
#ifdef TILE_GPU_E2E_HAS_row_kernels
        CASE(softmax_f16_row, F16, kRows),
        CASE(rmsnorm_bf16_row, BF16, kRmsnorm),
        CASE(layernorm_f32_row, F32, kLayernorm),
        CASE(cumsum_carry_f32, F32, kScanRows),
#endif
#ifdef TILE_GPU_E2E_HAS_mla_decode
        CASE(mla_decode_f16, F16, kMlaDecode),
        CASE(mla_decode_bf16, BF16, kMlaDecode),
        CASE(mla_decode_h16_f16, F16, kMlaDecode),
        CASE(mla_decode_h16_bf16, BF16, kMlaDecode),
#endif
#ifdef TILE_GPU_E2E_HAS_flash_attn
        CASE(attn_fwd, F16, kAttention128),
        CASE(attn_fwd_causal, F16, kAttention128),
        CASE(attn_fwd_bf16, BF16, kAttention128),
        CASE(attn_fwd_causal_bf16, BF16, kAttention128),
        CASE(attn_fwd_d64, F16, kAttention64),
        CASE(attn_fwd_causal_d64, F16, kAttention64),
#endif
    };
    return all;
}

// ---- running a case ---------------------------------------------------------------------

int64_t element_count(const char* expr, const Family& family, const std::vector<int64_t>& shape) {
    int64_t product = 1;
    std::string text = expr;
    size_t start = 0;
    while (start <= text.size()) {
        size_t star = text.find('*', start);
        std::string factor = text.substr(start, star == std::string::npos ? std::string::npos : star - start);
        bool found = false;
        for (size_t i = 0; i < family.sizes.size(); ++i)
            if (factor == family.sizes[i]) product *= shape.at(i), found = true;
        if (!found) product *= std::stoll(factor);
        if (star == std::string::npos) break;
        start = star + 1;
    }
    return product;
}

struct DeviceBuffer {
    CUdeviceptr ptr = 0;
    explicit DeviceBuffer(size_t bytes) {
        CUresult r = driver.cuMemAlloc(&ptr, bytes == 0 ? 16 : bytes);
        if (r != kCudaSuccess) {
            std::printf("FAIL: cuMemAlloc(%zu): %s\n", bytes, driver.error(r).c_str());
            std::exit(1);
        }
    }
    ~DeviceBuffer() { driver.cuMemFree(ptr); }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

bool check_cuda(CUresult r, const char* what) {
    if (r == kCudaSuccess) return true;
    std::printf("  %s failed: %s\n", what, driver.error(r).c_str());
    return false;
}

// Runs one case on one shape; prints a line; returns whether it passed.
bool cpu_as_device = false;

bool run_shape(const Case& c, const std::vector<int64_t>& shape, std::mt19937_64& rng) {
    const Family& f = *c.family;
    std::string label = c.name;
    for (size_t i = 0; i < f.sizes.size(); ++i)
        label += std::string(i ? "," : " ") + f.sizes[i] + "=" + std::to_string(shape[i]);

    std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
    size_t n = f.tensors.size();
    std::vector<std::vector<unsigned char>> host(n), cpu(n);
    std::vector<DType> types(n);
    std::vector<int64_t> counts(n);
    std::vector<std::unique_ptr<DeviceBuffer>> device;
    for (size_t i = 0; i < n; ++i) {
        const TensorSpec& t = f.tensors[i];
        const bool f8 = c.dtype == DType::F8E4M3 || c.dtype == DType::F8E5M2;
        types[i] = t.index_below                            ? DType::I32
                   : t.fixed_f32                            ? DType::F32
                   : t.fixed_e5m2                           ? DType::F8E5M2
                   : c.dtype == DType::I8 && t.role != Role::In ? DType::I32
                   : f8 && t.role != Role::In               ? DType::F32
                                                             : c.dtype;
        counts[i] = element_count(t.elements, f, shape);
        host[i].assign(static_cast<size_t>(counts[i]) * dtype_bytes(types[i]), 0xff);  // poison: NaN
        if (t.index_below) {
            std::uniform_int_distribution<int32_t> index(
                0, static_cast<int32_t>(std::max<int64_t>(1, element_count(t.index_below, f, shape)) - 1));
            for (int64_t e = 0; e < counts[i]; ++e) {
                int32_t x = index(rng);
                std::memcpy(host[i].data() + 4 * e, &x, 4);
            }
        } else if (t.role != Role::Out) {
            for (int64_t e = 0; e < counts[i]; ++e) store(host[i], types[i], static_cast<size_t>(e), uniform(rng));
        }
        cpu[i] = host[i];
        device.push_back(std::make_unique<DeviceBuffer>(host[i].size()));
        if (!host[i].empty() && !check_cuda(driver.cuMemcpyHtoD(device[i]->ptr, host[i].data(), host[i].size()),
                                             "cuMemcpyHtoD"))
            return false;
    }
    Arguments gpu_args, cpu_args;
    for (size_t i = 0; i < n; ++i) {
        gpu_args.tensors.push_back(reinterpret_cast<void*>(static_cast<uintptr_t>(device[i]->ptr)));
        cpu_args.tensors.push_back(cpu[i].data());
    }
    for (int64_t s : shape) gpu_args.numbers.push_back(static_cast<double>(s));
    for (double v : f.scalars) gpu_args.numbers.push_back(v);
    cpu_args.numbers = gpu_args.numbers;

    tile_status st = cpu_as_device ? c.cpu(gpu_args) : c.cuda(gpu_args);
    if (st != TILE_SUCCESS) {
        std::printf("FAIL %s: %s_%s returned %s: %s\n", label.c_str(), c.name, cpu_as_device ? "cpu" : "cuda",
                    tile_status_string(st), tile_last_error());
        return false;
    }
    if (!check_cuda(driver.cuCtxSynchronize(), "cuCtxSynchronize after the kernel")) {
        std::printf("FAIL %s: the kernel faulted\n", label.c_str());
        return false;
    }
    st = c.cpu(cpu_args);
    if (st != TILE_SUCCESS) {
        std::printf("FAIL %s: %s_cpu returned %s: %s\n", label.c_str(), c.name, tile_status_string(st),
                    tile_last_error());
        return false;
    }
    bool ok = true;
    std::string report;
    for (size_t i = 0; i < n; ++i) {
        const TensorSpec& t = f.tensors[i];
        if (t.role == Role::In) continue;
        std::vector<unsigned char> got(host[i].size());
        if (!got.empty() && !check_cuda(driver.cuMemcpyDtoH(got.data(), device[i]->ptr, got.size()), "cuMemcpyDtoH"))
            return false;
        double largest = 0;
        for (int64_t e = 0; e < counts[i]; ++e)
            largest = std::fmax(largest, std::fabs(load(cpu[i], types[i], static_cast<size_t>(e))));
        double ulps = types[i] == DType::F32 ? f.tolerance.ulps_f32 : f.tolerance.ulps_narrow;
        double eps = dtype_eps(types[i]);
        int64_t bad = 0, first_bad = -1;
        double worst_ratio = 0;
        for (int64_t e = 0; e < counts[i]; ++e) {
            double want = load(cpu[i], types[i], static_cast<size_t>(e));
            double have = load(got, types[i], static_cast<size_t>(e));
            double bound = ulps * eps * (std::fabs(want) + f.tolerance.scale_fraction * largest);
            bool good = std::isfinite(want) && std::isfinite(have) && std::fabs(have - want) <= bound;
            if (std::isfinite(want) && std::isfinite(have) && bound > 0)
                worst_ratio = std::fmax(worst_ratio, std::fabs(have - want) / bound);
            if (!good) {
                if (first_bad < 0) first_bad = e;
                ++bad;
            }
        }
        char line[512];
        if (bad) {
            double want = load(cpu[i], types[i], static_cast<size_t>(first_bad));
            double have = load(got, types[i], static_cast<size_t>(first_bad));
            std::snprintf(line, sizeof(line),
                          "%s: %lld of %lld elements differ (first: [%lld] GPU %.9g, CPU %.9g%s)", t.name,
                          static_cast<long long>(bad), static_cast<long long>(counts[i]),
                          static_cast<long long>(first_bad), have, want,
                          std::isnan(have) ? "; NaN is the poison: never written?" : "");
            ok = false;
        } else {
            std::snprintf(line, sizeof(line), "%s: %lld elements, worst error %.2f of the bound", t.name,
                          static_cast<long long>(counts[i]), worst_ratio);
        }
        report += std::string(report.empty() ? "" : "; ") + line;
    }
    std::printf("%s %s (%s): %s\n", ok ? "PASS" : "FAIL", label.c_str(), dtype_name(c.dtype), report.c_str());
    return ok;
}

}  // namespace

int main(int argc, char** argv) {
    std::string filter;
    uint64_t seed = 20251203;
    bool list = false;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--list") {
            list = true;
        } else if (a == "--filter" && i + 1 < argc) {
            filter = argv[++i];
        } else if (a == "--seed" && i + 1 < argc) {
            seed = std::strtoull(argv[++i], nullptr, 10);
        } else if (a == "--cpu-as-device") {
            cpu_as_device = true;
        } else {
            std::fprintf(stderr, "usage: %s [--list] [--filter SUBSTRING] [--seed N] [--cpu-as-device]\n", argv[0]);
            return 2;
        }
    }
    if (list) {
        // One line per case: its name and the parameters its family passes, in order
        // (tests/gpu/check_signatures.py compares them with the generated headers).
        for (auto& c : cases()) {
            std::string params;
            for (auto& t : c.family->tensors) params += std::string(params.empty() ? "" : ",") + t.name;
            for (auto* size : c.family->sizes) params += std::string(",") + size;
            for (size_t i = 0; i < c.family->scalars.size(); ++i) params += ",<scalar>";
            std::printf("%s %s\n", c.name, params.c_str());
        }
        return 0;
    }
    if (cases().empty()) skip("no kernel objects were built into this harness");
    std::string device = open_device();
    if (cpu_as_device && device.find("libtile_fake_cuda") == std::string::npos) {
        std::printf("--cpu-as-device is a self-test for the fake driver only (device: %s)\n", device.c_str());
        return 2;
    }
    std::printf("device: %s; seed %llu\n", device.c_str(), static_cast<unsigned long long>(seed));
    std::mt19937_64 rng(seed);
    int passed = 0, failed = 0;
    for (auto& c : cases()) {
        if (!filter.empty() && std::string(c.name).find(filter) == std::string::npos) continue;
        for (auto& shape : c.family->shapes) (run_shape(c, shape, rng) ? passed : failed) += 1;
    }
    if (passed + failed == 0) {
        std::printf("no case matches --filter %s\n", filter.c_str());
        return 2;
    }
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
