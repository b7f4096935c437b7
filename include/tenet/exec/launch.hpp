// The device backend: ONE kernel per assignment. Each thread evaluates the
// whole expression tree for its elements -- every leaf read once, every
// destination written once, nothing in between touches memory.
//
// When every vector-capable leaf and destination is 16-byte aligned (checked
// on the host, passed as one flag) the main loop moves K elements per thread
// with 16-byte loads and stores; a scalar loop handles the tail, and the
// whole range when alignment fails. Sizes are compile-time constants, so the
// loops' bounds and all index arithmetic fold; 32-bit indices are used when
// the element count allows.
#pragma once

#include "../config.hpp"
#include "../expr/node.hpp"
#include "../memory/cuda_check.hpp"
#include "../memory/stream.hpp"
#include "../shape/layout.hpp"

#include <cstddef>
#include <utility>

namespace tenet::detail::exec {

inline constexpr int block_threads = 256;

// The current device and its multiprocessor count, read once per device and
// thread.
struct device_shape {
    int device = -1;
    int multiprocessors = 0;
};

inline const device_shape& current_device_shape()
{
    thread_local device_shape cached;
    int device = 0;
    TENET_CUDA_CHECK(cudaGetDevice(&device));
    if (cached.device != device) {
        TENET_CUDA_CHECK(cudaDeviceGetAttribute(&cached.multiprocessors, cudaDevAttrMultiProcessorCount, device));
        cached.device = device;
    }
    return cached;
}

// Enough blocks to give each work item a thread, and at most as many as the
// GPU holds at once for this kernel (its occupancy, asked once per kernel and
// device): the loops are grid-strided, and a second, partial wave of blocks
// would leave multiprocessors idle at the end.
template <auto Kernel, int Threads>
unsigned grid_for(std::size_t work_items)
{
    const device_shape& d = current_device_shape();
    thread_local int cached_device = -1, blocks_per_multiprocessor = 0;
    if (cached_device != d.device) {
        TENET_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_multiprocessor, Kernel, Threads, 0));
        cached_device = d.device;
    }
    const std::size_t resident = static_cast<std::size_t>(d.multiprocessors) * blocks_per_multiprocessor;
    const std::size_t needed = (work_items + Threads - 1) / Threads;
    return static_cast<unsigned>(needed < resident ? (needed > 0 ? needed : 1) : resident);
}

// A kernel's index for N elements: index_for's choice, leaving headroom for a
// grid-stride step (under 2^31 threads) past the last element.
template <std::size_t N>
using kernel_index = index_for<N + (std::size_t{1} << 31)>;

#if TENET_CUDA_COMPILER

template <std::size_t N, std::size_t K, class Dsts, class Srcs, std::size_t... I>
__device__ void elementwise_body(const Dsts& dsts, const Srcs& srcs, [[maybe_unused]] bool vector_path,
                                 std::index_sequence<I...>)
{
    using index = kernel_index<N>;
    const index stride = static_cast<index>(gridDim.x) * blockDim.x;
    const index first = static_cast<index>(blockIdx.x) * blockDim.x + threadIdx.x;
    index tail = 0;
    constexpr index chunks = N / K;
    if constexpr (chunks != 0) {  // (a loop bound of 0 is a "pointless comparison" to nvcc)
        if (vector_path) {
            for (index c = first; c < chunks; c += stride) {
                const index i = c * K;
                const auto values = make_value_pack(get<I>(srcs).template chunk<K>(i)...);  // all reads before any write
                (get<I>(dsts).template store_chunk<K>(i, get<I>(values)), ...);
            }
            tail = chunks * K;
        }
    }
    for (index i = tail + first; i < N; i += stride) {
        const auto values = make_value_pack(get<I>(srcs).at(i)...);
        (get<I>(dsts).store(i, get<I>(values)), ...);
    }
}

template <std::size_t N, std::size_t K, class Dsts, class Srcs>
__global__ void __launch_bounds__(block_threads) elementwise_kernel(Dsts dsts, Srcs srcs, bool vector_path)
{
    elementwise_body<N, K>(dsts, srcs, vector_path, std::make_index_sequence<Dsts::size>{});
}

template <std::size_t N, std::size_t K, class Dsts, class Srcs>
void launch_elementwise(const Dsts& dsts, const Srcs& srcs, bool vector_path, stream_ref stream)
{
    static_assert(std::is_trivially_copyable_v<Dsts> && std::is_trivially_copyable_v<Srcs>,
                  "tenet: internal: evaluators must be trivially copyable to enter a kernel");
    static_assert(sizeof(Dsts) + sizeof(Srcs) + sizeof(bool) <= 32764,
                  "tenet: the expression is too large for a kernel's parameters (32 KiB); split the assignment");
    constexpr auto kernel = elementwise_kernel<N, K, Dsts, Srcs>;
    const std::size_t work = vector_path ? N / K + N % K : N;
    kernel<<<grid_for<kernel, block_threads>(work), block_threads, 0, stream.get()>>>(dsts, srcs, vector_path);
    TENET_CUDA_CHECK(cudaGetLastError());
}

#endif

}  // namespace tenet::detail::exec

namespace tenet {
using detail::exec::block_threads;
using detail::exec::grid_for;
using detail::exec::kernel_index;
}  // namespace tenet

// For the folders above this one (see docs/ARCHITECTURE.md, "Namespaces").
namespace tenet::internal {
using detail::exec::current_device_shape;
}  // namespace tenet::internal
