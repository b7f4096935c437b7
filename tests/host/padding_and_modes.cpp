// What a training loop must never notice: padding rows (a padded last batch
// trains exactly as the batch of its real rows alone; BatchNorm's batch and
// running statistics and every gradient included), the model's mode (every
// call that switches it restores it, exceptions included), the host thread
// count (restored the same way; results never depend on it) and reading a
// metric (a getter changes nothing; the window ends only when told).
#include "model_testing.hpp"
#include "scratch_dir.hpp"

#include <tenet/exec/host_threads.hpp>
#include <tenet/io/io.hpp>

#include <cmath>
#include <stdexcept>
#include <vector>

using namespace tenet;
namespace nn = tenet::nn;
using testing::check_close;
using testing::random_tensor;

namespace {

// A CNN with the layer that mixes the batch (BatchNorm2d) twice, and every
// per-sample layer a CNN has around it.
using cnn = nn::Sequential<nn::Conv2d<3, 4, 3, 1, 1>, nn::BatchNorm2d<4>, nn::ReLU, nn::MaxPool2d<2>,
                           nn::Conv2d<4, 4, 1>, nn::BatchNorm2d<4, nn::batchnorm_options{.momentum = 0.3f}>,
                           nn::ReLU, nn::FlattenCHW, nn::Linear<36, 5>>;
constexpr std::size_t padded_batch = 5;  // the model's batch; the last padded batch holds `real_samples` real ones
constexpr std::size_t real_samples = 3;
template <std::size_t N>
using images = Shape<N, 6, 6, 3>;
template <std::size_t N>
using cnn_model = nn::model<cnn, fp32, images<N>, Host>;

template <class M>
std::vector<float> parameters_of(const M& m)
{
    return {m.parameters(), m.parameters() + M::flat_numel};
}
template <class M>
std::vector<float> buffers_of(const M& m)
{
    return {m.buffers(), m.buffers() + M::buffer_numel};
}

// The batch of `real_samples` samples, and the same samples first in a batch of
// `padded_batch` whose padding rows hold garbage (the trainer zeroes them; a model
// driven by hand must not need that).
struct padded_pair {
    Tensor<f32, images<padded_batch>, Host> x;
    Tensor<f32, images<real_samples>, Host> small_x;
    Tensor<i32, Shape<padded_batch>, Host> labels;
    Tensor<i32, Shape<real_samples>, Host> small_labels;
    Tensor<i32, Shape<padded_batch>, Host> valid;  // as data::batch_loader gives it
    Tensor<i32, Shape<real_samples>, Host> small_valid;

    explicit padded_pair(std::uint64_t seed)
    {
        x = random_tensor<f32, images<padded_batch>>(seed);
        constexpr std::size_t per = images<1>::numel;
        for (std::size_t i = 0; i < real_samples * per; ++i) small_x.data()[i] = x.data()[i] * 2.0f + 0.5f;
        for (std::size_t i = 0; i < real_samples * per; ++i) x.data()[i] = small_x.data()[i];
        for (std::size_t i = real_samples * per; i < padded_batch * per; ++i) x.data()[i] = 40.0f + float(i % 7);  // far off
        for (std::size_t r = 0; r < padded_batch; ++r) {
            labels.data()[r] = static_cast<i32>((seed + 3 * r) % 5);
            valid.data()[r] = r < real_samples;
        }
        for (std::size_t r = 0; r < real_samples; ++r) small_labels.data()[r] = labels.data()[r], small_valid.data()[r] = 1;
    }
};

}  // namespace

TEST_CASE("padding: a padded batch's forward, gradients and running statistics are the smaller batch's (model, by hand)")
{
    cnn_model<padded_batch> padded(7);
    cnn_model<real_samples> small(7);
    nn::copy_parameters(small, padded);
    for (std::uint64_t step = 0; step < 3; ++step) {
        const padded_pair p(100 + step);
        Tensor<f32, Shape<padded_batch>, Host> mask;
        for (std::size_t r = 0; r < padded_batch; ++r) mask.data()[r] = r < real_samples ? 1.0f : 0.0f;
        const auto& y = padded.forward(p.x, nn::valid_samples(mask));
        const auto& want = small.forward(p.small_x);
        std::vector<float> real_rows(y.data(), y.data() + real_samples * 5);
        check_close(real_rows, std::vector<float>(want.data(), want.data() + real_samples * 5), 1e-5, "real rows' outputs");
        // dy: random on the real rows, 0 on the padding rows (as a loss over the valid rows gives)
        auto dy = random_tensor<f32, Shape<padded_batch, 5>>(200 + step);
        Tensor<f32, Shape<real_samples, 5>, Host> small_dy;
        for (std::size_t i = 0; i < real_samples * 5; ++i) small_dy.data()[i] = dy.data()[i];
        for (std::size_t i = real_samples * 5; i < padded_batch * 5; ++i) dy.data()[i] = 0.0f;
        padded.backward(dy);
        small.backward(small_dy);
        check_close(std::vector<float>(padded.gradients(), padded.gradients() + cnn_model<padded_batch>::flat_numel),
                    std::vector<float>(small.gradients(), small.gradients() + cnn_model<real_samples>::flat_numel), 1e-4,
                    "gradients");
        check_close(buffers_of(padded), buffers_of(small), 1e-5, "running statistics");
    }
    // the statistics really moved, and without the mask the padding would have counted
    CHECK(buffers_of(padded) != buffers_of(cnn_model<padded_batch>(7)));
    cnn_model<padded_batch> unmasked(7);
    unmasked.forward(padded_pair(100).x);
    cnn_model<real_samples> small_once(7);
    nn::copy_parameters(small_once, unmasked);
    small_once.forward(padded_pair(100).small_x);
    CHECK(buffers_of(unmasked) != buffers_of(small_once));
}

// (SGD: an adaptive rule would turn the rounding noise of a gradient that
// is 0 in exact arithmetic -- a conv bias before BatchNorm -- into full steps.)
TEST_CASE("padding: trainer steps on padded batches equal the steps on their real rows (BatchNorm, SGD)")
{
    auto run = [](auto rule) {
        cnn_model<padded_batch> padded(11);
        cnn_model<real_samples> small(11);
        nn::copy_parameters(small, padded);
        train::trainer tp(padded, rule, train::constant_lr{5e-2f});
        train::trainer ts(small, rule, train::constant_lr{5e-2f});
        for (std::uint64_t step = 0; step < 4; ++step) {
            const padded_pair p(300 + step);
            tp.step(p.x, p.labels, p.valid);
            ts.step(p.small_x, p.small_labels, p.small_valid);
        }
        check_close(parameters_of(padded), parameters_of(small), 1e-4, "parameters after 4 steps");
        check_close(buffers_of(padded), buffers_of(small), 1e-4, "running statistics after 4 steps");
        CHECK(tp.mean_loss() == doctest::Approx(ts.mean_loss()).epsilon(1e-5));
        const padded_pair p(400);
        tp.evaluate(p.x, p.labels, p.valid);
        ts.evaluate(p.small_x, p.small_labels, p.small_valid);
        CHECK(tp.evaluation_loss() == doctest::Approx(ts.evaluation_loss()).epsilon(1e-5));
        CHECK(tp.accuracy() == ts.accuracy());
    };
    run(train::sgd{});
    run(train::sgd{.momentum = 0.9f, .weight_decay = 1e-3f, .nesterov = true});
}

TEST_CASE("padding: PyTorch trained on the real rows alone; tenet on them padded to a batch of 4 gets its weights")
{
    // tests/fixtures/pytorch/make_padded_batch_fixture.py: three SGD steps (momentum 0.9, lr 0.1) on batches of 3
    using net = nn::Sequential<nn::Conv2d<3, 4, 3, 1, 1>, nn::BatchNorm2d<4>, nn::ReLU, nn::MaxPool2d<2>, nn::FlattenCHW,
                               nn::Linear<36, 5>>;
    using M = nn::model<net, fp32, images<4>, Host>;
    const std::string fixtures = std::string(TENET_TEST_FIXTURES) + "/pytorch/";
    const auto x = io::load_npy<f32>(fixtures + "padded_images.npy");
    const auto labels = io::load_npy<i32>(fixtures + "padded_labels.npy");
    REQUIRE(x.shape == std::vector<std::size_t>{3, 3, 6, 6, 3});
    REQUIRE(labels.shape == std::vector<std::size_t>{3, 3});
    M trained(1), want(2);
    REQUIRE(io::load_safetensors(trained, fixtures + "padded_initial.safetensors").complete());
    REQUIRE(io::load_safetensors(want, fixtures + "padded_trained.safetensors").complete());
    train::trainer t(trained, train::sgd{.momentum = 0.9f}, train::constant_lr{0.1f});
    constexpr std::size_t per = images<1>::numel;
    for (std::size_t step = 0; step < 3; ++step) {
        Tensor<f32, images<4>, Host> batch;
        Tensor<i32, Shape<4>, Host> batch_labels, valid;
        for (std::size_t i = 0; i < 3 * per; ++i) batch.data()[i] = x.values[step * 3 * per + i];
        for (std::size_t i = 3 * per; i < 4 * per; ++i) batch.data()[i] = 9.0f - float(i % 5);  // padding: anything
        for (std::size_t r = 0; r < 4; ++r) {
            batch_labels.data()[r] = r < 3 ? labels.values[step * 3 + r] : 0;
            valid.data()[r] = r < 3;
        }
        t.step(batch, batch_labels, valid);
    }
    check_close(parameters_of(trained), parameters_of(want), 2e-5, "parameters against PyTorch's");
    check_close(buffers_of(trained), buffers_of(want), 2e-5, "running statistics against PyTorch's");
}

TEST_CASE("padding: a batch with one real value per channel, or none, leaves the running statistics where they are")
{
    using one_pixel = nn::Sequential<nn::BatchNorm2d<2>, nn::Flatten, nn::Linear<2, 2>>;
    nn::model<one_pixel, fp32, Shape<4, 1, 1, 2>, Host> m(3);
    const auto x = random_tensor<f32, Shape<4, 1, 1, 2>>(5);
    Tensor<f32, Shape<4>, Host> mask;
    const std::vector<float> before = buffers_of(m);
    for (const std::size_t count : {0, 1}) {
        for (std::size_t r = 0; r < 4; ++r) mask.data()[r] = r < count ? 1.0f : 0.0f;
        const auto& y = m.forward(x, nn::valid_samples(mask));
        CAPTURE(count);
        CHECK(buffers_of(m) == before);
        for (std::size_t i = 0; i < 8; ++i) CHECK(std::isfinite(y.data()[i]));
    }
    for (std::size_t r = 0; r < 4; ++r) mask.data()[r] = r < 2 ? 1.0f : 0.0f;
    m.forward(x, nn::valid_samples(mask));
    CHECK(buffers_of(m) != before);  // two real values per channel: they move
}

TEST_CASE("modes: evaluate() and step() leave the model in the mode they found, buffers untouched by evaluate")
{
    cnn_model<padded_batch> net(13);
    train::trainer t(net, train::adamw{}, train::constant_lr{1e-2f});
    const testing::scratch_dir dir("tenet_modes");
    const padded_pair p(500);
    t.step(p.x, p.labels, p.valid);  // running statistics away from 0 and 1
    for (const bool training : {false, true}) {
        net.train(training);
        const auto buffers = buffers_of(net);
        const auto parameters = parameters_of(net);
        const std::uint64_t step = net.step();
        t.evaluate(p.x, p.labels, p.valid);
        CAPTURE(training);
        CHECK(net.training() == training);
        CHECK(buffers_of(net) == buffers);
        CHECK(parameters_of(net) == parameters);
        CHECK(net.step() == step);
        t.step(p.x, p.labels, p.valid);
        CHECK(net.training() == training);
        t.save(dir.file("modes.ckpt"));
        CHECK(net.training() == training);
    }
    // an eval-mode forward after evaluate() uses the running statistics: the same output twice, no buffer moves
    net.eval();
    t.evaluate(p.x, p.labels, p.valid);
    const auto buffers = buffers_of(net);
    const std::vector<float> first(net.forward(p.x).data(), net.forward(p.x).data() + padded_batch * 5);
    net.forward(p.x);
    CHECK(buffers_of(net) == buffers);
    CHECK(std::vector<float>(net.output().data(), net.output().data() + padded_batch * 5) == first);
}

TEST_CASE("threads: step() and evaluate() put back the thread count they found; results do not depend on the count")
{
    const host_threads_scope two(2);
    cnn_model<padded_batch> tuned(13), one(13), fixed_two(13);
    train::trainer t(tuned, train::adamw{}, train::constant_lr{1e-2f});
    train::trainer t1(one, train::adamw{}, train::constant_lr{1e-2f}, {.host_threads = 1});
    train::trainer t2(fixed_two, train::adamw{}, train::constant_lr{1e-2f}, {.host_threads = 2});
    CHECK(t.host_thread_tuner().candidates() == std::vector<int>{2, 1});
    CHECK(t1.host_thread_tuner().candidates() == std::vector<int>{1});
    for (std::uint64_t step = 0; step < 12; ++step) {  // (past the tuner's warm-up: it probes 1 thread)
        const padded_pair p(500 + step);
        for (auto* trainer : {&t, &t1, &t2}) {
            trainer->step(p.x, p.labels, p.valid);
            CHECK(host_threads() == 2);
        }
    }
    CHECK(parameters_of(tuned) == parameters_of(one));
    CHECK(parameters_of(tuned) == parameters_of(fixed_two));
    CHECK(buffers_of(tuned) == buffers_of(one));
    const padded_pair p(600);
    t1.evaluate(p.x, p.labels, p.valid);
    CHECK(host_threads() == 2);
    Tensor<i32, Shape<padded_batch>, Host> bad;
    bad = p.valid;
    bad.data()[0] = 3;  // neither 0 nor 1: throws before anything changes
    CHECK_THROWS_AS(t1.step(p.x, p.labels, bad), error);
    CHECK(host_threads() == 2);
    CHECK_THROWS_AS(train::trainer(tuned, train::sgd{}, train::constant_lr{1e-2f}, {.host_threads = -1}), error);
}

TEST_CASE("modes: nn::mode_scope restores the mode on return and on an exception")
{
    cnn_model<padded_batch> net(17);
    for (const bool training : {false, true}) {
        net.train(training);
        {
            nn::mode_scope scope(net, nn::mode::evaluation);
            CHECK_FALSE(net.training());
        }
        CHECK(net.training() == training);
        CHECK_THROWS_AS(([&] {
                            nn::mode_scope scope(net, training ? nn::mode::evaluation : nn::mode::training);
                            CHECK(net.training() != training);
                            throw std::runtime_error("thrown inside the scope");
                        }()),
                        std::runtime_error);
        CHECK(net.training() == training);
    }
}

TEST_CASE("metrics: reading changes nothing; reset_metrics() and end_epoch() end the window; an empty window is NaN")
{
    cnn_model<padded_batch> net(19), twin(19);
    train::trainer t(net, train::adamw{}, train::constant_lr{1e-2f});
    train::trainer unread(twin, train::adamw{}, train::constant_lr{1e-2f});
    CHECK(std::isnan(t.mean_loss()));
    CHECK(std::isnan(t.accuracy()));
    CHECK(std::isnan(t.evaluation_loss()));
    double first = 0;
    for (std::uint64_t s = 0; s < 3; ++s) {
        const padded_pair p(600 + s);
        t.step(p.x, p.labels, p.valid);
        unread.step(p.x, p.labels, p.valid);
        if (s == 0) first = t.mean_loss();
        CHECK(std::isfinite(t.mean_loss()));  // read after every step
    }
    const double mean = t.mean_loss();
    CHECK(mean == unread.mean_loss());  // the reads on the way changed nothing
    CHECK(t.mean_loss() == mean);       // read twice: the same
    CHECK(mean != first);               // (the mean of three steps, not the last read's window)
    CHECK(t.steps_in_window() == 3);
    // two evaluated batches: accuracy and loss per valid row over both
    const padded_pair a(700), b(701);
    t.evaluate(a.x, a.labels, a.valid);
    t.evaluate(b.x, b.labels, b.valid);
    const double accuracy = t.accuracy(), loss = t.evaluation_loss();
    CHECK(t.accuracy() == accuracy);
    CHECK(t.evaluation_loss() == loss);
    CHECK(t.evaluated_rows() == 2.0 * real_samples);
    CHECK(accuracy >= 0.0);
    CHECK(accuracy <= 1.0);
    const train::epoch_summary e = t.end_epoch();
    CHECK(e.mean_loss == mean);
    CHECK(e.steps == 3);
    CHECK(e.accuracy == accuracy);
    CHECK(e.evaluation_loss == loss);
    CHECK(e.evaluated_rows == 2.0 * real_samples);
    CHECK(std::isnan(t.mean_loss()));  // a new window
    CHECK(std::isnan(t.accuracy()));
    CHECK(std::isnan(t.evaluation_loss()));
    CHECK(t.steps_in_window() == 0);
    const train::epoch_summary empty = t.end_epoch();
    CHECK(std::isnan(empty.mean_loss));
    CHECK(std::isnan(empty.accuracy));
    // a padding-only evaluated batch counts no rows: still NaN, never 0
    padded_pair none(800);
    for (std::size_t r = 0; r < padded_batch; ++r) none.valid.data()[r] = 0;
    t.evaluate(none.x, none.labels, none.valid);
    CHECK(std::isnan(t.accuracy()));
    CHECK(std::isnan(t.evaluation_loss()));
    t.evaluate(a.x, a.labels, a.valid);
    t.reset_metrics();
    CHECK(std::isnan(t.accuracy()));
}
