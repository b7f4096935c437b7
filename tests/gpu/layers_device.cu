// nn layers on the device against the same model on the host: Philox draws
// the same parameters from the same seed on both, so forward outputs and
// parameter gradients must agree (within the accumulation-order and
// tensor-core rounding differences of the two GEMMs).
#include "model_compare.hpp"

#include <ratio>
#include <vector>

using namespace tenet;
namespace nn = tenet::nn;

TEST_CASE("device models equal host models: fused relu/gelu units, LayerNorm, activations")
{
    using net = nn::Sequential<nn::Linear<64, 128>, nn::ReLU, nn::Linear<128, 96>, nn::GELUTanh, nn::Linear<96, 48>,
                               nn::LayerNorm<48>, nn::Tanh, nn::Linear<48, 10>>;
    testing::check_device_matches_host<net, fp32, Shape<256, 64>, Shape<256, 10>>(1e-4);
    testing::check_device_matches_host<net, bf16_mixed, Shape<256, 64>, Shape<256, 10>>(2e-2);
    testing::check_device_matches_host<net, fp16_mixed, Shape<256, 64>, Shape<256, 10>>(5e-3);
}

TEST_CASE("device LayerNorm with a large eps and no affine parameters equals the host's")
{
    using norm = nn::LayerNorm<48, nn::layernorm_options{.eps = 0.5f, .affine = false}>;
    using net = nn::Sequential<nn::Linear<64, 48>, nn::Tanh, norm, nn::Linear<48, 10>>;
    testing::check_device_matches_host<net, fp32, Shape<256, 64>, Shape<256, 10>>(1e-4);
    testing::check_device_matches_host<net, bf16_mixed, Shape<256, 64>, Shape<256, 10>>(2e-2);
}

TEST_CASE("device dropout draws the host's mask")
{
    using S = Shape<128, 256>;
    using net = nn::Sequential<nn::Dropout<std::ratio<1, 3>>>;
    nn::model<net, fp32, S, Host> host(3);
    nn::model<net, fp32, S, Device> device(3);
    const auto x = testing::random_host<f32, S>(4);
    const auto xd = testing::to_device(x);
    const auto& yh = host.forward(x);
    Tensor<f32, S, Host> yd;
    copy(yd, device.forward(xd));
    current_stream().synchronize();
    CHECK_BITWISE_EQUAL("dropout forward (Philox mask)", yd.data(), yh.data(), S::numel);
}

TEST_CASE("device Checkpointed and Offloaded segments equal the host's (recomputed; copied to pinned memory and back)")
{
    // two segments share the arena: the second's forward overwrites the
    // first's activations, which its backward recomputes or copies back
    using checkpointed = nn::Sequential<nn::Checkpointed<nn::Linear<64, 96>, nn::ReLU, nn::Linear<96, 96>, nn::GELU>,
                                        nn::Checkpointed<nn::Linear<96, 48>, nn::LayerNorm<48>, nn::Tanh>,
                                        nn::Linear<48, 10>>;
    using offloaded = nn::Sequential<nn::Offloaded<nn::Linear<64, 96>, nn::ReLU, nn::Linear<96, 96>, nn::GELU>,
                                     nn::Offloaded<nn::Linear<96, 48>, nn::LayerNorm<48>, nn::Tanh>, nn::Linear<48, 10>>;
    testing::check_device_matches_host<checkpointed, fp32, Shape<256, 64>, Shape<256, 10>>(1e-4);
    testing::check_device_matches_host<offloaded, fp32, Shape<256, 64>, Shape<256, 10>>(1e-4);
    testing::check_device_matches_host<offloaded, bf16_mixed, Shape<256, 64>, Shape<256, 10>>(2e-2);
    static_assert(nn::model<offloaded, fp32, Shape<256, 64>, Device>::offloaded_bytes > 0);
}

TEST_CASE("device at_batch shares the parameters; predict takes host rows and equals the full batch")
{
    using net = nn::Sequential<nn::BatchNorm2d<3>, nn::Flatten, nn::Linear<48, 16>, nn::ReLU, nn::Linear<16, 5>>;
    using In = Shape<8, 4, 4, 3>;
    nn::model<net, fp32, In, Device> owner(31);
    owner.forward(testing::to_device(testing::random_host<f32, In>(32)));  // running statistics move
    const auto x = testing::random_host<f32, In>(34);
    Tensor<f32, Shape<8, 5>, Host> want;
    owner.eval();
    copy(want, owner.forward(testing::to_device(x)));
    owner.train();

    auto one = nn::at_batch<1>(owner);
    CHECK(one.parameters() == owner.parameters());
    CHECK(one.buffers() == owner.buffers());
    Tensor<f32, Shape<3, 4, 4, 3>, Host> three;  // host rows into the device model, host predictions out
    std::memcpy(three.data(), x.data(), three.numel * sizeof(f32));
    Tensor<f32, Shape<3, 5>, Host> y, single;
    owner.predict(three, y, 3);
    current_stream().synchronize();
    CHECK(owner.training());
    CHECK_BITWISE_EQUAL("predict(3 rows) vs the full batch", y.data(), want.data(), 15);
    for (std::size_t i = 0; i < 3; ++i) {
        Tensor<f32, Shape<1, 4, 4, 3>, Host> row;
        std::memcpy(row.data(), x.data() + i * 48, 48 * sizeof(f32));
        one.predict(row, single, 1);
        current_stream().synchronize();
        for (std::size_t j = 0; j < 5; ++j) CHECK(single.data()[j] == doctest::Approx(want.data()[i * 5 + j]).epsilon(1e-5));
    }
}
