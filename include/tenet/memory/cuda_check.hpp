// Checking CUDA runtime calls: every call's status is checked and a failure
// becomes a tenet::cuda_error naming the call, the file, the line and CUDA's
// own description (or, where no NVIDIA driver is installed, saying so).
#pragma once

#include "error.hpp"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <string>

namespace tenet::detail::memory {

// Whether an NVIDIA driver is installed: its library, libcuda.so.1, loads
// (the CUDA runtime loads it the same way).
inline bool nvidia_driver_installed() noexcept
{
    void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (driver) dlclose(driver);
    return driver != nullptr;
}

// CUDA's description of a failed status, "<text> (<name>)". The runtime
// reports a missing driver as cudaErrorInsufficientDriver, "CUDA driver
// version is insufficient for CUDA runtime version", which suggests an update
// would help: with no driver installed at all, the description says that.
inline std::string describe_cuda_status(cudaError_t status, bool driver_installed)
{
    if (status == cudaErrorInsufficientDriver && !driver_installed)
        return std::string("no NVIDIA driver was found (libcuda.so.1 cannot be loaded; ") + cudaGetErrorName(status) +
               ")";
    return std::string(cudaGetErrorString(status)) + " (" + cudaGetErrorName(status) + ")";
}

inline std::string describe_cuda_status(cudaError_t status)
{
    return describe_cuda_status(status, status != cudaErrorInsufficientDriver || nvidia_driver_installed());
}

inline void check_cuda(cudaError_t status, const char* call, const char* file, int line)
{
    if (status == cudaSuccess) return;
    throw cuda_error(static_cast<int>(status), call, file, line, describe_cuda_status(status));
}

}  // namespace tenet::detail::memory

// TENET_CUDA_CHECK(cudaMemcpyAsync(...)): throws tenet::cuda_error on failure.
#define TENET_CUDA_CHECK(call) ::tenet::detail::memory::check_cuda((call), #call, __FILE__, __LINE__)
