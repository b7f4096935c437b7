// Reductions: sum, mean, prod, norm2, max, min, argmax, argmin -- over all
// elements (no axes) or compile-time axes (negative counts from the end),
// optionally keeping reduced axes with extent 1 (keepdims).
//
//   y = sum<1>(exp(x - m));       one kernel: reads x and m once, writes y
//   z = x - max<-1>(x, keepdims); the max is materialised once, then one
//                                 elementwise kernel (never recomputed per element)
//
// A reduction is lazy: assigned to a tensor of its shape it writes straight
// into it; inside a larger expression it is evaluated first into a scratch
// tensor of its result type (the accumulate type: f32 for 16-bit floats).
#pragma once

#include "../exec/aliasing.hpp"
#include "../exec/assign.hpp"
#include "axes.hpp"
#include "device_reduce.hpp"
#include "host.hpp"
#include "ops.hpp"

#include <type_traits>
#include <utility>

namespace tenet {

struct keepdims_t {};
inline constexpr keepdims_t keepdims{};

namespace detail::reduce {

template <template <class> class Op, class E, class Axes, bool Keep>
struct reduce_expr : materialises<reduce_expr<Op, E, Axes, Keep>> {
    using op = Op<typename E::value_type>;
    using shape = std::conditional_t<Keep, typename Axes::keepdims_shape, typename Axes::shape>;
    using value_type = typename op::result;
    using place = typename E::place;

    E operand;

    template <class Dst, class Context>
    void assign_into(const Dst& destination, Context& context) const
    {
        const auto in = operand.prepare(context);
        const auto out = destination.prepare(context);
        internal::require_memory(out);
        std::size_t position = 0;
        in.visit_leaves(
            [&](const auto& leaf, bool) {
                ++position;
                internal::require_memory(leaf);
                // the reduction reads every input element of a row after writing its first result
                if (internal::overlaps(out, leaf))
                    throw aliasing_error("tenet: a reduction's destination overlaps " +
                                         internal::operand_name<std::decay_t<decltype(leaf)>>(position) +
                                         " it reduces; reduce into a separate tensor");
            },
            true);
        if constexpr (host_accessible_v<typename Context::place>) {
            host_reduce<op, Axes>(out, in);
        } else {
#if TENET_CUDA_COMPILER
            device_reduce<op, Axes>(out, in, context.stream());
#endif
        }
    }
};

template <template <class> class Op, bool Keep, int... Axes, class E>
auto make_reduction(E&& e)
{
    using N = node_t<E>;
    using S = typename N::shape;
    using axes = reduction_axes<S, Axes...>;
    static_assert(diagnose<axes::in_range, reduction_axis_out_of_range_for_shape<S, Axes...>>::value);
    static_assert(!axes::in_range || axes::distinct, "tenet: a reduction axis is named twice");
    if constexpr (axes::in_range && axes::distinct)
        return reduce_expr<Op, N, axes, Keep>{{}, as_node(std::forward<E>(e))};
    else
        return internal::failed_expression{};
}

template <class V>
using max_of = reductions::extreme<V, true>;
template <class V>
using min_of = reductions::extreme<V, false>;
template <class V>
using argmax_of = reductions::arg_extreme<V, true>;
template <class V>
using argmin_of = reductions::arg_extreme<V, false>;

}  // namespace detail::reduce

// sum<Axes...>(e) or sum<Axes...>(e, keepdims); no axes: every element.
template <class... K>
concept keepdims_option = sizeof...(K) <= 1 && (std::is_same_v<K, keepdims_t> && ...);

template <int... Axes, class E, class... K> requires(expression<std::decay_t<E>> && keepdims_option<K...>)
auto sum(E&& e, K...) { return detail::reduce::make_reduction<reductions::sum, sizeof...(K) == 1, Axes...>(std::forward<E>(e)); }
template <int... Axes, class E, class... K> requires(expression<std::decay_t<E>> && keepdims_option<K...>)
auto mean(E&& e, K...) { return detail::reduce::make_reduction<reductions::mean, sizeof...(K) == 1, Axes...>(std::forward<E>(e)); }
template <int... Axes, class E, class... K> requires(expression<std::decay_t<E>> && keepdims_option<K...>)
auto prod(E&& e, K...) { return detail::reduce::make_reduction<reductions::product, sizeof...(K) == 1, Axes...>(std::forward<E>(e)); }
template <int... Axes, class E, class... K> requires(expression<std::decay_t<E>> && keepdims_option<K...>)
auto norm2(E&& e, K...) { return detail::reduce::make_reduction<reductions::norm2, sizeof...(K) == 1, Axes...>(std::forward<E>(e)); }
template <int... Axes, class E, class... K> requires(expression<std::decay_t<E>> && keepdims_option<K...>)
auto max(E&& e, K...) { return detail::reduce::make_reduction<detail::reduce::max_of, sizeof...(K) == 1, Axes...>(std::forward<E>(e)); }
template <int... Axes, class E, class... K> requires(expression<std::decay_t<E>> && keepdims_option<K...>)
auto min(E&& e, K...) { return detail::reduce::make_reduction<detail::reduce::min_of, sizeof...(K) == 1, Axes...>(std::forward<E>(e)); }
template <int... Axes, class E, class... K> requires(expression<std::decay_t<E>> && keepdims_option<K...>)
auto argmax(E&& e, K...) { return detail::reduce::make_reduction<detail::reduce::argmax_of, sizeof...(K) == 1, Axes...>(std::forward<E>(e)); }
template <int... Axes, class E, class... K> requires(expression<std::decay_t<E>> && keepdims_option<K...>)
auto argmin(E&& e, K...) { return detail::reduce::make_reduction<detail::reduce::argmin_of, sizeof...(K) == 1, Axes...>(std::forward<E>(e)); }

}  // namespace tenet

// For the folders above this one (see docs/ARCHITECTURE.md, "Namespaces").
namespace tenet::internal {
using detail::reduce::reduce_expr;
}  // namespace tenet::internal
