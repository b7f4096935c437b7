// nn layers on the host: initialisers (statistics, bounds, reproducibility),
// every layer's forward against a float64 reference, every backward (through
// whole models, so each layer's input gradient is exercised by the layers
// before it) against central finite differences in float64, dropout's
// regenerated mask, the fused Linear+activation units, parameter layout and
// the compile-time byte counts.
#include "model_testing.hpp"

#include <functional>
#include <map>
#include <ratio>
#include <vector>

using namespace tenet;
namespace nn = tenet::nn;
using testing::check_gradients_f64, testing::f64_policy, testing::parameter_table, testing::random_tensor;

TEST_CASE("initialisers: bounds, moments and reproducibility")
{
    using W = Shape<256, 128>;
    Tensor<f32, W, Host> w, again;
    const auto moments = [&] {
        double sum = 0, sq = 0;
        for (std::size_t i = 0; i < W::numel; ++i) sum += w.data()[i], sq += double(w.data()[i]) * w.data()[i];
        const double mean = sum / W::numel;
        return std::pair{mean, sq / W::numel - mean * mean};
    };
    const double n = W::numel;

    nn::kaiming_uniform(w, {7, 1});
    const double bound = std::sqrt(2.0) * std::sqrt(3.0 / 128);
    for (std::size_t i = 0; i < W::numel; ++i) REQUIRE(std::fabs(w.data()[i]) <= bound);
    auto [mean, var] = moments();
    CHECK(std::fabs(mean) < 4 * std::sqrt(bound * bound / 3 / n));
    CHECK(var == doctest::Approx(bound * bound / 3).epsilon(0.03));
    nn::kaiming_uniform(again, {7, 1});
    CHECK(std::memcmp(w.data(), again.data(), W::numel * sizeof(f32)) == 0);
    nn::kaiming_uniform(again, {7, 2});
    CHECK(std::memcmp(w.data(), again.data(), W::numel * sizeof(f32)) != 0);

    nn::kaiming_normal(w, {8, 1}, nn::relu_gain(), nn::fan_mode::fan_out);
    std::tie(mean, var) = moments();
    CHECK(var == doctest::Approx(2.0 / 256).epsilon(0.03));

    nn::xavier_uniform(w, {9, 1});
    const double xb = std::sqrt(6.0 / (128 + 256));
    for (std::size_t i = 0; i < W::numel; ++i) REQUIRE(std::fabs(w.data()[i]) <= xb);
    std::tie(mean, var) = moments();
    CHECK(var == doctest::Approx(xb * xb / 3).epsilon(0.03));

    nn::xavier_normal(w, {10, 1}, 2.0);
    std::tie(mean, var) = moments();
    CHECK(std::fabs(mean) < 4 * std::sqrt(var / n));
    CHECK(var == doctest::Approx(4.0 * 2.0 / (128 + 256)).epsilon(0.03));

    // convolution-style weights: fan_in = In * k * k
    Tensor<f32, Shape<16, 8, 3, 3>, Host> conv;
    nn::kaiming_normal(conv, {11, 1}, 1.0);
    double sq = 0;
    for (std::size_t i = 0; i < conv.numel; ++i) sq += double(conv.data()[i]) * conv.data()[i];
    CHECK(sq / conv.numel == doctest::Approx(1.0 / 72).epsilon(0.1));
}

TEST_CASE("Linear and the fused units: forward against float64")
{
    using net = nn::Sequential<nn::Linear<13, 24>, nn::ReLU, nn::Linear<24, 9>, nn::GELU, nn::Linear<9, 5>>;
    static_assert(std::is_same_v<net::units, nn::type_list<
                      nn::detail::indexed<0, nn::linear_unit<13, 24, linalg::activation::relu>>,
                      nn::detail::indexed<2, nn::linear_unit<24, 9, linalg::activation::gelu>>,
                      nn::detail::indexed<4, nn::Linear<9, 5>>>>);
    using In = Shape<2, 7, 13>;  // rank 3: rows are 2 x 7
    nn::model<net, fp32, In, Host> m(3);
    const auto x = random_tensor<f32, In>(4);
    const auto table = parameter_table(m);
    CHECK(table.size() == 6);
    const auto param = [&](const char* name, std::size_t i) { return double(m.parameters()[table.at(name).first + i]); };

    // the reference: three dense layers in float64
    std::vector<double> h(x.numel);
    for (std::size_t i = 0; i < x.numel; ++i) h[i] = x.data()[i];
    std::size_t features = 13;
    const auto dense = [&](const std::string& prefix, std::size_t out, auto activation) {
        std::vector<double> next(14 * out);
        for (std::size_t r = 0; r < 14; ++r)
            for (std::size_t o = 0; o < out; ++o) {
                double acc = param((prefix + "bias").c_str(), o);
                for (std::size_t k = 0; k < features; ++k) acc += h[r * features + k] * param((prefix + "weight").c_str(), o * features + k);
                next[r * out + o] = activation(acc);
            }
        h = next;
        features = out;
    };
    dense("0.", 24, [](double v) { return v > 0 ? v : 0.0; });
    dense("2.", 9, [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); });
    dense("4.", 5, [](double v) { return v; });

    const auto& y = m.forward(x);
    static_assert(std::is_same_v<std::remove_cvref_t<decltype(y)>, Tensor<f32, Shape<2, 7, 5>, Host>>);
    for (std::size_t i = 0; i < y.numel; ++i) {
        INFO("element " << i);
        CHECK(y.data()[i] == doctest::Approx(h[i]).epsilon(1e-5).scale(1.0));
    }

    // PyTorch's default initialisation: U(-1/sqrt(in), 1/sqrt(in))
    for (std::size_t i = 0; i < 24 * 13; ++i) REQUIRE(std::fabs(param("0.weight", i)) <= 1 / std::sqrt(13.0));
    for (std::size_t i = 0; i < 9; ++i) REQUIRE(std::fabs(param("2.bias", i)) <= 1 / std::sqrt(24.0));
}

TEST_CASE("every layer's backward against central finite differences (float64)")
{
    SUBCASE("one Linear") { check_gradients_f64<nn::model<nn::Sequential<nn::Linear<5, 4>>, f64_policy, Shape<6, 5>, Host>>(10); }
    SUBCASE("Linear + ReLU + Linear: the fused relu unit")
    {
        check_gradients_f64<nn::model<nn::Sequential<nn::Linear<5, 6>, nn::ReLU, nn::Linear<6, 3>>, f64_policy, Shape<7, 5>, Host>>(20);
    }
    SUBCASE("fused gelu and gelu_tanh units")
    {
        using net = nn::Sequential<nn::Linear<5, 6>, nn::GELU, nn::Linear<6, 4>, nn::GELUTanh, nn::Linear<4, 3>>;
        check_gradients_f64<nn::model<net, f64_policy, Shape<8, 5>, Host>>(30);
    }
    SUBCASE("unfused activations and LayerNorm")
    {
        using net = nn::Sequential<nn::Linear<5, 6>, nn::Tanh, nn::LayerNorm<6>, nn::Linear<6, 4>, nn::Sigmoid,
                                   nn::Linear<4, 3>, nn::SiLU, nn::Linear<3, 2>, nn::Softplus, nn::ReLU>;
        check_gradients_f64<nn::model<net, f64_policy, Shape<5, 5>, Host>>(40);
    }
    SUBCASE("an activation last, after a Linear (not fused), and a rank-3 input")
    {
        using net = nn::Sequential<nn::Linear<4, 6>, nn::ReLU, nn::LayerNorm<6>, nn::Linear<6, 3>, nn::GELU>;
        check_gradients_f64<nn::model<net, f64_policy, Shape<2, 3, 4>, Host>>(50);
    }
    SUBCASE("LayerNorm without affine parameters, with a large eps")
    {
        using norm = nn::LayerNorm<6, nn::layernorm_options{.eps = 0.5f, .affine = false}>;
        using net = nn::Sequential<nn::Linear<5, 6>, nn::Tanh, norm, nn::Linear<6, 3>>;
        check_gradients_f64<nn::model<net, f64_policy, Shape<4, 5>, Host>>(45);
    }
    SUBCASE("nested Sequentials")
    {
        using inner = nn::Sequential<nn::Linear<4, 5>, nn::Tanh>;
        using net = nn::Sequential<inner, nn::Linear<5, 3>, nn::Sequential<nn::GELUTanh, nn::Linear<3, 2>>>;
        using M = nn::model<net, f64_policy, Shape<3, 4>, Host>;
        M m(60);
        const auto table = parameter_table(m);
        CHECK(table.count("0.0.weight") == 1);
        CHECK(table.count("1.bias") == 1);
        CHECK(table.count("2.1.weight") == 1);
        check_gradients_f64<M>(60);
    }
}

TEST_CASE("LayerNorm options: eps and no affine parameters, against float64")
{
    constexpr float eps = 0.5f;  // large, so that it matters
    using plain = nn::model<nn::Sequential<nn::LayerNorm<8, nn::layernorm_options{.eps = eps, .affine = false}>>, fp32,
                            Shape<5, 8>, Host>;
    static_assert(plain::flat_numel == 0, "no affine parameters: none at all");
    using affine = nn::model<nn::Sequential<nn::LayerNorm<8, nn::layernorm_options{.eps = eps}>>, fp32, Shape<5, 8>, Host>;
    static_assert(nn::model<nn::Sequential<nn::LayerNorm<8>>, fp32, Shape<5, 8>, Host>::flat_numel == affine::flat_numel);
    plain p(1);
    affine a(1);
    const auto x = random_tensor<f32, Shape<5, 8>>(7);
    const auto& y = p.forward(x);
    // gamma 2.5 and beta -1 in the affine twin (initialised to 1 and 0)
    for (std::size_t i = 0; i < 8; ++i) {
        a.parameters()[i] = 2.5f;
        a.parameters()[affine::flat_numel / 2 + i] = -1.0f;
    }
    const auto& ya = a.forward(x);
    for (std::size_t r = 0; r < 5; ++r) {
        double mean = 0, var = 0;
        for (std::size_t c = 0; c < 8; ++c) mean += x.data()[r * 8 + c] / 8.0;
        for (std::size_t c = 0; c < 8; ++c) var += (x.data()[r * 8 + c] - mean) * (x.data()[r * 8 + c] - mean) / 8.0;
        for (std::size_t c = 0; c < 8; ++c) {
            const double want = (x.data()[r * 8 + c] - mean) / std::sqrt(var + eps);
            CHECK(y.data()[r * 8 + c] == doctest::Approx(want).epsilon(1e-5).scale(1.0));
            CHECK(ya.data()[r * 8 + c] == doctest::Approx(2.5 * want - 1).epsilon(1e-5).scale(1.0));
        }
    }
}

TEST_CASE("Dropout: the backward regenerates the forward's mask; evaluation is the identity")
{
    using S = Shape<64, 256>;
    using net = nn::Sequential<nn::Dropout<std::ratio<1, 4>>>;
    nn::model<net, fp32, S, Host> m(5);
    auto x = random_tensor<f32, S>(6);
    for (std::size_t i = 0; i < S::numel; ++i) x.data()[i] = std::fabs(x.data()[i]) + 0.5f;  // never zero
    const auto dy = random_tensor<f32, S>(7);

    std::size_t kept_total = 0;
    std::vector<float> first_output;
    for (int step = 0; step < 2; ++step) {
        const auto& y = m.forward(x);
        std::vector<float> out(y.data(), y.data() + S::numel);
        if (step == 0) first_output = out;
        else CHECK(out != first_output);  // a new mask each step
        // backward through a model with an input gradient: use the layer directly
        Tensor<f32, S, Host> dx;
        testing::poison(dx);
        nn::no_previous_layer none;
        m.layers().backward(dy, dx.view(), nn::step_info{5, m.step(), true}, none);
        std::size_t kept = 0;
        for (std::size_t i = 0; i < S::numel; ++i) {
            const bool k = out[i] != 0;
            kept += k;
            REQUIRE(out[i] == (k ? x.data()[i] * (4.0f / 3.0f) : 0.0f));
            REQUIRE(dx.data()[i] == (k ? dy.data()[i] * (4.0f / 3.0f) : 0.0f));
        }
        kept_total += kept;
    }
    const double fraction = double(kept_total) / (2 * S::numel);
    CHECK(fraction == doctest::Approx(0.75).epsilon(0.01));

    m.eval();
    const auto& y = m.forward(x);
    CHECK(std::memcmp(y.data(), x.data(), S::numel * sizeof(f32)) == 0);
}

TEST_CASE("Dropout: the mask of step k comes from the model's step counter, set or counted")
{
    using S = Shape<16, 64>;
    using net = nn::Sequential<nn::Dropout<std::ratio<1, 2>>>;
    nn::model<net, fp32, S, Host> counted(9), jumped(9);
    const auto x = random_tensor<f32, S>(10);
    std::vector<std::vector<float>> outputs;
    for (int step = 0; step < 3; ++step) {
        const auto& y = counted.forward(x);
        outputs.emplace_back(y.data(), y.data() + S::numel);
    }
    CHECK(outputs[0] != outputs[1]);
    CHECK(outputs[1] != outputs[2]);
    jumped.set_step(1);  // the next forward is step 2: the counted model's second
    const auto& y = jumped.forward(x);
    CHECK(std::vector<float>(y.data(), y.data() + S::numel) == outputs[1]);
    CHECK(jumped.step() == 2);
}

TEST_CASE("bf16 and f32 models agree with the float64 model holding the same parameters")
{
    using net = nn::Sequential<nn::Linear<32, 48>, nn::ReLU, nn::Linear<48, 24>, nn::LayerNorm<24>, nn::Linear<24, 10>>;
    using In = Shape<16, 32>;
    nn::model<net, f64_policy, In, Host> exact(77);
    nn::model<net, bf16_mixed, In, Host> half(77);
    nn::model<net, fp32, In, Host> single(77);
    // the same parameters (rounded to bf16) in all three; the layouts differ
    // (256-byte padding is 32 f64, 64 f32 or 128 bf16 elements)
    const auto t_exact = parameter_table(exact), t_half = parameter_table(half), t_single = parameter_table(single);
    for (const auto& [name, where] : t_half)
        for (std::size_t j = 0; j < where.second; ++j) {
            const bf16 v = half.parameters()[where.first + j];
            exact.parameters()[t_exact.at(name).first + j] = convert<f64>(v);
            single.parameters()[t_single.at(name).first + j] = convert<f32>(v);
        }

    auto x64 = random_tensor<f64, In>(78);
    Tensor<bf16, In, Host> x16;
    Tensor<f32, In, Host> x32;
    for (std::size_t i = 0; i < In::numel; ++i) {
        x16.data()[i] = convert<bf16>(x64.data()[i]);
        x32.data()[i] = convert<f32>(x16.data()[i]);
        x64.data()[i] = convert<f64>(x16.data()[i]);
    }
    auto r = random_tensor<f64, Shape<16, 10>>(79);
    Tensor<bf16, Shape<16, 10>, Host> r16;
    Tensor<f32, Shape<16, 10>, Host> r32;
    for (std::size_t i = 0; i < r.numel; ++i) r16.data()[i] = convert<bf16>(r.data()[i]), r32.data()[i] = convert<f32>(r16.data()[i]);
    for (std::size_t i = 0; i < r.numel; ++i) r.data()[i] = convert<f64>(r16.data()[i]);

    const auto& y64 = exact.forward(x64);
    const auto& y16 = half.forward(x16);
    const auto& y32 = single.forward(x32);
    for (std::size_t i = 0; i < y64.numel; ++i) {
        INFO("output " << i);
        CHECK(convert<f64>(y32.data()[i]) == doctest::Approx(y64.data()[i]).epsilon(1e-4).scale(1));
        CHECK(convert<f64>(y16.data()[i]) == doctest::Approx(y64.data()[i]).epsilon(0.05).scale(1));
    }
    exact.backward(r);
    half.backward(r16);
    single.backward(r32);
    for (const auto& [name, where] : t_half) {
        double norm = 0, err16 = 0, err32 = 0;
        for (std::size_t j = 0; j < where.second; ++j) {
            const double want = exact.gradients()[t_exact.at(name).first + j];
            norm += want * want;
            err16 += std::pow(half.gradients()[where.first + j] - want, 2);
            err32 += std::pow(single.gradients()[t_single.at(name).first + j] - want, 2);
        }
        INFO(name << ": |g| = " << std::sqrt(norm) << ", bf16 error " << std::sqrt(err16) << ", f32 error " << std::sqrt(err32));
        CHECK(std::sqrt(err32) <= 1e-5 * std::sqrt(norm) + 1e-7);
        CHECK(std::sqrt(err16) <= 0.05 * std::sqrt(norm) + 1e-3);
    }
}

TEST_CASE("model::backward takes dy of any floating type, rounded once to the storage type")
{
    using net = nn::Sequential<nn::Linear<12, 16>, nn::ReLU, nn::Linear<16, 5>>;
    using In = Shape<8, 12>;
    using Out = Shape<8, 5>;
    nn::model<net, bf16_mixed, In, Host> by_f32(3), by_hand(3), by_expression(3);
    Tensor<bf16, In, Host> x;
    const auto x32 = random_tensor<f32, In>(4);
    x = x32;
    const auto dy = random_tensor<f32, Out>(5);  // f32 gradient for a bf16 model
    Tensor<bf16, Out, Host> dy16;
    for (std::size_t i = 0; i < Out::numel; ++i) dy16.data()[i] = convert<bf16>(dy.data()[i]);
    by_f32.forward(x);
    by_hand.forward(x);
    by_expression.forward(x);
    by_f32.backward(dy);
    by_hand.backward(dy16);
    by_expression.backward(dy * 2.0f - dy);  // an expression: evaluated once, rounded once
    constexpr std::size_t n = decltype(by_f32)::flat_numel;
    CHECK(std::memcmp(by_f32.gradients(), by_hand.gradients(), n * sizeof(f32)) == 0);
    CHECK(std::memcmp(by_expression.gradients(), by_hand.gradients(), n * sizeof(f32)) == 0);
    bool any_nonzero = false;
    for (std::size_t i = 0; i < n; ++i) any_nonzero |= by_f32.gradients()[i] != 0;
    CHECK(any_nonzero);
}

TEST_CASE("model: byte counts, flat buffers and parameter names")
{
    using mlp = nn::Sequential<nn::Linear<784, 256>, nn::ReLU, nn::Linear<256, 128>, nn::ReLU, nn::Linear<128, 10>>;
    using M = nn::model<mlp, bf16_mixed, Shape<256, 784>, Host>;
    constexpr std::size_t params = 784 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10;
    static_assert(M::parameter_count == params);
    static_assert(M::parameter_bytes == params * 2);
    static_assert(M::gradient_bytes == params * 4);
    using aux1 = linalg::aux_tensor_t<linalg::activation::relu, bf16, Shape<256, 256>, Host>;
    using aux2 = linalg::aux_tensor_t<linalg::activation::relu, bf16, Shape<256, 128>, Host>;
    constexpr std::size_t aux_bytes = aux1::numel * sizeof(typename aux1::element_type) + aux2::numel * sizeof(typename aux2::element_type);
    static_assert(M::activation_bytes == (256 * 256 + 256 * 128 + 256 * 10) * 2 + aux_bytes);
    static_assert(M::activation_gradient_bytes == (256 * 256 + 256 * 128) * 2);
    using inference = nn::model<mlp, inference_precision<bf16, f32, f32>, Shape<256, 784>, Host>;
    static_assert(inference::gradient_bytes == 0 && inference::activation_gradient_bytes == 0);

    M m(1);
    std::vector<std::string> names;
    m.for_each_parameter([&](const std::string& name, auto value, auto gradient) {
        names.push_back(name);
        CHECK(reinterpret_cast<std::uintptr_t>(value.data()) % 256 == 0);
        CHECK(reinterpret_cast<std::uintptr_t>(gradient.data()) % 256 == 0);
        CHECK(value.data() - m.parameters() == gradient.data() - m.gradients());
    });
    CHECK(names == std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias", "4.weight", "4.bias"});
    // the padding between parameters is zero, and every parameter was drawn
    const auto table = parameter_table(m);
    std::vector<bool> used(M::flat_numel, false);
    for (const auto& [name, where] : table)
        for (std::size_t j = 0; j < where.second; ++j) used[where.first + j] = true;
    std::size_t nonzero = 0;
    for (std::size_t i = 0; i < M::flat_numel; ++i) {
        if (!used[i]) REQUIRE(convert<f32>(m.parameters()[i]) == 0.0f);
        else nonzero += convert<f32>(m.parameters()[i]) != 0.0f;
    }
    CHECK(nonzero > params * 99 / 100);
    // the same seed draws the same model, another seed another
    M same(1), other(2);
    CHECK(std::memcmp(m.parameters(), same.parameters(), M::flat_numel * sizeof(bf16)) == 0);
    CHECK(std::memcmp(m.parameters(), other.parameters(), M::flat_numel * sizeof(bf16)) != 0);
}

TEST_CASE("at_batch shares the parameters; predict pads, runs in eval mode and restores the mode")
{
    using net = nn::Sequential<nn::BatchNorm2d<3>, nn::Flatten, nn::Linear<48, 16>, nn::ReLU, nn::Linear<16, 5>>;
    using In = Shape<8, 4, 4, 3>;
    using Row = Shape<1, 4, 4, 3>;
    using M = nn::model<net, fp32, In, Host>;
    M owner(31);
    owner.forward(random_tensor<f32, In>(32));  // training forwards: running statistics away from 0 and 1
    owner.forward(random_tensor<f32, In>(33));
    const auto x = random_tensor<f32, In>(34);
    const auto reference = [&] {  // the full batch's forward in evaluation mode
        owner.eval();
        Tensor<f32, Shape<8, 5>, Host> y;
        y = owner.forward(x);
        owner.train();
        return y;
    };
    auto want = reference();
    std::vector<f32> buffers_before(owner.buffers(), owner.buffers() + M::buffer_numel);

    auto one = nn::at_batch<1>(owner);
    static_assert(std::is_same_v<decltype(one)::input_shape, Row>);
    CHECK(one.shares_parameters());
    CHECK(!owner.shares_parameters());
    CHECK(one.parameters() == owner.parameters());
    CHECK(one.buffers() == owner.buffers());
    CHECK(!one.training());  // a training forward would move the shared running statistics
    const auto row_of = [&](std::size_t i) {
        Tensor<f32, Row, Host> r;
        std::memcpy(r.data(), x.data() + i * Row::numel, Row::numel * sizeof(f32));
        return r;
    };
    for (std::size_t i = 0; i < 8; ++i) {
        const auto& y = one.forward(row_of(i));
        INFO("row " << i);
        CHECK(std::memcmp(y.data(), want.data() + i * 5, 5 * sizeof(f32)) == 0);
    }

    // predict: 3 rows, the other 5 padding; y's rows past 3 are not written
    Tensor<f32, Shape<3, 4, 4, 3>, Host> three;
    std::memcpy(three.data(), x.data(), three.numel * sizeof(f32));
    Tensor<f32, Shape<6, 5>, Host> y;
    assign(y.view(), std::numeric_limits<f32>::quiet_NaN());
    REQUIRE(owner.training());
    owner.predict(three, y, 3);
    CHECK(owner.training());  // the mode it found
    CHECK(std::memcmp(y.data(), want.data(), 3 * 5 * sizeof(f32)) == 0);
    for (std::size_t i = 15; i < y.numel; ++i) CHECK(std::isnan(y.data()[i]));
    CHECK(std::memcmp(buffers_before.data(), owner.buffers(), M::buffer_numel * sizeof(f32)) == 0);
    // the same through the batch-1 model, row by row
    Tensor<f32, Shape<1, 5>, Host> single;
    one.train();
    one.predict(row_of(2), single, 1);
    CHECK(one.training());
    CHECK(std::memcmp(single.data(), want.data() + 2 * 5, 5 * sizeof(f32)) == 0);
    one.eval();

    // shared, not copied: an update of the owner's parameters is seen at once
    for (std::size_t i = 0; i < M::flat_numel; ++i) owner.parameters()[i] *= 1.5f;
    want = reference();
    CHECK(std::memcmp(one.forward(row_of(5)).data(), want.data() + 5 * 5, 5 * sizeof(f32)) == 0);

    // refused: more rows than the batch (or than x holds), and a backward without gradients
    CHECK_THROWS_AS(owner.predict(x, y, 9), tenet::error);
    CHECK_THROWS_AS(owner.predict(three, y, 4), tenet::error);
    CHECK(owner.training());
    CHECK_THROWS_AS(one.backward(Tensor<f32, Shape<1, 5>, Host>{}), tenet::error);
    // a shared model outliving its owner is refused, not a read of freed memory
    std::optional<nn::model<net, fp32, Row, Host>> orphan;
    {
        M short_lived(35);
        orphan.emplace(nn::share_parameters, short_lived);
        CHECK_NOTHROW(orphan->forward(row_of(0)));
    }
    CHECK_THROWS_AS(orphan->forward(row_of(0)), tenet::error);

    // a forward that throws inside predict (a token past the vocabulary) leaves the mode as it found it
    nn::model<nn::Sequential<nn::Embedding<10, 4>>, fp32, Shape<4, 3>, Host> embed(36);
    Tensor<i32, Shape<2, 3>, Host> tokens;
    Tensor<f32, Shape<2, 3, 4>, Host> vectors;
    assign(tokens.view(), 2);
    embed.predict(tokens, vectors, 2);
    CHECK(vectors(1, 2, 3) == embed.parameters()[2 * 4 + 3]);
    tokens(1, 1) = 10;
    CHECK_THROWS_AS(embed.predict(tokens, vectors, 2), tenet::index_error);
    CHECK(embed.training());
    embed.eval();
    CHECK_THROWS_AS(embed.predict(tokens, vectors, 2), tenet::index_error);
    CHECK(!embed.training());
}

// (a named namespace: nvcc warns of members of an unnamed one that only the concepts name)
namespace user_layers {

// A user's layer on nn::parameterised_layer: y = x * scale + shift, saying
// only its parameters, shapes, forward and backward.
template <std::size_t N>
struct scale_shift {
    using scale = nn::parameter<"scale", Shape<N>, nn::init_ones>;
    using shift = nn::parameter<"shift", Shape<N>>;  // zeros
    template <class S>
    using output_shape = S;
    template <precision_policy P, class S, class Place>
    struct layer : nn::parameterised_layer<P, Place, scale, shift> {
        using layer::parameterised_layer::parameterised_layer;
        using matrix = nn::matrix_shape_t<S>;
        template <class X, class Y>
        void forward(const X& x, const Y& y, const nn::step_info&)
        {
            input_ = nn::contiguous_as<matrix>(x).data();
            assign(nn::contiguous_as<matrix>(y), nn::contiguous_as<matrix>(x) * this->value(scale{}) + this->value(shift{}));
        }
        template <class DY, class DX, class Prev>
        void backward(const DY& dy, const DX& dx, const nn::step_info&, Prev&)
        {
            const auto g = nn::contiguous_as<matrix>(dy);
            assign(this->gradient(scale{}), sum<0>(g * make_view<matrix, Place>(input_)));
            assign(this->gradient(shift{}), sum<0>(g));
            if constexpr (!nn::is_no_input_gradient<DX>) assign(nn::contiguous_as<matrix>(dx), g * this->value(scale{}));
        }
        const typename P::storage* input_ = nullptr;
    };
};

}  // namespace user_layers

using user_layers::scale_shift;

TEST_CASE("parameterised_layer supplies counts, binding, initialisers and names for a user's layer")
{
    static_assert(nn::layer_spec<scale_shift<8>, fp32, Shape<4, 8>, Host> &&
                  nn::layer_spec<scale_shift<8>, bf16_mixed, Shape<4, 8>, Host> &&
                  nn::layer_spec<scale_shift<8>, fp16_mixed, Shape<2, 3, 8>, Host>);
    using L = scale_shift<8>::layer<bf16_mixed, Shape<4, 8>, Host>;
    static_assert(L::parameter_count == 16 && L::parameter_numel == 2 * nn::padded_numel<bf16>(8));
    static_assert(L::activation_bytes == 0 && !L::wants_preactivation_gradient);

    using net = nn::Sequential<nn::Linear<6, 8>, scale_shift<8>>;
    nn::model<net, fp32, Shape<4, 6>, Host> m(9);
    const auto table = parameter_table(m);
    REQUIRE(table.size() == 4);
    // in the order listed, each on its own 256-byte boundary after the Linear's
    CHECK(table.at("1.scale").first == table.at("0.bias").first + nn::padded_numel<f32>(8));
    CHECK(table.at("1.shift").first == table.at("1.scale").first + nn::padded_numel<f32>(8));
    for (std::size_t j = 0; j < 8; ++j) {
        CHECK(m.parameters()[table.at("1.scale").first + j] == 1.0f);
        CHECK(m.parameters()[table.at("1.shift").first + j] == 0.0f);
    }
    // drawn again: ones and zeros again, over whatever was there
    for (std::size_t i = 0; i < decltype(m)::flat_numel; ++i) m.parameters()[i] = 5.0f;
    m.initialize(9);
    CHECK(m.parameters()[table.at("1.scale").first + 3] == 1.0f);
    CHECK(m.parameters()[table.at("1.shift").first + 3] == 0.0f);
    check_gradients_f64<nn::model<net, f64_policy, Shape<4, 6>, Host>>(10);
}
