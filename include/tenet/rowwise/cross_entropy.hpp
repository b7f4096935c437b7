// Softmax cross-entropy with integer labels and a per-row validity mask.
//
//   cross_entropy_forward(loss, probs, logits, labels, valid);
//       probs = softmax(logits) over the last axis (saved for the backward);
//       loss  = mean over valid rows of -log softmax(logits)[label]
//             = mean of (max + log(sum(exp(logits - max)))) - logits[label]
//   cross_entropy_backward(dlogits, probs, labels, valid, scale);
//       dlogits = scale * (probs - onehot(label)) / (valid rows)  on valid rows
//
// Label smoothing (a trailing label_smoothing{e}, PyTorch's
// CrossEntropyLoss(label_smoothing=e)): the target is (1 - e) onehot + e / N,
//       loss    = mean of (1 - e) (-log p[label]) + e * mean_j(-log p[j])
//       dlogits = scale * (probs - (1 - e) onehot - e / N) / (valid rows)
// e in [0, 1] (else tenet::error); 0 is the plain loss, bit for bit.
//
// logits [rows..., N]; labels i32 [rows...]; valid [rows...] of any type, a
// row counting when its entry is nonzero (bool masks, 0/1 floats); loss a
// rank-0 tensor. The overloads without `valid` count every row. scale is a
// number or a rank-0 tensor/expression read on the device (a loss-scale
// tensor keeps the step CUDA-Graph capturable).
//
// Padding rows (valid 0) contribute nothing: their loss is not added, their
// dlogits are exactly 0 (whatever their logits or labels hold), and they do
// not count in the mean. No valid row at all: loss 0, dlogits all 0.
// A label outside [0, N) on a valid row: the host throws tenet::index_error
// (before writing anything); the device makes that row's loss NaN (so the
// mean is NaN) and its dlogits NaN -- it cannot throw.
//
// Device: one kernel each. The forward writes each row's loss to a scratch
// array, and the last block to finish adds them in row order (deterministic).
// The backward's kernel counts the valid rows itself: each block reads the
// mask, in 16-byte chunks (it is small and L2-resident).
#pragma once

#include "../expr/math.hpp"
#include "row_checks.hpp"
#include "row_kernels.hpp"

#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace tenet {
namespace detail::rowwise {

template <std::size_t Length>
TENET_HD constexpr bool label_in_range(i32 label)
{
    return label >= 0 && static_cast<std::size_t>(label) < Length;
}

// One row of the forward; channels (logits). Writes the row's
// probabilities, returns its loss (0 for a padding row, NaN for a label out
// of range).
struct cross_entropy_row {
    template <class A>
    using reduced = A;

    template <class Team, class Share, class Out, class A = typename Share::scalar>
    TENET_HD static A run(const Team& team, const Share& x, const Out& probs, i32 label, bool valid, A smoothing)
    {
        const bool in_range = label_in_range<Share::length>(label);
        // read before anything is written: probs may be the logits' own memory
        const A picked = valid && in_range ? x.at(static_cast<typename Share::index>(label))[0] : A(0);
        const A m = row_max(team, x);
        // smoothing: e * mean_j(m - x_j), each term >= 0 (so is m - picked)
        const A spread =
            smoothing != A(0)
                ? smoothing * x.combine(team, A(0), add{}, [&](auto, auto, const auto& v) { return m - v[0]; }) /
                      A(Share::length)
                : A(0);
        const A s = x.write_normalized(team, probs, [&](auto, auto, const auto& v) { return math::exp(v[0] - m); });
        if (!valid) return A(0);
        if (!in_range) return numeric_traits<A>::quiet_nan();
        const A nll = (m - picked) + math::log(s);
        return smoothing != A(0) ? (A(1) - smoothing) * (m - picked) + spread + math::log(s) : nll;
    }
};

// One row of the backward; channels (probs). k = scale / (valid rows).
struct cross_entropy_backward_row {
    template <class Share, class Out, class A = typename Share::scalar>
    TENET_HD static void run(const Share& p, const Out& dlogits, i32 label, bool valid, A k, A smoothing)
    {
        const A factor = label_in_range<Share::length>(label) ? k : numeric_traits<A>::quiet_nan();
        // the target: hot at the label, floor elsewhere (1 and 0 unsmoothed)
        const A floor = smoothing / A(Share::length);
        const A hot = (A(1) - smoothing) + floor;
        p.write(dlogits, [&](auto column, auto, const auto& v) {
            const A target = static_cast<long long>(column) == label ? hot : floor;
            return valid ? factor * (v[0] - target) : A(0);
        });
    }
};

// PyTorch's label_smoothing, checked on the host before a kernel runs.
template <class A>
A checked_smoothing(float e)
{
    if (!(e >= 0.0f && e <= 1.0f))
        throw error("tenet: cross_entropy: label_smoothing " + std::to_string(e) + " must lie in [0, 1]");
    return A(e);
}

// Host: a label out of range on a valid row is an error (thrown before
// anything is written).
template <name Op, std::size_t Rows, std::size_t Length, class Labels, class Valid>
void check_labels(const Labels& labels, const Valid& valid)
{
    for (std::size_t r = 0; r < Rows; ++r) {
        const i32 label = row_value<Rows>(labels, r);
        if (is_set(row_value<Rows>(valid, r)) && !label_in_range<Length>(label))
            throw index_error(std::string("tenet: ") + text_of<Op>().chars + ": label " + std::to_string(label) +
                              " of row " + std::to_string(r) + " is out of range [0, " + std::to_string(Length) +
                              ") (padding rows, valid 0, may hold any label)");
    }
}

// Host: ... and every entry of the mask is 0 or 1.
template <std::size_t Rows, std::size_t Length, class Labels, class Valid>
void check_batch(const Labels& labels, const Valid& valid)
{
    for (std::size_t r = 0; r < Rows; ++r) {
        const auto v = row_value<Rows>(valid, r);
        if (v != decltype(v)(0) && v != decltype(v)(1))
            throw error("tenet: valid[" + std::to_string(r) + "] is neither 0 nor 1 (1: a real row, 0: padding)");
    }
    check_labels<name::cross_entropy_forward, Rows, Length>(labels, valid);
}

#if TENET_CUDA_COMPILER
template <class Plan, class In, class Probs, class Labels, class Valid, class Loss>
struct cross_entropy_forward_body {
    using plan = Plan;
    using A = typename In::scalar;
    In in;
    Probs probs;
    Labels labels;
    Valid valid;
    Loss loss;
    A smoothing;
    A* row_loss;
    unsigned* arrivals;

    __device__ void operator()() const
    {
        using team_t = device_team<A, Plan>;
        __shared__ typename team_t::storage storage;
        const team_t team(storage);
        for_team_rows<Plan>([&](std::size_t row) {
            const A l = cross_entropy_row::run(team, row_share<Plan, In>(in, row, team.rank()), probs,
                                               row_value<Plan::rows>(labels, row),
                                               is_set(row_value<Plan::rows>(valid, row)), smoothing);
            if (team.rank() == 0) row_loss[row] = l;
        });
        if (last_block_to_arrive(arrivals)) store_mean_loss<Plan::block, Plan::rows>(row_loss, valid, loss, A(1));
    }
};

template <class Plan, class In, class Dlogits, class Labels, class Valid, class Scale>
struct cross_entropy_backward_body {
    using plan = Plan;
    using A = typename In::scalar;
    In in;
    Dlogits dlogits;
    Labels labels;
    Valid valid;
    Scale scale;
    A smoothing;
    bool valid_vector;  // the mask's chunks are aligned for vector loads

    __device__ void operator()() const
    {
        const A count = count_valid<Plan::block, Plan::rows, A>(valid, valid_vector);
        const A k = count > A(0) ? convert<A>(scale.at(0u)) / count : A(0);
        for_team_rows<Plan>([&](std::size_t row) {
            cross_entropy_backward_row::run(row_share<Plan, In>(in, row, team_rank<Plan>()), dlogits,
                                            row_value<Plan::rows>(labels, row),
                                            is_set(row_value<Plan::rows>(valid, row)), k, smoothing);
        });
    }
};
#endif

template <class S, class Context, class In, class Probs, class Labels, class Valid, class Loss>
void run_cross_entropy_forward([[maybe_unused]] Context& context, const In& in, const Probs& probs,
                               const Labels& labels, const Valid& valid, const Loss& loss,
                               typename In::scalar smoothing)
{
    using geometry = row_geometry<S>;
    using A = typename In::scalar;
    constexpr std::size_t rows = geometry::count, length = geometry::length;
    if constexpr (host_accessible_v<typename Context::place>) {
        check_labels<name::cross_entropy_forward, rows, length>(labels, valid);
        using plan = host_plan<rows, length>;
        std::vector<A> row_loss(rows);
        host_for_rows<rows, length>([&](std::size_t row) {
            row_loss[row] = cross_entropy_row::run(serial_team{}, row_share<plan, In>(in, row, 0), probs,
                                                   row_value<rows>(labels, row), is_set(row_value<rows>(valid, row)),
                                                   smoothing);
        });
        host_store_mean_loss<rows>(row_loss, valid, loss, A(1));
    } else {
#if TENET_CUDA_COMPILER
        using plans = device_plans<rows, length, In::channels, internal::smallest_element_of<In, Probs>>;
        with_plan<plans>(aligned_for<plans>(in, probs), [&](auto plan) {
            using body = cross_entropy_forward_body<decltype(plan), In, Probs, Labels, Valid, Loss>;
            finish_scratch<A> scratch(rows, context.stream());
            launch_rows(body{in, probs, labels, valid, loss, smoothing, scratch.partials.data(), scratch.arrivals.data()},
                        row_grid<body>(), context.stream());
        });
#endif
    }
}

template <class S, class Context, class In, class Dlogits, class Labels, class Valid, class Scale>
void run_cross_entropy_backward([[maybe_unused]] Context& context, const In& in, const Dlogits& dlogits,
                                const Labels& labels, const Valid& valid, const Scale& scale,
                                typename In::scalar smoothing)
{
    using geometry = row_geometry<S>;
    using A = typename In::scalar;
    constexpr std::size_t rows = geometry::count, length = geometry::length;
    if constexpr (host_accessible_v<typename Context::place>) {
        check_labels<name::cross_entropy_backward, rows, length>(labels, valid);
        A count = 0;
        for (std::size_t r = 0; r < rows; ++r) count += is_set(row_value<rows>(valid, r)) ? A(1) : A(0);
        const A k = count > A(0) ? convert<A>(scale.at(0u)) / count : A(0);
        using plan = host_plan<rows, length>;
        host_for_rows<rows, length>([&](std::size_t row) {
            cross_entropy_backward_row::run(row_share<plan, In>(in, row, 0), dlogits, row_value<rows>(labels, row),
                                            is_set(row_value<rows>(valid, row)), k, smoothing);
        });
    } else {
#if TENET_CUDA_COMPILER
        using plans = device_plans<rows, length, In::channels, internal::smallest_element_of<In, Dlogits>>;
        with_plan<plans>(aligned_for<plans>(in, dlogits), [&](auto plan) {
            using body = cross_entropy_backward_body<decltype(plan), In, Dlogits, Labels, Valid, Scale>;
            const bool valid_vector = valid.template aligned<valid_chunk<Valid>>();
            launch_rows(body{in, dlogits, labels, valid, scale, smoothing, valid_vector}, row_grid<body>(),
                        context.stream());
        });
#endif
    }
}

template <class Loss, class Probs, class Logits, class Labels, class Valid>
void cross_entropy_forward(Loss& loss, Probs& probs, Logits&& logits, Labels&& labels, Valid&& valid, float smoothing)
{
    constexpr name op = name::cross_entropy_forward;
    auto loss_view = destination_view(loss);
    auto probs_view = destination_view(probs);
    auto x_node = as_node(std::forward<Logits>(logits));
    auto labels_node = as_node(std::forward<Labels>(labels));
    auto valid_node = as_node(std::forward<Valid>(valid));
    using LV = decltype(loss_view);
    using PV = decltype(probs_view);
    using XN = decltype(x_node);
    using LN = decltype(labels_node);
    using VN = decltype(valid_node);
    using S = typename XN::shape;
    using R = rows_shape_t<S>;
    if constexpr (has_rows<op, XN>() && shape_is<op, name::probs, S, PV>() && shape_is<op, name::labels, R, LN>() &&
                  shape_is<op, name::valid, R, VN>() && shape_is<op, name::loss, Shape<>, LV>() &&
                  integer_labels<op, LN>() && places_agree<op, LV, PV, XN, LN, VN>() &&
                  floating_destination<op, name::loss, LV>() && floating_destination<op, name::probs, PV>()) {
        exec_context<compute_place_t<typename PV::place>> context(current_stream());
        const auto in = zip<accumulate_t<typename XN::value_type>>(x_node.prepare(context));
        const auto l = labels_node.prepare(context);
        const auto v = valid_node.prepare(context);
        const auto out = probs_view.prepare(context);
        const auto lo = loss_view.prepare(context);
        check_row_operands(make_value_pack(out, lo), in, l, v);
        run_cross_entropy_forward<S>(context, in, out, l, v, lo, checked_smoothing<typename decltype(in)::scalar>(smoothing));
    }
}

template <class Dlogits, class Probs, class Labels, class Valid, class Scale>
void cross_entropy_backward(Dlogits& dlogits, Probs&& probs, Labels&& labels, Valid&& valid, Scale&& scale,
                            float smoothing)
{
    constexpr name op = name::cross_entropy_backward;
    auto out_view = destination_view(dlogits);
    auto p_node = as_node(std::forward<Probs>(probs));
    auto labels_node = as_node(std::forward<Labels>(labels));
    auto valid_node = as_node(std::forward<Valid>(valid));
    auto scale_n = scale_node(std::forward<Scale>(scale));
    using OV = decltype(out_view);
    using PN = decltype(p_node);
    using LN = decltype(labels_node);
    using VN = decltype(valid_node);
    using KN = decltype(scale_n);
    using S = typename PN::shape;
    using R = rows_shape_t<S>;
    if constexpr (has_rows<op, PN>() && shape_is<op, name::dlogits, S, OV>() && shape_is<op, name::labels, R, LN>() &&
                  shape_is<op, name::valid, R, VN>() && shape_is<op, name::scale, Shape<>, KN>() &&
                  integer_labels<op, LN>() && places_agree<op, OV, PN, LN, VN, KN>() &&
                  floating_destination<op, name::dlogits, OV>()) {
        exec_context<compute_place_t<typename OV::place>> context(current_stream());
        const auto in = zip<accumulate_t<typename PN::value_type>>(p_node.prepare(context));
        const auto l = labels_node.prepare(context);
        const auto v = valid_node.prepare(context);
        const auto k = scale_n.prepare(context);
        const auto out = out_view.prepare(context);
        check_row_operands(make_value_pack(out), in, l, v, k);
        run_cross_entropy_backward<S>(context, in, out, l, v, k, checked_smoothing<typename decltype(in)::scalar>(smoothing));
    }
}

}  // namespace detail::rowwise

// PyTorch's CrossEntropyLoss(label_smoothing=epsilon): a trailing argument of
// the forward and the backward (give both the same).
struct label_smoothing {
    float epsilon = 0.0f;
};

template <row_destination Loss, row_destination Probs, class Logits, class Labels, class Valid>
    requires(expression<std::decay_t<Logits>> && expression<std::decay_t<Labels>> && expression<std::decay_t<Valid>>)
void cross_entropy_forward(Loss&& loss, Probs&& probs, Logits&& logits, Labels&& labels, Valid&& valid,
                           label_smoothing smoothing = {})
{
    detail::rowwise::cross_entropy_forward(loss, probs, std::forward<Logits>(logits), std::forward<Labels>(labels),
                                           std::forward<Valid>(valid), smoothing.epsilon);
}

// Every row valid.
template <row_destination Loss, row_destination Probs, class Logits, class Labels>
    requires(expression<std::decay_t<Logits>> && expression<std::decay_t<Labels>>)
void cross_entropy_forward(Loss&& loss, Probs&& probs, Logits&& logits, Labels&& labels,
                           label_smoothing smoothing = {})
{
    using S = typename node_t<Logits>::shape;
    detail::rowwise::cross_entropy_forward(loss, probs, std::forward<Logits>(logits), std::forward<Labels>(labels),
                                           detail::rowwise::all_rows_valid<S>(), smoothing.epsilon);
}

template <row_destination Dlogits, class Probs, class Labels, class Valid, row_scale Scale>
    requires(expression<std::decay_t<Probs>> && expression<std::decay_t<Labels>> && expression<std::decay_t<Valid>>)
void cross_entropy_backward(Dlogits&& dlogits, Probs&& probs, Labels&& labels, Valid&& valid, Scale&& scale,
                            label_smoothing smoothing = {})
{
    detail::rowwise::cross_entropy_backward(dlogits, std::forward<Probs>(probs), std::forward<Labels>(labels),
                                            std::forward<Valid>(valid), std::forward<Scale>(scale), smoothing.epsilon);
}

// Host operands: throws before anything is written when an entry of valid is
// neither 0 nor 1 (tenet::error) or a valid row's label is outside [0, N) for
// logits of shape LogitsShape (index_error). A trainer checks a batch so.
template <shape_type LogitsShape, class Labels, class Valid>
    requires(expression<std::decay_t<Labels>> && expression<std::decay_t<Valid>>)
void check_cross_entropy_batch(Labels&& labels, Valid&& valid)
{
    using namespace detail::rowwise;
    using R = rows_shape_t<LogitsShape>;
    auto labels_node = as_node(std::forward<Labels>(labels));
    auto valid_node = as_node(std::forward<Valid>(valid));
    using LN = decltype(labels_node);
    using VN = decltype(valid_node);
    constexpr name op = name::cross_entropy_forward;
    if constexpr (shape_is<op, name::labels, R, LN>() && shape_is<op, name::valid, R, VN>() &&
                  integer_labels<op, LN>()) {
        static_assert(host_accessible_v<typename LN::place> && host_accessible_v<typename VN::place>,
                      "tenet: check_cross_entropy_batch reads Host labels and masks");
        exec_context<Host> context(current_stream());
        check_batch<R::numel, row_geometry<LogitsShape>::length>(labels_node.prepare(context),
                                                                 valid_node.prepare(context));
    }
}

// Every row valid.
template <row_destination Dlogits, class Probs, class Labels, row_scale Scale>
    requires(expression<std::decay_t<Probs>> && expression<std::decay_t<Labels>>)
void cross_entropy_backward(Dlogits&& dlogits, Probs&& probs, Labels&& labels, Scale&& scale,
                            label_smoothing smoothing = {})
{
    using S = typename node_t<Probs>::shape;
    detail::rowwise::cross_entropy_backward(dlogits, std::forward<Probs>(probs), std::forward<Labels>(labels),
                                            detail::rowwise::all_rows_valid<S>(), std::forward<Scale>(scale),
                                            smoothing.epsilon);
}

}  // namespace tenet
