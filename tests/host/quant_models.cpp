// Quantization of whole models on the host: the fake-quantized Linear of QAT
// (forward and the clipped straight-through estimator vs float64 references),
// post-training quantization of a trained MLP into an int8 model (accuracy,
// agreement with the fake-quantized model, exact int32 accumulators, byte
// counts), and QAT fine-tuning with observers frozen part-way.
#include "synthetic_task.hpp"
#include "tensor_testing.hpp"

#include <tenet/nn/nn.hpp>
#include <tenet/quant/int8_model.hpp>
#include <tenet/quant/qat.hpp>
#include <tenet/train/trainer.hpp>

#include <cmath>
#include <random>
#include <ratio>
#include <vector>

using namespace tenet;
namespace nn = tenet::nn;
namespace quant = tenet::quant;
namespace train = tenet::train;

namespace {

constexpr std::size_t features = 12, hidden = 30, classes = 4, batch = 64;
// hidden = 30: the int8 model pads it to 32 for IMMA's multiple-of-4 rule.
using spec = nn::Sequential<nn::Linear<features, hidden>, nn::ReLU, nn::Linear<hidden, classes>>;
using input = Shape<batch, features>;

using testing::task;
using host_batch = testing::task_batch<f32, batch, features>;

task make_task(std::size_t n, std::uint64_t seed) { return testing::make_task(n, features, classes, seed); }

template <class Trainer>
void train_epoch(Trainer& t, const task& data, host_batch& b)
{
    for (std::size_t first = 0; first < data.y.size(); first += batch) {
        b.fill(data, first);
        t.step(b.x, b.labels, b.valid);
    }
}

// Accuracy of anything with forward(x) -> logits.
template <class M>
double accuracy(M& m, const task& data, host_batch& b)
{
    std::size_t right = 0;
    for (std::size_t first = 0; first < data.y.size(); first += batch) {
        b.fill(data, first);
        const auto& logits = m.forward(b.x);
        for (std::size_t r = 0; r < batch && first + r < data.y.size(); ++r) {
            std::size_t best = 0;
            for (std::size_t c = 1; c < classes; ++c)
                if (logits.data()[r * classes + c] > logits.data()[r * classes + best]) best = c;
            right += static_cast<std::int32_t>(best) == b.labels.data()[r];
        }
    }
    return static_cast<double>(right) / static_cast<double>(data.y.size());
}

// PyTorch's fake quantization, written out in double: the reference.
double fake_quant(double x, double scale, int zero_point, int qmin)
{
    const double q = std::nearbyint(static_cast<double>(static_cast<float>(x) * (1.0f / static_cast<float>(scale)))) + zero_point;
    return (std::clamp(q, static_cast<double>(qmin), 127.0) - zero_point) * scale;
}
bool inside(double x, double scale, int zero_point, int qmin)
{
    const double q = std::nearbyint(static_cast<double>(static_cast<float>(x) * (1.0f / static_cast<float>(scale)))) + zero_point;
    return q >= qmin && q <= 127;
}

template <class M>
auto gradients_of(M& m)
{
    std::vector<std::vector<double>> values, gradients;
    m.for_each_parameter([&](const std::string&, auto value, auto gradient) {
        using V = decltype(value);
        values.emplace_back(V::shape::numel);
        gradients.emplace_back(V::shape::numel);
        for (std::size_t i = 0; i < V::shape::numel; ++i) {
            values.back()[i] = value.data()[i];
            gradients.back()[i] = gradient.data()[i];
        }
    });
    return std::pair{values, gradients};
}

}  // namespace

TEST_CASE("qat: fake-quantized Linears forward, and the clipped straight-through estimator backward")
{
    // Two Linears without activation: the second's input gradient (masked by
    // its input range) reaches the first's weight gradient.
    constexpr std::size_t in = 12, mid = 8, out = 5, rows = 16;
    using chain = nn::Sequential<nn::Linear<in, mid>, nn::Linear<mid, out>>;
    nn::model<chain, quant::qat<fp32>, Shape<rows, in>, Host> m(7);
    Tensor<f32, Shape<rows, in>, Host> x;
    Tensor<f32, Shape<rows, out>, Host> dy;
    std::mt19937_64 rng(11);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (std::size_t i = 0; i < x.numel; ++i) x.data()[i] = normal(rng);
    m.forward(x);                // the observers see this batch
    quant::freeze_observers(m);  // ... and keep its ranges
    for (std::size_t i = 0; i < x.numel; ++i) x.data()[i] = 3.0f * normal(rng);  // partly outside them
    for (std::size_t i = 0; i < dy.numel; ++i) dy.data()[i] = normal(rng);
    const auto& y = m.forward(x);
    m.backward(dy);

    quant::affine p[2];
    std::vector<double> wscale[2];
    std::size_t index = 0;
    quant::detail::for_each_fake_quant_layer(m, [&](auto& layer) {
        p[index] = layer.input_params();
        for (std::size_t o = 0; o < std::remove_cvref_t<decltype(layer)>::out_features; ++o)
            wscale[index].push_back(layer.weight_scale().data()[o]);
        ++index;
    });
    REQUIRE(index == 2);
    const auto [w, g] = gradients_of(m);  // w0, b0, w1, b1
    // Weight scales: per output channel, max |w| / 127.
    for (int l = 0; l < 2; ++l) {
        const std::size_t cols = l == 0 ? in : mid;
        for (std::size_t o = 0; o < wscale[l].size(); ++o) {
            double bound = 0;
            for (std::size_t k = 0; k < cols; ++k) bound = std::max(bound, std::fabs(w[2 * l][o * cols + k]));
            CHECK(wscale[l][o] == doctest::Approx(bound / 127.0).epsilon(1e-6));
        }
    }
    auto fq_w = [&](int l, std::size_t o, std::size_t k, std::size_t cols) {
        return fake_quant(w[2 * l][o * cols + k], wscale[l][o], 0, -127);
    };
    // Forward in double.
    std::vector<double> x1q(rows * in), h(rows * mid), hq(rows * mid);
    for (std::size_t i = 0; i < rows * in; ++i) x1q[i] = fake_quant(x.data()[i], p[0].scale, p[0].zero_point, -128);
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t o = 0; o < mid; ++o) {
            double s = w[1][o];
            for (std::size_t k = 0; k < in; ++k) s += x1q[r * in + k] * fq_w(0, o, k, in);
            h[r * mid + o] = s;
            hq[r * mid + o] = fake_quant(static_cast<float>(s), p[1].scale, p[1].zero_point, -128);
        }
    std::size_t clipped = 0;
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t o = 0; o < out; ++o) {
            double s = w[3][o];
            for (std::size_t k = 0; k < mid; ++k) s += hq[r * mid + k] * fq_w(1, o, k, mid);
            CHECK(y.data()[r * out + o] == doctest::Approx(s).epsilon(1e-4).scale(1.0));
        }
    // Backward: dW1 = dy^T hq, db1 = column sums, dh = (dy wq1) masked, dW0 = dh^T x1q.
    std::vector<double> dh(rows * mid);
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t k = 0; k < mid; ++k) {
            double s = 0;
            for (std::size_t o = 0; o < out; ++o) s += dy.data()[r * out + o] * fq_w(1, o, k, mid);
            const bool pass = inside(static_cast<float>(h[r * mid + k]), p[1].scale, p[1].zero_point, -128);
            clipped += !pass;
            dh[r * mid + k] = pass ? s : 0.0;
        }
    CHECK(clipped > 0);             // the test exercises the clipping ...
    CHECK(clipped < rows * mid);    // ... and the pass-through
    for (std::size_t o = 0; o < out; ++o) {
        double db = 0;
        for (std::size_t r = 0; r < rows; ++r) db += dy.data()[r * out + o];
        CHECK(g[3][o] == doctest::Approx(db).epsilon(1e-5).scale(1.0));
        for (std::size_t k = 0; k < mid; ++k) {
            double s = 0;
            for (std::size_t r = 0; r < rows; ++r) s += dy.data()[r * out + o] * hq[r * mid + k];
            CHECK(g[2][o * mid + k] == doctest::Approx(s).epsilon(1e-4).scale(1.0));
        }
    }
    for (std::size_t o = 0; o < mid; ++o)
        for (std::size_t k = 0; k < in; ++k) {
            double s = 0;
            for (std::size_t r = 0; r < rows; ++r) s += dh[r * mid + o] * x1q[r * in + k];
            CHECK(g[0][o * in + k] == doctest::Approx(s).epsilon(1e-4).scale(1.0));
        }
}

TEST_CASE("ptq and qat: a trained MLP as an int8 model")
{
    const task train_set = make_task(2048, 1), test_set = make_task(1000, 2);
    host_batch b;
    nn::model<spec, fp32, input, Host> trained(3);
    {
        train::trainer t(trained, train::adamw{}, train::warmup_cosine_lr{3e-3f, 20, 200, 0.0f});
        for (int epoch = 0; epoch < 6; ++epoch) train_epoch(t, train_set, b);
    }
    trained.eval();
    const double float_accuracy = accuracy(trained, test_set, b);
    MESSAGE("fp32 accuracy " << float_accuracy);
    REQUIRE(float_accuracy > 0.85);

    SUBCASE("post-training quantization: calibrate on 8 batches, convert")
    {
        nn::model<spec, quant::qat<fp32, quant::min_max_observer<>>, input, Host> calibrated(0);
        quant::copy_parameters(calibrated, trained);
        quant::prepare_calibration(calibrated);
        for (std::size_t i = 0; i < 8; ++i) {
            b.fill(train_set, i * batch);
            calibrated.forward(b.x);
        }
        quant::int8_model<spec, input, Host> q(calibrated);
        const double int8_accuracy = accuracy(q, test_set, b);
        MESSAGE("int8 PTQ accuracy " << int8_accuracy);
        CHECK(int8_accuracy > float_accuracy - 0.02);

        // The first unit's accumulators are the exact integer product.
        auto& u = q.unit<0>();
        for (std::size_t r = 0; r < batch; ++r)
            for (std::size_t o = 0; o < hidden; ++o) {
                std::int64_t s = 0;
                for (std::size_t k = 0; k < features; ++k)
                    s += std::int64_t{u.input().data()[r * 12 + k]} * u.weight().data()[o * 12 + k];
                CHECK(u.accumulators().data()[r * 32 + o] == s);
            }

        // The int8 model computes what the fake-quantized model computes.
        quant::freeze_observers(calibrated);
        quant::enable_fake_quant(calibrated, true);
        b.fill(test_set, 0);
        const auto& fake = calibrated.forward(b.x);
        const auto& real = q.forward(b.x);
        double worst = 0;
        for (std::size_t i = 0; i < batch * classes; ++i)
            worst = std::max(worst, std::fabs(double(fake.data()[i]) - double(real.data()[i])));
        MESSAGE("largest logit difference, int8 vs fake-quantized: " << worst);
        CHECK(worst < 0.05);
    }

    SUBCASE("quantization-aware training: an epoch with observers, then frozen")
    {
        nn::model<spec, quant::qat<fp32>, input, Host> m(0);
        quant::copy_parameters(m, trained);
        train::trainer t(m, train::adamw{}, train::constant_lr{3e-4f});
        train_epoch(t, train_set, b);
        quant::freeze_observers(m);
        std::vector<float> scales;
        quant::detail::for_each_fake_quant_layer(m, [&](auto& l) { scales.push_back(l.input_params().scale); });
        train_epoch(t, train_set, b);
        std::size_t i = 0;
        quant::detail::for_each_fake_quant_layer(m, [&](auto& l) { CHECK(l.input_params().scale == scales[i++]); });
        m.eval();
        quant::int8_model<spec, input, Host> q(m);
        const double qat_accuracy = accuracy(q, test_set, b);
        MESSAGE("int8 QAT accuracy " << qat_accuracy);
        CHECK(qat_accuracy > float_accuracy - 0.02);
    }

    // Bytes, at compile time: int8 weights are a quarter of f32 weights.
    using int8 = quant::int8_model<spec, input, Host>;
    constexpr std::size_t weights = features * hidden + hidden * classes;
    static_assert(int8::weight_bytes == weights);
    static_assert(4 * int8::weight_bytes == weights * sizeof(f32));
    // Everything else: f32 biases and weight scales, each input's scale and zero point.
    static_assert(int8::parameter_bytes == weights + 2 * (hidden + classes) * sizeof(f32) + 2 * 8);
}
