// Static layouts: how a tensor or view of a given Shape maps its logical
// (row-major) linear index to a memory offset, with strides and offset known
// at compile time. Views (transpose, slice, broadcast, ...) are new layouts
// over the same memory; index_map turns a layout into the cheapest formula
// ((i / d) % m) * s summed over as few terms as possible, all constants.
#pragma once

#include "../config.hpp"
#include "static_shape.hpp"

#include <array>
#include <cstddef>
#include <utility>

namespace tenet {

template <std::size_t... S>
struct Strides {
    static constexpr std::array<std::size_t, sizeof...(S)> values{S...};
};

template <class Shape, class Strides, std::size_t Offset = 0>
struct Layout {
    static_assert(Shape::rank == Strides::values.size(), "tenet: Layout: one stride per dimension");
    using shape = Shape;
    static constexpr std::size_t rank = Shape::rank;
    static constexpr std::array<std::size_t, rank> extents = Shape::extents;
    static constexpr std::array<std::size_t, rank> strides = Strides::values;
    static constexpr std::size_t offset = Offset;

    // The largest memory offset the layout reaches.
    static constexpr std::size_t max_offset = [] {
        std::size_t last = Offset;
        for (std::size_t d = 0; d != rank; ++d) last += (extents[d] - 1) * strides[d];
        return last;
    }();
};

namespace detail::shape {

template <std::size_t R>
struct layout_values {
    std::array<std::size_t, R> extents{};
    std::array<std::size_t, R> strides{};
    std::size_t offset = 0;
};

template <class L>
constexpr layout_values<L::rank> values_of()
{
    return {L::extents, L::strides, L::offset};
}

// Layout from a type P with a static constexpr layout_values `value` (the
// result of a view transform).
template <class P, class Indices = std::make_index_sequence<P::value.extents.size()>>
struct layout_from;
template <class P, std::size_t... I>
struct layout_from<P, std::index_sequence<I...>> {
    using type = Layout<Shape<P::value.extents[I]...>, Strides<P::value.strides[I]...>, P::value.offset>;
};

template <class S, class Indices = std::make_index_sequence<S::rank>>
struct row_major_strides;
template <class S, std::size_t... I>
struct row_major_strides<S, std::index_sequence<I...>> {
    using type = Strides<S::strides[I]...>;
};

}  // namespace detail::shape

template <class Shape, std::size_t Offset = 0>
using contiguous_layout = Layout<Shape, typename detail::shape::row_major_strides<Shape>::type, Offset>;

template <class P>
using layout_from_t = typename detail::shape::layout_from<P>::type;

// How K consecutive elements starting at a multiple of K are laid out in memory.
enum class chunk_access {
    vector,   // adjacent and K-aligned: one vector load or store
    uniform,  // all K are the same element: one scalar load
    gather,   // anything else: K scalar accesses
};

namespace detail::shape {

template <std::size_t R>
constexpr chunk_access classify_chunk(const std::array<std::size_t, R>& extents, const std::array<std::size_t, R>& strides,
                                      std::size_t count, std::size_t offset, std::size_t k)
{
    if (count == 0) return chunk_access::uniform;
    const std::size_t inner_extent = extents[count - 1], inner_stride = strides[count - 1];
    if (inner_extent % k != 0) return chunk_access::gather;
    if (inner_stride == 0) return chunk_access::uniform;
    if (inner_stride != 1 || offset % k != 0) return chunk_access::gather;
    for (std::size_t j = 0; j + 1 < count; ++j)
        if (strides[j] % k != 0) return chunk_access::gather;
    return chunk_access::vector;
}

}  // namespace detail::shape

// The offset formula of a layout, simplified at compile time: dimensions of
// extent 1 dropped, mergeable neighbours merged, broadcast (stride 0)
// dimensions skipped, and divisions, remainders and multiplications by one
// left out.
template <class L>
struct index_map {
    struct term {
        std::size_t divisor, modulus, stride;  // ((i / divisor) % modulus) * stride
        bool needs_modulus;
    };
    struct merged_dims {
        std::array<std::size_t, L::rank> extents{}, strides{};
        std::size_t count = 0;
    };

    static constexpr std::size_t numel = L::shape::numel;

    static constexpr merged_dims merged = [] {
        merged_dims m;
        for (std::size_t d = 0; d != L::rank; ++d) {
            const std::size_t e = L::extents[d], s = L::strides[d];
            if (e == 1) continue;
            if (m.count > 0 && m.strides[m.count - 1] == s * e) {
                m.extents[m.count - 1] *= e;
                m.strides[m.count - 1] = s;
            } else {
                m.extents[m.count] = e;
                m.strides[m.count] = s;
                ++m.count;
            }
        }
        return m;
    }();

    struct term_list {
        std::array<term, L::rank> terms{};
        std::size_t count = 0;
    };
    static constexpr term_list terms = [] {
        term_list t;
        std::size_t divisor = 1;
        for (std::size_t j = merged.count; j-- > 0;) {
            if (merged.strides[j] != 0)
                t.terms[t.count++] = {divisor, merged.extents[j], merged.strides[j],
                                      divisor * merged.extents[j] < numel};
            divisor *= merged.extents[j];
        }
        return t;
    }();

    // The map is the identity (plus the constant offset).
    static constexpr bool contiguous =
        terms.count == 0 ? numel == 1 : (terms.count == 1 && terms.terms[0].divisor == 1 && terms.terms[0].stride == 1 &&
                                !terms.terms[0].needs_modulus);

    template <std::size_t K>
    static constexpr chunk_access chunk = detail::shape::classify_chunk(merged.extents, merged.strides, merged.count, L::offset, K);

    template <class Index>
    TENET_HD static constexpr Index offset(Index i)
    {
        return apply(i, std::make_index_sequence<terms.count>{});
    }

private:
    template <std::size_t J, class Index>
    TENET_HD static constexpr Index term_value(Index i)
    {
        constexpr term t = terms.terms[J];
        Index v = i;
        if constexpr (t.divisor != 1) v = v / static_cast<Index>(t.divisor);
        if constexpr (t.needs_modulus) v = v % static_cast<Index>(t.modulus);
        if constexpr (t.stride != 1) v = v * static_cast<Index>(t.stride);
        return v;
    }

    template <class Index, std::size_t... J>
    TENET_HD static constexpr Index apply([[maybe_unused]] Index i, std::index_sequence<J...>)
    {
        return static_cast<Index>(L::offset) + (Index{0} + ... + term_value<J>(i));
    }
};

// Index type for offsets below Bound: 32-bit when it fits, else 64-bit.
template <std::size_t Bound>
using index_for = std::conditional_t<(Bound <= 0xFFFFFFFFull), unsigned, unsigned long long>;

}  // namespace tenet

// For the folders above this one (see docs/ARCHITECTURE.md, "Namespaces").
namespace tenet::internal {
using detail::shape::layout_values;
using detail::shape::values_of;
}  // namespace tenet::internal
