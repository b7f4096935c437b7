// fp8_linear_layer: Linear<In, Out> (+ its fused activation) under an
// fp8_training policy. The GEMMs see fp8 values: x and W cast to e4m3 with
// their delayed scales (fp8.hpp), the pre-activation gradient to e5m2:
//
//   forward   z = dq(e4m3(x sx)) dq(e4m3(W sw))^T + b,  y = act(z)
//   backward  dz = dy * act'(z),  g = dq(e5m2(dz sg))
//             dW = g^T dq(x),  dx = g dq(W),  db = sum of dz's rows (f32)
//
// where dq(q) = q / s: the fp8 values, widened exactly to f32, times the
// scale's inverse. The dequantized operands go through the ordinary f32
// GEMMs (linalg/linear_gemms.hpp) on host and device alike -- no native fp8 GEMM:
// this is the numerics of fp8 training, not its speed. amax of x and W are
// recorded by training forwards, amax of dz by the backward, and each scale
// is updated right after its cast (the next step's scale).
//
// The parameters are taken exactly as Linear takes them (weight [Out, In],
// then bias [Out], same streams), so a model's flat buffers match the plain
// policy's and trained parameters copy across. The layer applies its
// activation itself (it keeps z), so wants_preactivation_gradient is false.
#pragma once

#include "../nn/activation_layers.hpp"
#include "../nn/linear_layer.hpp"
#include "fp8.hpp"

#include <string>
#include <type_traits>

namespace tenet::quant {

template <class P, class InShape, class Place, std::size_t In, std::size_t Out, linalg::activation Act>
class fp8_linear_layer {
    using storage = typename P::storage;
    using gradient_type = nn::gradient_t<P>;
    using parameters_type = nn::linear_parameters<storage, gradient_type, Place, In, Out>;
    using x_matrix = Shape<InShape::numel / nn::last_extent<InShape>, In>;  // (rows: a stand-in where the input does not fit)
    using w_shape = Shape<Out, In>;
    static constexpr std::size_t batch = InShape::extents[0];
    using x_samples = Shape<batch, x_matrix::numel / batch>;  // x as the model's samples
    using y_matrix = Shape<InShape::numel / nn::last_extent<InShape>, Out>;
    using forward_scaling = delayed_scaling<typename P::fp8_forward, P::amax_history, Place>;
    using backward_scaling = delayed_scaling<typename P::fp8_backward, P::amax_history, Place>;
    static constexpr bool has_activation = Act != linalg::activation::none;
    struct no_preactivation {};

public:
    using input_shape = InShape;
    using output_shape = nn::with_last_extent_t<InShape, Out>;
    static constexpr bool wants_preactivation_gradient = false;
    static constexpr linalg::activation activation = Act;
    static constexpr std::size_t parameter_count = parameters_type::count;
    static constexpr std::size_t parameter_numel = parameters_type::numel;
    // Dequantized x and W (kept for the backward), z, the dequantized
    // gradient, and the three scaling states.
    static constexpr std::size_t activation_bytes =
        sizeof(f32) * (x_matrix::numel + w_shape::numel + (has_activation ? 2 : 1) * y_matrix::numel) +
        2 * forward_scaling::bytes + backward_scaling::bytes;
    static constexpr std::size_t activation_gradient_bytes = 0;
    static constexpr bool skips_null_gradients = true;
    static constexpr std::string_view kind = "Linear";

    template <class Slice>
    explicit fp8_linear_layer(Slice& parameters)
        : params_(parameters),
          x_scaling_(P::margin),
          weight_scaling_(P::margin),
          gradient_scaling_(P::margin)
    {
    }

    // PyTorch's default for nn.Linear, as Linear draws it.
    void initialize(std::uint64_t seed)
    {
        params_.initialize(seed);
    }

    template <class X, class Y>
    void forward(const X& x, const Y& y, const nn::step_info& step)
    {
        nn::check_input_element<storage, X>();
        const auto xm = nn::contiguous_as<x_matrix>(x);
        quantize_dequantize(x_, xm, x_scaling_);
        quantize_dequantize(w_, params_.weight.first, weight_scaling_);
        if (step.training) {
            record_input_amax(make_view<x_samples, Place>(xm.data()), step.valid_samples);
            record_amax(weight_scaling_, tenet::max(abs(params_.weight.first)));
        }
        const auto ym = nn::contiguous_as<y_matrix>(y);
        if constexpr (has_activation) {
            linalg::linear_forward(z_, x_, w_, params_.bias.first);
            assign(ym, tenet::internal::make_map(op<Act>{}, z_.view()));
        } else {
            linalg::linear_forward(ym, x_, w_, params_.bias.first);
        }
    }

    template <class DY, class DX, class Prev>
    void backward(const DY& dy, const DX& dx, const nn::step_info&, Prev&)
    {
        static_assert(!Prev::wants_preactivation_gradient,
                      "tenet: fp8_linear_layer: the layer before wants its pre-activation gradient from this one "
                      "(a plain Linear unit mixed into an fp8 model)");
        const auto dz = preactivation_gradient(nn::contiguous_as<y_matrix>(dy));
        quantize_dequantize(g_, dz, gradient_scaling_);
        record_amax(gradient_scaling_, tenet::max(abs(dz)));
        if (nn::gradient_wanted(params_.weight.second)) {  // (not inside nn::Frozen)
            assign(params_.bias.second, sum<0>(dz));
            linalg::linear_backward_weights(params_.weight.second, g_, x_);
        }
        if constexpr (!nn::is_no_input_gradient<DX>) linalg::linear_backward_input(nn::contiguous_as<x_matrix>(dx), g_, w_);
    }

    template <class F>
    void for_each_parameter(F&& f, const std::string& prefix)
    {
        params_.for_each(f, prefix);
    }

    const forward_scaling& input_scaling() const { return x_scaling_; }
    const forward_scaling& weight_scaling() const { return weight_scaling_; }
    const backward_scaling& gradient_scaling() const { return gradient_scaling_; }

private:
    template <linalg::activation A>
    using op = linalg::activation_op<A>;

    // dst = dq(fp8(src * scale))
    template <class Dst, class Src, class Scaling>
    static void quantize_dequantize(Dst& dst, const Src& src, const Scaling& scaling)
    {
        assign(dst.view(), cast<typename Scaling::format>(src * scaling.scale()) * scaling.scale_inverse());
    }
    // A training step records its amax and moves the scale on for the next step.
    template <class Scaling, class A>
    static void record_amax(Scaling& scaling, const A& amax)
    {
        scaling.record(amax);
        scaling.update();
    }
    // x's amax over the real samples (every sample without a mask): padding
    // is selected away, whatever it holds.
    template <class XS>
    void record_input_amax(const XS& x, const f32* valid_samples)
    {
        if (!valid_samples) return record_amax(x_scaling_, tenet::max(abs(x)));
        const auto real = broadcast_to<x_samples>(make_view<Shape<batch, 1>, Place>(valid_samples)) != 0;
        record_amax(x_scaling_, tenet::max(where(real, abs(x), 0)));
    }

    template <class DY>
    auto preactivation_gradient(const DY& dy) const
    {
        if constexpr (has_activation) return tenet::gradient<0>(tenet::internal::make_map(op<Act>{}, var<0>(z_.view())), dy);
        else return dy;
    }

    parameters_type params_;
    forward_scaling x_scaling_, weight_scaling_;
    backward_scaling gradient_scaling_;
    Tensor<f32, x_matrix, Place> x_;  // dq(e4m3(x sx))
    Tensor<f32, w_shape, Place> w_;   // dq(e4m3(W sw))
    [[no_unique_address]] std::conditional_t<has_activation, Tensor<f32, y_matrix, Place>, no_preactivation> z_;
    Tensor<f32, y_matrix, Place> g_;  // dq(e5m2(dz sg))
};

}  // namespace tenet::quant
