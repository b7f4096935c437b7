// Shape<N...>: a tensor's extents as a type (rank 0 to 8), with its element
// count, row-major strides and printable name, all at compile time.
#pragma once

#include "../diagnostic.hpp"

#include <array>
#include <cstddef>
#include <type_traits>

namespace tenet {

template <std::size_t... N>
struct Shape {
    static_assert(sizeof...(N) <= 8, "tenet: Shape supports ranks 0 to 8");
    static_assert(((N > 0) && ...), "tenet: every Shape extent must be positive");

    static constexpr std::size_t rank = sizeof...(N);
    static constexpr std::size_t numel = (std::size_t{1} * ... * N);
    static constexpr std::array<std::size_t, rank> extents{N...};

    // Row-major strides, in elements.
    static constexpr std::array<std::size_t, rank> strides = [] {
        std::array<std::size_t, rank> s{};
        std::size_t step = 1;
        for (std::size_t d = rank; d-- > 0;) {
            s[d] = step;
            step *= extents[d];
        }
        return s;
    }();
};

template <class T>
struct is_shape : std::false_type {};
template <std::size_t... N>
struct is_shape<Shape<N...>> : std::true_type {};

template <class T>
concept shape_type = is_shape<T>::value;

namespace detail::shape {

// Builds Shape<P::extents[I]...> from a type P whose static constexpr array
// `extents` was computed at compile time. (A type, not an array-valued
// template argument: g++ 12 can confuse two class-type template arguments.)
template <class P, class Indices = std::make_index_sequence<P::extents.size()>>
struct shape_from;
template <class P, std::size_t... I>
struct shape_from<P, std::index_sequence<I...>> {
    using type = Shape<P::extents[I]...>;
};

// "Shape<256,784>", for diagnostics.
template <class S>
struct shape_name;
template <std::size_t... N>
struct shape_name<Shape<N...>> {
    static constexpr auto text()
    {
        if constexpr (sizeof...(N) == 0) {
            return fixed_string("Shape<>");
        } else {
            return fixed_string("Shape<") + join<N...>() + fixed_string(">");
        }
    }

private:
    template <std::size_t First, std::size_t... Rest>
    static constexpr auto join()
    {
        if constexpr (sizeof...(Rest) == 0) return decimal<First>();
        else return decimal<First>() + fixed_string(",") + join<Rest...>();
    }
};

}  // namespace detail::shape

template <class P>
using shape_from_t = typename detail::shape::shape_from<P>::type;

}  // namespace tenet

namespace tenet {
using detail::shape::shape_name;
}  // namespace tenet
