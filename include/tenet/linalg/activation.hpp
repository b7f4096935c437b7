// The activations a Linear layer fuses into its GEMM, as expressions: the
// forward function and the derivative the backward multiplies by.
#pragma once

#include "../expr/operators.hpp"

#include <utility>

namespace tenet::linalg {

// relu; gelu (erf form, x * Phi(x)); gelu_tanh (the tanh approximation,
// PyTorch's approximate="tanh", which is cuBLASLt's GELU epilogue).
enum class activation { none, relu, gelu, gelu_tanh };

namespace detail {

// act(e) as an expression.
template <activation Act, class E>
auto activate(E&& e)
{
    if constexpr (Act == activation::relu) return relu(std::forward<E>(e));
    else if constexpr (Act == activation::gelu) return gelu(std::forward<E>(e));
    else if constexpr (Act == activation::gelu_tanh) return gelu_tanh(std::forward<E>(e));
    else return ::tenet::detail::as_node(std::forward<E>(e));
}

// d/dx gelu(x) = Phi(x) + x phi(x)
struct gelu_derivative {
    static constexpr auto name() { return ::tenet::detail::fixed_string("gelu_derivative"); }
    template <class A>
    TENET_HD auto operator()(A a) const
    {
        using T = floating_t<A>;
        const T x = convert<T>(a);
        const T cdf = T(0.5) * (T(1) + math::erf(x * T(0.70710678118654752440)));
        const T pdf = T(0.39894228040143267794) * math::exp(T(-0.5) * x * x);
        return cdf + x * pdf;
    }
};

// d/dx gelu_tanh(x) = (1 + t) / 2 + x (1 - t^2) k (1 + 3 c x^2) / 2,
// t = tanh(k (x + c x^3)), k = sqrt(2 / pi), c = 0.044715
struct gelu_tanh_derivative {
    static constexpr auto name() { return ::tenet::detail::fixed_string("gelu_tanh_derivative"); }
    template <class A>
    TENET_HD auto operator()(A a) const
    {
        using T = floating_t<A>;
        const T x = convert<T>(a);
        const T k = T(0.79788456080286535588), c = T(0.044715);
        const T t = math::tanh(k * (x + c * x * x * x));
        return T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * k * (T(1) + T(3) * c * x * x);
    }
};

// act'(pre) for the activations whose derivative is a function of the
// pre-activation (ReLU's comes from its bit mask, relu_mask.hpp).
template <activation Act, class E>
auto derivative(E&& pre)
{
    static_assert(Act == activation::gelu || Act == activation::gelu_tanh,
                  "tenet: internal: only GELU derivatives are taken from the pre-activation");
    using op = std::conditional_t<Act == activation::gelu, gelu_derivative, gelu_tanh_derivative>;
    return ::tenet::detail::make_map(op{}, std::forward<E>(pre));
}

}  // namespace detail
}  // namespace tenet::linalg
