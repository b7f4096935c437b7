// train::ema: an exponential moving average of the weights (Polyak
// averaging; timm's ModelEma), kept by the optimizer beside the master
// weights and updated in the same fused step:
//
//   train::optimizer_options o;
//   o.average = train::ema{.decay = 0.999f};
//   ...
//   { train::average_scope use(trainer); trainer.evaluate(...); }  // the averaged weights in, then out
//
// After each applied update t (1-based), as timm's ModelEmaV3.update (a
// lerp from the new weights):
//   d_t = decay, or with warmup min(decay, max(0, 1 - (1 + t / warmup_gamma)^-warmup_power))
//   average += (1 - d_t) * (weights - average)
// The average starts as the weights the optimizer was built with (timm's
// copy at creation); a skipped step (inf/NaN gradient) does not move it; a
// pruned weight's average is zero, as the weight is. It covers the
// parameters, not BatchNorm's running statistics (timm's exclude_buffers).
#pragma once

#include "../expr/math.hpp"
#include "hyperparameters.hpp"

#include <cmath>
#include <cstdint>

namespace tenet::train {

struct ema {
    float decay = 0.9998f;
    bool warmup = false;              // timm's use_warmup: a short memory at first
    float warmup_gamma = 1.0f;
    float warmup_power = 2.0f / 3.0f;

    void check() const
    {
        detail::require_hyperparameter(decay >= 0 && decay <= 1, "ema", "decay must lie in [0, 1]");
        detail::require_hyperparameter(warmup_gamma > 0 && std::isfinite(warmup_gamma), "ema",
                                       "warmup_gamma must be positive and finite");
        detail::require_hyperparameter(warmup_power > 0 && std::isfinite(warmup_power), "ema",
                                       "warmup_power must be positive and finite");
    }

    // The decay of update t (1-based).
    template <class T>
    TENET_HD T decay_at(std::uint64_t t) const
    {
        if (!warmup) return T(decay);
        const T d = T(1) - math::pow(T(1) + T(t) / T(warmup_gamma), -T(warmup_power));
        return d < T(decay) ? (d > T(0) ? d : T(0)) : T(decay);
    }
};

// Swaps an owner's averaged weights in (an optimizer's or trainer's
// swap_average()) for the scope, and back out when it ends.
template <class Owner>
class average_scope {
public:
    explicit average_scope(Owner& owner) : owner_(owner) { owner_.swap_average(); }
    ~average_scope() { owner_.swap_average(); }
    average_scope(const average_scope&) = delete;
    average_scope& operator=(const average_scope&) = delete;

private:
    Owner& owner_;
};

}  // namespace tenet::train
