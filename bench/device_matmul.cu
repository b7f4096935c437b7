// Device matmul epilogues: a Linear layer's y = act(x W^T + b) in bf16, as
//   fused      one cublasLtMatmul with the bias+activation epilogue
//   two        the GEMM into y, then one tenet kernel for act(y + b)
//   three      the GEMM, a bias kernel, an activation kernel
// for relu and gelu_tanh, per shape [M, In] x [Out, In]^T. Timed with CUDA
// events on tenet's current stream: a warm-up, then the median of 20 timed
// batches of 10 calls. Prints time per call, TFLOP/s of the fused call
// (2 M In Out), and how much faster fused is. Without a GPU it prints
// "skipped: no CUDA device" and exits 0.
#include <tenet/tenet.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

namespace {

constexpr int timed_batches = 20;
constexpr int calls_per_batch = 10;

class event {
public:
    event() { TENET_CUDA_CHECK(cudaEventCreate(&handle_)); }
    event(const event&) = delete;
    event& operator=(const event&) = delete;
    ~event() { cudaEventDestroy(handle_); }
    cudaEvent_t get() const { return handle_; }

private:
    cudaEvent_t handle_ = nullptr;
};

template <class F>
double median_seconds(F&& launch)
{
    const cudaStream_t stream = tenet::current_stream().get();
    for (int i = 0; i < 3; ++i) launch();  // plans, workspaces, clocks
    event start, stop;
    std::vector<double> seconds;
    for (int r = 0; r < timed_batches; ++r) {
        TENET_CUDA_CHECK(cudaEventRecord(start.get(), stream));
        for (int i = 0; i < calls_per_batch; ++i) launch();
        TENET_CUDA_CHECK(cudaEventRecord(stop.get(), stream));
        TENET_CUDA_CHECK(cudaEventSynchronize(stop.get()));
        float ms = 0;
        TENET_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
        seconds.push_back(ms / 1e3 / calls_per_batch);
    }
    std::nth_element(seconds.begin(), seconds.begin() + timed_batches / 2, seconds.end());
    return seconds[timed_batches / 2];
}

// Largest |x - y| of two device tensors, relative to max |y|.
template <class T, class S>
double relative_difference(const tenet::Tensor<T, S, tenet::Device>& x, const tenet::Tensor<T, S, tenet::Device>& y)
{
    tenet::Tensor<T, S, tenet::Host> hx, hy;
    tenet::copy(hx, x);
    tenet::copy(hy, y);
    tenet::current_stream().synchronize();
    double worst = 0, scale = 0;
    for (std::size_t i = 0; i < S::numel; ++i) {
        const double a = tenet::convert<double>(hx.data()[i]), b = tenet::convert<double>(hy.data()[i]);
        worst = std::fmax(worst, std::fabs(a - b));
        scale = std::fmax(scale, std::fabs(b));
    }
    return scale > 0 ? worst / scale : worst;
}

template <tenet::linalg::activation Act, class E>
auto activate(E&& e)
{
    if constexpr (Act == tenet::linalg::activation::relu) return tenet::relu(std::forward<E>(e));
    else return tenet::gelu_tanh(std::forward<E>(e));
}

template <tenet::linalg::activation Act, std::size_t M, std::size_t In, std::size_t Out>
void measure(const char* name)
{
    using tenet::bf16;
    using tenet::Shape;
    tenet::Tensor<bf16, Shape<M, In>> x = tenet::random_uniform<Shape<M, In>>(1) - 0.5f;
    tenet::Tensor<bf16, Shape<Out, In>> w = (tenet::random_uniform<Shape<Out, In>>(2) - 0.5f) * 0.1f;
    tenet::Tensor<bf16, Shape<Out>> b = tenet::random_uniform<Shape<Out>>(3) - 0.5f;
    tenet::Tensor<bf16, Shape<M, Out>> fused_y, two_y, three_y, t;

    const auto fused = [&] { fused_y = activate<Act>(tenet::matmul(x, tenet::transpose(w)) + b); };
    const auto two = [&] {
        two_y = tenet::matmul(x, tenet::transpose(w));
        two_y = activate<Act>(two_y + b);
    };
    const auto three = [&] {
        three_y = tenet::matmul(x, tenet::transpose(w));
        t = three_y + b;
        three_y = activate<Act>(t);
    };
    const double s_fused = median_seconds(fused), s_two = median_seconds(two), s_three = median_seconds(three);
    const double flops = 2.0 * M * In * Out;
    std::printf("%-10s %6zu %6zu %6zu %10.1f %10.1f %10.1f %9.1f %8.2fx %8.2fx %10.2g\n", name, M, In, Out, s_fused * 1e6,
                s_two * 1e6, s_three * 1e6, flops / s_fused / 1e12, s_two / s_fused, s_three / s_fused,
                relative_difference(fused_y, two_y));
}

template <tenet::linalg::activation Act>
void measure_shapes(const char* name)
{
    measure<Act, 256, 784, 256>(name);
    measure<Act, 1024, 1024, 1024>(name);
    measure<Act, 4096, 4096, 4096>(name);
    measure<Act, 8192, 1024, 4096>(name);
}

}  // namespace

int main()
{
    if (!tenet::has_device()) {
        std::puts("skipped: no CUDA device");
        return 0;
    }
    int device = 0, runtime = 0;
    cudaDeviceProp properties{};
    TENET_CUDA_CHECK(cudaGetDevice(&device));
    TENET_CUDA_CHECK(cudaGetDeviceProperties(&properties, device));
    TENET_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
    std::printf("== device matmul epilogues, bf16, y = act(x W^T + b); %s, CUDA runtime %d.%d\n", properties.name,
                runtime / 1000, runtime % 1000 / 10);
    std::printf("%-10s %6s %6s %6s %10s %10s %10s %9s %9s %9s %10s\n", "act", "M", "In", "Out", "fused us", "2-step us",
                "3-step us", "TFLOP/s", "vs 2-step", "vs 3-step", "rel diff");
    measure_shapes<tenet::linalg::activation::relu>("relu");
    measure_shapes<tenet::linalg::activation::gelu_tanh>("gelu_tanh");
    // non-zero: some "fused" rows were a plain GEMM plus tenet's pass
    std::printf("GEMM types cuBLASLt declined: %d\n", tenet::linalg::detail::lt_declined_plans().load());
}
