// check_index_range<Extent>(indices, what): every element of an integer
// expression lies in [0, Extent), or tenet::index_error naming the first
// bound broken, the value and what was being indexed; it returns the least
// and the greatest index. One min and one max
// reduction over the indices in their own place; a device check reads the two
// values back (one wait for the stream), so the caller can throw before it
// writes anything -- which is why a device check inside a CUDA Graph capture
// is an error of its own.
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

template <std::size_t Extent, class I>
index_bounds check_index_range(const I& indices, const std::string& what)
{
    static_assert(integer_expression<I>, "tenet: index checks take integer expressions (i32 indices)");
    using place = std::conditional_t<std::is_same_v<typename I::place, AnyPlace>, Host, compute_place_t<typename I::place>>;
    if constexpr (!host_accessible_v<place>) {
        // Reading back cannot be part of a CUDA Graph: say so, rather than
        // capture a step whose indices nobody checks.
        cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
        TENET_CUDA_CHECK(cudaStreamIsCapturing(current_stream().get(), &capture));
        if (capture != cudaStreamCaptureStatusNone)
            throw error("tenet: " + what + ": indices are checked by reading them back, which a CUDA Graph capture "
                        "cannot do: run steps with integer inputs eagerly (trainer.capture(false))");
    }
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
