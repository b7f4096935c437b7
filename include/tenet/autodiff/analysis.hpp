// What gradients(e, dy) learns from e's type before anything runs: which
// var<I> leaves it holds (numbered 0..N-1 without gaps, each number marking
// one tensor type), whether any of them sits where the elementwise backward
// cannot reach it, and for each variable whether it is broadcast (its
// gradient is then summed over the broadcast axes).
#pragma once

#include "../expr/views.hpp"
#include "../reduce/reduce.hpp"
#include "variable.hpp"

#include <array>
#include <cstddef>
#include <type_traits>

namespace tenet::detail::ad {

template <class... T>
struct type_list {};

template <class... L>
struct concat_lists {
    using type = type_list<>;
};
template <class... A>
struct concat_lists<type_list<A...>> {
    using type = type_list<A...>;
};
template <class... A, class... B, class... Rest>
struct concat_lists<type_list<A...>, type_list<B...>, Rest...> : concat_lists<type_list<A..., B...>, Rest...> {};

// Where a variable cannot be differentiated elementwise.
enum class obstacle { none, view, reduction, nested_gradient };

template <class... O>
constexpr obstacle first_obstacle(O... o)
{
    obstacle found = obstacle::none;
    ((found = found == obstacle::none ? o : found), ...);
    return found;
}

// Is remap layout L over an operand of shape From a plain broadcast (each
// element reads the element broadcasting puts there)? Then the backward
// passes through it; any other view of a variable would need a scatter.
template <class From, class L>
constexpr bool broadcast_layout()
{
    using To = typename L::shape;
    if constexpr (!broadcasts_to_v<From, To>) {
        return false;
    } else {
        using broadcast = layout_from_t<internal::transformed<internal::broadcast_transform<To>, contiguous_layout<From>>>;
        return internal::same_layout_v<L, broadcast>;
    }
}

// Nodes that hold variables; everything else is a constant.
template <class E>
struct variables_of {
    using type = type_list<>;
    static constexpr obstacle blocked = obstacle::none;
};

template <std::size_t I, class N>
struct variables_of<var_expr<I, N>> {
    using type = type_list<var_expr<I, N>>;
    static constexpr obstacle blocked = obstacle::none;
};

template <class Op, class... A>
struct variables_of<internal::map_expr<Op, A...>> {
    using type = typename concat_lists<typename variables_of<A>::type...>::type;
    static constexpr obstacle blocked = first_obstacle(variables_of<A>::blocked...);
};

template <class E, class L>
struct variables_of<internal::remap_expr<E, L>> {
    using type = typename variables_of<E>::type;
    static constexpr bool passes = std::is_same_v<type, type_list<>> || broadcast_layout<typename E::shape, L>();
    static constexpr obstacle blocked =
        first_obstacle(variables_of<E>::blocked, passes ? obstacle::none : obstacle::view);
};

template <template <class> class Op, class E, class Axes, bool Keep>
struct variables_of<internal::reduce_expr<Op, E, Axes, Keep>> {
    using type = type_list<>;  // a reduction is materialised first: its variables are out of reach
    static constexpr obstacle blocked =
        std::is_same_v<typename variables_of<E>::type, type_list<>> ? variables_of<E>::blocked : obstacle::reduction;
};

template <std::size_t I, class List>
struct variable_at {
    using type = void;
};
template <std::size_t I, class V, class... Rest>
struct variable_at<I, type_list<V, Rest...>>
    : std::conditional_t<V::index == I, std::type_identity<V>, variable_at<I, type_list<Rest...>>> {};

template <class List>
struct variable_table;
template <class... V>
struct variable_table<type_list<V...>> {
    static constexpr std::size_t count = [] {
        std::size_t n = 0;
        ((n = V::index + 1 > n ? V::index + 1 : n), ...);
        return n;
    }();
    template <std::size_t I>
    using variable = typename variable_at<I, type_list<V...>>::type;

    // The first number in 0..count-1 that marks nothing (count if none).
    static constexpr std::size_t missing = [] {
        std::array<bool, count + 1> seen{};
        ((seen[V::index] = true), ...);
        std::size_t i = 0;
        while (i != count && seen[i]) ++i;
        return i;
    }();
    // The first number that marks two different tensor types (count if none).
    static constexpr std::size_t inconsistent = [] {
        std::size_t found = count;
        ((found = found == count && !std::is_same_v<V, variable<V::index>> ? V::index : found), ...);
        return found;
    }();
};

template <class E>
using variables_t = variable_table<typename variables_of<E>::type>;

// Variable I of expression E: its node type, gradient slot type, and whether
// it is broadcast (fewer elements than E: its slot is summed afterwards).
template <class E, std::size_t I>
using variable_t = typename variables_t<E>::template variable<I>;
template <class E, std::size_t I>
using slot_t = typename variable_t<E, I>::value_type;
template <class E, std::size_t I>
inline constexpr bool broadcast_variable = variable_t<E, I>::shape::numel != E::shape::numel;

// The axes of Full a variable of shape Part is broadcast along (numpy rules:
// Part aligned to the right; its missing and extent-1 axes).
template <class Part, class Full>
struct broadcast_axes {
    static constexpr bool broadcast(std::size_t d)
    {
        // (d + Part::rank < Full::rank, not d < Full::rank - Part::rank: no pointless unsigned comparison)
        return d + Part::rank < Full::rank || Part::extents[d + Part::rank - Full::rank] != Full::extents[d];
    }
    static constexpr std::size_t count = [] {
        std::size_t n = 0;
        for (std::size_t d = 0; d != Full::rank; ++d) n += broadcast(d);
        return n;
    }();
    static constexpr std::array<std::size_t, count> axes = [] {
        std::array<std::size_t, count> a{};
        for (std::size_t d = 0, n = 0; d != Full::rank; ++d)
            if (broadcast(d)) a[n++] = d;
        return a;
    }();
    template <std::size_t... J>
    static auto reduction(std::index_sequence<J...>) -> internal::reduction_axes<Full, static_cast<int>(axes[J])...>;
    using type = decltype(reduction(std::make_index_sequence<count>{}));
};

// sum over the axes along which a Part-shaped variable was broadcast to
// node N's shape: its output index is the variable's own (row-major) index.
template <class Part, class N>
auto broadcast_sum(const N& node)
{
    return internal::reduce_expr<reductions::sum, N, typename broadcast_axes<Part, typename N::shape>::type, false>{{}, node};
}

}  // namespace tenet::detail::ad
