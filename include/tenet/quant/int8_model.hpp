// int8_model<Spec, In, Place>: the int8 inference form of a model, with the
// same static shapes. Built from a calibrated or quantization-aware trained
// model under quant::qat<...> (qat.hpp): each Linear (with the activation
// after it) becomes an int8 unit:
//
//   weights   int8, per output channel, symmetric (zero point 0), the scales
//             the fake-quantized layer used; 4x fewer bytes than f32
//   input     int8, per tensor, asymmetric: the Linear's observed range
//   GEMM      acc = x_q w_q^T, exact int32 (linalg::int8_gemm: cuBLASLt IMMA
//             on the device, an int32 loop on the host -- identical results)
//   epilogue  ONE fused pass: y = act((acc - zp_x * sum_k w_q) * s_x s_w + b),
//             then requantized with the next unit's input params straight
//             into its int8 input (or written as f32 logits by the last unit)
//
// IMMA wants K and N multiples of 4, so weights and int8 activations are
// stored with their feature counts rounded up to 4; the padding is zero and
// multiplies zero weights. Supported specs: Sequentials (nested,
// Checkpointed) of Linear, ReLU / GELU / GELUTanh directly after a Linear,
// and Dropout (the identity at inference); anything else is a tenet:
// compile error naming it.
#pragma once

#include "../linalg/int8_gemm.hpp"
#include "../nn/linear_units.hpp"
#include "../tensor/copy.hpp"
#include "qat.hpp"

#include <tuple>
#include <utility>

namespace tenet::quant {
namespace detail {

using nn::type_list;

template <class S>
struct no_int8_form {
    static constexpr auto text()
    {
        return fixed_string(
            "tenet: int8_model: a layer has no int8 form (supported: Linear, ReLU/GELU/GELUTanh right after a "
            "Linear, Dropout, Sequential, Checkpointed)");
    }
    static constexpr void reject()
    {
        static_assert(::tenet::diagnose<false, no_int8_form>::value);
    }
};

template <class Spec>
using units_of = nn::linear_units_t<Spec, no_int8_form>;

constexpr std::size_t round_up4(std::size_t n) { return (n + 3) / 4 * 4; }

// One int8 Linear (+ activation) for Rows rows.
template <std::size_t Rows, class U, class Place>
class int8_unit {
public:
    static constexpr std::size_t k = U::in_features, n = U::out_features, kp = round_up4(k), np = round_up4(n);
    static constexpr linalg::activation activation = U::activation;
    static constexpr std::size_t weight_bytes = n * k;  // i8
    // What defines the unit: int8 weights, f32 bias and weight scales, the input's scale and zero point.
    static constexpr std::size_t parameter_bytes = n * k + 2 * n * sizeof(f32) + sizeof(f32) + sizeof(i32);
    static constexpr std::size_t allocated_bytes =
        np * kp + 2 * n * sizeof(f32) + n * sizeof(i32) + Rows * kp + Rows * np * sizeof(i32);

    int8_unit()
    {
        // The padding of the input columns is never written: keep it zero.
        assign(input_.view(), 0);
    }

    // From a fake-quantized Linear (qat.hpp) with these features.
    template <class Layer>
    void load(const Layer& layer)
    {
        using storage = std::remove_cv_t<typename decltype(layer.weight())::element_type>;
        Tensor<storage, Shape<n, k>, Host> w;
        Tensor<storage, Shape<n>, Host> b;
        Tensor<f32, Shape<n, 1>, Host> scale;
        copy(w, layer.weight());
        copy(b, layer.bias());
        copy(scale, layer.weight_scale());
        current_stream().synchronize();
        input_params_ = layer.input_params();

        Tensor<i8, Shape<np, kp>, Host> wq;
        assign(wq.view(), 0);
        assign(slice<1, 0, k>(slice<0, 0, n>(wq.view())), quantize(w, scale, 0, weight_scheme));
        Tensor<f32, Shape<n>, Host> multiplier, bias;
        Tensor<i32, Shape<n>, Host> offset;
        for (std::size_t c = 0; c < n; ++c) {
            std::int64_t sum = 0;
            for (std::size_t j = 0; j < k; ++j) sum += wq.data()[c * kp + j];
            offset.data()[c] = static_cast<i32>(sum * input_params_.zero_point);
            multiplier.data()[c] = input_params_.scale * scale.data()[c];
            bias.data()[c] = convert<f32>(b.data()[c]);
        }
        copy(weight_, wq);
        copy(multiplier_, multiplier);
        copy(offset_, offset);
        copy(bias_, bias);
        current_stream().synchronize();  // the host tensors go out of scope
    }

    affine input_params() const { return input_params_; }
    // The int8 input as [Rows, k] (a view of the padded buffer).
    auto input() { return slice<1, 0, k>(input_.view()); }
    const auto& weight() const { return weight_; }
    const auto& accumulators() const { return acc_; }

    // acc = input w^T, then the fused epilogue into `out` (f32), or into the
    // next unit's int8 input with `next` params.
    template <class Out>
    void run(const Out& out)
    {
        gemm();
        assign(out, dequantized());
    }
    template <class Out>
    void run(const Out& next_input, affine next)
    {
        gemm();
        assign(next_input, quantize(dequantized(), next.scale, next.zero_point, activation_scheme));
    }

private:
    void gemm() { linalg::int8_gemm(acc_.view(), std::as_const(input_).view(), std::as_const(weight_).view()); }

    auto dequantized() const
    {
        auto z = cast<f32>(slice<1, 0, n>(acc_.view()) - offset_.view()) * multiplier_.view() + bias_.view();
        if constexpr (activation == linalg::activation::none) return z;
        else return tenet::internal::make_map(linalg::activation_op<activation>{}, z);
    }

    Tensor<i8, Shape<np, kp>, Place> weight_;
    Tensor<f32, Shape<n>, Place> multiplier_, bias_;
    Tensor<i32, Shape<n>, Place> offset_;
    Tensor<i8, Shape<Rows, kp>, Place> input_;
    Tensor<i32, Shape<Rows, np>, Place> acc_;
    affine input_params_{1.0f, 0};
};

template <std::size_t Rows, class Units, class Place>
struct unit_tuple;
template <std::size_t Rows, class... U, class Place>
struct unit_tuple<Rows, type_list<U...>, Place> {
    using type = std::tuple<int8_unit<Rows, U, Place>...>;
};

}  // namespace detail

template <class Spec, shape_type In, memory_place Place = Device>
class int8_model {
    using units = detail::units_of<Spec>;
    static constexpr std::size_t features = nn::last_extent<In>;
    static constexpr std::size_t rows = In::numel / features;
    using unit_tuple = typename detail::unit_tuple<rows, units, Place>::type;
    static constexpr std::size_t count = std::tuple_size_v<unit_tuple>;
    template <std::size_t I>
    using unit_t = std::tuple_element_t<I, unit_tuple>;

public:
    using input_shape = In;
    using output_shape = typename Spec::template output_shape<In>;
    using output_tensor = Tensor<f32, output_shape, Place>;
    static_assert(count > 0, "tenet: int8_model: the model has no Linear layer");

    // Bytes of the int8 weights (exactly a quarter of f32 weights), of
    // everything that defines the model, and of everything allocated.
    static constexpr std::size_t weight_bytes = [] {
        return [&]<std::size_t... I>(std::index_sequence<I...>) { return (unit_t<I>::weight_bytes + ...); }(
            std::make_index_sequence<count>{});
    }();
    static constexpr std::size_t parameter_bytes = [] {
        return [&]<std::size_t... I>(std::index_sequence<I...>) { return (unit_t<I>::parameter_bytes + ...); }(
            std::make_index_sequence<count>{});
    }();
    static constexpr std::size_t allocated_bytes = [] {
        return [&]<std::size_t... I>(std::index_sequence<I...>) { return (unit_t<I>::allocated_bytes + ...); }(
            std::make_index_sequence<count>{}) + output_tensor::bytes;
    }();

    // Quantizes a calibrated (or QAT-trained) model of the same spec and input shape.
    template <class Prepared>
    explicit int8_model(Prepared& prepared)
    {
        static_assert(std::is_same_v<typename Prepared::input_shape, In> &&
                          std::is_same_v<typename Prepared::output_shape, output_shape>,
                      "tenet: int8_model: the prepared model has another input or output shape");
        std::size_t loaded = 0;
        detail::for_each_fake_quant_linear(prepared, [&](const auto& layer) { load(layer, loaded++); });
        if (loaded != count)
            throw error("tenet: int8_model: the prepared model has " + std::to_string(loaded) +
                        " fake-quantized Linear layers, the spec " + std::to_string(count));
    }

    // Logits (f32) for a batch of inputs (any floating type, shape In).
    template <class X>
    const output_tensor& forward(const X& x)
    {
        const auto xm = nn::contiguous_as<Shape<rows, features>>(x);
        const affine p = std::get<0>(units_).input_params();
        assign(std::get<0>(units_).input(), quantize(xm, p.scale, p.zero_point, activation_scheme));
        run_from<0>();
        return output_;
    }

    const output_tensor& output() const { return output_; }
    template <std::size_t I>
    auto& unit()
    {
        return std::get<I>(units_);
    }

private:
    template <class Layer>
    void load(const Layer& layer, std::size_t index)
    {
        [&]<std::size_t... I>(std::index_sequence<I...>) { (load_if<I>(layer, index), ...); }(
            std::make_index_sequence<count>{});
    }
    template <std::size_t I, class Layer>
    void load_if(const Layer& layer, std::size_t index)
    {
        using U = unit_t<I>;
        if constexpr (Layer::in_features == U::k && Layer::out_features == U::n && Layer::activation == U::activation)
            if (index == I) std::get<I>(units_).load(layer);
    }

    template <std::size_t I>
    void run_from()
    {
        if constexpr (I + 1 == count) {
            std::get<I>(units_).run(make_view<Shape<rows, unit_t<I>::n>, Place>(output_.data()));
        } else {
            auto& next = std::get<I + 1>(units_);
            std::get<I>(units_).run(next.input(), next.input_params());
            run_from<I + 1>();
        }
    }

    unit_tuple units_;
    output_tensor output_;
};

}  // namespace tenet::quant
