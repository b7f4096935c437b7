// Conv2d<InChannels, OutChannels, Kernel, Stride, Padding, Dilation, Groups>:
// a 2-D convolution over NHWC images (Shape<N, H, W, C>) with a square
// kernel, as PyTorch's nn.Conv2d computes it; Conv2dNoBias is the same
// without its bias. The weight is [OutChannels, Kernel, Kernel, InChannels /
// Groups] (cuDNN's KRSC, PyTorch's [out, in, kh, kw] with the channels
// last), the bias [OutChannels]; both start as PyTorch's do (U(-1/sqrt(fan_in),
// 1/sqrt(fan_in)), fan_in = InChannels / Groups * Kernel^2).
//
// The layer runs its convolution on a conv::conv2d_engine: oneDNN's plan on
// the host in f32 and cuDNN's on the device in f32 (each built once, at
// construction), else the im2col + GEMM lowering, which keeps its columns
// from the forward for the weight gradient.
// Inside Sequential, a Conv2d followed by ReLU is one unit: the ReLU runs in
// the engine's forward (a post-op, or the GEMM's epilogue pattern), and the
// backward masks the output gradient by y > 0 once, without a layer of its
// own in between. A precision policy may substitute the GEMMs'
// operands (conv2d_layer's Operands: quantization-aware training multiplies
// fake-quantized copies) or the whole layer (P::conv2d_layer).
#pragma once

#include "../conv/conv.hpp"
#include "activation_layers.hpp"
#include "layer.hpp"

#include <algorithm>
#include <array>
#include <utility>

namespace tenet::nn {
namespace detail {

enum class conv_misfit { none, groups, rank, channels, kernel };

template <std::size_t In, std::size_t Out, std::size_t K, std::size_t S, std::size_t P, std::size_t D, std::size_t G>
constexpr auto conv2d_name()
{
    return fixed_string("Conv2d<") + decimal<In>() + fixed_string(", ") + decimal<Out>() + fixed_string(", ") +
           decimal<K>() + fixed_string(", ") + decimal<S>() + fixed_string(", ") + decimal<P>() +
           fixed_string(", ") + decimal<D>() + fixed_string(", ") + decimal<G>() + fixed_string(">");
}

template <conv_misfit Why, std::size_t In, std::size_t Out, std::size_t K, std::size_t S, std::size_t P,
          std::size_t D, std::size_t G, class Shape>
struct Conv2d_takes_NHWC_images_with_InChannels_last_and_Groups_dividing_the_channels_not {
    static constexpr auto reason()
    {
        if constexpr (Why == conv_misfit::groups)
            return fixed_string(": Groups ") + decimal<G>() + fixed_string(" must divide InChannels ") + decimal<In>() +
                   fixed_string(" and OutChannels ") + decimal<Out>();
        else if constexpr (Why == conv_misfit::rank)
            return fixed_string(": it takes NHWC images, Shape<N, H, W, C>");
        else if constexpr (Why == conv_misfit::channels && Shape::extents[1] == In)
            return fixed_string(": its last extent (channels) must be ") + decimal<In>() +
                   fixed_string(" (NCHW images? tenet takes NHWC: permute<0, 2, 3, 1>(x))");
        else if constexpr (Why == conv_misfit::channels)
            return fixed_string(": its last extent (channels) must be ") + decimal<In>();
        else
            return fixed_string(": the kernel spans ") + decimal<D * (K - 1) + 1>() +
                   fixed_string(" pixels, more than the padded input (padding ") + decimal<P>() + fixed_string(")");
    }
    static constexpr auto text()
    {
        return fixed_string("tenet: ") + conv2d_name<In, Out, K, S, P, D, G>() + fixed_string(" fed ") +
               shape_name<Shape>::text() + reason();
    }
};

// The images [N, H, W, C] a layer wanted where it was fed Shape S, at least
// Span pixels across: S's batch, and its pixels where they can be read (NHWC
// or NCHW images, [N, H, W] without a channel axis, rows of flattened square
// images). A failed layer's output is its output for them, so the layers
// after it see the shapes they were written for and add no errors.
template <class S, std::size_t C, std::size_t Span>
struct wanted_images {
    static constexpr std::array<std::size_t, 2> pixels = [] {
        std::array<std::size_t, 2> hw{1, 1};
        if constexpr (S::rank == 4) {
            if (S::extents[3] == C || S::extents[1] != C) hw = {S::extents[1], S::extents[2]};
            else hw = {S::extents[2], S::extents[3]};  // NCHW
        } else if constexpr (S::rank == 3) {
            hw = {S::extents[1], S::extents[2]};
        } else if constexpr (S::rank == 2) {
            std::size_t side = 1;
            while ((side + 1) * (side + 1) * C <= S::extents[1]) ++side;
            if (side * side * C == S::extents[1]) hw = {side, side};
        }
        return std::array<std::size_t, 2>{std::max(hw[0], Span), std::max(hw[1], Span)};
    }();
    using type = tenet::Shape<extent_or_one<S, 0>, pixels[0], pixels[1], C>;
};

template <std::size_t In, std::size_t Out, std::size_t G, class Shape>
constexpr conv_misfit conv2d_misfit()
{
    if (In % G != 0 || Out % G != 0) return conv_misfit::groups;
    if (Shape::rank != 4) return conv_misfit::rank;
    if (last_extent<Shape> != In) return conv_misfit::channels;
    return conv_misfit::none;
}

template <std::size_t In, std::size_t Out, std::size_t K, std::size_t S, std::size_t P, std::size_t D, std::size_t G,
          class X>
inline constexpr bool conv2d_fits =
    conv2d_misfit<In, Out, G, X>() == conv_misfit::none &&
    conv::window_geometry<std::conditional_t<conv2d_misfit<In, Out, G, X>() == conv_misfit::none, X, Shape<1, 1, 1, 1>>,
                          K, S, P, D>::fits;

template <std::size_t In, std::size_t Out, std::size_t K, std::size_t S, std::size_t P, std::size_t D, std::size_t G,
          class Shape>
struct conv2d_output {
    static_assert(K >= 1 && S >= 1 && D >= 1 && G >= 1 && In >= 1 && Out >= 1,
                  "tenet: Conv2d: channels, kernel, stride, dilation and groups must be at least 1");
    static constexpr conv_misfit misfit = conv2d_misfit<In, Out, G, Shape>();
    static constexpr bool fits = conv2d_fits<In, Out, K, S, P, D, G, Shape>;
    using nhwc = std::conditional_t<fits, Shape, typename wanted_images<Shape, In, D * (K - 1) + 1>::type>;
    using geometry = conv::window_geometry<nhwc, K, S, P, D>;
    static constexpr conv_misfit why = misfit != conv_misfit::none ? misfit
                                       : fits                    ? conv_misfit::none
                                                                 : conv_misfit::kernel;
    static_assert(diagnose<why == conv_misfit::none, Conv2d_takes_NHWC_images_with_InChannels_last_and_Groups_dividing_the_channels_not<why, In, Out, K, S, P, D, G, Shape>>::value);
    using type = typename geometry::template output_shape<Out>;
};

}  // namespace detail

// The operands of a plain convolution: x and W themselves. (Quantization-aware
// training substitutes quant::fake_quant_operands, with the same members.)
template <class Storage, class XShape, class WShape, class Place>
struct plain_operands {
    static constexpr std::size_t bytes = 0;
    template <class X, class W>
    void prepare(const X&, const W&, const step_info&)
    {
    }
    template <class X, class W>
    std::pair<X, W> operands(const X& x, const W& w) const
    {
        return {x, w};
    }
    template <class DX, class X>
    void mask_input_gradient(const DX&, const X&) const
    {
    }
    template <class DW, class W>
    void mask_weight_gradient(const DW&, const W&) const
    {
    }
};

template <class Spec>
using conv2d_weight_shape =
    Shape<Spec::out_channels, Spec::kernel, Spec::kernel, Spec::in_channels / Spec::groups>;

// The layer of a conv2d_unit spec; Operands (default: x and W as they are)
// is what the GEMMs multiply.
template <precision_policy P, class InShape, class Place, class Spec,
          class Operands = plain_operands<typename P::storage, InShape, conv2d_weight_shape<Spec>, Place>>
class conv2d_layer {
    using storage = typename P::storage;
    using gradient = gradient_t<P>;
    static constexpr std::size_t groups = Spec::groups, out_channels = Spec::out_channels;
    // (a stand-in where the input does not fit: the spec's diagnostic is the only error)
    using geometry = typename detail::conv2d_output<Spec::in_channels, out_channels, Spec::kernel, Spec::stride,
                                                    Spec::padding, Spec::dilation, groups, InShape>::geometry;
    using weight_shape = conv2d_weight_shape<Spec>;
    using y_matrix = Shape<geometry::positions, out_channels>;
    static constexpr bool has_bias = Spec::bias;
    static constexpr bool relu = Spec::activation == linalg::activation::relu;
    using engine = conv::conv2d_engine<geometry, groups, out_channels, Spec::activation, has_bias, storage, gradient, Place>;
    using views = decltype(std::declval<parameter_slice<storage, gradient>&>().template take<weight_shape, Place>());
    using bias_views = decltype(std::declval<parameter_slice<storage, gradient>&>().template take<Shape<out_channels>, Place>());
    struct none {};

public:
    using input_shape = InShape;
    using output_shape = typename geometry::template output_shape<out_channels>;
    static constexpr bool wants_preactivation_gradient = false;
    static constexpr std::size_t fan_in = weight_shape::numel / out_channels;
    static constexpr std::size_t parameter_count = weight_shape::numel + (has_bias ? out_channels : 0);
    static constexpr std::size_t parameter_numel =
        padded_numel<storage>(weight_shape::numel) + (has_bias ? padded_numel<storage>(out_channels) : 0);
    static constexpr linalg::activation activation = Spec::activation;
    // what the engine keeps from the forward for the weight gradient (the
    // lowering's im2col columns) and what the operands keep (fake-quantized copies)
    static constexpr std::size_t activation_bytes = engine::kept_bytes + Operands::bytes;
    // with a fused ReLU, the masked output gradient
    static constexpr std::size_t activation_gradient_bytes = relu ? y_matrix::numel * sizeof(storage) : 0;
    static constexpr bool skips_null_gradients = true;
    static constexpr std::string_view kind = "Conv2d";
    // Two GEMMs' worth each way: y = columns(x) W^T; dx = col2im(dy W), dW = dy^T columns(x).
    static constexpr layer_cost cost = [] {
        constexpr std::uint64_t m = y_matrix::extents[0], k = fan_in, t = sizeof(storage), g = sizeof(gradient);
        constexpr std::uint64_t gemm = 2 * m * k * out_channels, x = InShape::numel, w = weight_shape::numel,
                                y = m * out_channels, b = has_bias ? out_channels : 0;
        constexpr std::uint64_t weight_gradient_bytes = t * (y + x) + g * (w + b);
        return layer_cost{gemm, t * (x + w + b + y), 2 * gemm, t * (y + w + x) + weight_gradient_bytes, gemm,
                          weight_gradient_bytes};
    }();

    template <class Slice>
    explicit conv2d_layer(Slice& parameters)
        : weight_(parameters.template take<weight_shape, Place>()),
          bias_(take_bias(parameters)),
          weight_stream_(parameters.next_stream()),
          bias_stream_(parameters.next_stream())
    {
    }

    void initialize(std::uint64_t seed)
    {
        fan_in_uniform<fan_in>(weight_.first, {seed, weight_stream_});
        if constexpr (has_bias) fan_in_uniform<fan_in>(bias_.first, {seed, bias_stream_});
    }

    template <class X, class Y>
    void forward(const X& x, const Y& y, const step_info& step)
    {
        check_input_element<storage, X>();
        const auto xv = contiguous_as<InShape>(x);
        const auto ym = contiguous_as<y_matrix>(y);
        input_ = xv.data();
        output_ = ym.data();
        operands_.prepare(xv, weight_.first, step);
        const auto [xo, wo] = operands_.operands(xv, weight_.first);
        engine_.forward(ym, xo, wo, bias_or_none());
    }

    template <class DY, class DX, class Prev>
    void backward(const DY& dy, const DX& dx, const step_info&, Prev&)
    {
        const auto x = make_view<InShape, Place>(input_);
        const auto [xo, wo] = operands_.operands(x, weight_.first);
        const auto dz = output_gradient(contiguous_as<y_matrix>(dy));
        if constexpr (is_no_input_gradient<DX>) {
            engine_.backward(dz, xo, wo, weight_.second, bias_gradient_or_none(), conv::no_input_gradient{});
        } else {
            const auto dxv = contiguous_as<InShape>(dx);
            engine_.backward(dz, xo, wo, weight_.second, bias_gradient_or_none(), dxv);
            operands_.mask_input_gradient(dxv, x);
        }
        if (gradient_wanted(weight_.second)) operands_.mask_weight_gradient(weight_.second, weight_.first);
    }

    template <class F>
    void for_each_parameter(F&& f, const std::string& prefix)
    {
        f(prefix + "weight", weight_.first, weight_.second);
        if constexpr (has_bias) f(prefix + "bias", bias_.first, bias_.second);
    }

    // The weight and (with one) the bias; what the GEMMs multiply.
    auto weight() const { return weight_.first; }
    auto bias() const
        requires has_bias
    {
        return bias_.first;
    }
    Operands& operands() { return operands_; }
    const Operands& operands() const { return operands_; }

private:
    template <class Slice>
    static auto take_bias([[maybe_unused]] Slice& parameters)
    {
        if constexpr (has_bias) return parameters.template take<Shape<out_channels>, Place>();
        else return none{};
    }

    auto bias_or_none() const
    {
        if constexpr (has_bias) return bias_.first;
        else return conv::no_bias{};
    }

    auto bias_gradient_or_none() const
    {
        if constexpr (has_bias) return bias_.second;
        else return conv::no_bias{};
    }

    // dy, or with a fused ReLU dy where the output was positive.
    template <class DY>
    auto output_gradient(const DY& dy)
    {
        if constexpr (relu) {
            masked_.view() = where(make_view<y_matrix, Place>(output_) > 0, dy, 0);
            return masked_.view();
        } else {
            return dy;
        }
    }

    views weight_;
    std::conditional_t<has_bias, bias_views, none> bias_;
    std::uint64_t weight_stream_, bias_stream_;
    engine engine_;
    std::conditional_t<relu, Tensor<storage, y_matrix, Place>, none> masked_;
    [[no_unique_address]] Operands operands_;
    const storage* input_ = nullptr;
    const storage* output_ = nullptr;
};

namespace detail {

// A precision policy may bring its own convolution layer (quantization-aware
// training's fake-quantized one): it names it P::conv2d_layer<P, S, Place, Spec>.
template <precision_policy P, class S, class Place, class Spec>
struct conv2d_layer_for {
    using type = conv2d_layer<P, S, Place, Spec>;
};
template <precision_policy P, class S, class Place, class Spec>
    requires requires { typename P::template conv2d_layer<P, S, Place, Spec>; }
struct conv2d_layer_for<P, S, Place, Spec> {
    using type = typename P::template conv2d_layer<P, S, Place, Spec>;
};

}  // namespace detail

// The convolution spec behind Conv2d and Conv2dNoBias (Act: a ReLU fused by Sequential).
template <std::size_t In, std::size_t Out, std::size_t Kernel, std::size_t Stride, std::size_t Padding,
          std::size_t Dilation, std::size_t Groups, bool Bias, linalg::activation Act = linalg::activation::none>
struct conv2d_unit {
    static_assert(Act == linalg::activation::none || Act == linalg::activation::relu,
                  "tenet: a convolution fuses ReLU only (its derivative comes from the output)");
    static constexpr std::size_t in_channels = In, out_channels = Out, kernel = Kernel, stride = Stride,
                                 padding = Padding, dilation = Dilation, groups = Groups;
    static constexpr bool bias = Bias;
    static constexpr linalg::activation activation = Act;

    template <class S>
    using output_shape = typename detail::conv2d_output<In, Out, Kernel, Stride, Padding, Dilation, Groups, S>::type;
    template <class S>
    static constexpr bool accepts = detail::conv2d_fits<In, Out, Kernel, Stride, Padding, Dilation, Groups, S>;

    template <precision_policy P, class S, class Place>
    using layer = typename detail::conv2d_layer_for<P, S, Place, conv2d_unit>::type;
};

template <std::size_t In, std::size_t Out, std::size_t Kernel, std::size_t Stride = 1, std::size_t Padding = 0,
          std::size_t Dilation = 1, std::size_t Groups = 1>
struct Conv2d : conv2d_unit<In, Out, Kernel, Stride, Padding, Dilation, Groups, true> {};

template <std::size_t In, std::size_t Out, std::size_t Kernel, std::size_t Stride = 1, std::size_t Padding = 0,
          std::size_t Dilation = 1, std::size_t Groups = 1>
struct Conv2dNoBias : conv2d_unit<In, Out, Kernel, Stride, Padding, Dilation, Groups, false> {};

// What Sequential makes of a convolution followed by ReLU (void: nothing).
template <class Spec>
struct conv_with_relu {
    using type = void;
};
template <std::size_t In, std::size_t Out, std::size_t K, std::size_t S, std::size_t P, std::size_t D, std::size_t G>
struct conv_with_relu<Conv2d<In, Out, K, S, P, D, G>> {
    using type = conv2d_unit<In, Out, K, S, P, D, G, true, linalg::activation::relu>;
};
template <std::size_t In, std::size_t Out, std::size_t K, std::size_t S, std::size_t P, std::size_t D, std::size_t G>
struct conv_with_relu<Conv2dNoBias<In, Out, K, S, P, D, G>> {
    using type = conv2d_unit<In, Out, K, S, P, D, G, false, linalg::activation::relu>;
};

}  // namespace tenet::nn
