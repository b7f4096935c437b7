// Per-element losses written as a user would, outside tenet: for
// train::elementwise_loss in the host and GPU trainer tests.
#pragma once

#include <tenet/tenet.hpp>

namespace user {

// The Huber loss of one element, built from tenet's operators: autodiff
// differentiates it (the gradient is clamp(p - t, -delta, delta)).
struct huber {
    float delta = 1.0f;
    template <class P, class T>
    auto operator()(const P& p, const T& t) const
    {
        const auto d = abs(p - t);
        return where(d <= delta, 0.5f * d * d, delta * (d - 0.5f * delta));
    }
};

// (p - t)^2: elementwise_loss of it is mean_squared_error.
struct squared {
    template <class P, class T>
    auto operator()(const P& p, const T& t) const
    {
        return (p - t) * (p - t);
    }
};

}  // namespace user
