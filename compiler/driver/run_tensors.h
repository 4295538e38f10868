// The tensors of `tilec run`: memory laid out as the compiled kernel reads and writes it
// (f16/bf16/f8 bits, i4 packed two per byte, bool as one byte), seeded random contents,
// poison for outputs, guard bytes past the end, and the comparison of what the kernel
// wrote with the reference interpreter's float64 result.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "interp/interp.h"
#include "ir/ir.h"

namespace tilec::driver {

// splitmix64: the same numbers for a seed on every machine.
class SplitMix64 {
public:
    explicit SplitMix64(uint64_t seed) : state_(seed) {}
    uint64_t next();
    double uniform(double lo, double hi);     // in [lo, hi)
    int64_t integer(int64_t lo, int64_t hi);  // in [lo, hi]

private:
    uint64_t state_;
};

struct HostTensor {
    // Bytes after the last element, filled with 0xff and checked after each run: a
    // change means the kernel wrote past the end of the tensor.
    static constexpr size_t kGuardBytes = 64;

    std::string name;
    ir::DataType dtype;
    ir::Access access = ir::Access::In;
    std::vector<int64_t> shape, strides;  // in elements
    int64_t span = 0;                     // elements from offset 0 to one past the last
    std::vector<unsigned char> bytes;     // the span, then the guard

    // Sets shape and strides, computes the span, allocates and poisons the memory.
    void allocate(std::vector<int64_t> shape_, std::vector<int64_t> strides_);
    // Number of logical elements (product of the shape; 1 for rank 0).
    int64_t elements() const;
    size_t data_bytes() const;
    void* data() { return bytes.data(); }

    // The element at `offset` (in elements), decoded exactly. Floats as double (NaN for
    // the poison); integers and bool as their integer value (bool: the raw byte).
    double get_float(int64_t offset) const;
    int64_t get_int(int64_t offset) const;
    // Stores `v` rounded (float) or wrapped (integer) to the element type.
    void set_float(int64_t offset, double v);
    void set_int(int64_t offset, int64_t v);

    // Every element of the span (gaps of strided tensors too): floats uniform in
    // [-1, 1) rounded to the type; integers uniform in [-8, 8] (signed; i4 [-8, 7]) or
    // [1, 15] (unsigned), never 0 (so dividing by an input cannot trap); bool 0 or 1.
    void fill_random(SplitMix64& rng);
    // Every element of the span uniform in [lo, hi] (an integer tensor; tilec run
    // --int-range).
    void fill_random_ints(SplitMix64& rng, int64_t lo, int64_t hi);
    // 0xff bytes: NaN in every float format, -1 / the maximum in integer formats.
    void poison();
    // The element's bits are the poison (for an `out` tensor: never written, since no
    // arithmetic makes an all-ones NaN in f16, bf16, f32 or f64).
    bool is_poison(int64_t offset) const;
    bool guard_intact() const;

    // The tensor as the interpreter takes it, with the values now in memory; an `out`
    // tensor starts as NaN (floats) or ref_sentinel() (integers, bool), which differs
    // from the poison, so an element neither side writes is a mismatch.
    interp::TensorArg to_interp() const;
    int64_t ref_sentinel() const;
    // Calls fn(offset, index) for every logical element, last dimension fastest.
    template <typename Fn>
    void for_each(Fn fn) const {
        if (elements() == 0) return;
        std::vector<int64_t> idx(shape.size(), 0);
        for (;;) {
            int64_t off = 0;
            for (size_t k = 0; k < idx.size(); ++k) off += idx[k] * strides[k];
            fn(off, idx);
            size_t k = idx.size();
            while (k > 0 && ++idx[k - 1] == shape[k - 1]) idx[--k] = 0;
            if (k == 0) return;
        }
    }
};

struct Tolerance {
    double rtol = 0, atol = 0;
};
// The default tolerance (rtol / atol) for outputs of element type `t`: f64 1e-10 /
// 1e-14, f32 1e-5 / 1e-8, f16 1e-2 / 1e-5, bf16 2e-2 / 1e-5, f8e4m3 0.125 / 1e-3,
// f8e5m2 0.25 / 1e-3, integers and bool exact. rtol scales with max |ref| (see
// Comparison); atol matters only for outputs that are (nearly) all zero.
Tolerance default_tolerance(ir::DataType t);

// How one output of the kernel differs from the reference. Errors are normwise: an
// element fails when |got - ref| > atol + rtol * scale, where scale = max |ref| over the
// tensor (finite values), so elements near zero are judged against the output's size,
// not their own. max_rel = max |got - ref| / scale. Elements NaN on both sides match;
// a NaN or infinity on one side only, or infinities of different sign, fail.
// Elements of an `out` tensor the kernel never wrote (still the poison) fail, even where
// the reference wrote nothing either (except in f8 formats, where the poison byte is
// also the NaN that arithmetic makes: there it matches a NaN reference).
struct Comparison {
    struct Element {
        std::vector<int64_t> index;
        double got = 0, ref = 0;
        bool got_unwritten = false;  // the kernel left the poison there
        bool ref_unwritten = false;  // the reference left its starting value there
    };
    int64_t compared = 0;
    int64_t mismatches = 0;
    int64_t unwritten = 0;  // mismatches where the kernel never wrote
    int64_t both_nan = 0;
    int64_t unsampled = 0;  // skipped: written by neither (blocks left out by --sim-blocks)
    double scale = 0;
    double max_abs = 0;
    double max_rel = 0;
    Element worst;               // the largest |got - ref| (or the first non-finite mismatch)
    std::vector<Element> first;  // the first few mismatches, in memory order
    bool pass() const { return mismatches == 0; }
};

// `skip_unwritten_by_both`: an output element neither the kernel nor the reference wrote
// is not compared (counted in `unsampled`): only when both ran the same sample of blocks.
Comparison compare(const HostTensor& got, const interp::TensorArg& ref, Tolerance tol,
                   bool skip_unwritten_by_both = false);

// "C[3, 4]".
std::string element_name(const std::string& tensor, const std::vector<int64_t>& index);

}  // namespace tilec::driver
