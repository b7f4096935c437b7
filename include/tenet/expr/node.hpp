// How operands are held inside expression nodes. Views and nodes are held by
// value; a Tensor lvalue is held as a read-only view of it (reference
// semantics: it must outlive the expression); a Tensor rvalue is moved in and
// owned, so `auto e = x + make_tensor();` does not dangle.
#pragma once

#include "../tensor/owning_tensor.hpp"

#include <cstddef>
#include <type_traits>
#include <utility>

namespace tenet::detail::expr {

template <class E>
auto as_node(E&& e)
{
    using D = std::decay_t<E>;
    if constexpr (is_tensor<D>::value && std::is_lvalue_reference_v<E>) return std::as_const(e).view();
    else return D(std::forward<E>(e));
}

template <class E>
using node_t = decltype(as_node(std::declval<E>()));

// A tuple that stays trivially copyable (std::tuple is not), for evaluators.
template <class... T>
struct value_pack;
template <>
struct value_pack<> {
    static constexpr std::size_t size = 0;
};
template <class Head, class... Tail>
struct value_pack<Head, Tail...> {
    static constexpr std::size_t size = 1 + sizeof...(Tail);
    Head head;
    value_pack<Tail...> tail;
};

// What an evaluator that touches no memory reports as its smallest element.
inline constexpr std::size_t no_memory_access = 16;

// The smallest element any member loads or stores (sets the chunk length).
template <class... T>
inline constexpr std::size_t smallest_element_of = [] {
    std::size_t s = no_memory_access;
    ((s = T::smallest_element < s ? T::smallest_element : s), ...);
    return s;
}();

template <std::size_t I, class Head, class... Tail>
TENET_HD constexpr const auto& get(const value_pack<Head, Tail...>& p)
{
    if constexpr (I == 0) return p.head;
    else return get<I - 1>(p.tail);
}

TENET_HD constexpr value_pack<> make_value_pack() { return {}; }

template <class Head, class... Tail>
TENET_HD constexpr value_pack<Head, Tail...> make_value_pack(Head head, Tail... tail)
{
    return {head, make_value_pack(tail...)};
}

template <std::size_t K, class... T, std::size_t... I>
bool all_aligned(const value_pack<T...>& p, std::index_sequence<I...>)
{
    return (get<I>(p).template aligned<K>() && ...);
}

template <std::size_t K, class... T>
bool all_aligned(const value_pack<T...>& p)
{
    return all_aligned<K>(p, std::index_sequence_for<T...>{});
}

template <class Pack>
struct pack_traits;
template <class... T>
struct pack_traits<value_pack<T...>> {
    static constexpr std::size_t smallest_element = smallest_element_of<T...>;
    static constexpr bool evaluators = (internal::check_evaluator<T>() && ...);
};

// Nodes that compute their value with work of their own (a reduction, a row
// op, a GEMM, a broadcast variable's summed gradient) derive from this.
// Derived writes its value with assign_into(destination, context), which
// assign() calls straight into a destination of its shape; inside a larger
// expression prepare() materialises it once into a scratch tensor of the
// context (freed after the assignment's work is queued) and reads that.
template <class Derived>
struct materialises {
    template <class Context>
    auto prepare(Context& context) const
    {
        auto& scratch = context.template scratch<typename Derived::value_type, typename Derived::shape>();
        static_cast<const Derived&>(*this).assign_into(scratch.view(), context);
        return std::as_const(scratch).prepare(context);
    }
};

// What evaluators that read other evaluators repeat, written once (the part
// MatX's BaseOp plays): Derived gives reads(), a value_pack of the
// evaluators it reads, and gets
//   aligned<K>()             every one of them allows vector chunks, and
//   visit_leaves(f, direct)  each one's leaves, passing direct on -- or
//                            false when Derived::reads_at_own_index is
//                            false (it reads them at other indices).
// Derived's own aligned() or visit_leaves(), where it has one, hides these.
template <class Derived>
struct reads_evaluators {
    template <std::size_t K>
    bool aligned() const
    {
        return all_aligned<K>(self().reads());
    }

    template <class F>
    void visit_leaves(F&& f, bool direct) const
    {
        const auto& operands = self().reads();
        using pack = std::remove_cvref_t<decltype(operands)>;
        if constexpr (requires { Derived::reads_at_own_index; }) direct = direct && Derived::reads_at_own_index;
        if constexpr (pack_traits<pack>::evaluators)  // else one tenet: line names what an operand misses
            visit_each(operands, f, direct, std::make_index_sequence<pack::size>{});
    }

private:
    const Derived& self() const { return static_cast<const Derived&>(*this); }

    template <class Pack, class F, std::size_t... I>
    static void visit_each(const Pack& operands, F& f, bool direct, std::index_sequence<I...>)
    {
        (get<I>(operands).visit_leaves(f, direct), ...);
    }
};

}  // namespace tenet::detail::expr

namespace tenet {
using detail::expr::as_node;
using detail::expr::node_t;
using detail::expr::value_pack;
using detail::expr::get;
using detail::expr::make_value_pack;
using detail::expr::materialises;
using detail::expr::reads_evaluators;
}  // namespace tenet

// For the folders above this one (see docs/ARCHITECTURE.md, "Namespaces").
namespace tenet::internal {
using detail::expr::smallest_element_of;
using detail::expr::pack_traits;
}  // namespace tenet::internal
