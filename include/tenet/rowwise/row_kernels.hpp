// What the row-wise ops share on top of the row engine
// (reduce/row_engine.hpp): a row is the last axis (row_geometry); the ops'
// inputs are zipped into one evaluator (zip_eval) and read by row_share; the
// losses' validity masks and their mean over valid rows.
#pragma once

#include "../exec/aliasing.hpp"
#include "../exec/context.hpp"
#include "../expr/lanes.hpp"
#include "../reduce/ops.hpp"
#include "../reduce/row_engine.hpp"
#include "../shape/layout.hpp"

#include <array>
#include <cstddef>
#include <type_traits>
#include <utility>
#include <vector>

namespace tenet::detail::rowwise {

using internal::add;
using internal::row_plan;
using internal::host_plan;
using internal::device_plans;
using internal::aligned_for;
using internal::with_plan;
using internal::row_share;
using internal::serial_team;
using internal::host_for_rows;
#if TENET_CUDA_COMPILER
using internal::team_rank;
using internal::for_team_rows;
using internal::device_team;
using internal::block_sum;
using internal::strided_sum;
using internal::last_block_to_arrive;
using internal::row_grid;
using internal::launch_rows;
using internal::finish_scratch;
#endif

// The rows of shape S: its last axis is the row (a rank-0 shape is one row of one).
template <class S>
struct row_geometry {
    static constexpr std::size_t rank = S::rank == 0 ? 1 : S::rank;
    static constexpr std::size_t length = S::rank == 0 ? 1 : S::extents[rank - 1];
    static constexpr std::size_t count = S::numel / length;
    struct leading {
        static constexpr std::array<std::size_t, rank - 1> extents = [] {
            std::array<std::size_t, rank - 1> e{};
            for (std::size_t d = 0; d + 1 < rank; ++d) e[d] = S::extents[d];
            return e;
        }();
    };
    using rows_shape = shape_from_t<leading>;  // S without its last axis
};

template <class S>
using rows_shape_t = typename row_geometry<S>::rows_shape;

// Row math accumulates in f32 (f64 when an input computes in f64).
template <class... V>
using accumulate_t = std::conditional_t<(std::is_same_v<V, f64> || ...), f64, f32>;

// max that propagates NaN (the reductions' monoid)
template <class A>
using greatest = reductions::extreme<A, true>;

// The row's greatest first-channel value (NaN if it holds one), in every
// member of the team.
template <class Team, class Share, class A = typename Share::scalar>
TENET_HD A row_max(const Team& team, const Share& x)
{
    return x.combine(team, greatest<A>::identity(), greatest<A>{}, [](auto, auto, const auto& v) { return v[0]; });
}

// Several inputs of one shape read together: element i is the vector of
// their values at i, in the accumulate type A.
template <class A, class... E>
struct zip_eval : reads_evaluators<zip_eval<A, E...>> {
    using scalar = A;
    using value_type = vec<A, sizeof...(E)>;
    static constexpr std::size_t channels = sizeof...(E);

    value_pack<E...> parts;

    template <class Index>
    TENET_HD value_type at(Index i) const
    {
        return at_all(i, std::index_sequence_for<E...>{});
    }

    template <std::size_t K, class Index>
    TENET_HD vec<value_type, K> chunk(Index i) const
    {
        return chunk_all<K>(i, std::index_sequence_for<E...>{});
    }

    const value_pack<E...>& reads() const { return parts; }

    static constexpr std::size_t smallest_element = internal::smallest_element_of<E...>;

    template <std::size_t K>
    static constexpr internal::host_walk host_walk_for = internal::host_walk_of_all<K, E...>();

private:
    template <class Index, std::size_t... I>
    TENET_HD value_type at_all(Index i, std::index_sequence<I...>) const
    {
        return {{convert<A>(get<I>(parts).at(i))...}};
    }

    template <std::size_t K, class Index, std::size_t... I>
    TENET_HD vec<value_type, K> chunk_all(Index i, std::index_sequence<I...>) const
    {
        const auto loaded = make_value_pack(internal::evaluate_lanes<K>(get<I>(parts), i)...);
        vec<value_type, K> r;
TENET_UNROLL
        for (std::size_t k = 0; k < K; ++k) r[k] = value_type{{convert<A>(get<I>(loaded)[k])...}};
        return r;
    }
};

template <class A, class... E>
zip_eval<A, E...> zip(const E&... evaluators)
{
    return {{}, make_value_pack(evaluators...)};
}

// A per-row operand's value at `row`.
// Mask entries per 16-byte chunk (1 for a mask that reads no memory).
template <class Valid>
inline constexpr std::size_t valid_chunk = Valid::smallest_element >= 16 ? 1 : 16 / Valid::smallest_element;

template <std::size_t Rows, class E>
TENET_HD auto row_value(const E& e, std::size_t row)
{
    return e.at(static_cast<kernel_index<Rows>>(row));
}

// A mask entry counts when it is nonzero (bool, integer or float masks).
template <class V>
TENET_HD constexpr bool is_set(V v)
{
    return v != V(0);
}

// A loss: the sum of the valid rows' losses over (valid rows x per_row
// elements); 0 when no row is valid.
template <class A>
TENET_HD A mean_loss(A sum, A valid_rows, A per_row)
{
    return valid_rows > A(0) ? sum / (valid_rows * per_row) : A(0);
}

// Host: loss = mean_loss over the rows' losses (padding rows hold 0), added
// in row order.
template <std::size_t Rows, class A, class Valid, class Loss>
void host_store_mean_loss(const std::vector<A>& row_loss, const Valid& valid, const Loss& loss, A per_row)
{
    A sum = 0, count = 0;
    for (std::size_t r = 0; r < Rows; ++r) {
        sum += row_loss[r];
        count += is_set(row_value<Rows>(valid, r)) ? A(1) : A(0);
    }
    loss.store(0u, mean_loss(sum, count, per_row));
}

#if TENET_CUDA_COMPILER

// The number of rows whose mask entry is set, in every thread of the block;
// read in 16-byte chunks when `vector_path` (valid_chunk's alignment holds).
template <unsigned Block, std::size_t Rows, class A, class Valid>
__device__ A count_valid(const Valid& valid, bool vector_path)
{
    constexpr std::size_t k = valid_chunk<Valid>;
    const auto set = [](auto v) { return is_set(v) ? A(1) : A(0); };
    A mine = 0;
    std::size_t tail = 0;
    if (k > 1 && vector_path) {
        mine = strided_sum<Block, A>(Rows / k, [&](std::size_t c) {
            const auto v = valid.template chunk<k>(static_cast<kernel_index<Rows>>(c * k));
            A n = 0;
TENET_UNROLL
            for (std::size_t j = 0; j < k; ++j) n += set(v[j]);
            return n;
        });
        tail = Rows / k * k;
    }
    for (std::size_t r = tail + threadIdx.x; r < Rows; r += Block) mine += set(row_value<Rows>(valid, r));
    return block_sum<Block>(mine);
}

// The last block: loss = mean_loss over the rows' losses (written by this
// kernel: read through L2) and the valid rows, in a fixed order.
template <unsigned Block, std::size_t Rows, class A, class Valid, class Loss>
__device__ void store_mean_loss(const A* row_loss, const Valid& valid, const Loss& loss, A per_row)
{
    const vec<A, 2> total = block_sum<Block>(strided_sum<Block, vec<A, 2>>(Rows, [&](std::size_t r) {
        return vec<A, 2>{{__ldcg(row_loss + r), is_set(row_value<Rows>(valid, r)) ? A(1) : A(0)}};
    }));
    if (threadIdx.x == 0) loss.store(0u, mean_loss(total[0], total[1], per_row));
}

#endif

}  // namespace tenet::detail::rowwise
