// Per-row uncertainty scores of a classifier's logits, for active learning:
//
//   uncertainty_scores<uncertainty::entropy>(scores, logits * 0.5f + bias);
//   uncertainty_scores(scores, logits, kind);     // the kind chosen at run time
//
// logits [rows..., N] (any expression: it is evaluated inside the op), scores
// [rows...] (floating-point). With p = softmax(logits) over the last axis:
//   entropy           H = -sum p log p, in [0, log N]; larger: less certain
//   margin            p_top1 - p_top2, in [0, 1]; SMALLER: less certain (so
//                     the most uncertain rows are the top_k of -scores)
//   least_confidence  1 - p_top1, in [0, 1 - 1/N]; larger: less certain
// A row of one class scores entropy 0, margin 1, least confidence 0. Two
// classes tied for the top give margin exactly 0.
//
// One pass over the row engine per call: one loop nest on the host, one
// kernel on the device (a kernel per kind), accumulated in f32 (f64 for f64).
// With m the row's max, the scores are taken from the entries below m,
//   rest = sum exp(x - m), weighted = sum exp(x - m) (x - m)   (x < m),
// and the number of entries equal to m, so that s - 1 (s = sum exp(x - m))
// is never formed as a rounded 1 + rest: a confident row's small score keeps
// its relative precision (entropy log1p(s - 1) - weighted / s, least
// confidence (s - 1) / s, margin -expm1(x_top2 - m) / s).
// As softmax: a row with a NaN or a +inf, or of -inf only, scores NaN; a
// -inf entry in a row with a finite max has probability 0.
#pragma once

#include "../expr/math.hpp"
#include "row_checks.hpp"
#include "row_kernels.hpp"

#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>

namespace tenet {

// What uncertainty_scores computes (see above for each one's direction).
enum class uncertainty { entropy, margin, least_confidence };

namespace detail::rowwise {

// A row's leaders: (greatest value, how many entries equal it, greatest value
// below it or -inf). Merging two parts' leaders gives their union's.
struct merge_leaders {
    template <class A>
    TENET_HD vec<A, 3> operator()(const vec<A, 3>& a, const vec<A, 3>& b) const
    {
        if (a[0] != a[0]) return a;  // NaN: the row scores NaN whatever else it holds
        if (b[0] != b[0]) return b;
        if (a[0] > b[0]) return {{a[0], a[1], a[2] > b[0] ? a[2] : b[0]}};
        if (b[0] > a[0]) return {{b[0], b[1], b[2] > a[0] ? b[2] : a[0]}};
        return {{a[0], a[1] + b[1], a[2] > b[2] ? a[2] : b[2]}};
    }
};

template <class A>
TENET_HD constexpr vec<A, 3> no_leaders()
{
    return {{-numeric_traits<A>::infinity(), A(0), -numeric_traits<A>::infinity()}};
}

// The score from the row's max m, its count, the runner-up below it, and the
// sums over the entries below m (see the top of the file).
template <uncertainty Kind, class A>
TENET_HD A score_of(A m, A ties, A runner_up, A rest, A weighted)
{
    if (m - m != A(0)) return numeric_traits<A>::quiet_nan();  // m is NaN or +-inf: softmax is NaN
    const A s_minus_1 = (ties - A(1)) + rest, s = ties + rest;
    if constexpr (Kind == uncertainty::entropy) return math::log1p(s_minus_1) - weighted / s;
    else if constexpr (Kind == uncertainty::margin) return ties > A(1) ? A(0) : -math::expm1(runner_up - m) / s;
    else return s_minus_1 / s;
}

// One row's score; channels (logits).
template <uncertainty Kind>
struct uncertainty_row {
    template <class Team, class Share, class A = typename Share::scalar>
    TENET_HD static A run(const Team& team, const Share& x)
    {
        vec<A, 3> top = no_leaders<A>();
        x.for_each([&](auto, auto, const auto& v) {
            top = merge_leaders{}(top, vec<A, 3>{{v[0], A(1), -numeric_traits<A>::infinity()}});
        });
        top = team.reduce(top, merge_leaders{});
        const A m = top[0];
        vec<A, 3> sums{};  // rest, weighted (the third lane rides along: one team type)
        x.for_each([&](auto, auto, const auto& v) {
            const A d = v[0] - m, e = v[0] < m ? math::exp(d) : A(0);
            sums[0] += e;
            // e = 0 for x = -inf, where e * d would be NaN
            if constexpr (Kind == uncertainty::entropy) sums[1] += e > A(0) ? e * d : A(0);
        });
        sums = team.reduce(sums, add{});
        return score_of<Kind>(m, top[1], top[2], sums[0], sums[1]);
    }
};

#if TENET_CUDA_COMPILER
template <class Plan, uncertainty Kind, class In, class Out>
struct uncertainty_body {
    using plan = Plan;
    using A = typename In::scalar;
    In in;
    Out out;

    __device__ void operator()() const
    {
        using team_t = device_team<vec<A, 3>, Plan>;
        __shared__ typename team_t::storage storage;
        const team_t team(storage);
        for_team_rows<Plan>([&](std::size_t row) {
            const A score = uncertainty_row<Kind>::run(team, row_share<Plan, In>(in, row, team.rank()));
            if (team.rank() == 0) out.store(static_cast<kernel_index<Plan::rows>>(row), score);
        });
    }
};
#endif

template <uncertainty Kind, class S, class Context, class In, class Out>
void run_uncertainty([[maybe_unused]] Context& context, const In& in, const Out& out)
{
    using geometry = row_geometry<S>;
    constexpr std::size_t rows = geometry::count, length = geometry::length;
    if constexpr (host_accessible_v<typename Context::place>) {
        using plan = host_plan<rows, length>;
        host_for_rows<rows, length>([&](std::size_t row) {
            out.store(static_cast<kernel_index<rows>>(row),
                      uncertainty_row<Kind>::run(serial_team{}, row_share<plan, In>(in, row, 0)));
        });
    } else {
#if TENET_CUDA_COMPILER
        using plans = device_plans<rows, length, In::channels, internal::smallest_element_of<In>>;
        with_plan<plans>(aligned_for<plans>(in), [&](auto plan) {
            using body = uncertainty_body<decltype(plan), Kind, In, Out>;
            launch_rows(body{in, out}, row_grid<body>(), context.stream());
        });
#endif
    }
}

template <uncertainty Kind, class Scores, class Logits>
void uncertainty_scores(Scores& scores, Logits&& logits)
{
    constexpr name op = name::uncertainty_scores;
    auto out_view = destination_view(scores);
    auto x_node = as_node(std::forward<Logits>(logits));
    using OV = decltype(out_view);
    using XN = decltype(x_node);
    using S = typename XN::shape;
    if constexpr (has_rows<op, XN>() && shape_is<op, name::scores, rows_shape_t<S>, OV>() &&
                  places_agree<op, OV, XN>() && floating_destination<op, name::scores, OV>()) {
        exec_context<compute_place_t<typename OV::place>> context(current_stream());
        const auto in = zip<accumulate_t<typename XN::value_type>>(x_node.prepare(context));
        const auto out = out_view.prepare(context);
        check_row_operands(make_value_pack(out), in);
        run_uncertainty<Kind, S>(context, in, out);
    }
}

}  // namespace detail::rowwise

// scores[r] = the Kind score of softmax(logits[r, :]) (see the top of the file).
template <uncertainty Kind, row_destination Scores, class Logits>
    requires expression<std::decay_t<Logits>>
void uncertainty_scores(Scores&& scores, Logits&& logits)
{
    detail::rowwise::uncertainty_scores<Kind>(scores, std::forward<Logits>(logits));
}

// The same with the kind chosen at run time (each kind is its own kernel).
template <row_destination Scores, class Logits>
    requires expression<std::decay_t<Logits>>
void uncertainty_scores(Scores&& scores, Logits&& logits, uncertainty kind)
{
    namespace rw = detail::rowwise;
    switch (kind) {
    case uncertainty::entropy:
        return rw::uncertainty_scores<uncertainty::entropy>(scores, std::forward<Logits>(logits));
    case uncertainty::margin:
        return rw::uncertainty_scores<uncertainty::margin>(scores, std::forward<Logits>(logits));
    case uncertainty::least_confidence:
        return rw::uncertainty_scores<uncertainty::least_confidence>(scores, std::forward<Logits>(logits));
    }
    throw error("tenet: uncertainty_scores: unknown uncertainty kind " + std::to_string(static_cast<int>(kind)));
}

}  // namespace tenet
