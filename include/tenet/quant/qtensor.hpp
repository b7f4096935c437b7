// qtensor<S, Place, Granularity>: an int8 tensor with its affine parameters
// -- the values, a scale and a zero point per tensor or per channel (shaped
// param_shape_t<Granularity, S>, so they broadcast against the values) and
// the scheme they were chosen for. It is what post-training quantization
// stores a weight as: `bytes` counts the values and the parameters, a
// quarter of the f32 tensor's plus a few bytes per channel.
#pragma once

#include "../tensor/copy.hpp"
#include "../tensor/tensor.hpp"
#include "granularity.hpp"
#include "observers.hpp"
#include "qparams.hpp"
#include "quantize.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

namespace tenet::quant {

template <class S, class Place = Device, class Granularity = per_tensor>
class qtensor {
public:
    using shape = S;
    using place = Place;
    using granularity = Granularity;
    using param_shape = param_shape_t<Granularity, S>;
    static constexpr std::size_t channels = channel_count<Granularity, S>;
    static constexpr std::size_t bytes =
        Tensor<i8, S, Place>::bytes + Tensor<f32, param_shape, Place>::bytes + Tensor<i32, param_shape, Place>::bytes;

    // Copies an observer's conclusion into the parameter tensors (on the
    // current stream); throws tenet::error when it is for another axis or
    // channel count.
    void set_params(const quant_params& p)
    {
        if (p.axis != Granularity::axis || p.scale.size() != channels || p.zero_point.size() != channels)
            throw error("tenet: qtensor::set_params: parameters for axis " + std::to_string(p.axis) + " with " +
                        std::to_string(p.scale.size()) + " scales and " + std::to_string(p.zero_point.size()) +
                        " zero points, but this qtensor has " + std::to_string(channels) + " channel(s) on axis " +
                        std::to_string(Granularity::axis));
        tenet::copy_bytes<Place, Host>(scale_.data(), p.scale.data(), Tensor<f32, param_shape, Place>::bytes,
                                                current_stream());
        tenet::copy_bytes<Place, Host>(zero_point_.data(), p.zero_point.data(),
                                                Tensor<i32, param_shape, Place>::bytes, current_stream());
        scheme_ = p.s;
        has_params_ = true;
    }

    // values = quantize(x) with these parameters, in one fused assignment.
    template <class X>
    void quantize_from(const X& x)
    {
        if (!has_params_) throw error("tenet: qtensor::quantize_from before set_params: no scale or zero point yet");
        values_ = quantize(x, scale_, zero_point_, scheme_);
    }

    // (values - zero_point) * scale as an expression over this qtensor's
    // memory (it must outlive the expression).
    auto dequantized() const { return dequantize(values_, scale_, zero_point_); }

    Tensor<i8, S, Place>& values() { return values_; }
    const Tensor<i8, S, Place>& values() const { return values_; }
    Tensor<f32, param_shape, Place>& scale() { return scale_; }
    const Tensor<f32, param_shape, Place>& scale() const { return scale_; }
    Tensor<i32, param_shape, Place>& zero_point() { return zero_point_; }
    const Tensor<i32, param_shape, Place>& zero_point() const { return zero_point_; }
    quant::scheme scheme() const { return scheme_; }

private:
    Tensor<i8, S, Place> values_;
    Tensor<f32, param_shape, Place> scale_;
    Tensor<i32, param_shape, Place> zero_point_;
    quant::scheme scheme_{};
    bool has_params_ = false;
};

}  // namespace tenet::quant
