// Flatten: Shape<N, d1, d2, ...> -> Shape<N, d1 d2 ...> (NHWC images to the
// rows a Linear takes), as PyTorch's nn.Flatten() (start_dim 1). The
// elements keep their order, so the output is a view: inside a Sequential
// the next layer reads the input's memory with the new shape, and Flatten
// neither runs nor keeps a tensor (views_input). Only as the last layer (its
// output is the model's own tensor) does its forward copy, and only as the
// first layer of a nested Sequential does its backward.
#pragma once

#include "layer.hpp"

namespace tenet::nn {
namespace detail {

template <class S>
struct flatten_failure {
    static constexpr auto text()
    {
        return fixed_string("tenet: Flatten fed ") + shape_name<S>::text() +
               fixed_string(": it needs a batch axis and at least one more");
    }
};

template <class S>
struct flatten_output {
    static_assert(diagnose<S::rank >= 2, flatten_failure<S>>::value);
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

}  // namespace detail

struct Flatten {
    template <class S>
    using output_shape = typename detail::flatten_output<S>::type;
    template <precision_policy P, class S, class Place>
    using layer = detail::flatten_layer<P, S, Place>;
};

}  // namespace tenet::nn
