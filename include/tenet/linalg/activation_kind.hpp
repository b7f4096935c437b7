// The activations a Linear layer fuses into its GEMM: the enum cuBLASLt's
// epilogues are chosen by, its one table to the elementwise functors (which
// carry their own derivatives, expr/functors.hpp), and both as expressions.
#pragma once

#include "../expr/operators.hpp"
#include "../tensor/tensor.hpp"

#include <cstddef>
#include <type_traits>
#include <utility>

namespace tenet::linalg {

// relu; gelu (erf form, x * Phi(x)); gelu_tanh (the tanh approximation,
// PyTorch's approximate="tanh", which is cuBLASLt's GELU epilogue).
enum class activation { none, relu, gelu, gelu_tanh };

// The table: each fusable activation's functor (void for none).
template <activation Act>
struct activation_table {
    using type = void;
};
template <>
struct activation_table<activation::relu> {
    using type = ops::relu;
};
template <>
struct activation_table<activation::gelu> {
    using type = ops::gelu;
};
template <>
struct activation_table<activation::gelu_tanh> {
    using type = ops::gelu_tanh;
};

template <activation Act>
using activation_op = typename activation_table<Act>::type;

// The other way: the activation whose functor is Op (none when Op is not one).
template <class Op>
inline constexpr activation activation_of = std::is_same_v<Op, activation_op<activation::relu>>        ? activation::relu
                                            : std::is_same_v<Op, activation_op<activation::gelu>>      ? activation::gelu
                                            : std::is_same_v<Op, activation_op<activation::gelu_tanh>> ? activation::gelu_tanh
                                                                                                       : activation::none;

namespace detail {

// act(e) as an expression.
template <activation Act, class E>
auto activate(E&& e)
{
    if constexpr (Act == activation::none) return ::tenet::as_node(std::forward<E>(e));
    else return ::tenet::internal::make_map(activation_op<Act>{}, std::forward<E>(e));
}

// Op'(x): the functor's own derivative as an elementwise functor.
template <class Op>
struct derivative_of {
    static constexpr auto name() { return Op::name() + fixed_string("'"); }
    template <class A>
    TENET_HD auto operator()(A a) const
    {
        return Op{}.template derivative<0>(a);
    }
};

// act'(pre) for the activations whose derivative is a function of the
// pre-activation (ReLU's comes from its bit mask, relu_mask.hpp).
template <activation Act, class E>
auto derivative(E&& pre)
{
    static_assert(Act == activation::gelu || Act == activation::gelu_tanh,
                  "tenet: internal: only GELU derivatives are taken from the pre-activation");
    return ::tenet::internal::make_map(derivative_of<activation_op<Act>>{}, std::forward<E>(pre));
}

}  // namespace detail
}  // namespace tenet::linalg
