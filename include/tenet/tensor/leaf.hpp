// leaf_eval: the evaluator of a tensor or view -- a pointer and a static
// layout. It loads (inputs) and stores (destinations) single elements and
// K-element chunks, converting between the storage and compute types with
// tenet::convert.
#pragma once

#include "../memory/access.hpp"
#include "../memory/converting_chunks.hpp"
#include "../numeric/compute.hpp"
#include "../numeric/convert.hpp"
#include "../numeric/vec.hpp"
#include "../shape/layout.hpp"
#include "expression.hpp"

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace tenet::detail::tensor {

template <class T, class L>
struct leaf_eval {
    using element_type = std::remove_const_t<T>;
    using value_type = compute_t<element_type>;
    using layout = L;
    using map = index_map<L>;

    T* data;

    template <class Index>
    TENET_HD value_type at(Index i) const
    {
        return convert<value_type>(internal::load_input(data + map::offset(i)));
    }

    template <std::size_t K, class Index>
    TENET_HD vec<value_type, K> chunk(Index i) const
    {
        constexpr chunk_access access = map::template chunk<K>;
        vec<value_type, K> r;
        if constexpr (access == chunk_access::vector) {
            r = internal::load_chunk_as<value_type, K>(data + map::offset(i));
        } else if constexpr (access == chunk_access::uniform) {
            r = splat<K>(at(i));
        } else if constexpr (converts_apart) {
            element_type raw[K];  // gathered as stored, then converted in one go
TENET_UNROLL
            for (std::size_t k = 0; k < K; ++k) raw[k] = internal::load_input(data + map::offset(static_cast<Index>(i + k)));
            r = internal::load_chunk_as<value_type, K>(raw);
        } else {
            r = chunk_by_elements<K>(*this, i);
        }
        return r;
    }

    template <class Index, class V>
    TENET_HD void store(Index i, V value) const
    {
        data[map::offset(i)] = convert<element_type>(value);
    }

    template <std::size_t K, class Index, class V>
    TENET_HD void store_chunk(Index i, const vec<V, K>& values) const
    {
        if constexpr (map::template chunk<K> == chunk_access::vector) {
            internal::store_chunk_as<K>(data + map::offset(i), values);
        } else {
TENET_UNROLL
            for (std::size_t k = 0; k < K; ++k) store(static_cast<Index>(i + k), values[k]);
        }
    }

    // Host side, before a launch: can chunks of K use vector accesses?
    template <std::size_t K>
    bool aligned() const
    {
        if constexpr (map::template chunk<K> != chunk_access::vector) return true;
        else return reinterpret_cast<std::uintptr_t>(data) % internal::chunk_alignment<K, element_type> == 0;
    }

    static constexpr std::size_t smallest_element = sizeof(T);
    static constexpr bool converts_apart = narrow_floating<element_type> && !std::is_same_v<element_type, bf16>;

    // Chunks pay where the element loop would gather: a broadcast or
    // another strided layout whose K-chunks are vector loads or one value.
    // They pay too for f16 and fp8 storage, in any layout: their
    // conversions are long bit-level routines, and inlined into a loop with
    // the expression g++ threads their selects into branches and leaves the
    // loop scalar; a chunk converts in a loop of its own (an f16 ReLU of
    // [200704, 32]: 36 ms element by element, 0.29 ms in chunks with F16C).
    template <std::size_t K>
    static constexpr host_walk host_walk_for =
        converts_apart ? host_walk::chunks
        : map::contiguous ? host_walk::either
        : map::template chunk<K> == chunk_access::gather ? host_walk::elements
                                                          : host_walk::chunks;

    // Calls f(leaf, direct) for every leaf; direct is false under a view node
    // that re-indexes (aliasing checks need to know).
    template <class F>
    void visit_leaves(F&& f, bool direct) const
    {
        f(*this, direct);
    }

    // Bytes [first, last) this leaf can touch.
    const void* first_byte() const { return data + L::offset; }
    const void* last_byte() const { return data + L::max_offset + 1; }
};

}  // namespace tenet::detail::tensor

namespace tenet {
using detail::tensor::leaf_eval;
}  // namespace tenet
