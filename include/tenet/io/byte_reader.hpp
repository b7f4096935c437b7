// A bounds-checked cursor over a file's bytes, used by every reader: each
// length is compared with what remains before anything is taken (never an
// `end - at` that could wrap), and a shortfall is a format_error saying where.
#pragma once

#include "../memory/error.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <utility>

namespace tenet::io {

class byte_reader {
public:
    // context starts every shortfall's message ("the section table: ").
    byte_reader(std::string path, std::span<const std::byte> bytes, std::string context = "")
        : path_(std::move(path)), context_(std::move(context)), bytes_(bytes)
    {
    }

    std::size_t offset() const noexcept { return at_; }
    std::size_t remaining() const noexcept { return bytes_.size() - at_; }
    const std::string& path() const noexcept { return path_; }

    // Throws unless n more bytes are there (n may be any claimed length).
    void need(std::uint64_t n) const
    {
        if (n > remaining())
            throw format_error(path_, context_ + "offset " + std::to_string(at_) + ": needs " + std::to_string(n) + " bytes, " +
                                          std::to_string(remaining()) + " remain");
    }

    std::span<const std::byte> take_bytes(std::uint64_t n)
    {
        need(n);
        const std::span<const std::byte> out = bytes_.subspan(at_, static_cast<std::size_t>(n));
        at_ += out.size();
        return out;
    }

    std::string take_text(std::uint64_t n)
    {
        const std::span<const std::byte> b = take_bytes(n);
        return std::string(reinterpret_cast<const char*>(b.data()), b.size());
    }

    // An unsigned integer stored little-endian (take<T>) or big-endian.
    template <class T>
    T take() { return take_ordered<T>(false); }
    template <class T>
    T take_big_endian() { return take_ordered<T>(true); }

private:
    template <class T>
    T take_ordered(bool big_endian)
    {
        static_assert(std::is_unsigned_v<T>, "tenet: byte_reader reads unsigned integers only");
        const std::span<const std::byte> b = take_bytes(sizeof(T));
        T value = 0;
        for (std::size_t i = 0; i < sizeof(T); ++i) {
            const std::size_t k = big_endian ? i : sizeof(T) - 1 - i;
            value = static_cast<T>(std::uint64_t{value} << 8 | std::to_integer<std::uint64_t>(b[k]));
        }
        return value;
    }

    std::string path_;
    std::string context_;
    std::span<const std::byte> bytes_;
    std::size_t at_ = 0;
};

}  // namespace tenet::io
