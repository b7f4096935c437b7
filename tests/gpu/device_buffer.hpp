// A minimal device array for the GPU tests: allocate, poison, copy in, copy out.
#pragma once

#include <tenet/memory/cuda_check.hpp>

#include <cuda_runtime.h>

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
        TENET_CUDA_CHECK(cudaMemcpy(data_, host.data(), n_ * sizeof(T), cudaMemcpyHostToDevice));
    }
    device_buffer(const device_buffer&) = delete;
    device_buffer& operator=(const device_buffer&) = delete;
    ~device_buffer() { cudaFree(data_); }

    T* data() const { return data_; }
    std::size_t size() const { return n_; }
    std::vector<T> to_host() const
    {
        std::vector<T> host(n_);
        TENET_CUDA_CHECK(cudaMemcpy(host.data(), data_, n_ * sizeof(T), cudaMemcpyDeviceToHost));
        return host;
    }

private:
    T* data_ = nullptr;
    std::size_t n_;
};
