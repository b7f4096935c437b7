// Assignment: dst = expression. This is where an expression becomes work:
//   1. compile-time checks: shapes (the expression must broadcast to the
//      destination), places, a writable and non-broadcast destination;
//   2. prepare: the expression tree becomes its trivially copyable evaluator
//      (reductions inside it are materialised first, once);
//   3. run-time checks: no moved-from operands, no aliasing through another
//      layout;
//   4. one host loop nest, or one CUDA kernel on the current stream.
// tie(d1, d2) = pack(e1, e2) writes several destinations in one traversal.
#pragma once

#include "../expr/operators.hpp"
#include "aliasing.hpp"
#include "context.hpp"
#include "host_loop.hpp"
#include "launch.hpp"

#include <array>
#include <tuple>
#include <type_traits>
#include <utility>

namespace tenet {
namespace detail::exec {

template <class DestinationShape, class ExpressionShape>
struct shape_mismatch_in_assignment {
    static constexpr auto text()
    {
        return fixed_string("tenet: shape mismatch in assignment: destination ") + shape_name<DestinationShape>::text() +
               fixed_string(" vs expression ") + shape_name<ExpressionShape>::text();
    }
};

template <class DestinationPlace, class ExpressionPlace>
struct assignment_mixes_places {
    static constexpr auto text()
    {
        return fixed_string("tenet: assignment mixes places: destination in ") + DestinationPlace::name() +
               fixed_string(", expression in ") + ExpressionPlace::name() + fixed_string(" (use tenet::copy between places)");
    }
};

template <class View>
inline constexpr bool writes_each_element_once = [] {
    using L = typename View::layout;
    for (std::size_t d = 0; d != L::rank; ++d)
        if (L::extents[d] > 1 && L::strides[d] == 0) return false;
    return true;
}();

// The destination as a writable view; a Tensor becomes its view.
template <class D>
auto destination_view(D& d)
{
    if constexpr (is_tensor<std::remove_const_t<D>>::value) return d.view();
    else return d;
}

template <class Dst, class Src>
constexpr bool check_assignment()
{
    using element = std::remove_pointer_t<decltype(std::declval<Dst>().data())>;
    // A broadcast view is read-only too; say the more specific thing, once.
    constexpr bool distinct_ok = writes_each_element_once<Dst>;
    constexpr bool writable_ok = !distinct_ok || !std::is_const_v<element>;
    static_assert(distinct_ok,
                  "tenet: cannot assign to a broadcast view: several of its elements share one memory location");
    static_assert(writable_ok, "tenet: cannot assign to a read-only view (a view of a const tensor)");
    constexpr bool shapes_ok = broadcasts_to_v<typename Src::shape, typename Dst::shape>;
    constexpr bool places_ok = !std::is_void_v<combined_place_t<typename Dst::place, typename Src::place>>;
    static_assert(diagnose<shapes_ok, shape_mismatch_in_assignment<typename Dst::shape, typename Src::shape>>::value);
    static_assert(diagnose<places_ok, assignment_mixes_places<typename Dst::place, typename Src::place>>::value);
    static_assert(host_accessible_v<typename Dst::place> || TENET_CUDA_COMPILER,
                  "tenet: evaluating into a Device tensor needs a CUDA compiler: compile this file with nvcc "
                  "(as a .cu file or LANGUAGE CUDA), or use Host tensors");
    return distinct_ok && writable_ok && shapes_ok && places_ok;
}

}  // namespace detail::exec

// Src writes its value into a Dst itself (materialises).
template <class Src, class Dst, class Context>
concept writes_into = requires(const Src& source, const Dst& destination, Context& context) {
    source.assign_into(destination, context);
};

// The one hook for right-hand sides evaluated their own way. By default a
// node with assign_into (materialises: a reduction, a row op, a
// GEMM) writes straight into a destination of its shape; linalg/
// specialises this for relu(matmul(x, w) + b) and its kin (one GEMM with a
// fused epilogue). assign returns std::true_type when it wrote the
// destination, std::false_type to decline (the expression is then evaluated
// elementwise as usual), or a bool when that is known only at run time. The
// types keep the elementwise kernel of a right-hand side that never needs it
// out of the program.
template <class Src>
struct assignment_pattern {
    template <class Dst, class Context>
    static auto assign(const Src& source, const Dst& destination, Context& context)
    {
        if constexpr (writes_into<Src, Dst, Context> && std::is_same_v<typename Src::shape, typename Dst::shape>) {
            source.assign_into(destination, context);
            return std::true_type{};
        } else {
            return std::false_type{};
        }
    }
};

namespace detail::exec {

// cast<T>(e) assigned to T elements is e assigned: the store rounds to T
// once either way (T -> its compute type -> T is exact), and the loop then
// holds one conversion, not three.
template <class T, class Src>
struct rounds_to : std::false_type {};
template <class T, class E>
struct rounds_to<T, internal::map_expr<ops::cast_to<T>, E>> : std::true_type {};

template <class Src, class Dst>
auto source_node(const Src& source)
{
    using T = std::remove_cv_t<typename Dst::element_type>;
    using V = compute_t<T>;
    if constexpr (scalar_value<Src>) return scalar_expr<V>{internal::scalar_as<V>(source)};
    else if constexpr (rounds_to<T, Src>::value) return std::get<0>(source.operands);
    else return as_node(source);  // a Tensor is read through its view
}

// Evaluates sources[i] into destinations[i] for every i, in one traversal of
// the destinations' (common) shape.
template <class Place, class Dsts, class Srcs>
void run_elementwise(const Dsts& dsts, const Srcs& srcs, [[maybe_unused]] stream_ref stream)
{
    constexpr std::size_t n = decltype(dsts.head)::layout::shape::numel;
    if constexpr (host_accessible_v<Place>) {
        host_elementwise<n>(dsts, srcs, std::make_index_sequence<Dsts::size>{});
    } else {
#if TENET_CUDA_COMPILER
        // K: 16 bytes of the narrowest element any leaf or destination holds
        constexpr std::size_t dst_smallest = internal::pack_traits<Dsts>::smallest_element;
        constexpr std::size_t src_smallest = internal::pack_traits<Srcs>::smallest_element;
        constexpr std::size_t smallest = dst_smallest < src_smallest ? dst_smallest : src_smallest;
        constexpr std::size_t k = smallest >= 16 ? 1 : 16 / smallest;
        const bool vector_path = all_aligned<k>(dsts) && all_aligned<k>(srcs);
        launch_elementwise<n, k>(dsts, srcs, vector_path, stream);
#endif
    }
}

// Destinations written together must not share memory.
template <class... D, std::size_t... I>
void check_disjoint(const value_pack<D...>& dsts, std::index_sequence<I...>)
{
    const std::array<byte_range, sizeof...(I)> ranges{bytes_of(get<I>(dsts))...};
    for (std::size_t a = 0; a < ranges.size(); ++a)
        for (std::size_t b = a + 1; b < ranges.size(); ++b)
            if (overlap(ranges[a], ranges[b])) throw aliasing_error("tenet: tie(...): two destinations share memory");
}

// A right-hand side is a plain number or an expression.
template <class Src>
constexpr bool check_source()
{
    if constexpr (scalar_value<Src>) return true;
    else return internal::check_expression<Src>();
}

// dst = src (a node): through its assignment_pattern, else elementwise.
template <class D, class S>
void assign_source(const D& dst, const S& src)
{
    if constexpr (check_assignment<D, S>()) {
        using place = compute_place_t<typename D::place>;
        exec_context<place> context(current_stream());
        auto dst_eval = dst.prepare(context);
        require_memory(dst_eval);
        const auto written = assignment_pattern<S>::assign(src, dst, context);
        if constexpr (!std::is_same_v<std::remove_const_t<decltype(written)>, std::true_type>) {
            if constexpr (internal::check_prepare<S, exec_context<place>>()) {
                if (!written) {
                    auto src_eval = broadcast_to<typename D::shape>(src).prepare(context);
                    if constexpr (internal::check_evaluator<decltype(src_eval)>()) {
                        check_operands(dst_eval, src_eval);
                        run_elementwise<place>(make_value_pack(dst_eval), make_value_pack(src_eval), context.stream());
                    }
                }
            }
        }
    }
}

}  // namespace detail::exec

// destination = source: an expression, a tensor, or a plain number. A type
// that means to be an expression but misses a member gets one tenet: line
// naming it.
template <class Dst, class Src>
void assign(const Dst& destination, const Src& source)
{
    auto dst = detail::exec::destination_view(destination);
    using D = decltype(dst);
    if constexpr (detail::exec::check_source<Src>()) {
        detail::exec::assign_source(dst, detail::exec::source_node<Src, D>(source));
    }
}

// fill(t, v): every element of a tensor or view becomes v (the same as t = v).
template <class D, scalar_value V>
void fill(D&& destination, V value)
{
    assign(detail::exec::destination_view(destination), value);
}

namespace detail::exec {

template <class DestinationShape, class ExpressionShape>
struct shape_mismatch_in_compound_assignment {
    static constexpr auto text()
    {
        return fixed_string("tenet: shape mismatch in compound assignment: destination ") +
               shape_name<DestinationShape>::text() + fixed_string(" vs expression ") +
               shape_name<ExpressionShape>::text();
    }
};

template <class D>
concept compound_destination = is_tensor<std::remove_cvref_t<D>>::value || is_tensor_view<std::remove_cvref_t<D>>::value;

// d = combine(d, source): the destination read with its own mapping, so one
// fused pass (or, for y += matmul(a, b), one accumulating GEMM) -- see assign.
template <class D, class Src, class Combine>
void compound_assign(D& destination, const Src& source, Combine combine)
{
    const auto dst = destination_view(destination);
    if constexpr (scalar_value<Src>) {
        assign(dst, combine(dst, source));
    } else {
        using from = typename node_t<const Src&>::shape;
        using to = typename decltype(dst)::shape;
        constexpr bool fits = broadcasts_to_v<from, to>;
        static_assert(diagnose<fits, shape_mismatch_in_compound_assignment<to, from>>::value);
        if constexpr (fits) assign(dst, combine(dst, source));
    }
}

}  // namespace detail::exec

// y += e, y -= e, y *= e, y /= e for any expression or scalar e: y = y op e,
// one kernel (one loop nest on the host); y += matmul(a, b) accumulates in
// the GEMM (beta = 1 on the device).
template <detail::exec::compound_destination D, class E>
    requires(expression<std::decay_t<E>> || scalar_value<E>)
D&& operator+=(D&& destination, const E& source)
{
    detail::exec::compound_assign(destination, source, [](const auto& d, const auto& e) { return d + e; });
    return std::forward<D>(destination);
}

template <detail::exec::compound_destination D, class E>
    requires(expression<std::decay_t<E>> || scalar_value<E>)
D&& operator-=(D&& destination, const E& source)
{
    detail::exec::compound_assign(destination, source, [](const auto& d, const auto& e) { return d - e; });
    return std::forward<D>(destination);
}

template <detail::exec::compound_destination D, class E>
    requires(expression<std::decay_t<E>> || scalar_value<E>)
D&& operator*=(D&& destination, const E& source)
{
    detail::exec::compound_assign(destination, source, [](const auto& d, const auto& e) { return d * e; });
    return std::forward<D>(destination);
}

template <detail::exec::compound_destination D, class E>
    requires(expression<std::decay_t<E>> || scalar_value<E>)
D&& operator/=(D&& destination, const E& source)
{
    detail::exec::compound_assign(destination, source, [](const auto& d, const auto& e) { return d / e; });
    return std::forward<D>(destination);
}

template <class... E>
struct expression_pack {
    std::tuple<E...> expressions;
};

// pack(e1, e2, ...): the right-hand side of tie(...) = ...
template <class... E>
    requires(expression<std::decay_t<E>> && ...)
auto pack(E&&... expressions)
{
    return expression_pack<node_t<E>...>{{as_node(std::forward<E>(expressions))...}};
}

template <class... Views>
class tie_t {
public:
    explicit tie_t(Views... views) : views_(views...) {}

    template <class... E>
    void operator=(const expression_pack<E...>& sources) const
    {
        static_assert(sizeof...(E) == sizeof...(Views), "tenet: tie(...) = pack(...): one expression per destination");
        using first = std::tuple_element_t<0, std::tuple<Views...>>;
        static_assert((std::is_same_v<typename Views::shape, typename first::shape> && ...),
                      "tenet: tie(...): all destinations must have the same shape (they share one traversal)");
        if constexpr ((detail::exec::check_assignment<Views, E>() && ...)) {
            detail::exec::exec_context<compute_place_t<typename first::place>> context(current_stream());
            run(sources, context, std::index_sequence_for<Views...>{});
        }
    }

    // A right-hand side that writes the destinations itself (gradients(e, dy)).
    template <class Source>
        requires requires(const Source& source, const std::tuple<Views...>& views) { source.assign_to(views); }
    void operator=(const Source& source) const
    {
        source.assign_to(views_);
    }

private:
    template <class Pack, class Context, std::size_t... I>
    void run(const Pack& sources, Context& context, std::index_sequence<I...>) const
    {
        const auto dsts = make_value_pack(std::get<I>(views_).prepare(context)...);
        const auto srcs = make_value_pack(
            broadcast_to<typename std::tuple_element_t<I, std::tuple<Views...>>::shape>(std::get<I>(sources.expressions))
                .prepare(context)...);
        (detail::exec::require_memory(get<I>(dsts)), ...);
        // every source is read at the index each destination is written at
        const auto check_against_sources = [&](const auto& dst) { (detail::exec::check_operands(dst, get<I>(srcs)), ...); };
        (check_against_sources(get<I>(dsts)), ...);
        detail::exec::check_disjoint(dsts, std::index_sequence<I...>{});
        detail::exec::run_elementwise<compute_place_t<typename std::tuple_element_t<0, std::tuple<Views...>>::place>>(
            dsts, srcs, context.stream());
    }

    std::tuple<Views...> views_;
};

// tie(y, mask) = pack(relu(x), x > 0): one kernel writes both.
template <class... D>
auto tie(D&... destinations)
{
    return tie_t<decltype(detail::exec::destination_view(destinations))...>(detail::exec::destination_view(destinations)...);
}

}  // namespace tenet

namespace tenet {
using detail::exec::destination_view;
}  // namespace tenet

// For the folders above this one (see docs/ARCHITECTURE.md, "Namespaces").
namespace tenet::internal {
using detail::exec::writes_each_element_once;
using detail::exec::check_assignment;
using detail::exec::run_elementwise;
using detail::exec::check_disjoint;
}  // namespace tenet::internal
