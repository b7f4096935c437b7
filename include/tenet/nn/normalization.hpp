// LayerNorm<N>: normalises the last axis (extent N) of its input, then scales
// by gamma and shifts by beta (both [N], initialised to 1 and 0 as in
// PyTorch). The forward saves each row's mean and 1/stddev (f32) for the
// backward; each direction is one row-wise kernel (nn/layernorm.hpp).
#pragma once

#include "row_ops.hpp"
#include "layer.hpp"

namespace tenet::nn {
namespace detail {

template <std::size_t N, class S>
struct layer_norm_input_failure {
    static constexpr auto text()
    {
        return fixed_string("tenet: LayerNorm<") + decimal<N>() + fixed_string("> fed ") + shape_name<S>::text() +
               fixed_string(": its last extent must be ") + decimal<N>();
    }
};

template <std::size_t N, class S>
struct layer_norm_output {
    static_assert(last_extent<S> == N || diagnostic<layer_norm_input_failure<N, S>::text()>,
                  "tenet: LayerNorm fed the wrong number of features");
    using type = S;
};

template <precision_policy P, class S, class Place, std::size_t N>
class layer_norm_layer {
    using storage = typename P::storage;
    using gradient = gradient_t<P>;
    using matrix = matrix_shape_t<S>;
    using rows = Shape<matrix::extents[0]>;

public:
    using input_shape = S;
    using output_shape = S;
    static constexpr bool wants_preactivation_gradient = false;
    static constexpr std::size_t parameter_count = 2 * N;
    static constexpr std::size_t parameter_numel = 2 * padded_numel<storage>(N);
    static constexpr std::size_t activation_bytes = 2 * rows::numel * sizeof(f32);
    static constexpr std::size_t activation_gradient_bytes = 0;

    template <class Slice>
    explicit layer_norm_layer(Slice& parameters)
        : gamma_(parameters.template take<Shape<N>, Place>()), beta_(parameters.template take<Shape<N>, Place>())
    {
    }

    void initialize(std::uint64_t)
    {
        assign(gamma_.first, 1);
        assign(beta_.first, 0);
    }

    template <class X, class Y>
    void forward(const X& x, const Y& y, const step_info&)
    {
        check_input_element<storage, X>();
        const auto xm = contiguous_as<matrix>(x);
        input_ = xm.data();
        layernorm_forward(contiguous_as<matrix>(y), mean_.view(), rstd_.view(), xm, gamma_.first, beta_.first, epsilon);
    }

    template <class DY, class DX, class Prev>
    void backward(const DY& dy, const DX& dx, const step_info&, Prev&)
    {
        const auto x = make_view<matrix, Place>(input_);
        if constexpr (is_no_input_gradient<DX>) {
            Tensor<storage, matrix, Place> unused;  // the kernel writes dx anyway; a first layer has no use for it
            layernorm_backward(unused.view(), gamma_.second, beta_.second, contiguous_as<matrix>(dy), x, mean_.view(),
                               rstd_.view(), gamma_.first);
        } else {
            layernorm_backward(contiguous_as<matrix>(dx), gamma_.second, beta_.second, contiguous_as<matrix>(dy), x,
                               mean_.view(), rstd_.view(), gamma_.first);
        }
    }

    template <class F>
    void for_each_parameter(F&& f, const std::string& prefix)
    {
        f(prefix + "weight", gamma_.first, gamma_.second);
        f(prefix + "bias", beta_.first, beta_.second);
    }

    static constexpr f32 epsilon = 1e-5f;

private:
    using views = decltype(std::declval<parameter_slice<storage, gradient>&>().template take<Shape<N>, Place>());
    views gamma_, beta_;
    Tensor<f32, rows, Place> mean_, rstd_;
    const storage* input_ = nullptr;
};

}  // namespace detail

template <std::size_t N>
struct LayerNorm {
    template <class S>
    using output_shape = typename detail::layer_norm_output<N, S>::type;
    template <precision_policy P, class S, class Place>
    using layer = detail::layer_norm_layer<P, S, Place, N>;
};

}  // namespace tenet::nn
