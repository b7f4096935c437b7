// A user's program: a fused expression, a reduction, an MLP trained a step
// with AdamW, a checkpoint saved and loaded, each checked against float64
// references or against itself; exits non-zero on any wrong value. The same
// source is built as C++ by g++ (host only) and as CUDA by nvcc (the device
// too, when there is a GPU), through find_package and add_subdirectory.
#include <tenet/tenet.hpp>
#if CONSUMER_MPI
#include <tenet/dist/dist.hpp>  // tenet::mpi: the installed package found MPI for it
#endif

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace tenet;

namespace {

constexpr std::size_t rows = 16, features = 8, classes = 3;
using mlp = nn::Sequential<nn::Linear<features, 16>, nn::ReLU, nn::Linear<16, classes>>;
template <class Place>
using model_t = nn::model<mlp, fp32, Shape<rows, features>, Place>;
constexpr float learning_rate = 1e-3f;

int failures = 0;

void expect(bool ok, const char* where, const char* what, double got, double want)
{
    if (ok) return;
    std::fprintf(stderr, "FAILED (%s): %s: got %.9g, want %.9g\n", where, what, got, want);
    ++failures;
}

bool close(double got, double want, double tolerance) { return std::abs(got - want) <= tolerance * (1 + std::abs(want)); }

// Host tensors (poisoned first) holding a copy of a tensor or flat buffer of any place.
template <class T, class S, class Src>
Tensor<T, S, Host> to_host(const Src& source)
{
    Tensor<T, S, Host> out;
    std::fill(out.data(), out.data() + S::numel, std::numeric_limits<T>::quiet_NaN());
    copy(out, source);
    current_stream().synchronize();
    return out;
}

template <class Place>
std::vector<float> parameters_of(model_t<Place>& net)
{
    constexpr std::size_t n = model_t<Place>::flat_numel;
    const auto host = to_host<f32, Shape<n>>(make_view<Shape<n>, Place>(net.parameters()));
    return {host.data(), host.data() + n};
}

template <class Place>
void run(const char* where)
{
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    Tensor<f32, Shape<rows, features>, Host> x_host;
    Tensor<f32, Shape<features>, Host> b_host;
    Tensor<std::int32_t, Shape<rows>, Host> labels_host, valid_host;
    std::generate(x_host.data(), x_host.data() + rows * features, [&] { return normal(rng); });
    std::generate(b_host.data(), b_host.data() + features, [&] { return normal(rng); });
    for (std::size_t r = 0; r < rows; ++r) {
        labels_host.data()[r] = static_cast<std::int32_t>(rng() % classes);
        valid_host.data()[r] = r + 3 < rows;  // the last three rows are padding
    }
    Tensor<f32, Shape<rows, features>, Place> x;
    Tensor<f32, Shape<features>, Place> b;
    Tensor<std::int32_t, Shape<rows>, Place> labels, valid;
    copy(x, x_host);
    copy(b, b_host);
    copy(labels, labels_host);
    copy(valid, valid_host);

    // One fused expression (b broadcast along rows) and a reduction of it.
    Tensor<f32, Shape<rows, features>, Place> y;
    assign(y.view(), std::numeric_limits<float>::quiet_NaN());
    y = relu(x * 0.5f + b);
    Tensor<f32, Shape<>, Place> total = sum(y);
    const auto y_back = to_host<f32, Shape<rows, features>>(y);
    const auto total_back = to_host<f32, Shape<>>(total);
    double want_total = 0;
    for (std::size_t i = 0; i < rows * features; ++i) {
        const double want = std::max(0.0, double(x_host.data()[i]) * 0.5 + b_host.data()[i % features]);
        want_total += want;
        expect(close(y_back.data()[i], want, 1e-6), where, "relu(x * 0.5 + b)", y_back.data()[i], want);
    }
    expect(close(total_back(), want_total, 1e-5), where, "sum", total_back(), want_total);

    // One AdamW step: the loss is the cross-entropy of the model's own logits
    // over the valid rows, and Adam's first step moves a weight by about lr.
    model_t<Place> net(/*seed=*/3);
    net.eval();  // a forward that counts no training step
    const auto logits = to_host<f32, Shape<rows, classes>>(net.forward(x));
    double want_loss = 0;
    std::size_t counted = 0;
    for (std::size_t r = 0; r < rows; ++r) {
        if (!valid_host.data()[r]) continue;
        const float* z = logits.data() + r * classes;
        double norm = 0;
        for (std::size_t c = 0; c < classes; ++c) norm += std::exp(double(z[c]));
        want_loss += std::log(norm) - z[labels_host.data()[r]];
        ++counted;
    }
    want_loss /= double(counted);

    train::trainer trainer(net, train::adamw{}, train::constant_lr{learning_rate});
    const std::vector<float> initial = parameters_of(net);
    trainer.step(x, labels, valid);
    const double loss = trainer.mean_loss();
    expect(close(loss, want_loss, 1e-5), where, "mean loss of the first step", loss, want_loss);
    const std::vector<float> stepped = parameters_of(net);
    double moved = 0;
    for (std::size_t i = 0; i < stepped.size(); ++i) moved = std::max(moved, std::abs(double(stepped[i]) - initial[i]));
    expect(moved > 0.9 * learning_rate && moved < 1.1 * learning_rate, where, "largest parameter change", moved,
           learning_rate);

    // A checkpoint: saved, trained on, loaded back exactly, and the next step
    // from it is the step that followed the save.
    const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                      ("tenet_consumer_" + std::string(where) + "_" + std::to_string(std::random_device{}()));
    std::filesystem::create_directories(dir);
    const std::string path = (dir / "mlp.ckpt").string();
    trainer.save(path);
    trainer.step(x, labels, valid);
    const std::vector<float> second = parameters_of(net);
    trainer.load(path);
    expect(parameters_of(net) == stepped, where, "parameters after load == saved", 0, 0);
    expect(net.step() == 1, where, "step after load", double(net.step()), 1);
    trainer.step(x, labels, valid);
    expect(parameters_of(net) == second, where, "the step after load == the step after save", 0, 0);
    std::filesystem::remove_all(dir);
    current_stream().synchronize();
    std::printf("%-6s expression, sum, AdamW step (loss %.6f), checkpoint round trip: %s\n", where, loss,
                failures ? "FAILED" : "ok");
}

}  // namespace

int main()
{
    try {
        std::printf("tenet %s consumer, %s\n", TENET_VERSION_STRING, TENET_CUDA_COMPILER ? "nvcc" : "C++ compiler");
        run<Host>("host");
#if CONSUMER_MPI
        int mpi_initialized = 1;
        MPI_Initialized(&mpi_initialized);  // links libmpi through tenet::mpi
        expect(mpi_initialized == 0 && dist::mpi_options{}.timeout.count() > 0, "host", "tenet::mpi", mpi_initialized, 0);
        std::printf("tenet::mpi: dist/dist.hpp compiled and MPI linked\n");
#endif
#if TENET_CUDA_COMPILER
        if (has_device()) run<Device>("device");
        else std::printf("device: none (the device path was compiled, not run)\n");
#endif
    } catch (const std::exception& e) {
        std::fprintf(stderr, "FAILED: %s\n", e.what());
        return 1;
    }
    return failures ? 1 : 0;
}
