// Activation layers: y = f(x) elementwise, one fused kernel each way. The
// backward is the compile-time derivative of f (autodiff/), evaluated from
// the saved input in one kernel: dx = f'(x) * dy.
#pragma once

#include "../autodiff/autodiff.hpp"
#include "../linalg/activation_kind.hpp"
#include "layer.hpp"

namespace tenet::nn {
namespace detail {

template <precision_policy P, class S, class Place, class Op>
class activation_layer : public parameterless_layer {
    using storage = typename P::storage;

    static constexpr auto name_text = [] {
        if constexpr (requires { Op::name(); }) return Op::name();
        else return fixed_string("Activation");
    }();

public:
    using input_shape = S;
    using output_shape = S;
    static constexpr std::string_view kind{name_text.chars, name_text.size()};  // the functor's name: "relu", "tanh"
    using parameterless_layer::parameterless_layer;  // (it keeps a pointer to its input, no tensor)

    template <class X, class Y>
    void forward(const X& x, const Y& y, const step_info&)
    {
        check_input_element<storage, X>();
        const auto xv = contiguous_as<S>(x);
        input_ = xv.data();
        assign(contiguous_as<S>(y), tenet::internal::make_map(Op{}, xv));
    }

    template <class DY, class DX, class Prev>
    void backward(const DY& dy, const DX& dx, const step_info&, Prev&)
    {
        if constexpr (!is_no_input_gradient<DX>) {
            const auto x = make_view<S, Place>(input_);
            assign(contiguous_as<S>(dx), gradient<0>(tenet::internal::make_map(Op{}, var<0>(x)), contiguous_as<S>(dy)));
        }
    }

private:
    const storage* input_ = nullptr;
};

// fusable: the cuBLASLt epilogue a preceding Linear can apply instead, from
// linalg's one table (none: this activation is never fused into a matmul);
// op: the elementwise functor (inference forms apply it in their epilogues).
template <class Op>
struct activation_spec {
    using op = Op;
    static constexpr linalg::activation fusable = linalg::activation_of<Op>;
    template <class S>
    using output_shape = S;
    template <precision_policy P, class S, class Place>
    using layer = activation_layer<P, S, Place, Op>;
};

}  // namespace detail

struct ReLU : detail::activation_spec<ops::relu> {};
struct GELU : detail::activation_spec<ops::gelu> {};
struct GELUTanh : detail::activation_spec<ops::gelu_tanh> {};
struct Tanh : detail::activation_spec<ops::tanh> {};
struct Sigmoid : detail::activation_spec<ops::sigmoid> {};
struct SiLU : detail::activation_spec<ops::silu> {};
struct Softplus : detail::activation_spec<ops::softplus> {};

// Activation<F>: a user's elementwise functor as a layer (F as tenet::map
// takes it, default-constructible, with a derivative<0>(x) member for the
// backward). It works wherever a built-in activation does: Sequential,
// nn::model, the trainer, checkpoints.
template <class F>
struct Activation : detail::activation_spec<F> {
    static_assert(std::is_default_constructible_v<F> && has_derivative<F, f32>,
                  "tenet: nn::Activation<F>: F must be default-constructible and give its derivative "
                  "(template <std::size_t J> TENET_HD float derivative(float x) const)");
};

}  // namespace tenet::nn
