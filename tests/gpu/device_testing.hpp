// Moving test data between host and device tensors, and poisoning device
// outputs, for the GPU tests.
#pragma once

#include "bitwise_equal.hpp"
#include "tensor_testing.hpp"

namespace testing {

template <class T, class S>
tenet::Tensor<T, S, tenet::Host> to_host(const tenet::Tensor<T, S, tenet::Device>& d)
{
    tenet::Tensor<T, S, tenet::Host> h;
    tenet::copy(h, d);
    tenet::current_stream().synchronize();
    return h;
}

template <class T, class S>
tenet::Tensor<T, S, tenet::Device> to_device(const tenet::Tensor<T, S, tenet::Host>& h)
{
    tenet::Tensor<T, S, tenet::Device> d;
    tenet::copy(d, h);
    return d;
}

template <class T, class S>
void poison(tenet::Tensor<T, S, tenet::Device>& d)
{
    TENET_CUDA_CHECK(cudaMemsetAsync(d.data(), 0xA5, sizeof(T) * S::numel, tenet::current_stream().get()));
}

}  // namespace testing
