// Quantization-aware training and calibration as a precision policy:
// quant::qat<Base, Observer> is the training policy Base (fp32, bf16_mixed,
// ...) whose Linear and Conv2d layers fake-quantize their input and weights
// (fake_quant_linear.hpp, fake_quant_conv.hpp); Observer watches each such
// layer's input (default:
// PyTorch's moving-average min-max). The model spec does not change, and the
// flat parameter buffers are laid out as under Base, so a trained model's
// parameters copy straight in:
//
//   nn::model<mlp, fp32, In> trained;  ... train ...
//   nn::model<mlp, quant::qat<fp32>, In> q;
//   quant::copy_parameters(q, trained);
//   ... fine-tune q with train::trainer; quant::freeze_observers(q) part-way ...
//   quant::int8_model<mlp, In> int8(q);          // int8_model.hpp
//
// Post-training quantization uses the same layers with fake quantization off:
// quant::prepare_calibration(q) makes each Linear and Conv2d a plain one that
// observes, and forwards of calibration batches set the ranges.
#pragma once

#include "../nn/model.hpp"
#include "../tensor/copy.hpp"
#include "fake_quant_conv.hpp"
#include "fake_quant_linear.hpp"

#include <type_traits>

namespace tenet::quant {

template <training_policy Base, class Observer = moving_average_observer<per_tensor>>
struct qat : Base {
    using input_observer = Observer;
    template <class P, class S, class Place, std::size_t In, std::size_t Out, linalg::activation Act>
    using linear_layer = fake_quant_linear_layer<P, S, Place, In, Out, Act>;
    template <class P, class S, class Place, class Spec>
    using conv2d_layer = fake_quant_conv2d_layer<P, S, Place, Spec>;
};

namespace detail {

template <class L>
inline constexpr bool is_fake_quantized = requires(L& l) { l.enable_fake_quant(true); };

// f(layer) for each fake-quantized Linear and Conv2d, in order.
template <class Model, class F>
void for_each_fake_quant_layer(Model& model, F&& f)
{
    model.for_each_layer([&](auto& layer) {
        if constexpr (is_fake_quantized<std::remove_cvref_t<decltype(layer)>>) f(layer);
    });
}

}  // namespace detail

// Observers stop updating: the ranges (and so the scales) stay as they are.
template <class Model>
void freeze_observers(Model& model)
{
    detail::for_each_fake_quant_layer(model, [](auto& l) { l.enable_observers(false); });
}

template <class Model>
void enable_observers(Model& model, bool on = true)
{
    detail::for_each_fake_quant_layer(model, [on](auto& l) { l.enable_observers(on); });
}

template <class Model>
void enable_fake_quant(Model& model, bool on = true)
{
    detail::for_each_fake_quant_layer(model, [on](auto& l) { l.enable_fake_quant(on); });
}

// Calibration for post-training quantization: observers on, fake quantization
// off, evaluation mode (no dropout).
template <class Model>
void prepare_calibration(Model& model)
{
    enable_observers(model, true);
    enable_fake_quant(model, false);
    model.eval();
}

// A trained model's parameters into its QAT twin (nn/model.hpp).
using nn::copy_parameters;

}  // namespace tenet::quant
