// Linear<In, Out>: y = x W^T + b, with W of shape [Out, In] as in PyTorch (so
// that output channels are rows: per-channel quantization and cuBLASLt's
// int8 TN layout both want that). Inputs of any rank; the last extent must be
// In, the others are rows.
//
// Inside Sequential, Linear followed by ReLU / GELU and then another Linear
// becomes one fused unit (linear_unit<In, Out, activation>): the forward is
// one cuBLASLt call with the activation+bias epilogue that also saves what
// the backward needs (aux); in the backward, the next Linear's input-gradient
// GEMM applies the activation's derivative and reduces the bias gradient in
// its epilogue (DRELU_BGRAD / DGELU_BGRAD), so this unit's own backward is one
// weight-gradient GEMM.
#pragma once

#include "../linalg/linalg.hpp"
#include "layer.hpp"

namespace tenet::nn {
namespace detail {

template <std::size_t In, std::size_t Out, class S>
struct Linear_In_Out_needs_a_last_extent_of_In_not {
    static constexpr auto text()
    {
        return fixed_string("tenet: Linear<") + decimal<In>() + fixed_string(", ") + decimal<Out>() +
               fixed_string("> fed ") + shape_name<S>::text() + fixed_string(": its last extent must be ") +
               decimal<In>();
    }
};

template <std::size_t In, class S>
inline constexpr bool linear_fits = S::rank >= 1 && last_extent<S> == In;

template <std::size_t In, std::size_t Out, class S>
struct linear_output {
    static constexpr bool fits = linear_fits<In, S>;
    static_assert(diagnose<fits, Linear_In_Out_needs_a_last_extent_of_In_not<In, Out, S>>::value);
    using type = with_last_extent_t<S, Out>;
};

}  // namespace detail

// A Linear's parameters: W [Out, In], then b [Out], taken from the model's
// flat buffers in that order with a random stream each, and drawn as
// PyTorch's nn.Linear draws them (U(-1/sqrt(In), 1/sqrt(In)) for both). Every
// Linear-like layer (plain, fake-quantized, fp8) holds them, so a spec's
// parameter layout is the same under every precision policy.
template <class Storage, class Gradient, class Place, std::size_t In, std::size_t Out>
struct linear_parameters {
    using weight_views = decltype(std::declval<parameter_slice<Storage, Gradient>&>().template take<Shape<Out, In>, Place>());
    using bias_views = decltype(std::declval<parameter_slice<Storage, Gradient>&>().template take<Shape<Out>, Place>());
    static constexpr std::size_t count = Out * In + Out;
    static constexpr std::size_t numel = padded_numel<Storage>(Out * In) + padded_numel<Storage>(Out);

    template <class Slice>
    explicit linear_parameters(Slice& parameters)
        : weight(parameters.template take<Shape<Out, In>, Place>()),
          bias(parameters.template take<Shape<Out>, Place>()),
          weight_stream(parameters.next_stream()),
          bias_stream(parameters.next_stream())
    {
    }

    void initialize(std::uint64_t seed)
    {
        fan_in_uniform<In>(weight.first, {seed, weight_stream});
        fan_in_uniform<In>(bias.first, {seed, bias_stream});
    }

    template <class F>
    void for_each(F& f, const std::string& prefix)
    {
        f(prefix + "weight", weight.first, weight.second);
        f(prefix + "bias", bias.first, bias.second);
    }

    weight_views weight;  // (value, gradient) views
    bias_views bias;
    std::uint64_t weight_stream, bias_stream;
};

namespace detail {

// What a fused activation keeps for the backward (its aux, linear_gemms.hpp)
// as a kept tensor of the same layout; nothing without an activation.
struct no_aux {
    static constexpr std::size_t arena_bytes = 0;
    template <class Slice>
    explicit no_aux(Slice&)
    {
    }
};
template <bool Has, class AuxTensor, class Place>
struct kept_aux {
    using type = no_aux;
};
template <class AuxTensor, class Place>
struct kept_aux<true, AuxTensor, Place> {
    using type = kept_tensor<typename AuxTensor::element_type, typename AuxTensor::shape, Place>;
};

template <precision_policy P, class InShape, class Place, std::size_t In, std::size_t Out, linalg::activation Act>
class linear_layer {
    using storage = typename P::storage;
    using gradient = gradient_t<P>;
    using parameters_type = linear_parameters<storage, gradient, Place, In, Out>;
    using x_matrix = Shape<InShape::numel / last_extent<InShape>, In>;  // (rows: a stand-in where the input does not fit)
    using y_matrix = Shape<InShape::numel / last_extent<InShape>, Out>;
    static constexpr bool has_aux = Act != linalg::activation::none;
    using aux_tensor = linalg::aux_tensor_t<Act, storage, y_matrix, Place>;
    using aux_type = typename kept_aux<has_aux, aux_tensor, Place>::type;

public:
    using input_shape = InShape;
    using output_shape = with_last_extent_t<InShape, Out>;
    // The layer after this one delivers the gradient of the pre-activation
    // (and the bias gradient): see the file comment.
    static constexpr bool wants_preactivation_gradient = has_aux;
    static constexpr linalg::activation activation = Act;
    static constexpr std::size_t parameter_count = parameters_type::count;
    static constexpr std::size_t parameter_numel = parameters_type::numel;
    static constexpr std::size_t activation_bytes = has_aux ? sizeof(typename aux_tensor::element_type) * aux_tensor::numel : 0;
    static constexpr std::size_t activation_gradient_bytes = 0;
    static constexpr std::size_t kept_bytes = aux_type::arena_bytes;
    static constexpr bool skips_null_gradients = true;
    static constexpr std::string_view kind = "Linear";
    static constexpr layer_cost cost = linear_cost<storage, gradient>(x_matrix::extents[0], In, Out, true);

    template <class Slice>
    explicit linear_layer(Slice& parameters) : params_(parameters), aux_(parameters)
    {
    }

    // PyTorch's default for nn.Linear: U(-1/sqrt(In), 1/sqrt(In)) for both.
    void initialize(std::uint64_t seed)
    {
        params_.initialize(seed);
    }

    template <class X, class Y>
    void forward(const X& x, const Y& y, const step_info&)
    {
        check_input_element<storage, X>();
        const auto xm = contiguous_as<x_matrix>(x);
        input_ = xm.data();
        if constexpr (has_aux) linalg::linear_forward<Act>(contiguous_as<y_matrix>(y), aux_, xm, params_.weight.first, params_.bias.first);
        else linalg::linear_forward<Act>(contiguous_as<y_matrix>(y), xm, params_.weight.first, params_.bias.first);
    }

    // dy is the gradient of the output, or of the pre-activation for a fused
    // unit (whose bias gradient the next layer has already written).
    template <class DY, class DX, class Prev>
    void backward(const DY& dy, const DX& dx, const step_info&, Prev& prev)
    {
        const auto dz = contiguous_as<y_matrix>(dy);
        const auto x = make_view<x_matrix, Place>(input_);
        if (gradient_wanted(params_.weight.second)) {  // (not inside nn::Frozen)
            if constexpr (has_aux) linalg::linear_backward_weights(params_.weight.second, dz, x);
            else linalg::linear_backward_weights(params_.weight.second, params_.bias.second, dz, x);
        }
        if constexpr (!is_no_input_gradient<DX>) {
            const auto dxm = contiguous_as<x_matrix>(dx);
            if constexpr (Prev::wants_preactivation_gradient) {
                if (gradient_wanted(prev.bias_gradient()))
                    linalg::linear_backward_input_act<Prev::activation>(dxm, prev.bias_gradient(), dz,
                                                                       params_.weight.first, prev.aux());
                else linalg::linear_backward_input_act<Prev::activation>(dxm, dz, params_.weight.first, prev.aux());
            } else {
                linalg::linear_backward_input(dxm, dz, params_.weight.first);
            }
        }
    }

    template <class F>
    void for_each_parameter(F&& f, const std::string& prefix)
    {
        params_.for_each(f, prefix);
    }

    // For the layer after a fused unit.
    auto bias_gradient() const { return params_.bias.second; }
    const aux_type& aux() const requires has_aux { return aux_; }

private:
    parameters_type params_;
    [[no_unique_address]] aux_type aux_;
    const storage* input_ = nullptr;
};

// A precision policy may bring its own Linear (fake-quantized for QAT, fp8
// GEMMs): it names it P::linear_layer<P, S, Place, In, Out, Act>. Such a layer
// applies its activation itself (wants_preactivation_gradient is false).
template <class P, class S, class Place, std::size_t In, std::size_t Out, linalg::activation Act>
struct linear_layer_for {
    using type = linear_layer<P, S, Place, In, Out, Act>;
};
template <class P, class S, class Place, std::size_t In, std::size_t Out, linalg::activation Act>
    requires requires { typename P::template linear_layer<P, S, Place, In, Out, Act>; }
struct linear_layer_for<P, S, Place, In, Out, Act> {
    using type = typename P::template linear_layer<P, S, Place, In, Out, Act>;
};

}  // namespace detail

// Linear<In, Out> followed by the activation Act, fused into its epilogue
// (Sequential forms these from Linear, ReLU/GELU/GELUTanh; int8_model and
// sparse_model see a spec as a list of them: linear_units.hpp).
template <std::size_t In, std::size_t Out, linalg::activation Act>
struct linear_unit {
    static constexpr std::size_t in_features = In, out_features = Out;
    static constexpr linalg::activation activation = Act;

    template <class S>
    using output_shape = typename detail::linear_output<In, Out, S>::type;
    template <class S>
    static constexpr bool accepts = detail::linear_fits<In, S>;

    template <precision_policy P, class S, class Place>
    using layer = typename detail::linear_layer_for<P, S, Place, In, Out, Act>::type;
};

template <std::size_t In, std::size_t Out>
struct Linear : linear_unit<In, Out, linalg::activation::none> {};

}  // namespace tenet::nn
