// window_expr<Rule, Operands...>: an expression whose element i is computed
// by Rule from its operands read at other indices -- the gathers that
// convolution and pooling are made of (im2col, its adjoint col2im, the pools
// and their backwards). Rule gives the shape and a __host__ __device__
// at(i, operand evaluators), so the host loop and the device kernel run the
// same code, and the node fuses into the expression around it like any other.
#pragma once

#include "../expr/node.hpp"
#include "../memory/error.hpp"
#include "../numeric/vec.hpp"
#include "../tensor/expression.hpp"
#include "../tensor/tensor.hpp"

#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>

namespace tenet::conv::detail {

template <class Rule, class... Evals>
struct window_eval : reads_evaluators<window_eval<Rule, Evals...>> {
    using value_type = std::common_type_t<typename Evals::value_type...>;
    value_pack<Evals...> operands;

    template <class Index>
    TENET_HD value_type at(Index i) const
    {
        return Rule::at(i, operands);
    }

    template <std::size_t K, class Index>
    TENET_HD vec<value_type, K> chunk(Index i) const
    {
        return chunk_by_elements<K>(*this, i);
    }

    // Elements are gathered one at a time: no vector loads to align.
    template <std::size_t K>
    bool aligned() const
    {
        return true;
    }

    static constexpr bool reads_at_own_index = false;
    auto reads() const { return operands; }
    static constexpr std::size_t smallest_element = internal::smallest_element_of<Evals...>;
};

template <class Rule, class... E>
struct window_expr {
    using shape = typename Rule::shape;
    using value_type = std::common_type_t<typename E::value_type...>;
    using place = std::tuple_element_t<0, std::tuple<typename E::place...>>;  // the input's
    static_assert(((std::is_same_v<typename E::place, place> || std::is_same_v<typename E::place, AnyPlace>) && ...),
                  "tenet: the operands of a convolution or pooling live in different places");
    std::tuple<E...> operands;

    template <class Context>
    auto prepare(Context& context) const
    {
        return std::apply(
            [&](const auto&... e) {
                return window_eval<Rule, decltype(e.prepare(context))...>{{}, make_value_pack(e.prepare(context)...)};
            },
            operands);
    }
};

// The host loops (im2col, col2im, pooling) write one contiguous view from
// another: both must have memory, and not the same memory.
template <class D, class S>
void require_separate(const D& destination, const S& source)
{
    static_assert(std::is_same_v<typename D::layout, contiguous_layout<typename D::shape>> &&
                      std::is_same_v<typename S::layout, contiguous_layout<typename S::shape>>,
                  "tenet: internal: the host gathers take contiguous views");
    const auto* d = destination.data() + D::layout::offset;
    const auto* s = source.data() + S::layout::offset;
    if (destination.data() == nullptr || source.data() == nullptr)
        throw error("tenet: a convolution's or pool's operand or destination has no memory (a moved-from tensor?)");
    const std::less<const void*> before;
    if (before(d, s + S::layout::max_offset + 1) && before(s, d + D::layout::max_offset + 1))
        throw aliasing_error("tenet: a convolution's or pool's destination overlaps what it reads");
}

template <class Rule, class... E>
auto make_window_expr(E&&... e)
{
    return window_expr<Rule, node_t<E>...>{{as_node(std::forward<E>(e))...}};
}

}  // namespace tenet::conv::detail
