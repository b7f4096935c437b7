// measure_peak<Place, T>(): what this machine reaches at best, measured once
// per run (the first call probes, later calls return the same figures): a
// 1024^3 GEMM in T for FLOP/s and a 64 MiB copy for bytes/s (read and
// write counted), each the best of a few runs after one warm-up. The
// per-layer profile (profile::layer_profile) measures layers against it.
//
// Measured, not looked up: on the host, the same GEMM library and the same
// host threads as the layers; on a device, the same cuBLASLt path (the
// tensor cores for 16-bit T). A busy machine measures a lower peak, and
// its layers reach a larger fraction of it: the source string says when and
// how the figures were taken.
#pragma once

#include "../exec/host_threads.hpp"
#include "../expr/random.hpp"
#include "../numeric/traits.hpp"
#include "../profile/layer_profile.hpp"
#include "../profile/timer.hpp"
#include "../tensor/tensor.hpp"
#include "matmul_expr.hpp"

#include <algorithm>
#include <string>

namespace tenet::linalg {
namespace detail {

template <class F>
double best_seconds(F&& run)
{
    run();  // warm-up: first-touch pages, primitive creation, clocks
    current_stream().synchronize();
    double best = 1e30;
    for (int i = 0; i < 3; ++i) {
        profile::host_timer t;
        run();
        current_stream().synchronize();
        best = std::min(best, t.seconds());
    }
    return best;
}

template <class Place, class T>
profile::machine_peak probe_peak()
{
    constexpr std::size_t n = 1024, copied = std::size_t{16} << 20;  // 16 Mi f32: 64 MiB
    Tensor<T, Shape<n, n>, Place> a, b, c;
    a = cast<T>(random_uniform<Shape<n, n>>(1, 0, -1.0f, 1.0f));
    b = cast<T>(random_uniform<Shape<n, n>>(2, 0, -1.0f, 1.0f));
    const double gemm = best_seconds([&] { c = matmul(a, b); });
    Tensor<f32, Shape<copied>, Place> from, to;
    from = random_uniform<Shape<copied>>(3, 0, -1.0f, 1.0f);
    const double copy = best_seconds([&] { to = from; });
    return {2.0 * n * n * n / gemm, 2.0 * copied * sizeof(f32) / copy,
            std::string("measured: a ") + std::to_string(n) + "^3 " + element_name<T> + " GEMM and a 64 MiB copy, " +
                (host_accessible_v<Place> ? "host threads " + std::to_string(host_threads()) : std::string("device"))};
}

}  // namespace detail

template <class Place, class T = f32>
const profile::machine_peak& measure_peak()
{
    static const profile::machine_peak peak = detail::probe_peak<Place, T>();
    return peak;
}

}  // namespace tenet::linalg
