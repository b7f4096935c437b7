// Parameter initialisers, seeded and reproducible: Kaiming (He) and Xavier
// (Glorot), uniform and normal, with PyTorch's fan conventions -- a weight of
// shape [Out, In, k...] has fan_in = In * k... and fan_out = Out * k.... The
// values come from tenet's Philox generators, so the same (seed, stream)
// gives the same bits on the host and the device.
#pragma once

#include "../exec/assign.hpp"
#include "../expr/random.hpp"

#include <cmath>
#include <cstdint>

namespace tenet::nn {

enum class fan_mode { fan_in, fan_out };

// Where a parameter's random numbers come from: the model's seed and a
// per-parameter stream, so that parameters never share a sequence.
struct init_source {
    std::uint64_t seed = 0;
    std::uint64_t stream = 0;
};

namespace detail {

template <class S>
constexpr std::size_t receptive_field()
{
    std::size_t r = 1;
    for (std::size_t d = 2; d < S::rank; ++d) r *= S::extents[d];
    return r;
}

template <class S>
constexpr double fan(fan_mode mode)
{
    static_assert(S::rank >= 1, "tenet: initialisers need a parameter of rank 1 or more");
    if constexpr (S::rank == 1) {
        return static_cast<double>(S::extents[0]);
    } else {
        const std::size_t f = (mode == fan_mode::fan_in ? S::extents[1] : S::extents[0]) * receptive_field<S>();
        return static_cast<double>(f);
    }
}

template <class View>
void fill_uniform(const View& w, init_source from, double bound)
{
    const auto b = static_cast<f32>(bound);
    assign(w, random_uniform<typename View::shape>(from.seed, from.stream, -b, b));
}

template <class View>
void fill_normal(const View& w, init_source from, double stddev)
{
    assign(w, random_normal<typename View::shape>(from.seed, from.stream, 0.0f, static_cast<f32>(stddev)));
}

template <class W>
auto writable_view(W& w)
{
    if constexpr (is_tensor<std::remove_const_t<W>>::value) return w.view();
    else return w;
}

}  // namespace detail

// The gain for an activation, as torch.nn.init.calculate_gain gives it.
inline double relu_gain() { return std::sqrt(2.0); }
inline double leaky_relu_gain(double slope = 0.01) { return std::sqrt(2.0 / (1.0 + slope * slope)); }
inline double tanh_gain() { return 5.0 / 3.0; }

// U(-b, b) with b = gain * sqrt(3 / fan).
template <class W>
void kaiming_uniform(W&& w, init_source from, double gain = relu_gain(), fan_mode mode = fan_mode::fan_in)
{
    auto v = detail::writable_view(w);
    detail::fill_uniform(v, from, gain * std::sqrt(3.0 / detail::fan<typename decltype(v)::shape>(mode)));
}

// N(0, s^2) with s = gain / sqrt(fan).
template <class W>
void kaiming_normal(W&& w, init_source from, double gain = relu_gain(), fan_mode mode = fan_mode::fan_in)
{
    auto v = detail::writable_view(w);
    detail::fill_normal(v, from, gain / std::sqrt(detail::fan<typename decltype(v)::shape>(mode)));
}

// U(-b, b) with b = gain * sqrt(6 / (fan_in + fan_out)).
template <class W>
void xavier_uniform(W&& w, init_source from, double gain = 1.0)
{
    auto v = detail::writable_view(w);
    using S = typename decltype(v)::shape;
    detail::fill_uniform(v, from, gain * std::sqrt(6.0 / (detail::fan<S>(fan_mode::fan_in) + detail::fan<S>(fan_mode::fan_out))));
}

// N(0, s^2) with s = gain * sqrt(2 / (fan_in + fan_out)).
template <class W>
void xavier_normal(W&& w, init_source from, double gain = 1.0)
{
    auto v = detail::writable_view(w);
    using S = typename decltype(v)::shape;
    detail::fill_normal(v, from, gain * std::sqrt(2.0 / (detail::fan<S>(fan_mode::fan_in) + detail::fan<S>(fan_mode::fan_out))));
}

// U(-b, b) with b = 1 / sqrt(fan_in): what torch.nn.Linear uses for its bias
// (and, through kaiming_uniform with a = sqrt(5), for its weight).
template <std::size_t FanIn, class W>
void fan_in_uniform(W&& w, init_source from)
{
    detail::fill_uniform(detail::writable_view(w), from, 1.0 / std::sqrt(static_cast<double>(FanIn)));
}

}  // namespace tenet::nn
