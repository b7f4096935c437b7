// The backward pass at one element, inside the fused kernel.
//
// backward_eval evaluates, at element i, the forward tree once, keeping every
// node's value in registers (a tape: value_packs mirroring the tree), then
// walks the tree top-down with the adjoint, applying each operation's rule
// (derivatives.hpp); var<I> leaves add what reaches them into gradient slot
// I. Its value at i is the pack of all slots -- every gradient from one
// forward evaluation and one load of each leaf.
//
// The tree is the forward expression's own evaluator. Subtrees that hold no
// variable are constants: evaluated as usual, never walked. Each variable is
// loaded ONCE per element however often it occurs: all occurrences of var<I>
// read the same tensor (checked) at the same element -- the element that
// broadcasting var<I>'s shape to the expression's puts there -- so the
// evaluator loads it through that broadcast layout and every occurrence takes
// its value from there. A broadcast view of a subtree holding variables
// (remap_eval) passes the adjoint straight through: the slots are indexed by
// the expression's element, and gradients.hpp sums a broadcast variable's
// slot over its broadcast axes afterwards. Nodes whose value is not
// floating (comparisons, ...) are evaluated but pass no gradient.
//
// Chunks of K elements load every leaf's chunk first (16-byte loads where
// the layout allows), then run the scalar forward and backward K times.
#pragma once

#include "../expr/lanes.hpp"
#include "../expr/map.hpp"
#include "../expr/remap.hpp"
#include "../expr/views.hpp"
#include "../tensor/tensor.hpp"
#include "derivatives.hpp"
#include "variable.hpp"

#include <cstddef>
#include <type_traits>
#include <utility>

namespace tenet::detail::ad {

using internal::is_map_eval;
using internal::is_remap_eval;

template <class Op>
struct gradients_no_derivative_rule_give_the_functor_a_derivative_member {
    static constexpr auto text()
    {
        return fixed_string("tenet: gradients: no derivative rule for ") + internal::op_name<Op>() +
               fixed_string(" (a functor given to tenet::map differentiates itself with a derivative<J>(x...) member)");
    }
};

// Does a gradient reach a variable through this evaluator?
template <class E>
struct differentiable : std::false_type {};
template <std::size_t I, class Leaf>
struct differentiable<var_eval<I, Leaf>> : std::true_type {};
template <class Ev, class L>
struct differentiable<internal::remap_eval<Ev, L>> : differentiable<Ev> {};

template <class Op, class... Es, std::size_t... J>
constexpr bool any_operand_flows(std::index_sequence<J...>)
{
    using R = rule_for<Op, typename Es::value_type...>;
    return ((R::template flows<J> && differentiable<Es>::value) || ...);
}

template <class Op, class... Es>
constexpr bool map_differentiable()
{
    if constexpr (!is_floating_v<typename internal::map_eval<Op, Es...>::value_type> || !(differentiable<Es>::value || ...)) {
        return false;
    } else {
        constexpr bool defined = rule_for<Op, typename Es::value_type...>::defined;
        static_assert(diagnose<defined, gradients_no_derivative_rule_give_the_functor_a_derivative_member<Op>>::value);
        if constexpr (defined) return any_operand_flows<Op, Es...>(std::index_sequence_for<Es...>{});
        else return false;
    }
}

template <class Op, class... Es>
struct differentiable<internal::map_eval<Op, Es...>> : std::bool_constant<map_differentiable<Op, Es...>()> {};

// Does the evaluator read a variable?
template <class E>
struct holds_variable : std::false_type {};
template <std::size_t I, class Leaf>
struct holds_variable<var_eval<I, Leaf>> : std::true_type {};
template <class Ev, class L>
struct holds_variable<internal::remap_eval<Ev, L>> : holds_variable<Ev> {};
template <class Op, class... Es>
struct holds_variable<internal::map_eval<Op, Es...>> : std::bool_constant<(holds_variable<Es>::value || ...)> {};

// The operand positions of a map_eval E.
template <class E>
inline constexpr auto operands_of = std::make_index_sequence<decltype(E::operands)::size>{};

// Nodes the forward walk enters; every other evaluator is a leaf of the walk
// (variables are leaves whose value comes from the shared loads).
template <class E>
inline constexpr bool walked = holds_variable<E>::value && (is_map_eval<E>::value || is_remap_eval<E>::value);

// What the per-occurrence loads hold for a variable: nothing (see above).
struct shared_variable {};

// Variable I read at the expression's elements: its tensor, through its
// layout broadcast to the expression's shape.
template <class VarNode, class Shape>
using variable_leaf_t = leaf_eval<const typename VarNode::operand_type::element_type,
                                  layout_from_t<internal::transformed<internal::broadcast_transform<Shape>,
                                                            typename VarNode::operand_type::layout>>>;

// Tapes: a node's forward value, and its operands' tapes.
template <class V>
struct leaf_tape {
    V value;
};
template <class V, class Children>
struct node_tape {
    V value;
    Children children;
};

// A remap's K gathered operand loads (its chunk is not contiguous).
template <class Loaded, std::size_t K>
struct gathered {
    Loaded parts[K];
};

template <class T>
struct is_gathered : std::false_type {};
template <class Loaded, std::size_t K>
struct is_gathered<gathered<Loaded, K>> : std::true_type {};

template <class V, std::size_t K>
TENET_HD V pick(const vec<V, K>& loaded, std::size_t k)
{
    return loaded[k];
}
template <class V>
TENET_HD V pick(const V& loaded, std::size_t)
{
    return loaded;
}

// --- loading: every leaf of the walk, once -------------------------------

template <class E, class Index>
TENET_HD auto load_at(const E& e, Index i);

template <class Op, class... Es, class Index, std::size_t... J>
TENET_HD auto load_operands_at(const internal::map_eval<Op, Es...>& e, Index i, std::index_sequence<J...>)
{
    return make_value_pack(load_at(get<J>(e.operands), i)...);
}

template <class E, class Index>
TENET_HD auto load_at(const E& e, Index i)
{
    if constexpr (is_var_eval<E>::value) return shared_variable{};
    else if constexpr (!walked<E>) return e.at(i);
    else if constexpr (is_map_eval<E>::value) return load_operands_at(e, i, operands_of<E>);
    else return load_at(e.operand, E::map::offset(i));
}

template <std::size_t K, class E, class Index>
TENET_HD auto load_chunk(const E& e, Index i);

template <std::size_t K, class Op, class... Es, class Index, std::size_t... J>
TENET_HD auto load_operands_chunk(const internal::map_eval<Op, Es...>& e, Index i, std::index_sequence<J...>)
{
    return make_value_pack(load_chunk<K>(get<J>(e.operands), i)...);
}

template <std::size_t K, class E, class Index>
TENET_HD auto load_remap_chunk(const E& e, Index i)
{
    constexpr chunk_access access = E::map::template chunk<K>;
    if constexpr (access == chunk_access::vector) {
        return load_chunk<K>(e.operand, E::map::offset(i));
    } else if constexpr (access == chunk_access::uniform) {
        return load_at(e.operand, E::map::offset(i));  // one element for the whole chunk
    } else {
        gathered<decltype(load_at(e.operand, E::map::offset(i))), K> r;
TENET_UNROLL
        for (std::size_t k = 0; k < K; ++k) r.parts[k] = load_at(e.operand, E::map::offset(static_cast<Index>(i + k)));
        return r;
    }
}

template <std::size_t K, class E, class Index>
TENET_HD auto load_chunk(const E& e, Index i)
{
    if constexpr (is_var_eval<E>::value) return shared_variable{};
    else if constexpr (!walked<E>) return e.template chunk<K>(i);
    else if constexpr (is_map_eval<E>::value) return load_operands_chunk<K>(e, i, operands_of<E>);
    else return load_remap_chunk<K>(e, i);
}

// --- forward: the tape of element k of what was loaded --------------------
// (variables: element k of the shared loads)

template <class E, class Loaded, class Variables>
TENET_HD auto forward(const E& e, const Loaded& loaded, std::size_t k, const Variables& variables);

template <class Op, class... Es, class Loaded, class Variables, std::size_t... J>
TENET_HD auto forward_map(const internal::map_eval<Op, Es...>& e, const Loaded& loaded, std::size_t k, const Variables& variables,
                          std::index_sequence<J...>)
{
    const auto children = make_value_pack(forward(get<J>(e.operands), get<J>(loaded), k, variables)...);
    using V = typename internal::map_eval<Op, Es...>::value_type;
    return node_tape<V, decltype(children)>{e.op(get<J>(children).value...), children};
}

template <class E, class Loaded, class Variables>
TENET_HD auto forward(const E& e, const Loaded& loaded, std::size_t k, const Variables& variables)
{
    using V = typename E::value_type;
    if constexpr (is_var_eval<E>::value) return leaf_tape<V>{pick(get<E::index>(variables), k)};
    else if constexpr (!walked<E>) return leaf_tape<V>{pick(loaded, k)};
    else if constexpr (is_map_eval<E>::value) return forward_map(e, loaded, k, variables, operands_of<E>);
    else if constexpr (is_gathered<Loaded>::value) return forward(e.operand, loaded.parts[k], k, variables);
    else return forward(e.operand, loaded, k, variables);
}

// --- backward: the adjoint, top-down, into the slots ----------------------

// Mutable access to a value_pack member (node.hpp's get is read-only).
template <std::size_t I, class Head, class... Tail>
TENET_HD constexpr auto& slot(value_pack<Head, Tail...>& p)
{
    if constexpr (I == 0) return p.head;
    else return slot<I - 1>(p.tail);
}

template <class E, class Tape, class G, class Slots>
TENET_HD void backward(const E& e, const Tape& tape, G g, Slots& slots);

template <std::size_t J, class Op, class... Es, class Tape, class G, class Slots, std::size_t... All>
TENET_HD void backward_operand(const internal::map_eval<Op, Es...>& e, const Tape& tape, G g, Slots& slots,
                               std::index_sequence<All...>)
{
    using operand = std::tuple_element_t<J, std::tuple<Es...>>;
    using R = rule_for<Op, typename Es::value_type...>;
    if constexpr (R::template flows<J> && differentiable<operand>::value) {
        const G adjoint = R::template adjoint<J>(e.op, g, tape.value, get<All>(tape.children).value...);
        backward(get<J>(e.operands), get<J>(tape.children), convert<typename operand::value_type>(adjoint), slots);
    }
}

template <class Op, class... Es, class Tape, class G, class Slots, std::size_t... J>
TENET_HD void backward_map(const internal::map_eval<Op, Es...>& e, const Tape& tape, G g, Slots& slots,
                          std::index_sequence<J...> all)
{
    (backward_operand<J>(e, tape, g, slots, all), ...);
}

template <class E, class Tape, class G, class Slots>
TENET_HD void backward(const E& e, const Tape& tape, G g, Slots& slots)
{
    if constexpr (is_var_eval<E>::value) slot<E::index>(slots) += g;
    else if constexpr (!differentiable<E>::value) return;  // (only ever the root: operands are checked first)
    else if constexpr (is_map_eval<E>::value) backward_map(e, tape, g, slots, operands_of<E>);
    else backward(e.operand, tape, g, slots);
}

// --- the evaluator ---------------------------------------------------------

// Forward: the expression's evaluator; Dy: the upstream gradient's, of the
// same shape; Variables: a value_pack of each variable's leaf at the
// expression's elements (variable_leaf_t); S...: the slot types (variable
// I's compute type).
template <class Forward, class Dy, class Variables, class... S>
struct backward_eval : reads_evaluators<backward_eval<Forward, Dy, Variables, S...>> {
    using value_type = value_pack<S...>;
    using adjoint_type = typename Forward::value_type;

    Forward expression;
    Dy upstream;
    Variables variables;

    template <class Index>
    TENET_HD value_type at(Index i) const
    {
        const auto shared = load_variables_at(i, std::index_sequence_for<S...>{});
        value_type slots{};
        backward(expression, forward(expression, load_at(expression, i), 0, shared),
                 convert<adjoint_type>(upstream.at(i)), slots);
        return slots;
    }

    template <std::size_t K, class Index>
    TENET_HD value_pack<vec<S, K>...> chunk(Index i) const
    {
        // all reads first
        const auto shared = load_variable_chunks<K>(i, std::index_sequence_for<S...>{});
        const auto loaded = load_chunk<K>(expression, i);
        const auto dy = upstream.template chunk<K>(i);
        value_pack<vec<S, K>...> r;
TENET_UNROLL
        for (std::size_t k = 0; k < K; ++k) {
            value_type slots{};
            backward(expression, forward(expression, loaded, k, shared), convert<adjoint_type>(dy[k]), slots);
            scatter(r, slots, k, std::index_sequence_for<S...>{});
        }
        return r;
    }

    template <std::size_t K>
    bool aligned() const
    {
        return expression.template aligned<K>() && upstream.template aligned<K>() && all_aligned<K>(variables);
    }

    // the variables are leaves of the expression: visited there
    auto reads() const { return make_value_pack(expression, upstream); }

    static constexpr std::size_t smallest_element = internal::smallest_element_of<Forward, Dy>;

private:
    template <class Index, std::size_t... I>
    TENET_HD auto load_variables_at(Index i, std::index_sequence<I...>) const
    {
        return make_value_pack(get<I>(variables).at(i)...);
    }
    template <std::size_t K, class Index, std::size_t... I>
    TENET_HD auto load_variable_chunks(Index i, std::index_sequence<I...>) const
    {
        return make_value_pack(get<I>(variables).template chunk<K>(i)...);
    }

    template <std::size_t K, std::size_t... I>
    TENET_HD static void scatter(value_pack<vec<S, K>...>& r, const value_type& slots, std::size_t k,
                                 std::index_sequence<I...>)
    {
        ((slot<I>(r)[k] = get<I>(slots)), ...);
    }
};

// One slot of a backward_eval, as an ordinary evaluator (gradient<I>).
template <std::size_t I, class Backward>
struct slot_eval : reads_evaluators<slot_eval<I, Backward>> {
    using value_type = std::remove_cvref_t<decltype(get<I>(std::declval<typename Backward::value_type>()))>;
    Backward backward;

    template <class Index>
    TENET_HD value_type at(Index i) const
    {
        return get<I>(backward.at(i));
    }
    template <std::size_t K, class Index>
    TENET_HD vec<value_type, K> chunk(Index i) const
    {
        return get<I>(backward.template chunk<K>(i));
    }
    auto reads() const { return make_value_pack(backward); }
    static constexpr std::size_t smallest_element = Backward::smallest_element;
};

// Host side: calls f(leaf) for every var<I> leaf of an evaluator tree.
template <class E, class F>
void visit_variables(const E& e, F&& f)
{
    if constexpr (is_var_eval<E>::value) {
        f(e);
    } else if constexpr (is_map_eval<E>::value) {
        [&]<std::size_t... J>(std::index_sequence<J...>) {
            (visit_variables(get<J>(e.operands), f), ...);
        }(operands_of<E>);
    } else if constexpr (is_remap_eval<E>::value) {
        visit_variables(e.operand, f);
    }
}

}  // namespace tenet::detail::ad
