// The fused optimizer step: ONE launch updates every parameter of a model
// from its flat gradient buffer. In the same pass it
//   - divides out the loss scale and the accumulation count,
//   - checks every gradient for inf/NaN: with a global pass (loss scaling,
//     clipping, LAMB, skip_nonfinite) it skips the whole update if one is
//     found; without one the update pass notes it; the state counts it either way,
//   - clips to a global gradient norm,
//   - applies the rule (SGD, AdamW, LAMB) to the fp32 master weights and the
//     optimizer state, and writes the storage-type weights,
//   - with pruning masks (prune/masks.hpp), drops the gradients of pruned
//     weights from the checks and the norm, and writes those weights and
//     their state as exact zeros,
//   - with parameter groups, gives each parameter its rate multiplier and
//     weight decay (ranges read from a table: still one launch),
//   - moves the weights' exponential moving average (ema.hpp), when kept,
//   - evaluates the LR schedule from the step counter and advances the
//     step state (loss scale, counters),
// all from device memory: nothing is read back, so a step can be captured in
// a CUDA Graph. A sharded step (ZeRO-1, optimizer.hpp) splits the global
// pass from the update: a measuring call writes its shard's totals, the
// ranks sum them, and the update reads the sums instead of its own pass. The checks and the norm are a global pass; on the device the
// kernel is a cooperative launch whose blocks meet at grid-wide barriers
// (after the global pass, between LAMB's two phases, before the state is
// advanced). The host runs the same phases in order over fixed 4096-element
// blocks split across cores, so its sums do not depend on the thread count.
#pragma once

#include "../memory/converting_chunks.hpp"
#include "../memory/stream.hpp"
#include "../numeric/convert.hpp"
#include "../tensor/tensor.hpp"
#include "ema.hpp"
#include "loss_scaler.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#if TENET_CUDA_COMPILER
#include "../exec/launch.hpp"

#include <cooperative_groups.h>
#include <cub/block/block_reduce.cuh>
#endif

namespace tenet::train::detail {

// A run of elements in the flat buffers -- one parameter tensor, or (the
// update's ranges) neighbours that train alike -- and how they train
// (parameter_groups.hpp).
struct segment {
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
    float lr_scale = 1.0f;      // multiplies the schedule's rate
    float weight_decay = 0.0f;  // replaces the rule's
};

// The rule as a segment trains with it: its weight decay replaced (a rule
// without one has none to replace).
template <class Rule>
TENET_HD Rule rule_for(Rule rule, const segment& s)
{
    if constexpr (requires { rule.weight_decay; }) rule.weight_decay = s.weight_decay;
    return rule;
}

// Everything the update reads and writes; trivially copyable (a kernel argument).
template <class Rule, class Schedule, class Storage, class Master>
struct update_args {
    Master* master;         // the master weights; the parameters themselves when Storage is Master
    Storage* parameters;    // written (rounded) when Storage is not Master
    const Master* gradients;
    const bool* keep;       // pruning masks (false: pruned), or null
    Master* slots[Rule::slots];
    std::uint64_t numel;
    const segment* segments;  // the parameters, for per-tensor (layerwise) rules
    unsigned segment_count;
    // Parameter groups: ranges covering [0, numel) in order, each with its
    // settings; null: every element trains with the rule as it is.
    const segment* ranges;
    unsigned range_count;
    step_state* state;
    Master* partials;  // device scratch: per block sums
    Rule rule;
    Schedule schedule;
    loss_scaler_options scaler;
    float clip_norm;      // 0: no clipping
    float grad_divisor;   // micro-batches accumulated into the gradient
    bool skip_nonfinite;  // a global pass skips a step with an inf/NaN gradient
    // A sharded step: [sum of squares, inf/NaN found] of the scaled
    // gradients; null for a whole step (which makes its own global pass).
    Master* totals;
    bool measure;  // write this shard's totals and return; otherwise read the ranks' sums
    Master* average;     // the weights' moving average (ema.hpp), or null
    ema average_rule;
};

template <class T>
TENET_HD bool is_finite(T x)
{
#if TENET_DEVICE_PASS
    return ::isfinite(x);
#else
    return std::isfinite(x);
#endif
}

// Whether element i is a weight that is kept (every element without masks).
template <class Args>
TENET_HD bool kept(const Args& a, std::uint64_t i)
{
    return a.keep == nullptr || a.keep[i];
}

// The gradient the global pass sees: a pruned weight's does not count.
template <class Args, class T>
TENET_HD T checked_gradient(const Args& a, std::uint64_t i, T inverse_scale)
{
    return kept(a, i) ? a.gradients[i] * inverse_scale : T(0);
}

// What the global pass decides for a step.
template <class T>
struct step_plan {
    T lr;
    T grad_multiplier;  // unscale * clip
    T grad_norm;
    bool skip;
};

template <class T>
TENET_HD step_plan<T> plan_step(T lr, T inverse_scale, T sum_squares, bool nonfinite, float clip_norm)
{
    // torch.nn.utils.clip_grad_norm_: coefficient max_norm / (norm + 1e-6), at most 1.
    const T norm = nonfinite ? T(0) : static_cast<T>(::sqrt(static_cast<double>(sum_squares)));
    T clip = T(1);
    if (clip_norm > 0.0f && norm > T(clip_norm)) clip = T(clip_norm) / (norm + T(1e-6));
    return {lr, inverse_scale * clip, norm, nonfinite};
}

template <bool Dynamic, class Rule>
inline constexpr bool needs_global_pass(float clip_norm, bool skip_nonfinite)
{
    return Dynamic || Rule::layerwise || clip_norm > 0.0f || skip_nonfinite;
}

// The rule's state of element i, loaded into registers and stored back.
template <class Args, class T, std::size_t N>
TENET_HD void load_slots(const Args& a, std::uint64_t i, T (&s)[N])
{
    TENET_UNROLL
    for (std::size_t j = 0; j < N; ++j) s[j] = a.slots[j][i];
}
template <class Args, class T, std::size_t N>
TENET_HD void store_slots(const Args& a, std::uint64_t i, const T (&s)[N])
{
    TENET_UNROLL
    for (std::size_t j = 0; j < N; ++j) a.slots[j][i] = s[j];
}

// Writes the new master weight, and the storage weight rounded from it.
template <class Args, class T>
TENET_HD void store_weight(const Args& a, std::uint64_t i, T w)
{
    using Storage = std::remove_pointer_t<decltype(a.parameters)>;
    a.master[i] = w;
    if constexpr (!std::is_same_v<Storage, T>) a.parameters[i] = convert<Storage>(w);
}

template <class Args>
inline constexpr std::size_t slot_count = std::extent_v<decltype(Args::slots)>;

// A pruned element: weight, state and average exactly zero.
template <class T, class Args>
TENET_HD void prune_element(const Args& a, std::uint64_t i)
{
    T s[slot_count<Args>] = {};
    store_slots(a, i, s);
    store_weight(a, i, T(0));
    if (a.average) a.average[i] = T(0);
}

// The average moved towards the new weight w by `weight` (1 - the decay).
template <class Args, class T>
TENET_HD void average_element(const Args& a, std::uint64_t i, T w, T weight)
{
    if (a.average) a.average[i] += weight * (w - a.average[i]);
}

// 1 - the average's decay for update t; 0 without an average.
template <class Args>
TENET_HD auto average_weight(const Args& a, std::uint64_t t)
{
    using T = std::remove_pointer_t<decltype(a.average)>;
    return a.average ? T(1) - a.average_rule.template decay_at<T>(t) : T(0);
}

// One element of a non-layerwise rule; false when its gradient is inf/NaN
// (how a step without a global pass still reports one).
template <class Args, class Rule, class T>
TENET_HD bool update_element(const Args& a, const Rule& rule, std::uint64_t i, T multiplier, const auto& k,
                             T average)
{
    if (!kept(a, i)) {
        prune_element<T>(a, i);
        return true;
    }
    T s[slot_count<Args>];
    load_slots(a, i, s);
    const T g = a.gradients[i] * multiplier;
    const T w = rule.update(a.master[i], g, s, k);
    store_slots(a, i, s);
    store_weight(a, i, w);
    average_element(a, i, w, average);
    return is_finite(g);
}

// Layerwise phase 1 for one element: advance the moments; return w and r.
template <class Args, class Rule, class T>
TENET_HD void moments_element(const Args& a, const Rule& rule, std::uint64_t i, T multiplier, const auto& k, T& w, T& r)
{
    w = r = T(0);
    if (!kept(a, i)) return prune_element<T>(a, i);
    T s[slot_count<Args>];
    load_slots(a, i, s);
    rule.accumulate(a.gradients[i] * multiplier, s);
    store_slots(a, i, s);
    w = a.master[i];
    r = rule.direction(w, s, k);
}

// Layerwise phase 2 for one element: w -= lr * trust * r.
template <class Args, class Rule, class T>
TENET_HD void apply_element(const Args& a, const Rule& rule, std::uint64_t i, T lr_trust, const auto& k, T average)
{
    if (!kept(a, i)) return;  // zeroed in phase 1
    T s[slot_count<Args>];
    load_slots(a, i, s);
    const T w = a.master[i] - lr_trust * rule.direction(a.master[i], s, k);
    store_weight(a, i, w);
    average_element(a, i, w, average);
}

// ---- host ----------------------------------------------------------------

inline constexpr std::uint64_t host_block = 4096;

// f(begin, end) over fixed blocks of [first, last), across cores; returns the
// per-block results in block order.
template <class R, class F>
std::vector<R> host_blocks(std::uint64_t first, std::uint64_t last, F f)
{
    const std::int64_t count = static_cast<std::int64_t>((last - first + host_block - 1) / host_block);
    std::vector<R> out(static_cast<std::size_t>(count));
    TENET_OMP_PARALLEL_FOR_IF(count > 1)
    for (std::int64_t b = 0; b < count; ++b) {
        const std::uint64_t begin = first + static_cast<std::uint64_t>(b) * host_block;
        const std::uint64_t end = begin + host_block < last ? begin + host_block : last;
        out[static_cast<std::size_t>(b)] = f(begin, end);
    }
    return out;
}

template <class T>
struct sums {
    T a = T(0);
    T b = T(0);
};

// 1 where g is inf or NaN (inf - inf and NaN - NaN are NaN): an integer to
// OR into a flag, where std::isfinite keeps a loop from vectorising.
template <class T>
constexpr unsigned nonfinite_bit(T g)
{
    return static_cast<unsigned>(!(g - g == T(0)));
}

// The global pass over [0, numel): the scaled gradients' sum of squares, and
// whether one is inf/NaN.
template <class Args, class T>
sums<T> host_totals(const Args& a, T inverse_scale)
{
    const auto partial = host_blocks<sums<T>>(0, a.numel, [&](std::uint64_t begin, std::uint64_t end) {
        // 16 partial sums, added in a fixed order: a loop that vectorises,
        // with the same bits under any thread count (the blocks are fixed).
        constexpr std::size_t lanes = 16;
        T squares[lanes] = {};
        unsigned nonfinite = 0;
        std::uint64_t i = begin;
        for (; i + lanes <= end; i += lanes) {
            TENET_SIMD_LOOP
            for (std::size_t l = 0; l < lanes; ++l) {
                const T g = checked_gradient(a, i + l, inverse_scale);
                squares[l] += g * g;
                nonfinite |= nonfinite_bit(g);
            }
        }
        for (; i < end; ++i) {
            const T g = checked_gradient(a, i, inverse_scale);
            squares[i % lanes] += g * g;
            nonfinite |= nonfinite_bit(g);
        }
        sums<T> s;
        for (const T square : squares) s.a += square;
        s.b = nonfinite != 0 ? T(1) : T(0);
        return s;
    });
    sums<T> total;
    for (const auto& s : partial) total = {total.a + s.a, total.b != T(0) || s.b != T(0) ? T(1) : T(0)};
    return total;
}

// The storage copies of master[begin, end), rounded 16 at a time in a loop
// of their own: an f16 rounding inlined into the update keeps it scalar.
template <class Args>
void host_round_parameters(const Args& a, std::uint64_t begin, std::uint64_t end)
{
    using Storage = std::remove_pointer_t<decltype(a.parameters)>;
    if constexpr (!std::is_same_v<Storage, std::remove_pointer_t<decltype(a.master)>>) {
        constexpr std::uint64_t k = 16;
        std::uint64_t i = begin;
        for (; i + k <= end; i += k) internal::store_chunk_as<k>(a.parameters + i, internal::load_input_chunk<k>(a.master + i));
        for (; i < end; ++i) a.parameters[i] = convert<Storage>(a.master[i]);
    }
}

// update_element over [begin, end) without pruning masks, as loops the
// compiler vectorises: the update with no branch, then the inf/NaN check
// (an integer OR; std::isfinite, or the check inside the update loop, would
// keep either from vectorising). The block's gradients are still in cache.
template <class Args, class Rule, class T>
char host_update_unmasked(const Args& a, const Rule& rule, std::uint64_t begin, std::uint64_t end, T multiplier,
                          const auto& k, T average)
{
    TENET_SIMD_LOOP
    for (std::uint64_t i = begin; i < end; ++i) {
        T s[slot_count<Args>];
        load_slots(a, i, s);
        a.master[i] = rule.update(a.master[i], a.gradients[i] * multiplier, s, k);
        store_slots(a, i, s);
    }
    host_round_parameters(a, begin, end);
    if (a.average) {
        TENET_SIMD_LOOP
        for (std::uint64_t i = begin; i < end; ++i) a.average[i] += average * (a.master[i] - a.average[i]);
    }
    unsigned nonfinite = 0;
    for (std::uint64_t i = begin; i < end; ++i) {
        const T g = a.gradients[i] * multiplier;
        nonfinite |= nonfinite_bit(g);
    }
    return nonfinite != 0 ? char{1} : char{0};
}

// The range holding element i (the ranges cover [0, numel) in order).
template <class Args>
unsigned first_range(const Args& a, std::uint64_t i)
{
    unsigned lo = 0, hi = a.range_count;
    while (hi - lo > 1) {
        const unsigned mid = (lo + hi) / 2;
        (a.ranges[mid].begin <= i ? lo : hi) = mid;
    }
    return lo;
}

template <bool Dynamic, class Rule, class Schedule, class Storage, class T>
void host_update(const update_args<Rule, Schedule, Storage, T>& a)
{
    const step_state state = *a.state;
    const T lr = static_cast<T>(a.schedule(state.iteration));
    const T inverse_scale = T(1) / (T(Dynamic ? state.loss_scale : 1.0f) * T(a.grad_divisor));
    const bool global_pass = needs_global_pass<Dynamic, Rule>(a.clip_norm, a.skip_nonfinite);
    sums<T> found;
    if (a.totals && !a.measure) found = {a.totals[0], a.totals[1]};
    else if (global_pass || a.measure) found = host_totals(a, inverse_scale);
    if (a.measure) {
        a.totals[0] = found.a;
        a.totals[1] = found.b;
        return;
    }
    bool nonfinite = found.b != T(0);
    const step_plan<T> plan = plan_step(lr, inverse_scale, global_pass ? found.a : T(0), global_pass && nonfinite, a.clip_norm);
    if (!plan.skip) {
        const std::uint64_t t = state.applied + 1;
        const T average = average_weight(a, t);
        if constexpr (Rule::layerwise) {
            for (unsigned s = 0; s < a.segment_count; ++s) {
                const segment& seg = a.segments[s];
                const Rule rule = rule_for(a.rule, seg);
                const T lr = plan.lr * T(seg.lr_scale);
                const auto k = rule.at(lr, t);
                const auto partial =
                    host_blocks<sums<T>>(seg.begin, seg.end, [&](std::uint64_t begin, std::uint64_t end) {
                        sums<T> norms;
                        for (std::uint64_t i = begin; i < end; ++i) {
                            T w, r;
                            moments_element(a, rule, i, plan.grad_multiplier, k, w, r);
                            norms.a += w * w;
                            norms.b += r * r;
                        }
                        return norms;
                    });
                sums<T> norms;
                for (const auto& p : partial) norms = {norms.a + p.a, norms.b + p.b};
                const T lr_trust = lr * Rule::trust_ratio(T(std::sqrt(norms.a)), T(std::sqrt(norms.b)));
                host_blocks<char>(seg.begin, seg.end, [&](std::uint64_t begin, std::uint64_t end) {
                    for (std::uint64_t i = begin; i < end; ++i) apply_element(a, rule, i, lr_trust, k, average);
                    return char{};
                });
            }
        } else {
            // [begin, end) of one range: the rule and constants it trains with
            const auto update_run = [&](const Rule& rule, const auto& k, std::uint64_t begin, std::uint64_t end) {
                if (a.keep == nullptr)
                    return host_update_unmasked(a, rule, begin, end, plan.grad_multiplier, k, average);
                char seen = 0;
                for (std::uint64_t i = begin; i < end; ++i)
                    if (!update_element(a, rule, i, plan.grad_multiplier, k, average)) seen = 1;
                return seen;
            };
            const auto k = a.rule.at(plan.lr, t);
            const auto bad = host_blocks<char>(0, a.numel, [&](std::uint64_t begin, std::uint64_t end) {
                if (a.ranges == nullptr) return update_run(a.rule, k, begin, end);
                char seen = 0;
                for (unsigned r = first_range(a, begin); r < a.range_count && a.ranges[r].begin < end; ++r) {
                    const segment& range = a.ranges[r];
                    const Rule rule = rule_for(a.rule, range);
                    seen |= update_run(rule, rule.at(plan.lr * T(range.lr_scale), t), std::max(begin, range.begin),
                                       std::min(end, range.end));
                }
                return seen;
            });
            for (const char b : bad) nonfinite = nonfinite || b != 0;
        }
    }
    *a.state = advance(state, plan.skip, nonfinite, Dynamic, a.scaler, static_cast<float>(plan.lr),
                       static_cast<float>(plan.grad_norm));
}

// ---- device --------------------------------------------------------------

#if TENET_CUDA_COMPILER

inline constexpr int update_threads = 256;

// The sum over the whole grid of one value per block (partials[b * stride]),
// after the barrier that made them visible: every block adds them in the same
// order, so every block gets the same, reproducible total.
template <class T>
__device__ T grid_total(const T* partials, unsigned stride)
{
    using reduce = cub::BlockReduce<T, update_threads>;
    __shared__ typename reduce::TempStorage scratch;
    __shared__ T total;
    T mine = T(0);
    for (unsigned b = threadIdx.x; b < gridDim.x; b += update_threads) mine += partials[b * stride];
    const T sum = reduce(scratch).Sum(mine);
    if (threadIdx.x == 0) total = sum;
    __syncthreads();
    const T result = total;
    __syncthreads();  // scratch and total are reused by the next call
    return result;
}

// Reduces one value over the block; thread 0 writes it to *out.
template <class T>
__device__ void block_partial(T value, T* out)
{
    using reduce = cub::BlockReduce<T, update_threads>;
    __shared__ typename reduce::TempStorage scratch;
    const T sum = reduce(scratch).Sum(value);
    if (threadIdx.x == 0) *out = sum;
    __syncthreads();
}

template <bool Dynamic, class Rule, class Schedule, class Storage, class T>
__global__ void __launch_bounds__(update_threads) fused_update_kernel(update_args<Rule, Schedule, Storage, T> a)
{
    auto grid = cooperative_groups::this_grid();
    const std::uint64_t first = static_cast<std::uint64_t>(blockIdx.x) * update_threads + threadIdx.x;
    const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * update_threads;
    const step_state state = *a.state;  // read by every block before the last barrier
    const T lr = static_cast<T>(a.schedule(state.iteration));
    const T inverse_scale = T(1) / (T(Dynamic ? state.loss_scale : 1.0f) * T(a.grad_divisor));
    T sum_squares = T(0);
    bool nonfinite = false;
    const bool global_pass = needs_global_pass<Dynamic, Rule>(a.clip_norm, a.skip_nonfinite);
    const bool given = a.totals && !a.measure;  // a sharded update: the ranks' summed totals
    if (given) {
        sum_squares = a.totals[0];
        nonfinite = a.totals[1] != T(0);
    } else if (global_pass || a.measure) {
        T squares = T(0), bad = T(0);
        for (std::uint64_t i = first; i < a.numel; i += stride) {
            const T g = checked_gradient(a, i, inverse_scale);
            squares += g * g;
            if (!is_finite(g)) bad = T(1);
        }
        block_partial(squares, a.partials + 2 * blockIdx.x);
        block_partial(bad, a.partials + 2 * blockIdx.x + 1);
        grid.sync();
        sum_squares = grid_total(a.partials, 2);
        nonfinite = grid_total(a.partials + 1, 2) != T(0);
        if (a.measure) {
            if (blockIdx.x == 0 && threadIdx.x == 0) a.totals[0] = sum_squares, a.totals[1] = nonfinite ? T(1) : T(0);
            return;
        }
        grid.sync();  // the partials are reused below
    }
    const step_plan<T> plan =
        plan_step(lr, inverse_scale, global_pass ? sum_squares : T(0), global_pass && nonfinite, a.clip_norm);
    if (!plan.skip) {
        const std::uint64_t t = state.applied + 1;
        const T average = average_weight(a, t);
        if constexpr (Rule::layerwise) {
            const unsigned per_block = 2 * a.segment_count;
            for (unsigned s = 0; s < a.segment_count; ++s) {
                const Rule rule = rule_for(a.rule, a.segments[s]);
                const auto k = rule.at(plan.lr * T(a.segments[s].lr_scale), t);
                T w_squares = T(0), r_squares = T(0);
                for (std::uint64_t i = a.segments[s].begin + first; i < a.segments[s].end; i += stride) {
                    T w, r;
                    moments_element(a, rule, i, plan.grad_multiplier, k, w, r);
                    w_squares += w * w;
                    r_squares += r * r;
                }
                block_partial(w_squares, a.partials + blockIdx.x * per_block + 2 * s);
                block_partial(r_squares, a.partials + blockIdx.x * per_block + 2 * s + 1);
            }
            grid.sync();
            for (unsigned s = 0; s < a.segment_count; ++s) {
                const Rule rule = rule_for(a.rule, a.segments[s]);
                const T lr = plan.lr * T(a.segments[s].lr_scale);
                const auto k = rule.at(lr, t);
                const T w_norm = ::sqrt(grid_total(a.partials + 2 * s, per_block));
                const T r_norm = ::sqrt(grid_total(a.partials + 2 * s + 1, per_block));
                const T lr_trust = lr * Rule::trust_ratio(w_norm, r_norm);
                for (std::uint64_t i = a.segments[s].begin + first; i < a.segments[s].end; i += stride)
                    apply_element(a, rule, i, lr_trust, k, average);
            }
        } else {
            T bad = T(0);
            if (a.ranges == nullptr) {
                const auto k = a.rule.at(plan.lr, t);
                for (std::uint64_t i = first; i < a.numel; i += stride)
                    if (!update_element(a, a.rule, i, plan.grad_multiplier, k, average)) bad = T(1);
            } else {
                for (unsigned r = 0; r < a.range_count; ++r) {
                    const Rule rule = rule_for(a.rule, a.ranges[r]);
                    const auto k = rule.at(plan.lr * T(a.ranges[r].lr_scale), t);
                    for (std::uint64_t i = a.ranges[r].begin + first; i < a.ranges[r].end; i += stride)
                        if (!update_element(a, rule, i, plan.grad_multiplier, k, average)) bad = T(1);
                }
            }
            if (!global_pass && !given) block_partial(bad, a.partials + 2 * blockIdx.x + 1);
        }
    }
    grid.sync();  // every block has read the state (and written its partials)
    if (blockIdx.x != 0) return;
    if (!global_pass && !given) nonfinite = grid_total(a.partials + 1, 2) != T(0);
    if (threadIdx.x == 0)
        *a.state = advance(state, plan.skip, nonfinite, Dynamic, a.scaler, static_cast<float>(plan.lr),
                           static_cast<float>(plan.grad_norm));
}

// Blocks for the cooperative launch: all resident at once (the barrier needs it).
template <bool Dynamic, class Rule, class Schedule, class Storage, class T>
unsigned update_grid(std::uint64_t numel)
{
    return tenet::grid_for<fused_update_kernel<Dynamic, Rule, Schedule, Storage, T>, update_threads>(numel);
}

template <bool Dynamic, class Rule, class Schedule, class Storage, class T>
void device_update(update_args<Rule, Schedule, Storage, T> a, unsigned grid, stream_ref stream)
{
    void* arguments[] = {&a};
    TENET_CUDA_CHECK(cudaLaunchCooperativeKernel(
        reinterpret_cast<const void*>(&fused_update_kernel<Dynamic, Rule, Schedule, Storage, T>), dim3(grid),
        dim3(update_threads), arguments, 0, stream.get()));
}

#endif

}  // namespace tenet::train::detail
