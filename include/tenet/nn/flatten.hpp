// Flatten: Shape<N, d1, d2, ...> -> Shape<N, d1 d2 ...> (NHWC images to the
// rows a Linear takes), as PyTorch's nn.Flatten() (start_dim 1). The
// elements keep their order, so the output is a view: inside a Sequential
// the next layer reads the input's memory with the new shape, and Flatten
// neither runs nor keeps a tensor (views_input). Only as the last layer (its
// output is the model's own tensor) does its forward copy, and only as the
// first layer of a nested Sequential does its backward.
//
// FlattenCHW: NHWC images [N, H, W, C] to rows in PyTorch's order, (c, h, w):
// what nn.Flatten() gives on PyTorch's NCHW activations. A Linear after it
// has PyTorch's weight columns, so a conv net's weights move between tenet
// and PyTorch unchanged (io/model_safetensors.hpp). It transposes, so it is
// a copy each way, not a view; after Flatten the same Linear would read the
// features in (h, w, c) order and PyTorch's weights would be silently wrong.
#pragma once

#include "../expr/views.hpp"
#include "layer.hpp"

namespace tenet::nn {
namespace detail {

template <class S>
struct Flatten_needs_a_batch_axis_and_at_least_one_more_not {
    static constexpr auto text()
    {
        return fixed_string("tenet: Flatten fed ") + shape_name<S>::text() +
               fixed_string(": it needs a batch axis and at least one more");
    }
};

template <class S>
struct flatten_output {
    static_assert(diagnose<S::rank >= 2, Flatten_needs_a_batch_axis_and_at_least_one_more_not<S>>::value);
    using type = Shape<(S::rank >= 2 ? S::extents[0] : 1), (S::rank >= 2 ? S::numel / S::extents[0] : 1)>;
};

template <precision_policy P, class S, class Place>
class flatten_layer : public parameterless_layer {
public:
    using input_shape = S;
    using output_shape = typename flatten_output<S>::type;
    static constexpr bool views_input = true;
    using parameterless_layer::parameterless_layer;

    template <class X, class Y>
    void forward(const X& x, const Y& y, const step_info&)
    {
        check_input_element<typename P::storage, X>();
        assign(contiguous_as<output_shape>(y), contiguous_as<output_shape>(x));
    }

    template <class DY, class DX, class Prev>
    void backward(const DY& dy, const DX& dx, const step_info&, Prev&)
    {
        if constexpr (!is_no_input_gradient<DX>) assign(contiguous_as<S>(dx), contiguous_as<S>(dy));
    }
};

template <class S>
struct FlattenCHW_takes_NHWC_images_Shape_N_H_W_C_not {
    static constexpr auto text()
    {
        return fixed_string("tenet: FlattenCHW fed ") + shape_name<S>::text() +
               fixed_string(": it takes NHWC images, Shape<N, H, W, C>");
    }
};

template <class S>
struct flatten_chw_shapes {
    static_assert(diagnose<S::rank == 4, FlattenCHW_takes_NHWC_images_Shape_N_H_W_C_not<S>>::value);
    static constexpr std::size_t n = S::extents[0], h = S::extents[1], w = S::extents[2];
    static constexpr std::size_t c = S::rank == 4 ? S::extents[3] : 1;
    using channels_first = Shape<n, c, h, w>;
    using output = Shape<n, c * h * w>;
};

template <precision_policy P, class S, class Place>
class flatten_chw_layer : public parameterless_layer {
    using shapes = flatten_chw_shapes<S>;

public:
    using input_shape = S;
    using output_shape = typename shapes::output;
    using parameterless_layer::parameterless_layer;

    // y[n, (c, h, w)] = x[n, h, w, c]
    template <class X, class Y>
    void forward(const X& x, const Y& y, const step_info&)
    {
        check_input_element<typename P::storage, X>();
        assign(contiguous_as<typename shapes::channels_first>(y), permute<0, 3, 1, 2>(contiguous_as<S>(x)));
    }

    template <class DY, class DX, class Prev>
    void backward(const DY& dy, const DX& dx, const step_info&, Prev&)
    {
        if constexpr (!is_no_input_gradient<DX>)
            assign(contiguous_as<S>(dx), permute<0, 2, 3, 1>(contiguous_as<typename shapes::channels_first>(dy)));
    }
};

}  // namespace detail

struct Flatten {
    template <class S>
    using output_shape = typename detail::flatten_output<S>::type;
    template <class S>
    static constexpr bool accepts = S::rank >= 2;
    template <precision_policy P, class S, class Place>
    using layer = detail::flatten_layer<P, S, Place>;
};

struct FlattenCHW {
    template <class S>
    using output_shape = typename detail::flatten_chw_shapes<S>::output;
    template <class S>
    static constexpr bool accepts = S::rank == 4;
    template <precision_policy P, class S, class Place>
    using layer = detail::flatten_chw_layer<P, S, Place>;
};

}  // namespace tenet::nn
