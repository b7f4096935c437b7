// Magnitude pruning: prune the k weights of smallest |w|, per layer or over
// all prunable weights together (one threshold across layers), as PyTorch's
// l1_unstructured / global_unstructured do:
//   k = round(sparsity * numel), round half to even (Python's round).
// Counts are exact whatever the ties: every weight's rank is a unique 64-bit
// key, |w| as f32 bits in the high half and the flat index in the low half,
// so equal magnitudes go by index (the lower index is pruned first).
// Masks only shrink: an already-pruned weight ranks below every kept one, and
// nothing is revived, so the pruned count becomes max(k, already pruned).
// NaN ranks above infinity (kept).
//
// Host: the keys in a vector, std::nth_element. Device: a kernel writes the
// keys, CUB radix-sorts them, the one threshold key is read back (8 bytes and
// a synchronize: pruning is never inside a captured step), a kernel writes
// the masks. Both give the same masks bit for bit.
#pragma once

#include "../numeric/convert.hpp"
#include "../numeric/float_format.hpp"
#include "masks.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#if TENET_CUDA_COMPILER
#include "../exec/launch.hpp"

#include <cub/device/device_radix_sort.cuh>
#endif

namespace tenet::prune {

enum class scope { per_layer, global };

namespace detail {

// A weight's rank by magnitude: |w| as f32 bits (ordered like the magnitudes,
// NaN above infinity) plus one, and 0 for an already-pruned weight.
template <class T>
TENET_HD std::uint32_t magnitude_score(T w, bool kept)
{
    const std::uint32_t magnitude = tenet::internal::bit_cast<std::uint32_t>(convert<f32>(w)) & 0x7fffffffu;
    return kept ? magnitude + 1 : 0;
}

// The score and the flat index: unique, so a threshold prunes exactly k.
template <class T>
TENET_HD std::uint64_t magnitude_key(T w, bool kept, std::uint64_t index)
{
    return std::uint64_t{magnitude_score(w, kept)} << 32 | index;
}

// Kept: it was kept, and its key reaches the threshold (the (k+1)-th smallest
// key). An already-pruned key may reach a threshold below the kept ones: it
// stays pruned.
TENET_HD constexpr bool survives(std::uint64_t key, std::uint64_t threshold)
{
    return (key >> 32) != 0 && key >= threshold;
}

inline constexpr std::uint64_t prune_none = 0;
inline constexpr std::uint64_t prune_every = ~std::uint64_t{0};  // above every key

// round(sparsity * n), half to even (the default rounding mode).
inline std::size_t prune_count(double sparsity, std::size_t n)
{
    return static_cast<std::size_t>(std::nearbyint(sparsity * static_cast<double>(n)));
}

inline std::size_t group_numel(std::span<const prunable_parameter> group)
{
    std::size_t n = 0;
    for (const auto& p : group) n += p.numel;
    return n;
}

template <class T>
void host_magnitude(const T* weights, bool* keep, std::span<const prunable_parameter> group, std::size_t k)
{
    const std::size_t n = group_numel(group);
    std::uint64_t threshold = k == 0 ? prune_none : prune_every;
    if (k > 0 && k < n) {
        std::vector<std::uint64_t> keys;
        keys.reserve(n);
        for (const auto& p : group)
            for (std::size_t i = p.offset; i < p.offset + p.numel; ++i)
                keys.push_back(magnitude_key(weights[i], keep[i], i));
        std::nth_element(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(k), keys.end());
        threshold = keys[k];
    }
    for (const auto& p : group)
        for (std::size_t i = p.offset; i < p.offset + p.numel; ++i)
            keep[i] = survives(magnitude_key(weights[i], keep[i], i), threshold);
}

#if TENET_CUDA_COMPILER

template <class T>
__global__ void __launch_bounds__(tenet::block_threads)
    magnitude_keys_kernel(const T* weights, const bool* keep, std::uint64_t first, std::uint64_t n, std::uint64_t* keys)
{
    const std::uint64_t stride = std::uint64_t{gridDim.x} * blockDim.x;
    for (std::uint64_t i = std::uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride)
        keys[i] = magnitude_key(weights[first + i], keep[first + i], first + i);
}

template <class T>
__global__ void __launch_bounds__(tenet::block_threads)
    magnitude_masks_kernel(const T* weights, bool* keep, std::uint64_t first, std::uint64_t n, std::uint64_t threshold)
{
    const std::uint64_t stride = std::uint64_t{gridDim.x} * blockDim.x;
    for (std::uint64_t i = std::uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride)
        keep[first + i] = survives(magnitude_key(weights[first + i], keep[first + i], first + i), threshold);
}

template <class T>
void device_magnitude(const T* weights, bool* keep, std::span<const prunable_parameter> group, std::size_t k,
                      stream_ref stream)
{
    using tenet::block_threads;
    using tenet::grid_for;
    if (k == 0) return;
    const std::size_t n = group_numel(group);
    std::uint64_t threshold = prune_every;
    if (k < n) {
        buffer<std::uint64_t, Device> keys(2 * n, stream);  // unsorted, then sorted
        std::size_t base = 0;
        for (const auto& p : group) {
            constexpr auto kernel = magnitude_keys_kernel<T>;
            kernel<<<grid_for<kernel, block_threads>(p.numel), block_threads, 0, stream.get()>>>(
                weights, keep, p.offset, p.numel, keys.data() + base);
            TENET_CUDA_CHECK(cudaGetLastError());
            base += p.numel;
        }
        std::size_t temp_bytes = 0;
        TENET_CUDA_CHECK(cub::DeviceRadixSort::SortKeys(nullptr, temp_bytes, keys.data(), keys.data() + n, n, 0, 64,
                                                        stream.get()));
        buffer<std::byte, Device> temp(temp_bytes, stream);
        TENET_CUDA_CHECK(cub::DeviceRadixSort::SortKeys(temp.data(), temp_bytes, keys.data(), keys.data() + n, n, 0,
                                                        64, stream.get()));
        tenet::copy_bytes<Host, Device>(&threshold, keys.data() + n + k, sizeof threshold, stream);
        stream.synchronize();
    }
    for (const auto& p : group) {
        constexpr auto kernel = magnitude_masks_kernel<T>;
        kernel<<<grid_for<kernel, block_threads>(p.numel), block_threads, 0, stream.get()>>>(weights, keep, p.offset,
                                                                                             p.numel, threshold);
        TENET_CUDA_CHECK(cudaGetLastError());
    }
}

#endif

}  // namespace detail

// Prunes the smallest-magnitude weights until `sparsity` of each prunable
// parameter (per_layer) or of all of them together (global) is pruned; see
// the top of this file for the count and the ties.
template <class Model>
void magnitude(masks<Model>& m, double sparsity, scope s)
{
    using place = typename masks<Model>::place;
    static_assert(host_accessible_v<place> || TENET_CUDA_COMPILER,
                  "tenet: prune::magnitude on a Device model needs a CUDA compiler: compile this file with nvcc");
    static_assert(Model::flat_numel <= (std::size_t{1} << 32),
                  "tenet: prune::magnitude: ranks weights by 32-bit flat indices; the model has more than 2^32 "
                  "parameter elements");
    if (!(sparsity >= 0.0 && sparsity <= 1.0))
        throw error("tenet: prune::magnitude: sparsity " + std::to_string(sparsity) + " is not in [0, 1]");
    const auto* weights = m.model().parameters();
    bool* keep = m.data();
    const auto select = [&](std::span<const prunable_parameter> group) {
        const std::size_t k = detail::prune_count(sparsity, detail::group_numel(group));
        if constexpr (host_accessible_v<place>) {
            detail::host_magnitude(weights, keep, group, k);
        } else {
#if TENET_CUDA_COMPILER
            detail::device_magnitude(weights, keep, group, k, current_stream());
#endif
        }
    };
    const std::span<const prunable_parameter> all(m.prunable());
    if (s == scope::global) select(all);
    else
        for (std::size_t i = 0; i < all.size(); ++i) select(all.subspan(i, 1));
}

}  // namespace tenet::prune
