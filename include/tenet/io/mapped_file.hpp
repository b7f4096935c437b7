// A whole file mapped read-only into memory: readers of large files
// (safetensors) look at the bytes where they lie instead of copying them.
// The mapping is private to this process and lives as long as the object.
#pragma once

#include "read_file.hpp"

#include <sys/mman.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <span>
#include <string>
#include <utility>

namespace tenet::io {

class mapped_file {
public:
    explicit mapped_file(const std::string& path) : path_(path)
    {
        const readable_file file(path);
        size_ = static_cast<std::size_t>(file_size(file.fd, path));
        if (size_ == 0) return;  // (mmap refuses a length of 0)
        void* at = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, file.fd, 0);
        if (at == MAP_FAILED) throw io_error(path, std::string("cannot map: ") + std::strerror(errno));
        data_ = static_cast<const std::byte*>(at);
    }

    mapped_file(mapped_file&& other) noexcept
        : path_(std::move(other.path_)), data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0))
    {
    }
    mapped_file& operator=(mapped_file&&) = delete;
    mapped_file(const mapped_file&) = delete;
    mapped_file& operator=(const mapped_file&) = delete;

    ~mapped_file()
    {
        if (data_) ::munmap(const_cast<std::byte*>(data_), size_);
    }

    std::span<const std::byte> bytes() const noexcept { return {data_, size_}; }
    const std::string& path() const noexcept { return path_; }

private:
    std::string path_;
    const std::byte* data_ = nullptr;
    std::size_t size_ = 0;
};

}  // namespace tenet::io
