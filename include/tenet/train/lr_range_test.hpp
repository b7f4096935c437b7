// train::lr_range_test: the learning-rate range test (Smith 2015, fastai's
// lr_find). One short run whose rate rises exponentially from `start` to
// `end`, step by step, on a copy of the model with an optimizer of its own,
// so the model passed in is not changed (the loader is read from: its
// batches, and epochs started as needed).
//
//   auto r = train::lr_range_test(net, loader, train::adamw{}, {.start = 1e-6f, .end = 1.0f, .steps = 100});
//   for (auto p : r.curve) std::printf("%g %g\n", p.lr, p.smoothed);
//   train::trainer t(net, train::adamw{}, train::warmup_cosine_lr{r.suggested_lr, ...});
//
// Each step's loss is read back (one wait per step) and smoothed as fastai
// does (an exponential average with weight beta, bias-corrected). The run
// stops early when the smoothed loss passes diverge_factor times the best
// seen, or a loss is not finite: `diverged` says so. The suggested rate is
// the one where the smoothed loss falls fastest against log(lr) (fastai's
// "steep"), among the points up to the smoothed loss's minimum (past it the
// loss is climbing, and falls back only between spikes); NaN with fewer
// than 3 such points.
// The copy costs one more model's memory (and an optimizer's state).
#pragma once

#include "../nn/model.hpp"
#include "hyperparameters.hpp"
#include "lr_schedule.hpp"
#include "trainer.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

namespace tenet::train {

// start * (end / start)^(step / (steps - 1)): `steps` rates from start to
// end, evenly spaced in log(lr); end from then on.
struct exponential_lr {
    float start;
    float end;
    std::uint64_t steps;

    void check() const
    {
        detail::require_rate(start, "exponential_lr", "start");
        detail::require_rate(end, "exponential_lr", "end");
        detail::require_hyperparameter(steps >= 2, "exponential_lr", "steps must be at least 2");
    }
    TENET_HD float operator()(std::uint64_t step) const
    {
        const float p = step + 1 >= steps ? 1.0f : static_cast<float>(step) / static_cast<float>(steps - 1);
        return start * math::pow(end / start, p);
    }
};

struct lr_range_options {
    float start = 1e-7f;
    float end = 10.0f;
    std::size_t steps = 100;
    float beta = 0.98f;            // the loss's smoothing (fastai's)
    float diverge_factor = 4.0f;   // stop once the smoothed loss passes this times the best
    std::uint64_t seed = 0;        // the loader's shuffle
};

struct lr_range_point {
    float lr;
    double loss;      // the step's loss
    double smoothed;  // its smoothed value
};

struct lr_range_result {
    std::vector<lr_range_point> curve;
    float suggested_lr = std::numeric_limits<float>::quiet_NaN();
    bool diverged = false;
};

namespace detail {

inline void check_range(const lr_range_options& o)
{
    const auto require = [](bool ok, const char* what) { require_hyperparameter(ok, "lr_range_test", what); };
    exponential_lr{o.start, o.end, o.steps}.check();
    require(o.end > o.start, "end must be greater than start");
    require(o.beta >= 0 && o.beta < 1, "beta must lie in [0, 1)");
    require(o.diverge_factor > 1 && std::isfinite(o.diverge_factor), "diverge_factor must be greater than 1 and finite");
}

// The point where the smoothed loss falls fastest against log(lr), up to
// its minimum: central differences inside, one-sided at the ends
// (numpy.gradient's).
inline float steepest(const std::vector<lr_range_point>& curve)
{
    std::size_t n = 0;
    for (std::size_t i = 0; i < curve.size(); ++i)
        if (curve[i].smoothed < curve[n].smoothed) n = i;
    n = curve.empty() ? 0 : n + 1;  // the points up to the minimum
    if (n < 3) return std::numeric_limits<float>::quiet_NaN();
    const auto x = [&](std::size_t i) { return std::log(static_cast<double>(curve[i].lr)); };
    std::size_t best = 0;
    double best_slope = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < n; ++i) {
        const std::size_t lo = i == 0 ? 0 : i - 1, hi = i + 1 == n ? i : i + 1;
        const double slope = (curve[hi].smoothed - curve[lo].smoothed) / (x(hi) - x(lo));
        if (slope < best_slope) best_slope = slope, best = i;
    }
    return curve[best].lr;
}

}  // namespace detail

// Loader: start_epoch(seed, epoch) and next(batch) giving x() (read as the
// model's input shape), targets() or labels(), and valid() (data::array_loader,
// data::batch_loader).
template <class Model, class Loader, class Rule, class Loss = softmax_cross_entropy>
lr_range_result lr_range_test(const Model& model, Loader& loader, Rule rule, lr_range_options range = {},
                              trainer_options options = {}, const Loss& loss = {})
{
    detail::check_range(range);
    auto copy = std::make_unique<Model>();
    nn::copy_parameters(*copy, model);
    trainer t(*copy, rule, exponential_lr{range.start, range.end, range.steps}, options, loss);
    typename Loader::batch b;
    std::uint64_t epoch = 0;
    loader.start_epoch(range.seed, epoch);
    lr_range_result out;
    double average = 0, best = std::numeric_limits<double>::infinity(), weight = 1;
    for (std::size_t step = 0; step < range.steps; ++step) {
        if (!loader.next(b)) {
            loader.start_epoch(range.seed, ++epoch);
            if (!loader.next(b)) throw error("tenet: lr_range_test: the loader gives no batches");
        }
        const auto x = reshape<typename Model::input_shape>(b.x());
        if constexpr (requires { b.targets(); }) t.step(x, b.targets(), b.valid());
        else t.step(x, b.labels(), b.valid());
        const double l = t.end_epoch().mean_loss;
        average = range.beta * average + (1 - range.beta) * l;
        weight *= range.beta;
        const double smoothed = average / (1 - weight);
        const float lr = exponential_lr{range.start, range.end, range.steps}(step);
        if (!std::isfinite(l) || smoothed > range.diverge_factor * best) {
            out.diverged = true;
            break;
        }
        out.curve.push_back({lr, l, smoothed});
        best = std::min(best, smoothed);
    }
    out.suggested_lr = detail::steepest(out.curve);
    return out;
}

}  // namespace tenet::train
