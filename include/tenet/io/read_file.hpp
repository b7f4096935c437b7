// Reading a whole file into memory, its size checked against what the
// caller's format can need before anything is allocated: a header cannot make
// a reader allocate (or read) more than that bound.
#pragma once

#include "../memory/error.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <vector>

namespace tenet::io {

// The size of an open file; io_error when it cannot be known.
inline std::uint64_t file_size(int fd, const std::string& path)
{
    struct stat info {};
    if (::fstat(fd, &info) != 0) throw io_error(path, std::string("cannot read: ") + std::strerror(errno));
    if (!S_ISREG(info.st_mode))
        throw io_error(path, std::string("cannot read: not a regular file (") +
                                 (S_ISDIR(info.st_mode)   ? "a directory"
                                  : S_ISFIFO(info.st_mode) ? "a FIFO"
                                  : S_ISCHR(info.st_mode)  ? "a character device"
                                  : S_ISBLK(info.st_mode)  ? "a block device"
                                  : S_ISSOCK(info.st_mode) ? "a socket"
                                                           : "not a plain file") +
                                 ")");
    return static_cast<std::uint64_t>(info.st_size);
}

// A regular file opened for reading, closed when it goes; io_error at once
// for anything else. Every reader opens through here. The open is
// non-blocking: a FIFO would otherwise wait for a writer forever (and a
// device could too); after fstat says the file is regular, the flag is
// cleared (it means nothing for regular files).
struct readable_file {
    int fd;
    explicit readable_file(const std::string& path)
        : fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY))
    {
        if (fd < 0) throw io_error(path, std::string("cannot open: ") + std::strerror(errno));
        try {
            (void)file_size(fd, path);
        } catch (...) {
            ::close(fd);
            throw;
        }
        const int flags = ::fcntl(fd, F_GETFL);
        if (flags == -1 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) == -1) {
            const int e = errno;
            ::close(fd);
            throw io_error(path, std::string("cannot open: ") + std::strerror(e));
        }
    }
    readable_file(const readable_file&) = delete;
    readable_file& operator=(const readable_file&) = delete;
    ~readable_file() { ::close(fd); }
};

// The file's bytes; format_error (before reading) when it holds more than
// max_bytes, which `what` names ("a checkpoint of this model").
inline std::vector<std::byte> read_file(const std::string& path, std::uint64_t max_bytes, const std::string& what)
{
    const readable_file file(path);
    const int fd = file.fd;
    const std::uint64_t size = file_size(fd, path);
    if (size > max_bytes)
        throw format_error(path, "the file has " + std::to_string(size) + " bytes, more than the " +
                                     std::to_string(max_bytes) + " that " + what + " can hold");
    std::vector<std::byte> bytes;
    try {
        bytes.resize(static_cast<std::size_t>(size) + 1);  // one more: a file that grew is noticed
    } catch (const std::bad_alloc&) {
        throw io_error(path, "cannot read: no memory for its " + std::to_string(size) + " bytes");
    }
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t got = ::read(fd, bytes.data() + done, bytes.size() - done);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) throw io_error(path, std::string("cannot read: ") + std::strerror(errno));
        if (got == 0) break;
        done += static_cast<std::size_t>(got);
    }
    if (done != size) throw io_error(path, "cannot read: it changed size while being read");
    bytes.pop_back();
    return bytes;
}

}  // namespace tenet::io
