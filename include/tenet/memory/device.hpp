// Is there a CUDA device? Asking never throws; requiring one throws a clear
// tenet::no_device_error when there is none.
#pragma once

#include "cuda_check.hpp"
#include "error.hpp"

#include <cuda_runtime_api.h>

#include <string>

namespace tenet {

// The number of CUDA devices this process can use; 0 when there are none or
// the driver cannot be reached.
inline int device_count() noexcept
{
    int count = 0;
    return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

inline bool has_device() noexcept { return device_count() > 0; }

inline void require_device()
{
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status == cudaSuccess && count > 0) return;
    const std::string reason =
        status == cudaSuccess ? std::string("the driver reports 0 devices") : detail::memory::describe_cuda_status(status);
    throw no_device_error("tenet: no CUDA device: device work needs a GPU, and " + reason +
                          "; use Host tensors to run on the CPU");
}

}  // namespace tenet
