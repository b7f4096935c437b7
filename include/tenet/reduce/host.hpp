// Reductions on the host. Each output row is accumulated in order; rows are
// split across cores by the row engine (host_for_rows). A full reduction is
// split into fixed blocks whose partial results are combined in order, so
// the answer does not depend on the number of threads.
#pragma once

#include "../config.hpp"
#include "../shape/layout.hpp"
#include "row_engine.hpp"

#include <cstddef>
#include <vector>

namespace tenet::detail::reduce {

inline constexpr std::size_t host_reduce_block = 4096;

template <class Op, class Axes, class In>
typename Op::accumulator host_reduce_row(const In& in, std::size_t row, std::size_t begin, std::size_t end)
{
    using map = index_map<typename Axes::layout>;
    using index = index_for<Axes::layout::shape::numel>;
    const Op op{};
    typename Op::accumulator acc = Op::identity();
    for (std::size_t r = begin; r != end; ++r)
        acc = op(acc, Op::lift(in.at(map::offset(static_cast<index>(row * Axes::row_length + r))),
                               static_cast<long long>(r)));
    return acc;
}

template <class Op, class Axes, class Dst, class In>
void host_reduce(const Dst& dst, const In& in)
{
    constexpr std::size_t rows = Axes::rows, length = Axes::row_length;
    if constexpr (rows == 1 && length > host_reduce_block) {
        constexpr std::size_t blocks = (length + host_reduce_block - 1) / host_reduce_block;
        std::vector<typename Op::accumulator> partial(blocks);
        TENET_OMP_PARALLEL_FOR_IF(blocks > 1)
        for (std::size_t b = 0; b < blocks; ++b) {
            const std::size_t end = (b + 1) * host_reduce_block < length ? (b + 1) * host_reduce_block : length;
            partial[b] = host_reduce_row<Op, Axes>(in, 0, b * host_reduce_block, end);
        }
        typename Op::accumulator acc = Op::identity();
        for (const auto& p : partial) acc = Op{}(acc, p);
        dst.store(0u, Op::finalize(acc, static_cast<long long>(length)));
    } else {
        host_for_rows<rows, length>([&](std::size_t row) {
            dst.store(static_cast<index_for<rows>>(row),
                      Op::finalize(host_reduce_row<Op, Axes>(in, row, 0, length), static_cast<long long>(length)));
        });
    }
}

}  // namespace tenet::detail::reduce
