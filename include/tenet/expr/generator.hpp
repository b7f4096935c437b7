// generator_expr: values computed from the index alone (iota, random
// numbers). No memory is read; any place can use it.
#pragma once

#include "../memory/place.hpp"
#include "../tensor/tensor.hpp"
#include "node.hpp"
#include "scalar.hpp"

#include <cstdint>

namespace tenet::detail::expr {

template <class G>
struct generator_eval : memoryless_eval {
    using value_type = typename G::value_type;
    G generate;

    template <class Index>
    TENET_HD value_type at(Index i) const
    {
        return generate(static_cast<unsigned long long>(i));
    }
    template <std::size_t K, class Index>
    TENET_HD vec<value_type, K> chunk(Index i) const
    {
        vec<value_type, K> r;
TENET_CHUNK_LOOP
        for (std::size_t k = 0; k < K; ++k) r[k] = generate(static_cast<unsigned long long>(i) + k);
        return r;
    }

    // No memory read: the walk the rest of the expression needs (dropout
    // over f16 storage then converts in chunks, not element by element).
    template <std::size_t K>
    static constexpr internal::host_walk host_walk_for = internal::host_walk::either;
};

// Place: AnyPlace, or the place of memory the generator reads when it runs.
template <class G, class S, class Place = AnyPlace>
struct generator_expr {
    using shape = S;
    using value_type = typename G::value_type;
    using place = Place;
    G generate;

    template <class Context>
    generator_eval<G> prepare(Context&) const
    {
        return {{}, generate};
    }
};

template <class V>
struct iota_generator {
    using value_type = V;
    V start, step;
    TENET_HD V operator()(unsigned long long i) const
    {
        if constexpr (std::is_same_v<V, i32>)
            return static_cast<i32>(static_cast<std::uint32_t>(start) + static_cast<std::uint32_t>(step) * static_cast<std::uint32_t>(i));
        else
            return start + step * static_cast<V>(i);
    }
};

}  // namespace tenet::detail::expr

// For the folders above this one (see docs/ARCHITECTURE.md, "Namespaces").
namespace tenet::internal {
using detail::expr::generator_expr;
}  // namespace tenet::internal
