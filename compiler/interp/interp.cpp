// run(): binds the arguments to the parameters, checks them, and executes the body once
// per block of the grid; also the storage of buffers shared by the rest.
#include "interp/interp.h"

#include <cmath>
#include <memory>

#include "interp/machine.h"

namespace tilec::interp {

namespace detail {

using namespace ir;

void fail(SourceLoc loc, std::string message) {
    throw InterpError{loc, std::move(message)};
}

std::string element_str(const Storage& s, const int64_t* idx) {
    std::string out = "'" + s.name() + "'[";
    for (size_t k = 0; k < s.shape.size(); ++k) out += (k ? ", " : "") + std::to_string(idx[k]);
    return out + "]";
}

Value Storage::read(int64_t off, const int64_t* idx, SourceLoc loc) const {
    if (track_init && !init[off])
        fail(loc, "read of uninitialised element " + element_str(*this, idx) + " of " +
                      scope_name(buffer->scope) + " buffer (never written)");
    if (dtype.is_float()) return Value::of_float(f[off]);
    if (i) return Value::of_int(i[off]);
    return convert(Value::of_float(f[off]), DataType::f64(), dtype);
}

void Storage::write(int64_t off, Value v, DataType from) {
    Value c = convert(v, from, dtype);
    if (dtype.is_float())
        f[off] = c.f;
    else if (i)
        i[off] = c.i;
    else
        f[off] = int_to_double(c.i, dtype);
    if (track_init) init[off] = 1;
}

namespace {

// Binds a tensor argument to its parameter: evaluates the declared shape and strides,
// compares them with what the argument states, and checks that its array is large
// enough.
void bind_tensor(Machine& m, const Buffer& b, TensorArg& arg, Storage& st) {
    st.buffer = b.get();
    st.dtype = b->dtype;
    st.global = true;
    st.writable = b->access != Access::In;
    std::string what = "tensor '" + b->name + "'";
    if (b->rank() > kMaxRank) fail(b->loc, what + " has more than 16 dimensions");
    for (const auto& e : b->shape) {
        int64_t n = m.eval_int(e);
        if (n < 0) fail(b->loc, what + " has a negative dimension " + std::to_string(n));
        st.shape.push_back(n);
    }
    if (b->strides.empty()) {
        st.strides = scalar::row_major_strides(st.shape);
    } else {
        for (const auto& e : b->strides) st.strides.push_back(m.eval_int(e));
    }
    if (!arg.shape.empty() && arg.shape != st.shape)
        fail(b->loc, what + " is given with shape " + shape_str(arg.shape) + "; the sizes make it " +
                         shape_str(st.shape));
    if (!arg.strides.empty() && arg.strides != st.strides)
        fail(b->loc, what + " is given with strides " + shape_str(arg.strides) + "; it is declared with " +
                         shape_str(st.strides));
    // The offsets the tensor may touch.
    int64_t lo = 0, hi = 0;
    bool empty = false;
    for (size_t d = 0; d < st.shape.size(); ++d) {
        if (st.shape[d] == 0) empty = true;
        int64_t span = (st.shape[d] - 1) * st.strides[d];
        (span < 0 ? lo : hi) += span;
    }
    if (!empty && lo < 0)
        fail(b->loc, what + " with strides " + shape_str(st.strides) + " reaches before its first element");
    int64_t need = empty ? 0 : hi + 1;
    bool use_ints = !st.dtype.is_float() && !arg.ints.empty();
    int64_t have = static_cast<int64_t>(use_ints ? arg.ints.size() : arg.data.size());
    if (have < need)
        fail(b->loc, what + " " + shape_str(st.shape) + " with strides " + shape_str(st.strides) + " needs " +
                         std::to_string(need) + " elements; " + std::to_string(have) + " are given");
    if (use_ints) {
        st.i = arg.ints.data();
    } else {
        st.f = arg.data.data();
        // The memory of a narrower float tensor holds values of its type: round what
        // the caller wrote (in place, so the array shows what the kernel reads).
        scalar::round_tensor_data(arg.data, st.dtype);
    }
}

}  // namespace

}  // namespace detail

using namespace detail;

std::string Result::str() const {
    if (ok) return "ok";
    std::string out;
    if (loc.valid()) out += std::to_string(loc.line) + ":" + std::to_string(loc.col) + ": ";
    out += message;
    if (in_block)
        out += " (block " + std::to_string(block[0]) + ", " + std::to_string(block[1]) + ", " +
               std::to_string(block[2]) + ")";
    return out;
}

std::string Result::str(const SourceManager& sources) const {
    if (ok || !loc.valid() || loc.file == 0 || loc.file > sources.file_count()) return str();
    return sources.path(loc.file) + ":" + str();
}

bool for_each_block(const std::array<int64_t, 3>& dims, const std::vector<std::array<int64_t, 3>>& blocks,
                    const std::function<void(int64_t x, int64_t y, int64_t z)>& run_block) {
    for (auto& b : blocks)
        for (int d = 0; d < 3; ++d)
            if (b[d] < 0 || b[d] >= dims[d]) return false;
    if (!blocks.empty()) {
        for (auto& b : blocks) run_block(b[0], b[1], b[2]);
        return true;
    }
    for (int64_t z = 0; z < dims[2]; ++z)
        for (int64_t y = 0; y < dims[1]; ++y)
            for (int64_t x = 0; x < dims[0]; ++x) run_block(x, y, z);
    return true;
}

Result run(const ir::PrimFunc& f, RunArgs& args, const RunOptions& opt) {
    Result res;
    Machine m(opt);
    std::vector<std::unique_ptr<Storage>> tensors;
    bool in_block = false;
    std::array<int64_t, 3> block{};
    try {
        if (auto miscount =
                scalar::param_count_error(f, args.tensors.size(), args.sizes.size(), args.scalars.size()))
            fail(f.loc, *miscount);

        // Sizes and scalars first: tensor shapes and strides are expressions of them.
        size_t si = 0, ci = 0;
        for (const auto& p : f.params) {
            if (p.kind == ir::ParamKind::Size) {
                int64_t v = args.sizes[si++];
                if (v < 0)
                    fail(p.var->loc, "size '" + p.var->name + "' is negative (" + std::to_string(v) + ")");
                m.push_var(p.var.get(), Value::of_int(ir::normalize_int(v, p.var->type)));
            } else if (p.kind == ir::ParamKind::Scalar) {
                double v = args.scalars[ci++];
                ir::DataType t = p.var->type;
                if (!t.is_float() && !t.is_bool()) {
                    bool fits = std::trunc(v) == v && v >= std::ldexp(t.is_uint() ? 0.0 : -1.0, t.bits - 1) &&
                                v < std::ldexp(1.0, t.is_uint() ? t.bits : t.bits - 1);
                    if (!fits)
                        fail(p.var->loc, "scalar '" + p.var->name + "' = " + std::to_string(v) +
                                             " is not a value of " + t.str());
                }
                m.push_var(p.var.get(), convert(Value::of_float(v), ir::DataType::f64(), t));
            }
        }
        size_t ti = 0;
        for (const auto& p : f.params) {
            if (p.kind != ir::ParamKind::Tensor) continue;
            tensors.push_back(std::make_unique<Storage>());
            bind_tensor(m, p.buffer, args.tensors[ti++], *tensors.back());
            m.push_buffer(p.buffer.get(), tensors.back().get());
        }

        // The grid.
        if (f.grid.empty() || f.grid.size() > 3) fail(f.loc, "the grid must have 1 to 3 dimensions");
        std::array<int64_t, 3> dims = {1, 1, 1};
        for (size_t d = 0; d < f.grid.size(); ++d) {
            dims[d] = m.eval_int(f.grid[d]);
            if (dims[d] < 0)
                fail(
                    f.grid[d]->loc.valid() ? f.grid[d]->loc : f.loc,
                    "grid dimension " + std::to_string(d) + " is negative (" + std::to_string(dims[d]) + ")");
        }
        const int64_t limit = int64_t(1) << 31;
        if (!opt.blocks.empty()) {
            // Only the blocks listed run: the grid's size costs nothing.
        } else if (dims[0] > limit || dims[1] > limit || dims[2] > limit || dims[0] * dims[1] > limit ||
            dims[0] * dims[1] * dims[2] > limit)
            fail(f.loc, "the grid (" + std::to_string(dims[0]) + ", " + std::to_string(dims[1]) + ", " +
                            std::to_string(dims[2]) + ") has more than 2^31 blocks");
        for (int d = 0; d < 3; ++d) {
            if (!f.block_idx[d]) fail(f.loc, "missing block index variable");
            m.push_var(f.block_idx[d].get(), Value::of_int(0));
        }
        if (!f.body) fail(f.loc, "function without a body");
        auto run_block = [&](int64_t x, int64_t y, int64_t z) {
            if (opt.block_filter && !opt.block_filter(x, y, z)) return;
            block = {x, y, z};
            in_block = true;
            // The block indices are the three innermost bindings.
            m.pop_var();
            m.pop_var();
            m.pop_var();
            m.push_var(f.block_idx[0].get(), Value::of_int(x));
            m.push_var(f.block_idx[1].get(), Value::of_int(y));
            m.push_var(f.block_idx[2].get(), Value::of_int(z));
            m.exec(f.body);
            in_block = false;
        };
        if (!for_each_block(dims, opt.blocks, run_block)) fail(f.loc, "a block asked for is outside the grid");
    } catch (const InterpError& e) {
        res.ok = false;
        res.message = e.message;
        res.loc = e.loc;
        res.in_block = in_block;
        res.block = block;
    } catch (const std::exception& e) {
        res.ok = false;
        res.message = std::string("internal error in the interpreter: ") + e.what();
        res.in_block = in_block;
        res.block = block;
    }
    return res;
}

}  // namespace tilec::interp
