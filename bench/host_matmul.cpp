// Host matmul throughput: tenet's matmul against Eigen called directly on
// the same buffers, f32, for the shapes of an MLP layer and square ones.
//   tenet          y = matmul(a, b)               (Eigen GEMM behind one assignment)
//   eigen          Map(y).noalias() = Map(a) * Map(b)
//   tenet_relu     y = relu(matmul(a, b) + bias)  (GEMM, then one fused pass)
//   eigen_relu     ((Map(a) * Map(b)).rowwise() + bias).cwiseMax(0)
//   tenet_acc      y += matmul(a, b)               (the GEMM accumulates: beta = 1)
//   eigen_acc      Map(y).noalias() += Map(a) * Map(b)
// Both run Eigen's GEMM on the same OpenMP threads. GFLOP/s counts 2 m k n
// per product. The summary prints tenet's overhead against Eigen (target:
// at most 5%), from the medians when run with --benchmark_repetitions, and
// again from calls of the two interleaved (steadier on a busy machine).
#include <tenet/tenet.hpp>

#include <benchmark/benchmark.h>

#include <Eigen/Core>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace {

using row_major = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

template <std::size_t M, std::size_t K, std::size_t N>
struct operands {
    tenet::Tensor<float, tenet::Shape<M, K>, tenet::Host> a;
    tenet::Tensor<float, tenet::Shape<K, N>, tenet::Host> b;
    tenet::Tensor<float, tenet::Shape<N>, tenet::Host> bias;
    tenet::Tensor<float, tenet::Shape<M, N>, tenet::Host> y;

    operands()
    {
        a = tenet::random_uniform<tenet::Shape<M, K>>(1) - 0.5f;
        b = tenet::random_uniform<tenet::Shape<K, N>>(2) - 0.5f;
        bias = tenet::random_uniform<tenet::Shape<N>>(3) - 0.5f;
    }

    Eigen::Map<const row_major> ea() const { return {a.data(), M, K}; }
    Eigen::Map<const row_major> eb() const { return {b.data(), K, N}; }
    Eigen::Map<row_major> ey() { return {y.data(), M, N}; }
    Eigen::Map<const Eigen::RowVectorXf> ebias() const { return {bias.data(), N}; }
};

template <std::size_t M, std::size_t K, std::size_t N>
operands<M, K, N>& inputs()
{
    static operands<M, K, N> o;
    return o;
}

template <std::size_t M, std::size_t K, std::size_t N>
void tenet_gemm()
{
    auto& o = inputs<M, K, N>();
    o.y = tenet::matmul(o.a, o.b);
}

template <std::size_t M, std::size_t K, std::size_t N>
void eigen_gemm()
{
    auto& o = inputs<M, K, N>();
    o.ey().noalias() = o.ea() * o.eb();
}

template <std::size_t M, std::size_t K, std::size_t N>
void tenet_relu()
{
    auto& o = inputs<M, K, N>();
    o.y = tenet::relu(tenet::matmul(o.a, o.b) + o.bias);
}

template <std::size_t M, std::size_t K, std::size_t N>
void eigen_relu()
{
    auto& o = inputs<M, K, N>();
    o.ey().noalias() = o.ea() * o.eb();
    o.ey() = (o.ey().rowwise() + o.ebias()).cwiseMax(0.0f);
}

template <std::size_t M, std::size_t K, std::size_t N>
void tenet_accumulate()
{
    auto& o = inputs<M, K, N>();
    o.y += tenet::matmul(o.a, o.b);
}

template <std::size_t M, std::size_t K, std::size_t N>
void eigen_accumulate()
{
    auto& o = inputs<M, K, N>();
    o.ey().noalias() += o.ea() * o.eb();
}

// Runs f once untimed (first touch), then times it; GFLOP/s of the product.
template <std::size_t M, std::size_t K, std::size_t N, void (*F)()>
void run(benchmark::State& state)
{
    F();
    for (auto _ : state) {
        F();
        benchmark::ClobberMemory();
    }
    state.counters["GFLOP/s"] =
        benchmark::Counter(2.0 * M * K * N, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

// Largest |tenet - Eigen| over the shape's result, each computed once.
template <std::size_t M, std::size_t K, std::size_t N>
void verify()
{
    auto& o = inputs<M, K, N>();
    tenet_relu<M, K, N>();
    std::vector<float> t(o.y.data(), o.y.data() + M * N);
    eigen_relu<M, K, N>();
    double worst = 0;
    for (std::size_t i = 0; i < M * N; ++i) worst = std::fmax(worst, std::fabs(double(t[i]) - o.y.data()[i]));
    o.y = tenet::random_uniform<tenet::Shape<M, N>>(4);
    tenet_accumulate<M, K, N>();
    t.assign(o.y.data(), o.y.data() + M * N);
    o.y = tenet::random_uniform<tenet::Shape<M, N>>(4);
    eigen_accumulate<M, K, N>();
    double worst_acc = 0;
    for (std::size_t i = 0; i < M * N; ++i) worst_acc = std::fmax(worst_acc, std::fabs(double(t[i]) - o.y.data()[i]));
    std::printf("  %4zu x %4zu x %4zu: max |tenet - Eigen| of relu(a b + bias) = %.3g, of y += a b = %.3g\n", M, K, N,
                worst, worst_acc);
}

// Seconds of one call of f.
template <void (*F)()>
double seconds_of()
{
    const auto start = std::chrono::steady_clock::now();
    F();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// tenet and Eigen called alternately, median time of each: on a busy
// machine both see the same load, so their ratio is steadier than that of
// two benchmarks run one after the other.
template <std::size_t M, std::size_t K, std::size_t N>
void interleaved()
{
    std::vector<double> t, e;
    for (double spent = 0; spent < 4 || t.size() < 15;) {
        t.push_back(seconds_of<tenet_gemm<M, K, N>>());
        e.push_back(seconds_of<eigen_gemm<M, K, N>>());
        spent += t.back() + e.back();
    }
    const auto median = [](std::vector<double>& v) {
        std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
        return v[v.size() / 2];
    };
    const double mt = median(t), me = median(e), flops = 2.0 * M * K * N;
    std::printf("%4zu,%4zu,%4zu interleaved x%-3zu %12.1f %12.1f %9.1f%%\n", M, K, N, t.size(), flops / mt / 1e9,
                flops / me / 1e9, 100 * (mt / me - 1));
}

// The console table, then tenet against Eigen per shape.
class gflops_reporter : public benchmark::ConsoleReporter {
public:
    void ReportRuns(const std::vector<Run>& runs) override
    {
        ConsoleReporter::ReportRuns(runs);
        for (const Run& run : runs) {
            const bool median = run.run_type == Run::RT_Aggregate && run.aggregate_name == "median";
            if ((run.run_type != Run::RT_Iteration && !median) || run.error_occurred) continue;
            benchmark::BenchmarkName name = run.run_name;
            name.time_type.clear();
            const auto it = run.counters.find("GFLOP/s");
            if (it == run.counters.end()) continue;
            // with --benchmark_repetitions the median stands for the runs
            auto& slot = gflops_[name.str()];
            if (median || !slot.second) slot = {it->second.value / 1e9, median};
        }
    }

    void print_summary(const std::vector<std::string>& shapes) const
    {
        std::printf("\n%-16s %12s %12s %10s %14s %14s %10s %12s %12s %10s\n", "shape m,k,n", "tenet GF/s",
                    "Eigen GF/s", "overhead", "tenet+relu", "Eigen+relu", "overhead", "tenet y+=", "Eigen y+=",
                    "overhead");
        for (const std::string& s : shapes) {
            const double t = at("tenet/" + s), e = at("eigen/" + s), tr = at("tenet_relu/" + s), er = at("eigen_relu/" + s);
            const double ta = at("tenet_acc/" + s), ea = at("eigen_acc/" + s);
            std::printf("%-16s %12.1f %12.1f %9.1f%% %14.1f %14.1f %9.1f%% %12.1f %12.1f %9.1f%%\n", s.c_str(), t, e,
                        100 * (e / t - 1), tr, er, 100 * (er / tr - 1), ta, ea, 100 * (ea / ta - 1));
        }
    }

private:
    double at(const std::string& name) const
    {
        const auto it = gflops_.find(name);
        return it == gflops_.end() ? NAN : it->second.first;
    }
    std::map<std::string, std::pair<double, bool>> gflops_;  // GFLOP/s, from a median
};

template <std::size_t M, std::size_t K, std::size_t N>
std::string register_shape()
{
    const std::string s = std::to_string(M) + "," + std::to_string(K) + "," + std::to_string(N);
    benchmark::RegisterBenchmark(("tenet/" + s).c_str(), run<M, K, N, tenet_gemm<M, K, N>>)->UseRealTime();
    benchmark::RegisterBenchmark(("eigen/" + s).c_str(), run<M, K, N, eigen_gemm<M, K, N>>)->UseRealTime();
    benchmark::RegisterBenchmark(("tenet_relu/" + s).c_str(), run<M, K, N, tenet_relu<M, K, N>>)->UseRealTime();
    benchmark::RegisterBenchmark(("eigen_relu/" + s).c_str(), run<M, K, N, eigen_relu<M, K, N>>)->UseRealTime();
    benchmark::RegisterBenchmark(("tenet_acc/" + s).c_str(), run<M, K, N, tenet_accumulate<M, K, N>>)->UseRealTime();
    benchmark::RegisterBenchmark(("eigen_acc/" + s).c_str(), run<M, K, N, eigen_accumulate<M, K, N>>)->UseRealTime();
    verify<M, K, N>();
    return s;
}

}  // namespace

int main(int argc, char** argv)
{
    benchmark::Initialize(&argc, argv);
    std::printf("max |tenet - Eigen| (the same GEMM: expected 0):\n");
    const std::vector<std::string> shapes{register_shape<256, 784, 256>(), register_shape<512, 512, 512>(),
                                          register_shape<1024, 1024, 1024>()};
    std::fflush(stdout);
    gflops_reporter reporter;
    benchmark::RunSpecifiedBenchmarks(&reporter);
    reporter.print_summary(shapes);
    std::printf("\n%-27s %12s %12s %10s\n", "shape m,k,n, rounds", "tenet GF/s", "Eigen GF/s", "overhead");
    interleaved<256, 784, 256>();
    interleaved<512, 512, 512>();
    interleaved<1024, 1024, 1024>();
    benchmark::Shutdown();
}
