// Raw allocation per place. Device memory comes from the device's
// stream-ordered pool (cudaMallocAsync), kept by the pool when freed so that
// steady-state training allocates nothing; host memory is 256-byte aligned (as
// cudaMalloc's is: offsets that are aligned in a device buffer are aligned in a host
// one); pinned memory is page-locked. Failure throws out_of_memory_error and
// allocates nothing.
#pragma once

#include "device.hpp"
#include "error.hpp"
#include "place.hpp"
#include "stream.hpp"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <new>

namespace tenet::detail::memory {

inline constexpr std::size_t host_alignment = 256;

// Lets the pool of the current device keep freed memory instead of returning
// it to the driver at every synchronisation (done once per device).
inline void retain_pool_memory()
{
    int device = 0;
    TENET_CUDA_CHECK(cudaGetDevice(&device));
    thread_local int configured = -1;
    if (configured == device) return;
    cudaMemPool_t pool;
    TENET_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
    std::uint64_t keep_all = UINT64_MAX;
    TENET_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all));
    configured = device;
}

inline void* allocate_device(std::size_t bytes, stream_ref s)
{
    void* p = nullptr;
    const cudaError_t status = cudaMallocAsync(&p, bytes, s.get());
    if (status == cudaErrorMemoryAllocation) {
        cudaGetLastError();  // not sticky: clear it so later calls do not report it
        throw out_of_memory_error("Device", bytes);
    }
    if (status == cudaErrorNoDevice || status == cudaErrorInsufficientDriver) require_device();
    TENET_CUDA_CHECK(status);
    retain_pool_memory();
    return p;
}

template <class P>
void* allocate(std::size_t bytes, stream_ref s)
{
    if (bytes == 0) return nullptr;
    if constexpr (std::is_same_v<P, Device>) {
        return allocate_device(bytes, s);
    } else if constexpr (std::is_same_v<P, HostPinned>) {
        void* p = nullptr;
        const cudaError_t status = cudaMallocHost(&p, bytes);
        if (status == cudaErrorMemoryAllocation) {
            cudaGetLastError();
            throw out_of_memory_error("HostPinned", bytes);
        }
        TENET_CUDA_CHECK(status);
        return p;
    } else {
        void* p = ::operator new(bytes, std::align_val_t{host_alignment}, std::nothrow);
        if (!p) throw out_of_memory_error("Host", bytes);
        return p;
    }
}

// Device memory is freed in stream order: work queued on s before the free
// still sees it.
template <class P>
void deallocate(void* p, stream_ref s) noexcept
{
    if (!p) return;
    if constexpr (std::is_same_v<P, Device>) cudaFreeAsync(p, s.get());
    else if constexpr (std::is_same_v<P, HostPinned>) cudaFreeHost(p);
    else ::operator delete(p, std::align_val_t{host_alignment});
}

}  // namespace tenet::detail::memory
