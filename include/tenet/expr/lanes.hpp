// Evaluating K consecutive elements lane by lane: the host's chunk walk.
//
// load_lanes<K>(e, i) reads what e's leaves hold for elements i..i+K-1, once
// each: a vector where a leaf's chunk is contiguous, one value where it is
// the same for the whole chunk (a broadcast operand, a scalar). lane(e,
// loads, k) then applies e's operation tree to lane k of those loads, in
// registers. evaluate_lanes<K> runs lane() for k = 0..K-1 in one loop, so
// the compiler vectorises the whole tree across the lanes: comparisons stay
// masks and selects become blends. Evaluating chunk<K>() node by node
// instead hands every intermediate vec (a vec<bool, K> among them) through
// memory, where g++ turns the selects into branches.
//
// Maps and views are walked, generators computed lane by lane; any other
// evaluator is a leaf of the walk and loads through its own chunk<K>().
#pragma once

#include "../tensor/leaf.hpp"
#include "map.hpp"
#include "remap.hpp"
#include "scalar.hpp"

#include <cstddef>
#include <type_traits>
#include <utility>

namespace tenet::detail::expr {

template <class E>
struct is_map_eval : std::false_type {};
template <class Op, class... Es>
struct is_map_eval<map_eval<Op, Es...>> : std::true_type {};

template <class E>
struct is_remap_eval : std::false_type {};
template <class Ev, class L>
struct is_remap_eval<remap_eval<Ev, L>> : std::true_type {};

template <class E>
struct is_scalar_eval : std::false_type {};
template <class V>
struct is_scalar_eval<scalar_eval<V>> : std::true_type {};

// generator_eval (generator.hpp, which includes the tensor headers that
// include this one): no memory, values from the index alone.
template <class E>
struct is_generator_eval
    : std::bool_constant<std::is_base_of_v<memoryless_eval, E> && requires(const E& e) { e.generate(0ull); }> {};

template <class E>
struct is_leaf_eval : std::false_type {};
template <class T, class L>
struct is_leaf_eval<leaf_eval<T, L>> : std::true_type {};

// One value for every lane.
template <class V>
struct uniform_lanes {
    V value;
};

// K consecutive elements in memory, read lane by lane (a vector load once
// the loop is vectorised; a copy into a vec first would be K scalar stores
// and a vector load that cannot take them from the store buffer).
template <class V, class T>
struct contiguous_lanes {
    const T* first;
};

// Values computed from the index (a generator: dropout's mask), computed in
// the lane loop itself, which then vectorises them with the rest of the tree.
template <class G, class Index>
struct generated_lanes {
    G generate;
    Index first;
};

template <class V, std::size_t K>
TENET_HD V lane_of(const vec<V, K>& loaded, std::size_t k)
{
    return loaded[k];
}
template <class V>
TENET_HD V lane_of(const uniform_lanes<V>& loaded, std::size_t)
{
    return loaded.value;
}
template <class G, class Index>
TENET_HD auto lane_of(const generated_lanes<G, Index>& loaded, std::size_t k)
{
    return loaded.generate(static_cast<unsigned long long>(loaded.first) + k);
}
template <class V, class T>
TENET_HD V lane_of(const contiguous_lanes<V, T>& loaded, std::size_t k)
{
    return convert<V>(internal::load_input(loaded.first + k));
}

// What the lane walk enters or loads itself; other evaluators load
// through their own chunk<K>().
template <class E>
inline constexpr bool lane_walked =
    is_map_eval<E>::value || is_remap_eval<E>::value || is_leaf_eval<E>::value || is_scalar_eval<E>::value ||
    is_generator_eval<E>::value;

// A view or tensor whose K-chunks read as `access` (vector: K consecutive
// elements of its operand or memory; uniform: one element).
template <class E, std::size_t K, chunk_access access>
constexpr bool reads_chunks_as()
{
    if constexpr (is_remap_eval<E>::value || is_leaf_eval<E>::value) return E::map::template chunk<K> == access;
    else return false;
}

// A contiguous leaf the lane loop reads from memory itself. f16 and fp8
// leaves are converted in a loop of their own first (converts_apart in
// tensor/leaf.hpp): inlined into the lane loop, their conversions keep it
// from vectorising.
template <class E, std::size_t K>
constexpr bool read_in_lanes()
{
    if constexpr (is_leaf_eval<E>::value) return E::map::template chunk<K> == chunk_access::vector && !E::converts_apart;
    else return false;
}

template <std::size_t K, class E, class Index>
TENET_HD auto load_lanes(const E& e, Index i);

template <std::size_t K, class E, class Index, std::size_t... J>
TENET_HD auto load_operand_lanes(const E& e, Index i, std::index_sequence<J...>)
{
    return make_value_pack(load_lanes<K>(get<J>(e.operands), i)...);
}

template <std::size_t K, class E, class Index>
TENET_HD auto load_lanes(const E& e, Index i)
{
    if constexpr (is_map_eval<E>::value) {
        return load_operand_lanes<K>(e, i, std::make_index_sequence<decltype(e.operands)::size>{});
    } else if constexpr (is_remap_eval<E>::value && reads_chunks_as<E, K, chunk_access::vector>()) {
        return load_lanes<K>(e.operand, E::map::offset(i));
    } else if constexpr (read_in_lanes<E, K>()) {
        return contiguous_lanes<typename E::value_type, typename E::element_type>{e.data + E::map::offset(i)};
    } else if constexpr (reads_chunks_as<E, K, chunk_access::uniform>()) {
        return uniform_lanes<typename E::value_type>{e.at(i)};
    } else if constexpr (is_scalar_eval<E>::value) {
        return uniform_lanes<typename E::value_type>{e.value};
    } else if constexpr (is_generator_eval<E>::value) {
        return generated_lanes<decltype(e.generate), Index>{e.generate, i};
    } else {
        return e.template chunk<K>(i);
    }
}

template <std::size_t K, class E, class Loads>
TENET_HD typename E::value_type lane(const E& e, const Loads& loads, std::size_t k);

template <std::size_t K, class E, class Loads, std::size_t... J>
TENET_HD typename E::value_type lane_of_map(const E& e, const Loads& loads, std::size_t k, std::index_sequence<J...>)
{
    return e.op(lane<K>(get<J>(e.operands), get<J>(loads), k)...);
}

template <std::size_t K, class E, class Loads>
TENET_HD typename E::value_type lane(const E& e, const Loads& loads, std::size_t k)
{
    if constexpr (is_map_eval<E>::value) return lane_of_map<K>(e, loads, k, std::make_index_sequence<decltype(e.operands)::size>{});
    else if constexpr (is_remap_eval<E>::value && reads_chunks_as<E, K, chunk_access::vector>()) return lane<K>(e.operand, loads, k);
    else return lane_of(loads, k);
}

// Elements i..i+K-1 of e: on the host the tree applied lane by lane; on the
// device chunk<K>(), whose contiguous leaves load as 16-byte vectors (a
// thread's lanes are registers there, and no loop vectorises).
template <std::size_t K, class E, class Index>
TENET_HD vec<typename E::value_type, K> evaluate_lanes(const E& e, Index i)
{
#if TENET_DEVICE_PASS
    return e.template chunk<K>(i);
#else
    if constexpr (!lane_walked<E>) {
        return e.template chunk<K>(i);  // nothing to apply lane by lane
    } else {
        const auto loads = load_lanes<K>(e, i);
        vec<typename E::value_type, K> r;
TENET_SIMD_LOOP
        for (std::size_t k = 0; k < K; ++k) r[k] = lane<K>(e, loads, k);
        return r;
    }
#endif
}

}  // namespace tenet::detail::expr

// For the folders above this one (see docs/ARCHITECTURE.md, "Namespaces").
namespace tenet::internal {
using detail::expr::evaluate_lanes;
using detail::expr::is_map_eval;
using detail::expr::is_remap_eval;
}  // namespace tenet::internal
