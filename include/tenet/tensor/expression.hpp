// The expression protocol. Tensors, views and every node built from them
// satisfy `expression` (its three types) and `evaluable` (with prepare):
//   E::shape       Shape<...> of its value
//   E::value_type  the compute type of its elements (f32 for 16-bit floats)
//   E::place       Host, HostPinned, Device, or AnyPlace (scalars, generators)
//   e.prepare(ctx) its evaluator (below), in an execution context
//                  (exec/context.hpp); `evaluable<E, Context>` checks it
// Assigning a type that has some of these but not all names the first it
// misses in one tenet: line.
// User-facing nodes may own things (a moved-in Tensor); evaluators own
// nothing: they hold pointers and static layouts only.
//
// The evaluator protocol: a trivially copyable object, passed by value into
// a kernel, with
//   value_type         what at() returns
//   at(i)              element i (row-major linear index)
//   chunk<K>(i)        elements i..i+K-1 (i a multiple of K), a vec<value_type,
//                      K>, with vector loads where the layout allows
//   aligned<K>()       host side, before a launch: may chunk<K> use vector
//                      accesses here (the pointers are aligned)?
//   visit_leaves(f, direct)  host side: f(leaf, direct) for every tensor leaf
//                      it reads; direct is false for leaves read at another
//                      index than the element written (aliasing checks)
//   smallest_element   the smallest element it loads (sets the chunk length)
//   host_walk_for<K>   optional, static constexpr: how a host loop reads it
//                      best (host_walk below); without it, element by element
//   host_reads_per_element  optional, static constexpr std::size_t: the
//                      elements one at(i) reads (1 without it); a host loop
//                      splits across cores by reads, not by writes
// Evaluators that read other evaluators get aligned and visit_leaves from
// tenet::reads_evaluators (expr/node.hpp), which checks their operands
// against this concept.
#pragma once

#include "../numeric/traits.hpp"
#include "../shape/shape.hpp"

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <type_traits>

namespace tenet {

namespace detail::tensor {

// The expression requirements, one per member (the concept and the checks
// below both use them).
template <class E>
concept expression_shape = requires { typename E::shape; } && shape_type<typename E::shape>;
template <class E>
concept expression_value = requires { typename E::value_type; };
template <class E>
concept expression_place = requires { typename E::place; };

// A type that means to be an expression (it names a shape or a place, which
// a container's value_type alone does not), so a tensor's operator= takes it
// and check_expression names what it misses.
template <class E>
concept expression_like = requires { typename E::shape; } || expression_place<E>;

}  // namespace detail::tensor

template <class E>
concept expression = detail::tensor::expression_shape<E> && detail::tensor::expression_value<E> &&
                     detail::tensor::expression_place<E>;

namespace detail::tensor {

// A visitor that accepts any leaf (what `evaluator` calls visit_leaves with).
struct any_leaf_visitor {
    template <class Leaf>
    void operator()(const Leaf&, bool) const
    {
    }
};

// The evaluator requirements, one per member (the concept and the checks
// below both use them).
template <class E>
concept evaluator_value = requires { typename E::value_type; };
template <class E>
concept evaluator_reads_elements = requires(const E& e, std::size_t i) { e.at(i); };
template <class E>
concept evaluator_reads_chunks = requires(const E& e, std::size_t i) { e.template chunk<2>(i); };
template <class E>
concept evaluator_knows_alignment = requires(const E& e) {
    { e.template aligned<2>() } -> std::convertible_to<bool>;
};
template <class E>
concept evaluator_lists_leaves = requires(const E& e, bool direct) { e.visit_leaves(any_leaf_visitor{}, direct); };
template <class E>
concept evaluator_sizes_chunks = requires {
    { E::smallest_element } -> std::convertible_to<std::size_t>;
};

}  // namespace detail::tensor

template <class E>
concept evaluator = std::is_trivially_copyable_v<E> && detail::tensor::evaluator_value<E> &&
                    detail::tensor::evaluator_reads_elements<E> && detail::tensor::evaluator_reads_chunks<E> &&
                    detail::tensor::evaluator_knows_alignment<E> && detail::tensor::evaluator_lists_leaves<E> &&
                    detail::tensor::evaluator_sizes_chunks<E>;

namespace detail::tensor {

// How a host loop reads an evaluator best:
//   elements  one element per iteration, the loop vectorised by the compiler.
//             Right for contiguous reads, and where K-chunks would gather.
//   either    as fast one way as the other (contiguous reads, scalars).
//   chunks    K elements per step, each leaf loaded once per chunk and the
//             tree applied lane by lane (expr/lanes.hpp): a broadcast operand
//             (a per-channel vector over NHWC rows) is then one vector load,
//             where the element loop would gather it lane by lane (i % C).
enum class host_walk { elements, either, chunks };

template <class E, std::size_t K>
constexpr host_walk host_walk_of()
{
    if constexpr (requires { E::template host_walk_for<K>; }) return E::template host_walk_for<K>;
    else return host_walk::elements;
}

// The walk of several evaluators read together: elements if any needs it,
// else chunks if any gains from them.
template <std::size_t K, class... E>
constexpr host_walk host_walk_of_all()
{
    constexpr host_walk walks[] = {host_walk::either, host_walk_of<E, K>()...};
    host_walk r = host_walk::either;
    for (const host_walk w : walks) {
        if (w == host_walk::elements) return w;
        if (w == host_walk::chunks) r = w;
    }
    return r;
}

// The most elements one at(i) of any of these evaluators reads.
template <class... E>
constexpr std::size_t host_reads_per_element_of()
{
    std::size_t most = 1;
    ((most = std::max(most, [] {
          if constexpr (requires { E::host_reads_per_element; }) return std::size_t{E::host_reads_per_element};
          else return std::size_t{1};
      }())),
     ...);
    return most;
}

// One tenet: line naming what an evaluator misses; true (nothing more to
// report at the caller) either way.
template <class E>
constexpr bool check_evaluator()
{
    static_assert(std::is_trivially_copyable_v<E>,
                  "tenet: evaluator: must be trivially copyable (it is passed by value into kernels; hold pointers, "
                  "not Tensors)");
    static_assert(evaluator_value<E>, "tenet: evaluator: needs value_type (what at(i) returns)");
    static_assert(evaluator_reads_elements<E>, "tenet: evaluator: needs at(i), element i (row-major)");
    static_assert(evaluator_reads_chunks<E>,
                  "tenet: evaluator: needs chunk<K>(i), elements i..i+K-1 as a vec<value_type, K>");
    static_assert(evaluator_knows_alignment<E>, "tenet: evaluator: needs aligned<K>() -> bool");
    static_assert(evaluator_lists_leaves<E>,
                  "tenet: evaluator: needs visit_leaves(f, direct), calling f(leaf, direct) for each tensor it reads");
    static_assert(evaluator_sizes_chunks<E>,
                  "tenet: evaluator: needs static constexpr std::size_t smallest_element");
    return evaluator<E>;
}

}  // namespace detail::tensor

// E is an expression whose prepare(context) gives an evaluator.
template <class E, class Context>
concept evaluable = expression<E> && requires(const E& e, Context& context) {
    { e.prepare(context) } -> evaluator;
};

namespace detail::tensor {

// One tenet: line naming the first member an expression misses; true when
// it has them all.
template <class E>
constexpr bool check_expression()
{
    if constexpr (!expression_shape<E>)
        static_assert(expression_shape<E>, "tenet: expression: needs shape, a Shape<...> of its value");
    else if constexpr (!expression_value<E>)
        static_assert(expression_value<E>, "tenet: expression: needs value_type, the type of its elements");
    else
        static_assert(expression_place<E>, "tenet: expression: needs place (Host, HostPinned, Device or AnyPlace)");
    return expression<E>;
}

// ... and whether it has prepare(context) const, asked only where the
// expression is about to be prepared (asking compiles an auto prepare's body).
template <class E, class Context>
constexpr bool check_prepare()
{
    constexpr bool prepares = requires(const E& e, Context& context) { e.prepare(context); };
    static_assert(prepares, "tenet: expression: needs prepare(context) const, returning its evaluator");
    return prepares;
}

}  // namespace detail::tensor

// Plain numbers usable as scalar operands (x * 0.5f, 2 + x).
template <class S>
concept scalar_value = std::is_arithmetic_v<S>;

template <class Dst, class Src>
void assign(const Dst& destination, const Src& source);

}  // namespace tenet

// For the folders above this one (see docs/ARCHITECTURE.md, "Namespaces").
namespace tenet::internal {
using detail::tensor::host_walk;
using detail::tensor::host_walk_of;
using detail::tensor::host_walk_of_all;
using detail::tensor::host_reads_per_element_of;
using detail::tensor::check_expression;
using detail::tensor::check_prepare;
using detail::tensor::check_evaluator;
}  // namespace tenet::internal
