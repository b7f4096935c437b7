// Which axes a reduction removes, and the index arithmetic that goes with it.
// The input is viewed with its kept axes first and its reduced axes last:
// element (o, r) of that view -- output o, position r along the reduced axes
// -- is input element index_map<layout>::offset(o * R + r).
#pragma once

#include "../diagnostic.hpp"
#include "../shape/layout.hpp"

#include <array>
#include <cstddef>

namespace tenet::detail::reduce {

template <class S, int... Axes>
struct reduction_axes {
    static constexpr std::size_t rank = S::rank;
    static constexpr bool all = sizeof...(Axes) == 0;
    static constexpr bool in_range = ((Axes >= -static_cast<int>(rank) && Axes < static_cast<int>(rank)) && ...);

    static constexpr std::array<bool, rank> reduced = [] {
        std::array<bool, rank> r{};
        for (std::size_t d = 0; d != rank; ++d) r[d] = all;
        if constexpr (in_range) ((r[static_cast<std::size_t>(Axes < 0 ? Axes + static_cast<int>(rank) : Axes)] = true), ...);
        return r;
    }();
    static constexpr bool distinct = [] {
        std::size_t count = 0;
        for (std::size_t d = 0; d != rank; ++d) count += reduced[d];
        return all || count == sizeof...(Axes);
    }();

    // Output rows M (the kept axes) and row length R (the reduced axes).
    static constexpr std::size_t row_length = [] {
        std::size_t r = 1;
        for (std::size_t d = 0; d != rank; ++d) r *= reduced[d] ? S::extents[d] : 1;
        return r;
    }();
    static constexpr std::size_t rows = S::numel / row_length;

    static constexpr std::size_t kept_rank = [] {
        std::size_t k = 0;
        for (std::size_t d = 0; d != rank; ++d) k += !reduced[d];
        return k;
    }();

    struct removed {
        static constexpr std::array<std::size_t, kept_rank> extents = [] {
            std::array<std::size_t, kept_rank> e{};
            for (std::size_t d = 0, k = 0; d != rank; ++d) {
                if (!reduced[d]) e[k++] = S::extents[d];
            }
            return e;
        }();
    };
    struct kept_as_ones {
        static constexpr std::array<std::size_t, rank> extents = [] {
            std::array<std::size_t, rank> e{};
            for (std::size_t d = 0; d != rank; ++d) e[d] = reduced[d] ? 1 : S::extents[d];
            return e;
        }();
    };

    using shape = shape_from_t<removed>;                // reduced axes removed
    using keepdims_shape = shape_from_t<kept_as_ones>;  // reduced axes kept with extent 1

    struct view_values {
        static constexpr internal::layout_values<rank> value = [] {
            internal::layout_values<rank> v;
            std::size_t j = 0;
            for (int pass = 0; pass != 2; ++pass) {
                for (std::size_t d = 0; d != rank; ++d) {
                    if (reduced[d] != (pass == 1)) continue;
                    v.extents[j] = S::extents[d];
                    v.strides[j] = S::strides[d];
                    ++j;
                }
            }
            return v;
        }();
    };
    using layout = layout_from_t<view_values>;

    // Reading along a row walks the input's innermost axis: rows are
    // coalesced, so a warp or block cooperates on each row.
    static constexpr bool rows_are_contiguous = rank == 0 || reduced[rank - 1];
};

template <class S, int... Axes>
struct reduction_axis_out_of_range_for_shape {
    static constexpr int bad = [] {
        int first = 0;
        bool found = false;
        ((!found && !(Axes >= -static_cast<int>(S::rank) && Axes < static_cast<int>(S::rank)) ? (first = Axes, found = true)
                                                                                             : false),
         ...);
        return first;
    }();
    static constexpr auto text()
    {
        constexpr auto magnitude = decimal<static_cast<std::size_t>(bad < 0 ? -bad : bad)>();
        if constexpr (bad < 0)
            return fixed_string("tenet: reduction axis -") + magnitude + fixed_string(" out of range for ") +
                   shape_name<S>::text();
        else
            return fixed_string("tenet: reduction axis ") + magnitude + fixed_string(" out of range for ") +
                   shape_name<S>::text();
    }
};

}  // namespace tenet::detail::reduce

// For the folders above this one (see docs/ARCHITECTURE.md, "Namespaces").
namespace tenet::internal {
using detail::reduce::reduction_axes;
}  // namespace tenet::internal
