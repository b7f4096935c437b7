// The Linear of quantization-aware training (and of calibration): the same
// parameters as nn::Linear, but the GEMM multiplies fake-quantized operands,
// the values an int8 model will hold:
//
//   forward   the input observer sees x; xq = fake_quantize(x) with its
//             params (per tensor, asymmetric); each weight row's range gives
//             its scale (per output channel, symmetric, narrow range) and
//             wq = fake_quantize(W); y = act(xq wq^T + b)
//   backward  the clipped straight-through estimator: the gradients with
//             respect to xq and wq pass to x and W where x and W were inside
//             the quantization range, and are 0 where they were clipped
//             (PyTorch's FakeQuantize). dW = dz^T xq, dx = (dz wq) * mask(x).
//
// The observers, the fake-quantized operands and the masks are
// fake_quant_operands (fake_quant_operands.hpp), shared with the Conv2d.
// With fake quantization disabled the layer is a plain Linear that observes
// (post-training calibration). The activation is applied here, not in a GEMM
// epilogue, so that the mask and the pre-activation gradient stay in this
// layer.
#pragma once

#include "../nn/activation_layers.hpp"
#include "../nn/linear_layer.hpp"
#include "fake_quant_operands.hpp"

#include <string>

namespace tenet::quant {

template <precision_policy P, class InShape, class Place, std::size_t In, std::size_t Out, linalg::activation Act>
class fake_quant_linear_layer {
    using storage = typename P::storage;
    using gradient_element = nn::gradient_t<P>;
    using parameters_type = nn::linear_parameters<storage, gradient_element, Place, In, Out>;
    using x_matrix = Shape<InShape::numel / nn::last_extent<InShape>, In>;  // (rows: a stand-in where the input does not fit)
    using y_matrix = Shape<InShape::numel / nn::last_extent<InShape>, Out>;
    using operands_type = fake_quant_operands<storage, x_matrix, Shape<Out, In>, Place, typename P::input_observer,
                                              InShape::extents[0]>;
    static constexpr bool has_act = Act != linalg::activation::none;
    static constexpr std::size_t rows = x_matrix::extents[0];
    // The pre-activation and its gradient, when there is an activation.
    struct no_tensor {
        static constexpr std::size_t numel = 0;
    };
    using z_tensor = std::conditional_t<has_act, Tensor<storage, y_matrix, Place>, no_tensor>;

public:
    using input_shape = InShape;
    using output_shape = nn::with_last_extent_t<InShape, Out>;
    static constexpr bool wants_preactivation_gradient = false;
    static constexpr linalg::activation activation = Act;
    static constexpr std::size_t in_features = In, out_features = Out;
    static constexpr std::size_t parameter_count = parameters_type::count;
    static constexpr std::size_t parameter_numel = parameters_type::numel;
    // xq, wq, and with an activation its input z and the gradient dz.
    static constexpr std::size_t activation_bytes = operands_type::bytes + 2 * z_tensor::numel * sizeof(storage);
    static constexpr std::size_t activation_gradient_bytes = 0;
    static constexpr bool skips_null_gradients = true;
    static constexpr std::string_view kind = "Linear";

    template <class Slice>
    explicit fake_quant_linear_layer(Slice& parameters)
        : params_(parameters)
    {
    }

    // PyTorch's default for nn.Linear, as nn::Linear.
    void initialize(std::uint64_t seed)
    {
        params_.initialize(seed);
    }

    template <class X, class Y>
    void forward(const X& x_in, const Y& y_in, const nn::step_info& step)
    {
        nn::check_input_element<storage, X>();
        const auto x = nn::contiguous_as<x_matrix>(x_in);
        const auto y = nn::contiguous_as<y_matrix>(y_in);
        input_ = x.data();
        fq_.prepare(x, params_.weight.first, step);
        const auto [xo, wo] = fq_.operands(x, params_.weight.first);
        if constexpr (has_act) {
            linalg::linear_forward(z_.view(), xo, wo, params_.bias.first);
            assign(y, tenet::internal::make_map(op{}, z_.view()));
        } else {
            linalg::linear_forward(y, xo, wo, params_.bias.first);
        }
    }

    template <class DY, class DX, class Prev>
    void backward(const DY& dy_in, const DX& dx_in, const nn::step_info&, Prev&)
    {
        const auto dy = nn::contiguous_as<y_matrix>(dy_in);
        const auto x = make_view<x_matrix, Place>(input_);
        const auto [xo, wo] = fq_.operands(x, params_.weight.first);
        const auto dz = [&] {
            if constexpr (has_act) {
                assign(dz_.view(), tenet::gradient<0>(tenet::internal::make_map(op{}, var<0>(z_.view())), dy));
                return dz_.view();
            } else {
                return dy;
            }
        }();
        if (nn::gradient_wanted(params_.weight.second)) {  // (not inside nn::Frozen)
            linalg::linear_backward_weights(params_.weight.second, params_.bias.second, dz, xo);
            fq_.mask_weight_gradient(params_.weight.second, params_.weight.first);
        }
        if constexpr (!nn::is_no_input_gradient<DX>) {
            const auto dx = nn::contiguous_as<x_matrix>(dx_in);
            linalg::linear_backward_input(dx, dz, wo);
            fq_.mask_input_gradient(dx, x);
        }
    }

    template <class F>
    void for_each_parameter(F&& f, const std::string& prefix)
    {
        params_.for_each(f, prefix);
    }

    // Observers on (the default) or frozen; fake quantization on (the
    // default) or off (a plain Linear that observes: calibration).
    void enable_observers(bool on) { fq_.enable_observers(on); }
    void enable_fake_quant(bool on) { fq_.enable_fake_quant(on); }
    bool observing() const { return fq_.observing(); }
    bool fake_quantizing() const { return fq_.fake_quantizing(); }

    // What an int8 model is built from.
    const auto& input_observer() const { return fq_.input_observer(); }
    affine input_params() const { return fq_.input_params(); }
    auto weight() const { return params_.weight.first; }
    auto bias() const { return params_.bias.first; }
    // Per output channel, shape [Out, 1] (symmetric: the zero points are 0).
    auto weight_scale() const { return fq_.weight_scale(); }

private:
    using op = linalg::activation_op<has_act ? Act : linalg::activation::relu>;

    parameters_type params_;
    operands_type fq_;
    [[no_unique_address]] z_tensor z_, dz_;
    const storage* input_ = nullptr;
};

}  // namespace tenet::quant
