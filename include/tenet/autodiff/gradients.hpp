// gradients(e, dy) and gradient<I>(e, dy): reverse-mode differentiation of an
// elementwise expression e with respect to its var<I> leaves, given the
// upstream gradient dy (any expression broadcastable to e's shape, or a
// number).
//
//   tie(dx, dw, db) = gradients(tanh(var<0>(x) * var<1>(w) + var<2>(b)), dy);
//
// is ONE fused kernel over e's elements: each thread evaluates e once per
// element, walks it backwards (backward_eval.hpp) and stores every
// gradient. A variable with fewer elements than e (broadcast, e.g. a bias
// [N] in an [M,N] expression) has its per-element contributions written to a
// scratch tensor of e's shape in that same kernel, then summed over the
// broadcast axes by one reduction (deterministic, no atomics): 1 kernel, plus
// 1 per broadcast variable. A variable used twice accumulates.
//
// gradient<I>(e, dy) is variable I's gradient as an ordinary expression, to
// assign or to fuse into a larger one (an optimizer step: w - lr *
// gradient<1>(e, dy) is one kernel). For a broadcast variable it is a sum
// over the broadcast axes of the per-element backward (fused into the
// reduction: no scratch), materialised first inside a larger expression, as
// sum<...>(...) is.
//
// Not differentiable (a tenet: static_assert says which): a view other than
// a broadcast (transpose, slice, reshape) of a subexpression holding var<I>
// -- mark the viewed tensor instead, var<I>(transpose(x)) --, a reduction of
// one, and gradient<I> inside an expression being differentiated. Nodes of
// other layers that materialise their operands (matmul, softmax) are
// constants here: a var<I> inside one is not seen.
#pragma once

#include "../exec/assign.hpp"
#include "analysis.hpp"
#include "backward_eval.hpp"

#include <array>
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

namespace tenet {
namespace detail::ad {

template <class E, class Dy>
struct gradients_dy_does_not_broadcast_to_the_shape_of_e {
    static constexpr auto text()
    {
        return fixed_string("tenet: gradients(e, dy): dy of shape ") + shape_name<Dy>::text() +
               fixed_string(" does not broadcast to the shape of e, ") + shape_name<E>::text();
    }
};

template <std::size_t I, class Dst, class Var>
struct gradient_destination_must_have_the_variable_shape {
    static constexpr auto text()
    {
        return fixed_string("tenet: the gradient of var<") + decimal<I>() +
               fixed_string("> has its shape: destination ") + shape_name<Dst>::text() +
               fixed_string(" vs variable ") + shape_name<Var>::text();
    }
};

template <std::size_t Variables, std::size_t Destinations>
struct gradients_needs_one_destination_per_variable {
    static constexpr auto text()
    {
        return fixed_string("tenet: tie(...) = gradients(e, dy): one destination per variable: ") +
               decimal<Variables>() + fixed_string(" variables, ") + decimal<Destinations>() +
               fixed_string(" destinations");
    }
};

template <std::size_t I>
struct gradients_variables_numbered_0_1_without_gaps_one_missing {
    static constexpr auto text()
    {
        return fixed_string("tenet: gradients: variables are numbered 0, 1, ... without gaps, and var<") +
               decimal<I>() + fixed_string("> is missing");
    }
};

template <std::size_t I>
struct gradients_var_marks_tensors_of_different_types_or_layouts {
    static constexpr auto text()
    {
        return fixed_string("tenet: gradients: var<") + decimal<I>() +
               fixed_string("> marks tensors of different types or layouts");
    }
};

// The compile-time checks shared by gradients and gradient<I>.
template <class E, class Dy>
constexpr bool check_differentiation()
{
    using table = variables_t<E>;
    constexpr obstacle blocked = variables_of<E>::blocked;
    static_assert(is_floating_v<typename E::value_type>, "tenet: gradients(e, dy): e's value type is not floating");
    static_assert(blocked != obstacle::view,
                  "tenet: gradients: a view (transpose, slice, reshape, ...) of an expression holding var<I> cannot be "
                  "differentiated elementwise; apply the view to the tensor inside var<I>(...) instead");
    static_assert(blocked != obstacle::reduction,
                  "tenet: gradients: a reduction of an expression holding var<I> cannot be differentiated "
                  "elementwise; only broadcasts, elementwise operations and constants may surround a variable");
    static_assert(blocked != obstacle::nested_gradient,
                  "tenet: gradients: an expression holding gradient<I>(...) cannot be differentiated again");
    static_assert(table::count > 0, "tenet: gradients(e, dy): e holds no var<I>(...)");
    static_assert(diagnose<table::missing == table::count, gradients_variables_numbered_0_1_without_gaps_one_missing<table::missing>>::value);
    static_assert(diagnose<table::inconsistent == table::count, gradients_var_marks_tensors_of_different_types_or_layouts<table::inconsistent>>::value);
    constexpr bool shapes_ok = broadcasts_to_v<typename Dy::shape, typename E::shape>;
    static_assert(diagnose<shapes_ok, gradients_dy_does_not_broadcast_to_the_shape_of_e<typename E::shape, typename Dy::shape>>::value);
    constexpr bool places_ok = !std::is_void_v<combined_places_t<typename E::place, typename Dy::place>>;
    static_assert(places_ok, "tenet: gradients(e, dy): e and dy are in different places");
    return blocked == obstacle::none && table::count > 0 && table::missing == table::count &&
           table::inconsistent == table::count && shapes_ok && places_ok;
}

// Run time: one var<I> number, one tensor. Returns each variable's memory.
template <std::size_t N, class Forward>
std::array<const void*, N> variable_memory(const Forward& forward)
{
    std::array<const void*, N> seen{};
    visit_variables(forward, [&](const auto& variable) {
        internal::require_memory(variable);
        const void*& first = seen[std::remove_cvref_t<decltype(variable)>::index];
        if (first == nullptr) first = variable.data;
        if (first != static_cast<const void*>(variable.data))
            throw error("tenet: gradients: one var<I> number marks two different tensors in one expression");
    });
    return seen;
}

template <class E, std::size_t I>
using variable_leaf = variable_leaf_t<variable_t<E, I>, typename E::shape>;

// The backward evaluator of e (its variables 0..N-1) with upstream dy.
template <class E, class Dy, class Context, std::size_t... I>
auto prepare_backward(const E& e, const Dy& dy, Context& context, std::index_sequence<I...>)
{
    const auto forward = e.prepare(context);
    const auto memory = variable_memory<sizeof...(I)>(forward);
    const auto upstream = dy.prepare(context);
    using variables = value_pack<variable_leaf<E, I>...>;
    return backward_eval<std::remove_const_t<decltype(forward)>, std::remove_const_t<decltype(upstream)>, variables,
                         slot_t<E, I>...>{
        {}, forward, upstream,
        make_value_pack(variable_leaf<E, I>{static_cast<decltype(variable_leaf<E, I>::data)>(memory[I])}...)};
}

template <class E, class Dy, class Context>
auto prepare_backward(const E& e, const Dy& dy, Context& context)
{
    return prepare_backward(e, dy, context, std::make_index_sequence<variables_t<E>::count>{});
}

// The destination of the fused kernel: every slot of backward_eval's value,
// each stored to its own target, over the elements of Shape.
template <class Shape, class... D>
struct gradient_store {
    using layout = contiguous_layout<Shape>;  // the traversal (run_elementwise reads its size)
    value_pack<D...> targets;

    template <class Index, class... V>
    TENET_HD void store(Index i, const value_pack<V...>& values) const
    {
        store_each(i, values, std::index_sequence_for<D...>{});
    }

    template <std::size_t K, class Index, class... V>
    TENET_HD void store_chunk(Index i, const value_pack<vec<V, K>...>& values) const
    {
        store_chunks<K>(i, values, std::index_sequence_for<D...>{});
    }

    template <std::size_t K>
    bool aligned() const
    {
        return all_aligned<K>(targets);
    }

    static constexpr std::size_t smallest_element = internal::smallest_element_of<D...>;

private:
    template <class Index, class Values, std::size_t... I>
    TENET_HD void store_each(Index i, const Values& values, std::index_sequence<I...>) const
    {
        (get<I>(targets).store(i, get<I>(values)), ...);
    }
    template <std::size_t K, class Index, class Values, std::size_t... I>
    TENET_HD void store_chunks(Index i, const Values& values, std::index_sequence<I...>) const
    {
        (get<I>(targets).template store_chunk<K>(i, get<I>(values)), ...);
    }
};

template <class Shape, class... D>
gradient_store<Shape, D...> make_gradient_store(const value_pack<D...>& targets)
{
    return {targets};
}

// gradient<I>(e, dy) over the elements of shape S: variable I's shape, or
// e's shape for the per-element contributions to a broadcast variable.
template <std::size_t I, class E, class Dy, class S>
struct gradient_expr {
    using shape = S;
    using value_type = slot_t<E, I>;
    using place = combined_places_t<typename E::place, typename Dy::place>;

    E expression;
    Dy upstream;

    template <class Context>
    auto prepare(Context& context) const
    {
        const auto backward = prepare_backward(expression, upstream, context);
        return slot_eval<I, std::remove_const_t<decltype(backward)>>{{}, backward};
    }
};

// gradient<I>(e, dy) of a broadcast variable: the contributions summed over
// the broadcast axes, straight into a destination or into a scratch tensor.
template <std::size_t I, class E, class Dy>
struct summed_gradient_expr : materialises<summed_gradient_expr<I, E, Dy>> {
    using shape = typename variable_t<E, I>::shape;
    using value_type = slot_t<E, I>;
    using place = combined_places_t<typename E::place, typename Dy::place>;

    gradient_expr<I, E, Dy, typename E::shape> contributions;

    template <class Dst, class Context>
    void assign_into(const Dst& destination, Context& context) const
    {
        broadcast_sum<shape>(contributions).assign_into(destination, context);
    }
};

template <std::size_t I, class E, class Dy, class S>
struct variables_of<gradient_expr<I, E, Dy, S>> {
    using type = type_list<>;
    static constexpr obstacle blocked = obstacle::nested_gradient;
};
template <std::size_t I, class E, class Dy>
struct variables_of<summed_gradient_expr<I, E, Dy>> {
    using type = type_list<>;
    static constexpr obstacle blocked = obstacle::nested_gradient;
};

// What tie(d0, d1, ...) = gradients(e, dy) assigns from.
template <class E, class Dy>
struct gradients_expr {
    E expression;
    Dy upstream;  // broadcast to E's shape

    template <class... Views>
    void assign_to(const std::tuple<Views...>& destinations) const
    {
        constexpr std::size_t n = variables_t<E>::count;
        static_assert(diagnose<sizeof...(Views) == n, gradients_needs_one_destination_per_variable<n, sizeof...(Views)>>::value);
        if constexpr (sizeof...(Views) == n)
            if constexpr (check_destinations<Views...>(std::index_sequence_for<Views...>{}))
                run(destinations, std::index_sequence_for<Views...>{});
    }

private:
    template <std::size_t I, class View>
    static constexpr bool check_destination()
    {
        using variable = variable_t<E, I>;
        constexpr bool shape_ok = std::is_same_v<typename View::shape, typename variable::shape>;
        static_assert(diagnose<shape_ok, gradient_destination_must_have_the_variable_shape<I, typename View::shape, typename variable::shape>>::value);
        // writable, not a broadcast view, places, nvcc for Device
        return shape_ok && internal::check_assignment<View, gradient_expr<I, E, Dy, typename variable::shape>>();
    }

    template <class... Views, std::size_t... I>
    static constexpr bool check_destinations(std::index_sequence<I...>)
    {
        return (check_destination<I, Views>() && ...);
    }

    // The fused kernel's target for variable I: its destination, or for a
    // broadcast variable a scratch tensor of e's shape summed afterwards.
    template <std::size_t I, class Out, class Source, class Context>
    static auto target(const Out& out, const Source& source, Context& context)
    {
        if constexpr (broadcast_variable<E, I>) {
            return context.template scratch<slot_t<E, I>, typename E::shape>().view().prepare(context);
        } else {
            internal::check_operands(out, source);
            return out;
        }
    }

    template <std::size_t I, class View, class Target, class Context>
    static void finish(const View& destination, const Target& target, Context& context)
    {
        if constexpr (broadcast_variable<E, I>) {
            using all = TensorView<slot_t<E, I>, contiguous_layout<typename E::shape>, typename Context::place>;
            const all contributions(target.data);
            broadcast_sum<typename variable_t<E, I>::shape>(contributions).assign_into(destination, context);
        }
    }

    template <class... Views, std::size_t... I>
    void run(const std::tuple<Views...>& destinations, std::index_sequence<I...> all) const
    {
        using place = compute_place_t<typename std::tuple_element_t<0, std::tuple<Views...>>::place>;
        exec_context<place> context(current_stream());
        const auto source = prepare_backward(expression, upstream, context, all);
        const auto outs = make_value_pack(std::get<I>(destinations).prepare(context)...);
        (internal::require_memory(get<I>(outs)), ...);
        internal::check_disjoint(outs, all);
        const auto targets = make_value_pack(target<I>(get<I>(outs), source, context)...);
        internal::run_elementwise<place>(make_value_pack(make_gradient_store<typename E::shape>(targets)),
                               make_value_pack(source), context.stream());
        (finish<I>(std::get<I>(destinations), get<I>(targets), context), ...);
    }
};

template <class E, class Dy>
auto upstream_node(Dy&& dy)
{
    using V = typename E::value_type;
    if constexpr (scalar_value<std::decay_t<Dy>>) return scalar_expr<V>{internal::scalar_as<V>(dy)};
    else return as_node(std::forward<Dy>(dy));
}

// What gradients(e, dy) gives after a failed compile-time check: assigning
// it does nothing, so that one error is reported instead of a cascade.
struct failed_gradients {
    template <class Views>
    void assign_to(const Views&) const
    {
    }
};

template <std::size_t I>
struct gradient_I_but_e_has_no_var_I {
    static constexpr auto text()
    {
        return fixed_string("tenet: gradient<") + decimal<I>() + fixed_string(">(e, dy): e has no var<") +
               decimal<I>() + fixed_string(">");
    }
};

}  // namespace detail::ad

// tie(d0, d1, ...) = gradients(e, dy): every variable's gradient, d_I of
// var<I>'s shape, in one fused pass.
template <class E, class Dy>
    requires(expression<std::decay_t<E>> && (expression<std::decay_t<Dy>> || scalar_value<std::decay_t<Dy>>))
auto gradients(E&& e, Dy&& dy)
{
    using N = node_t<E>;
    auto upstream = detail::ad::upstream_node<N>(std::forward<Dy>(dy));
    using U = decltype(upstream);
    if constexpr (detail::ad::check_differentiation<N, U>()) {
        using B = decltype(internal::broadcast_node<typename N::shape>(std::move(upstream)));
        return detail::ad::gradients_expr<N, B>{as_node(std::forward<E>(e)),
                                                internal::broadcast_node<typename N::shape>(std::move(upstream))};
    } else {
        return detail::ad::failed_gradients{};
    }
}

// gradient<I>(e, dy): var<I>'s gradient, of var<I>'s shape, as an expression.
template <std::size_t I, class E, class Dy>
    requires(expression<std::decay_t<E>> && (expression<std::decay_t<Dy>> || scalar_value<std::decay_t<Dy>>))
auto gradient(E&& e, Dy&& dy)
{
    using N = node_t<E>;
    auto upstream = detail::ad::upstream_node<N>(std::forward<Dy>(dy));
    using U = decltype(upstream);
    if constexpr (detail::ad::check_differentiation<N, U>()) {
        constexpr bool present = I < detail::ad::variables_t<N>::count;
        static_assert(diagnose<present, detail::ad::gradient_I_but_e_has_no_var_I<I>>::value);
        if constexpr (present) {
            using B = decltype(internal::broadcast_node<typename N::shape>(std::move(upstream)));
            constexpr bool broadcast = detail::ad::broadcast_variable<N, I>;
            // a broadcast variable: the per-element contributions, then their sum
            using S = std::conditional_t<broadcast, typename N::shape, typename detail::ad::variable_t<N, I>::shape>;
            detail::ad::gradient_expr<I, N, B, S> g{as_node(std::forward<E>(e)),
                                                    internal::broadcast_node<typename N::shape>(std::move(upstream))};
            if constexpr (broadcast) return detail::ad::summed_gradient_expr<I, N, B>{{}, g};
            else return g;
        } else {
            return internal::failed_expression{};
        }
    } else {
        return internal::failed_expression{};
    }
}

}  // namespace tenet
