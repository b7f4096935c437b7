// The row engine: the one way tenet splits rows across threads, shared by
// the reductions (reduce/) and the row-wise ops (rowwise/: softmax,
// layernorm, the losses). A row is a run of elements combined into per-row
// values; rows and their length are static.
//
// Per-row math is written once, against
//   a team   the threads that share one row; reduce(value, op) gives every
//            member the row's combined value (one tree order: deterministic);
//   a share  one thread's part of the row (row_share): chunks of V elements
//            of the inputs, combined with fold (combine: over the team),
//            written with write (or write_normalized), or visited with
//            for_each.
// The host runs it with a team of one (serial_team), rows split across cores
// (host_for_rows). The device runs it with a warp per short row (8 rows per
// 256-thread block) or a block of up to 1024 threads per long row
// (device_team over cub::WarpReduce / cub::BlockReduce), the team sized so a
// thread's share stays within team_budget values (team_size). A row_share is
// loaded once into registers when it fits (the passes over the row then read
// registers), and is re-evaluated in each pass otherwise (L1/L2 hits); chunks
// move as 16-byte vectors when every operand is contiguous and aligned.
//
// Work that ends in values over all rows (a mean loss; layernorm's dgamma and
// dbeta) finishes in the same kernel: blocks write partial results, and the
// last block to arrive (last_block_to_arrive: an atomic ticket after a memory
// fence) combines them in a fixed order -- deterministic, no floating-point
// atomics.
#pragma once

#include "../config.hpp"
#include "../exec/launch.hpp"
#include "../expr/lanes.hpp"
#include "../memory/buffer.hpp"
#include "../numeric/vec.hpp"
#include "../tensor/tensor.hpp"

#include <cstddef>
#include <type_traits>

#if TENET_CUDA_COMPILER
#include <cub/block/block_reduce.cuh>
#include <cub/warp/warp_reduce.cuh>
#endif

namespace tenet::detail::reduce {

struct add {
    template <class T>
    TENET_HD constexpr T operator()(T a, T b) const
    {
        return a + b;
    }
    template <class T, std::size_t C>
    TENET_HD constexpr vec<T, C> operator()(const vec<T, C>& a, const vec<T, C>& b) const
    {
        vec<T, C> r;
TENET_UNROLL
        for (std::size_t c = 0; c < C; ++c) r[c] = a[c] + b[c];
        return r;
    }
};

// How a row is split: Team threads per row, each taking chunks of Vector
// elements, chunk c going to thread c % Team; `slots` chunks per thread.
// Cached: the chunks are loaded into registers once per row.
template <std::size_t Rows, std::size_t Length, unsigned Team, std::size_t Vector, bool Cached>
struct row_plan {
    static_assert(Length % Vector == 0, "tenet: internal: a row is a whole number of chunks");
    static constexpr std::size_t rows = Rows, length = Length, vector = Vector;
    static constexpr unsigned team = Team;
    static constexpr std::size_t chunks = Length / Vector;
    static constexpr std::size_t slots = (chunks + Team - 1) / Team;
    static constexpr bool cached = Cached;
    // warp teams: 8 per 256-thread block; larger teams: one per block
    static constexpr unsigned block = Team <= 32 ? 256 : Team;
    static constexpr unsigned teams_per_block = block / Team;
    using index = kernel_index<Rows * Length>;

    // Does thread `rank` have a k-th chunk, and where does it start?
    TENET_HD static constexpr bool present(unsigned rank, std::size_t k)
    {
        return chunks % Team == 0 || rank + k * Team < chunks;
    }
    TENET_HD static constexpr index column(unsigned rank, std::size_t k)
    {
        return static_cast<index>((rank + k * Team) * Vector);
    }
};

// The host: one thread walks a whole row, element by element.
template <std::size_t Rows, std::size_t Length>
using host_plan = row_plan<Rows, Length, 1, 1, false>;

// Elements a host row step reads at once where chunks pay (host_walk).
inline constexpr std::size_t host_chunk = 16;

// A host fold runs in host_lanes lanes: four AVX-512 vectors of f32, so
// that four independent chains hide the latency of combining.
inline constexpr std::size_t host_lanes = 64;

// The lanes' accumulators. A vector accumulator (vec<T, M>: layernorm's
// sum and sum of squares) is held as M arrays of lanes, so that each part
// of 16 lanes is one vector register; held as an array of vec it would be
// interleaved, and g++ would shuffle it element by element.
template <class R>
struct lane_accumulators {
    R lane[host_lanes];
    TENET_HD R get(std::size_t l) const { return lane[l]; }
    TENET_HD void set(std::size_t l, const R& r) { lane[l] = r; }
};

template <class T, std::size_t M>
struct lane_accumulators<vec<T, M>> {
    T part[M][host_lanes];
    TENET_HD vec<T, M> get(std::size_t l) const
    {
        vec<T, M> r;
TENET_UNROLL
        for (std::size_t m = 0; m < M; ++m) r[m] = part[m][l];
        return r;
    }
    TENET_HD void set(std::size_t l, const vec<T, M>& r)
    {
TENET_UNROLL
        for (std::size_t m = 0; m < M; ++m) part[m][l] = r[m];
    }
};

// The fold with op of value(c, x_c) for c in [0, count), from init (op's
// identity), x read K at a time (load(c): elements c .. c + K - 1; count a
// multiple of K): value(c, x_c) goes into lane c % host_lanes, each lane in
// order, then the lanes combine pairwise. The lanes are vector lanes; the
// order depends on nothing but count, so every run gives the same answer.
template <std::size_t K, class R, class Op, class Load, class Value>
TENET_HD R host_lane_fold(std::size_t count, R init, Op op, Load&& load, Value&& value)
{
    constexpr std::size_t lanes = host_lanes;
    static_assert(lanes % K == 0, "tenet: internal: a lane group is whole chunks");
    const std::size_t whole = count / lanes * lanes;
    lane_accumulators<R> acc;
    for (std::size_t l = 0; l < lanes; ++l) acc.set(l, init);
    // lanes [first, first + K) take elements c .. c + K - 1
    const auto fold_chunk = [&](std::size_t first, std::size_t c) {
        const auto x = load(c);
        TENET_SIMD_LOOP
        for (std::size_t v = 0; v < K; ++v) acc.set(first + v, op(acc.get(first + v), value(c + v, x[v])));
    };
    for (std::size_t c = 0; c < whole; c += lanes) {
        if constexpr (K == 1) {
            TENET_SIMD_LOOP
            for (std::size_t l = 0; l < lanes; ++l) acc.set(l, op(acc.get(l), value(c + l, load(c + l)[0])));
        } else {
            for (std::size_t g = 0; g < lanes; g += K) fold_chunk(g, c + g);
        }
    }
    for (std::size_t c = whole; c < count; c += K) fold_chunk(c - whole, c);
    for (std::size_t width = lanes / 2; width != 0; width /= 2)
        for (std::size_t l = 0; l < width; ++l) acc.set(l, op(acc.get(l), acc.get(l + width)));
    return acc.get(0);
}

// A thread aims to hold at most this many values of a row (values =
// elements x registers per element), and caches at most cache_budget of them
// in registers: half of what a thread may use (255 registers; 64 in a
// 1024-thread block).
inline constexpr std::size_t team_budget = 32;

template <unsigned Team>
inline constexpr std::size_t cache_budget = Team >= 1024 ? 32 : 64;

inline constexpr std::size_t max_unrolled_uncached_slots = 8;

// The smallest power-of-two team (at least a warp, at most 1024) that keeps
// a thread's share of a row within team_budget values.
template <std::size_t Length, std::size_t Registers>
inline constexpr unsigned team_size = [] {
    const std::size_t want = (Length * Registers + team_budget - 1) / team_budget;
    unsigned p = 32;
    while (p < want && p < 1024) p *= 2;
    return p;
}();

// Elements per chunk: 16 bytes of the narrowest element, fewer when the row
// is not a multiple of that or too short to give every thread a chunk.
template <std::size_t Length, std::size_t Smallest, unsigned Team>
inline constexpr std::size_t vector_width = [] {
    std::size_t v = Smallest >= 16 ? 1 : 16 / Smallest;
    while (v > 1 && (Length % v != 0 || Length / v < Team)) v /= 2;
    return v;
}();

template <std::size_t Rows, std::size_t Length, unsigned Team, std::size_t Vector, std::size_t Registers>
using device_plan = row_plan<Rows, Length, Team, Vector,
                             ((Length / Vector + Team - 1) / Team) * Vector * Registers <= cache_budget<Team>>;

// The two device plans of an op: `wide` (vector chunks; used when every
// operand is aligned for them) and `narrow` (one element per chunk).
// Registers: values a thread keeps per row element (cached input channels
// plus per-column accumulators).
template <std::size_t Rows, std::size_t Length, std::size_t Registers, std::size_t Smallest>
struct device_plans {
    static constexpr unsigned team = team_size<Length, Registers>;
    using wide = device_plan<Rows, Length, team, vector_width<Length, Smallest, team>, Registers>;
    using narrow = device_plan<Rows, Length, team, 1, Registers>;
};

// Are all these evaluators aligned for the wide plan's chunks?
template <class Plans, class... E>
bool aligned_for(const E&... evaluators)
{
    return (evaluators.template aligned<Plans::wide::vector>() && ...);
}

// Calls f(plan) with the wide plan when aligned, else the narrow one.
template <class Plans, class F>
void with_plan(bool aligned, F&& f)
{
    if constexpr (Plans::wide::vector > 1) {
        if (aligned) {
            f(typename Plans::wide{});
            return;
        }
    }
    f(typename Plans::narrow{});
}

// Does the evaluator Out read back exactly what was stored in it as A?
template <class Out, class A>
inline constexpr bool holds_exactly = [] {
    if constexpr (requires(const Out& out) {
                      typename Out::element_type;
                      out.at(std::size_t{});
                  })
        return std::is_same_v<typename Out::element_type, A>;
    else
        return false;
}();

// One thread's share of one row of the zipped input In.
template <class Plan, class In>
class row_share {
public:
    using scalar = typename In::scalar;
    using value_type = typename In::value_type;
    using index = typename Plan::index;
    static constexpr std::size_t length = Plan::length;
    static constexpr std::size_t vector = Plan::vector;

    TENET_HD row_share(const In& in, std::size_t row, unsigned rank)
        : in_(in), base_(static_cast<index>(row * Plan::length)), rank_(rank)
    {
        if constexpr (Plan::cached) {
TENET_UNROLL
            for (std::size_t k = 0; k < Plan::slots; ++k)
                if (Plan::present(rank_, k)) cache_[k] = load(k);
        }
    }

    // f(column, slot, value) for every element of the share. slot = k * V + v
    // numbers a thread's elements; it is a constant once the loops unroll, so
    // per-column accumulators indexed by it stay in registers.
    template <class F>
    TENET_HD void for_each(F&& f) const
    {
        for_each_chunk([&](std::size_t k, const vec<value_type, vector>& x) {
TENET_UNROLL
            for (std::size_t v = 0; v < vector; ++v) f(Plan::column(rank_, k) + v, k * vector + v, x[v]);
        });
    }

    // The fold with op of f(column, slot, value) over the share, from init
    // (op's identity). A device thread folds its elements in order; the host
    // (a team of one, holding the whole row) folds in lanes (host_lane_fold).
    template <class R, class Op, class F>
    TENET_HD R fold(R init, Op op, F&& f) const
    {
        if constexpr (host) {
            return host_lane_fold<host_step>(length, init, op, host_loader(), [&](std::size_t c, const value_type& x) {
                return f(static_cast<index>(c), c, x);
            });
        } else {
            R acc = init;
            for_each([&](auto column, auto slot, const value_type& x) { acc = op(acc, f(column, slot, x)); });
            return acc;
        }
    }

    // The fold over the whole row, in every member of the team.
    template <class Team, class R, class Op, class F>
    TENET_HD R combine(const Team& team, R init, Op op, F&& f) const
    {
        return team.reduce(fold(init, op, f), op);
    }

    // out[row, column] = f(column, slot, value) for every element of the share.
    template <class Out, class F>
    TENET_HD void write(const Out& out, F&& f) const
    {
        if constexpr (host) {
            constexpr std::size_t step = host_write_step<Out>;
            const Out to = out;
            host_steps<step>([&](std::size_t c, const vec<value_type, step>& x) {
                vec<scalar, step> r;
                TENET_CHUNK_LOOP
                for (std::size_t v = 0; v < step; ++v) r[v] = f(static_cast<index>(c + v), c + v, x[v]);
                to.template store_chunk<step>(std::size_t{base_} + c, r);
            });
        } else {
            for_each_chunk([&](std::size_t k, const vec<value_type, vector>& x) {
                vec<scalar, vector> r;
TENET_UNROLL
                for (std::size_t v = 0; v < vector; ++v) r[v] = f(Plan::column(rank_, k) + v, k * vector + v, x[v]);
                out.template store_chunk<vector>(static_cast<index>(base_ + Plan::column(rank_, k)), r);
            });
        }
    }

    // out = f(column, slot, value) / s over the row, s the team's sum of f
    // over it; returns s. f is computed once per element on the host when
    // out holds the accumulate type exactly (stored, summed, then scaled
    // where it lies, in L1), and twice otherwise: the same values either way.
    template <class Team, class Out, class F>
    TENET_HD scalar write_normalized(const Team& team, const Out& out, F&& f) const
    {
        if constexpr (host && holds_exactly<Out, scalar>) {
            const Out to = out;
            const std::size_t base = base_;
            const auto stored_f = [&](std::size_t c, const value_type& x) {
                const scalar e = f(static_cast<index>(c), c, x);
                to.store(base + c, e);
                return e;
            };
            const scalar s = host_lane_fold<host_step>(length, scalar(0), add{}, host_loader(), stored_f);
            TENET_SIMD_LOOP
            for (std::size_t c = 0; c < length; ++c) to.store(base + c, to.at(base + c) / s);
            return s;
        } else {
            const scalar s = combine(team, scalar(0), add{}, f);
            write(out, [&](auto column, auto slot, const value_type& x) { return f(column, slot, x) / s; });
            return s;
        }
    }

    // Any one element of the row (e.g. the logit of a row's label).
    TENET_HD value_type at(index column) const { return in_.at(static_cast<index>(base_ + column)); }

private:
    static constexpr bool host = Plan::team == 1;  // only host plans have a team of one

    // The host reads a row an element at a time (the loop vectorises), or
    // host_chunk elements at a time where an input gains from chunks (a
    // broadcast operand, such as layernorm's gamma: one vector load rather
    // than a gather). Positions are 64-bit: the compiler then sees
    // consecutive addresses, with no wrap-around.
    static constexpr std::size_t host_step =
        internal::host_walk_of<In, host_chunk>() == internal::host_walk::chunks && length % host_chunk == 0 ? host_chunk
                                                                                                           : 1;

    // A row written into Out goes in chunks too where Out converts apart
    // (f16, fp8): a conversion inlined into the element loop keeps it
    // scalar (an f16 softmax over [.., 16] took 4x the f32 one's time).
    template <class Out>
    static constexpr std::size_t host_write_step =
        internal::host_walk_of<Out, host_chunk>() == internal::host_walk::chunks && length % host_chunk == 0
            ? host_chunk
            : host_step;

    // Elements c .. c + Step - 1 of the row, read through private copies of
    // the input and the row's start: stores cannot change them, so their
    // pointers stay in registers.
    template <std::size_t Step = host_step>
    TENET_HD auto host_loader() const
    {
        return [in = in_, base = std::size_t{base_}](std::size_t c) {
            return internal::evaluate_lanes<Step>(in, base + c);
        };
    }

    // f(c, elements c .. c + Step - 1) over the row, in order.
    template <std::size_t Step = host_step, class F>
    TENET_HD void host_steps(F&& f) const
    {
        const auto load = host_loader<Step>();
        const auto step = [&](std::size_t c) { f(c, load(c)); };
        if constexpr (Step == 1) {
            TENET_SIMD_LOOP
            for (std::size_t c = 0; c < length; ++c) step(c);
        } else {
            for (std::size_t c = 0; c < length; c += Step) step(c);
        }
    }

    // f(k, chunk) for each of the thread's chunks. Unrolled when cached (the
    // cache is registers) or short; a long uncached loop stays a loop, so its
    // loads do not crowd the registers.
    template <class F>
    TENET_HD void for_each_chunk(F&& f) const
    {
        if constexpr (Plan::cached || Plan::slots <= max_unrolled_uncached_slots) {
TENET_UNROLL
            for (std::size_t k = 0; k < Plan::slots; ++k)
                if (Plan::present(rank_, k)) f(k, values(k));
        } else {
            for (std::size_t k = 0; k < Plan::slots; ++k)
                if (Plan::present(rank_, k)) f(k, values(k));
        }
    }

    TENET_HD vec<value_type, vector> load(std::size_t k) const
    {
        return in_.template chunk<vector>(static_cast<index>(base_ + Plan::column(rank_, k)));
    }
    TENET_HD vec<value_type, vector> values(std::size_t k) const
    {
        if constexpr (Plan::cached) return cache_[k];
        else return load(k);
    }

    In in_;
    index base_;
    unsigned rank_;
    vec<value_type, vector> cache_[Plan::cached ? Plan::slots : 1];
};

// The host's team: one thread, nothing to combine.
struct serial_team {
    TENET_HD static constexpr unsigned rank() { return 0; }
    template <class R, class Op>
    TENET_HD static R reduce(R value, Op)
    {
        return value;
    }
};

// Host: f(row) for every row, rows split across cores.
template <std::size_t Rows, std::size_t Length, class F>
void host_for_rows(F&& f)
{
    TENET_OMP_PARALLEL_FOR_IF(Rows * Length >= 32768 && Rows > 1)
    for (std::size_t row = 0; row < Rows; ++row) f(row);
}

#if TENET_CUDA_COMPILER

template <class Plan>
__device__ unsigned team_rank()
{
    return threadIdx.x % Plan::team;
}

// f(row) for each row of this thread's team (grid-stride over rows).
template <class Plan, class F>
__device__ void for_team_rows(F&& f)
{
    const std::size_t stride = std::size_t{gridDim.x} * Plan::teams_per_block;
    for (std::size_t row = std::size_t{blockIdx.x} * Plan::teams_per_block + threadIdx.x / Plan::team; row < Plan::rows;
         row += stride)
        f(row);
}

// A warp or a block of Plan::team threads, combining values of type R.
template <class R, class Plan>
class device_team {
    static constexpr bool warp = Plan::team == 32;
    using warp_reduce = cub::WarpReduce<R>;
    using block_reduce = cub::BlockReduce<R, Plan::block>;

public:
    struct storage {
        std::conditional_t<warp, typename warp_reduce::TempStorage[Plan::teams_per_block],
                           typename block_reduce::TempStorage>
            temp;
        R result;
    };

    __device__ explicit device_team(storage& s) : s_(s) {}

    __device__ static unsigned rank() { return team_rank<Plan>(); }

    // The team's combined value, in every member (one tree order: deterministic).
    template <class Op>
    __device__ R reduce(R value, Op op) const
    {
        if constexpr (warp) {
            const R lane0 = warp_reduce(s_.temp[threadIdx.x / 32]).Reduce(value, op);
            const R all = cub::ShuffleIndex<32>(lane0, 0, 0xffffffffu);
            __syncwarp();
            return all;
        } else {
            const R r = block_reduce(s_.temp).Reduce(value, op);
            if (threadIdx.x == 0) s_.result = r;
            __syncthreads();
            const R all = s_.result;
            __syncthreads();  // the storage is reused by the next reduction
            return all;
        }
    }

private:
    storage& s_;
};

// The sum over the block of each thread's value, in every thread.
template <unsigned Block, class T>
__device__ T block_sum(T value)
{
    using reduce = cub::BlockReduce<T, Block>;
    __shared__ typename reduce::TempStorage temp;
    __shared__ T result;
    const T r = reduce(temp).Reduce(value, add{});
    if (threadIdx.x == 0) result = r;
    __syncthreads();
    const T all = result;
    __syncthreads();
    return all;
}

// This thread's sum of f(i) for i = threadIdx.x, + Block, ... below count, in
// a fixed order; four independent chains keep several loads in flight.
template <unsigned Block, class T, class F>
__device__ T strided_sum(std::size_t count, F&& f)
{
    T acc[4] = {};
    std::size_t i = threadIdx.x;
    for (; i + 3 * std::size_t{Block} < count; i += 4 * std::size_t{Block}) {
TENET_UNROLL
        for (std::size_t u = 0; u < 4; ++u) acc[u] = add{}(acc[u], f(i + u * Block));
    }
    for (; i < count; i += Block) acc[0] = add{}(acc[0], f(i));
    return add{}(add{}(acc[0], acc[1]), add{}(acc[2], acc[3]));
}

// Is this block the last of the grid to get here? Every block's global
// writes before the call are visible to the last one (read them with
// __ldcg: they were written during this kernel).
__device__ inline bool last_block_to_arrive(unsigned* arrivals)
{
    __shared__ bool last;
    __threadfence();  // release this block's writes before taking a ticket
    __syncthreads();
    if (threadIdx.x == 0) {
        last = atomicAdd(arrivals, 1u) == gridDim.x - 1;
        __threadfence();  // acquire the others' writes
    }
    __syncthreads();
    return last;
}

template <class Body>
__global__ void __launch_bounds__(Body::plan::block) row_kernel(Body body)
{
    body();
}

// Blocks for a row kernel: one team per row, at most as many as are resident.
template <class Body>
unsigned row_grid()
{
    constexpr auto kernel = row_kernel<Body>;
    return grid_for<kernel, Body::plan::block>(Body::plan::rows * Body::plan::team);
}

template <class Body>
void launch_rows(const Body& body, unsigned grid, stream_ref stream)
{
    static_assert(std::is_trivially_copyable_v<Body>,
                  "tenet: internal: a row kernel's operands must be trivially copyable");
    row_kernel<Body><<<grid, Body::plan::block, 0, stream.get()>>>(body);
    TENET_CUDA_CHECK(cudaGetLastError());
}

// Device scratch for a kernel that finishes in its last block: `count`
// partial results and the arrival counter, zeroed on the stream.
template <class A>
struct finish_scratch {
    buffer<A, Device> partials;
    buffer<unsigned, Device> arrivals;

    finish_scratch(std::size_t count, stream_ref stream) : partials(count, stream), arrivals(1, stream)
    {
        TENET_CUDA_CHECK(cudaMemsetAsync(arrivals.data(), 0, sizeof(unsigned), stream.get()));
    }
};

#endif

}  // namespace tenet::detail::reduce

// For the folders above this one (see docs/ARCHITECTURE.md, "Namespaces").
namespace tenet::internal {
using detail::reduce::add;
using detail::reduce::row_plan;
using detail::reduce::host_plan;
using detail::reduce::device_plans;
using detail::reduce::aligned_for;
using detail::reduce::with_plan;
using detail::reduce::row_share;
using detail::reduce::serial_team;
using detail::reduce::host_for_rows;
#if TENET_CUDA_COMPILER
using detail::reduce::team_rank;
using detail::reduce::for_team_rows;
using detail::reduce::device_team;
using detail::reduce::block_sum;
using detail::reduce::strided_sum;
using detail::reduce::last_block_to_arrive;
using detail::reduce::row_grid;
using detail::reduce::launch_rows;
using detail::reduce::finish_scratch;
#endif
}  // namespace tenet::internal
