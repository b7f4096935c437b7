// One vector per sequence, from its tokens [Batch, Tokens, Dim] -> [Batch, Dim]:
// MeanPool<Axis>: the mean over one axis, which is dropped (MeanPool<1>: a
//   Vision Transformer's pooling over its tokens); the backward spreads
//   dy / extent back over the axis.
// LastToken: the last token of each sequence (a causal model's summary); the
//   backward puts dy there and zeros elsewhere.
#pragma once

#include "../expr/random.hpp"
#include "../reduce/reduce.hpp"
#include "layer.hpp"

namespace tenet::nn {
namespace detail {

template <std::size_t Axis, class S>
struct MeanPool_Axis_needs_an_input_with_that_axis_not {
    static constexpr auto text()
    {
        return fixed_string("tenet: MeanPool<") + decimal<Axis>() + fixed_string("> fed ") + shape_name<S>::text() +
               fixed_string(": it has no axis ") + decimal<Axis>();
    }
};

template <std::size_t Axis, class S>
struct mean_pool_output {
    static constexpr bool fits = Axis < S::rank;
    static_assert(diagnose<fits, MeanPool_Axis_needs_an_input_with_that_axis_not<Axis, S>>::value);
    struct dropped {
        static constexpr auto extents = [] {
            std::array<std::size_t, S::rank - 1> e{};
            for (std::size_t a = 0, d = 0; a < S::rank; ++a)
                if (a != Axis) e[d++] = S::extents[a];
            return e;
        }();
    };
    using type = shape_from_t<dropped>;
};

template <precision_policy P, class S, class Place, std::size_t Axis>
class mean_pool_layer : public parameterless_layer {
    using storage = typename P::storage;
    using out_shape = typename mean_pool_output<Axis, S>::type;
    static constexpr float scale = 1.0f / static_cast<float>(S::extents[Axis]);

public:
    using input_shape = S;
    using output_shape = out_shape;
    using parameterless_layer::parameterless_layer;

    template <class X, class Y>
    void forward(const X& x, const Y& y, const step_info&)
    {
        check_input_element<storage, X>();
        assign(contiguous_as<out_shape>(y), mean<static_cast<int>(Axis)>(contiguous_as<S>(x)));
    }

    template <class DY, class DX, class Prev>
    void backward(const DY& dy, const DX& dx, const step_info&, Prev&)
    {
        if constexpr (!is_no_input_gradient<DX>)
            assign(contiguous_as<S>(dx), broadcast_to<S>(unsqueeze<Axis>(contiguous_as<out_shape>(dy))) * scale);
    }
};

template <class S>
struct LastToken_takes_sequences_Batch_Tokens_Dim_not {
    static constexpr auto text()
    {
        return fixed_string("tenet: LastToken fed ") + shape_name<S>::text() +
               fixed_string(": it takes sequences [Batch, Tokens, Dim]");
    }
};

template <class S>
struct last_token_output {
    static_assert(diagnose<S::rank == 3, LastToken_takes_sequences_Batch_Tokens_Dim_not<S>>::value);
    using type = Shape<S::extents[0], S::extents[S::rank - 1]>;
};

template <precision_policy P, class S, class Place>
class last_token_layer : public parameterless_layer {
    using storage = typename P::storage;
    static constexpr std::size_t B = S::extents[0], T = S::extents[1], D = S::extents[2];

public:
    using input_shape = S;
    using output_shape = Shape<B, D>;
    using parameterless_layer::parameterless_layer;

    template <class X, class Y>
    void forward(const X& x, const Y& y, const step_info&)
    {
        check_input_element<storage, X>();
        assign(contiguous_as<Shape<B, 1, D>>(y), slice<1, T - 1, T>(contiguous_as<S>(x)));
    }

    template <class DY, class DX, class Prev>
    void backward(const DY& dy, const DX& dx, const step_info&, Prev&)
    {
        if constexpr (!is_no_input_gradient<DX>) {
            const auto position = broadcast_to<S>(reshape<Shape<1, T, 1>>(iota<Shape<T>>()));
            assign(contiguous_as<S>(dx),
                   where(position == static_cast<int>(T - 1), broadcast_to<S>(contiguous_as<Shape<B, 1, D>>(dy)), 0));
        }
    }
};

}  // namespace detail

template <std::size_t Axis>
struct MeanPool {
    template <class S>
    using output_shape = typename detail::mean_pool_output<Axis, S>::type;
    template <class S>
    static constexpr bool accepts = Axis < S::rank;
    template <precision_policy P, class S, class Place>
    using layer = detail::mean_pool_layer<P, S, Place, Axis>;
};

struct LastToken {
    template <class S>
    using output_shape = typename detail::last_token_output<S>::type;
    template <class S>
    static constexpr bool accepts = S::rank == 3;
    template <precision_policy P, class S, class Place>
    using layer = detail::last_token_layer<P, S, Place>;
};

}  // namespace tenet::nn
