// Learning-rate schedules: small trivially copyable structs that the
// optimizer kernel evaluates on the device from the device step counter, so
// the host never synchronises to learn the step. `s(step)` is the rate of the
// update numbered `step`, counting from 0 (the first update uses step 0): the
// closed forms of PyTorch's schedulers with `scheduler.step()` after every
// `optimizer.step()`. Rates are computed in f32. `check()` (host) throws
// tenet::error for a configuration whose formula is undefined; the trainer
// calls it once before training.
#pragma once

#include "../config.hpp"
#include "../expr/math.hpp"
#include "../memory/error.hpp"

#include <concepts>
#include <cstdint>
#include <numbers>
#include <string>
#include <type_traits>

namespace tenet::train {

template <class S>
concept lr_schedule = std::is_trivially_copyable_v<S> && requires(const S& s, std::uint64_t step) {
    { s(step) } -> std::convertible_to<float>;
};

namespace detail {

inline void require_schedule(bool ok, const char* schedule, const char* what)
{
    if (!ok) throw error(std::string("tenet: ") + schedule + ": " + what);
}

// PyTorch's _annealing_cos: from `start` at pct 0 to `end` at pct 1.
TENET_HD inline float annealing_cos(float start, float end, float pct)
{
    return end + (start - end) / 2 * (1 + math::cos(std::numbers::pi_v<float> * pct));
}

}  // namespace detail

// The same rate at every step.
struct constant_lr {
    float lr;

    void check() const { detail::require_schedule(lr >= 0, "constant_lr", "lr must be >= 0"); }
    TENET_HD constexpr float operator()(std::uint64_t) const { return lr; }
};

// StepLR: lr * gamma^floor(step / step_size).
struct step_lr {
    float lr;
    std::uint64_t step_size;
    float gamma;

    void check() const
    {
        detail::require_schedule(lr >= 0, "step_lr", "lr must be >= 0");
        detail::require_schedule(step_size > 0, "step_lr", "step_size must be positive");
        detail::require_schedule(gamma > 0, "step_lr", "gamma must be positive");
    }
    TENET_HD float operator()(std::uint64_t step) const
    {
        return lr * math::pow(gamma, static_cast<float>(step / step_size));
    }
};

// Linear warm-up, then cosine decay to min_lr. Steps 0 .. warmup_steps-1
// rise as lr * (step+1) / warmup_steps, so the first update is not wasted at
// rate 0 and step warmup_steps-1 reaches lr. From step warmup_steps the rate
// is min_lr + (lr - min_lr) * (1 + cos(pi p)) / 2 with
// p = (step - warmup_steps) / (total_steps - warmup_steps) clamped to [0, 1]:
// lr again at step warmup_steps, min_lr from step total_steps on (the last
// update, total_steps-1, is one step short of it).
struct warmup_cosine_lr {
    float lr;
    std::uint64_t warmup_steps;
    std::uint64_t total_steps;
    float min_lr = 0;

    void check() const
    {
        detail::require_schedule(lr >= 0 && min_lr >= 0, "warmup_cosine_lr", "lr and min_lr must be >= 0");
        detail::require_schedule(warmup_steps <= total_steps, "warmup_cosine_lr",
                                 "warmup_steps must not exceed total_steps");
    }
    TENET_HD float operator()(std::uint64_t step) const
    {
        if (step < warmup_steps) return lr * static_cast<float>(step + 1) / static_cast<float>(warmup_steps);
        if (step >= total_steps) return min_lr;
        const float p = static_cast<float>(step - warmup_steps) / static_cast<float>(total_steps - warmup_steps);
        return detail::annealing_cos(lr, min_lr, p);
    }
};

// OneCycleLR, anneal_strategy='cos', three_phase=False: from max_lr/div_factor
// up to max_lr by step pct_start*total_steps - 1, then down to
// max_lr/div_factor/final_div_factor at step total_steps-1. PyTorch raises
// past total_steps; here later steps keep the final rate.
struct one_cycle_lr {
    float max_lr;
    std::uint64_t total_steps;
    float pct_start = 0.3f;
    float div_factor = 25;
    float final_div_factor = 1e4f;

    void check() const
    {
        detail::require_schedule(max_lr >= 0, "one_cycle_lr", "max_lr must be >= 0");
        detail::require_schedule(div_factor > 0 && final_div_factor > 0, "one_cycle_lr",
                                 "div_factor and final_div_factor must be positive");
        // Both phases need a positive length: 0 < pct_start*total_steps - 1 < total_steps - 1.
        const double warm_end = static_cast<double>(pct_start) * static_cast<double>(total_steps) - 1;
        detail::require_schedule(pct_start > 0 && pct_start < 1 && warm_end > 0 &&
                                     warm_end < static_cast<double>(total_steps) - 1,
                                 "one_cycle_lr", "pct_start * total_steps must lie in (1, total_steps)");
    }
    TENET_HD float operator()(std::uint64_t step) const
    {
        const float initial = max_lr / div_factor;
        const float warm_end = pct_start * static_cast<float>(total_steps) - 1;
        const float last = static_cast<float>(total_steps - 1);
        const float s = static_cast<float>(step);
        if (s <= warm_end) return detail::annealing_cos(initial, max_lr, s / warm_end);
        if (s >= last) return initial / final_div_factor;
        return detail::annealing_cos(max_lr, initial / final_div_factor, (s - warm_end) / (last - warm_end));
    }
};

}  // namespace tenet::train
