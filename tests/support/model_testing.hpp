// Helpers for layer and model tests: normal random inputs, a model's
// parameters by name, and every parameter gradient of a model checked
// against central finite differences.
#pragma once

#include "tensor_testing.hpp"

#include <algorithm>
#include <cmath>
#include <map>
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

// L = sum(r * model(x)); its gradient by backward(r) vs central differences.
template <class Model, class X, class R>
void check_parameter_gradients(Model& m, const X& x, const R& r, double tolerance)
{
    using tenet::convert, tenet::f64;
    using S = typename Model::output_shape;
    auto loss = [&] {
        const auto& y = m.forward(x);
        double l = 0;
        for (std::size_t i = 0; i < S::numel; ++i) l += convert<f64>(r.data()[i]) * convert<f64>(y.data()[i]);
        return l;
    };
    m.forward(x);
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

// The same for a float64 model on random inputs (training mode).
template <class Model>
void check_gradients_f64(std::uint64_t seed)
{
    Model m(seed);
    const auto x = random_tensor<tenet::f64, typename Model::input_shape>(seed + 1);
    const auto r = random_tensor<tenet::f64, typename Model::output_shape>(seed + 2);
    check_parameter_gradients(m, x, r, 1e-6);
}

}  // namespace testing
