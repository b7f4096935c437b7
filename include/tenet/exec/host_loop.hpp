// The host backend: one loop nest over the destination's elements -- blocks
// split across cores with OpenMP, and within a block a simple loop the
// compiler vectorises (contiguous operands load as vectors, branch-free
// operations become blends, math functions call glibc's SIMD versions).
// Where an operand is broadcast along the rows (a per-channel vector, read
// at i % C), a block is walked in chunks of host_chunk elements instead
// (tensor/expression.hpp, host_walk), the tree applied lane by lane
// (expr/lanes.hpp): the broadcast operand is then one vector load, not a gather.
// Several destinations are written in the same traversal (in chunks too when
// an operand asks for them: all of a chunk's reads before its writes).
#pragma once

#include "../expr/lanes.hpp"
#include "../expr/node.hpp"

#include <cstddef>
#include <type_traits>
#include <utility>

namespace tenet::detail::exec {

inline constexpr std::size_t host_block = 4096;
inline constexpr std::size_t host_chunk = 16;  // a 64-byte line of f32

template <class... E>
inline constexpr bool host_walks_chunks = internal::host_walk_of_all<host_chunk, E...>() == internal::host_walk::chunks;

template <class Dsts, class Srcs, std::size_t... I>
inline constexpr bool host_walks_chunks_all =
    host_walks_chunks<std::remove_cvref_t<decltype(get<I>(std::declval<const Dsts&>()))>...,
                      std::remove_cvref_t<decltype(get<I>(std::declval<const Srcs&>()))>...>;

// Several destinations over [begin, end), element by element.
template <class Dsts, class Srcs, class Index, std::size_t... I>
void host_store_each(const Dsts& out, const Srcs& in, Index begin, Index end, std::index_sequence<I...>)
{
    for (Index i = begin; i < end; ++i) {
        const auto values = make_value_pack(get<I>(in).at(i)...);  // all reads before any write
        (get<I>(out).store(i, get<I>(values)), ...);
    }
}

template <std::size_t N, class Dsts, class Srcs, std::size_t... I>
void host_elementwise(const Dsts& dsts, const Srcs& srcs, std::index_sequence<I...>)
{
    using index = index_for<N>;
    // Blocks of host_block reads: an element that reads 8 (a ReLU mask's
    // byte) makes 8 times smaller blocks, and the loop splits sooner.
    constexpr index reads = internal::host_reads_per_element_of<std::remove_cvref_t<decltype(get<I>(srcs))>...>();
    constexpr index block = (host_block / reads + host_chunk - 1) / host_chunk * host_chunk;
    constexpr index blocks = (N + block - 1) / block;
    TENET_OMP_PARALLEL_FOR_IF(N * reads >= 8 * host_block && blocks > 1)
    for (index b = 0; b < blocks; ++b) {
        // Private copies: the compiler then knows the stores below cannot
        // change the evaluators, and keeps their pointers in registers.
        const Dsts out = dsts;
        const Srcs in = srcs;
        const index begin = b * block, end = begin + block < N ? begin + block : N;
        if constexpr (sizeof...(I) == 1 && host_walks_chunks<decltype(Dsts::head), decltype(Srcs::head)>) {
            constexpr index k = host_chunk;
            const index chunked = begin + (end - begin) / k * k;
            for (index i = begin; i < chunked; i += k)
                out.head.template store_chunk<k>(i, internal::evaluate_lanes<k>(in.head, i));
            for (index i = chunked; i < end; ++i) out.head.store(i, in.head.at(i));
        } else if constexpr (sizeof...(I) == 1) {
            TENET_SIMD_LOOP
            for (index i = begin; i < end; ++i) out.head.store(i, in.head.at(i));
        } else if constexpr (host_walks_chunks_all<Dsts, Srcs, I...>) {
            constexpr index k = host_chunk;
            const index chunked = begin + (end - begin) / k * k;
            for (index i = begin; i < chunked; i += k) {
                const auto values = make_value_pack(internal::evaluate_lanes<k>(get<I>(in), i)...);  // all reads first
                (get<I>(out).template store_chunk<k>(i, get<I>(values)), ...);
            }
            host_store_each(out, in, chunked, end, std::index_sequence<I...>{});
        } else {
            host_store_each(out, in, begin, end, std::index_sequence<I...>{});
        }
    }
}

}  // namespace tenet::detail::exec
