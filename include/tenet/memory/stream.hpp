// CUDA streams: stream (owning, RAII) and stream_ref (a handle). Device work
// is ordered on the thread's current stream, which is the per-thread default
// stream unless a stream_scope says otherwise. Nothing in tenet synchronises
// the device behind your back: call synchronize() when the host needs results.
#pragma once

#include "cuda_check.hpp"

#include <cuda_runtime_api.h>

#include <utility>

namespace tenet {

class stream_ref {
public:
    constexpr stream_ref() = default;
    constexpr stream_ref(cudaStream_t handle) : handle_(handle) {}  // NOLINT: a handle converts implicitly

    constexpr cudaStream_t get() const noexcept { return handle_; }

    // Waits for the stream's device work. Without a usable device there can
    // be none, so code written for both places may call it unconditionally.
    void synchronize() const
    {
        const cudaError_t status = cudaStreamSynchronize(handle_);
        if (status == cudaErrorNoDevice || status == cudaErrorInsufficientDriver) return;
        TENET_CUDA_CHECK(status);
    }

private:
    // Per-thread default stream: ordered, but never implicitly synchronising
    // with other streams (unlike the legacy stream 0).
    cudaStream_t handle_ = cudaStreamPerThread;
};

class stream {
public:
    stream() { TENET_CUDA_CHECK(cudaStreamCreateWithFlags(&handle_, cudaStreamNonBlocking)); }
    stream(stream&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
    stream& operator=(stream&& other) noexcept
    {
        std::swap(handle_, other.handle_);
        return *this;
    }
    stream(const stream&) = delete;
    stream& operator=(const stream&) = delete;
    ~stream()
    {
        if (handle_) cudaStreamDestroy(handle_);  // outstanding work still completes
    }

    cudaStream_t get() const noexcept { return handle_; }
    operator stream_ref() const noexcept { return handle_; }  // NOLINT
    void synchronize() const { stream_ref(handle_).synchronize(); }

private:
    cudaStream_t handle_ = nullptr;
};

namespace detail::memory {
inline stream_ref& current_stream_slot()
{
    thread_local stream_ref current;
    return current;
}
}  // namespace detail::memory

inline stream_ref current_stream() { return detail::memory::current_stream_slot(); }

// Makes s the current stream of this thread until the scope ends.
class stream_scope {
public:
    explicit stream_scope(stream_ref s) : previous_(std::exchange(detail::memory::current_stream_slot(), s)) {}
    stream_scope(const stream_scope&) = delete;
    stream_scope& operator=(const stream_scope&) = delete;
    ~stream_scope() { detail::memory::current_stream_slot() = previous_; }

private:
    stream_ref previous_;
};

}  // namespace tenet
