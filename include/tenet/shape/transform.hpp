// View transforms on static layouts: each takes a layout's extents, strides
// and offset and returns new ones, at compile time. Views of tensors apply
// them to the tensor's memory layout; views of expressions apply them to the
// expression's row-major index space.
#pragma once

#include "layout.hpp"

#include <array>
#include <cstddef>

namespace tenet::detail::shape {

template <std::size_t R>
constexpr layout_values<R> permuted(const layout_values<R>& in, const std::array<std::size_t, R>& order)
{
    layout_values<R> out{{}, {}, in.offset};
    for (std::size_t d = 0; d != R; ++d) {
        out.extents[d] = in.extents[order[d]];
        out.strides[d] = in.strides[order[d]];
    }
    return out;
}

template <std::size_t R>
constexpr bool is_permutation(const std::array<std::size_t, R>& order)
{
    std::array<bool, R> seen{};
    for (std::size_t d : order) {
        if (d >= R || seen[d]) return false;
        seen[d] = true;
    }
    return true;
}

template <std::size_t R>
constexpr layout_values<R> sliced(layout_values<R> v, std::size_t axis, std::size_t begin, std::size_t end,
                                  std::size_t step)
{
    v.offset += begin * v.strides[axis];
    v.extents[axis] = (end - begin + step - 1) / step;
    v.strides[axis] *= step;
    return v;
}

// Broadcast to Target's extents (NumPy rules; validity checked by the caller):
// new leading dimensions and extent-1 dimensions get stride 0.
template <std::size_t R, std::size_t TargetRank>
constexpr layout_values<TargetRank> broadcasted(const layout_values<R>& in,
                                                const std::array<std::size_t, TargetRank>& target)
{
    layout_values<TargetRank> out{target, {}, in.offset};
    for (std::size_t i = 0; i != R; ++i) {
        const std::size_t d = TargetRank - R + i;
        out.strides[d] = in.extents[i] == target[d] ? in.strides[i] : 0;
    }
    return out;
}

template <std::size_t R>
constexpr layout_values<R + 1> unsqueezed(const layout_values<R>& in, std::size_t axis)
{
    layout_values<R + 1> out{{}, {}, in.offset};
    for (std::size_t d = 0, s = 0; d <= R; ++d) {
        if (d == axis) {
            out.extents[d] = 1;
            out.strides[d] = 0;
        } else {
            out.extents[d] = in.extents[s];
            out.strides[d] = in.strides[s];
            ++s;
        }
    }
    return out;
}

template <std::size_t R>
constexpr layout_values<R - 1> squeezed(const layout_values<R>& in, std::size_t axis)
{
    layout_values<R - 1> out{{}, {}, in.offset};
    for (std::size_t d = 0, s = 0; d < R; ++d) {
        if (d == axis) continue;
        out.extents[s] = in.extents[d];
        out.strides[s] = in.strides[d];
        ++s;
    }
    return out;
}

}  // namespace tenet::detail::shape

// For the folders above this one (see docs/ARCHITECTURE.md, "Namespaces").
namespace tenet::internal {
using detail::shape::is_permutation;
}  // namespace tenet::internal
