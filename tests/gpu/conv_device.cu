// Convolutional layers on the device against the same models on the host:
// every layer (strided, padded, dilated, grouped and depthwise convolutions,
// 1x1, the fused conv+ReLU unit, both pools, global pooling, BatchNorm2d
// with batch and running statistics, Flatten, FlattenCHW) and a CNN under fp32,
// bf16_mixed and fp16_mixed; then a CNN trained by a trainer whose steps are
// captured as a CUDA Graph and replayed, against eager host steps; and
// cuDNN's plan (f32 device convolutions) replayed by a CUDA Graph.
#include "model_compare.hpp"

#include <cstring>
#include <ratio>
#include <type_traits>
#include <vector>

using namespace tenet;
namespace nn = tenet::nn;

namespace {

// A first convolution, so that the layer under test computes an input gradient too.
template <class... Layers>
using after_conv = nn::Sequential<nn::Conv2d<3, 8, 3, 1, 1>, Layers...>;
using image = Shape<4, 9, 10, 3>;

using cnn = nn::Sequential<nn::Conv2d<3, 16, 3, 1, 1>, nn::ReLU, nn::BatchNorm2d<16>, nn::MaxPool2d<2>,
                           nn::Conv2d<16, 32, 3, 1, 1, 1, 2>, nn::ReLU, nn::BatchNorm2d<32>, nn::AvgPool2d<2>,
                           nn::Flatten, nn::Linear<32 * 2 * 2, 10>>;
using cnn_in = Shape<32, 9, 10, 3>;

template <class M>
std::vector<float> buffers_on_host(M& m)
{
    std::vector<float> v(M::buffer_numel);
    TENET_CUDA_CHECK(cudaDeviceSynchronize());
    std::size_t at = 0;
    m.for_each_buffer([&](const std::string&, auto view) {
        using V = decltype(view);
        copy_bytes<Host, typename V::place>(v.data() + at, view.data(), V::shape::numel * sizeof(f32), current_stream());
        at += V::shape::numel;
    });
    current_stream().synchronize();
    v.resize(at);
    return v;
}

}  // namespace

TEST_CASE("device convolutions equal the host's: stride, padding, dilation, groups, depthwise, 1x1")
{
    using net = after_conv<nn::ReLU, nn::Conv2d<8, 6, 3, 2, 1>, nn::Conv2d<6, 6, 3, 1, 2, 2, 3>,
                           nn::Conv2d<6, 6, 3, 1, 1, 1, 6>, nn::Conv2dNoBias<6, 4, 1>, nn::Conv2d<4, 2, 1, 2>>;
    using out = typename net::template output_shape<image>;
    testing::check_device_matches_host<net, fp32, image, out>(1e-4);
    testing::check_device_matches_host<net, bf16_mixed, image, out>(3e-2);
    testing::check_device_matches_host<net, fp16_mixed, image, out>(5e-3);
}

TEST_CASE("device pooling, BatchNorm2d and FlattenCHW equal the host's")
{
    using net = after_conv<nn::MaxPool2d<3, 2, 1>, nn::BatchNorm2d<8>, nn::AvgPool2d<2, 1, 1>, nn::ReLU,
                           nn::MaxPool2d<2>, nn::FlattenCHW, nn::Linear<8 * 3 * 3, 5>>;
    testing::check_device_matches_host<net, fp32, image, Shape<4, 5>>(1e-4);
    testing::check_device_matches_host<net, bf16_mixed, image, Shape<4, 5>>(3e-2);
    using global = after_conv<nn::BatchNorm2d<8, nn::batchnorm_options{.affine = false}>, nn::GlobalAvgPool2d,
                              nn::Linear<8, 3>>;
    testing::check_device_matches_host<global, fp32, image, Shape<4, 3>>(1e-4);
}

TEST_CASE("a device CNN equals the host's under every precision policy")
{
    testing::check_device_matches_host<cnn, fp32, cnn_in, Shape<32, 10>>(1e-4);
    testing::check_device_matches_host<cnn, bf16_mixed, cnn_in, Shape<32, 10>>(3e-2);
    testing::check_device_matches_host<cnn, fp16_mixed, cnn_in, Shape<32, 10>>(5e-3);
}

TEST_CASE("a CNN trained with CUDA Graph replays follows eager host training, running statistics included")
{
    nn::model<cnn, fp32, cnn_in, Host> host(21);
    nn::model<cnn, fp32, cnn_in, Device> device(21);
    train::trainer th(host, train::adamw{}, train::constant_lr{1e-3f});
    train::trainer td(device, train::adamw{}, train::constant_lr{1e-3f});
    td.capture();
    Tensor<f32, cnn_in, Device> xd;
    Tensor<i32, Shape<32>, Device> labels_d;
    Tensor<f32, Shape<32>, Device> valid_d;
    Tensor<i32, Shape<32>, Host> labels;
    Tensor<f32, Shape<32>, Host> valid;
    for (std::size_t i = 0; i < 32; ++i) labels.data()[i] = static_cast<i32>(i % 10), valid.data()[i] = i < 30 ? 1.0f : 0.0f;
    copy(labels_d, labels);
    copy(valid_d, valid);
    for (std::uint64_t step = 0; step < 5; ++step) {  // step 1 runs eagerly, 2 is captured, 3.. replay it
        const auto x = testing::random_host<f32, cnn_in>(30 + step);
        copy(xd, x);  // the same input buffer: the graph reads it
        th.step(x, labels, valid);
        td.step(xd, labels_d, valid_d);
    }
    current_stream().synchronize();
    td.stream().synchronize();
    using M = decltype(host);
    std::vector<f32> dp(M::flat_numel);
    TENET_CUDA_CHECK(cudaMemcpy(dp.data(), device.parameters(), M::flat_numel * sizeof(f32), cudaMemcpyDeviceToHost));
    CHECK_RELATIVE_ERROR("CNN parameters after graph-replayed steps", dp.data(), host.parameters(), M::flat_numel, 1e-3);
    const auto bh = buffers_on_host(device);
    std::vector<f32> hb;
    host.for_each_buffer([&](const std::string&, auto view) {
        for (std::size_t i = 0; i < decltype(view)::shape::numel; ++i) hb.push_back(view.data()[i]);
    });
    CHECK_RELATIVE_ERROR("BatchNorm2d running statistics", bh.data(), hb.data(), hb.size(), 1e-4);
    // evaluation with the running statistics
    const auto x = testing::random_host<f32, cnn_in>(40);
    copy(xd, x);
    host.eval();
    device.eval();
    Tensor<f32, Shape<32, 10>, Host> yd;
    copy(yd, device.forward(xd));
    current_stream().synchronize();
    CHECK_RELATIVE_ERROR("CNN forward in eval mode", yd.data(), host.forward(x).data(), 320, 1e-3);
}

#if defined(TENET_WITH_CUDNN)
// Device f32 convolutions run on cuDNN; a mixed policy's (f32 weight
// gradients of 16-bit activations) on the lowering.
static_assert(conv::runs_on_cudnn<f32, f32, Device> && !conv::runs_on_cudnn<bf16, f32, Device> &&
              !conv::runs_on_cudnn<f32, f32, Host>);
static_assert(std::is_same_v<conv::conv2d_engine<conv::window_geometry<Shape<2, 5, 5, 3>, 3, 1, 1>, 1, 4,
                                                 linalg::activation::none, true, f32, f32, Device>,
                             conv::cudnn_engine<conv::window_geometry<Shape<2, 5, 5, 3>, 3, 1, 1>, 1, 4,
                                                linalg::activation::none, true>>);

TEST_CASE("cuDNN's convolution plan: built at construction, replayed by a CUDA Graph with the eager bits")
{
    using G = conv::window_geometry<Shape<8, 14, 14, 32>, 3, 1, 1>;
    using Y = Shape<G::positions, 64>;
    conv::cudnn_engine<G, 1, 64, linalg::activation::relu, true> engine;
    MESSAGE("cuDNN workspace of a 14x14x32 -> 64 convolution, batch 8: " << engine.workspace_bytes() << " bytes");
    Tensor<f32, Shape<8, 14, 14, 32>, Device> x, dx_eager, dx_replay;
    Tensor<f32, Shape<64, 3, 3, 32>, Device> w, dw_eager, dw_replay;
    Tensor<f32, Shape<64>, Device> b, db_eager, db_replay;
    Tensor<f32, Y, Device> y_eager, y_replay, dz;
    x = random_normal<Shape<8, 14, 14, 32>>(1, 0);
    w = random_normal<Shape<64, 3, 3, 32>>(2, 0) * 0.1f;
    b = random_normal<Shape<64>>(3, 0);
    dz = random_normal<Y>(4, 0);
    auto step = [&](auto& y, auto& dx, auto& dw, auto& db) {
        engine.forward(y.view(), x.view(), w.view(), b.view());
        engine.backward(dz.view(), x.view(), w.view(), dw.view(), db.view(), dx.view());
    };
    step(y_eager, dx_eager, dw_eager, db_eager);
    current_stream().synchronize();  // the replays run on another stream
    stream s;
    train::cuda_graph graph;
    {
        stream_scope scope(s);
        graph.capture(s, [&] { step(y_replay, dx_replay, dw_replay, db_replay); });
    }
    for (int replay = 0; replay < 3; ++replay) graph.launch(s);
    s.synchronize();
    current_stream().synchronize();
    auto same_bits = [](const auto& a, const auto& b) {
        using T = std::remove_cvref_t<decltype(a)>;
        Tensor<f32, typename T::shape, Host> ha, hb;
        copy(ha, a);
        copy(hb, b);
        current_stream().synchronize();
        return std::memcmp(ha.data(), hb.data(), T::shape::numel * sizeof(f32)) == 0;
    };
    CHECK(same_bits(y_eager, y_replay));
    CHECK(same_bits(dx_eager, dx_replay));
    CHECK(same_bits(dw_eager, dw_replay));
    CHECK(same_bits(db_eager, db_replay));
}
#endif
