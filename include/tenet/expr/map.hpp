// map_expr: an elementwise operation applied to operands of one shape (the
// operators broadcast them first). Evaluating element i evaluates each
// operand at i and applies the operation in registers: this is the fusion.
#pragma once

#include "../memory/place.hpp"
#include "node.hpp"

#include <tuple>
#include <utility>

namespace tenet::detail::expr {

template <class Op, class... Evals>
struct map_eval : reads_evaluators<map_eval<Op, Evals...>> {
    Op op;
    value_pack<Evals...> operands;

    using value_type = decltype(op(std::declval<typename Evals::value_type>()...));

    template <class Index>
    TENET_HD value_type at(Index i) const
    {
        return apply_at(i, std::index_sequence_for<Evals...>{});
    }

    template <std::size_t K, class Index>
    TENET_HD vec<value_type, K> chunk(Index i) const
    {
        return apply_chunk<K>(i, std::index_sequence_for<Evals...>{});
    }

    const value_pack<Evals...>& reads() const { return operands; }

    static constexpr std::size_t smallest_element = smallest_element_of<Evals...>;

    // As its operands: the host's chunk walk applies Op lane by lane
    // (expr/lanes.hpp), where calls (exp, tanh) vectorise as in the element loop.
    template <std::size_t K>
    static constexpr internal::host_walk host_walk_for = internal::host_walk_of_all<K, Evals...>();

private:
    template <class Index, std::size_t... I>
    TENET_HD value_type apply_at(Index i, std::index_sequence<I...>) const
    {
        return op(get<I>(operands).at(i)...);
    }

    template <std::size_t K, class Index, std::size_t... I>
    TENET_HD vec<value_type, K> apply_chunk(Index i, std::index_sequence<I...>) const
    {
        const auto inputs = make_value_pack(get<I>(operands).template chunk<K>(i)...);
        vec<value_type, K> r;
TENET_UNROLL
        for (std::size_t k = 0; k < K; ++k) r[k] = op(get<I>(inputs)[k]...);
        return r;
    }
};

template <class Op, class... Operands>
struct map_expr {
    using shape = typename std::tuple_element_t<0, std::tuple<Operands...>>::shape;
    static_assert(((std::is_same_v<typename Operands::shape, shape>) && ...),
                  "tenet: internal: map_expr operands must be broadcast first");
    using value_type = decltype(std::declval<Op>()(std::declval<typename Operands::value_type>()...));
    using place = combined_places_t<typename Operands::place...>;

    Op op;
    std::tuple<Operands...> operands;

    template <class Context>
    auto prepare(Context& context) const
    {
        return std::apply(
            [&](const auto&... operand) {
                return map_eval<Op, decltype(operand.prepare(context))...>{{}, op, make_value_pack(operand.prepare(context)...)};
            },
            operands);
    }
};

}  // namespace tenet::detail::expr


// For the folders above this one (see docs/ARCHITECTURE.md, "Namespaces").
namespace tenet::internal {
using detail::expr::map_eval;
using detail::expr::map_expr;
}  // namespace tenet::internal
