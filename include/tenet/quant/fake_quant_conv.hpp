// The Conv2d of quantization-aware training (and of calibration): nn's
// conv2d_layer whose GEMMs multiply fake-quantized operands
// (fake_quant_operands.hpp), the values an int8 model holds: the input per
// tensor (asymmetric, observed), the weight per output channel (symmetric,
// from each filter's range). The backward is the clipped straight-through
// estimator, as for the Linear (fake_quant_linear.hpp): the weight gradient
// dW = dz^T cols(xq), the input gradient col2im(dz wq) masked by where x was
// inside its range. A fused ReLU stays in the epilogue.
#pragma once

#include "../nn/conv_layer.hpp"
#include "fake_quant_operands.hpp"

namespace tenet::quant {

template <precision_policy P, class InShape, class Place, class Spec>
using fake_quant_conv2d_base =
    nn::conv2d_layer<P, InShape, Place, Spec,
                     fake_quant_operands<typename P::storage, InShape, nn::conv2d_weight_shape<Spec>, Place,
                                         typename P::input_observer>>;

template <precision_policy P, class InShape, class Place, class Spec>
class fake_quant_conv2d_layer : public fake_quant_conv2d_base<P, InShape, Place, Spec> {
    using base = fake_quant_conv2d_base<P, InShape, Place, Spec>;

public:
    using base::base;
    using spec = Spec;
    static constexpr bool has_bias = Spec::bias;

    // Observers on (the default) or frozen; fake quantization on (the
    // default) or off (a plain Conv2d that observes: calibration).
    void enable_observers(bool on) { this->operands().enable_observers(on); }
    void enable_fake_quant(bool on) { this->operands().enable_fake_quant(on); }
    bool observing() const { return this->operands().observing(); }
    bool fake_quantizing() const { return this->operands().fake_quantizing(); }

    // What an int8 model is built from.
    const auto& input_observer() const { return this->operands().input_observer(); }
    affine input_params() const { return this->operands().input_params(); }
    // Per output channel, shape [Out, 1] (symmetric: the zero points are 0).
    auto weight_scale() const { return this->operands().weight_scale(); }
};

}  // namespace tenet::quant
