// N:M structured pruning: in every group of M consecutive weights along the
// last axis (a Linear weight's input features, contiguous in memory) keep the
// N of largest |w| -- of the C(M, N) patterns, the one keeping the most
// magnitude. Sparse tensor cores run 2:4 (two_four) at twice the dense rate.
// Ties go to the lower index (it is kept); already-pruned weights rank below
// every kept one and are never revived, so a group may keep fewer than N.
// NaN ranks above infinity, as in magnitude.hpp.
//
// A weight whose last extent is not a multiple of M is a compile error, or,
// with prune::skip_misfits, left dense (as NVIDIA's ASP leaves a first
// convolution of one input channel).
//
// One function decides a group, on the host and on the device (one thread per
// group), so both give the same masks.
#pragma once

#include "../diagnostic.hpp"
#include "../shape/shape.hpp"
#include "magnitude.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#if TENET_CUDA_COMPILER
#include "../exec/launch.hpp"
#endif

namespace tenet::prune {
namespace detail {

// Keeps the N best of the M weights w[0..M): a weight is kept when fewer than
// N of the others outrank it (a higher score, or the same score and a lower index).
template <std::size_t N, std::size_t M, class T>
TENET_HD void keep_n_of_m(const T* w, bool* keep)
{
    std::uint32_t score[M];
    TENET_UNROLL
    for (std::size_t j = 0; j < M; ++j) score[j] = magnitude_score(w[j], keep[j]);
    TENET_UNROLL
    for (std::size_t j = 0; j < M; ++j) {
        std::size_t above = 0;
        TENET_UNROLL
        for (std::size_t i = 0; i < M; ++i) above += score[i] > score[j] || (score[i] == score[j] && i < j);
        keep[j] = score[j] != 0 && above < N;
    }
}

template <std::size_t N, std::size_t M, class S>
struct prune_n_of_m_needs_a_last_extent_multiple_of_M_not {
    static constexpr auto text()
    {
        using tenet::decimal;
        using tenet::fixed_string;
        return fixed_string("tenet: prune::n_of_m<") + decimal<N>() + fixed_string(", ") + decimal<M>() +
               fixed_string(">: a weight of shape ") + tenet::shape_name<S>::text() +
               fixed_string(" has a last extent that is not a multiple of ") + decimal<M>();
    }
};

#if TENET_CUDA_COMPILER

template <std::size_t N, std::size_t M, class T>
__global__ void __launch_bounds__(tenet::block_threads) n_of_m_kernel(const T* w, bool* keep,
                                                                              std::uint64_t groups)
{
    const std::uint64_t stride = std::uint64_t{gridDim.x} * blockDim.x;
    for (std::uint64_t g = std::uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; g < groups; g += stride)
        keep_n_of_m<N, M>(w + g * M, keep + g * M);
}

#endif

}  // namespace detail

// Passed to n_of_m, two_four and satisfies_n_of_m: weights that do not fit
// the groups stay dense instead of failing to compile.
struct skip_misfits_t {};
inline constexpr skip_misfits_t skip_misfits{};

template <std::size_t N, std::size_t M, class Model, class... Skip>
    requires(sizeof...(Skip) == 0 || (std::is_same_v<Skip, skip_misfits_t> && ...))
void n_of_m(masks<Model>& m, Skip...)
{
    using place = typename masks<Model>::place;
    static_assert(0 < N && N < M && M <= 8, "tenet: prune::n_of_m<N, M>: needs 0 < N < M <= 8");
    static_assert(host_accessible_v<place> || TENET_CUDA_COMPILER,
                  "tenet: prune::n_of_m on a Device model needs a CUDA compiler: compile this file with nvcc");
    m.for_each([](const std::string&, auto weight, auto mask) {
        using shape = typename decltype(weight)::shape;
        if constexpr (shape::extents[shape::rank - 1] % M != 0) {
            if constexpr (sizeof...(Skip) == 0)
                static_assert(tenet::diagnose<false, detail::prune_n_of_m_needs_a_last_extent_multiple_of_M_not<N, M, shape>>::value);
        } else {
            constexpr std::size_t groups = shape::numel / M;
            if constexpr (host_accessible_v<place>) {
                for (std::size_t g = 0; g < groups; ++g)
                    detail::keep_n_of_m<N, M>(weight.data() + g * M, mask.data() + g * M);
            } else {
#if TENET_CUDA_COMPILER
                using tenet::block_threads;
                constexpr auto kernel = detail::n_of_m_kernel<N, M, typename decltype(weight)::element_type>;
                kernel<<<tenet::grid_for<kernel, block_threads>(groups), block_threads, 0,
                         current_stream().get()>>>(weight.data(), mask.data(), groups);
                TENET_CUDA_CHECK(cudaGetLastError());
#endif
            }
        }
    });
}

// 2:4, the pattern sparse tensor cores accelerate.
template <class Model, class... Skip>
void two_four(masks<Model>& m, Skip... skip)
{
    n_of_m<2, 4>(m, skip...);
}

// Every group of M along the last axis of every prunable parameter keeps at
// most N (reads the masks back to the host); with skip_misfits, of every one
// whose last extent is a multiple of M.
template <std::size_t N, std::size_t M, class Model, class... Skip>
    requires(sizeof...(Skip) == 0 || (std::is_same_v<Skip, skip_misfits_t> && ...))
bool satisfies_n_of_m(const masks<Model>& m, Skip...)
{
    static_assert(0 < N && N < M, "tenet: prune::satisfies_n_of_m<N, M>: needs 0 < N < M");
    const std::vector<char> keep = m.to_host();
    for (const auto& p : m.prunable()) {
        if (p.cols % M != 0) {
            if (sizeof...(Skip) == 1) continue;
            return false;
        }
        for (std::size_t g = p.offset; g < p.offset + p.numel; g += M) {
            std::size_t kept = 0;
            for (std::size_t i = g; i < g + M; ++i) kept += keep[i] != 0;
            if (kept > N) return false;
        }
    }
    return true;
}

}  // namespace tenet::prune
