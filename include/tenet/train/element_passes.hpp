// Element-wise passes over an optimizer's buffers (zeroing, widening the
// master weights from the storage weights, rounding them back, swapping in
// an average, zeroing pruned elements): f(i) for every element, on the host
// or in one kernel on the stream.
#pragma once

#include "../config.hpp"
#include "../memory/cuda_check.hpp"
#include "../memory/place.hpp"
#include "../memory/stream.hpp"
#include "../numeric/convert.hpp"
#include "../tensor/tensor.hpp"

#include <cstdint>

#if TENET_CUDA_COMPILER
#include "../exec/launch.hpp"
#endif

namespace tenet::train::detail {

inline constexpr int pass_threads = 256;

// The state's length is the optimizer's shard (ZeRO-1: known at run time),
// so these are plain loops rather than static-shape expressions.

template <class T>
struct zero_element {
    T* data;
    TENET_HD void operator()(std::uint64_t i) const { data[i] = T(0); }
};

template <class T, class Storage>
struct widen_element {  // master weights from the storage weights (exact)
    T* to;
    const Storage* from;
    TENET_HD void operator()(std::uint64_t i) const { to[i] = convert<T>(from[i]); }
};

template <class Storage, class T>
struct round_element {  // storage weights rounded from master-type values
    Storage* to;
    const T* from;
    TENET_HD void operator()(std::uint64_t i) const { to[i] = convert<Storage>(from[i]); }
};

template <class T>
struct swap_element {
    T* a;
    T* b;
    TENET_HD void operator()(std::uint64_t i) const
    {
        const T t = a[i];
        a[i] = b[i];
        b[i] = t;
    }
};

template <class T>
struct zero_pruned_element {
    T* data;
    const bool* keep;
    TENET_HD void operator()(std::uint64_t i) const
    {
        if (!keep[i]) data[i] = T(0);
    }
};

#if TENET_CUDA_COMPILER
template <class F>
__global__ void __launch_bounds__(pass_threads) for_each_element_kernel(F f, std::uint64_t n)
{
    const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * pass_threads;
    for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * pass_threads + threadIdx.x; i < n; i += stride) f(i);
}
#endif

// f(i) for i in [0, n), in Place's memory, on the stream.
template <class Place, class F>
void for_each_element(std::uint64_t n, F f, stream_ref stream)
{
    if (n == 0) return;
    if constexpr (host_accessible_v<Place>) {
        static_cast<void>(stream);
        const auto count = static_cast<std::int64_t>(n);
        TENET_OMP_PARALLEL_FOR_IF(count >= 65536)
        for (std::int64_t i = 0; i < count; ++i) f(static_cast<std::uint64_t>(i));
    } else {
#if TENET_CUDA_COMPILER
        const unsigned grid = tenet::grid_for<for_each_element_kernel<F>, pass_threads>(n);
        for_each_element_kernel<<<grid, pass_threads, 0, stream.get()>>>(f, n);
        TENET_CUDA_CHECK(cudaGetLastError());
#endif
    }
}

}  // namespace tenet::train::detail
