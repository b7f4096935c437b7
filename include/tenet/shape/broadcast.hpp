// NumPy broadcasting of two shapes, at compile time: align the trailing
// dimensions; each pair must be equal or contain a 1.
#pragma once

#include "static_shape.hpp"

#include <array>
#include <cstddef>

namespace tenet {
namespace detail::shape {

// Extent i from the right of a shape, 1 past its rank.
constexpr std::size_t extent_from_right(const std::size_t* extents, std::size_t rank, std::size_t i)
{
    return i < rank ? extents[rank - 1 - i] : 1;
}

template <class A, class B>
struct broadcast_result {
    static constexpr std::size_t rank = A::rank > B::rank ? A::rank : B::rank;

    static constexpr bool valid = [] {
        for (std::size_t i = 0; i != rank; ++i) {
            const std::size_t a = extent_from_right(A::extents.data(), A::rank, i);
            const std::size_t b = extent_from_right(B::extents.data(), B::rank, i);
            if (a != b && a != 1 && b != 1) return false;
        }
        return true;
    }();

    static constexpr std::array<std::size_t, rank> extents = [] {
        std::array<std::size_t, rank> e{};
        for (std::size_t i = 0; i != rank; ++i) {
            const std::size_t a = extent_from_right(A::extents.data(), A::rank, i);
            const std::size_t b = extent_from_right(B::extents.data(), B::rank, i);
            e[rank - 1 - i] = a > b ? a : b;
        }
        return e;
    }();
};

}  // namespace detail::shape

template <class A, class B>
inline constexpr bool broadcastable_v = detail::shape::broadcast_result<A, B>::valid;

// The broadcast shape of A and B (only meaningful when broadcastable_v).
template <class A, class B>
using broadcast_shape_t = shape_from_t<detail::shape::broadcast_result<A, B>>;

// Can a value of shape From be broadcast to exactly shape To?
template <class From, class To>
inline constexpr bool broadcasts_to_v =
    broadcastable_v<From, To> && std::is_same_v<broadcast_shape_t<From, To>, To>;

}  // namespace tenet
