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
// Observers update while enabled and then freeze (quant::freeze_observers):
// the ranges stay as they are while training goes on. With fake quantization
// disabled the layer is a plain Linear that observes (post-training
// calibration). The activation is applied here, not in a GEMM epilogue, so
// that the mask and the pre-activation gradient stay in this layer.
//
// Weight ranges and scales stay on the device; the input observer's result
// is read back once per forward (a host scalar for the fake-quant kernel), so
// these steps are run eagerly, not captured into a CUDA Graph.
#pragma once

#include "../nn/activation_layers.hpp"
#include "../nn/linear_layer.hpp"
#include "observers.hpp"
#include "quantize.hpp"

#include <optional>
#include <string>

namespace tenet::quant {

template <precision_policy P, class InShape, class Place, std::size_t In, std::size_t Out, linalg::activation Act>
class fake_quant_linear_layer {
    using storage = typename P::storage;
    using gradient_element = nn::gradient_t<P>;
    using parameters_type = nn::linear_parameters<storage, gradient_element, Place, In, Out>;
    using x_matrix = Shape<InShape::numel / In, In>;
    using y_matrix = Shape<InShape::numel / In, Out>;
    using observer_type = typename P::input_observer;
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
    static constexpr std::size_t activation_bytes =
        (x_matrix::numel + Out * In + 2 * z_tensor::numel) * sizeof(storage);
    static constexpr std::size_t activation_gradient_bytes = 0;

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
    void forward(const X& x_in, const Y& y_in, const nn::step_info&)
    {
        nn::check_input_element<storage, X>();
        const auto x = nn::contiguous_as<x_matrix>(x_in);
        const auto y = nn::contiguous_as<y_matrix>(y_in);
        input_ = x.data();
        if (observing_) observe(x);
        if (!input_params_)
            throw error("tenet: quant: a fake-quantized Linear ran with its observers disabled before they "
                        "observed anything");
        const auto [xo, wo] = operands(x);
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
        const auto [xo, wo] = operands_saved(x);
        const auto dz = [&] {
            if constexpr (has_act) {
                assign(dz_.view(), tenet::gradient<0>(tenet::internal::make_map(op{}, var<0>(z_.view())), dy));
                return dz_.view();
            } else {
                return dy;
            }
        }();
        linalg::linear_backward_weights(params_.weight.second, params_.bias.second, dz, xo);
        if (fake_quant_) assign(params_.weight.second, where(weight_mask(), params_.weight.second, 0));
        if constexpr (!nn::is_no_input_gradient<DX>) {
            const auto dx = nn::contiguous_as<x_matrix>(dx_in);
            linalg::linear_backward_input(dx, dz, wo);
            if (fake_quant_) assign(dx, where(input_mask(x), dx, 0));
        }
    }

    template <class F>
    void for_each_parameter(F&& f, const std::string& prefix)
    {
        params_.for_each(f, prefix);
    }

    // Observers on (the default) or frozen; fake quantization on (the
    // default) or off (a plain Linear that observes: calibration).
    void enable_observers(bool on) { observing_ = on; }
    void enable_fake_quant(bool on) { fake_quant_ = on; }
    bool observing() const { return observing_; }
    bool fake_quantizing() const { return fake_quant_; }

    // What an int8 model is built from.
    const observer_type& input_observer() const { return observer_; }
    affine input_params() const
    {
        if (!input_params_) throw error("tenet: quant: this Linear has observed no input yet (calibrate it first)");
        return *input_params_;
    }
    auto weight() const { return params_.weight.first; }
    auto bias() const { return params_.bias.first; }
    // Per output channel, shape [Out, 1] (symmetric: the zero points are 0).
    auto weight_scale() const { return weight_scale_.view(); }

private:
    using op = linalg::activation_op<has_act ? Act : linalg::activation::relu>;

    template <class XV>
    void observe(const XV& x)
    {
        observer_.observe(x);
        input_params_ = observer_.params().at(0);
        assign(weight_min_.view(), tenet::min<1>(params_.weight.first, keepdims));
        assign(weight_max_.view(), tenet::max<1>(params_.weight.first, keepdims));
        assign(weight_scale_.view(),
               tenet::internal::make_map(scale_from_range{weight_scheme}, weight_min_.view(), weight_max_.view()));
    }

    // The GEMM's operands: fake-quantized copies, or x and W themselves.
    template <class XV>
    auto operands(const XV& x)
    {
        if (fake_quant_) {
            assign(xq_.view(), fake_quantize(x, input_params_->scale, input_params_->zero_point, activation_scheme));
            assign(wq_.view(), fake_quantize(params_.weight.first, weight_scale_.view(), 0, weight_scheme));
        }
        return operands_saved(x);
    }
    template <class XV>
    auto operands_saved(const XV& x) const
    {
        using xv = decltype(std::as_const(xq_).view());
        using wv = decltype(std::as_const(wq_).view());
        if (fake_quant_) return std::pair<xv, wv>{std::as_const(xq_).view(), std::as_const(wq_).view()};
        return std::pair<xv, wv>{make_view<x_matrix, Place>(static_cast<const storage*>(x.data())),
                                 make_view<Shape<Out, In>, Place>(static_cast<const storage*>(params_.weight.first.data()))};
    }

    template <class XV>
    auto input_mask(const XV& x) const
    {
        return fake_quantize_mask(x, input_params_->scale, input_params_->zero_point, activation_scheme);
    }
    auto weight_mask() const { return fake_quantize_mask(params_.weight.first, weight_scale_.view(), 0, weight_scheme); }

    parameters_type params_;
    observer_type observer_{activation_scheme};
    std::optional<affine> input_params_;
    Tensor<f32, Shape<Out, 1>, Place> weight_min_, weight_max_, weight_scale_;
    Tensor<storage, x_matrix, Place> xq_;
    Tensor<storage, Shape<Out, In>, Place> wq_;
    [[no_unique_address]] z_tensor z_, dz_;
    const storage* input_ = nullptr;
    bool observing_ = true;
    bool fake_quant_ = true;
};

}  // namespace tenet::quant
