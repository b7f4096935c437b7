// Checking CUDA runtime calls: every call's status is checked and a failure
// becomes a tenet::cuda_error naming the call, the file, the line and CUDA's
// own description.
#pragma once

#include "error.hpp"

#include <cuda_runtime_api.h>

#include <string>

namespace tenet::detail::memory {

inline void check_cuda(cudaError_t status, const char* call, const char* file, int line)
{
    if (status == cudaSuccess) return;
    throw cuda_error(static_cast<int>(status), call, file, line,
                     std::string(cudaGetErrorString(status)) + " (" + cudaGetErrorName(status) + ")");
}

}  // namespace tenet::detail::memory

// TENET_CUDA_CHECK(cudaMemcpyAsync(...)): throws tenet::cuda_error on failure.
#define TENET_CUDA_CHECK(call) ::tenet::detail::memory::check_cuda((call), #call, __FILE__, __LINE__)
