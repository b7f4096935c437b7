// Reading IDX files (the MNIST container format), gzip-compressed or raw:
// zlib's gzread passes uncompressed files through unchanged.
//
// Layout: two zero bytes, a type code, the rank, one big-endian u32 extent per
// dimension, then the elements row-major. Only unsigned bytes (type 0x08)
// are supported: multi-byte elements are big-endian, and no dataset tenet
// reads uses them. Every departure from the header's promise -- a short or
// long payload, absurd extents, corrupt compression -- is a format_error
// naming the file, what was expected and what was found. A header's claim
// is checked against the file's size before allocating (uncompressed), or
// the payload is allocated only as it arrives (gzip).
#pragma once

#include "../io/byte_reader.hpp"
#include "../io/read_file.hpp"
#include "../memory/error.hpp"

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <vector>

namespace tenet::data {

struct idx_array {
    std::uint8_t type_code = 0;
    std::vector<std::size_t> dims;
    std::vector<std::uint8_t> bytes;  // the payload, row-major
};

inline constexpr std::uint8_t idx_u8 = 0x08;
inline constexpr std::size_t idx_max_rank = 4;
inline constexpr std::size_t idx_max_bytes = std::size_t{1} << 30;

namespace detail {

struct gz_closer {
    void operator()(gzFile_s* f) const noexcept { gzclose(f); }
};
using gz_file = std::unique_ptr<gzFile_s, gz_closer>;

inline std::string hex_byte(unsigned value)
{
    const char* digits = "0123456789ABCDEF";
    return std::string("0x") + digits[(value >> 4) & 15] + digits[value & 15];
}

// Reads up to `count` bytes; returns how many arrived before the end of the
// data. A decompression error (corrupt or cut-off gzip stream) throws.
inline std::size_t read_some(gzFile file, void* to, std::size_t count, const std::string& path)
{
    auto* out = static_cast<unsigned char*>(to);
    std::size_t done = 0;
    while (done < count) {
        const std::size_t piece = std::min<std::size_t>(count - done, std::size_t{1} << 28);  // gzread takes an int
        const int got = gzread(file, out + done, static_cast<unsigned>(piece));
        int code = Z_OK;
        const char* message = gzerror(file, &code);
        if (code == Z_ERRNO) throw io_error(path, std::string("cannot read: ") + std::strerror(errno));
        if (got < 0 || (code != Z_OK && code != Z_STREAM_END))
            throw format_error(path, std::string("corrupt or truncated gzip data: ") + message);
        if (got == 0) break;
        done += static_cast<std::size_t>(got);
    }
    return done;
}

inline std::size_t read_to_end(gzFile file, const std::string& path)
{
    unsigned char sink[4096];
    std::size_t total = 0;
    while (const std::size_t got = read_some(file, sink, sizeof sink, path)) total += got;
    return total;
}

inline std::string dims_text(const std::vector<std::size_t>& dims)
{
    std::string text = "[";
    for (std::size_t d = 0; d != dims.size(); ++d) text += (d ? ", " : "") + std::to_string(dims[d]);
    return text + "]";
}

// An uncompressed file must hold what its dimensions claim: checked against
// its size before anything is allocated.
inline void check_raw_size(const std::string& path, std::uint64_t size, std::size_t header, std::size_t total,
                           const std::vector<std::size_t>& dims)
{
    if (size < header + std::uint64_t{total})
        throw format_error(path, "truncated: dimensions " + dims_text(dims) + " need " + std::to_string(total) +
                                     " bytes of data, found " + std::to_string(size - header) +
                                     " (the file's size, checked before allocating)");
}

// Reads up to total bytes into out, growing it only as data arrives (a
// header's claim alone allocates at most one chunk); returns the count read.
inline std::size_t read_payload(gzFile file, std::vector<std::uint8_t>& out, std::size_t total, const std::string& path)
{
    constexpr std::size_t chunk = std::size_t{1} << 20;
    try {
        while (out.size() < total) {
            const std::size_t have = out.size();
            const std::size_t want = std::min(total - have, std::max(chunk, have));
            out.resize(have + want);
            const std::size_t got = read_some(file, out.data() + have, want, path);
            out.resize(have + got);
            if (got < want) break;
        }
    } catch (const std::bad_alloc&) {
        throw io_error(path, "cannot read: no memory for its " + std::to_string(total) + " bytes of data");
    }
    return out.size();
}

}  // namespace detail

inline idx_array read_idx(const std::string& path)
{
    // Opened as every reader opens (a FIFO or device is refused at once);
    // zlib reads a duplicate of the descriptor and closes it.
    const io::readable_file raw(path);
    const std::uint64_t size = io::file_size(raw.fd, path);
    const int fd = ::dup(raw.fd);
    if (fd < 0) throw io_error(path, std::string("cannot open: ") + std::strerror(errno));
    detail::gz_file file(gzdopen(fd, "rb"));
    if (!file) {
        ::close(fd);
        throw io_error(path, "cannot open: out of memory");
    }
    gzbuffer(file.get(), 1 << 17);

    unsigned char head[4];
    const std::size_t got = detail::read_some(file.get(), head, 4, path);
    if (got < 4) throw format_error(path, "truncated: " + std::to_string(got) + " of 4 header bytes");
    if (head[0] != 0 || head[1] != 0)
        throw format_error(path, "bad magic: expected 0x00 0x00, found " + detail::hex_byte(head[0]) + " " +
                                     detail::hex_byte(head[1]) + " (not an IDX file)");
    idx_array result;
    result.type_code = head[2];
    if (result.type_code != idx_u8)
        throw format_error(path, "unsupported element type " + detail::hex_byte(head[2]) + " (expected " +
                                     detail::hex_byte(idx_u8) + ", unsigned byte)");
    const std::size_t rank = head[3];
    if (rank == 0 || rank > idx_max_rank)
        throw format_error(path,
                           "rank " + std::to_string(rank) + " (expected 1 to " + std::to_string(idx_max_rank) + ")");

    std::byte extents[4 * idx_max_rank];
    const std::size_t extent_bytes = detail::read_some(file.get(), extents, 4 * rank, path);
    if (extent_bytes < 4 * rank)
        throw format_error(path, "truncated: " + std::to_string(extent_bytes) + " of " + std::to_string(4 * rank) +
                                     " bytes of dimensions");
    io::byte_reader header(path, std::span<const std::byte>(extents, 4 * rank));
    std::size_t total = 1;
    for (std::size_t d = 0; d != rank; ++d) {
        result.dims.push_back(header.take_big_endian<std::uint32_t>());
        if (result.dims.back() == 0) throw format_error(path, "dimension " + std::to_string(d) + " is 0");
        // each extent is below 2^32 and total stays at most 2^30: no overflow
        total *= result.dims.back();
        if (total > idx_max_bytes)
            throw format_error(path, "dimensions " + detail::dims_text(result.dims) + " exceed the limit of " +
                                         std::to_string(idx_max_bytes) + " bytes");
    }
    if (gzdirect(file.get())) detail::check_raw_size(path, size, 4 + 4 * rank, total, result.dims);

    const std::size_t payload = detail::read_payload(file.get(), result.bytes, total, path);
    if (payload < total)
        throw format_error(path, "truncated: dimensions " + detail::dims_text(result.dims) + " need " +
                                     std::to_string(total) + " bytes of data, found " + std::to_string(payload));
    if (const std::size_t extra = detail::read_to_end(file.get(), path))
        throw format_error(path, std::to_string(extra) + " trailing bytes after the " + std::to_string(total) +
                                     " bytes that dimensions " + detail::dims_text(result.dims) + " need");
    return result;
}

// Images: dims must be [N, rows, cols].
inline idx_array read_idx_images(const std::string& path, std::size_t rows, std::size_t cols)
{
    idx_array images = read_idx(path);
    if (images.dims.size() != 3 || images.dims[1] != rows || images.dims[2] != cols)
        throw format_error(path, "expected images of dimensions [N, " + std::to_string(rows) + ", " +
                                     std::to_string(cols) + "], found " + detail::dims_text(images.dims));
    return images;
}

// Labels: dims must be [N], every label below `classes`.
inline idx_array read_idx_labels(const std::string& path, std::size_t classes)
{
    idx_array labels = read_idx(path);
    if (labels.dims.size() != 1)
        throw format_error(path, "expected labels of dimensions [N], found " + detail::dims_text(labels.dims));
    for (std::size_t i = 0; i != labels.bytes.size(); ++i)
        if (labels.bytes[i] >= classes)
            throw format_error(path, "label " + std::to_string(i) + " is " + std::to_string(labels.bytes[i]) +
                                         " (expected below " + std::to_string(classes) + ")");
    return labels;
}

}  // namespace tenet::data
