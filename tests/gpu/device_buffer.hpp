// A minimal device array for the GPU conversion tests: allocate, poison,
// copy in, copy out. (Arrays, not std::vector, so that bool works.)
#pragma once

#include <tenet/memory/cuda_check.hpp>

#include <cuda_runtime.h>

#include <algorithm>
#include <memory>
#include <vector>

template <class T>
class device_buffer {
public:
    explicit device_buffer(std::size_t n) : n_(n)
    {
        TENET_CUDA_CHECK(cudaMalloc(&data_, n * sizeof(T) + 1));
        TENET_CUDA_CHECK(cudaMemset(data_, 0xA5, n * sizeof(T)));  // poison: unwritten elements show
    }
    explicit device_buffer(const std::vector<T>& host) : device_buffer(host.size())
    {
        const auto staged = std::make_unique<T[]>(n_);
        std::copy(host.begin(), host.end(), staged.get());
        TENET_CUDA_CHECK(cudaMemcpy(data_, staged.get(), n_ * sizeof(T), cudaMemcpyHostToDevice));
    }
    device_buffer(const device_buffer&) = delete;
    device_buffer& operator=(const device_buffer&) = delete;
    ~device_buffer() { cudaFree(data_); }

    T* data() const { return data_; }
    std::size_t size() const { return n_; }
    std::unique_ptr<T[]> to_host() const
    {
        auto host = std::make_unique<T[]>(n_);
        TENET_CUDA_CHECK(cudaMemcpy(host.get(), data_, n_ * sizeof(T), cudaMemcpyDeviceToHost));
        return host;
    }

private:
    T* data_ = nullptr;
    std::size_t n_;
};
