// Views as zero-cost expressions: reshape, permute, transpose, slice,
// broadcast_to, unsqueeze, squeeze. A view of a tensor is a new static layout
// over the same memory (writable when the tensor is); a view of any other
// expression re-indexes it (remap_expr). Misuse is a compile error.
#pragma once

#include "../shape/broadcast.hpp"
#include "../shape/transform.hpp"
#include "remap.hpp"
#include "scalar.hpp"

#include <array>
#include <cstddef>
#include <utility>

namespace tenet {
namespace detail::expr {

template <class T>
struct is_scalar_expr : std::false_type {};
template <class V, class S>
struct is_scalar_expr<scalar_expr<V, S>> : std::true_type {};

// A view whose elements are contiguous in row-major order (reshape keeps it a view).
template <class N>
constexpr bool is_contiguous_view()
{
    if constexpr (is_tensor_view<N>::value) return index_map<typename N::layout>::contiguous;
    else return false;
}

// What a view is taken of: a non-const Tensor lvalue gives a writable view
// (slice<0, 0, 2>(x) = ... writes x); anything else is held as an operand.
template <class E>
auto view_source(E&& e)
{
    using D = std::remove_reference_t<E>;
    if constexpr (is_tensor<D>::value && std::is_lvalue_reference_v<E> && !std::is_const_v<D>) return e.view();
    else return as_node(std::forward<E>(e));
}

// Applies a layout transform: to the memory layout of a tensor view, or to
// the row-major index space of any other expression.
template <class Transform, class Base>
struct transformed {
    static constexpr auto value = Transform::apply(internal::values_of<Base>());
};

template <class Transform, class E>
auto apply_view(E&& e)
{
    auto node = view_source(std::forward<E>(e));
    using N = decltype(node);
    if constexpr (is_tensor_view<N>::value) {
        using element = std::remove_pointer_t<decltype(node.data())>;
        using L = layout_from_t<transformed<Transform, typename N::layout>>;
        return TensorView<element, L, typename N::place>(node.data());
    } else {
        using L = layout_from_t<transformed<Transform, contiguous_layout<typename N::shape>>>;
        return remap_expr<N, L>{std::move(node)};
    }
}

template <class Target>
struct broadcast_transform {
    template <class V>
    static constexpr auto apply(const V& v)
    {
        return broadcasted(v, Target::extents);
    }
};

template <std::size_t... Order>
struct permute_transform {
    template <class V>
    static constexpr auto apply(const V& v)
    {
        return permuted(v, std::array<std::size_t, sizeof...(Order)>{Order...});
    }
};

template <std::size_t Axis, std::size_t Begin, std::size_t End, std::size_t Step>
struct slice_transform {
    template <class V>
    static constexpr auto apply(const V& v)
    {
        return sliced(v, Axis, Begin, End, Step);
    }
};

template <std::size_t Axis>
struct unsqueeze_transform {
    template <class V>
    static constexpr auto apply(const V& v)
    {
        return unsqueezed(v, Axis);
    }
};

template <std::size_t Axis>
struct squeeze_transform {
    template <class V>
    static constexpr auto apply(const V& v)
    {
        return squeezed(v, Axis);
    }
};

template <class From, class To>
struct cannot_broadcast_From_to_To {
    static constexpr auto text()
    {
        return fixed_string("tenet: cannot broadcast ") + shape_name<From>::text() + fixed_string(" to ") +
               shape_name<To>::text();
    }
};

// The operand node broadcast to shape S (operators call this on each operand).
template <class S, class E>
auto broadcast_node(E&& e)
{
    using N = node_t<E>;
    if constexpr (std::is_same_v<typename N::shape, S>) return as_node(std::forward<E>(e));
    else if constexpr (is_scalar_expr<N>::value) return scalar_expr<typename N::value_type, S>{as_node(e).value};
    else return apply_view<broadcast_transform<S>>(as_node(std::forward<E>(e)));
}

template <class From, class To>
struct reshape_changes_the_element_count {
    static constexpr auto text()
    {
        return fixed_string("tenet: reshape changes the element count: ") + shape_name<From>::text() +
               fixed_string(" has ") + decimal<From::numel>() + fixed_string(", ") + shape_name<To>::text() +
               fixed_string(" has ") + decimal<To::numel>();
    }
};

template <class S, std::size_t Axis>
struct axis_out_of_range_for_shape {
    static constexpr auto text()
    {
        return fixed_string("tenet: axis ") + decimal<Axis>() + fixed_string(" out of range for ") +
               shape_name<S>::text();
    }
};

}  // namespace detail::expr

template <shape_type To, class E>
    requires expression<std::decay_t<E>>
auto broadcast_to(E&& e)
{
    using From = typename std::decay_t<E>::shape;
    static_assert(diagnose<broadcasts_to_v<From, To>, detail::expr::cannot_broadcast_From_to_To<From, To>>::value);
    return detail::expr::broadcast_node<To>(std::forward<E>(e));
}

template <shape_type To, class E>
    requires expression<std::decay_t<E>>
auto reshape(E&& e)
{
    using From = typename std::decay_t<E>::shape;
    static_assert(diagnose<From::numel == To::numel, detail::expr::reshape_changes_the_element_count<From, To>>::value);
    auto node = detail::expr::view_source(std::forward<E>(e));
    using N = decltype(node);
    if constexpr (!(From::numel == To::numel)) {
        // a well-formed stand-in of the asked-for shape: the error above stays the only one
        return detail::expr::scalar_expr<typename N::value_type, To>{};
    } else if constexpr (detail::expr::is_contiguous_view<N>()) {
        using element = std::remove_pointer_t<decltype(node.data())>;
        using L = contiguous_layout<To, N::layout::offset>;
        return TensorView<element, L, typename N::place>(node.data());
    } else {
        return detail::expr::remap_expr<N, contiguous_layout<To>>{std::move(node)};
    }
}

// permute<2, 0, 1>(x): dimension d of the result is dimension Order[d] of x.
template <std::size_t... Order, class E>
    requires expression<std::decay_t<E>>
auto permute(E&& e)
{
    using S = typename std::decay_t<E>::shape;
    static_assert(sizeof...(Order) == S::rank && internal::is_permutation<S::rank>({Order...}),
                  "tenet: permute<...>: the axes must be a permutation of 0 .. rank-1");
    return detail::expr::apply_view<detail::expr::permute_transform<Order...>>(std::forward<E>(e));
}

// Swaps the last two dimensions.
template <class E>
    requires expression<std::decay_t<E>>
auto transpose(E&& e)
{
    using S = typename std::decay_t<E>::shape;
    static_assert(S::rank >= 2, "tenet: transpose needs a rank of at least 2");
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
        return permute<I..., S::rank - 1, S::rank - 2>(std::forward<E>(e));
    }(std::make_index_sequence<S::rank - 2>{});
}

// slice<Axis, Begin, End, Step>(x): elements Begin, Begin+Step, ... < End of one axis.
template <std::size_t Axis, std::size_t Begin, std::size_t End, std::size_t Step = 1, class E>
    requires expression<std::decay_t<E>>
auto slice(E&& e)
{
    using S = typename std::decay_t<E>::shape;
    static_assert(diagnose<(Axis < S::rank), detail::expr::axis_out_of_range_for_shape<S, Axis>>::value);
    if constexpr (Axis < S::rank) {
        static_assert(Begin < End && End <= S::extents[Axis] && Step > 0,
                      "tenet: slice<Axis, Begin, End, Step>: needs Begin < End <= extent and Step > 0");
    }
    return detail::expr::apply_view<detail::expr::slice_transform<Axis, Begin, End, Step>>(std::forward<E>(e));
}

// Inserts a dimension of extent 1 before dimension Axis (Axis == rank appends).
template <std::size_t Axis, class E>
    requires expression<std::decay_t<E>>
auto unsqueeze(E&& e)
{
    using S = typename std::decay_t<E>::shape;
    static_assert(diagnose<(Axis <= S::rank), detail::expr::axis_out_of_range_for_shape<S, Axis>>::value);
    return detail::expr::apply_view<detail::expr::unsqueeze_transform<Axis>>(std::forward<E>(e));
}

// Removes dimension Axis, which must have extent 1.
template <std::size_t Axis, class E>
    requires expression<std::decay_t<E>>
auto squeeze(E&& e)
{
    using S = typename std::decay_t<E>::shape;
    static_assert(diagnose<(Axis < S::rank), detail::expr::axis_out_of_range_for_shape<S, Axis>>::value);
    if constexpr (Axis < S::rank)
        static_assert(S::extents[Axis] == 1, "tenet: squeeze: the dimension's extent is not 1");
    return detail::expr::apply_view<detail::expr::squeeze_transform<Axis>>(std::forward<E>(e));
}

}  // namespace tenet

// For the folders above this one (see docs/ARCHITECTURE.md, "Namespaces").
namespace tenet::internal {
using detail::expr::transformed;
using detail::expr::broadcast_transform;
using detail::expr::broadcast_node;
}  // namespace tenet::internal
