// Helpers for layer and model tests: normal random inputs, a float64 direct
// convolution and its products, a model's parameters by name, and every
// parameter gradient of a model checked against central finite differences.
#pragma once

#include "tensor_testing.hpp"

#include <tenet/nn/nn.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace testing {

using f64_policy = tenet::training_precision<tenet::f64, tenet::f64, tenet::f64, tenet::f64>;

template <class T, class S>
tenet::Tensor<T, S, tenet::Host> random_tensor(std::uint64_t seed, double scale = 1.0)
{
    tenet::Tensor<T, S, tenet::Host> t;
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> normal(0.0, scale);
    for (std::size_t i = 0; i < S::numel; ++i) t.data()[i] = tenet::convert<T>(normal(rng));
    return t;
}

template <class S, class T>
std::vector<double> as_doubles(const T* p)
{
    std::vector<double> v(S::numel);
    for (std::size_t i = 0; i < S::numel; ++i) v[i] = tenet::convert<tenet::f64>(p[i]);
    return v;
}

// f(y index, x index, w index) for every product a convolution sums, from
// the definition (NHWC x, weights [Co, K, K, Ci/G], taps on padding skipped):
// y[i] += x[j] w[k] is the forward, dx[j] += dy[i] w[k] and dw[k] += dy[i]
// x[j] its adjoints.
template <class In, std::size_t Co, std::size_t K, std::size_t S, std::size_t P, std::size_t D, std::size_t G, class F>
void for_each_conv_product(F&& f)
{
    constexpr std::size_t N = In::extents[0], H = In::extents[1], W = In::extents[2], Ci = In::extents[3];
    constexpr std::size_t Ho = (H + 2 * P - D * (K - 1) - 1) / S + 1, Wo = (W + 2 * P - D * (K - 1) - 1) / S + 1;
    constexpr std::size_t cg = Ci / G, og = Co / G;
    for (std::size_t n = 0; n < N; ++n)
        for (std::size_t oh = 0; oh < Ho; ++oh)
            for (std::size_t ow = 0; ow < Wo; ++ow)
                for (std::size_t co = 0; co < Co; ++co)
                    for (std::size_t kh = 0; kh < K; ++kh)
                        for (std::size_t kw = 0; kw < K; ++kw) {
                            const long ih = static_cast<long>(oh * S + kh * D) - static_cast<long>(P);
                            const long iw = static_cast<long>(ow * S + kw * D) - static_cast<long>(P);
                            if (ih < 0 || ih >= static_cast<long>(H) || iw < 0 || iw >= static_cast<long>(W)) continue;
                            for (std::size_t c = 0; c < cg; ++c)
                                f(((n * Ho + oh) * Wo + ow) * Co + co,
                                  ((n * H + static_cast<std::size_t>(ih)) * W + static_cast<std::size_t>(iw)) * Ci + co / og * cg + c,
                                  ((co * K + kh) * K + kw) * cg + c);
                        }
}

// Direct convolution in float64, from the definition (b may be null).
template <class In, std::size_t Co, std::size_t K, std::size_t S, std::size_t P, std::size_t D, std::size_t G>
std::vector<double> direct_conv(const double* x, const double* w, const double* b, bool relu)
{
    constexpr std::size_t Ho = (In::extents[1] + 2 * P - D * (K - 1) - 1) / S + 1,
                          Wo = (In::extents[2] + 2 * P - D * (K - 1) - 1) / S + 1;
    std::vector<double> y(In::extents[0] * Ho * Wo * Co);
    for (std::size_t i = 0; i < y.size(); ++i) y[i] = b != nullptr ? b[i % Co] : 0.0;
    for_each_conv_product<In, Co, K, S, P, D, G>([&](std::size_t yi, std::size_t xi, std::size_t wi) { y[yi] += x[xi] * w[wi]; });
    if (relu)
        for (double& v : y) v = std::max(v, 0.0);
    return y;
}

// One layer of a spec instantiated by hand (its own parameter, gradient and
// buffer storage), so that its input gradient can be checked too.
template <class Spec, class In, class P = f64_policy>
struct driven {
    using storage = typename P::storage;
    using gradient = nn::gradient_t<P>;
    using layer_type = typename Spec::template layer<P, In, Host>;
    using out = typename Spec::template output_shape<In>;

    std::vector<storage> values = std::vector<storage>(layer_type::parameter_numel + 1);
    std::vector<gradient> gradients = std::vector<gradient>(layer_type::parameter_numel + 1);
    std::vector<f32> buffers = std::vector<f32>(nn::buffer_numel_v<layer_type> + 1);
    std::optional<layer_type> layer;

    explicit driven(std::uint64_t seed)
    {
        nn::parameter_slice<storage, gradient> slice(values.data(), gradients.data(), 0, nullptr, buffers.data());
        layer.emplace(slice);
        layer->initialize(seed);
    }

    void forward(const Tensor<storage, In, Host>& x, Tensor<storage, out, Host>& y, bool training = true)
    {
        nn::step_info step;
        step.training = training;
        layer->forward(x.view(), y.view(), step);
    }

    void backward(const Tensor<storage, out, Host>& dy, Tensor<storage, In, Host>& dx)
    {
        nn::no_previous_layer none;
        layer->backward(dy.view(), dx.view(), nn::step_info{}, none);
    }

    // name -> (offset in values, numel)
    std::map<std::string, std::pair<std::size_t, std::size_t>> parameters()
    {
        std::map<std::string, std::pair<std::size_t, std::size_t>> table;
        layer->for_each_parameter(
            [&](const std::string& name, auto value, auto) {
                table[name] = {static_cast<std::size_t>(value.data() - values.data()), decltype(value)::shape::numel};
            },
            "");
        return table;
    }
};

// Every parameter as (name -> flat offset, numel), from for_each_parameter.
template <class M>
std::map<std::string, std::pair<std::size_t, std::size_t>> parameter_table(M& m)
{
    std::map<std::string, std::pair<std::size_t, std::size_t>> table;
    m.for_each_parameter([&](const std::string& name, auto value, auto) {
        table[name] = {static_cast<std::size_t>(value.data() - m.parameters()), decltype(value)::shape::numel};
    });
    return table;
}

// L = sum(r * forward()); its gradient by backward(r) vs central
// differences. forward runs the model (m.forward(x), or with more inputs).
template <class Model, class Forward, class R>
void check_parameter_gradients_of(Model& m, Forward&& forward, const R& r, double tolerance)
{
    using tenet::convert, tenet::f64;
    using S = typename Model::output_shape;
    auto loss = [&] {
        const auto& y = forward();
        double l = 0;
        for (std::size_t i = 0; i < S::numel; ++i) l += convert<f64>(r.data()[i]) * convert<f64>(y.data()[i]);
        return l;
    };
    forward();
    m.backward(r);
    const std::vector<double> analytic = as_doubles<tenet::Shape<Model::flat_numel>>(m.gradients());
    std::size_t checked = 0;
    for (const auto& [name, where] : parameter_table(m)) {
        for (std::size_t j = 0; j < where.second; ++j) {
            double& p = m.parameters()[where.first + j];
            const double saved = p, h = 1e-6 * std::max(1.0, std::fabs(saved));
            p = saved + h;
            const double up = loss();
            p = saved - h;
            const double down = loss();
            p = saved;
            const double numeric = (up - down) / (2 * h);
            const double got = analytic[where.first + j];
            INFO(name << "[" << j << "]: backward " << got << " vs finite difference " << numeric);
            CHECK(std::fabs(got - numeric) <= tolerance * (1 + std::fabs(numeric)));
            ++checked;
        }
    }
    CHECK(checked == Model::parameter_count);
}

template <class Model, class X, class R>
void check_parameter_gradients(Model& m, const X& x, const R& r, double tolerance)
{
    check_parameter_gradients_of(m, [&]() -> const auto& { return m.forward(x); }, r, tolerance);
}

// The same for a float64 model on random inputs (training mode).
template <class Model>
void check_gradients_f64(std::uint64_t seed)
{
    Model m(seed);
    const auto x = random_tensor<tenet::f64, typename Model::input_shape>(seed + 1);
    const auto r = random_tensor<tenet::f64, typename Model::output_shape>(seed + 2);
    check_parameter_gradients(m, x, r, 1e-6);
}

// |a - b| <= tolerance (1 + |b|) everywhere (summation orders differ); a
// failure names `what` and the worst element.
inline void check_close(const std::vector<float>& a, const std::vector<float>& b, double tolerance, const std::string& what)
{
    REQUIRE(a.size() == b.size());
    double worst = 0;
    std::size_t at = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const double e = std::fabs(double(a[i]) - b[i]) / (1 + std::fabs(double(b[i])));
        if (!(e <= worst)) worst = e, at = i;
    }
    INFO(what << ": worst relative difference " << worst << " at " << at << " (" << a[at] << " vs " << b[at] << ")");
    CHECK(worst <= tolerance);
}

}  // namespace testing
