// fake_quant_operands<Storage, XShape, WShape, Place, Observer>: what a
// fake-quantized layer (the Linear and the Conv2d of quantization-aware
// training) keeps beside its parameters, and the arithmetic they share:
//
//   observe(x, w)   the input observer sees x's real samples (per tensor,
//                   asymmetric: the int8 model's input params; padding rows,
//                   marked by step_info::valid_samples, are not seen -- x is
//                   Batch samples of XShape::numel / Batch values each); each
//                   output channel's weight
//                   range (W seen as [Out, everything else]) gives its scale
//                   (symmetric, narrow range, zero point 0)
//   operands(x, w)  the GEMM's operands: fake_quantize(x), fake_quantize(W)
//                   with those params -- or x and W themselves while fake
//                   quantization is off (post-training calibration)
//   mask_*          the clipped straight-through estimator: a gradient
//                   passes where x (or W) was inside its quantization range
//                   and is 0 where it was clipped (PyTorch's FakeQuantize)
//
// Observers update while enabled and then freeze: the ranges stay as they
// are while training goes on. The input observer's result is read back once
// per forward (a host scalar for the fake-quant kernel), so these steps run
// eagerly, not captured into a CUDA Graph.
#pragma once

#include "../memory/error.hpp"
#include "../nn/layer.hpp"
#include "../reduce/reduce.hpp"
#include "../tensor/copy.hpp"
#include "observers.hpp"
#include "quantize.hpp"

#include <optional>
#include <utility>

namespace tenet::quant {

template <class Storage, class XShape, class WShape, class Place, class Observer,
          std::size_t Batch = XShape::extents[0]>
class fake_quant_operands {
    static_assert(XShape::numel % Batch == 0, "tenet: fake_quant_operands: x must hold Batch samples of equal size");
    static constexpr std::size_t out = WShape::extents[0];
    using w_matrix = Shape<out, WShape::numel / out>;
    using x_samples = Shape<Batch, XShape::numel / Batch>;
    using x_view = decltype(make_view<XShape, Place>(static_cast<const Storage*>(nullptr)));
    using w_view = decltype(make_view<WShape, Place>(static_cast<const Storage*>(nullptr)));

public:
    using observer_type = Observer;
    // xq and wq, in the layer's storage type
    static constexpr std::size_t bytes = (XShape::numel + WShape::numel) * sizeof(Storage);

    // Observes x and W (while observing), then fake-quantizes them (while
    // fake quantizing): call once per forward, before operands().
    template <class X, class W>
    void prepare(const X& x, const W& w, const nn::step_info& step)
    {
        if (observing_) observe(x, w, step.valid_samples);
        if (fake_quant_ && !input_params_)
            throw error("tenet: quant: a fake-quantized layer has no input range yet: its observers were disabled, "
                        "or saw padding alone, before they observed a real sample");
        if (fake_quant_) {
            assign(xq_.view(), fake_quantize(x, input_params_->scale, input_params_->zero_point, activation_scheme));
            assign(reshape<w_matrix>(wq_.view()), fake_quantize(reshape<w_matrix>(w), weight_scale_.view(), 0, weight_scheme));
        }
    }

    // The GEMM's operands as views: the fake-quantized copies, or x and W.
    template <class X, class W>
    std::pair<x_view, w_view> operands(const X& x, const W& w) const
    {
        if (fake_quant_) return {std::as_const(xq_).view(), std::as_const(wq_).view()};
        return {make_view<XShape, Place>(static_cast<const Storage*>(x.data())),
                make_view<WShape, Place>(static_cast<const Storage*>(w.data()))};
    }

    // The straight-through estimator's masks, applied in place.
    template <class DX, class X>
    void mask_input_gradient(const DX& dx, const X& x) const
    {
        if (fake_quant_)
            assign(dx, where(fake_quantize_mask(x, input_params_->scale, input_params_->zero_point, activation_scheme), dx, 0));
    }
    template <class DW, class W>
    void mask_weight_gradient(const DW& dw, const W& w) const
    {
        if (fake_quant_)
            assign(reshape<w_matrix>(dw),
                   where(fake_quantize_mask(reshape<w_matrix>(w), weight_scale_.view(), 0, weight_scheme),
                         reshape<w_matrix>(dw), 0));
    }

    void enable_observers(bool on) { observing_ = on; }
    void enable_fake_quant(bool on) { fake_quant_ = on; }
    bool observing() const { return observing_; }
    bool fake_quantizing() const { return fake_quant_; }

    const observer_type& input_observer() const { return observer_; }
    affine input_params() const
    {
        if (!input_params_) throw error("tenet: quant: this layer has observed no input yet (calibrate it first)");
        return *input_params_;
    }
    // Per output channel, shape [Out, 1] (symmetric: the zero points are 0).
    auto weight_scale() const { return weight_scale_.view(); }

private:
    template <class X, class W>
    void observe(const X& x, const W& w, const f32* valid_samples)
    {
        const auto samples = make_view<x_samples, Place>(x.data());
        if (valid_samples) observer_.observe(samples, make_view<Shape<Batch>, Place>(valid_samples));
        else observer_.observe(samples);
        if (observer_.count() > 0) input_params_ = observer_.params().at(0);  // (none after padding alone)
        assign(weight_min_.view(), tenet::min<1>(reshape<w_matrix>(w), keepdims));
        assign(weight_max_.view(), tenet::max<1>(reshape<w_matrix>(w), keepdims));
        assign(weight_scale_.view(),
               tenet::internal::make_map(scale_from_range{weight_scheme}, weight_min_.view(), weight_max_.view()));
    }

    observer_type observer_{activation_scheme};
    std::optional<affine> input_params_;
    Tensor<f32, Shape<out, 1>, Place> weight_min_, weight_max_, weight_scale_;
    Tensor<Storage, XShape, Place> xq_;
    Tensor<Storage, WShape, Place> wq_;
    bool observing_ = true;
    bool fake_quant_ = true;
};

}  // namespace tenet::quant
