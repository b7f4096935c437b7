// Reductions on the device, each fused with its input expression (the input
// is evaluated inside the reduction kernel, never stored):
//   rows along the input's innermost axis  the row engine (row_engine.hpp):
//                                          a warp per row, or a block per
//                                          long row;
//   rows across it (the innermost kept)    one thread per output, its loads
//                                          coalesced across the warp;
//   everything to one value                cub::DeviceReduce over the
//                                          expression, then one thread
//                                          finalises and stores.
// No atomics: results are deterministic.
#pragma once

#include "../config.hpp"
#include "../exec/launch.hpp"
#include "../memory/buffer.hpp"
#include "../shape/layout.hpp"
#include "row_engine.hpp"

#if TENET_CUDA_COMPILER

#include <algorithm>

#include <cub/device/device_reduce.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

namespace tenet::detail::reduce {

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

// Rows along the innermost axis, on the row engine: a team per row (a warp,
// or a block for long rows), each thread accumulating every team-th element.
// At most 512 threads: a 1024-thread block leaves a thread 64 registers, too
// few for an f64 argmax over an expression (it spills).
inline constexpr unsigned max_reduce_team = 512;

template <std::size_t Length>
inline constexpr unsigned reduce_team = std::min(team_size<Length, 1>, max_reduce_team);

template <class Op, class Axes, class In, class Dst>
struct reduce_rows_body {
    using plan = row_plan<Axes::rows, Axes::row_length, reduce_team<Axes::row_length>, 1, false>;
    In in;
    Dst dst;

    __device__ void operator()() const
    {
        using team_t = device_team<typename Op::accumulator, plan>;
        __shared__ typename team_t::storage storage;
        const team_t team(storage);
        for_team_rows<plan>([&](std::size_t row) {
            const auto acc = team.reduce(reduce_row_part<Op, Axes>(in, row, team.rank(), plan::team), Op{});
            if (team.rank() == 0) dst.store(row, Op::finalize(acc, Axes::row_length));
        });
    }
};

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
        TENET_CUDA_CHECK(cudaGetLastError());
    } else if constexpr (!Axes::rows_are_contiguous || Axes::row_length == 1) {
        constexpr auto kernel = reduce_columns<Op, Axes, In, Dst>;
        kernel<<<grid_for<kernel, block_threads>(Axes::rows), block_threads, 0, stream.get()>>>(in, dst);
        TENET_CUDA_CHECK(cudaGetLastError());
    } else {
        using body = reduce_rows_body<Op, Axes, In, Dst>;
        launch_rows(body{in, dst}, row_grid<body>(), stream);
    }
}

}  // namespace tenet::detail::reduce

#endif
