// Mean squared error with a per-row validity mask.
//
//   mse_forward(loss, pred, target, valid);
//       loss = sum over valid rows and all N columns of (pred - target)^2
//              / (valid rows * N)
//   mse_backward(dpred, pred, target, valid, scale);
//       dpred = scale * 2 * (pred - target) / (valid rows * N)  on valid rows
//
// pred, target [rows..., N] (any expressions); valid [rows...], a row
// counting when its entry is nonzero; loss a rank-0 tensor; scale a number or
// a rank-0 tensor/expression read on the device. The overloads without
// `valid` count every row. Padding rows contribute nothing (their dpred is
// exactly 0, whatever they hold); no valid row at all: loss 0, dpred 0.
//
// Device: one kernel each; the forward's last block adds the rows' sums in
// row order (deterministic), the backward's blocks count the valid rows.
#pragma once

#include "row_checks.hpp"
#include "row_kernels.hpp"

#include <cstddef>
#include <type_traits>
#include <utility>
#include <vector>

namespace tenet {
namespace detail::rowwise {

// One row of the forward; channels (pred, target). Returns sum (p - t)^2.
struct mse_row {
    template <class A>
    using reduced = A;

    template <class Team, class Share, class A = typename Share::scalar>
    TENET_HD static A run(const Team& team, const Share& in)
    {
        return in.combine(team, A(0), add{}, [](auto, auto, const auto& v) { return (v[0] - v[1]) * (v[0] - v[1]); });
    }
};

// One row of the backward; k = 2 * scale / (valid rows * N).
struct mse_backward_row {
    template <class Share, class Out, class A = typename Share::scalar>
    TENET_HD static void run(const Share& in, const Out& dpred, bool valid, A k)
    {
        in.write(dpred, [&](auto, auto, const auto& v) { return valid ? k * (v[0] - v[1]) : A(0); });
    }
};

template <class A, std::size_t Length>
TENET_HD A mse_gradient_factor(A scale, A valid_rows)
{
    return valid_rows > A(0) ? A(2) * scale / (valid_rows * A(Length)) : A(0);
}

#if TENET_CUDA_COMPILER
template <class Plan, class In, class Valid, class Loss>
struct mse_forward_body {
    using plan = Plan;
    using A = typename In::scalar;
    In in;
    Valid valid;
    Loss loss;
    A* row_loss;
    unsigned* arrivals;

    __device__ void operator()() const
    {
        using team_t = device_team<A, Plan>;
        __shared__ typename team_t::storage storage;
        const team_t team(storage);
        for_team_rows<Plan>([&](std::size_t row) {
            const A s = mse_row::run(team, row_share<Plan, In>(in, row, team.rank()));
            if (team.rank() == 0) row_loss[row] = is_set(row_value<Plan::rows>(valid, row)) ? s : A(0);
        });
        if (last_block_to_arrive(arrivals))
            store_mean_loss<Plan::block, Plan::rows>(row_loss, valid, loss, A(Plan::length));
    }
};

template <class Plan, class In, class Dpred, class Valid, class Scale>
struct mse_backward_body {
    using plan = Plan;
    using A = typename In::scalar;
    In in;
    Dpred dpred;
    Valid valid;
    Scale scale;
    bool valid_vector;  // the mask's chunks are aligned for vector loads

    __device__ void operator()() const
    {
        const A k = mse_gradient_factor<A, Plan::length>(convert<A>(scale.at(0u)),
                                                         count_valid<Plan::block, Plan::rows, A>(valid, valid_vector));
        for_team_rows<Plan>([&](std::size_t row) {
            mse_backward_row::run(row_share<Plan, In>(in, row, team_rank<Plan>()), dpred,
                                  is_set(row_value<Plan::rows>(valid, row)), k);
        });
    }
};
#endif

template <class S, class Context, class In, class Valid, class Loss>
void run_mse_forward([[maybe_unused]] Context& context, const In& in, const Valid& valid, const Loss& loss)
{
    using geometry = row_geometry<S>;
    using A = typename In::scalar;
    constexpr std::size_t rows = geometry::count, length = geometry::length;
    if constexpr (host_accessible_v<typename Context::place>) {
        using plan = host_plan<rows, length>;
        std::vector<A> row_loss(rows);
        host_for_rows<rows, length>([&](std::size_t row) {
            const A s = mse_row::run(serial_team{}, row_share<plan, In>(in, row, 0));
            row_loss[row] = is_set(row_value<rows>(valid, row)) ? s : A(0);
        });
        host_store_mean_loss<rows>(row_loss, valid, loss, A(length));
    } else {
#if TENET_CUDA_COMPILER
        using plans = device_plans<rows, length, In::channels, In::smallest_element>;
        with_plan<plans>(aligned_for<plans>(in), [&](auto plan) {
            using body = mse_forward_body<decltype(plan), In, Valid, Loss>;
            finish_scratch<A> scratch(rows, context.stream());
            launch_rows(body{in, valid, loss, scratch.partials.data(), scratch.arrivals.data()}, row_grid<body>(),
                        context.stream());
        });
#endif
    }
}

template <class S, class Context, class In, class Dpred, class Valid, class Scale>
void run_mse_backward([[maybe_unused]] Context& context, const In& in, const Dpred& dpred, const Valid& valid,
                      const Scale& scale)
{
    using geometry = row_geometry<S>;
    using A = typename In::scalar;
    constexpr std::size_t rows = geometry::count, length = geometry::length;
    if constexpr (host_accessible_v<typename Context::place>) {
        A count = 0;
        for (std::size_t r = 0; r < rows; ++r) count += is_set(row_value<rows>(valid, r)) ? A(1) : A(0);
        const A k = mse_gradient_factor<A, length>(convert<A>(scale.at(0u)), count);
        using plan = host_plan<rows, length>;
        host_for_rows<rows, length>([&](std::size_t row) {
            mse_backward_row::run(row_share<plan, In>(in, row, 0), dpred, is_set(row_value<rows>(valid, row)), k);
        });
    } else {
#if TENET_CUDA_COMPILER
        using plans = device_plans<rows, length, In::channels, internal::smallest_element_of<In, Dpred>>;
        with_plan<plans>(aligned_for<plans>(in, dpred), [&](auto plan) {
            using body = mse_backward_body<decltype(plan), In, Dpred, Valid, Scale>;
            const bool valid_vector = valid.template aligned<valid_chunk<Valid>>();
            launch_rows(body{in, dpred, valid, scale, valid_vector}, row_grid<body>(), context.stream());
        });
#endif
    }
}

template <class Loss, class Pred, class Target, class Valid>
void mse_forward(Loss& loss, Pred&& pred, Target&& target, Valid&& valid)
{
    constexpr name op = name::mse_forward;
    auto loss_view = destination_view(loss);
    auto p_node = as_node(std::forward<Pred>(pred));
    auto t_node = as_node(std::forward<Target>(target));
    auto valid_node = as_node(std::forward<Valid>(valid));
    using LV = decltype(loss_view);
    using PN = decltype(p_node);
    using TN = decltype(t_node);
    using VN = decltype(valid_node);
    using S = typename PN::shape;
    using R = rows_shape_t<S>;
    if constexpr (has_rows<op, PN>() && shape_is<op, name::target, S, TN>() && shape_is<op, name::valid, R, VN>() &&
                  shape_is<op, name::loss, Shape<>, LV>() && places_agree<op, LV, PN, TN, VN>() &&
                  floating_destination<op, name::loss, LV>()) {
        exec_context<compute_place_t<typename LV::place>> context(current_stream());
        using A = accumulate_t<typename PN::value_type, typename TN::value_type>;
        const auto in = zip<A>(p_node.prepare(context), t_node.prepare(context));
        const auto v = valid_node.prepare(context);
        const auto lo = loss_view.prepare(context);
        check_row_operands(make_value_pack(lo), in, v);
        run_mse_forward<S>(context, in, v, lo);
    }
}

template <class Dpred, class Pred, class Target, class Valid, class Scale>
void mse_backward(Dpred& dpred, Pred&& pred, Target&& target, Valid&& valid, Scale&& scale)
{
    constexpr name op = name::mse_backward;
    auto out_view = destination_view(dpred);
    auto p_node = as_node(std::forward<Pred>(pred));
    auto t_node = as_node(std::forward<Target>(target));
    auto valid_node = as_node(std::forward<Valid>(valid));
    auto scale_n = scale_node(std::forward<Scale>(scale));
    using OV = decltype(out_view);
    using PN = decltype(p_node);
    using TN = decltype(t_node);
    using VN = decltype(valid_node);
    using KN = decltype(scale_n);
    using S = typename PN::shape;
    using R = rows_shape_t<S>;
    if constexpr (has_rows<op, PN>() && shape_is<op, name::dpred, S, OV>() && shape_is<op, name::target, S, TN>() &&
                  shape_is<op, name::valid, R, VN>() && shape_is<op, name::scale, Shape<>, KN>() &&
                  places_agree<op, OV, PN, TN, VN, KN>() && floating_destination<op, name::dpred, OV>()) {
        exec_context<compute_place_t<typename OV::place>> context(current_stream());
        using A = accumulate_t<typename PN::value_type, typename TN::value_type>;
        const auto in = zip<A>(p_node.prepare(context), t_node.prepare(context));
        const auto v = valid_node.prepare(context);
        const auto k = scale_n.prepare(context);
        const auto out = out_view.prepare(context);
        check_row_operands(make_value_pack(out), in, v, k);
        run_mse_backward<S>(context, in, out, v, k);
    }
}

}  // namespace detail::rowwise

template <row_destination Loss, class Pred, class Target, class Valid>
    requires(expression<std::decay_t<Pred>> && expression<std::decay_t<Target>> && expression<std::decay_t<Valid>>)
void mse_forward(Loss&& loss, Pred&& pred, Target&& target, Valid&& valid)
{
    detail::rowwise::mse_forward(loss, std::forward<Pred>(pred), std::forward<Target>(target),
                                 std::forward<Valid>(valid));
}

// Every row valid.
template <row_destination Loss, class Pred, class Target>
    requires(expression<std::decay_t<Pred>> && expression<std::decay_t<Target>>)
void mse_forward(Loss&& loss, Pred&& pred, Target&& target)
{
    using S = typename node_t<Pred>::shape;
    detail::rowwise::mse_forward(loss, std::forward<Pred>(pred), std::forward<Target>(target),
                                 detail::rowwise::all_rows_valid<S>());
}

template <row_destination Dpred, class Pred, class Target, class Valid, row_scale Scale>
    requires(expression<std::decay_t<Pred>> && expression<std::decay_t<Target>> && expression<std::decay_t<Valid>>)
void mse_backward(Dpred&& dpred, Pred&& pred, Target&& target, Valid&& valid, Scale&& scale)
{
    detail::rowwise::mse_backward(dpred, std::forward<Pred>(pred), std::forward<Target>(target),
                                  std::forward<Valid>(valid), std::forward<Scale>(scale));
}

// Every row valid.
template <row_destination Dpred, class Pred, class Target, row_scale Scale>
    requires(expression<std::decay_t<Pred>> && expression<std::decay_t<Target>>)
void mse_backward(Dpred&& dpred, Pred&& pred, Target&& target, Scale&& scale)
{
    using S = typename node_t<Pred>::shape;
    detail::rowwise::mse_backward(dpred, std::forward<Pred>(pred), std::forward<Target>(target),
                                  detail::rowwise::all_rows_valid<S>(), std::forward<Scale>(scale));
}

}  // namespace tenet
