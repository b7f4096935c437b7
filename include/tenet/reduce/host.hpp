// Reductions on the host. Each output row is folded in vector lanes
// (host_lane_fold); rows are split across cores by the row engine
// (host_for_rows), or, a few long rows, walked side by side in groups
// (column reductions read whole cache lines). A full reduction is split into
// fixed blocks whose partial results are combined in order, so the answer
// does not depend on the number of threads.
#pragma once

#include "../config.hpp"
#include "../shape/layout.hpp"
#include "row_engine.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>

namespace tenet::detail::reduce {

inline constexpr std::size_t host_reduce_block = 4096;

template <class Op, class Axes, class In>
typename Op::accumulator host_reduce_row(const In& in, std::size_t row, std::size_t begin, std::size_t end)
{
    using map = index_map<typename Axes::layout>;
    const std::size_t first = row * Axes::row_length + begin;
    return host_lane_fold<1>(
        end - begin, Op::identity(), Op{}, [&](std::size_t r) { return vec<decltype(in.at(first)), 1>{{in.at(map::offset(first + r))}}; },
        [&](std::size_t r, auto x) { return Op::lift(x, static_cast<long long>(begin + r)); });
}

// A few long rows are walked side by side: element r of every row, then
// r + 1. Rows adjacent in memory (a column reduction: [R, C] summed over R,
// as BatchNorm's statistics) are then read as whole cache lines, the rows
// are the vector lanes, and each core streams its own contiguous part. The
// rows' elements are cut into fixed blocks of host_reduce_block (whatever
// the number of cores), each block reduced in order, and the blocks'
// partial results combined in order: the same result on every run.
inline constexpr std::size_t host_side_by_side_rows = 256;

// Rows j of a column reduction that sit side by side in memory: the reduced
// axes lead and the kept ones follow, so element r of row j is input element
// r * rows + j. K of them (a divisor of rows) are read as one chunk when the
// input allows (host_walk): a broadcast operand, such as BatchNorm's
// per-channel mean, is then one vector load rather than a gather through
// the index map's divisions.
template <class In, std::size_t Rows, std::size_t K>
inline constexpr bool chunks_fit = Rows % K == 0 && internal::host_walk_of<In, K>() != internal::host_walk::elements;

// The reduced axes lead and the kept ones follow ([R, C] summed over R).
template <class Axes>
inline constexpr bool column_reduction = [] {
    std::size_t leading = 0;
    while (leading != Axes::rank && Axes::reduced[leading]) ++leading;
    for (std::size_t d = leading; d != Axes::rank; ++d)
        if (Axes::reduced[d]) return false;
    return true;
}();

template <class Axes, class In>
inline constexpr std::size_t side_by_side_chunk = [] {
    if (!column_reduction<Axes>) return std::size_t{0};
    constexpr std::size_t rows = Axes::rows;
    return std::size_t{chunks_fit<In, rows, 16> ? 16u : chunks_fit<In, rows, 8> ? 8u : chunks_fit<In, rows, 4> ? 4u : 0u};
}();

// Rows [first, first + K) of one block, as K accumulators in registers.
template <class Op, class Axes, std::size_t K, class In, class Accumulator>
void accumulate_chunks(Accumulator* out, const In& in, std::size_t first, std::size_t begin, std::size_t end)
{
    using index = index_for<Axes::layout::shape::numel>;
    const Op op{};
    Accumulator acc[K];
    for (std::size_t k = 0; k < K; ++k) acc[k] = Op::identity();
    for (std::size_t r = begin; r < end; ++r) {
        const auto values = internal::evaluate_lanes<K>(in, static_cast<index>(r * Axes::rows + first));
        TENET_SIMD_LOOP
        for (std::size_t k = 0; k < K; ++k) acc[k] = op(acc[k], Op::lift(values[k], static_cast<long long>(r)));
    }
    for (std::size_t k = 0; k < K; ++k) out[k] = acc[k];
}

// Every row of one block, element by element.
template <class Op, class Axes, class In, class Accumulator>
void accumulate_rows(Accumulator* out, const In& in, std::size_t begin, std::size_t end)
{
    using map = index_map<typename Axes::layout>;
    using index = index_for<Axes::layout::shape::numel>;
    constexpr std::size_t rows = Axes::rows, length = Axes::row_length;
    const Op op{};
    Accumulator acc[rows];
    for (std::size_t j = 0; j < rows; ++j) acc[j] = Op::identity();
    for (std::size_t r = begin; r < end; ++r) {
        TENET_SIMD_LOOP
        for (std::size_t j = 0; j < rows; ++j)
            acc[j] = op(acc[j], Op::lift(in.at(map::offset(static_cast<index>(j * length + r))), static_cast<long long>(r)));
    }
    for (std::size_t j = 0; j < rows; ++j) out[j] = acc[j];
}

// The work is cut into blocks of host_reduce_block elements along the rows
// and, when rows are read in chunks, groups of K rows: (block, group) pairs
// are split across cores, so a short column reduction (a bias gradient over
// a batch) is parallel too.
template <class Op, class Axes, class Dst, class In>
void host_reduce_side_by_side(const Dst& dst, const In& in)
{
    using accumulator = typename Op::accumulator;
    constexpr std::size_t rows = Axes::rows, length = Axes::row_length;
    constexpr std::size_t blocks = (length + host_reduce_block - 1) / host_reduce_block;
    constexpr std::size_t k = side_by_side_chunk<Axes, In>;
    constexpr std::size_t groups = k != 0 ? rows / k : 1;
    constexpr std::int64_t tasks = static_cast<std::int64_t>(blocks * groups);
    // (not std::vector: a bool accumulator would pack neighbouring blocks' results into one word)
    const std::unique_ptr<accumulator[]> partial(new accumulator[blocks * rows]);
    const Op op{};
    TENET_OMP_PARALLEL_FOR_IF(tasks > 1 && rows * length >= 32768)
    for (std::int64_t t = 0; t < tasks; ++t) {
        const std::size_t b = static_cast<std::size_t>(t) / groups, group = static_cast<std::size_t>(t) % groups;
        const std::size_t begin = b * host_reduce_block;
        const std::size_t end = begin + host_reduce_block < length ? begin + host_reduce_block : length;
        if constexpr (k != 0) accumulate_chunks<Op, Axes, k>(&partial[b * rows + group * k], in, group * k, begin, end);
        else accumulate_rows<Op, Axes>(&partial[b * rows], in, begin, end);
    }
    for (std::size_t j = 0; j < rows; ++j) {
        accumulator acc = partial[j];
        for (std::size_t b = 1; b < blocks; ++b) acc = op(acc, partial[b * rows + j]);
        dst.store(static_cast<index_for<rows>>(j), Op::finalize(acc, static_cast<long long>(length)));
    }
}

template <class Op, class Axes, class Dst, class In>
void host_reduce(const Dst& dst, const In& in)
{
    constexpr std::size_t rows = Axes::rows, length = Axes::row_length;
    if constexpr (rows == 1 && length > host_reduce_block) {
        constexpr std::size_t blocks = (length + host_reduce_block - 1) / host_reduce_block;
        // (not std::vector: a bool accumulator would pack neighbouring blocks' results into one word)
        const std::unique_ptr<typename Op::accumulator[]> partial(new typename Op::accumulator[blocks]);
        TENET_OMP_PARALLEL_FOR_IF(blocks > 1)
        for (std::size_t b = 0; b < blocks; ++b) {
            const std::size_t end = (b + 1) * host_reduce_block < length ? (b + 1) * host_reduce_block : length;
            partial[b] = host_reduce_row<Op, Axes>(in, 0, b * host_reduce_block, end);
        }
        typename Op::accumulator acc = Op::identity();
        for (std::size_t b = 0; b < blocks; ++b) acc = Op{}(acc, partial[b]);
        dst.store(0u, Op::finalize(acc, static_cast<long long>(length)));
    } else if constexpr (rows > 1 && (side_by_side_chunk<Axes, In> != 0 ||
                                      (rows <= host_side_by_side_rows && length >= host_reduce_block))) {
        // (a column reduction read in chunks, however short or wide: contiguous
        // vectors beat rows split across cores, each a strided walk)
        host_reduce_side_by_side<Op, Axes>(dst, in);
    } else {
        host_for_rows<rows, length>([&](std::size_t row) {
            dst.store(static_cast<index_for<rows>>(row),
                      Op::finalize(host_reduce_row<Op, Axes>(in, row, 0, length), static_cast<long long>(length)));
        });
    }
}

}  // namespace tenet::detail::reduce
