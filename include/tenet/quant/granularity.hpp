// Quantization granularity: one scale and zero point for a whole tensor, or
// one per index along a compile-time axis (per output channel for weights).
// param_shape_t<G, S> is the shape their tensors take so that they broadcast
// against S: the channel count at the axis, 1 elsewhere.
#pragma once

#include "../diagnostic.hpp"
#include "../shape/shape.hpp"

#include <cstddef>
#include <utility>

namespace tenet::quant {

struct per_tensor {
    static constexpr int axis = -1;
};
template <int Axis>
struct per_channel {
    static constexpr int axis = Axis;
};

namespace detail {

template <class G, class S>
struct param_shape {
    static_assert(G::axis < static_cast<int>(S::rank),
                  "tenet: per_channel<Axis>: the axis is not an axis of this tensor's shape");
    template <std::size_t... I>
    static auto make(std::index_sequence<I...>)
        -> Shape<(static_cast<int>(I) == G::axis ? S::extents[G::axis < 0 ? 0 : G::axis] : std::size_t{1})...>;
    using type = decltype(make(std::make_index_sequence<S::rank>{}));
};

}  // namespace detail

template <class G, class S>
using param_shape_t = typename detail::param_shape<G, S>::type;

// How many scales a tensor of shape S has under G.
template <class G, class S>
inline constexpr std::size_t channel_count = G::axis < 0 ? 1 : S::extents[G::axis < 0 ? 0 : G::axis];

}  // namespace tenet::quant
