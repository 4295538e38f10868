// The tile operations (copy, gemm, fill, reduce, cumsum, atomic_add) over regions:
// masked at global tensor edges, bounds-checked on block buffers, rounded on store.
#include <cmath>

#include "interp/machine.h"

namespace tilec::interp::detail {

using namespace ir;

namespace {

// A region with its start and extents evaluated.
struct Box {
    Storage* st = nullptr;
    std::vector<int64_t> start, extent;
    DataType dtype() const { return st->dtype; }
};

// Calls f(idx) for every index of a box of extents `ext`, row-major (last fastest).
template <typename F>
void for_each_index(const std::vector<int64_t>& ext, F&& f) {
    for (int64_t e : ext)
        if (e <= 0) return;
    std::vector<int64_t> idx(ext.size(), 0);
    while (true) {
        f(idx.data());
        size_t d = ext.size();
        while (d > 0) {
            --d;
            if (++idx[d] < ext[d]) break;
            idx[d] = 0;
            if (d == 0) return;
        }
        if (ext.empty()) return;
    }
}

int64_t product(const std::vector<int64_t>& v) {
    int64_t p = 1;
    for (int64_t x : v) p *= x;
    return p;
}

// The dimensions of a box whose extent is not 1 (how copy-like ops line up two
// regions: {1, 1, 64, 128} matches {64, 128}).
std::vector<size_t> non_unit_dims(const Box& b) {
    std::vector<size_t> out;
    for (size_t d = 0; d < b.extent.size(); ++d)
        if (b.extent[d] != 1) out.push_back(d);
    return out;
}

std::vector<int64_t> extents_of(const Box& b, const std::vector<size_t>& dims) {
    std::vector<int64_t> out;
    for (size_t d : dims) out.push_back(b.extent[d]);
    return out;
}

double as_double(Value v, DataType t) {
    return t.is_float() ? v.f : int_to_double(v.i, t);
}

using scalar::nan_max;
using scalar::nan_min;

// Evaluates a region and checks it: its rank, non-negative extents, and for block
// buffers (not global tensors, which are masked instead) that it lies inside.
Box eval_box(Machine& m, const Region& r, SourceLoc loc, const char* op, bool written) {
    Box b;
    b.st = &m.storage(r.buffer, loc);
    const Storage& s = *b.st;
    if (r.start.size() != s.shape.size() || r.extent.size() != s.shape.size())
        fail(loc, std::string(op) + ": region of '" + s.name() + "' does not match its rank " +
                      std::to_string(s.shape.size()));
    for (size_t d = 0; d < s.shape.size(); ++d) {
        b.start.push_back(m.eval_int(r.start[d]));
        b.extent.push_back(m.eval_int(r.extent[d]));
        if (b.extent[d] < 0)
            fail(loc, std::string(op) + ": region of '" + s.name() + "' has a negative extent " +
                          std::to_string(b.extent[d]));
        if (!s.global && (b.start[d] < 0 || b.start[d] + b.extent[d] > s.shape[d]))
            fail(loc, std::string(op) + ": region [" + std::to_string(b.start[d]) + ", " +
                          std::to_string(b.start[d] + b.extent[d]) + ") of " + scope_name(s.buffer->scope) +
                          " buffer '" + s.name() + "' is out of bounds in dimension " + std::to_string(d) +
                          " of size " + std::to_string(s.shape[d]));
    }
    if (written && !s.writable) fail(loc, std::string(op) + " writes to input tensor '" + s.name() + "'");
    return b;
}

// Lines up two regions element by element (extent-1 dimensions squeezed on both
// sides) and calls f(src_idx, dst_idx) for each pair, in row-major order.
template <typename F>
void for_each_pair(const Box& src, const Box& dst, SourceLoc loc, const char* op, F&& f) {
    auto sd = non_unit_dims(src), dd = non_unit_dims(dst);
    auto shape = extents_of(src, sd);
    if (shape != extents_of(dst, dd))
        fail(loc, std::string(op) + ": extents " + shape_str(src.extent) + " of '" + src.st->name() +
                      "' and " + shape_str(dst.extent) + " of '" + dst.st->name() + "' differ");
    std::vector<int64_t> si(src.start), di(dst.start);
    for_each_index(shape, [&](const int64_t* idx) {
        for (size_t k = 0; k < sd.size(); ++k) si[sd[k]] = src.start[sd[k]] + idx[k];
        for (size_t k = 0; k < dd.size(); ++k) di[dd[k]] = dst.start[dd[k]] + idx[k];
        f(si.data(), di.data());
    });
}

}  // namespace

void Machine::exec_copy(const CopyNode* op) {
    Box src = eval_box(*this, op->src, op->loc, "copy", false);
    Box dst = eval_box(*this, op->dst, op->loc, "copy", true);
    Value pad = convert(eval(op->pad), op->pad->type, src.dtype());
    // Read everything first, so a copy within one buffer sees the old values.
    std::vector<std::pair<int64_t, Value>> out;
    for_each_pair(src, dst, op->loc, "copy", [&](const int64_t* si, const int64_t* di) {
        if (!dst.st->in_bounds(di)) return;  // past a global tensor's edge: dropped
        Value v = src.st->in_bounds(si) ? src.st->read(src.st->offset(si), si, op->loc) : pad;
        out.emplace_back(dst.st->offset(di), v);
    });
    for (auto& [off, v] : out) dst.st->write(off, v, src.dtype());
}

void Machine::exec_fill(const FillNode* op) {
    Box dst = eval_box(*this, op->dst, op->loc, "fill", true);
    Value v = eval(op->value);
    std::vector<int64_t> di(dst.start);
    for_each_index(dst.extent, [&](const int64_t* idx) {
        for (size_t d = 0; d < di.size(); ++d) di[d] = dst.start[d] + idx[d];
        if (dst.st->in_bounds(di.data())) dst.st->write(dst.st->offset(di.data()), v, op->value->type);
    });
}

void Machine::exec_gemm(const GemmNode* op) {
    Box a = eval_box(*this, op->a, op->loc, "gemm", false);
    Box b = eval_box(*this, op->b, op->loc, "gemm", false);
    Box c = eval_box(*this, op->c, op->loc, "gemm", true);
    if (a.extent.size() != 2 || b.extent.size() != 2 || c.extent.size() != 2)
        fail(op->loc, "gemm operands must be 2-D");
    int64_t M = a.extent[op->trans_a ? 1 : 0], K = a.extent[op->trans_a ? 0 : 1];
    int64_t Kb = b.extent[op->trans_b ? 1 : 0], N = b.extent[op->trans_b ? 0 : 1];
    if (K != Kb || c.extent[0] != M || c.extent[1] != N)
        fail(op->loc, "gemm shapes do not agree: a " + shape_str(a.extent) + ", b " + shape_str(b.extent) +
                          ", c " + shape_str(c.extent));
    // Element (r, k) of op(x), as an index of x's buffer.
    auto at = [](const Box& x, bool trans, int64_t r, int64_t k, int64_t* idx) {
        idx[0] = x.start[0] + (trans ? k : r);
        idx[1] = x.start[1] + (trans ? r : k);
    };
    bool integer = !a.dtype().is_float() && !b.dtype().is_float() && !c.dtype().is_float();
    // Gather the operands (checking that every element was written) once.
    std::vector<double> fa, fb;
    std::vector<int64_t> ia, ib;
    int64_t idx[2];
    auto gather = [&](const Box& x, bool trans, int64_t rows, std::vector<double>& fv,
                      std::vector<int64_t>& iv) {
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t k = 0; k < K; ++k) {
                at(x, trans, r, k, idx);
                Value v = x.st->read(x.st->offset(idx), idx, op->loc);
                if (integer)
                    iv.push_back(v.i);
                else
                    fv.push_back(as_double(v, x.dtype()));
            }
    };
    gather(a, op->trans_a, M, fa, ia);   // [M][K]
    gather(b, !op->trans_b, N, fb, ib);  // [N][K]: op(b)^T
    for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
            idx[0] = c.start[0] + i;
            idx[1] = c.start[1] + j;
            int64_t off = c.st->offset(idx);
            if (integer) {
                uint64_t acc = op->clear ? 0 : static_cast<uint64_t>(c.st->read(off, idx, op->loc).i);
                for (int64_t k = 0; k < K; ++k)
                    acc += static_cast<uint64_t>(ia[i * K + k]) * static_cast<uint64_t>(ib[j * K + k]);
                c.st->write(off, Value::of_int(static_cast<int64_t>(acc)), DataType::i64());
            } else {
                double acc = op->clear ? 0.0 : as_double(c.st->read(off, idx, op->loc), c.dtype());
                for (int64_t k = 0; k < K; ++k) acc += fa[i * K + k] * fb[j * K + k];
                c.st->write(off, Value::of_float(acc), DataType::f64());
            }
        }
}

namespace {

// Accumulates one reduction in double (or int64 for integer source and destination).
struct Reducer {
    ReduceKind kind;
    bool integer;
    bool u64;
    bool have = false;
    double f = 0;
    int64_t i = 0;

    void add(Value v, DataType t) {
        if (integer) {
            int64_t x = v.i;
            if (kind == ReduceKind::AbsMax && x < 0 && !t.is_uint())
                x = static_cast<int64_t>(0 - static_cast<uint64_t>(x));
            if (!have) {
                i = kind == ReduceKind::Sum ? 0 : x;
                have = true;
                if (kind != ReduceKind::Sum) return;
            }
            auto less = [&](int64_t p, int64_t q) {
                return u64 ? static_cast<uint64_t>(p) < static_cast<uint64_t>(q) : p < q;
            };
            switch (kind) {
            case ReduceKind::Sum:
                i = static_cast<int64_t>(static_cast<uint64_t>(i) + static_cast<uint64_t>(x));
                break;
            case ReduceKind::Min: i = less(x, i) ? x : i; break;
            case ReduceKind::Max:
            case ReduceKind::AbsMax: i = less(i, x) ? x : i; break;
            }
            return;
        }
        double x = as_double(v, t);
        if (!have) {
            f = kind == ReduceKind::Sum   ? 0.0
                : kind == ReduceKind::Min ? HUGE_VAL
                : kind == ReduceKind::Max ? -HUGE_VAL
                                          : 0.0;
            have = true;
        }
        switch (kind) {
        case ReduceKind::Sum: f += x; break;
        case ReduceKind::Max: f = nan_max(f, x); break;
        case ReduceKind::Min: f = nan_min(f, x); break;
        case ReduceKind::AbsMax: f = nan_max(f, std::fabs(x)); break;
        }
    }
    Value value() const { return integer ? Value::of_int(i) : Value::of_float(f); }
    DataType type() const { return integer ? DataType::i64() : DataType::f64(); }
};

}  // namespace

void Machine::exec_reduce(const ReduceNode* op) {
    Box src = eval_box(*this, op->src, op->loc, "reduce", false);
    Box dst = eval_box(*this, op->dst, op->loc, "reduce", true);
    size_t rank = src.extent.size();
    if (op->dim < 0 || static_cast<size_t>(op->dim) >= rank)
        fail(op->loc,
             "reduce dim " + std::to_string(op->dim) + " out of range for rank " + std::to_string(rank));
    size_t dim = static_cast<size_t>(op->dim);
    // The output's extents: the source's without `dim`; dst has them, or them with a 1
    // at `dim`.
    std::vector<int64_t> out_ext;
    for (size_t d = 0; d < rank; ++d)
        if (d != dim) out_ext.push_back(src.extent[d]);
    bool keep_dim = dst.extent.size() == rank;
    std::vector<int64_t> want = out_ext;
    if (keep_dim) want.insert(want.begin() + dim, 1);
    if (dst.extent != want)
        fail(op->loc, "reduce: destination '" + dst.st->name() + "' " + shape_str(dst.extent) +
                          " does not match the source " + shape_str(src.extent) + " without dimension " +
                          std::to_string(dim));
    bool integer = !src.dtype().is_float() && !dst.dtype().is_float();
    bool u64 = is_u64(src.dtype());
    std::vector<Reducer> acc(static_cast<size_t>(product(out_ext)), Reducer{op->reduce_kind, integer, u64});
    std::vector<int64_t> si(rank);
    for_each_index(src.extent, [&](const int64_t* idx) {
        int64_t lin = 0;
        for (size_t d = 0; d < rank; ++d) {
            si[d] = src.start[d] + idx[d];
            if (d != dim) lin = lin * src.extent[d] + idx[d];
        }
        acc[lin].add(src.st->read(src.st->offset(si.data()), si.data(), op->loc), src.dtype());
    });
    std::vector<int64_t> di(dst.extent.size());
    int64_t lin = 0;
    for_each_index(out_ext, [&](const int64_t* idx) {
        for (size_t d = 0, k = 0; d < di.size(); ++d)
            di[d] = dst.start[d] + ((keep_dim && d == dim) ? 0 : idx[k++]);
        int64_t off = dst.st->offset(di.data());
        Reducer& r = acc[lin++];
        if (!op->clear) r.add(dst.st->read(off, di.data(), op->loc), dst.dtype());
        dst.st->write(off, r.value(), r.type());
    });
}

void Machine::exec_cumsum(const CumsumNode* op) {
    Box src = eval_box(*this, op->src, op->loc, "cumsum", false);
    Box dst = eval_box(*this, op->dst, op->loc, "cumsum", true);
    size_t rank = src.extent.size();
    if (op->dim < 0 || static_cast<size_t>(op->dim) >= rank)
        fail(op->loc,
             "cumsum dim " + std::to_string(op->dim) + " out of range for rank " + std::to_string(rank));
    size_t dim = static_cast<size_t>(op->dim);
    bool integer = !src.dtype().is_float() && !dst.dtype().is_float();
    // Read the source, row-major over its extents.
    std::vector<double> fv;
    std::vector<int64_t> iv;
    std::vector<int64_t> si(rank);
    for_each_index(src.extent, [&](const int64_t* idx) {
        for (size_t d = 0; d < rank; ++d) si[d] = src.start[d] + idx[d];
        Value v = src.st->read(src.st->offset(si.data()), si.data(), op->loc);
        if (integer)
            iv.push_back(v.i);
        else
            fv.push_back(as_double(v, src.dtype()));
    });
    // Scan along `dim`: the elements of one line are `stride` apart.
    int64_t stride = 1;
    for (size_t d = dim + 1; d < rank; ++d) stride *= src.extent[d];
    int64_t n = src.extent[dim], total = product(src.extent);
    for (int64_t base = 0; base < total; ++base) {
        if ((base / stride) % n != 0) continue;  // not the first element of a line
        double fs = 0;
        uint64_t is = 0;
        for (int64_t k = 0; k < n; ++k) {
            int64_t at = base + (op->reverse ? n - 1 - k : k) * stride;
            if (integer) {
                is += static_cast<uint64_t>(iv[at]);
                iv[at] = static_cast<int64_t>(is);
            } else {
                fs += fv[at];
                fv[at] = fs;
            }
        }
    }
    // Write to dst, lined up like a copy.
    std::vector<std::pair<int64_t, int64_t>> order;  // (dst offset, index into the values)
    for_each_pair(src, dst, op->loc, "cumsum", [&](const int64_t* s, const int64_t* d) {
        int64_t lin = 0;
        for (size_t k = 0; k < rank; ++k) lin = lin * src.extent[k] + (s[k] - src.start[k]);
        order.emplace_back(dst.st->offset(d), lin);
    });
    for (auto& [off, lin] : order) {
        if (integer)
            dst.st->write(off, Value::of_int(iv[lin]), DataType::i64());
        else
            dst.st->write(off, Value::of_float(fv[lin]), DataType::f64());
    }
}

void Machine::exec_atomic_add(const AtomicAddNode* op) {
    Box dst = eval_box(*this, op->dst, op->loc, "atomic_add", true);
    Box src = eval_box(*this, op->src, op->loc, "atomic_add", false);
    DataType dt = dst.dtype(), st = src.dtype();
    for_each_pair(src, dst, op->loc, "atomic_add", [&](const int64_t* si, const int64_t* di) {
        if (!dst.st->in_bounds(di)) return;  // past a global tensor's edge: dropped
        Value v = src.st->read(src.st->offset(si), si, op->loc);
        int64_t off = dst.st->offset(di);
        Value old = dst.st->read(off, di, op->loc);
        if (dt.is_float()) {
            dst.st->write(off, Value::of_float(old.f + as_double(v, st)), DataType::f64());
        } else {
            Value x = convert(v, st, dt);
            dst.st->write(off,
                          Value::of_int(static_cast<int64_t>(static_cast<uint64_t>(old.i) +
                                                             static_cast<uint64_t>(x.i))),
                          DataType::i64());
        }
    });
}

}  // namespace tilec::interp::detail
