// Reductions on the device, each fused with its input expression (the input
// is evaluated inside the reduction kernel, never stored):
//   rows along the input's innermost axis  one warp per row (cub::WarpReduce),
//                                          or one block per long row
//                                          (cub::BlockReduce);
//   rows across it (the innermost kept)    one thread per output, its loads
//                                          coalesced across the warp;
//   everything to one value                cub::DeviceReduce over the
//                                          expression, then one thread
//                                          finalises and stores.
// No atomics: results are deterministic.
#pragma once

#include "../config.hpp"

#if TENET_CUDA_COMPILER

#include "../exec/launch.hpp"
#include "../memory/buffer.hpp"
#include "../shape/layout.hpp"

#include <cub/block/block_reduce.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/warp/warp_reduce.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

namespace tenet::detail::reduce {

inline constexpr int reduce_block_threads = 512;
inline constexpr int rows_per_warp_block = block_threads / 32;

template <class Op, class Axes, class In>
__device__ typename Op::accumulator reduce_row_part(const In& in, std::size_t row, unsigned first, unsigned step)
{
    using map = index_map<typename Axes::layout>;
    using index = kernel_index<Axes::layout::shape::numel>;
    const Op op{};
    typename Op::accumulator acc = Op::identity();
    for (index r = first; r < Axes::row_length; r += step)
        acc = op(acc, Op::lift(in.at(map::offset(static_cast<index>(row * Axes::row_length + r))), r));
    return acc;
}

template <class Op, class Axes, class In, class Dst>
__global__ void __launch_bounds__(block_threads) reduce_rows_by_warp(In in, Dst dst)
{
    using warp_reduce = cub::WarpReduce<typename Op::accumulator>;
    __shared__ typename warp_reduce::TempStorage temp[rows_per_warp_block];
    const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (std::size_t row = blockIdx.x * rows_per_warp_block + warp; row < Axes::rows;
         row += gridDim.x * rows_per_warp_block) {
        const auto acc = warp_reduce(temp[warp]).Reduce(reduce_row_part<Op, Axes>(in, row, lane, 32), Op{});
        if (lane == 0) dst.store(row, Op::finalize(acc, Axes::row_length));
        __syncwarp();
    }
}

template <class Op, class Axes, class In, class Dst>
__global__ void __launch_bounds__(reduce_block_threads) reduce_rows_by_block(In in, Dst dst)
{
    using block_reduce = cub::BlockReduce<typename Op::accumulator, reduce_block_threads>;
    __shared__ typename block_reduce::TempStorage temp;
    for (std::size_t row = blockIdx.x; row < Axes::rows; row += gridDim.x) {
        const auto acc =
            block_reduce(temp).Reduce(reduce_row_part<Op, Axes>(in, row, threadIdx.x, reduce_block_threads), Op{});
        if (threadIdx.x == 0) dst.store(row, Op::finalize(acc, Axes::row_length));
        __syncthreads();
    }
}

template <class Op, class Axes, class In, class Dst>
__global__ void __launch_bounds__(block_threads) reduce_columns(In in, Dst dst)
{
    for (std::size_t row = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; row < Axes::rows;
         row += std::size_t{gridDim.x} * blockDim.x)
        dst.store(row, Op::finalize(reduce_row_part<Op, Axes>(in, row, 0, 1), Axes::row_length));
}

template <class Op, class Axes, class In>
struct lifted_element {
    In in;
    __device__ typename Op::accumulator operator()(unsigned long long i) const
    {
        using map = index_map<typename Axes::layout>;
        return Op::lift(in.at(map::offset(static_cast<kernel_index<Axes::layout::shape::numel>>(i))),
                        static_cast<long long>(i));
    }
};

template <class Op, class Axes, class Dst>
__global__ void finalize_single(const typename Op::accumulator* acc, Dst dst)
{
    dst.store(0u, Op::finalize(*acc, Axes::row_length));
}

template <class Op, class Axes, class Dst, class In>
void device_reduce(const Dst& dst, const In& in, stream_ref stream)
{
    using accumulator = typename Op::accumulator;
    if constexpr (Axes::rows == 1 && Axes::row_length > 1) {
        auto elements = thrust::make_transform_iterator(thrust::counting_iterator<unsigned long long>(0),
                                                        lifted_element<Op, Axes, In>{in});
        buffer<accumulator, Device> result(1, stream);
        std::size_t temp_bytes = 0;
        TENET_CUDA_CHECK(cub::DeviceReduce::Reduce(nullptr, temp_bytes, elements, result.data(), Axes::row_length,
                                                   Op{}, Op::identity(), stream.get()));
        buffer<unsigned char, Device> temp(temp_bytes, stream);
        TENET_CUDA_CHECK(cub::DeviceReduce::Reduce(temp.data(), temp_bytes, elements, result.data(),
                                                   Axes::row_length, Op{}, Op::identity(), stream.get()));
        finalize_single<Op, Axes><<<1, 1, 0, stream.get()>>>(result.data(), dst);
    } else if constexpr (!Axes::rows_are_contiguous || Axes::row_length == 1) {
        constexpr auto kernel = reduce_columns<Op, Axes, In, Dst>;
        kernel<<<grid_for<kernel, block_threads>(Axes::rows), block_threads, 0, stream.get()>>>(in, dst);
    } else if constexpr (Axes::row_length >= 1024) {
        constexpr auto kernel = reduce_rows_by_block<Op, Axes, In, Dst>;
        kernel<<<grid_for<kernel, reduce_block_threads>(Axes::rows * reduce_block_threads), reduce_block_threads, 0,
                 stream.get()>>>(in, dst);
    } else {
        constexpr auto kernel = reduce_rows_by_warp<Op, Axes, In, Dst>;
        kernel<<<grid_for<kernel, block_threads>(Axes::rows * 32), block_threads, 0, stream.get()>>>(in, dst);
    }
    TENET_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tenet::detail::reduce

#endif
