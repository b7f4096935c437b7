// top_k(indices, scores, k[, count]): the positions of the k largest of
// scores[0, count), largest first, into indices[0, k) -- e.g. the pool
// samples an active learner labels next.
//   indices [K] i32 (writable, contiguous; entries from k on are left alone),
//   scores [N] floating-point, any expression (evaluated once per element),
//   k <= K, k <= count <= N (count defaults to N: a pool that shrinks keeps
//   its static shape and passes how many of its entries are live).
// The order is total and the same on the host and the device: larger scores
// first; equal scores (-0 and +0 are equal) by lower position; NaN below
// every number, -inf included, so a NaN is chosen only after all numbers.
// A k or count out of range is a tenet::error before anything is written.
// Host: a partial sort of (key, position) pairs. Device: CUB's radix sort of
// the keys, descending, with the positions as values -- stable, so equal keys
// keep the lower position first -- then the first k positions are copied;
// stream-ordered, no wait.
#pragma once

#include "../exec/assign.hpp"
#include "../tensor/tensor.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#if TENET_CUDA_COMPILER
#include "../exec/launch.hpp"
#include "../memory/buffer.hpp"

#include <cub/device/device_radix_sort.cuh>
#endif

namespace tenet {
namespace detail::index {

// Scores are compared as f64 when they compute in f64, else as f32 (16-bit
// scores convert exactly).
template <class V>
using score_key_t = std::conditional_t<std::is_same_v<V, f64>, f64, f32>;

// A score's rank as an unsigned integer that orders like top_k: NaN is 0,
// below -inf; -0 counts as +0; otherwise negative floats have all bits
// flipped and positive ones their sign set (the IEEE order, unsigned).
template <class T>
TENET_HD auto order_key(T score)
{
    using U = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
    constexpr U sign = U(1) << (8 * sizeof(U) - 1);
    if (score != score) return U(0);
    const U bits = internal::bit_cast<U>(score == T(0) ? T(0) : score);
    return (bits & sign) != 0 ? U(~bits) : U(bits | sign);
}

template <class Key, class Scores>
void host_top_k(i32* out, const Scores& scores, std::size_t k, std::size_t count)
{
    using U = decltype(order_key(Key{}));
    std::vector<std::pair<U, i32>> order(count);
    for (std::size_t i = 0; i < count; ++i)
        order[i] = {order_key(convert<Key>(scores.at(static_cast<std::uint32_t>(i)))), static_cast<i32>(i)};
    const auto first = [](const std::pair<U, i32>& a, const std::pair<U, i32>& b) {
        return a.first != b.first ? a.first > b.first : a.second < b.second;
    };
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(), first);
    for (std::size_t j = 0; j < k; ++j) out[j] = order[j].second;
}

#if TENET_CUDA_COMPILER

template <class Key, class Scores, class U>
__global__ void __launch_bounds__(tenet::block_threads)
    order_keys_kernel(Scores scores, U* keys, i32* positions, std::uint32_t count)
{
    for (std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
        keys[i] = order_key(convert<Key>(scores.at(i)));
        positions[i] = static_cast<i32>(i);
    }
}

template <class Key, class Scores>
void device_top_k(i32* out, const Scores& scores, std::size_t k, std::size_t count, stream_ref stream)
{
    using U = decltype(order_key(Key{}));
    const auto n = static_cast<std::uint32_t>(count);
    buffer<U, Device> keys(2 * count, stream);  // unsorted, then sorted
    buffer<i32, Device> positions(2 * count, stream);
    constexpr auto kernel = order_keys_kernel<Key, Scores, U>;
    kernel<<<grid_for<kernel, block_threads>(count), block_threads, 0, stream.get()>>>(scores, keys.data(),
                                                                                          positions.data(), n);
    TENET_CUDA_CHECK(cudaGetLastError());
    std::size_t temp_bytes = 0;
    TENET_CUDA_CHECK(cub::DeviceRadixSort::SortPairsDescending(nullptr, temp_bytes, keys.data(), keys.data() + count,
                                                               positions.data(), positions.data() + count, n, 0,
                                                               int{8 * sizeof(U)}, stream.get()));
    buffer<std::byte, Device> temp(temp_bytes, stream);
    TENET_CUDA_CHECK(cub::DeviceRadixSort::SortPairsDescending(temp.data(), temp_bytes, keys.data(),
                                                               keys.data() + count, positions.data(),
                                                               positions.data() + count, n, 0, int{8 * sizeof(U)},
                                                               stream.get()));
    TENET_CUDA_CHECK(cudaMemcpyAsync(out, positions.data() + count, k * sizeof(i32), cudaMemcpyDeviceToDevice,
                                     stream.get()));
}

#endif

// k and count against the scores (N) and the room in indices (K).
inline void check_top_k(std::size_t k, std::size_t count, std::size_t n, std::size_t room)
{
    const auto say = [](std::size_t v) { return std::to_string(v); };
    if (count > n)
        throw error("tenet: top_k: count " + say(count) + " is more than the " + say(n) + " scores there are");
    if (k > count)
        throw error("tenet: top_k: cannot choose k = " + say(k) + " of " + say(count) + " scores (k must be at most " +
                    "count)");
    if (k > room) throw error("tenet: top_k: k = " + say(k) + " positions do not fit indices of " + say(room));
}

template <class Indices, class Scores>
void top_k(Indices& indices, Scores&& scores, std::size_t k, std::size_t count)
{
    auto out = destination_view(indices);
    auto in = as_node(std::forward<Scores>(scores));
    using OV = decltype(out);
    using SN = decltype(in);
    using place = combined_place_t<typename OV::place, typename SN::place>;
    static_assert(std::is_same_v<typename OV::element_type, i32>, "tenet: top_k: indices must be an i32 tensor");
    static_assert(std::is_same_v<typename OV::layout, contiguous_layout<typename OV::shape>>,
                  "tenet: top_k: indices must be contiguous (a tensor or its plain view)");
    static_assert(OV::shape::rank == 1 && SN::shape::rank == 1, "tenet: top_k: indices and scores must be 1-D");
    static_assert(is_floating_v<typename SN::value_type>, "tenet: top_k: scores must be floating-point");
    static_assert(SN::shape::numel <= 0x7fffffff, "tenet: top_k: more scores than i32 positions can name");
    static_assert(!std::is_void_v<place>, "tenet: top_k: indices and scores must be in one place");
    static_assert(host_accessible_v<place> || TENET_CUDA_COMPILER,
                  "tenet: top_k on the device needs a CUDA compiler: compile this file with nvcc");
    check_top_k(k, count, SN::shape::numel, OV::shape::numel);
    if (k == 0) return;
    using key = score_key_t<typename SN::value_type>;
    exec_context<compute_place_t<place>> context(current_stream());
    const auto evaluator = in.prepare(context);
    if constexpr (host_accessible_v<place>) {
        host_top_k<key>(out.data(), evaluator, k, count);
    } else {
#if TENET_CUDA_COMPILER
        device_top_k<key>(out.data(), evaluator, k, count, context.stream());
#endif
    }
}

}  // namespace detail::index

// The positions of the k largest of scores[0, count) into indices[0, k) (see
// the top of the file).
template <class Indices, class Scores>
    requires expression<std::decay_t<Scores>>
void top_k(Indices&& indices, Scores&& scores, std::size_t k, std::size_t count)
{
    detail::index::top_k(indices, std::forward<Scores>(scores), k, count);
}

// ... of all N scores.
template <class Indices, class Scores>
    requires expression<std::decay_t<Scores>>
void top_k(Indices&& indices, Scores&& scores, std::size_t k)
{
    constexpr std::size_t n = node_t<Scores>::shape::numel;
    detail::index::top_k(indices, std::forward<Scores>(scores), k, n);
}

}  // namespace tenet
