// LayerNorm<N>: normalises the last axis (extent N) of its input, then scales
// by gamma and shifts by beta (both [N], initialised to 1 and 0 as in
// PyTorch). The forward saves each row's mean and 1/stddev (f32) for the
// backward; each direction is one row-wise kernel (rowwise/layernorm.hpp).
//
// Options, as PyTorch's eps and elementwise_affine:
//   nn::LayerNorm<N, nn::layernorm_options{.eps = 1e-6f, .affine = false}>
// Without affine parameters the layer has none (parameter_count 0); its
// backward still reduces the unused gamma/beta gradients (N values a batch)
// into scratch of its own.
#pragma once

#include "../rowwise/rowwise.hpp"
#include "layer.hpp"

namespace tenet::nn {

struct layernorm_options {
    float eps = 1e-5f;   // added to the variance
    bool affine = true;  // learnable gamma and beta
};

namespace detail {

template <std::size_t N, class S>
struct LayerNorm_N_needs_a_last_extent_of_N_not {
    static constexpr auto text()
    {
        return fixed_string("tenet: LayerNorm<") + decimal<N>() + fixed_string("> fed ") + shape_name<S>::text() +
               fixed_string(": its last extent must be ") + decimal<N>();
    }
};

template <std::size_t N, class S>
struct layer_norm_output {
    static_assert(diagnose<last_extent<S> == N, LayerNorm_N_needs_a_last_extent_of_N_not<N, S>>::value);
    using type = S;
};

template <precision_policy P, class S, class Place, std::size_t N, layernorm_options Options>
class layer_norm_layer {
    using storage = typename P::storage;
    using gradient = gradient_t<P>;
    using matrix = matrix_shape_t<S>;
    using rows = Shape<matrix::extents[0]>;

public:
    using input_shape = S;
    using output_shape = S;
    static constexpr bool wants_preactivation_gradient = false;
    static constexpr bool affine = Options.affine;
    static constexpr std::size_t parameter_count = affine ? 2 * N : 0;
    static constexpr std::size_t parameter_numel = affine ? 2 * padded_numel<storage>(N) : 0;
    static constexpr std::size_t activation_bytes = 2 * rows::numel * sizeof(f32);
    static constexpr std::size_t activation_gradient_bytes = 0;
    static constexpr std::size_t kept_bytes = 2 * kept_tensor<f32, rows, Place>::arena_bytes;
    static constexpr bool skips_null_gradients = true;
    static constexpr std::string_view kind = "LayerNorm";

    template <class Slice>
    explicit layer_norm_layer(Slice& parameters)
        : gamma_(take(parameters)),
          beta_(take(parameters)),
          discarded_(keeps_gradients() || !P::trainable ? 0 : 2 * padded_numel<gradient>(N), current_stream()),
          mean_(parameters),
          rstd_(parameters)
    {
    }

    void initialize(std::uint64_t)
    {
        if constexpr (affine) {
            assign(gamma_.first, 1);
            assign(beta_.first, 0);
        }
    }

    template <class X, class Y>
    void forward(const X& x, const Y& y, const step_info&)
    {
        check_input_element<storage, X>();
        const auto xm = contiguous_as<matrix>(x);
        input_ = xm.data();
        if constexpr (affine)
            layernorm_forward(contiguous_as<matrix>(y), mean_.view(), rstd_.view(), xm, gamma_.first, beta_.first,
                              epsilon);
        else
            layernorm_forward(contiguous_as<matrix>(y), mean_.view(), rstd_.view(), xm, full<Shape<N>>(1.0f),
                              full<Shape<N>>(0.0f), epsilon);
    }

    template <class DY, class DX, class Prev>
    void backward(const DY& dy, const DX& dx, const step_info&, Prev&)
    {
        if constexpr (is_no_input_gradient<DX>) {
            Tensor<storage, matrix, Place> unused;  // the kernel writes dx anyway; a first layer has no use for it
            backward_into(dy, unused.view());
        } else {
            backward_into(dy, contiguous_as<matrix>(dx));
        }
    }

    template <class F>
    void for_each_parameter([[maybe_unused]] F&& f, [[maybe_unused]] const std::string& prefix)
    {
        if constexpr (affine) {
            f(prefix + "weight", gamma_.first, gamma_.second);
            f(prefix + "bias", beta_.first, beta_.second);
        }
    }

    static constexpr f32 epsilon = Options.eps;

private:
    using views = decltype(std::declval<parameter_slice<storage, gradient>&>().template take<Shape<N>, Place>());
    struct no_parameters {};
    using parameters = std::conditional_t<affine, views, no_parameters>;

    template <class Slice>
    static parameters take([[maybe_unused]] Slice& slice)
    {
        if constexpr (affine) return slice.template take<Shape<N>, Place>();
        else return {};
    }

    template <class DY, class DX>
    void backward_into(const DY& dy, const DX& dx)
    {
        const auto x = make_view<matrix, Place>(input_);
        const auto gamma = [&] {
            if constexpr (affine) return gamma_.first;
            else return full<Shape<N>>(1.0f);
        }();
        layernorm_backward(dx, column_sums(0), column_sums(1), contiguous_as<matrix>(dy), x, mean_.view(), rstd_.view(),
                           gamma);
    }

    // Whether the parameters' gradients are kept: affine, and not inside nn::Frozen.
    bool keeps_gradients() const
    {
        if constexpr (affine) return gradient_wanted(gamma_.second);
        else return false;
    }

    // Where the backward writes dgamma (0) and dbeta (1): the gradients, or
    // sums computed alongside dx and discarded.
    auto column_sums(std::size_t which)
    {
        if constexpr (affine)
            if (keeps_gradients()) return which == 0 ? gamma_.second : beta_.second;
        return make_view<Shape<N>, Place>(discarded_.data() + which * padded_numel<gradient>(N));
    }

    parameters gamma_, beta_;
    buffer<gradient, Place> discarded_;  // (empty when the gradients are kept)
    kept_tensor<f32, rows, Place> mean_, rstd_;
    const storage* input_ = nullptr;
};

}  // namespace detail

template <std::size_t N, layernorm_options Options = layernorm_options{}>
struct LayerNorm {
    template <class S>
    using output_shape = typename detail::layer_norm_output<N, S>::type;
    template <class S>
    static constexpr bool accepts = last_extent<S> == N;
    template <precision_policy P, class S, class Place>
    using layer = detail::layer_norm_layer<P, S, Place, N, Options>;
};

}  // namespace tenet::nn
