// buffer<T, Place>: an owning, movable array of T in one place, allocated and
// freed on one stream.
#pragma once

#include "allocate.hpp"

#include <cstddef>
#include <utility>

namespace tenet {

template <class T, memory_place P>
class buffer {
public:
    buffer(std::size_t count, stream_ref s)
        : data_(static_cast<T*>(detail::memory::allocate<P>(count * sizeof(T), s))), count_(count), stream_(s)
    {
    }
    buffer(buffer&& other) noexcept
        : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)), stream_(other.stream_)
    {
    }
    buffer& operator=(buffer&& other) noexcept
    {
        std::swap(data_, other.data_);
        std::swap(count_, other.count_);
        std::swap(stream_, other.stream_);
        return *this;
    }
    buffer(const buffer&) = delete;
    buffer& operator=(const buffer&) = delete;
    ~buffer() { detail::memory::deallocate<P>(data_, stream_); }

    T* data() const noexcept { return data_; }
    std::size_t size() const noexcept { return count_; }
    stream_ref stream() const noexcept { return stream_; }

private:
    T* data_;
    std::size_t count_;
    stream_ref stream_;
};

}  // namespace tenet
