// scatter_add_rows(dst, indices, src): dst[indices[j], ...] += src[j, ...]
// for every j, in increasing j -- the backward of take<0> (an embedding's
// weight gradient), deterministic: the same bits on every run, and the same
// on the host and the device.
//   dst [N, D...] (writable), indices [I...] (i32), src [I..., D...]
// Every index is checked first (tenet::index_error, dst unchanged); inside a
// CUDA Graph capture, where nothing can be read back, a row whose index is
// out of range is left out instead (take has marked its forward with NaN).
// Host: each thread owns a range of columns and walks j in order. Device:
// a stable radix sort of (index, j) pairs (CUB) groups equal indices with j
// increasing; one thread per (group, column) adds its group in that order.
// Each destination element therefore sees the same additions in the same
// order, rounded the same way, in both places.
#pragma once

#include "index_range.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

#if TENET_CUDA_COMPILER
#include "../exec/launch.hpp"

#include <cub/device/device_radix_sort.cuh>
#endif

namespace tenet {
namespace detail::index {

template <class G, class S>
void host_scatter_add_rows(G* dst, const i32* indices, const S* src, std::size_t count, std::size_t width)
{
    constexpr std::size_t columns_per_task = 64;
    const std::size_t tasks = (width + columns_per_task - 1) / columns_per_task;
    const long long task_count = static_cast<long long>(tasks);
    TENET_OMP_PARALLEL_FOR_IF(count * width >= (std::size_t{1} << 15) && tasks > 1)
    for (long long t = 0; t < task_count; ++t) {
        const std::size_t first = static_cast<std::size_t>(t) * columns_per_task;
        const std::size_t last = first + columns_per_task < width ? first + columns_per_task : width;
        for (std::size_t j = 0; j < count; ++j) {
            G* row = dst + static_cast<std::size_t>(indices[j]) * width;
            const S* from = src + j * width;
            for (std::size_t c = first; c < last; ++c)
                row[c] = convert<G>(convert<f32>(row[c]) + convert<f32>(from[c]));
        }
    }
}

#if TENET_CUDA_COMPILER

// (A template, as every kernel in a header: one definition however many
// translation units include it.) Both kernels are grid-strided: grid_for
// launches at most one wave of resident blocks.
template <class Index>
__global__ void __launch_bounds__(tenet::block_threads) scatter_positions_kernel(Index* positions, std::uint32_t count)
{
    const std::uint64_t stride = std::uint64_t{gridDim.x} * blockDim.x;
    for (std::uint64_t j = std::uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; j < count; j += stride)
        positions[j] = static_cast<Index>(j);
}

// Thread (i, c): if sorted entry i starts a group of equal indices, it adds
// the group's rows (j increasing) into column c of their destination row. A
// group whose index is outside [0, rows) (only where it could not be checked
// first: a CUDA Graph capture) is left out.
template <class G, class S>
__global__ void __launch_bounds__(tenet::block_threads)
    scatter_groups_kernel(G* dst, const i32* keys, const i32* positions, const S* src, std::uint32_t count,
                          std::uint32_t width, std::uint32_t rows)
{
    const std::uint64_t stride = std::uint64_t{gridDim.x} * blockDim.x;
    for (std::uint64_t t = std::uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; t < std::uint64_t{count} * width;
         t += stride) {
        const std::uint32_t i = static_cast<std::uint32_t>(t / width), c = static_cast<std::uint32_t>(t % width);
        const i32 key = keys[i];
        if ((i > 0 && keys[i - 1] == key) || key < 0 || static_cast<std::uint32_t>(key) >= rows) continue;
        G* out = dst + static_cast<std::uint64_t>(key) * width + c;
        f32 acc = convert<f32>(*out);
        for (std::uint32_t k = i; k < count && keys[k] == key; ++k)
            acc = acc + convert<f32>(src[static_cast<std::uint64_t>(positions[k]) * width + c]);
        *out = convert<G>(acc);
    }
}

// checked: the indices are known to lie in [0, Extent), so the sort needs
// only the bits that span it; otherwise it sorts all 32, keeping every
// group of equal indices together.
template <std::size_t Extent, class G, class S>
void device_scatter_add_rows(G* dst, const i32* indices, const S* src, std::size_t count, std::size_t width,
                             bool checked, stream_ref stream)
{
    using tenet::block_threads;
    using tenet::grid_for;
    constexpr int extent_bits = [] {
        int bits = 1;
        while (bits < 31 && (std::size_t{1} << bits) < Extent) ++bits;
        return bits;
    }();
    const int key_bits = checked ? extent_bits : 32;
    const auto n = static_cast<std::uint32_t>(count);
    buffer<i32, Device> pairs(4 * count, stream);  // positions, sorted keys, sorted positions
    i32* positions = pairs.data();
    i32* keys = positions + count;
    i32* sorted_positions = keys + count;
    {
        constexpr auto kernel = scatter_positions_kernel<i32>;
        kernel<<<grid_for<kernel, block_threads>(count), block_threads, 0, stream.get()>>>(positions, n);
        TENET_CUDA_CHECK(cudaGetLastError());
    }
    std::size_t temp_bytes = 0;
    TENET_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, indices, keys, positions, sorted_positions,
                                                     n, 0, key_bits, stream.get()));
    buffer<std::byte, Device> temp(temp_bytes, stream);
    TENET_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.data(), temp_bytes, indices, keys, positions,
                                                     sorted_positions, n, 0, key_bits, stream.get()));
    constexpr auto kernel = scatter_groups_kernel<G, S>;
    kernel<<<grid_for<kernel, block_threads>(count * width), block_threads, 0, stream.get()>>>(
        dst, keys, sorted_positions, src, n, static_cast<std::uint32_t>(width), static_cast<std::uint32_t>(Extent));
    TENET_CUDA_CHECK(cudaGetLastError());
}

#endif

template <class Dst, class Indices, class Src>
struct scatter_shapes {
    using dst = typename Dst::shape;
    using src = typename Src::shape;
    static constexpr std::size_t rows = dst::extents[0];
    static constexpr std::size_t width = dst::numel / rows;
    static constexpr std::size_t count = Indices::shape::numel;
    static constexpr bool fits = src::numel == count * width && [] {
        // src is [indices' shape..., dst's extents after the first]
        if (src::rank != Indices::shape::rank + dst::rank - 1) return false;
        for (std::size_t a = 0; a < Indices::shape::rank; ++a)
            if (src::extents[a] != Indices::shape::extents[a]) return false;
        for (std::size_t a = 1; a < dst::rank; ++a)
            if (src::extents[Indices::shape::rank + a - 1] != dst::extents[a]) return false;
        return true;
    }();
};

template <class Dst, class Indices, class Src>
struct scatter_add_rows_src_must_be_indices_shape_then_rows_of_dst {
    static constexpr auto text()
    {
        return fixed_string("tenet: scatter_add_rows: src ") + shape_name<typename Src::shape>::text() +
               fixed_string(" must be the indices' shape ") + shape_name<typename Indices::shape>::text() +
               fixed_string(" followed by the rows of dst ") + shape_name<typename Dst::shape>::text();
    }
};

template <class T>
auto contiguous_data(const T& t)
{
    auto view = tenet::destination_view(t);
    using V = decltype(view);
    static_assert(std::is_same_v<typename V::layout, contiguous_layout<typename V::shape>>,
                  "tenet: scatter_add_rows takes contiguous tensors (or their plain views)");
    return view.data();
}

}  // namespace detail::index

template <class Dst, class Indices, class Src>
void scatter_add_rows(const Dst& dst, const Indices& indices, const Src& src)
{
    using shapes = detail::index::scatter_shapes<Dst, Indices, Src>;
    static_assert(integer_expression<Indices>, "tenet: scatter_add_rows: the indices must be i32");
    static_assert(diagnose<shapes::fits, detail::index::scatter_add_rows_src_must_be_indices_shape_then_rows_of_dst<Dst, Indices, Src>>::value);
    using place = typename decltype(tenet::destination_view(dst))::place;
    static_assert(std::is_same_v<place, typename Indices::place> && std::is_same_v<place, typename Src::place>,
                  "tenet: scatter_add_rows: dst, indices and src must be in one place");
    static_assert(host_accessible_v<place> || TENET_CUDA_COMPILER,
                  "tenet: scatter_add_rows on the device needs a CUDA compiler: compile this file with nvcc");
    if constexpr (shapes::fits) {
        const bool checked = can_check_indices<place>();
        if (checked) check_index_range<shapes::rows>(indices, "scatter_add_rows");
        auto* out = detail::index::contiguous_data(dst);
        const i32* at = detail::index::contiguous_data(indices);
        const auto* from = detail::index::contiguous_data(src);
        if constexpr (host_accessible_v<place>) {
            detail::index::host_scatter_add_rows(out, at, from, shapes::count, shapes::width);
        } else {
#if TENET_CUDA_COMPILER
            detail::index::device_scatter_add_rows<shapes::rows>(out, at, from, shapes::count, shapes::width, checked,
                                                                 current_stream());
#endif
        }
    }
}

}  // namespace tenet
