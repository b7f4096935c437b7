// custom_layer: the RMSNorm layer of docs/CUSTOM_LAYERS.md, checked: its
// forward against a float64 loop, every gradient of a model using it against
// central finite differences (in f64), its parameter names, and a short
// training run whose loss must fall -- on the host, and on the GPU too when
// this file is compiled by nvcc and one is present. Exits nonzero on failure.
#include "rms_norm.hpp"

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

using namespace tenet;

namespace {

int failures = 0;

void expect(bool ok, const char* what)
{
    std::printf("%-4s %s\n", ok ? "ok" : "FAIL", what);
    failures += !ok;
}

using exact = training_precision<f64, f64, f64, f64>;  // for the finite differences

// y = RMSNorm(x) of an fp32 model against the formula in float64.
void check_forward()
{
    using S = Shape<8, 16>;
    nn::model<nn::Sequential<RMSNorm<16>>, fp32, S, Host> m(1);
    m.for_each_parameter([](const std::string&, auto w, auto) {  // a weight other than its initial ones
        assign(w, random_uniform<typename decltype(w)::shape>(7, 0, 0.5f, 1.5f));
    });
    Tensor<f32, S, Host> x;
    x = random_normal<S>(2);
    const auto& y = m.forward(x);
    const f32* w = m.parameters();
    double worst = 0;
    for (std::size_t r = 0; r < 8; ++r) {
        double squares = 0;
        for (std::size_t j = 0; j < 16; ++j) squares += double(x(r, j)) * double(x(r, j));
        const double scale = 1.0 / std::sqrt(squares / 16 + double(RMSNorm<16>::eps));
        for (std::size_t j = 0; j < 16; ++j) {
            const double want = double(x(r, j)) * scale * double(w[j]);
            worst = std::max(worst, std::abs(double(y(r, j)) - want) / (1e-6 + std::abs(want)));
        }
    }
    std::printf("     forward: largest relative error %.2e\n", worst);
    expect(worst < 1e-5, "forward equals the float64 formula");
}

// Every parameter gradient of Linear -> RMSNorm (the Linear's through
// RMSNorm's dx) against central differences of sum(y * r), in f64.
void check_gradients()
{
    using S = Shape<4, 6>;
    nn::model<nn::Sequential<nn::Linear<6, 16>, RMSNorm<16>>, exact, S, Host> m(3);
    Tensor<f64, S, Host> x;
    Tensor<f64, Shape<4, 16>, Host> r;
    x = random_normal<S>(4);
    r = random_normal<Shape<4, 16>>(5);
    std::vector<std::string> names;
    m.for_each_parameter([&](const std::string& name, auto, auto) { names.push_back(name); });
    expect(names == std::vector<std::string>{"0.weight", "0.bias", "1.weight"},
           "parameter names 0.weight, 0.bias, 1.weight (checkpoints, safetensors)");

    m.forward(x);
    m.backward(r);
    const auto loss = [&] {
        const auto& y = m.forward(x);
        double l = 0;
        for (std::size_t i = 0; i < y.numel; ++i) l += y.data()[i] * r.data()[i];
        return l;
    };
    double worst = 0;
    std::size_t checked = 0;
    m.for_each_parameter([&](const std::string&, auto value, auto gradient) {
        for (std::size_t i = 0; i < decltype(value)::shape::numel; ++i) {
            f64& p = value.data()[i];
            const f64 kept = p, h = 1e-6;
            p = kept + h;
            const double up = loss();
            p = kept - h;
            const double down = loss();
            p = kept;
            const double numeric = (up - down) / (2 * h), analytic = gradient.data()[i];
            worst = std::max(worst, std::abs(numeric - analytic) / (1e-6 + std::abs(numeric)));
            ++checked;
        }
    });
    std::printf("     gradients: %zu checked, largest relative error %.2e\n", checked, worst);
    expect(checked == 6 * 16 + 16 + 16 && worst < 1e-5, "gradients equal central finite differences");
}

// A short regression run: a student learns a fixed teacher of the same
// architecture with plain SGD on the flat buffers; the loss must fall.
template <class Place>
void check_training(const char* where)
{
    using net = nn::Sequential<nn::Linear<8, 32>, RMSNorm<32>, nn::ReLU, nn::Linear<32, 4>>;
    using S = Shape<64, 8>;
    using Out = Shape<64, 4>;
    using M = nn::model<net, fp32, S, Place>;
    M student(5), teacher(6);
    teacher.eval();
    Tensor<f32, S, Place> x;
    Tensor<f32, Out, Place> target, dy;
    Tensor<f32, Shape<>, Place> loss;
    Tensor<f32, Shape<>, Host> seen;
    auto flat = [](auto* p) { return make_view<Shape<M::flat_numel>, Place>(p); };
    double first = 0, last = 0;
    for (std::uint64_t step = 0; step < 150; ++step) {
        x = random_normal<S>(100 + step % 8);  // eight batches, in turn
        target = teacher.forward(x);
        const auto& y = student.forward(x);
        loss = sum((y - target) * (y - target)) * (1.0f / Out::numel);
        dy = (y - target) * (2.0f / Out::numel);
        student.backward(dy);
        flat(student.parameters()) = flat(student.parameters()) - 0.2f * flat(student.gradients());
        copy(seen, loss);
        current_stream().synchronize();
        if (step < 8) first += seen() / 8;
        if (step >= 142) last += seen() / 8;
    }
    std::printf("     %s training: mean loss of the first 8 steps %.4f, of the last 8 %.4f\n", where, first, last);
    expect(std::isfinite(last) && last < 0.5 * first, "training lowers the loss by half or more");
}

}  // namespace

int main()
{
    check_forward();
    check_gradients();
    check_training<Host>("host");
#if TENET_CUDA_COMPILER
    if (has_device()) check_training<Device>("device");
    else std::printf("device: none (the device path was compiled, not run)\n");
#endif
    if (failures > 0) std::printf("custom_layer: %d check(s) failed\n", failures);
    return failures > 0 ? 1 : 0;
}
