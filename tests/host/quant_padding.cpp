// Padding is inert in quantization too: observers see the real rows alone
// (whatever the padding holds), QAT and fp8 training on a padded batch equal
// training on its real rows (ranges, amax histories, scales, parameters),
// and calibration through predict() sees only the rows it was given.
#include "model_testing.hpp"

#include <tenet/quant/fp8_linear.hpp>
#include <tenet/quant/observers.hpp>
#include <tenet/quant/qat.hpp>
#include <tenet/train/trainer.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

using namespace tenet;
namespace nn = tenet::nn;
namespace quant = tenet::quant;
namespace train = tenet::train;
using testing::check_close;
using testing::random_tensor;

namespace {

constexpr std::size_t padded_batch = 5, real_samples = 3;
constexpr float inf = std::numeric_limits<float>::infinity();

// The padded tensor's first real_samples rows are small's; the rest are
// garbage far outside its range (huge, infinite, NaN).
template <class S, class Small>
Tensor<f32, S, Host> padded_from(const Small& small)
{
    Tensor<f32, S, Host> x;
    constexpr std::size_t per = S::numel / S::extents[0];
    const float garbage[] = {40.0f, -1e6f, inf, -inf, std::nanf(""), 7.5f};
    for (std::size_t i = 0; i < S::numel; ++i)
        x.data()[i] = i < real_samples * per ? small.data()[i] : garbage[i % 6];
    return x;
}

Tensor<f32, Shape<padded_batch>, Host> real_mask(std::size_t real)
{
    Tensor<f32, Shape<padded_batch>, Host> m;
    for (std::size_t r = 0; r < padded_batch; ++r) m.data()[r] = r < real ? 1.0f : 0.0f;
    return m;
}


template <class O>
void check_same_observations(const O& padded, const O& small)
{
    CHECK(padded.count() == small.count());
    CHECK(padded.min() == small.min());
    CHECK(padded.max() == small.max());
    const quant::quant_params p = padded.params(), s = small.params();
    CHECK(p.scale == s.scale);
    CHECK(p.zero_point == s.zero_point);
}

// Three batches, each observed padded (with the mask given three ways) and small.
template <class O, class... Args>
void observe_padded_and_small(Args... args)
{
    using rows = Shape<padded_batch, 4, 3>;
    O padded_f32(args...), padded_i32(args...), padded_expression(args...), small(args...);
    Tensor<i32, Shape<padded_batch>, Host> mask_i32;
    for (std::size_t r = 0; r < padded_batch; ++r) mask_i32.data()[r] = 7 * (r < real_samples);
    for (std::uint64_t batch = 0; batch < 3; ++batch) {
        const auto x = random_tensor<f32, Shape<real_samples, 4, 3>>(10 + batch, 1.0 + double(batch));
        const auto padded = padded_from<rows>(x);
        padded_f32.observe(padded, real_mask(real_samples));
        padded_i32.observe(padded, mask_i32);
        padded_expression.observe(padded, iota<Shape<padded_batch>>(0, 1) < static_cast<int>(real_samples));
        small.observe(x);
    }
    check_same_observations(padded_f32, small);
    check_same_observations(padded_i32, small);
    check_same_observations(padded_expression, small);
    // a batch of padding alone changes nothing
    const auto before = padded_f32.params();
    padded_f32.observe(padded_from<rows>(random_tensor<f32, Shape<real_samples, 4, 3>>(99)), real_mask(0));
    check_same_observations(padded_f32, small);
    CHECK(padded_f32.params().scale == before.scale);
}

template <class M>
std::vector<float> parameters_of(const M& m)
{
    return {m.parameters(), m.parameters() + M::flat_numel};
}

// Each fake-quantized layer's input scale and zero point, in order.
template <class M>
std::vector<float> input_params_of(M& m)
{
    std::vector<float> v;
    quant::detail::for_each_fake_quant_layer(m, [&](auto& l) {
        v.push_back(l.input_params().scale);
        v.push_back(static_cast<float>(l.input_params().zero_point));
    });
    return v;
}

// Each fp8 layer's input and gradient amax histories and scales, in order.
template <class M>
std::vector<float> fp8_scaling_of(M& m)
{
    std::vector<float> v;
    m.for_each_layer([&](auto& layer) {
        if constexpr (requires { layer.input_scaling(); }) {
            for (const auto* s : {&layer.input_scaling(), &layer.weight_scaling()}) {
                v.insert(v.end(), s->history().data(), s->history().data() + s->history_length);
                v.push_back(s->scale().data()[0]);
            }
            const auto& g = layer.gradient_scaling();
            v.insert(v.end(), g.history().data(), g.history().data() + g.history_length);
            v.push_back(g.scale().data()[0]);
        }
    });
    return v;
}

// Trains twins for four SGD steps: one on batches of padded_batch whose last
// rows are padding, one on the real rows alone; gives both.
template <class Padded, class Small>
void train_twins(Padded& padded, Small& small)
{
    nn::copy_parameters(small, padded);
    train::trainer tp(padded, train::sgd{.momentum = 0.9f}, train::constant_lr{5e-2f});
    train::trainer ts(small, train::sgd{.momentum = 0.9f}, train::constant_lr{5e-2f});
    using small_input = typename Small::input_shape;
    using padded_input = typename Padded::input_shape;
    for (std::uint64_t step = 0; step < 4; ++step) {
        const auto x = random_tensor<f32, small_input>(300 + step, 1.5);
        const auto padded_x = padded_from<padded_input>(x);
        Tensor<i32, Shape<padded_batch>, Host> labels, valid;
        Tensor<i32, Shape<real_samples>, Host> small_labels, small_valid;
        for (std::size_t r = 0; r < padded_batch; ++r) {
            labels.data()[r] = static_cast<i32>((step + 3 * r) % 4);
            valid.data()[r] = r < real_samples;
        }
        for (std::size_t r = 0; r < real_samples; ++r) small_labels.data()[r] = labels.data()[r], small_valid.data()[r] = 1;
        tp.step(padded_x, labels, valid);
        ts.step(x, small_labels, small_valid);
    }
    check_close(parameters_of(padded), parameters_of(small), 1e-5, "parameters after 4 steps");
}

// Sensitive to every value it sees, not just the extremes (the padding's
// zeros included): the 90th percentile of a coarse histogram.
struct percentile_90 : quant::percentile_observer {
    explicit percentile_90(quant::scheme s) : quant::percentile_observer(s, 90.0, 128) {}
};

// A forward in training mode of x padded with garbage, marked by a mask,
// and of x alone; both outputs' real rows must agree.
template <class Padded, class Small>
void forward_twins(Padded& padded, Small& small, std::uint64_t seed)
{
    using small_input = typename Small::input_shape;
    const auto x = random_tensor<f32, small_input>(seed, 2.0);
    const auto& y = padded.forward(padded_from<typename Padded::input_shape>(x), nn::valid_samples(real_mask(real_samples)));
    const auto& want = small.forward(x);
    constexpr std::size_t n = Small::output_shape::numel;
    check_close(std::vector<float>(y.data(), y.data() + n), std::vector<float>(want.data(), want.data() + n), 1e-6,
                "real rows' outputs");
}

using cnn = nn::Sequential<nn::Conv2d<3, 4, 3, 1, 1>, nn::ReLU, nn::MaxPool2d<2>, nn::FlattenCHW, nn::Linear<36, 4>>;
template <std::size_t N>
using images = Shape<N, 6, 6, 3>;
using mlp = nn::Sequential<nn::Linear<6, 8>, nn::ReLU, nn::Linear<8, 4>>;

}  // namespace

TEST_CASE("padding: observers see the real rows alone, whatever the padding holds (range and histogram observers)")
{
    observe_padded_and_small<quant::min_max_observer<>>();
    observe_padded_and_small<quant::min_max_observer<quant::per_channel<1>>>();
    observe_padded_and_small<quant::moving_average_observer<>>(quant::activation_scheme, 0.3f);
    observe_padded_and_small<quant::moving_average_observer<quant::per_channel<2>>>(quant::weight_scheme, 0.3f);
    observe_padded_and_small<quant::percentile_observer>(quant::activation_scheme, 99.0, 64);
    observe_padded_and_small<quant::mse_observer>(quant::activation_scheme, 64);
}

TEST_CASE("padding: observers that saw padding alone refuse params(); per channel along the batch axis, padding channels stay unseen")
{
    using rows = Shape<padded_batch, 4>;
    const auto garbage = padded_from<rows>(random_tensor<f32, Shape<real_samples, 4>>(3));
    quant::min_max_observer<> nothing;
    quant::percentile_observer nothing_binned;
    nothing.observe(garbage, real_mask(0));
    nothing_binned.observe(garbage, real_mask(0));
    CHECK(nothing.count() == 0);
    CHECK(nothing_binned.count() == 0);
    CHECK_THROWS_AS(nothing.params(), error);
    CHECK_THROWS_AS(nothing_binned.params(), error);

    // per channel along axis 0: each row is its own channel
    quant::min_max_observer<quant::per_channel<0>> rows_observer;
    rows_observer.observe(garbage, real_mask(real_samples));
    CHECK(rows_observer.count() == 1);
    for (std::size_t c = 0; c < padded_batch; ++c) {
        CAPTURE(c);
        if (c < real_samples) {
            float lo = inf, hi = -inf;
            for (std::size_t k = 0; k < 4; ++k) lo = std::min(lo, garbage.data()[c * 4 + k]), hi = std::max(hi, garbage.data()[c * 4 + k]);
            CHECK(rows_observer.min()[c] == lo);
            CHECK(rows_observer.max()[c] == hi);
        } else {
            CHECK(rows_observer.min()[c] == inf);
            CHECK(rows_observer.max()[c] == -inf);
        }
    }
    try {
        (void)rows_observer.params();
        FAIL("params() concluded a range for channels that saw nothing");
    } catch (const error& e) {
        CHECK(std::string(e.what()).find("channel 3") != std::string::npos);
    }
    rows_observer.observe(garbage, real_mask(padded_batch));  // now every row is real (the infinities too)
    CHECK(rows_observer.max()[3] == inf);
}

TEST_CASE("padding: QAT training on padded batches equals training on the real rows (ranges and parameters)")
{
    nn::model<cnn, quant::qat<fp32, percentile_90>, images<padded_batch>, Host> padded(5);
    nn::model<cnn, quant::qat<fp32, percentile_90>, images<real_samples>, Host> small(5);
    train_twins(padded, small);
    check_close(input_params_of(padded), input_params_of(small), 1e-6, "input scales and zero points after training");
    // driven by hand, padding holding garbage (40, 1e6, inf, NaN)
    for (std::uint64_t batch = 0; batch < 2; ++batch) forward_twins(padded, small, 50 + batch);
    check_close(input_params_of(padded), input_params_of(small), 1e-6, "input scales and zero points after forwards");
}

TEST_CASE("padding: a fake-quantized Linear on sequences [Batch, Seq, In] observes the real samples' tokens alone")
{
    using seq = nn::Sequential<nn::Linear<6, 4>>;
    nn::model<seq, quant::qat<fp32, quant::percentile_observer>, Shape<padded_batch, 2, 6>, Host> padded(2);
    nn::model<seq, quant::qat<fp32, quant::percentile_observer>, Shape<real_samples, 2, 6>, Host> small(2);
    for (std::uint64_t batch = 0; batch < 2; ++batch) {
        const auto x = random_tensor<f32, Shape<real_samples, 2, 6>>(40 + batch);
        const auto& y = padded.forward(padded_from<Shape<padded_batch, 2, 6>>(x), nn::valid_samples(real_mask(real_samples)));
        const auto& want = small.forward(x);
        CHECK(std::vector<float>(y.data(), y.data() + 24) == std::vector<float>(want.data(), want.data() + 24));
    }
    CHECK(input_params_of(padded) == input_params_of(small));
}

TEST_CASE("padding: calibration through predict() sees the rows it was given, not the batch's zero rest")
{
    nn::model<cnn, quant::qat<fp32, percentile_90>, images<padded_batch>, Host> padded(8);
    nn::model<cnn, quant::qat<fp32, percentile_90>, images<real_samples>, Host> small(8);
    nn::copy_parameters(small, padded);
    quant::prepare_calibration(padded);
    quant::prepare_calibration(small);
    for (std::uint64_t batch = 0; batch < 2; ++batch) {
        const auto x = random_tensor<f32, images<real_samples>>(60 + batch);
        Tensor<f32, Shape<real_samples, 4>, Host> y;
        padded.predict(x, y, real_samples);
        small.forward(x);
    }
    CHECK(input_params_of(padded) == input_params_of(small));
}

TEST_CASE("padding: fp8 training on padded batches equals training on the real rows (amax histories, scales, parameters)")
{
    nn::model<mlp, quant::fp8_training<fp32, 4>, Shape<padded_batch, 6>, Host> padded(9);
    nn::model<mlp, quant::fp8_training<fp32, 4>, Shape<real_samples, 6>, Host> small(9);
    train_twins(padded, small);
    check_close(fp8_scaling_of(padded), fp8_scaling_of(small), 1e-6, "amax histories and scales after training");
    // driven by hand, padding holding garbage (40, 1e6, inf, NaN)
    for (std::uint64_t batch = 0; batch < 2; ++batch) forward_twins(padded, small, 70 + batch);
    const std::vector<float> scaling = fp8_scaling_of(padded);
    check_close(scaling, fp8_scaling_of(small), 1e-6, "amax histories and scales after forwards");
    for (const float v : scaling) CHECK(std::isfinite(v));
}
