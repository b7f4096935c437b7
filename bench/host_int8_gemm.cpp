// Host int8 GEMM throughput: linalg::int8_gemm (exact int32 dot products,
// OpenMP over rows) against tenet's f32 matmul (Eigen) on an MLP layer's
// shape, acc[M, N] = x[M, K] w[N, K]^T with M = 256, K = 784, N = 256.
// GOP/s counts 2 M K N per product; the medians of interleaved runs are
// printed (steadier on a busy machine).
#include <tenet/linalg/int8_gemm.hpp>
#include <tenet/tenet.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

namespace {

constexpr std::size_t M = 256, K = 784, N = 256;

template <class F>
double seconds(F&& f)
{
    const auto start = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

}  // namespace

int main()
{
    using namespace tenet;
    Tensor<i8, Shape<M, K>, Host> x;
    Tensor<i8, Shape<N, K>, Host> w;
    std::mt19937_64 rng(1);
    std::uniform_int_distribution<int> value(-128, 127);
    for (std::size_t i = 0; i < M * K; ++i) x.data()[i] = static_cast<i8>(value(rng));
    for (std::size_t i = 0; i < N * K; ++i) w.data()[i] = static_cast<i8>(value(rng));
    Tensor<f32, Shape<M, K>, Host> xf = x;
    Tensor<f32, Shape<N, K>, Host> wf = w;
    Tensor<i32, Shape<M, N>, Host> acc;
    Tensor<f32, Shape<M, N>, Host> y;

    const auto int8 = [&] { linalg::int8_gemm(acc, x, w); };
    const auto f32_matmul = [&] { y = matmul(xf, transpose(wf)); };
    int8();
    f32_matmul();
    std::vector<double> t_int8, t_f32;
    for (int i = 0; i < 200; ++i) {
        t_int8.push_back(seconds(int8));
        t_f32.push_back(seconds(f32_matmul));
    }
    const double ops = 2.0 * M * K * N;
    std::printf("%-22s %10s %10s\n", "256x784x256", "median us", "GOP/s");
    std::printf("%-22s %10.1f %10.1f\n", "int8_gemm (int32)", median(t_int8) * 1e6, ops / median(t_int8) * 1e-9);
    std::printf("%-22s %10.1f %10.1f\n", "matmul f32 (Eigen)", median(t_f32) * 1e6, ops / median(t_f32) * 1e-9);
    std::size_t differ = 0;  // the f32 product of these integers is exact too (|sum| < 2^24)
    for (std::size_t i = 0; i < M * N; ++i) differ += static_cast<f32>(acc.data()[i]) != y.data()[i];
    std::printf("elements differing: %zu\n", differ);
    return differ == 0 ? 0 : 1;
}
