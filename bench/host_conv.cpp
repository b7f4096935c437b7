// The host convolution, measured to choose its engine (issue 16): tenet's
// im2col + GEMM lowering (conv/conv2d.hpp) against oneDNN's convolution
// primitives (Debian's libdnnl-dev, the library PyTorch's CPU path uses), on
// the two convolutions of the Fashion-MNIST example's CNN at batch 256, f32,
// NHWC activations and [Cout, K, K, Cin] weights (oneDNN's nhwc and ohwi:
// the layouts tenet's flat parameter buffer holds, so no reorders). Forward
// (with bias), backward data and backward weights (with the bias gradient),
// each the median of 7 runs after 2 warm-ups, and the largest difference
// between the two engines' results relative to the largest value (each is
// the other's oracle). One JSON line per (layer, pass).
#include <tenet/tenet.hpp>

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <thread>
#include <vector>

using namespace tenet;

namespace {

double median_ms(const std::function<void()>& f)
{
    for (int i = 0; i < 2; ++i) f();
    std::vector<double> ms;
    for (int i = 0; i < 7; ++i) {
        const auto start = std::chrono::steady_clock::now();
        f();
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(ms.begin(), ms.end());
    return ms[3];
}

double relative_difference(const float* a, const float* b, std::size_t n)
{
    double diff = 0, scale = 0;
    for (std::size_t i = 0; i < n; ++i) {
        diff = std::max(diff, static_cast<double>(std::fabs(a[i] - b[i])));
        scale = std::max(scale, static_cast<double>(std::fabs(b[i])));
    }
    return diff / (scale + 1e-30);
}

void report(const char* layer, const char* pass, double tenet_ms, double dnnl_ms, double difference)
{
    std::printf("{\"layer\": \"%s\", \"pass\": \"%s\", \"tenet_ms\": %.3f, \"onednn_ms\": %.3f, "
                "\"tenet_vs_onednn\": %.2f, \"max_rel_diff\": %.2e, \"threads\": %u}\n",
                layer, pass, tenet_ms, dnnl_ms, dnnl_ms / tenet_ms, difference, std::thread::hardware_concurrency());
    std::fflush(stdout);
}

template <std::size_t N, std::size_t H, std::size_t W, std::size_t Ci, std::size_t Co>
void compare(const char* layer)
{
    constexpr std::size_t K = 3, P = 1;
    using In = Shape<N, H, W, Ci>;
    using G = conv::window_geometry<In, K, 1, P>;
    using Out = Shape<G::positions, Co>;
    Tensor<f32, In, Host> x, dx, dx_dnnl;
    Tensor<f32, Shape<Co, K, K, Ci>, Host> w, dw, dw_dnnl;
    Tensor<f32, Shape<Co>, Host> b, db, db_dnnl;
    Tensor<f32, Out, Host> y, y_dnnl, dy;
    Tensor<f32, conv::columns_shape<G>, Host> columns;
    x = random_normal<In>(1, 0);
    w = random_normal<Shape<Co, K, K, Ci>>(2, 0) * 0.1f;
    b = random_normal<Shape<Co>>(3, 0);
    dy = random_normal<Out>(4, 0);

    const double fwd = median_ms([&] { conv::conv2d_forward<G, 1, linalg::activation::none>(y.view(), columns.view(), x.view(), w.view(), b.view()); });
    const double bwd_w = median_ms([&] { conv::conv2d_backward_weights<G, 1>(dw.view(), db.view(), dy.view(), columns.view(), x.view()); });
    const double bwd_d = median_ms([&] { conv::conv2d_backward_input<G, 1>(dx.view(), columns.view(), dy.view(), w.view()); });

    using namespace dnnl;
    engine cpu(engine::kind::cpu, 0);
    dnnl::stream s(cpu);
    const memory::dims src_dims{N, Ci, H, W}, weight_dims{Co, Ci, K, K}, bias_dims{Co}, dst_dims{N, Co, H, W};
    const memory::dims strides{1, 1}, padding{P, P};
    const auto f = memory::data_type::f32;
    const memory::desc src_md(src_dims, f, memory::format_tag::nhwc), weight_md(weight_dims, f, memory::format_tag::ohwi),
        bias_md(bias_dims, f, memory::format_tag::a), dst_md(dst_dims, f, memory::format_tag::nhwc);
    memory src(src_md, cpu, x.data()), weights(weight_md, cpu, w.data()), bias(bias_md, cpu, b.data()),
        dst(dst_md, cpu, y_dnnl.data()), diff_dst(dst_md, cpu, dy.data()), diff_src(src_md, cpu, dx_dnnl.data()),
        diff_weights(weight_md, cpu, dw_dnnl.data()), diff_bias(bias_md, cpu, db_dnnl.data());

    const convolution_forward::primitive_desc fwd_pd(
        convolution_forward::desc(prop_kind::forward_training, algorithm::convolution_direct, src_md, weight_md, bias_md,
                                  dst_md, strides, padding, padding),
        cpu);
    convolution_forward forward(fwd_pd);
    const double dnnl_fwd = median_ms([&] {
        forward.execute(s, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_BIAS, bias}, {DNNL_ARG_DST, dst}});
        s.wait();
    });
    const convolution_backward_data::primitive_desc data_pd(
        convolution_backward_data::desc(algorithm::convolution_direct, src_md, weight_md, dst_md, strides, padding, padding),
        cpu, fwd_pd);
    convolution_backward_data backward_data(data_pd);
    const double dnnl_bwd_d = median_ms([&] {
        backward_data.execute(s, {{DNNL_ARG_DIFF_DST, diff_dst}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DIFF_SRC, diff_src}});
        s.wait();
    });
    const convolution_backward_weights::primitive_desc weights_pd(
        convolution_backward_weights::desc(algorithm::convolution_direct, src_md, weight_md, bias_md, dst_md, strides,
                                           padding, padding),
        cpu, fwd_pd);
    convolution_backward_weights backward_weights(weights_pd);
    const double dnnl_bwd_w = median_ms([&] {
        backward_weights.execute(s, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DIFF_DST, diff_dst}, {DNNL_ARG_DIFF_WEIGHTS, diff_weights},
                                     {DNNL_ARG_DIFF_BIAS, diff_bias}});
        s.wait();
    });

    report(layer, "forward", fwd, dnnl_fwd, relative_difference(y.data(), y_dnnl.data(), Out::numel));
    report(layer, "backward_data", bwd_d, dnnl_bwd_d, relative_difference(dx.data(), dx_dnnl.data(), In::numel));
    report(layer, "backward_weights", bwd_w, dnnl_bwd_w,
           std::max(relative_difference(dw.data(), dw_dnnl.data(), Co * K * K * Ci),
                    relative_difference(db.data(), db_dnnl.data(), Co)));
}

}  // namespace

int main()
{
    compare<256, 28, 28, 1, 32>("conv1 28x28x1->32");
    compare<256, 14, 14, 32, 64>("conv2 14x14x32->64");
}
