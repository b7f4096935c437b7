// softmax and log_softmax over the last axis, and their backwards.
//
//   y = softmax(x * 0.5f);      one kernel (one loop nest on the host): the
//                               input expression is evaluated inside it
//   z = y + log_softmax(x);     inside a larger expression the row op is
//                               materialised once into a scratch tensor
//   softmax_backward(dx, dy, y);        dx = y * (dy - sum(dy * y))
//   log_softmax_backward(dx, dy, y);    dx = dy - exp(y) * sum(dy)
//
// Numerically stable: softmax is exp(x - max) / sum(exp(x - max)), and
// log_softmax is (x - max) - log(sum(exp(x - max))), accumulated in f32 (f64
// for f64) and rounded once at the store. A NaN makes its whole row NaN; a
// row of -inf only, or with +inf, is NaN too (max - max is NaN), as in
// PyTorch.
#pragma once

#include "../expr/math.hpp"
#include "row_checks.hpp"
#include "row_kernels.hpp"

#include <type_traits>
#include <utility>

namespace tenet {
namespace detail::rowwise {

// One row of softmax (Log: log_softmax); share channels: (x).
template <bool Log>
struct softmax_row {
    template <class A>
    using reduced = A;

    template <class Team, class Share, class Out>
    TENET_HD static void run(const Team& team, const Share& x, const Out& y)
    {
        using A = typename Share::scalar;
        const A m = row_max(team, x);
        const auto e = [&](auto, auto, const auto& v) { return math::exp(v[0] - m); };
        if constexpr (Log) {
            const A log_s = math::log(x.combine(team, A(0), add{}, e));
            x.write(y, [&](auto, auto, const auto& v) { return (v[0] - m) - log_s; });
        } else {
            x.write_normalized(team, y, e);
        }
    }
};

// One row of the backward of softmax (Log: of log_softmax); channels (dy, y).
template <bool Log>
struct softmax_backward_row {
    template <class A>
    using reduced = A;

    template <class Team, class Share, class Out>
    TENET_HD static void run(const Team& team, const Share& in, const Out& dx)
    {
        using A = typename Share::scalar;
        const A s = in.combine(team, A(0), add{}, [](auto, auto, const auto& v) { return Log ? v[0] : v[0] * v[1]; });
        in.write(dx, [&](auto, auto, const auto& v) { return Log ? v[0] - math::exp(v[1]) * s : v[1] * (v[0] - s); });
    }
};

#if TENET_CUDA_COMPILER
template <class Plan, class Row, class In, class Out>
struct one_output_body {
    using plan = Plan;
    In in;
    Out out;

    __device__ void operator()() const
    {
        using team_t = device_team<typename Row::template reduced<typename In::scalar>, Plan>;
        __shared__ typename team_t::storage storage;
        const team_t team(storage);
        for_team_rows<Plan>([&](std::size_t row) { Row::run(team, row_share<Plan, In>(in, row, team.rank()), out); });
    }
};
#endif

// Runs Row over every row of S: reads the zipped input In, writes Out.
template <class Row, class S, class Context, class In, class Out>
void run_one_output([[maybe_unused]] Context& context, const In& in, const Out& out)
{
    using geometry = row_geometry<S>;
    if constexpr (host_accessible_v<typename Context::place>) {
        using plan = host_plan<geometry::count, geometry::length>;
        host_for_rows<geometry::count, geometry::length>(
            [&](std::size_t row) { Row::run(serial_team{}, row_share<plan, In>(in, row, 0), out); });
    } else {
#if TENET_CUDA_COMPILER
        using plans = device_plans<geometry::count, geometry::length, In::channels, internal::smallest_element_of<In, Out>>;
        with_plan<plans>(aligned_for<plans>(in, out), [&](auto plan) {
            using body = one_output_body<decltype(plan), Row, In, Out>;
            launch_rows(body{in, out}, row_grid<body>(), context.stream());
        });
#endif
    }
}

// The lazy node: softmax(x) / log_softmax(x), written straight into a
// destination of its shape, or into a scratch tensor inside a larger
// expression (like a reduction).
template <class E, bool Log>
struct softmax_expr : materialises<softmax_expr<E, Log>> {
    using shape = typename E::shape;
    using value_type = floating_t<typename E::value_type>;
    using place = typename E::place;

    E operand;

    template <class Dst, class Context>
    void assign_into(const Dst& destination, Context& context) const
    {
        const auto in = zip<value_type>(operand.prepare(context));
        const auto out = destination.prepare(context);
        check_row_operands(make_value_pack(out), in);
        run_one_output<softmax_row<Log>, shape>(context, in, out);
    }
};

template <bool Log, class E>
auto make_softmax(E&& x)
{
    using N = node_t<E>;
    constexpr name op = Log ? name::log_softmax : name::softmax;
    if constexpr (has_rows<op, N>()) return softmax_expr<N, Log>{{}, as_node(std::forward<E>(x))};
    else return internal::failed_expression{};
}

template <bool Log, class Dx, class Dy, class Y>
void softmax_backward(Dx& dx, Dy&& dy, Y&& y)
{
    constexpr name op = Log ? name::log_softmax_backward : name::softmax_backward;
    auto out = destination_view(dx);
    auto g = as_node(std::forward<Dy>(dy));
    auto v = as_node(std::forward<Y>(y));
    using O = decltype(out);
    using S = typename O::shape;
    if constexpr (has_rows<op, O>() && shape_is<op, name::dy, S, decltype(g)>() &&
                  shape_is<op, name::y, S, decltype(v)>() && places_agree<op, O, decltype(g), decltype(v)>() &&
                  floating_destination<op, name::dx, O>()) {
        exec_context<compute_place_t<typename O::place>> context(current_stream());
        using A = accumulate_t<typename decltype(g)::value_type, typename decltype(v)::value_type>;
        const auto in = zip<A>(g.prepare(context), v.prepare(context));
        const auto dst = out.prepare(context);
        check_row_operands(make_value_pack(dst), in);
        run_one_output<softmax_backward_row<Log>, S>(context, in, dst);
    }
}

}  // namespace detail::rowwise

// softmax(x), log_softmax(x): over the last axis; lazy (see above).
template <class E>
    requires expression<std::decay_t<E>>
auto softmax(E&& x)
{
    return detail::rowwise::make_softmax<false>(std::forward<E>(x));
}

template <class E>
    requires expression<std::decay_t<E>>
auto log_softmax(E&& x)
{
    return detail::rowwise::make_softmax<true>(std::forward<E>(x));
}

// dx = y * (dy - sum(dy * y)) along the last axis, y = softmax(x) (saved).
template <row_destination Dx, class Dy, class Y>
    requires(expression<std::decay_t<Dy>> && expression<std::decay_t<Y>>)
void softmax_backward(Dx&& dx, Dy&& dy, Y&& y)
{
    detail::rowwise::softmax_backward<false>(dx, std::forward<Dy>(dy), std::forward<Y>(y));
}

// dx = dy - exp(y) * sum(dy) along the last axis, y = log_softmax(x) (saved).
template <row_destination Dx, class Dy, class Y>
    requires(expression<std::decay_t<Dy>> && expression<std::decay_t<Y>>)
void log_softmax_backward(Dx&& dx, Dy&& dy, Y&& y)
{
    detail::rowwise::softmax_backward<true>(dx, std::forward<Dy>(dy), std::forward<Y>(y));
}

}  // namespace tenet
