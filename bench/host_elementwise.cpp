// Host elementwise throughput: the 30-op chain of chain30.hpp over three
// 16M-element inputs into one output, as
//   tenet fused      one assignment: one OpenMP loop, no temporaries
//   tenet unfused    one assignment per op, each into a temporary
//   Eigen            the same chain as one Array expression (Eigen evaluates
//                    it on one thread; eigen_omp splits it across the same
//                    OpenMP threads tenet uses, for a like-for-like figure)
//   copy             memcpy of the same bytes, split across the OpenMP
//                    threads: the memory-bandwidth roofline of this machine
// for f32, and for bf16 storage in tenet (compute in f32, round at the store).
// GB/s counts each input read once and the output written once (4 arrays),
// whatever a variant actually moves, so that the figures compare.
// Then the trainer's batch staging on one MLP batch ([256, 784] f32, a
// per-row mask broadcast over the features: the host's chunk walk) against
// a tenet copy of the same batch (GB/s: the batch read and written).
#include "chain30.hpp"
#include "support/ratio_reporter.hpp"

#include <Eigen/Core>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

namespace {

constexpr std::size_t n = std::size_t{1} << 24;
using shape = tenet::Shape<n>;
template <class T>
using host_tensor = tenet::Tensor<T, shape, tenet::Host>;

// Work split for the hand-parallelised peers: as many equal contiguous blocks
// per thread as OpenMP's static schedule gives tenet's own loop.
constexpr std::size_t blocks = 64;
constexpr std::size_t block = n / blocks;

template <class T>
struct operands {
    host_tensor<T> a, b, c, out;
    operands()
    {
        a = tenet::random_uniform<shape>(1);
        b = tenet::random_uniform<shape>(2);
        c = tenet::random_uniform<shape>(3);
    }
};

// The float reference over one set of inputs, in any element type.
template <class T>
std::vector<float> reference(const operands<T>& o)
{
    std::vector<float> r(n);
#pragma omp parallel for schedule(static)
    for (std::size_t i = 0; i < n; ++i) {
        const auto f32 = [](T x) { return tenet::convert<float>(x); };
        r[i] = bench::chain30_reference(f32(o.a(i)), f32(o.b(i)), f32(o.c(i)));
    }
    return r;
}

template <class T>
operands<T>& inputs()
{
    static operands<T> o;
    return o;
}

// Eigen's spellings. Its min and max do not propagate NaN (tenet's, NumPy's
// and JAX's do); irrelevant here, where no NaN arises.
struct eigen_ops {
    template <class E>
    E step(E e) const
    {
        return e;
    }
    template <class X, class Y>
    auto min(const X& x, const Y& y) const
    {
        return x.min(y);
    }
    template <class X, class Y>
    auto max(const X& x, const Y& y) const
    {
        return x.max(y);
    }
    template <class X>
    auto abs(const X& x) const
    {
        return x.abs();
    }
    template <class X>
    auto exp(const X& x) const
    {
        return x.exp();
    }
    template <class X>
    auto tanh(const X& x) const
    {
        return x.tanh();
    }
};

using eigen_in = Eigen::Map<const Eigen::ArrayXf>;
using eigen_out = Eigen::Map<Eigen::ArrayXf>;

void eigen_chain(std::size_t first, std::size_t count)
{
    auto& o = inputs<float>();
    eigen_ops ops;
    const auto at = [&](const auto& t) { return eigen_in(t.data() + first, static_cast<Eigen::Index>(count)); };
    eigen_out(o.out.data() + first, static_cast<Eigen::Index>(count)) = bench::chain30(at(o.a), at(o.b), at(o.c), ops);
}

void eigen_chain_omp()
{
#pragma omp parallel for schedule(static)
    for (std::size_t k = 0; k < blocks; ++k) eigen_chain(k * block, block);
}

template <class T>
void fused_chain()
{
    auto& o = inputs<T>();
    bench::tenet_fused ops;
    o.out = bench::chain30(o.a, o.b, o.c, ops);
}

// The unfused result is the chain's last temporary.
template <class T>
bench::tenet_unfused<T, shape, tenet::Host>& unfused()
{
    static bench::tenet_unfused<T, shape, tenet::Host> u;
    return u;
}

template <class T>
auto unfused_chain()
{
    auto& o = inputs<T>();
    return unfused<T>().run(o.a, o.b, o.c);
}

// Runs f once untimed (first touch of outputs and temporaries), then times it.
template <class T, class F>
void run_chain(benchmark::State& state, F f)
{
    f();
    for (auto _ : state) {
        f();
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * 4 * n * sizeof(T)));
}

void tenet_fused_f32(benchmark::State& s) { run_chain<float>(s, fused_chain<float>); }
void tenet_unfused_f32(benchmark::State& s) { run_chain<float>(s, unfused_chain<float>); }
void eigen_f32(benchmark::State& s) { run_chain<float>(s, [] { eigen_chain(0, n); }); }
void eigen_omp_f32(benchmark::State& s) { run_chain<float>(s, eigen_chain_omp); }
void tenet_fused_bf16(benchmark::State& s) { run_chain<tenet::bf16>(s, fused_chain<tenet::bf16>); }
void tenet_unfused_bf16(benchmark::State& s) { run_chain<tenet::bf16>(s, unfused_chain<tenet::bf16>); }

// The chain's bytes (3 inputs + 1 output of f32) as memcpy moves them: 2n
// floats read and written.
const std::vector<float>& copy_source()
{
    static const std::vector<float> v(2 * n, 1.0f);
    return v;
}

void copy(benchmark::State& state)
{
    std::vector<float> to(2 * n);
    const float* from = copy_source().data();
    for (auto _ : state) {
#pragma omp parallel for schedule(static)
        for (std::size_t k = 0; k < blocks; ++k)
            std::memcpy(to.data() + 2 * k * block, from + 2 * k * block, 2 * block * sizeof(float));
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * 4 * n * sizeof(float)));
}

void copy_1thread(benchmark::State& state)
{
    std::vector<float> to(2 * n);
    const float* from = copy_source().data();
    for (auto _ : state) {
        std::memcpy(to.data(), from, 2 * n * sizeof(float));
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * 4 * n * sizeof(float)));
}

// The trainer's batch staging (train/batch_staging.hpp): rows whose mask is
// 0 become 0, 1 stay, anything else becomes NaN.
constexpr std::size_t rows = 256, features = 784;
struct staging_batch {
    tenet::Tensor<float, tenet::Shape<rows, features>, tenet::Host> x, out;
    tenet::Tensor<float, tenet::Shape<rows>, tenet::Host> valid;
    staging_batch()
    {
        x = tenet::random_uniform<tenet::Shape<rows, features>>(4);
        for (std::size_t r = 0; r < rows; ++r) valid(r) = r < 200 ? 1.0f : (r == 230 ? 2.0f : 0.0f);
    }
    void stage()
    {
        const auto row = tenet::broadcast_to<tenet::Shape<rows, features>>(tenet::reshape<tenet::Shape<rows, 1>>(valid));
        out = tenet::where(row == 0, 0, tenet::where(row == 1, x, std::numeric_limits<float>::quiet_NaN()));
    }
};

staging_batch& staging()
{
    static staging_batch b;
    return b;
}

template <class F>
void run_batch(benchmark::State& state, F f)
{
    f();
    for (auto _ : state) {
        f();
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * 2 * rows * features * sizeof(float)));
}

void staging_select(benchmark::State& s) { run_batch(s, [] { staging().stage(); }); }
void staging_copy(benchmark::State& s)
{
    run_batch(s, [] { staging().out = staging().x; });
}

// Largest |result(i) - reference[i]|; NaN if any result is NaN.
template <class Result>
double max_error(const std::vector<float>& reference, Result result)
{
    double worst = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const double e = std::fabs(static_cast<double>(tenet::convert<float>(result(i))) - reference[i]);
        if (!(e <= worst)) worst = e;
    }
    return worst;
}

// Every variant against the float reference, before anything is timed.
void verify()
{
    auto& f = inputs<float>();
    auto& h = inputs<tenet::bf16>();
    const std::vector<float> f32_reference = reference(f);
    const std::vector<float> bf16_reference = reference(h);  // on the bf16 inputs, exactly
    const auto out = [](auto& o) { return [&o](std::size_t i) { return o.out(i); }; };

    std::printf("max |result - float reference| over %zu elements:\n", n);
    fused_chain<float>();
    std::printf("  tenet fused f32     %.3g\n", max_error(f32_reference, out(f)));
    std::printf("  tenet unfused f32   %.3g\n", max_error(f32_reference, unfused_chain<float>()));
    eigen_chain_omp();
    std::printf("  Eigen f32           %.3g\n", max_error(f32_reference, out(f)));
    fused_chain<tenet::bf16>();
    std::printf("  tenet fused bf16    %.3g (reference on the bf16 inputs)\n", max_error(bf16_reference, out(h)));
    std::printf("  tenet unfused bf16  %.3g (rounds to bf16 after every op)\n",
                max_error(bf16_reference, unfused_chain<tenet::bf16>()));

    staging_batch& b = staging();
    b.out = tenet::full<tenet::Shape<rows, features>>(-7.0f);
    b.stage();
    std::size_t wrong = 0;
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < features; ++c) {
            const float v = b.valid(r), got = b.out(r, c);
            const bool right = v == 0 ? got == 0 : v == 1 ? got == b.x(r, c) : std::isnan(got);
            wrong += right ? 0 : 1;
        }
    std::printf("  batch staging       %zu wrong of %zu\n", wrong, rows * features);
}

// Reference values bench/peers/elementwise.py checks its transcription with.
void print_probes()
{
    constexpr float probes[][3] = {{0.9f, 0.2f, 0.4f}, {0.1f, 0.7f, 0.3f}, {0.5f, 0.5f, 0.5f}, {0.3f, 0.1f, 0.9f}};
    for (const auto& p : probes)
        std::printf("chain30 probe: f(%.9g, %.9g, %.9g) = %.9g\n", p[0], p[1], p[2], bench::chain30_reference(p[0], p[1], p[2]));
}

}  // namespace

BENCHMARK(copy)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(copy_1thread)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(tenet_fused_f32)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(tenet_unfused_f32)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(eigen_f32)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(eigen_omp_f32)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(tenet_fused_bf16)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(tenet_unfused_bf16)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(staging_copy)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(staging_select)->Unit(benchmark::kMicrosecond)->UseRealTime();

int main(int argc, char** argv)
{
    benchmark::Initialize(&argc, argv);
    print_probes();
    verify();
    std::fflush(stdout);  // before Google Benchmark's own output (stderr, std::cout)
    ratio_reporter reporter("copy");
    benchmark::RunSpecifiedBenchmarks(&reporter);
    reporter.print_summary({{"tenet_fused_f32", "tenet_unfused_f32"},
                            {"tenet_fused_f32", "eigen_f32"},
                            {"tenet_fused_f32", "eigen_omp_f32"},
                            {"tenet_fused_bf16", "tenet_unfused_bf16"},
                            {"tenet_fused_bf16", "tenet_fused_f32"},
                            {"staging_select", "staging_copy"}});
    benchmark::Shutdown();
}
