// int8_model<Spec, In, Place>: the int8 inference form of a model, with the
// same static shapes. Built from a calibrated or quantization-aware trained
// model under quant::qat<...> (qat.hpp): each Linear and Conv2d (with the
// ReLU Sequential fused into it) becomes an int8 GEMM unit:
//
//   weights   int8, per output channel, symmetric (zero point 0), the scales
//             the fake-quantized layer used; 4x fewer bytes than f32
//   input     int8, per tensor, asymmetric: the layer's observed range. A
//             convolution's im2col pads with the zero point (the real 0)
//   GEMM      acc = x_q w_q^T, exact int32 (linalg::int8_gemm: cuBLASLt IMMA
//             on the device, an int32 loop on the host -- identical results)
//   epilogue  ONE fused pass from the accumulators to the next unit's int8
//             input (or to the f32 logits after the last unit):
//             z = act((acc - zp_x * sum_k w_q) * s_x s_w + b), then every
//             layer up to the next GEMM as an expression over z --
//             activations, BatchNorm2d in evaluation mode (a per-channel
//             affine), max and average pooling (gathers), GlobalAvgPool2d,
//             Flatten, Dropout (the identity) -- then requantized.
//
// Layers before the first GEMM unit run the same way on the f32 input. IMMA
// wants K and N multiples of 4, so weights, int8 inputs and columns are
// stored with their feature counts rounded up to 4; the padding is zero and
// multiplies zero weights. Grouped convolutions and layers not listed (a
// LayerNorm, ...) are a tenet: compile error naming them.
#pragma once

#include "../conv/conv.hpp"
#include "../linalg/int8_gemm.hpp"
#include "../nn/batchnorm_layer.hpp"
#include "../nn/flatten.hpp"
#include "../nn/linear_units.hpp"
#include "../nn/pooling_layers.hpp"
#include "../tensor/copy.hpp"
#include "qat.hpp"

#include <array>
#include <tuple>
#include <utility>

namespace tenet::quant {
namespace detail {

using nn::type_list;

template <class S>
struct int8_model_a_layer_has_no_int8_form {
    static constexpr auto text()
    {
        return fixed_string(
            "tenet: int8_model: a layer has no int8 form (supported: Linear, Conv2d, activations, "
            "BatchNorm2d, MaxPool2d, AvgPool2d, GlobalAvgPool2d, Flatten, Dropout, Sequential, Checkpointed, Offloaded)");
    }
    static constexpr void reject()
    {
        static_assert(::tenet::diagnose<false, int8_model_a_layer_has_no_int8_form>::value);
    }
};

constexpr std::size_t round_up4(std::size_t n) { return (n + 3) / 4 * 4; }

// The int8 GEMM of a unit with Rows rows, K inputs and N outputs: the int8
// weights [np, kp], the accumulators [Rows, np], and the dequantizing
// epilogue's per-channel multiplier, offset and bias.
template <std::size_t Rows, std::size_t K, std::size_t N, linalg::activation Act, class Place>
class int8_gemm_unit {
public:
    static constexpr bool loads = true;
    static constexpr std::size_t k = K, n = N, kp = round_up4(K), np = round_up4(N);
    static constexpr linalg::activation activation = Act;
    static constexpr std::size_t weight_bytes = n * k;  // i8
    // What defines the unit: int8 weights, f32 bias and weight scales, the input's scale and zero point.
    static constexpr std::size_t parameter_bytes = n * k + 2 * n * sizeof(f32) + sizeof(f32) + sizeof(i32);
    static constexpr std::size_t allocated_bytes =
        np * kp + 2 * n * sizeof(f32) + n * sizeof(i32) + Rows * np * sizeof(i32);

    // From a fake-quantized layer (qat.hpp) whose weight has N rows of K.
    template <class Layer>
    void load(const Layer& layer)
    {
        using storage = std::remove_cv_t<typename decltype(layer.weight())::element_type>;
        Tensor<storage, Shape<n, k>, Host> w;
        copy(w.view(), reshape<Shape<n, k>>(layer.weight()));  // a convolution's [Out, K, K, In] as rows
        load(layer, w);
    }

    // ... with the weight's rows given in full (a grouped convolution's).
    template <class Layer, class Storage>
    void load(const Layer& layer, const Tensor<Storage, Shape<n, k>, Host>& w)
    {
        Tensor<f32, Shape<n>, Host> b;
        Tensor<f32, Shape<n, 1>, Host> scale;
        if constexpr (requires { layer.bias(); }) copy(b, layer.bias());
        else assign(b.view(), 0);
        copy(scale, layer.weight_scale());
        current_stream().synchronize();
        input_params_ = layer.input_params();

        Tensor<i8, Shape<np, kp>, Host> wq;
        assign(wq.view(), 0);
        assign(slice<1, 0, k>(slice<0, 0, n>(wq.view())), quantize(w, scale, 0, weight_scheme));
        Tensor<f32, Shape<n>, Host> multiplier;
        Tensor<i32, Shape<n>, Host> offset;
        for (std::size_t c = 0; c < n; ++c) {
            std::int64_t sum = 0;
            for (std::size_t j = 0; j < k; ++j) sum += wq.data()[c * kp + j];
            offset.data()[c] = static_cast<i32>(sum * input_params_.zero_point);
            multiplier.data()[c] = input_params_.scale * scale.data()[c];
        }
        copy(weight_, wq);
        copy(multiplier_, multiplier);
        copy(offset_, offset);
        copy(bias_, b);
        current_stream().synchronize();  // the host tensors go out of scope
    }

    affine input_params() const { return input_params_; }
    const auto& weight() const { return weight_; }
    const auto& accumulators() const { return acc_; }

    // acc = a w^T for the int8 rows a [Rows, kp].
    template <class A>
    void multiply(const A& a)
    {
        linalg::int8_gemm(acc_.view(), a, std::as_const(weight_).view());
    }

    // The f32 result [Rows, n], as an expression over the accumulators.
    auto dequantized() const
    {
        auto z = cast<f32>(slice<1, 0, n>(acc_.view()) - offset_.view()) * multiplier_.view() + bias_.view();
        if constexpr (Act == linalg::activation::none) return z;
        else return tenet::internal::make_map(linalg::activation_op<Act>{}, z);
    }

private:
    Tensor<i8, Shape<np, kp>, Place> weight_;
    Tensor<f32, Shape<n>, Place> multiplier_, bias_;
    Tensor<i32, Shape<n>, Place> offset_;
    Tensor<i32, Shape<Rows, np>, Place> acc_;
    affine input_params_{1.0f, 0};
};

// Each leaf spec of the model becomes a step: a GEMM unit (gemm = true:
// take(e) quantizes its input, run() multiplies, result() is its f32 output
// as an expression) or a glue step (apply(e): the layer's inference as an
// expression over its input's).

template <class InShape, std::size_t K, std::size_t N, linalg::activation Act, class Place>
class int8_linear_step : public int8_gemm_unit<InShape::numel / K, K, N, Act, Place> {
    static constexpr std::size_t rows = InShape::numel / K;
    using gemm_type = int8_gemm_unit<rows, K, N, Act, Place>;

public:
    static constexpr bool gemm = true;
    using input_shape = InShape;
    using output_shape = nn::with_last_extent_t<InShape, N>;
    static constexpr std::size_t allocated_bytes = gemm_type::allocated_bytes + rows * gemm_type::kp;

    int8_linear_step() { assign(input_.view(), 0); }  // the padding columns stay zero

    // The int8 input as [rows, K] (a view of the padded buffer).
    auto input() { return slice<1, 0, K>(input_.view()); }

    template <class E>
    void take(const E& e)
    {
        const affine p = this->input_params();
        assign(input(), quantize(reshape<Shape<rows, K>>(e), p.scale, p.zero_point, activation_scheme));
    }
    void run() { this->multiply(std::as_const(input_).view()); }
    auto result() const { return reshape<output_shape>(this->dequantized()); }

private:
    Tensor<i8, Shape<rows, gemm_type::kp>, Place> input_;
};

// A convolution is one int8 GEMM over its input's columns (im2col). A
// grouped one (depthwise included) multiplies the same columns by
// block-diagonal weight rows: each output channel's filter sits at its
// group's input channels, zeros elsewhere. That is exact (the zeros add
// nothing, to the products or to the zero-point offsets) at Groups times
// the arithmetic of one GEMM per group.
template <class InShape, class Spec, class Place>
class int8_conv_step
    : public int8_gemm_unit<conv::window_geometry<InShape, Spec::kernel, Spec::stride, Spec::padding, Spec::dilation>::positions,
                            Spec::kernel * Spec::kernel * Spec::in_channels, Spec::out_channels, Spec::activation, Place> {
    using geometry = conv::window_geometry<InShape, Spec::kernel, Spec::stride, Spec::padding, Spec::dilation>;
    static constexpr std::size_t taps = Spec::kernel * Spec::kernel, row_length = taps * Spec::in_channels;
    using gemm_type = int8_gemm_unit<geometry::positions, row_length, Spec::out_channels, Spec::activation, Place>;

public:
    static constexpr bool gemm = true;
    using input_shape = InShape;
    using output_shape = typename geometry::template output_shape<Spec::out_channels>;
    static constexpr std::size_t allocated_bytes =
        gemm_type::allocated_bytes + InShape::numel + geometry::positions * gemm_type::kp;

    int8_conv_step() { assign(columns_.view(), 0); }  // the padding columns stay zero

    template <class Layer>
    void load(const Layer& layer)
    {
        if constexpr (Spec::groups == 1) gemm_type::load(layer);
        else gemm_type::load(layer, block_diagonal(layer.weight()));
    }

    auto input() { return input_.view(); }

    template <class E>
    void take(const E& e)
    {
        const affine p = this->input_params();
        assign(input_.view(), quantize(e, p.scale, p.zero_point, activation_scheme));
    }
    void run()
    {
        const auto pad = static_cast<i8>(this->input_params().zero_point);
        assign(slice<1, 0, row_length>(columns_.view()), conv::im2col<geometry>(std::as_const(input_).view(), pad));
        this->multiply(std::as_const(columns_).view());
    }
    auto result() const { return reshape<output_shape>(this->dequantized()); }

private:
    // [Out, K, K, In / Groups] -> [Out, K K In], each filter at its group's channels.
    template <class W>
    static auto block_diagonal(const W& weight)
    {
        constexpr std::size_t out = Spec::out_channels, in = Spec::in_channels, per_group = in / Spec::groups,
                              outputs_per_group = out / Spec::groups;
        using storage = std::remove_cv_t<typename W::element_type>;
        Tensor<storage, Shape<out, taps, per_group>, Host> filters;
        copy(filters.view(), reshape<Shape<out, taps, per_group>>(weight));
        current_stream().synchronize();
        Tensor<storage, Shape<out, row_length>, Host> rows;
        assign(rows.view(), 0);
        for (std::size_t o = 0; o < out; ++o) {
            const std::size_t first = o / outputs_per_group * per_group;
            for (std::size_t t = 0; t < taps; ++t)
                for (std::size_t c = 0; c < per_group; ++c)
                    rows.data()[o * row_length + t * in + first + c] = filters.data()[(o * taps + t) * per_group + c];
        }
        return rows;
    }

    Tensor<i8, InShape, Place> input_;
    Tensor<i8, Shape<geometry::positions, gemm_type::kp>, Place> columns_;
};

struct glue_step {
    static constexpr bool gemm = false, loads = false;
    static constexpr std::size_t parameter_bytes = 0, allocated_bytes = 0;
};

template <class Op>
struct activation_step : glue_step {
    template <class E>
    auto apply(const E& e) const
    {
        return tenet::internal::make_map(Op{}, e);
    }
};

struct identity_step : glue_step {
    template <class E>
    E apply(const E& e) const
    {
        return e;
    }
};

template <class OutShape>
struct reshape_step : glue_step {
    template <class E>
    auto apply(const E& e) const
    {
        return reshape<OutShape>(e);
    }
};

template <class G, bool Max>
struct pool_step : glue_step {
    template <class E>
    auto apply(const E& e) const
    {
        if constexpr (Max) return conv::max_pool2d<G>(e);
        else return conv::avg_pool2d<G>(e);
    }
};

// GlobalAvgPool2d: the mean over the pixels (a reduction: evaluated into a
// scratch tensor of [N, C] first, then the rest of the epilogue reads it).
template <class InShape>
struct global_pool_step : glue_step {
    using pixels = Shape<InShape::extents[0], InShape::extents[1] * InShape::extents[2], InShape::extents[3]>;
    template <class E>
    auto apply(const E& e) const
    {
        return mean<1>(reshape<pixels>(e));
    }
};

template <class InShape, std::size_t C, class Place>
class batch_norm_step : public glue_step {
    using channels = Tensor<f32, Shape<C>, Place>;

public:
    using input_shape = InShape;
    static constexpr bool loads = true;
    static constexpr std::size_t parameter_bytes = 2 * C * sizeof(f32), allocated_bytes = parameter_bytes;
    template <class Layer>
    static constexpr bool accepts = requires(const Layer& l, channels& t) { l.inference_affine(t.view(), t.view()); };

    template <class Layer>
    void load(const Layer& layer)
    {
        layer.inference_affine(scale_.view(), shift_.view());
    }
    template <class E>
    auto apply(const E& e) const
    {
        return e * scale_.view() + shift_.view();
    }

private:
    channels scale_, shift_;
};

template <class Leaf>
inline constexpr bool is_dropout = false;
template <class R>
inline constexpr bool is_dropout<nn::Dropout<R>> = true;

template <class Leaf>
inline constexpr std::size_t batch_norm_channels = 0;
template <std::size_t C, nn::batchnorm_options O>
inline constexpr std::size_t batch_norm_channels<nn::BatchNorm2d<C, O>> = C;

template <class Leaf, class S>
struct pool_of {
    static constexpr bool known = false;
};
template <std::size_t K, std::size_t St, std::size_t P, class S>
struct pool_of<nn::MaxPool2d<K, St, P>, S> {
    static constexpr bool known = true;
    using type = pool_step<conv::window_geometry<S, K, St, P>, true>;
};
template <std::size_t K, std::size_t St, std::size_t P, class S>
struct pool_of<nn::AvgPool2d<K, St, P>, S> {
    static constexpr bool known = true;
    using type = pool_step<conv::window_geometry<S, K, St, P>, false>;
};

// The step of each leaf spec, for input shape S.
template <class Leaf, class S, class Place>
struct step_for {
    static auto pick()
    {
        if constexpr (requires { Leaf::in_features; Leaf::out_features; Leaf::activation; })
            return int8_linear_step<S, Leaf::in_features, Leaf::out_features, Leaf::activation, Place>{};
        else if constexpr (requires { Leaf::in_channels; Leaf::kernel; Leaf::groups; })
            return int8_conv_step<S, Leaf, Place>{};
        else if constexpr (requires { typename Leaf::op; Leaf::fusable; })
            return activation_step<typename Leaf::op>{};
        else if constexpr (is_dropout<Leaf>)
            return identity_step{};
        else if constexpr (std::is_same_v<Leaf, nn::Flatten>)
            return reshape_step<typename Leaf::template output_shape<S>>{};
        else if constexpr (std::is_same_v<Leaf, nn::GlobalAvgPool2d>)
            return global_pool_step<S>{};
        else if constexpr (pool_of<Leaf, S>::known)
            return typename pool_of<Leaf, S>::type{};
        else if constexpr (batch_norm_channels<Leaf> > 0)
            return batch_norm_step<S, batch_norm_channels<Leaf>, Place>{};
        else {
            int8_model_a_layer_has_no_int8_form<Leaf>::reject();
            return identity_step{};
        }
    }
    using type = decltype(pick());
};

// The steps of a list of leaves, each shape following from the one before.
template <class Leaves, class S, class Place, class... Done>
struct steps_of {
    using type = std::tuple<Done...>;
};
template <class Leaf, class... Rest, class S, class Place, class... Done>
struct steps_of<type_list<Leaf, Rest...>, S, Place, Done...>
    : steps_of<type_list<Rest...>, typename Leaf::template output_shape<S>, Place, Done...,
               typename step_for<Leaf, S, Place>::type> {};

// Whether a prepared model's layer can be the one a step loads from (the
// layer's index decides which of those it is).
template <class Step, class Layer>
inline constexpr bool loads_from = [] {
    if constexpr (!Step::loads) return false;
    else if constexpr (!std::is_same_v<typename Step::input_shape, typename Layer::input_shape>) return false;
    else if constexpr (Step::gemm)
        return std::is_same_v<typename Step::output_shape, typename Layer::output_shape> &&
               requires(const Layer& l) {
                   l.weight_scale();
                   l.input_params();
               };
    else return Step::template accepts<Layer>;
}();

}  // namespace detail

template <class Spec, shape_type In, memory_place Place = Device>
class int8_model {
    using step_tuple = typename detail::steps_of<nn::leaf_specs_t<Spec>, In, Place>::type;
    static constexpr std::size_t count = std::tuple_size_v<step_tuple>;
    template <std::size_t I>
    using step_t = std::tuple_element_t<I, step_tuple>;

    // Sums a figure over the steps (or over the GEMM units only).
    template <bool GemmsOnly, class F>
    static constexpr std::size_t total(F figure)
    {
        return [&]<std::size_t... I>(std::index_sequence<I...>) {
            return (std::size_t{0} + ... + [&] {
                if constexpr (!GemmsOnly || step_t<I>::gemm) return figure(std::type_identity<step_t<I>>{});
                else return std::size_t{0};
            }());
        }(std::make_index_sequence<count>{});
    }
    static constexpr std::size_t unit_count = total<true>([](auto) { return std::size_t{1}; });

    // The step index of GEMM unit U.
    template <std::size_t U>
    static constexpr std::size_t step_of_unit = [] {
        constexpr std::array<bool, count> gemm = []<std::size_t... I>(std::index_sequence<I...>) {
            return std::array<bool, count>{step_t<I>::gemm...};
        }(std::make_index_sequence<count>{});
        std::size_t seen = 0;
        for (std::size_t i = 0; i < count; ++i)
            if (gemm[i] && seen++ == U) return i;
        return count;
    }();

public:
    using input_shape = In;
    using output_shape = typename Spec::template output_shape<In>;
    using output_tensor = Tensor<f32, output_shape, Place>;
    static_assert(unit_count > 0, "tenet: int8_model: the model has no Linear or Conv2d layer");

    // Bytes of the int8 weights (exactly a quarter of f32 weights), of
    // everything that defines the model, and of everything allocated.
    static constexpr std::size_t weight_bytes = total<true>([](auto s) { return decltype(s)::type::weight_bytes; });
    static constexpr std::size_t parameter_bytes = total<false>([](auto s) { return decltype(s)::type::parameter_bytes; });
    static constexpr std::size_t allocated_bytes =
        total<false>([](auto s) { return decltype(s)::type::allocated_bytes; }) + output_tensor::bytes;

    // Quantizes a calibrated (or QAT-trained) model of the same spec and input shape.
    template <class Prepared>
    explicit int8_model(Prepared& prepared)
    {
        static_assert(std::is_same_v<typename Prepared::input_shape, In> && std::is_same_v<typename Prepared::spec, Spec>,
                      "tenet: int8_model: the prepared model has another spec or input shape");
        static_assert(requires { typename Prepared::policy::input_observer; },
                      "tenet: int8_model: build it from a model under quant::qat<...>, calibrated or trained");
        std::size_t index = 0, loaded = 0;
        prepared.for_each_layer([&](const auto& layer) { loaded += load(layer, index++); });
        constexpr std::size_t loadable = total<false>([](auto s) { return std::size_t{decltype(s)::type::loads}; });
        if (index != count || loaded != loadable)
            throw error("tenet: int8_model: the prepared model's layers do not match the spec's: " + std::to_string(index) +
                        " layers for " + std::to_string(count) + " leaves, " + std::to_string(loaded) + " of " +
                        std::to_string(loadable) + " quantized layers loaded");
    }

    // Logits (f32) for a batch of inputs (any floating type, shape In).
    template <class X>
    const output_tensor& forward(const X& x)
    {
        if constexpr (nn::check_model_input<In, X>()) run<0>(nn::contiguous_as<In>(x));
        return output_;
    }

    const output_tensor& output() const { return output_; }

    // GEMM unit U (a Linear or Conv2d), in order.
    template <std::size_t U>
    auto& unit()
    {
        static_assert(U < unit_count, "tenet: int8_model::unit<U>: U is past the last Linear or Conv2d");
        return std::get<step_of_unit<U>>(steps_);
    }

private:
    template <class Layer>
    std::size_t load(const Layer& layer, std::size_t index)
    {
        return [&]<std::size_t... I>(std::index_sequence<I...>) { return (load_if<I>(layer, index) + ...); }(
            std::make_index_sequence<count>{});
    }
    template <std::size_t I, class Layer>
    std::size_t load_if(const Layer& layer, std::size_t index)
    {
        if constexpr (detail::loads_from<step_t<I>, Layer>) {
            if (index != I) return 0;
            std::get<I>(steps_).load(layer);
            return 1;
        } else {
            return 0;
        }
    }

    // Steps I.. from e, the f32 input of step I as an expression.
    template <std::size_t I, class E>
    void run(const E& e)
    {
        if constexpr (I == count) {
            assign(output_.view(), e);
        } else if constexpr (step_t<I>::gemm) {
            auto& step = std::get<I>(steps_);
            step.take(e);
            step.run();
            run<I + 1>(step.result());
        } else {
            run<I + 1>(std::get<I>(steps_).apply(e));
        }
    }

    step_tuple steps_;
    output_tensor output_;
};

}  // namespace tenet::quant
