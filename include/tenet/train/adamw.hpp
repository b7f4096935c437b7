// AdamW: Adam with decoupled weight decay and bias correction, as
// torch.optim.AdamW (and apex's FusedAdam in adam_w_mode) compute it:
//   w *= 1 - lr * wd;  m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
//   w -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
#pragma once

#include "../expr/math.hpp"
#include "hyperparameters.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>

namespace tenet::train {

struct adamw {
    float beta1 = 0.9f;
    float beta2 = 0.999f;
    float eps = 1e-8f;
    float weight_decay = 1e-2f;

    static constexpr const char* name = "adamw";
    static constexpr float default_lr = 1e-3f;  // what an optimizer given no schedule uses
    static constexpr std::size_t slots = 2;  // first and second moments
    static constexpr bool layerwise = false;

    // As torch.optim.AdamW: betas in [0, 1), eps and weight_decay >= 0.
    void check() const
    {
        detail::require_hyperparameter(beta1 >= 0 && beta1 < 1 && beta2 >= 0 && beta2 < 1, "adamw",
                                       "beta1 and beta2 must lie in [0, 1)");
        detail::require_hyperparameter(eps >= 0 && std::isfinite(eps), "adamw", "eps must be >= 0 and finite");
        detail::require_hyperparameter(weight_decay >= 0 && std::isfinite(weight_decay), "adamw",
                                       "weight_decay must be >= 0 and finite");
    }

    template <class T>
    struct constants {
        T lr;
        T step_size;      // lr / (1 - b1^t)
        T inv_bc2_sqrt;   // 1 / sqrt(1 - b2^t)
    };

    template <class T>
    TENET_HD constants<T> at(T lr, std::uint64_t t) const
    {
        const T bc1 = T(1) - math::pow(T(beta1), T(t));
        const T bc2 = T(1) - math::pow(T(beta2), T(t));
        return {lr, lr / bc1, T(1) / math::sqrt(bc2)};
    }

    template <class T>
    TENET_HD T update(T w, T g, T (&s)[slots], const constants<T>& k) const
    {
        w *= T(1) - k.lr * T(weight_decay);
        s[0] = T(beta1) * s[0] + (T(1) - T(beta1)) * g;
        s[1] = T(beta2) * s[1] + (T(1) - T(beta2)) * g * g;
        return w - k.step_size * s[0] / (math::sqrt(s[1]) * k.inv_bc2_sqrt + T(eps));
    }
};

}  // namespace tenet::train
