// The host convolution, measured to choose its engine (issue 16): tenet's
// im2col + GEMM lowering (conv/conv2d.hpp) against oneDNN's convolution
// primitives (Debian's libdnnl-dev, the library PyTorch's CPU path uses), on
// the two convolutions of the Fashion-MNIST example's CNN at batch 256, f32,
// NHWC activations and [Cout, K, K, Cin] weights. oneDNN runs in two ways:
//   blocked  the layouts its primitives choose (format `any`), with tenet's
//            tensors reordered in and the result reordered out on every call
//            (a training step changes the weights, so those too); the
//            primitive alone is reported beside it
//   plain    nhwc and ohwi, the layouts tenet's flat buffers hold, no
//            reorders (--plain: oneDNN 2.6 falls back to reference kernels,
//            minutes per call on the second convolution)
// Forward (with bias), backward data and backward weights (with the bias
// gradient), each the median of 7 runs after 2 warm-ups, and the largest
// difference between the engines' results relative to the largest value
// (each is the other's oracle). One JSON line per (layer, pass, layout).
#include <tenet/tenet.hpp>

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
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

void report(const char* layer, const char* pass, const char* layout, double tenet_ms, double dnnl_ms,
            double dnnl_kernel_ms, double difference)
{
    std::printf("{\"layer\": \"%s\", \"pass\": \"%s\", \"onednn_layout\": \"%s\", \"tenet_ms\": %.3f, "
                "\"onednn_ms\": %.3f, \"onednn_primitive_ms\": %.3f, \"tenet_vs_onednn\": %.2f, "
                "\"max_rel_diff\": %.2e, \"threads\": %u}\n",
                layer, pass, layout, tenet_ms, dnnl_ms, dnnl_kernel_ms, dnnl_ms / tenet_ms, difference,
                std::thread::hardware_concurrency());
    std::fflush(stdout);
}

// A user tensor and what a primitive reads or writes in its place: the same
// memory, or a buffer in the primitive's layout with a reorder each way.
struct staged {
    dnnl::memory user, inner;
    bool reordered;

    staged(const dnnl::memory& u, const dnnl::memory::desc& wanted, const dnnl::engine& cpu)
        : user(u), inner(wanted == u.get_desc() ? u : dnnl::memory(wanted, cpu)), reordered(!(wanted == u.get_desc()))
    {
    }
    void in(dnnl::stream& s)
    {
        if (reordered) dnnl::reorder(user, inner).execute(s, user, inner);
    }
    void out(dnnl::stream& s)
    {
        if (reordered) dnnl::reorder(inner, user).execute(s, inner, user);
    }
};

// One oneDNN pass: stage inputs in, run, stage outputs out (timed with and
// without the reorders).
struct timed_pass {
    double with_reorders_ms, primitive_ms;
};

timed_pass run_pass(dnnl::stream& s, dnnl::primitive& p, std::vector<std::pair<int, staged*>> inputs,
                    std::vector<std::pair<int, staged*>> outputs)
{
    std::unordered_map<int, dnnl::memory> args;
    for (auto& [arg, m] : inputs) args.emplace(arg, m->inner);
    for (auto& [arg, m] : outputs) args.emplace(arg, m->inner);
    const double primitive_ms = median_ms([&] {
        p.execute(s, args);
        s.wait();
    });
    const double with_reorders_ms = median_ms([&] {
        for (auto& [arg, m] : inputs) m->in(s);
        p.execute(s, args);
        for (auto& [arg, m] : outputs) m->out(s);
        s.wait();
    });
    return {with_reorders_ms, primitive_ms};
}

template <std::size_t N, std::size_t H, std::size_t W, std::size_t Ci, std::size_t Co>
void compare(const char* layer, bool plain)
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

    for (const bool blocked : {true, false}) {
        if (!blocked && !plain) continue;
        const auto pick = [&](const memory::desc& d) { return blocked ? memory::desc(d.dims(), f, memory::format_tag::any) : d; };
        const memory::desc src_any = pick(src_md), weight_any = pick(weight_md), dst_any = pick(dst_md);
        const convolution_forward::primitive_desc fwd_pd(
            convolution_forward::desc(prop_kind::forward_training, algorithm::convolution_direct, src_any, weight_any,
                                      bias_md, dst_any, strides, padding, padding),
            cpu);
        staged x_in(src, fwd_pd.src_desc(), cpu), w_in(weights, fwd_pd.weights_desc(), cpu), b_in(bias, bias_md, cpu),
            y_out(dst, fwd_pd.dst_desc(), cpu);
        convolution_forward forward(fwd_pd);
        const timed_pass dnnl_fwd = run_pass(s, forward, {{DNNL_ARG_SRC, &x_in}, {DNNL_ARG_WEIGHTS, &w_in}, {DNNL_ARG_BIAS, &b_in}},
                                             {{DNNL_ARG_DST, &y_out}});

        const convolution_backward_data::primitive_desc data_pd(
            convolution_backward_data::desc(algorithm::convolution_direct, src_any, weight_any, dst_any, strides, padding,
                                            padding),
            cpu, fwd_pd);
        staged dy_in(diff_dst, data_pd.diff_dst_desc(), cpu), wd_in(weights, data_pd.weights_desc(), cpu),
            dx_out(diff_src, data_pd.diff_src_desc(), cpu);
        convolution_backward_data backward_data(data_pd);
        const timed_pass dnnl_bwd_d = run_pass(s, backward_data, {{DNNL_ARG_DIFF_DST, &dy_in}, {DNNL_ARG_WEIGHTS, &wd_in}},
                                               {{DNNL_ARG_DIFF_SRC, &dx_out}});

        const convolution_backward_weights::primitive_desc weights_pd(
            convolution_backward_weights::desc(algorithm::convolution_direct, src_any, weight_any, bias_md, dst_any,
                                               strides, padding, padding),
            cpu, fwd_pd);
        staged xw_in(src, weights_pd.src_desc(), cpu), dyw_in(diff_dst, weights_pd.diff_dst_desc(), cpu),
            dw_out(diff_weights, weights_pd.diff_weights_desc(), cpu), db_out(diff_bias, bias_md, cpu);
        convolution_backward_weights backward_weights(weights_pd);
        const timed_pass dnnl_bwd_w =
            run_pass(s, backward_weights, {{DNNL_ARG_SRC, &xw_in}, {DNNL_ARG_DIFF_DST, &dyw_in}},
                     {{DNNL_ARG_DIFF_WEIGHTS, &dw_out}, {DNNL_ARG_DIFF_BIAS, &db_out}});

        const char* layout = blocked ? "blocked" : "plain";
        report(layer, "forward", layout, fwd, dnnl_fwd.with_reorders_ms, dnnl_fwd.primitive_ms,
               relative_difference(y.data(), y_dnnl.data(), Out::numel));
        report(layer, "backward_data", layout, bwd_d, dnnl_bwd_d.with_reorders_ms, dnnl_bwd_d.primitive_ms,
               relative_difference(dx.data(), dx_dnnl.data(), In::numel));
        report(layer, "backward_weights", layout, bwd_w, dnnl_bwd_w.with_reorders_ms, dnnl_bwd_w.primitive_ms,
               std::max(relative_difference(dw.data(), dw_dnnl.data(), Co * K * K * Ci),
                        relative_difference(db.data(), db_dnnl.data(), Co)));
    }
}

}  // namespace

int main(int argc, char** argv)
{
    const bool plain = argc > 1 && std::string(argv[1]) == "--plain";
    compare<256, 28, 28, 1, 32>("conv1 28x28x1->32", plain);
    compare<256, 14, 14, 32, 64>("conv2 14x14x32->64", plain);
}
