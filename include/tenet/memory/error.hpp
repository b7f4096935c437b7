// The exceptions tenet throws. Every run-time failure is a tenet::error, so
// one catch clause covers the library; the subclasses carry the context.
#pragma once

#include "../config.hpp"

#include <cstddef>
#include <stdexcept>
#include <string>

namespace tenet {

class error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A CUDA runtime call returned an error.
class cuda_error : public error {
public:
    cuda_error(int code, std::string call, std::string file, int line, const std::string& cuda_message)
        : error("tenet: CUDA call " + call + " failed at " + file + ":" + std::to_string(line) + ": " + cuda_message),
          code_(code), call_(std::move(call)), file_(std::move(file)), line_(line)
    {
    }

    int code() const noexcept { return code_; }
    const std::string& call() const noexcept { return call_; }
    const std::string& file() const noexcept { return file_; }
    int line() const noexcept { return line_; }

private:
    int code_;
    std::string call_;
    std::string file_;
    int line_;
};

// Device work was asked for and this process sees no usable CUDA device.
class no_device_error : public error {
public:
    using error::error;
};

// An allocation failed. Nothing was allocated and nothing else changed:
// tensors that existed before are intact.
class out_of_memory_error : public error {
public:
    out_of_memory_error(const std::string& place, std::size_t bytes)
        : error("tenet: out of memory: could not allocate " + std::to_string(bytes) + " bytes of " + place + " memory"),
          bytes_(bytes)
    {
    }
    std::size_t bytes() const noexcept { return bytes_; }

private:
    std::size_t bytes_;
};

// An assignment would read its destination through a different layout
// (x = transpose(x)): elements would be overwritten before they are read.
class aliasing_error : public error {
public:
    using error::error;
};

// An element index outside a tensor's shape.
class index_error : public error {
public:
    using error::error;
};

// A file could not be opened, read or written.
class io_error : public error {
public:
    io_error(const std::string& path, const std::string& what) : error("tenet: " + path + ": " + what), path_(path) {}
    const std::string& path() const noexcept { return path_; }

private:
    std::string path_;
};

// A file was read but its contents are not what its format requires.
class format_error : public io_error {
public:
    using io_error::io_error;
};

}  // namespace tenet
