// A GEMM with a long inner dimension beside a small output (a weight
// gradient: [64, 4096] x [4096, 128]) in fixed slices of that dimension.
// oneDNN splits such a sum among its threads, so the bits its primitive
// gives depend on the thread count; the primitive made for 1 thread then
// differs from the 2-thread plan, and a busy machine's 1 thread had to run
// the 2-thread primitive (the ViT's epoch beside a busy process: 3.7x its
// idle one). Cut by the shape alone, each slice run by a 1-thread primitive
// and the partial products added in slice order, the result is the same
// bits under any count: 2 threads run the slices side by side, 1 runs them
// one after another.
//
//   inner_slices(g)                how many slices a GEMM is cut into (1: not)
//   onednn_sliced_gemm<G, In>(a, b, d)
//                                  d = a b for a GEMM with inner_slices(G) > 1
#pragma once

#include "../config.hpp"
#include "../exec/host_threads.hpp"
#include "../numeric/types.hpp"
#include "gemm_layout.hpp"
#include "onednn_matmul.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <exception>
#include <memory>

namespace tenet::linalg::detail {

// Slices of about 1024 (at most 8) where the inner dimension is at least
// 2048 and 8 times the output's longer side: oneDNN splits those sums.
constexpr std::size_t inner_slices(const gemm_dims& g)
{
    if (g.batch != 1 || g.k < 2048 || g.k < 8 * std::max(g.m, g.n)) return 1;
    return std::min<std::size_t>(8, g.k / 1024);
}

// One slice's GEMM: `length` of g's inner dimension into a dense m x n block.
constexpr gemm_dims inner_slice(const gemm_dims& g, std::size_t length)
{
    return {g.m, g.n, length, 1, g.a, g.b, {false, g.n, 0}};
}

template <gemm_dims G, class In>
void onednn_sliced_gemm(const In* a, const In* b, f32* d)
{
    constexpr std::size_t slices = inner_slices(G), length = (G.k + slices - 1) / slices,
                          last = G.k - (slices - 1) * length, block = G.m * G.n;
    static_assert(slices > 1 && last > 0, "tenet: internal: a sliced GEMM has at least two non-empty slices");
    constexpr std::size_t a_step = G.a.column_major ? G.a.ld : 1, b_step = G.b.column_major ? 1 : G.b.ld;
    const std::unique_ptr<f32[]> partial(new f32[slices * block]);
    std::array<std::exception_ptr, slices> failed{};
    [[maybe_unused]] const int threads = std::min(host_threads(), static_cast<int>(slices));
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
#endif
    for (std::size_t s = 0; s < slices; ++s) {
        try {
            const host_threads_scope one(1);
            const In* as = a + s * length * a_step;
            const In* bs = b + s * length * b_step;
            if (s + 1 < slices || last == length)
                onednn_gemm<inner_slice(G, length), In>::run(as, bs, partial.get() + s * block);
            else
                onednn_gemm<inner_slice(G, last), In>::run(as, bs, partial.get() + s * block);
        } catch (...) {
            failed[s] = std::current_exception();
        }
    }
    for (const std::exception_ptr& e : failed)
        if (e) std::rethrow_exception(e);
    for (std::size_t i = 0; i < G.m; ++i) {
        f32* row = d + i * G.d.ld;
        const f32* first = partial.get() + i * G.n;
        TENET_SIMD_LOOP
        for (std::size_t j = 0; j < G.n; ++j) {
            f32 sum = first[j];
            for (std::size_t s = 1; s < slices; ++s) sum += first[s * block + j];
            row[j] = sum;
        }
    }
}

}  // namespace tenet::linalg::detail
