// SGD with momentum, dampening, Nesterov and L2 weight decay, as torch.optim.SGD
// computes it (the momentum buffer starts as the first gradient). A rule: the
// per-element update the fused optimizer kernel runs on host and device.
#pragma once

#include "../config.hpp"
#include "hyperparameters.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>

namespace tenet::train {

struct sgd {
    float momentum = 0.0f;
    float dampening = 0.0f;
    float weight_decay = 0.0f;
    bool nesterov = false;

    static constexpr const char* name = "sgd";
    static constexpr std::size_t slots = 1;  // the momentum buffer
    static constexpr bool layerwise = false;

    // As torch.optim.SGD: Nesterov needs momentum and zero dampening.
    void check() const
    {
        detail::require_hyperparameter(momentum >= 0 && std::isfinite(momentum), "sgd",
                                       "momentum must be >= 0 and finite");
        detail::require_hyperparameter(dampening >= 0 && dampening <= 1, "sgd", "dampening must lie in [0, 1]");
        detail::require_hyperparameter(weight_decay >= 0 && std::isfinite(weight_decay), "sgd",
                                       "weight_decay must be >= 0 and finite");
        detail::require_hyperparameter(!nesterov || (momentum > 0 && dampening == 0), "sgd",
                                       "Nesterov momentum requires a momentum and zero dampening");
    }

    template <class T>
    struct constants {
        T lr;
        bool first;  // the first applied update: the buffer takes the gradient as is
    };

    // t: the 1-based number of this update.
    template <class T>
    TENET_HD constants<T> at(T lr, std::uint64_t t) const
    {
        return {lr, t == 1};
    }

    template <class T>
    TENET_HD T update(T w, T g, T (&s)[slots], const constants<T>& k) const
    {
        g += T(weight_decay) * w;
        if (momentum != 0.0f) {
            s[0] = k.first ? g : T(momentum) * s[0] + (T(1) - T(dampening)) * g;
            g = nesterov ? g + T(momentum) * s[0] : s[0];
        }
        return w - k.lr * g;
    }
};

}  // namespace tenet::train
