// A model on the device against the same model on the host: Philox draws
// the same parameters from the same seed on both, so forward outputs and
// parameter gradients must agree (within the accumulation-order and
// tensor-core rounding differences of the two backends).
#pragma once

#include "device_testing.hpp"
#include "relative_error.hpp"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace testing {

template <class T, class S>
tenet::Tensor<T, S, tenet::Host> random_host(std::uint64_t seed)
{
    tenet::Tensor<T, S, tenet::Host> t;
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> normal(0.0, 1.0);
    for (std::size_t i = 0; i < S::numel; ++i) t.data()[i] = tenet::convert<T>(normal(rng));
    return t;
}

template <class Net, class P, class In, class Out>
void check_device_matches_host(double tolerance)
{
    using namespace tenet;
    namespace nn = tenet::nn;
    using T = typename P::storage;
    using G = nn::gradient_t<P>;
    nn::model<Net, P, In, Host> host(11);
    nn::model<Net, P, In, Device> device(11);
    using HM = decltype(host);
    std::vector<T> device_parameters(HM::flat_numel);
    TENET_CUDA_CHECK(cudaMemcpy(device_parameters.data(), device.parameters(), HM::flat_numel * sizeof(T), cudaMemcpyDeviceToHost));
    CHECK_BITWISE_EQUAL("parameters drawn from the same seed", device_parameters.data(), host.parameters(), HM::flat_numel);

    const auto x = random_host<T, In>(12);
    const auto dy = random_host<T, Out>(13);
    const auto xd = testing::to_device(x);
    const auto dyd = testing::to_device(dy);

    const auto& yh = host.forward(x);
    const auto& yd = device.forward(xd);
    Tensor<T, Out, Host> y_back;
    copy(y_back, yd);
    current_stream().synchronize();
    CHECK_RELATIVE_ERROR("model forward output", y_back.data(), yh.data(), Out::numel, tolerance);

    host.backward(dy);
    device.backward(dyd);
    std::vector<G> device_gradients(HM::flat_numel);
    TENET_CUDA_CHECK(cudaMemcpy(device_gradients.data(), device.gradients(), HM::flat_numel * sizeof(G), cudaMemcpyDeviceToHost));
    host.for_each_parameter([&](const std::string& name, auto value, auto gradient) {
        const std::size_t at = static_cast<std::size_t>(gradient.data() - host.gradients());
        CHECK_RELATIVE_ERROR(("gradient of " + name).c_str(), device_gradients.data() + at, gradient.data(),
                             decltype(value)::shape::numel, tolerance);
    });
}

}  // namespace testing
