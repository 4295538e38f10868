// A run of the simulator: argument binding, the block loop, the issue list, and sim::run,
// which turns the executor's errors into a Result.
#include <cstdio>
#include <memory>
#include <set>

#include "sim/executor.h"

namespace tilec::sim::detail {

using namespace ir;

void fatal(SourceLoc loc, std::string message) {
    throw Fatal{loc, std::move(message)};
}

Executor::Executor(const PrimFunc& f, const Options& opt, Result& res) : f_(f), opt_(opt), res_(res) {
    warp_ = opt.target ? opt.target->warp_size : 32;
    lds_lane_groups_ = opt.target && opt.target->lds_lane_groups;
    res_.warp_size = warp_;
}

void Executor::issue(IssueKind kind, SourceLoc loc, int t, const std::function<std::string()>& message) {
    ++res_.total_issues;
    auto key = std::make_tuple(static_cast<int>(kind), loc.file, loc.line, loc.col);
    // A cluster's CTAs share the first one's list (one site, one entry).
    auto& issue_index_ = primary_ ? primary_->issue_index_ : this->issue_index_;
    auto it = issue_index_.find(key);
    if (it != issue_index_.end()) {
        ++res_.issues[it->second].count;
    } else {
        Issue is;
        is.kind = kind;
        is.loc = loc;
        is.message = message();
        is.block = block_;
        is.thread = t;
        issue_index_.emplace(key, res_.issues.size());
        res_.issues.push_back(std::move(is));
    }
    if (opt_.max_issues > 0 && res_.total_issues >= opt_.max_issues) throw TooManyIssues{};
}

void Executor::bind_tensors(interp::RunArgs& args, std::vector<std::unique_ptr<Storage>>& tensors) {
    res_.written.clear();
    size_t n_tensors = 0;
    for (const auto& p : f_.params) n_tensors += p.kind == ParamKind::Tensor;
    res_.written.resize(n_tensors);
    size_t ti = 0;
    for (const auto& p : f_.params) {
        if (p.kind != ParamKind::Tensor) continue;
        const Buffer& b = p.buffer;
        interp::TensorArg& arg = args.tensors[ti];
        auto st = std::make_unique<Storage>();
        st->buffer = b.get();
        st->scope = Scope::Global;
        st->dtype = b->dtype;
        st->writable = b->access != Access::In;
        st->elem_bytes = std::max(1, (b->dtype.bits + 7) / 8);
        std::string what = "tensor '" + b->name + "'";
        if (b->rank() > kMaxRank) fatal(b->loc, what + " has more than 16 dimensions");
        for (const auto& e : b->shape) {
            int64_t n = eval_int(e, 0);
            if (n < 0) fatal(b->loc, what + " has a negative dimension " + std::to_string(n));
            st->shape.push_back(n);
        }
        if (b->strides.empty()) {
            st->strides = scalar::row_major_strides(st->shape);
        } else {
            for (const auto& e : b->strides) st->strides.push_back(eval_int(e, 0));
        }
        if (!arg.shape.empty() && arg.shape != st->shape)
            fatal(b->loc, what + " is given with shape " + scalar::list_str(arg.shape) +
                              "; the sizes make it " + scalar::list_str(st->shape));
        if (!arg.strides.empty() && arg.strides != st->strides)
            fatal(b->loc, what + " is given with strides " + scalar::list_str(arg.strides) +
                              "; it is declared with " + scalar::list_str(st->strides));
        int64_t need = 1;
        for (size_t d = 0; d < st->shape.size(); ++d) {
            if (st->shape[d] == 0) need = 0;
            if (st->strides[d] < 0) fatal(b->loc, what + " has a negative stride");
        }
        if (need) {
            need = 1;
            for (size_t d = 0; d < st->shape.size(); ++d) need += (st->shape[d] - 1) * st->strides[d];
        }
        bool use_ints = !st->dtype.is_float() && !arg.ints.empty();
        int64_t have = static_cast<int64_t>(use_ints ? arg.ints.size() : arg.data.size());
        if (have < need)
            fatal(b->loc, what + " " + scalar::list_str(st->shape) + " needs " + std::to_string(need) +
                              " elements; " + std::to_string(have) + " are given");
        if (use_ints) {
            st->i = arg.ints.data();
        } else {
            st->f = arg.data.data();
            scalar::round_tensor_data(arg.data, st->dtype);
        }
        st->size = have;  // the elements the array holds (a cp.async reads a range of them)
        res_.written[ti].assign(static_cast<size_t>(have), 0);
        st->written = &res_.written[ti];
        // Each tensor in its own 2^40-byte window: 256-byte aligned, never adjacent.
        st->base = static_cast<int64_t>(ti + 1) << 40;
        buffers_.emplace_back(b.get(), st.get());
        tensors.push_back(std::move(st));
        ++ti;
    }
}

void Executor::run(interp::RunArgs& args) {
    using scalar::convert;
    if (!f_.body) fatal(f_.loc, "function without a body");
    if (f_.level != ir::FuncLevel::Thread)
        fatal(f_.loc,
              "'" + f_.name + "' is tile-level IR; the simulator runs thread-level IR (lower it first)");
    threads_ = static_cast<int>(f_.threads);
    if (f_.threads <= 0 || f_.threads > 1024)
        fatal(f_.loc, "'" + f_.name + "' has " + std::to_string(f_.threads) +
                          " threads per block (1..1024 simulated)");
    for (int t = 0; t < threads_; ++t) all_.push_back(t);
    sites_.push_back({SourceLoc{}, nullptr});

    if (auto error =
            scalar::param_count_error(f_, args.tensors.size(), args.sizes.size(), args.scalars.size()))
        fatal(f_.loc, *error);
    size_t si = 0, ci = 0;
    for (const auto& p : f_.params) {
        if (p.kind == ParamKind::Size) {
            int64_t v = args.sizes[si++];
            if (v < 0)
                fatal(p.var->loc, "size '" + p.var->name + "' is negative (" + std::to_string(v) + ")");
            uniform_.emplace_back(p.var.get(), Value::of_int(normalize_int(v, p.var->type)));
        } else if (p.kind == ParamKind::Scalar) {
            uniform_.emplace_back(p.var.get(),
                                  convert(Value::of_float(args.scalars[ci++]), DataType::f64(), p.var->type));
        }
    }
    // Tensors: shapes and strides from the sizes, checked against the arrays.
    std::vector<std::unique_ptr<Storage>> tensors;
    bind_tensors(args, tensors);

    if (f_.grid.empty() || f_.grid.size() > 3) fatal(f_.loc, "the grid must have 1 to 3 dimensions");
    std::array<int64_t, 3> dims = {1, 1, 1};
    for (size_t d = 0; d < f_.grid.size(); ++d) {
        dims[d] = eval_int(f_.grid[d], 0);
        if (dims[d] < 0) fatal(f_.loc, "grid dimension " + std::to_string(d) + " is negative");
    }
    for (int d = 0; d < 3; ++d)
        if (!f_.block_idx[d]) fatal(f_.loc, "missing block index variable");
    block_slot_ = uniform_.size();
    for (int d = 0; d < 3; ++d) uniform_.emplace_back(f_.block_idx[d].get(), Value::of_int(0));
    // Thread-block clusters (attribute "cluster" = "XxYxZ"): the CTAs of a cluster run
    // together, every CTA of each cluster a block asked for belongs to.
    isa::ClusterShape cluster;
    for (const auto& [k, v] : f_.attrs)
        if (k == "cluster") {
            long long x = 1, y = 1, z = 1;
            if (std::sscanf(v.c_str(), "%lldx%lldx%lld", &x, &y, &z) != 3)
                fatal(f_.loc, "cluster attribute '" + v + "' is not XxYxZ");
            cluster = {x, y, z};
        }
    if (cluster.size() > 1) {
        if (std::string p = isa::cluster_shape_problem(cluster, dims); !p.empty())
            fatal(f_.loc, "the launch of '" + f_.name + "' in clusters of " + std::to_string(cluster.x) + "x" +
                              std::to_string(cluster.y) + "x" + std::to_string(cluster.z) + " fails: " + p);
    }
    std::set<std::array<int64_t, 3>> clusters_run;
    auto visit = [&](int64_t x, int64_t y, int64_t z) {
        if (opt_.block_filter && !opt_.block_filter(x, y, z)) return;
        if (cluster.size() <= 1) return this->run_block({x, y, z});
        auto first = isa::cluster_first_block(cluster, {x, y, z});
        if (clusters_run.insert(first).second) run_cluster(cluster, first);
    };
    try {
        if (!interp::for_each_block(dims, opt_.blocks, visit))
            fatal(f_.loc, "a block asked for is outside the grid");
    } catch (const TooManyIssues&) {
        accesses_.clear();
    }
    for (auto& [key, c] : counters_) res_.counters.push_back(c);
}

void Executor::run_block(const std::array<int64_t, 3>& b) {
    block_ = b;
    for (int d = 0; d < 3; ++d) uniform_[block_slot_ + static_cast<size_t>(d)].second = Value::of_int(block_[static_cast<size_t>(d)]);
    epoch_ = 1;
    shared_top_ = 0;
    arena_.reset();
    async_.clear();
    async_copies_.assign(static_cast<size_t>(threads_), {});
    mbarriers_.clear();
    tma_in_flight_.clear();
    bulk_groups_.clear();
    released_.clear();
    release_arrivals_.assign(static_cast<size_t>(threads_), 0);
    release_known_.clear();
    release_acquired_.clear();
    release_floor_.clear();
    mbarrier_inits_.clear();
    init_cluster_arrivals_.clear();
    fences_.assign(static_cast<size_t>(threads_), 0);
    fence_epoch_.assign(static_cast<size_t>(threads_), 0);
    fences_before_epoch_.assign(static_cast<size_t>(threads_), 0);
    async_seen_.assign(static_cast<size_t>(threads_), 0);
    wgmma_groups_.assign(static_cast<size_t>((threads_ + 127) / 128), {});
    instances_.assign(1, Instance{nullptr, 0, 1});
    named_barriers_.reset();
    peer_instances_.clear();
    peer_allocs_seen_.clear();
    exec(f_.body, all_);
    flush();
    // A barrier phase still in progress at the block's end: arrivals nobody waited
    // for (an unmatched barrier.arrive), or syncs abandoned after a reported hang.
    for (const auto& p : named_barriers_.pending())
        issue(IssueKind::BarrierDivergence, f_.loc, 0, [&] {
            return "named barrier " + std::to_string(p.id) + " left with " + std::to_string(p.arrived) + " of its " +
                   std::to_string(p.count) + " arrivals at the block's end (an arrive no barrier.sync completes)";
        });
    ++res_.blocks_run;
}

}  // namespace tilec::sim::detail

namespace tilec::sim {

Result run(const ir::PrimFunc& f, interp::RunArgs& args, const Options& opt) {
    Result res;
    try {
        detail::Executor ex(f, opt, res);
        ex.run(args);
    } catch (const detail::Fatal& e) {
        res.ok = false;
        res.message = e.message;
        res.loc = e.loc;
    } catch (const std::exception& e) {
        res.ok = false;
        res.message = std::string("internal error in the simulator: ") + e.what();
    }
    return res;
}

}  // namespace tilec::sim
