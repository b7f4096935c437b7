// var<I>(t): marks a tensor (or a view of one) as differentiable variable
// number I. It evaluates exactly like t -- an ordinary expression leaf -- and
// its evaluator carries I in its type, which is all the backward pass needs
// to find it: gradients(e, dy) sends the adjoint reaching each var<I> leaf
// into gradient slot I.
#pragma once

#include "../expr/operators.hpp"
#include "../tensor/tensor.hpp"

#include <cstddef>
#include <type_traits>
#include <utility>

namespace tenet {
namespace detail::ad {

// The leaf's own evaluator, tagged with the variable's number: it loads,
// aligns and reports its leaves as the plain leaf does.
template <std::size_t I, class Leaf>
struct var_eval : Leaf {
    static constexpr std::size_t index = I;
};

template <std::size_t I, class N>
struct var_expr {
    using operand_type = N;
    using shape = typename N::shape;
    using value_type = typename N::value_type;
    using place = typename N::place;
    static constexpr std::size_t index = I;

    N operand;

    template <class Context>
    auto prepare(Context& context) const
    {
        using leaf = decltype(operand.prepare(context));
        return var_eval<I, leaf>{operand.prepare(context)};
    }
};

template <class E>
struct is_var_eval : std::false_type {};
template <std::size_t I, class Leaf>
struct is_var_eval<var_eval<I, Leaf>> : std::true_type {};

}  // namespace detail::ad

// var<I>(x): x (a tensor or a view of one, of a floating type) as variable I.
// Lvalue tensors are held by reference, like any operand: x must outlive the
// expression.
template <std::size_t I, class T>
    requires expression<std::decay_t<T>>
auto var(T&& t)
{
    using N = node_t<T>;
    constexpr bool leaf = is_tensor_view<N>::value || is_tensor<N>::value;
    static_assert(leaf, "tenet: var<I>(t): t must be a tensor or a view of one (mark the tensors inside an "
                        "expression, not the expression)");
    if constexpr (leaf) {
        static_assert(is_floating_v<typename N::element_type>, "tenet: var<I>(t): t must hold a floating type");
        return detail::ad::var_expr<I, N>{as_node(std::forward<T>(t))};
    } else {
        return internal::failed_expression{};
    }
}

}  // namespace tenet
