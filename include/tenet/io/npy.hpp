// NumPy .npy files: read_npy gives a file's dtype, shape and bytes, load_npy
// its elements as a tenet element type, save_npy writes the bytes numpy.save
// writes for the same array.
//
// Layout (NumPy's format versions 1.0, 2.0 and 3.0):
//   "\x93NUMPY", major, minor           8 bytes
//   header length                       u16 (1.0) or u32 (2.0, 3.0), little-endian
//   header: a Python dict literal       {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
//     padded with spaces and '\n' so that the data starts at a multiple of 64
//   the elements, C order               exactly count * itemsize bytes
// Read: little-endian, C-ordered arrays of the dtypes in detail::npy_types;
// anything else is a format_error, before anything is returned.
#pragma once

#include "../memory/error.hpp"
#include "../numeric/convert.hpp"
#include "../numeric/traits.hpp"
#include "atomic_file.hpp"
#include "byte_reader.hpp"
#include "read_file.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

namespace tenet::io {

// A file's array as stored: dtype is NumPy's descr ("<f4"; one-byte types
// spelled "|i1", "|u1", "|b1"), data the elements' little-endian bytes in C order.
struct npy_array {
    std::string dtype;
    std::vector<std::size_t> shape;
    std::vector<std::byte> data;
};

// A file's array with its elements converted to T (load_npy).
template <class T>
struct npy_data {
    std::vector<std::size_t> shape;
    std::vector<T> values;
};

namespace detail {

static_assert(std::endian::native == std::endian::little && sizeof(bool) == 1,
              "tenet: io/npy.hpp copies elements as they are in memory: "
              "it needs a little-endian host with 1-byte bool");

// NumPy's descr of each type a file's elements can be read as; empty for others.
template <class S> inline constexpr std::string_view npy_descr{};
template <> inline constexpr std::string_view npy_descr<f16> = "<f2";
template <> inline constexpr std::string_view npy_descr<f32> = "<f4";
template <> inline constexpr std::string_view npy_descr<f64> = "<f8";
template <> inline constexpr std::string_view npy_descr<i8> = "|i1";
template <> inline constexpr std::string_view npy_descr<std::int16_t> = "<i2";
template <> inline constexpr std::string_view npy_descr<i32> = "<i4";
template <> inline constexpr std::string_view npy_descr<std::int64_t> = "<i8";
template <> inline constexpr std::string_view npy_descr<std::uint8_t> = "|u1";
template <> inline constexpr std::string_view npy_descr<std::uint16_t> = "<u2";
template <> inline constexpr std::string_view npy_descr<std::uint32_t> = "<u4";
template <> inline constexpr std::string_view npy_descr<std::uint64_t> = "<u8";
template <> inline constexpr std::string_view npy_descr<bool> = "|b1";

template <class... S>
struct npy_type_list {
    template <class F>
    static void each(F&& f)
    {
        (f(std::type_identity<S>{}), ...);
    }
};
// The dtypes read_npy accepts, as the C++ types their elements are read as.
using npy_types = npy_type_list<f16, f32, f64, i8, std::int16_t, i32, std::int64_t, std::uint8_t, std::uint16_t,
                                std::uint32_t, std::uint64_t, bool>;

// Python's repr of a shape tuple: (), (5,), (2, 3).
inline std::string npy_shape_text(std::span<const std::size_t> shape)
{
    std::string text = "(";
    for (std::size_t i = 0; i < shape.size(); ++i) text += (i == 0 ? "" : ", ") + std::to_string(shape[i]);
    return text + (shape.size() == 1 ? ",)" : ")");
}

// The array's size in bytes; nothing when the nonzero extents overflow it
// (NumPy refuses those shapes even when another extent is 0).
inline std::optional<std::size_t> npy_bytes(std::span<const std::size_t> shape, std::size_t itemsize)
{
    std::size_t bytes = itemsize;
    bool empty = false;
    for (const std::size_t extent : shape) {
        if (extent == 0) empty = true;
        else if (bytes > std::numeric_limits<std::size_t>::max() / extent) return std::nullopt;
        else bytes *= extent;
    }
    return empty ? 0 : bytes;
}

struct npy_type {
    std::string_view descr;
    std::size_t itemsize;
};

// The supported dtype a descr names, in NumPy's spelling ("<i1" and ">i1"
// are "|i1"); format_error for any other.
inline npy_type find_npy_type(const std::string& path, std::string_view descr)
{
    npy_type found{};
    bool big_endian = false;
    std::string supported;
    npy_types::each([&]<class S>(std::type_identity<S>) {
        const std::string_view known = npy_descr<S>;
        const bool same_kind = descr.size() == known.size() && descr.substr(1) == known.substr(1);
        if (descr == known || (same_kind && sizeof(S) == 1 && (descr[0] == '<' || descr[0] == '>')))
            found = {known, sizeof(S)};
        big_endian = big_endian || (same_kind && descr[0] == '>');
        supported += (supported.empty() ? "" : ", ") + std::string(known);
    });
    if (!found.descr.empty()) return found;
    if (big_endian)
        throw format_error(path, "npy header: big-endian data ('" + std::string(descr) +
                                     "') is not supported: save little-endian arrays (a.astype('<" +
                                     std::string(descr.substr(1)) + "'))");
    throw format_error(path, "npy header: dtype '" + std::string(descr) + "' is not supported (tenet reads " +
                                 supported + ")");
}

// What a header says, before its dtype and shape are checked.
struct npy_header {
    std::string descr;
    bool fortran_order = false;
    std::vector<std::size_t> shape;
};

// A strict parser for the one dict literal NumPy writes, with the freedom
// Python's literal_eval (NumPy's reader) gives it -- keys in any order,
// whitespace before, inside and after, ' or " quotes, trailing commas in the
// dict and the shape tuple -- and nothing NumPy refuses: exactly the keys
// 'descr' (a string), 'fortran_order' (True or False) and 'shape' (a tuple
// of non-negative decimal integers, no leading zeros: Python refuses 01).
// Python spellings NumPy never writes (escapes, signs, underscores, hex,
// concatenated strings, a key twice) are refused too.
class npy_header_parser {
public:
    npy_header_parser(const std::string& path, std::string_view text) : path_(path), text_(text) {}

    npy_header parse()
    {
        expect('{');
        npy_header out;
        std::unordered_set<std::string> keys;
        while (!accept('}')) {
            const std::string key = quoted();
            if (!keys.insert(key).second) fail("key '" + key + "' appears twice");
            expect(':');
            if (key == "descr") out.descr = descr();
            else if (key == "fortran_order") out.fortran_order = boolean();
            else if (key == "shape") out.shape = shape();
            else fail("unexpected key '" + key + "' (a header has 'descr', 'fortran_order' and 'shape')");
            if (!accept(',')) {
                expect('}');
                break;
            }
        }
        skip_space();
        if (at_ != text_.size()) fail("unexpected text after the dict");
        for (const char* key : {"descr", "fortran_order", "shape"})
            if (!keys.contains(key)) fail("missing key '" + std::string(key) + "'");
        return out;
    }

private:
    [[noreturn]] void fail(const std::string& what) const
    {
        throw format_error(path_, "npy header: " + what + " at character " + std::to_string(at_));
    }

    char peek() const { return at_ < text_.size() ? text_[at_] : '\0'; }

    void skip_space()
    {
        while (at_ < text_.size() && std::string_view(" \t\n\r").find(text_[at_]) != std::string_view::npos) ++at_;
    }

    bool accept(char c)
    {
        skip_space();
        if (peek() != c) return false;
        ++at_;
        return true;
    }

    void expect(char c)
    {
        if (!accept(c)) fail(std::string("expected '") + c + "'");
    }

    std::string quoted()
    {
        skip_space();
        const char quote = peek();
        if (quote != '\'' && quote != '"') fail("expected a quoted string");
        const std::size_t end = text_.find(quote, at_ + 1);
        if (end == std::string_view::npos) fail("unterminated string");
        const std::string_view body = text_.substr(at_ + 1, end - at_ - 1);
        if (body.find('\\') != std::string_view::npos) fail("escapes in strings are not supported");
        at_ = end + 1;
        return std::string(body);
    }

    std::string descr()
    {
        skip_space();
        if (peek() == '[') fail("structured dtypes (a list of fields) are not supported");
        return quoted();
    }

    bool boolean()
    {
        skip_space();
        for (const bool value : {false, true}) {
            const std::string_view word = value ? "True" : "False";
            if (text_.substr(at_).starts_with(word)) {
                at_ += word.size();
                return value;
            }
        }
        fail("expected True or False");
    }

    std::size_t extent()
    {
        skip_space();
        const std::size_t from = at_;
        std::size_t value = 0;
        for (; at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9'; ++at_) {
            const auto digit = static_cast<std::size_t>(text_[at_] - '0');
            if (value > (std::numeric_limits<std::size_t>::max() - digit) / 10) fail("an extent too large");
            value = value * 10 + digit;
        }
        if (at_ == from) fail("expected an extent (a non-negative integer)");
        if (text_[from] == '0' && value != 0) fail("an extent with a leading zero (not a Python integer)");
        return value;
    }

    // (), (n,), (n, m) or (n, m,): a tuple of extents.
    std::vector<std::size_t> shape()
    {
        expect('(');
        std::vector<std::size_t> extents;
        while (!accept(')')) {
            extents.push_back(extent());
            if (accept(',')) continue;
            expect(')');
            if (extents.size() == 1) fail("the shape (n) is not a tuple: one extent is written (n,)");
            break;
        }
        return extents;
    }

    const std::string& path_;
    std::string_view text_;
    std::size_t at_ = 0;
};

// The header numpy.save writes (numpy/lib/format.py): the keys sorted, room
// for the first extent to grow to 21 digits in place, then spaces and '\n'
// to a multiple of 64 bytes -- 64 more when it is one already, as NumPy pads.
// Version 1.0 unless its 16-bit length cannot hold that.
inline std::vector<std::byte> npy_header_bytes(std::string_view descr, std::span<const std::size_t> shape)
{
    std::string dict = "{'descr': '" + std::string(descr) + "', 'fortran_order': False, 'shape': " +
                       npy_shape_text(shape) + ", }";
    if (!shape.empty()) dict.append(21 - std::to_string(shape[0]).size(), ' ');
    const auto padded = [&](std::size_t length_bytes) {  // the header's length, '\n' included
        return dict.size() + 1 + 64 - (8 + length_bytes + dict.size() + 1) % 64;
    };
    const bool version1 = padded(2) <= 0xFFFF;
    const std::size_t length_bytes = version1 ? 2 : 4, length = padded(length_bytes);
    dict.append(length - 1 - dict.size(), ' ');
    dict += '\n';
    std::string prefix = "\x93NUMPY";
    prefix += static_cast<char>(version1 ? 1 : 2);
    prefix += '\0';
    for (std::size_t i = 0; i < length_bytes; ++i) prefix += static_cast<char>((length >> (8 * i)) & 0xFF);
    const std::string all = prefix + dict;
    std::vector<std::byte> out(all.size());
    std::memcpy(out.data(), all.data(), all.size());
    return out;
}

// An integer as floating T, rounded once: to T's significand width here
// (nearest, ties to even), which leaves an f64 that holds it exactly, so
// convert<T> applies only T's range (overflow: infinity; fp8 saturates).
template <class T, class S>
T integer_to_floating(S x)
{
    const bool negative = std::cmp_less(x, 0);
    std::uint64_t magnitude = negative ? 0 - static_cast<std::uint64_t>(x) : static_cast<std::uint64_t>(x);
    const int drop = static_cast<int>(std::bit_width(magnitude)) - numeric_traits<T>::digits;
    if (drop > 0) {
        const std::uint64_t rest = magnitude & ((std::uint64_t{1} << drop) - 1), half = std::uint64_t{1} << (drop - 1);
        magnitude >>= drop;
        if (rest > half || (rest == half && (magnitude & 1) != 0)) ++magnitude;
    }
    const f64 value = std::ldexp(static_cast<f64>(magnitude), std::max(drop, 0));  // exact: magnitude <= 2^53
    return tenet::convert<T>(negative ? -value : value);
}

// Element `index`, stored as S at `at`, as T. Floats: convert<T>. Integers:
// exact into an integer T (format_error when out of its range), rounded once
// into a floating T. Bools: 0 or 1 (any other byte is a format_error).
template <class T, class S>
T npy_element(const std::string& path, std::size_t index, const std::byte* at)
{
    if constexpr (std::is_same_v<S, bool>) {
        const auto stored = std::to_integer<unsigned>(*at);
        if (stored > 1)
            throw format_error(path, "npy data: bool element " + std::to_string(index) + " is " +
                                         std::to_string(stored) + ", not 0 or 1");
        return tenet::convert<T>(stored == 1);
    } else {
        S x;
        std::memcpy(&x, at, sizeof x);
        if constexpr (is_floating_v<S>) {
            return tenet::convert<T>(x);
        } else if constexpr (is_floating_v<T>) {
            return integer_to_floating<T>(x);
        } else {
            constexpr auto lowest = static_cast<std::int64_t>(numeric_traits<T>::lowest());
            constexpr auto max = static_cast<std::int64_t>(numeric_traits<T>::max());
            if (std::cmp_less(x, lowest) || std::cmp_greater(x, max))
                throw format_error(path, "npy data: element " + std::to_string(index) + " is " + std::to_string(x) +
                                             ", outside " + element_name<T> + "'s range [" + std::to_string(lowest) +
                                             ", " + std::to_string(max) + "]");
            return static_cast<T>(x);  // in range: exact
        }
    }
}

template <class T, class S>
std::vector<T> npy_convert(const std::string& path, const npy_array& array)
{
    if constexpr (is_floating_v<S> && !is_floating_v<T>) {
        throw format_error(path, "npy: '" + array.dtype + "' data cannot be loaded as " + element_name<T> +
                                     " (floats are not rounded to integers here): load it as a floating type");
    } else {
        std::vector<T> out(array.data.size() / sizeof(S));
        for (std::size_t i = 0; i < out.size(); ++i) out[i] = npy_element<T, S>(path, i, &array.data[i * sizeof(S)]);
        return out;
    }
}

// Every element of a read_npy array as T.
template <class T>
std::vector<T> npy_values(const std::string& path, const npy_array& array)
{
    std::vector<T> out;
    npy_types::each([&]<class S>(std::type_identity<S>) {
        if (array.dtype == npy_descr<S>) out = npy_convert<T, S>(path, array);
    });
    return out;
}

}  // namespace detail

// Reads a .npy file (format 1.0, 2.0 or 3.0) whole; the allocation is the
// file's size, never what its header claims. Throws format_error for a bad
// magic or version, a header that is malformed, lacks a key or runs past the
// file, Fortran order, a dtype other than <f2 <f4 <f8 |i1 <i2 <i4 <i8 |u1 <u2
// <u4 <u8 |b1 (big-endian, object and structured ones included), a shape
// whose size overflows, or data not exactly count * itemsize bytes; io_error
// when the file cannot be read.
inline npy_array read_npy(const std::string& path)
{
    std::vector<std::byte> file = read_file(path, std::numeric_limits<std::uint64_t>::max(), "an npy file");
    constexpr std::string_view magic = "\x93NUMPY";
    for (std::size_t i = 0; i < std::min(file.size(), magic.size()); ++i)
        if (file[i] != static_cast<std::byte>(magic[i]))
            throw format_error(path, "not an npy file (it does not start with \"\\x93NUMPY\")");
    byte_reader in(path, file, "npy header: ");
    in.take_bytes(magic.size());
    const unsigned major = in.take<std::uint8_t>(), minor = in.take<std::uint8_t>();
    if (major < 1 || major > 3 || minor != 0)
        throw format_error(path, "npy header: unsupported format version " + std::to_string(major) + "." +
                                     std::to_string(minor) + " (tenet reads 1.0, 2.0 and 3.0)");
    const std::uint32_t length = major == 1 ? in.take<std::uint16_t>() : in.take<std::uint32_t>();
    // 3.0 differs from 2.0 only in allowing UTF-8, which no supported header holds.
    const std::string text = in.take_text(length);
    detail::npy_header header = detail::npy_header_parser(path, text).parse();
    if (header.fortran_order)
        throw format_error(path, "npy header: Fortran order is not supported: "
                                 "save C-ordered arrays (np.ascontiguousarray)");
    const detail::npy_type type = detail::find_npy_type(path, header.descr);
    const std::string what = "shape " + detail::npy_shape_text(header.shape) + " of '" + std::string(type.descr) + "'";
    const std::optional<std::size_t> bytes = detail::npy_bytes(header.shape, type.itemsize);
    if (!bytes) throw format_error(path, "npy header: " + what + " holds more than 2^64 bytes");
    if (in.remaining() < *bytes)
        throw format_error(path, "npy data: truncated: " + what + " needs " + std::to_string(*bytes) +
                                     " bytes, the file has " + std::to_string(in.remaining()) + " after the header");
    if (in.remaining() > *bytes)
        throw format_error(path, "npy data: " + std::to_string(in.remaining() - *bytes) + " trailing bytes after the " +
                                     std::to_string(*bytes) + " that " + what + " needs");
    file.erase(file.begin(), file.begin() + static_cast<std::ptrdiff_t>(in.offset()));  // in place: no second copy
    return {std::string(type.descr), std::move(header.shape), std::move(file)};
}

// A .npy file's elements as T, any tenet element type: floats (<f2 <f4 <f8)
// by convert<T> (rounded to nearest even when T is narrower), integers
// exactly into an integer T or bool (format_error when one is out of its
// range: nothing wraps or saturates) and rounded once into a floating T,
// bools as 0 and 1. A float file for an integer or bool T is a format_error.
template <class T>
npy_data<T> load_npy(const std::string& path)
{
    static_assert(element<T>, "tenet: load_npy<T>: T must be a tenet element type (f32, f64, f16, bf16, f8e4m3, "
                              "f8e5m2, i8, i32, bool)");
    npy_array array = read_npy(path);
    std::vector<T> values = detail::npy_values<T>(path, array);
    return {std::move(array.shape), std::move(values)};
}

// As above, into out, when the file's shape is expected_shape (format_error
// naming both otherwise). out is written only after every check and
// conversion succeeded: on any error it is unchanged.
template <class T>
void load_npy(const std::string& path, T* out, std::span<const std::size_t> expected_shape)
{
    static_assert(element<T>, "tenet: load_npy<T>: T must be a tenet element type (f32, f64, f16, bf16, f8e4m3, "
                              "f8e5m2, i8, i32, bool)");
    const npy_array array = read_npy(path);
    if (!std::ranges::equal(array.shape, expected_shape))
        throw format_error(path, "npy: the file holds shape " + detail::npy_shape_text(array.shape) + ", expected " +
                                     detail::npy_shape_text(expected_shape));
    const std::vector<T> values = detail::npy_values<T>(path, array);
    std::copy(values.begin(), values.end(), out);
}

// Writes count(shape) elements from data as a .npy file, atomically
// (io::atomic_file), byte for byte what numpy.save writes for the same
// little-endian, C-ordered array: format 1.0 (2.0 for a header over 64 KiB),
// data at a multiple of 64 bytes. T: f16, f32, f64, i8, i32 or bool. A shape
// whose size overflows is a tenet::error before anything is written; io_error
// when the file cannot be written (an existing file is then untouched).
template <class T>
void save_npy(const std::string& path, const T* data, std::span<const std::size_t> shape)
{
    static_assert(!std::is_same_v<T, bf16>,
                  "tenet: save_npy: bf16 has no NumPy dtype: convert to f32 first (convert<f32>)");
    static_assert(std::is_same_v<T, bf16> || (element<T> && !detail::npy_descr<T>.empty()),
                  "tenet: save_npy<T>: T must be f16, f32, f64, i8, i32 or bool (fp8 has no NumPy dtype: convert to "
                  "f32 first)");
    const std::optional<std::size_t> bytes = detail::npy_bytes(shape, sizeof(T));
    if (!bytes)
        throw error("tenet: " + path + ": save_npy: shape " + detail::npy_shape_text(shape) +
                    " holds more than 2^64 bytes");
    const std::vector<std::byte> header = detail::npy_header_bytes(detail::npy_descr<T>, shape);
    atomic_file file(path);
    file.write(header.data(), header.size());
    file.write(reinterpret_cast<const std::byte*>(data), *bytes);
    file.commit();
}

}  // namespace tenet::io
