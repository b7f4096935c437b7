// LAMB (You et al. 2019, as NVIDIA's NVLAMB / apex FusedLAMB compute it):
// the Adam direction with decoupled decay, scaled per parameter tensor by the
// trust ratio ||w|| / ||r|| (1 when either norm is 0):
//   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
//   r = (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps) + wd * w
//   w -= lr * trust * r
// Layerwise: the optimizer runs it in two phases (moments and norms, then the
// update) with a grid-wide barrier between them.
#pragma once

#include "../expr/math.hpp"
#include "hyperparameters.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>

namespace tenet::train {

struct lamb {
    float beta1 = 0.9f;
    float beta2 = 0.999f;
    float eps = 1e-6f;
    float weight_decay = 1e-2f;

    static constexpr const char* name = "lamb";
    static constexpr float default_lr = 1e-3f;  // what an optimizer given no schedule uses
    static constexpr std::size_t slots = 2;
    static constexpr bool layerwise = true;

    // As apex's FusedLAMB: betas in [0, 1), eps and weight_decay >= 0.
    void check() const
    {
        detail::require_hyperparameter(beta1 >= 0 && beta1 < 1 && beta2 >= 0 && beta2 < 1, "lamb",
                                       "beta1 and beta2 must lie in [0, 1)");
        detail::require_hyperparameter(eps >= 0 && std::isfinite(eps), "lamb", "eps must be >= 0 and finite");
        detail::require_hyperparameter(weight_decay >= 0 && std::isfinite(weight_decay), "lamb",
                                       "weight_decay must be >= 0 and finite");
    }

    template <class T>
    struct constants {
        T lr;
        T inv_bc1;  // 1 / (1 - b1^t)
        T inv_bc2;  // 1 / (1 - b2^t)
    };

    template <class T>
    TENET_HD constants<T> at(T lr, std::uint64_t t) const
    {
        return {lr, T(1) / (T(1) - math::pow(T(beta1), T(t))), T(1) / (T(1) - math::pow(T(beta2), T(t)))};
    }

    // Advances the moments by g.
    template <class T>
    TENET_HD void accumulate(T g, T (&s)[slots]) const
    {
        s[0] = T(beta1) * s[0] + (T(1) - T(beta1)) * g;
        s[1] = T(beta2) * s[1] + (T(1) - T(beta2)) * g * g;
    }

    // The update direction from the (advanced) moments.
    template <class T>
    TENET_HD T direction(T w, const T (&s)[slots], const constants<T>& k) const
    {
        return s[0] * k.inv_bc1 / (math::sqrt(s[1] * k.inv_bc2) + T(eps)) + T(weight_decay) * w;
    }

    template <class T>
    TENET_HD static T trust_ratio(T w_norm, T r_norm)
    {
        return w_norm > T(0) && r_norm > T(0) ? w_norm / r_norm : T(1);
    }
};

}  // namespace tenet::train
