// RMSNorm<N>: a custom layer with a parameter, written as docs/CUSTOM_LAYERS.md
// builds it step by step. Each row of the last axis (extent N) is scaled by
// the reciprocal of its root mean square, then by a learned weight [N]
// (initialised to 1, as in PyTorch's nn.RMSNorm):
//   y = x / sqrt(mean(x^2) + eps) * weight
#pragma once

#include <tenet/tenet.hpp>

template <std::size_t N>
struct RMSNorm {
    static constexpr float eps = 1e-6f;

    // Step 1: the parameter -- its name (what checkpoints and safetensors
    // files call it), its shape and how it starts.
    using weight = tenet::nn::parameter<"weight", tenet::Shape<N>, tenet::nn::init_ones>;

    // Step 2: the output shape for an input shape S (the input's), with one
    // readable error when S does not fit.
    template <class S>
    static auto checked_output()
    {
        static_assert(tenet::nn::last_extent<S> == N, "RMSNorm<N>: the input's last extent must be N");
        return S{};
    }
    template <class S>
    using output_shape = decltype(checked_output<S>());

    // Step 3: the layer for one precision policy P, input shape S and place.
    // The base binds, initialises and names the parameter and supplies the
    // rest of the protocol; this class says what it keeps, forward and backward.
    template <tenet::precision_policy P, class S, class Place>
    class layer : public tenet::nn::parameterised_layer<P, Place, weight> {
        using storage = typename P::storage;
        using compute = typename P::compute;            // f32 for 16-bit storage
        using matrix = tenet::nn::matrix_shape_t<S>;    // the input as rows x N
        using per_row = tenet::Shape<matrix::extents[0], 1>;

    public:
        using layer::parameterised_layer::parameterised_layer;  // the constructor taking the model's slice
        // what the forward keeps for the backward (and the backward's scratch)
        static constexpr std::size_t activation_bytes = 2 * per_row::numel * sizeof(compute);

        template <class X, class Y>
        void forward(const X& x, const Y& y, const tenet::nn::step_info&)
        {
            const auto xm = tenet::nn::contiguous_as<matrix>(x);
            input_ = xm.data();  // the model keeps x alive until the backward
            rstd_ = tenet::rsqrt(tenet::sum<1>(xm * xm, tenet::keepdims) * (compute(1) / N) + compute(eps));
            tenet::assign(tenet::nn::contiguous_as<matrix>(y), xm * rstd_ * this->value(weight{}));
        }

        // dy -> the weight's gradient and (unless this layer is first) dx:
        //   dweight = sum over rows of dy * x * r
        //   dx      = r * (dy * w - x * r^2 * mean(dy * w * x))     r = 1 / rms(x)
        template <class DY, class DX, class Prev>
        void backward(const DY& dy, const DX& dx, const tenet::nn::step_info&, Prev&)
        {
            const auto g = tenet::nn::contiguous_as<matrix>(dy);
            const auto xm = tenet::make_view<matrix, Place>(input_);
            const auto w = this->value(weight{});
            tenet::assign(this->gradient(weight{}), tenet::sum<0>(g * xm * rstd_));
            if constexpr (!tenet::nn::is_no_input_gradient<DX>) {
                dot_ = tenet::sum<1>(g * w * xm, tenet::keepdims) * (compute(1) / N);
                tenet::assign(tenet::nn::contiguous_as<matrix>(dx), rstd_ * (g * w - xm * rstd_ * rstd_ * dot_));
            }
        }

    private:
        tenet::Tensor<compute, per_row, Place> rstd_, dot_;  // 1 / rms of each row; the backward's row sums
        const storage* input_ = nullptr;
    };
};
