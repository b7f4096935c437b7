// check_index_range<Extent>(indices, what): every element of an integer
// expression lies in [0, Extent), or tenet::index_error naming the first
// bound broken, the value and what was being indexed; it returns the least
// and the greatest index. One min and one max
// reduction over the indices in their own place; a device check reads the two
// values back (one wait for the stream), so the caller can throw before it
// writes anything -- which is why a device check inside a CUDA Graph capture
// is an error of its own (can_check_indices says whether one can run now).
#pragma once

#include "../reduce/reduce.hpp"
#include "../tensor/tensor.hpp"

#include <cstdint>
#include <string>
#include <type_traits>

namespace tenet {

template <class I>
concept integer_expression = expression<std::decay_t<I>> && std::is_integral_v<typename std::decay_t<I>::value_type>;

struct index_bounds {
    std::int64_t least, greatest;
};

// Whether indices in Place can be checked now: always on the host; on the
// device unless the current stream is being captured into a CUDA Graph (a
// check reads back, which a graph cannot). Where it is false, take gives NaN
// for an index out of range and scatter_add_rows leaves its row out, so a
// captured training step with a bad token shows as a non-finite step.
template <class Place>
bool can_check_indices()
{
    if constexpr (host_accessible_v<Place>) {
        return true;
    } else {
        cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
        TENET_CUDA_CHECK(cudaStreamIsCapturing(current_stream().get(), &capture));
        return capture == cudaStreamCaptureStatusNone;
    }
}

namespace detail::index {
// Where an expression's indices are read (one that is in no place: the host).
template <class I>
using check_place = std::conditional_t<std::is_same_v<typename I::place, AnyPlace>, Host, compute_place_t<typename I::place>>;
}  // namespace detail::index

template <std::size_t Extent, class I>
index_bounds check_index_range(const I& indices, const std::string& what)
{
    static_assert(integer_expression<I>, "tenet: index checks take integer expressions (i32 indices)");
    using place = detail::index::check_place<I>;
    // Rather than capture a step whose indices nobody checks:
    if (!can_check_indices<place>())
        throw error("tenet: " + what + ": indices are checked by reading them back, which a CUDA Graph capture "
                    "cannot do (check them before capturing, or use take, which marks a bad index with NaN)");
    Tensor<i32, Shape<2>, place> bounds;
    assign(slice<0, 0, 1>(bounds), reshape<Shape<1>>(min(indices)));
    assign(slice<0, 1, 2>(bounds), reshape<Shape<1>>(max(indices)));
    Tensor<i32, Shape<2>, Host> seen;
    copy(seen, bounds);
    current_stream().synchronize();
    const std::int64_t lo = seen.data()[0], hi = seen.data()[1];
    if (lo < 0)
        throw index_error("tenet: " + what + ": index " + std::to_string(lo) + " is negative (indices must be in [0, " +
                          std::to_string(Extent) + "))");
    if (hi >= static_cast<std::int64_t>(Extent))
        throw index_error("tenet: " + what + ": index " + std::to_string(hi) + " is out of range [0, " +
                          std::to_string(Extent) + ")");
    return {lo, hi};
}

}  // namespace tenet
