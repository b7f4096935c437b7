// Timing device work in tenet's GPU benchmarks: CUDA events on tenet's
// current stream; three calls first (plans, workspaces, allocations,
// clocks), then the median over 20 timed batches of `calls` calls each (a
// batch of many calls when one is small, so launch overhead counts as in a
// real program). And the line that names the device.
#pragma once

#include <tenet/memory/cuda_check.hpp>
#include <tenet/memory/stream.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

namespace bench {

class cuda_event {
public:
    cuda_event() { TENET_CUDA_CHECK(cudaEventCreate(&handle_)); }
    cuda_event(const cuda_event&) = delete;
    cuda_event& operator=(const cuda_event&) = delete;
    ~cuda_event() { cudaEventDestroy(handle_); }
    cudaEvent_t get() const { return handle_; }

private:
    cudaEvent_t handle_ = nullptr;
};

inline constexpr int timed_batches = 20;

// Median seconds per call of call().
template <class F>
double median_seconds(F&& call, std::size_t calls)
{
    const cudaStream_t stream = tenet::current_stream().get();
    for (int i = 0; i < 3; ++i) call();
    cuda_event start, stop;
    std::vector<double> seconds;
    for (int r = 0; r < timed_batches; ++r) {
        TENET_CUDA_CHECK(cudaEventRecord(start.get(), stream));
        for (std::size_t i = 0; i < calls; ++i) call();
        TENET_CUDA_CHECK(cudaEventRecord(stop.get(), stream));
        TENET_CUDA_CHECK(cudaEventSynchronize(stop.get()));
        float ms = 0;
        TENET_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
        seconds.push_back(ms / 1e3 / static_cast<double>(calls));
    }
    std::nth_element(seconds.begin(), seconds.begin() + timed_batches / 2, seconds.end());
    return seconds[timed_batches / 2];
}

// "NVIDIA H100 80GB HBM3, CUDA runtime 13.0": the current device and runtime.
inline std::string device_description()
{
    int device = 0, runtime = 0;
    cudaDeviceProp properties{};
    TENET_CUDA_CHECK(cudaGetDevice(&device));
    TENET_CUDA_CHECK(cudaGetDeviceProperties(&properties, device));
    TENET_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
    return std::string(properties.name) + ", CUDA runtime " + std::to_string(runtime / 1000) + "." +
           std::to_string(runtime % 1000 / 10);
}

}  // namespace bench
