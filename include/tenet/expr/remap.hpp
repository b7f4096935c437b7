// remap_expr: a view (transpose, slice, broadcast, reshape, ...) of an
// expression that is not a plain tensor: element i of the view is element
// index_map<L>::offset(i) of the operand. Views of tensors never need it --
// they become new static layouts over the same memory.
#pragma once

#include "../shape/layout.hpp"
#include "node.hpp"

namespace tenet::detail::expr {

template <class Eval, class L>
struct remap_eval : reads_evaluators<remap_eval<Eval, L>> {
    using value_type = typename Eval::value_type;
    using map = index_map<L>;
    Eval operand;

    template <class Index>
    TENET_HD value_type at(Index i) const
    {
        return operand.at(map::offset(i));
    }

    template <std::size_t K, class Index>
    TENET_HD vec<value_type, K> chunk(Index i) const
    {
        constexpr chunk_access access = map::template chunk<K>;
        if constexpr (access == chunk_access::vector) {
            return operand.template chunk<K>(map::offset(i));
        } else if constexpr (access == chunk_access::uniform) {
            return splat<K>(at(i));
        } else {
            return chunk_by_elements<K>(*this, i);
        }
    }

    template <std::size_t K>
    bool aligned() const
    {
        return map::template chunk<K> != chunk_access::vector || operand.template aligned<K>();
    }

    // Leaves below a re-indexing view are not read at the destination's index.
    static constexpr bool reads_at_own_index = map::contiguous && L::offset == 0;
    auto reads() const { return make_value_pack(operand); }

    static constexpr std::size_t smallest_element = Eval::smallest_element;

    // As a tensor view's (tensor/leaf.hpp), and then as its operand's.
    template <std::size_t K>
    static constexpr internal::host_walk host_walk_for = [] {
        if constexpr (map::template chunk<K> == chunk_access::gather) return internal::host_walk::elements;
        else if constexpr (map::contiguous) return internal::host_walk_of<Eval, K>();
        else if constexpr (internal::host_walk_of<Eval, K>() == internal::host_walk::elements) return internal::host_walk::elements;
        else return internal::host_walk::chunks;
    }();
};

template <class E, class L>
struct remap_expr {
    using shape = typename L::shape;
    using value_type = typename E::value_type;
    using place = typename E::place;
    E operand;

    template <class Context>
    auto prepare(Context& context) const
    {
        using operand_eval = decltype(operand.prepare(context));
        return remap_eval<operand_eval, L>{{}, operand.prepare(context)};
    }
};

}  // namespace tenet::detail::expr

// For the folders above this one (see docs/ARCHITECTURE.md, "Namespaces").
namespace tenet::internal {
using detail::expr::remap_eval;
using detail::expr::remap_expr;
}  // namespace tenet::internal
