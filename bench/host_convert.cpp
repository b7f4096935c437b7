// Host conversion throughput: tenet::convert against the CUDA Toolkit's own
// host conversion functions, over 16M elements, beside a plain copy of the
// same bytes (the memory-bandwidth roofline of this machine).
#include <tenet/numeric/convert.hpp>

#include "support/ratio_reporter.hpp"

#include <cstring>
#include <random>
#include <vector>

namespace {

constexpr std::size_t n = std::size_t{1} << 24;

const std::vector<float>& inputs()
{
    static const std::vector<float> values = [] {
        std::vector<float> v(n);
        std::mt19937 rng(42);
        std::normal_distribution<float> normal(0.0f, 100.0f);
        for (float& x : v) x = normal(rng);
        return v;
    }();
    return values;
}

template <class Out, class In, class F>
void run_conversion(benchmark::State& state, const std::vector<In>& in, F convert_one)
{
    std::vector<Out> out(n);
    for (auto _ : state) {
        for (std::size_t i = 0; i < n; ++i) out[i] = convert_one(in[i]);
        benchmark::DoNotOptimize(out.data());
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n * (sizeof(In) + sizeof(Out))));
}

template <class T>
const std::vector<T>& narrow_inputs()
{
    static const std::vector<T> values = [] {
        std::vector<T> v(n);
        for (std::size_t i = 0; i < n; ++i) v[i] = tenet::convert<T>(inputs()[i]);
        return v;
    }();
    return values;
}

void copy_f32(benchmark::State& state)
{
    std::vector<float> out(n);
    for (auto _ : state) {
        std::memcpy(out.data(), inputs().data(), n * sizeof(float));
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n * 2 * sizeof(float)));
}

void tenet_f32_to_bf16(benchmark::State& s) { run_conversion<tenet::bf16>(s, inputs(), [](float x) { return tenet::convert<tenet::bf16>(x); }); }
void cuda_f32_to_bf16(benchmark::State& s) { run_conversion<tenet::bf16>(s, inputs(), [](float x) { return __float2bfloat16_rn(x); }); }
void tenet_f32_to_f16(benchmark::State& s) { run_conversion<tenet::f16>(s, inputs(), [](float x) { return tenet::convert<tenet::f16>(x); }); }
void cuda_f32_to_f16(benchmark::State& s) { run_conversion<tenet::f16>(s, inputs(), [](float x) { return __float2half_rn(x); }); }
void tenet_f16_to_f32(benchmark::State& s) { run_conversion<float>(s, narrow_inputs<tenet::f16>(), [](tenet::f16 x) { return tenet::convert<float>(x); }); }
void cuda_f16_to_f32(benchmark::State& s) { run_conversion<float>(s, narrow_inputs<tenet::f16>(), [](tenet::f16 x) { return __half2float(x); }); }
void tenet_bf16_to_f32(benchmark::State& s) { run_conversion<float>(s, narrow_inputs<tenet::bf16>(), [](tenet::bf16 x) { return tenet::convert<float>(x); }); }
void cuda_bf16_to_f32(benchmark::State& s) { run_conversion<float>(s, narrow_inputs<tenet::bf16>(), [](tenet::bf16 x) { return __bfloat162float(x); }); }
void tenet_f32_to_e4m3(benchmark::State& s) { run_conversion<tenet::f8e4m3>(s, inputs(), [](float x) { return tenet::convert<tenet::f8e4m3>(x); }); }
void cuda_f32_to_e4m3(benchmark::State& s)
{
    run_conversion<tenet::f8e4m3>(s, inputs(), [](float x) {
        tenet::f8e4m3 r;
        r.__x = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
        return r;
    });
}

}  // namespace

BENCHMARK(copy_f32)->Unit(benchmark::kMillisecond);
BENCHMARK(tenet_f32_to_bf16)->Unit(benchmark::kMillisecond);
BENCHMARK(cuda_f32_to_bf16)->Unit(benchmark::kMillisecond);
BENCHMARK(tenet_f32_to_f16)->Unit(benchmark::kMillisecond);
BENCHMARK(cuda_f32_to_f16)->Unit(benchmark::kMillisecond);
BENCHMARK(tenet_f16_to_f32)->Unit(benchmark::kMillisecond);
BENCHMARK(cuda_f16_to_f32)->Unit(benchmark::kMillisecond);
BENCHMARK(tenet_bf16_to_f32)->Unit(benchmark::kMillisecond);
BENCHMARK(cuda_bf16_to_f32)->Unit(benchmark::kMillisecond);
BENCHMARK(tenet_f32_to_e4m3)->Unit(benchmark::kMillisecond);
BENCHMARK(cuda_f32_to_e4m3)->Unit(benchmark::kMillisecond);

int main(int argc, char** argv)
{
    benchmark::Initialize(&argc, argv);
    ratio_reporter reporter("copy_f32");
    benchmark::RunSpecifiedBenchmarks(&reporter);
    reporter.print_summary({{"tenet_f32_to_bf16", "cuda_f32_to_bf16"},
                            {"tenet_f32_to_f16", "cuda_f32_to_f16"},
                            {"tenet_f16_to_f32", "cuda_f16_to_f32"},
                            {"tenet_bf16_to_f32", "cuda_bf16_to_f32"},
                            {"tenet_f32_to_e4m3", "cuda_f32_to_e4m3"}});
    benchmark::Shutdown();
}
