// Layer normalisation over the last axis (N elements), as PyTorch's
// layer_norm, with the statistics saved for the backward:
//
//   layernorm_forward(y, mean, rstd, x, gamma, beta, eps = 1e-5f);
//       mean = sum(x) / N, var = sum((x - mean)^2) / N (biased),
//       rstd = 1 / sqrt(var + eps), y = (x - mean) * rstd * gamma + beta
//   layernorm_backward(dx, dgamma, dbeta, dy, x, mean, rstd, gamma);
//       xhat = (x - mean) * rstd, g = dy * gamma,
//       dx = rstd * (g - mean(g) - xhat * mean(g * xhat)),
//       dgamma = sum over rows of dy * xhat, dbeta = sum over rows of dy
//
// x [rows..., N]; gamma, beta, dgamma, dbeta [N]; mean, rstd [rows...]
// (f32 for 16-bit and f32 inputs). Inputs may be any expressions. Sums are
// in f32, taken relative to the row's first element, and the variance is
// two-pass (about the mean): a large common offset costs no precision.
//
// Device: one kernel each. The backward's column sums are deterministic:
// each block sums its rows' columns in registers, writes one partial row,
// and the last block to finish adds the partial rows in block order.
#pragma once

#include "../expr/math.hpp"
#include "row_checks.hpp"
#include "row_kernels.hpp"

#include <cstddef>
#include <type_traits>
#include <utility>
#include <vector>

namespace tenet {
namespace detail::rowwise {

// One row of the forward; channels (x, gamma, beta). Returns (mean, rstd).
struct layernorm_row {
    template <class A>
    using reduced = A;

    template <class Team, class Share, class Out, class A = typename Share::scalar>
    TENET_HD static vec<A, 2> run(const Team& team, const Share& in, const Out& y, A eps)
    {
        constexpr A n = A(Share::length);
        // everything relative to the row's first element: a large common
        // offset costs no precision (only the saved mean is rounded)
        const A shift = in.at(0)[0];
        const A sum = in.combine(team, A(0), add{}, [&](auto, auto, const auto& v) { return v[0] - shift; });
        const A centre = sum / n;  // mean - shift
        const A squares = in.combine(team, A(0), add{}, [&](auto, auto, const auto& v) {
            const A d = (v[0] - shift) - centre;
            return d * d;
        });
        const A rstd = A(1) / math::sqrt(squares / n + eps);
        in.write(y, [&](auto, auto, const auto& v) { return ((v[0] - shift) - centre) * rstd * v[1] + v[2]; });
        const A mean = shift + centre;
        return {{mean, rstd}};
    }
};

// Per-column sums a thread keeps across its rows, by slot (see row_share).
template <class A, std::size_t Slots>
struct register_columns {
    A gamma[Slots] = {};
    A beta[Slots] = {};
    TENET_HD void add(std::size_t slot, A g, A b)
    {
        gamma[slot] += g;
        beta[slot] += b;
    }
};

// The host's: one partial row (slot = column on the host).
template <class A>
struct host_columns {
    A* gamma;
    A* beta;
    TENET_HD void add(std::size_t slot, A g, A b) const
    {
        gamma[slot] += g;
        beta[slot] += b;
    }
};

// One row of the backward; channels (dy, x, gamma). Writes dx, adds the
// row's dy * xhat and dy to the column sums.
struct layernorm_backward_row {
    template <class A>
    using reduced = vec<A, 2>;

    template <class Team, class Share, class Out, class Columns, class A = typename Share::scalar>
    TENET_HD static void run(const Team& team, const Share& in, const Out& dx, A mean, A rstd, Columns& columns)
    {
        constexpr A n = A(Share::length);
        // sum(g), sum(g * xhat)
        const vec<A, 2> sums = in.combine(team, vec<A, 2>{}, add{}, [&](auto, std::size_t slot, const auto& v) {
            const A xhat = (v[1] - mean) * rstd, g = v[0] * v[2];
            columns.add(slot, v[0] * xhat, v[0]);
            return vec<A, 2>{{g, g * xhat}};
        });
        const A mean_g = sums[0] / n, mean_gx = sums[1] / n;
        in.write(dx, [&](auto, auto, const auto& v) {
            const A xhat = (v[1] - mean) * rstd;
            return rstd * ((v[0] * v[2] - mean_g) - xhat * mean_gx);
        });
    }
};

// Host: the column sums are split into a fixed number of row blocks (so the
// result does not depend on the number of threads), added in block order.
inline constexpr std::size_t host_column_blocks = 32;

#if TENET_CUDA_COMPILER
template <class Plan, class In, class Y, class Mean, class Rstd>
struct layernorm_forward_body {
    using plan = Plan;
    using A = typename In::scalar;
    In in;
    Y y;
    Mean mean;
    Rstd rstd;
    A eps;

    __device__ void operator()() const
    {
        using team_t = device_team<A, Plan>;
        __shared__ typename team_t::storage storage;
        const team_t team(storage);
        for_team_rows<Plan>([&](std::size_t row) {
            const vec<A, 2> stats = layernorm_row::run(team, row_share<Plan, In>(in, row, team.rank()), y, eps);
            if (team.rank() != 0) return;
            const auto r = static_cast<kernel_index<Plan::rows>>(row);
            mean.store(r, stats[0]);
            rstd.store(r, stats[1]);
        });
    }
};

template <class Plan, class In, class Mean, class Rstd, class Dx, class Dgamma, class Dbeta>
struct layernorm_backward_body {
    using plan = Plan;
    using A = typename In::scalar;
    static constexpr std::size_t length = Plan::length;
    static constexpr std::size_t width = 2 * length;  // a partial row: dgamma's columns, then dbeta's
    static constexpr std::size_t slots = Plan::slots * Plan::vector;

    In in;
    Mean mean;
    Rstd rstd;
    Dx dx;
    Dgamma dgamma;
    Dbeta dbeta;
    A* partials;  // [gridDim.x][width]
    unsigned* arrivals;

    __device__ void operator()() const
    {
        using team_t = device_team<vec<A, 2>, Plan>;
        __shared__ typename team_t::storage storage;
        const team_t team(storage);
        register_columns<A, slots> columns;
        for_team_rows<Plan>([&](std::size_t row) {
            layernorm_backward_row::run(team, row_share<Plan, In>(in, row, team.rank()), dx,
                                        convert<A>(row_value<Plan::rows>(mean, row)),
                                        convert<A>(row_value<Plan::rows>(rstd, row)), columns);
        });
        write_partial(columns);
        if (last_block_to_arrive(arrivals)) finish();
    }

    // f(column, slot) for each column this thread summed.
    template <class F>
    __device__ static void for_my_columns(F&& f)
    {
        const unsigned rank = team_rank<Plan>();
TENET_UNROLL
        for (std::size_t k = 0; k < Plan::slots; ++k) {
            if (!Plan::present(rank, k)) continue;
TENET_UNROLL
            for (std::size_t v = 0; v < Plan::vector; ++v) f(Plan::column(rank, k) + v, k * Plan::vector + v);
        }
    }

    // The block's column sums (its teams' added in team order) -> partials.
    __device__ void write_partial(const register_columns<A, slots>& columns) const
    {
        A* mine = partials + std::size_t{blockIdx.x} * width;
        if constexpr (Plan::teams_per_block == 1) {
            for_my_columns([&](std::size_t column, std::size_t slot) {
                mine[column] = columns.gamma[slot];
                mine[length + column] = columns.beta[slot];
            });
        } else {
            __shared__ A teams[Plan::teams_per_block][width];
            A* own = teams[threadIdx.x / Plan::team];
            for_my_columns([&](std::size_t column, std::size_t slot) {
                own[column] = columns.gamma[slot];
                own[length + column] = columns.beta[slot];
            });
            __syncthreads();
            for (std::size_t j = threadIdx.x; j < width; j += Plan::block) {
                A s = 0;
                for (unsigned t = 0; t < Plan::teams_per_block; ++t) s += teams[t][j];
                mine[j] = s;
            }
        }
    }

    // The last block: every column's partials added in block order.
    __device__ void finish() const
    {
        const std::size_t blocks = gridDim.x;
        for (std::size_t j = threadIdx.x; j < width; j += Plan::block) {
            A acc[4] = {};
            std::size_t b = 0;
            for (; b + 3 < blocks; b += 4) {
TENET_UNROLL
                for (std::size_t u = 0; u < 4; ++u) acc[u] += __ldcg(partials + (b + u) * width + j);
            }
            for (; b < blocks; ++b) acc[0] += __ldcg(partials + b * width + j);
            const A total = (acc[0] + acc[1]) + (acc[2] + acc[3]);
            if (j < length) dgamma.store(static_cast<unsigned>(j), total);
            else dbeta.store(static_cast<unsigned>(j - length), total);
        }
    }
};

// At most this many blocks per multiprocessor write partial rows: enough to
// keep the memory system busy, few enough that the last block's sum is short.
inline constexpr unsigned partial_blocks_per_multiprocessor = 2;
#endif

template <class S, class Context, class In, class Y, class Mean, class Rstd>
void run_layernorm_forward([[maybe_unused]] Context& context, const In& in, const Y& y, const Mean& mean,
                           const Rstd& rstd, float eps)
{
    using geometry = row_geometry<S>;
    using A = typename In::scalar;
    if constexpr (host_accessible_v<typename Context::place>) {
        using plan = host_plan<geometry::count, geometry::length>;
        host_for_rows<geometry::count, geometry::length>([&](std::size_t row) {
            const vec<A, 2> stats = layernorm_row::run(serial_team{}, row_share<plan, In>(in, row, 0), y, A(eps));
            const auto r = static_cast<kernel_index<geometry::count>>(row);
            mean.store(r, stats[0]);
            rstd.store(r, stats[1]);
        });
    } else {
#if TENET_CUDA_COMPILER
        using plans = device_plans<geometry::count, geometry::length, In::channels, internal::smallest_element_of<In, Y>>;
        with_plan<plans>(aligned_for<plans>(in, y), [&](auto plan) {
            using body = layernorm_forward_body<decltype(plan), In, Y, Mean, Rstd>;
            launch_rows(body{in, y, mean, rstd, A(eps)}, row_grid<body>(), context.stream());
        });
#endif
    }
}

template <class S, class Context, class In, class Mean, class Rstd, class Dx, class Dgamma, class Dbeta>
void run_layernorm_backward([[maybe_unused]] Context& context, const In& in, const Mean& mean, const Rstd& rstd,
                            const Dx& dx, const Dgamma& dgamma, const Dbeta& dbeta)
{
    using geometry = row_geometry<S>;
    using A = typename In::scalar;
    constexpr std::size_t rows = geometry::count, length = geometry::length;
    if constexpr (host_accessible_v<typename Context::place>) {
        using plan = host_plan<rows, length>;
        constexpr std::size_t blocks = rows < host_column_blocks ? rows : host_column_blocks;
        std::vector<A> partials(blocks * 2 * length, A(0));
        TENET_OMP_PARALLEL_FOR_IF(rows * length >= 32768)
        for (std::size_t b = 0; b < blocks; ++b) {
            const host_columns<A> columns{&partials[b * 2 * length], &partials[b * 2 * length + length]};
            for (std::size_t row = b * rows / blocks; row < (b + 1) * rows / blocks; ++row)
                layernorm_backward_row::run(serial_team{}, row_share<plan, In>(in, row, 0), dx,
                                            convert<A>(row_value<rows>(mean, row)),
                                            convert<A>(row_value<rows>(rstd, row)), columns);
        }
        for (std::size_t j = 0; j < length; ++j) {
            A g = 0, b = 0;
            for (std::size_t block = 0; block < blocks; ++block) {
                g += partials[block * 2 * length + j];
                b += partials[block * 2 * length + length + j];
            }
            dgamma.store(static_cast<kernel_index<length>>(j), g);
            dbeta.store(static_cast<kernel_index<length>>(j), b);
        }
    } else {
#if TENET_CUDA_COMPILER
        // registers per element: dy, x, gamma cached, two column sums
        using plans = device_plans<rows, length, In::channels + 2, internal::smallest_element_of<In, Dx>>;
        with_plan<plans>(aligned_for<plans>(in, dx), [&](auto plan) {
            using body = layernorm_backward_body<decltype(plan), In, Mean, Rstd, Dx, Dgamma, Dbeta>;
            const unsigned cap = partial_blocks_per_multiprocessor * internal::current_device_shape().multiprocessors;
            const unsigned grid = row_grid<body>() < cap ? row_grid<body>() : cap;
            finish_scratch<A> scratch(std::size_t{grid} * body::width, context.stream());
            launch_rows(body{in, mean, rstd, dx, dgamma, dbeta, scratch.partials.data(), scratch.arrivals.data()}, grid,
                        context.stream());
        });
#endif
    }
}

template <class Y, class Mean, class Rstd, class X, class Gamma, class Beta>
void layernorm_forward(Y& y, Mean& mean, Rstd& rstd, X&& x, Gamma&& gamma, Beta&& beta, float eps)
{
    constexpr name op = name::layernorm_forward;
    auto y_view = destination_view(y);
    auto mean_view = destination_view(mean);
    auto rstd_view = destination_view(rstd);
    auto x_node = as_node(std::forward<X>(x));
    auto g_node = as_node(std::forward<Gamma>(gamma));
    auto b_node = as_node(std::forward<Beta>(beta));
    using YV = decltype(y_view);
    using MV = decltype(mean_view);
    using RV = decltype(rstd_view);
    using XN = decltype(x_node);
    using GN = decltype(g_node);
    using BN = decltype(b_node);
    using S = typename XN::shape;
    using R = rows_shape_t<S>;
    using C = Shape<row_geometry<S>::length>;
    if constexpr (has_rows<op, XN>() && shape_is<op, name::y, S, YV>() && shape_is<op, name::gamma, C, GN>() &&
                  shape_is<op, name::beta, C, BN>() && shape_is<op, name::mean, R, MV>() &&
                  shape_is<op, name::rstd, R, RV>() && places_agree<op, YV, MV, RV, XN, GN, BN>() &&
                  floating_destination<op, name::y, YV>() && floating_destination<op, name::mean, MV>() &&
                  floating_destination<op, name::rstd, RV>()) {
        exec_context<compute_place_t<typename YV::place>> context(current_stream());
        using A = accumulate_t<typename XN::value_type, typename GN::value_type, typename BN::value_type>;
        const auto in = zip<A>(x_node.prepare(context), internal::broadcast_node<S>(g_node).prepare(context),
                               internal::broadcast_node<S>(b_node).prepare(context));
        const auto out = y_view.prepare(context);
        const auto m = mean_view.prepare(context);
        const auto r = rstd_view.prepare(context);
        check_row_operands(make_value_pack(out, m, r), in);
        run_layernorm_forward<S>(context, in, out, m, r, eps);
    }
}

template <class Dx, class Dgamma, class Dbeta, class Dy, class X, class Mean, class Rstd, class Gamma>
void layernorm_backward(Dx& dx, Dgamma& dgamma, Dbeta& dbeta, Dy&& dy, X&& x, Mean&& mean, Rstd&& rstd, Gamma&& gamma)
{
    constexpr name op = name::layernorm_backward;
    auto dx_view = destination_view(dx);
    auto dg_view = destination_view(dgamma);
    auto db_view = destination_view(dbeta);
    auto dy_node = as_node(std::forward<Dy>(dy));
    auto x_node = as_node(std::forward<X>(x));
    auto mean_node = as_node(std::forward<Mean>(mean));
    auto rstd_node = as_node(std::forward<Rstd>(rstd));
    auto g_node = as_node(std::forward<Gamma>(gamma));
    using DXV = decltype(dx_view);
    using DGV = decltype(dg_view);
    using DBV = decltype(db_view);
    using DYN = decltype(dy_node);
    using XN = decltype(x_node);
    using MN = decltype(mean_node);
    using RN = decltype(rstd_node);
    using GN = decltype(g_node);
    using S = typename XN::shape;
    using R = rows_shape_t<S>;
    using C = Shape<row_geometry<S>::length>;
    if constexpr (has_rows<op, XN>() && shape_is<op, name::dx, S, DXV>() && shape_is<op, name::dy, S, DYN>() &&
                  shape_is<op, name::mean, R, MN>() && shape_is<op, name::rstd, R, RN>() &&
                  shape_is<op, name::gamma, C, GN>() && shape_is<op, name::dgamma, C, DGV>() &&
                  shape_is<op, name::dbeta, C, DBV>() && places_agree<op, DXV, DGV, DBV, DYN, XN, MN, RN, GN>() &&
                  floating_destination<op, name::dx, DXV>() && floating_destination<op, name::dgamma, DGV>() &&
                  floating_destination<op, name::dbeta, DBV>()) {
        exec_context<compute_place_t<typename DXV::place>> context(current_stream());
        using A = accumulate_t<typename DYN::value_type, typename XN::value_type, typename GN::value_type>;
        const auto in =
            zip<A>(dy_node.prepare(context), x_node.prepare(context), internal::broadcast_node<S>(g_node).prepare(context));
        const auto m = mean_node.prepare(context);
        const auto r = rstd_node.prepare(context);
        const auto out = dx_view.prepare(context);
        const auto dg = dg_view.prepare(context);
        const auto db = db_view.prepare(context);
        check_row_operands(make_value_pack(out, dg, db), in, m, r);
        run_layernorm_backward<S>(context, in, m, r, out, dg, db);
    }
}

}  // namespace detail::rowwise

template <row_destination Y, row_destination Mean, row_destination Rstd, class X, class Gamma, class Beta>
    requires(expression<std::decay_t<X>> && expression<std::decay_t<Gamma>> && expression<std::decay_t<Beta>>)
void layernorm_forward(Y&& y, Mean&& mean, Rstd&& rstd, X&& x, Gamma&& gamma, Beta&& beta, float eps = 1e-5f)
{
    detail::rowwise::layernorm_forward(y, mean, rstd, std::forward<X>(x), std::forward<Gamma>(gamma),
                                       std::forward<Beta>(beta), eps);
}

template <row_destination Dx, row_destination Dgamma, row_destination Dbeta, class Dy, class X, class Mean, class Rstd,
          class Gamma>
    requires(expression<std::decay_t<Dy>> && expression<std::decay_t<X>> && expression<std::decay_t<Mean>> &&
             expression<std::decay_t<Rstd>> && expression<std::decay_t<Gamma>>)
void layernorm_backward(Dx&& dx, Dgamma&& dgamma, Dbeta&& dbeta, Dy&& dy, X&& x, Mean&& mean, Rstd&& rstd,
                        Gamma&& gamma)
{
    detail::rowwise::layernorm_backward(dx, dgamma, dbeta, std::forward<Dy>(dy), std::forward<X>(x),
                                        std::forward<Mean>(mean), std::forward<Rstd>(rstd),
                                        std::forward<Gamma>(gamma));
}

}  // namespace tenet
