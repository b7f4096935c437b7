// The host backend: one loop nest over the destination's elements, split
// across cores with OpenMP, evaluating chunks of K elements so that the
// compiler can vectorise the inner work. Several destinations are written in
// the same traversal.
#pragma once

#include "../expr/node.hpp"

#include <cstddef>
#include <utility>

namespace tenet::detail {

// Elements per chunk on the host: 32 bytes of the narrowest element (AVX2).
template <std::size_t Smallest>
inline constexpr std::size_t host_chunk = Smallest >= 32 ? 1 : 32 / Smallest;

template <std::size_t N, std::size_t K, class Dsts, class Srcs, std::size_t... I>
void host_elementwise(const Dsts& dsts, const Srcs& srcs, std::index_sequence<I...>)
{
    using index = index_for<N>;
    constexpr index chunks = N / K;
    TENET_OMP_PARALLEL_FOR_IF(N >= 32768)
    for (index c = 0; c != chunks; ++c) {
        const index i = c * K;
        const auto values = make_value_pack(get<I>(srcs).template chunk<K>(i)...);  // all reads before any write
        (get<I>(dsts).template store_chunk<K>(i, get<I>(values)), ...);
    }
    for (index i = chunks * K; i != N; ++i) {
        const auto values = make_value_pack(get<I>(srcs).at(i)...);
        (get<I>(dsts).store(i, get<I>(values)), ...);
    }
}

}  // namespace tenet::detail
