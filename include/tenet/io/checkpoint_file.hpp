// A checkpoint file: named byte sections behind a signature and a step
// count, written atomically and checked completely before anything is
// returned: its size against a bound before reading, its checksum before
// parsing, every length against what remains before it is used. The
// container is generic; the trainer decides the sections.
//
// Layout, version 1 (integers little-endian whatever the machine):
//   "TENETCKP"                          8 bytes
//   u32 format version                  1
//   u64 header length                   bytes from the start to the first payload byte
//   u32 n, n bytes                      signature
//   u64 step
//   u32 section count
//   per section: u32 n, n bytes name, u64 byte length
//   the sections' bytes, in table order
//   u32 CRC-32 (zlib's) of every byte before it
#pragma once

#include "../memory/error.hpp"
#include "atomic_file.hpp"
#include "byte_reader.hpp"
#include "read_file.hpp"

#include <zlib.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

namespace tenet::io {

struct checkpoint_section {
    std::string name;
    std::vector<std::byte> bytes;
};

struct checkpoint_contents {
    std::string signature;  // what the file was written for (model, precision, shapes)
    std::uint64_t step = 0;
    std::vector<checkpoint_section> sections;
};

namespace detail {

inline constexpr std::string_view checkpoint_magic = "TENETCKP";
inline constexpr std::uint32_t checkpoint_version = 1;
inline constexpr std::size_t checkpoint_prefix_bytes = 20;  // magic, version, header length
inline constexpr std::size_t checkpoint_crc_bytes = 4;
// Prefix, empty signature, step, section count, CRC: the smallest valid file.
inline constexpr std::size_t checkpoint_min_bytes = checkpoint_prefix_bytes + 4 + 8 + 4 + checkpoint_crc_bytes;
// A reader given no bound rejects larger files before reading them.
inline constexpr std::uint64_t checkpoint_default_max_bytes = std::uint64_t{1} << 36;
// What checkpoint_size_bound allows each section name (tenet's are short).
inline constexpr std::size_t checkpoint_max_name_bytes = 256;

inline void put_le(std::vector<std::byte>& out, std::uint64_t value, int bytes)
{
    for (int i = 0; i < bytes; ++i) out.push_back(static_cast<std::byte>(value >> (8 * i)));
}

inline std::uint64_t get_le(const std::byte* in, int bytes)
{
    std::uint64_t value = 0;
    for (int i = 0; i < bytes; ++i) value |= std::to_integer<std::uint64_t>(in[i]) << (8 * i);
    return value;
}

inline void put_text(std::vector<std::byte>& out, std::string_view text)
{
    if (text.size() > std::numeric_limits<std::uint32_t>::max())
        throw error("tenet: checkpoint signature or section name longer than 4 GiB");
    put_le(out, text.size(), 4);
    for (char c : text) out.push_back(static_cast<std::byte>(c));
}

// zlib's crc32 returns its initial value for a null buffer, whatever crc is:
// an empty vector's data() must not reach it.
inline std::uint32_t crc32_update(std::uint32_t crc, const std::byte* data, std::size_t bytes)
{
    if (bytes == 0) return crc;
    return static_cast<std::uint32_t>(::crc32_z(crc, reinterpret_cast<const Bytef*>(data), bytes));
}

inline std::string hex32(std::uint32_t value)
{
    char text[11];
    std::snprintf(text, sizeof text, "0x%08x", static_cast<unsigned>(value));
    return text;
}

// Everything up to the first payload byte.
inline std::vector<std::byte> encode_checkpoint_header(const checkpoint_contents& contents)
{
    if (contents.sections.size() > std::numeric_limits<std::uint32_t>::max())
        throw error("tenet: a checkpoint holds at most 2^32 - 1 sections");
    std::vector<std::byte> header;
    for (char c : checkpoint_magic) header.push_back(static_cast<std::byte>(c));
    put_le(header, checkpoint_version, 4);
    put_le(header, 0, 8);  // header length, patched below
    put_text(header, contents.signature);
    put_le(header, contents.step, 8);
    put_le(header, contents.sections.size(), 4);
    std::unordered_set<std::string_view> names;
    for (const checkpoint_section& section : contents.sections) {
        if (!names.insert(section.name).second)
            throw error("tenet: checkpoint section \"" + section.name + "\" appears twice");
        put_text(header, section.name);
        put_le(header, section.bytes.size(), 8);
    }
    std::vector<std::byte> length;
    put_le(length, header.size(), 8);
    std::copy(length.begin(), length.end(), header.begin() + checkpoint_magic.size() + 4);
    return header;
}

// Magic, version and a size that can hold the smallest checkpoint.
inline void check_checkpoint_prefix(const std::string& path, std::span<const std::byte> file)
{
    const std::size_t magic_bytes = std::min(file.size(), checkpoint_magic.size());
    for (std::size_t i = 0; i < magic_bytes; ++i)
        if (file[i] != static_cast<std::byte>(checkpoint_magic[i]))
            throw format_error(path, "not a tenet checkpoint (its first bytes are not \"TENETCKP\")");
    if (file.size() >= checkpoint_magic.size() + 4) {
        const std::uint64_t version = get_le(&file[checkpoint_magic.size()], 4);
        if (version != checkpoint_version)
            throw format_error(path, "unsupported checkpoint format version " + std::to_string(version) +
                                         " (this tenet reads version " + std::to_string(checkpoint_version) + ")");
    }
    if (file.size() < checkpoint_min_bytes)
        throw format_error(path, "truncated: the file has " + std::to_string(file.size()) +
                                     " bytes, the smallest checkpoint has " + std::to_string(checkpoint_min_bytes));
}

// The checksum, compared before any length in the file is looked at.
inline void check_checkpoint_crc(const std::string& path, std::span<const std::byte> file)
{
    const std::size_t body = file.size() - checkpoint_crc_bytes;
    const auto stored = static_cast<std::uint32_t>(get_le(&file[body], 4));
    const std::uint32_t computed = crc32_update(0, file.data(), body);
    if (stored != computed)
        throw format_error(path, "checksum mismatch (stored " + hex32(stored) + ", computed " + hex32(computed) +
                                     "): the file is corrupt, truncated or has trailing bytes");
}

// Signature, step and sections of a file whose checksum is right; every
// length is checked against the bytes that remain before it is used.
inline checkpoint_contents parse_checkpoint(const std::string& path, std::span<const std::byte> file)
{
    const std::span<const std::byte> body = file.first(file.size() - checkpoint_crc_bytes);
    const std::uint64_t header_length = get_le(&file[checkpoint_magic.size() + 4], 8);
    if (header_length > body.size())
        throw format_error(path, "the header claims " + std::to_string(header_length) + " bytes but the file has only " +
                                     std::to_string(file.size()) + ": truncated?");
    const std::string header_text = "the header's " + std::to_string(header_length) + " bytes";
    io::byte_reader header(path, body.first(static_cast<std::size_t>(header_length)),
                           "the section table runs past " + header_text + ": ");
    header.take_bytes(checkpoint_prefix_bytes);
    checkpoint_contents out;
    out.signature = header.take_text(header.take<std::uint32_t>());
    out.step = header.take<std::uint64_t>();
    const std::uint32_t count = header.take<std::uint32_t>();
    constexpr std::size_t entry_min_bytes = 4 + 8;
    header.need(std::uint64_t{count} * entry_min_bytes);  // before anything is reserved
    std::vector<std::uint64_t> lengths;
    std::unordered_set<std::string> names;
    for (std::uint32_t i = 0; i < count; ++i) {
        std::string name = header.take_text(header.take<std::uint32_t>());
        lengths.push_back(header.take<std::uint64_t>());
        if (!names.insert(name).second)
            throw format_error(path, "section table inconsistent with the file: section \"" + name + "\" appears twice");
        out.sections.push_back({std::move(name), {}});
    }
    if (header.remaining() != 0)
        throw format_error(path, "the section table ends at byte " + std::to_string(header.offset()) +
                                     ", before the end of " + header_text);
    io::byte_reader payload(path, body.subspan(static_cast<std::size_t>(header_length)),
                            "the sections need more bytes than the file's " + std::to_string(file.size()) + ": ");
    for (std::size_t i = 0; i < lengths.size(); ++i) {
        const std::span<const std::byte> bytes = payload.take_bytes(lengths[i]);
        out.sections[i].bytes.assign(bytes.begin(), bytes.end());
    }
    if (payload.remaining() != 0)
        throw format_error(path, "the sections end " + std::to_string(payload.remaining()) +
                                     " bytes before the checksum: " + std::to_string(payload.remaining()) +
                                     " trailing bytes");
    return out;
}

// A long signature shown around the character where it differs from the other.
inline std::string shorten(const std::string& text, std::size_t differs_at)
{
    constexpr std::size_t before = 24, after = 40;
    const std::size_t from = differs_at > before ? differs_at - before : 0;
    const std::size_t to = std::min(text.size(), differs_at + after);
    return std::string(from > 0 ? "..." : "") + "\"" + text.substr(from, to - from) + "\"" +
           (to < text.size() ? "..." : "");
}

}  // namespace detail

// The most bytes a checkpoint with this signature, these many sections
// (names of at most checkpoint_max_name_bytes) and payload bytes can have.
inline std::uint64_t checkpoint_size_bound(std::string_view signature, std::size_t sections,
                                           std::uint64_t payload_bytes)
{
    return detail::checkpoint_min_bytes + signature.size() +
           sections * (4 + detail::checkpoint_max_name_bytes + 8) + payload_bytes;
}

// Reads a file of at most max_bytes (checked before reading) and checks its
// prefix, then its checksum, then its layout -- not its signature: for
// readers whose signature says which of several formats the file holds
// (check it with check_checkpoint_signature).
inline checkpoint_contents read_checkpoint_contents(const std::string& path, std::uint64_t max_bytes)
{
    const std::vector<std::byte> file = read_file(path, max_bytes, "a checkpoint of this kind");
    detail::check_checkpoint_prefix(path, file);
    detail::check_checkpoint_crc(path, file);
    return detail::parse_checkpoint(path, file);
}

// A format_error naming where the signatures differ, unless they agree.
inline void check_checkpoint_signature(const std::string& path, const std::string& found, const std::string& expected)
{
    if (found == expected) return;
    const std::size_t at =
        static_cast<std::size_t>(std::mismatch(found.begin(), found.end(), expected.begin(), expected.end()).first -
                                 found.begin());
    throw format_error(path, "signature mismatch: the file was written for " + detail::shorten(found, at) + " but " +
                                 detail::shorten(expected, at) + " was expected (they differ from character " +
                                 std::to_string(at) + ")");
}

// Writes the file atomically (io/atomic_file.hpp): a reader sees the old file
// or the new one, never a mixture. On failure the temporary file is removed,
// an existing file at path is untouched, and io_error is thrown.
inline void write_checkpoint_file(const std::string& path, const checkpoint_contents& contents)
{
    const std::vector<std::byte> header = detail::encode_checkpoint_header(contents);
    atomic_file file(path);
    std::uint32_t crc = 0;
    const auto write = [&](const std::byte* data, std::size_t bytes) {
        file.write(data, bytes);
        crc = detail::crc32_update(crc, data, bytes);
    };
    write(header.data(), header.size());
    for (const checkpoint_section& section : contents.sections) write(section.bytes.data(), section.bytes.size());
    std::vector<std::byte> tail;
    detail::put_le(tail, crc, 4);
    file.write(tail.data(), tail.size());
    file.commit();
}

// Reads and checks the whole file: its size against max_bytes before reading
// (pass checkpoint_size_bound when the sections are known), then magic,
// version, checksum, the section table against the length, and the
// signature; throws format_error unless all agree (io_error if unreadable).
inline checkpoint_contents read_checkpoint_file(const std::string& path, const std::string& expected_signature,
                                                std::uint64_t max_bytes = detail::checkpoint_default_max_bytes)
{
    checkpoint_contents contents = read_checkpoint_contents(path, max_bytes);
    check_checkpoint_signature(path, contents.signature, expected_signature);
    return contents;
}

// The section called name, which must hold exactly expected_bytes; the
// format_error names the file (path) and the section.
inline const checkpoint_section& find_section(const std::string& path, const checkpoint_contents& contents,
                                              std::string_view name, std::size_t expected_bytes)
{
    const std::string where = "checkpoint at step " + std::to_string(contents.step) + ": ";
    const auto found = std::find_if(contents.sections.begin(), contents.sections.end(),
                                    [&](const checkpoint_section& s) { return s.name == name; });
    if (found == contents.sections.end()) {
        std::string present;
        for (const checkpoint_section& s : contents.sections) present += (present.empty() ? "\"" : ", \"") + s.name + "\"";
        throw format_error(path, where + "no section \"" + std::string(name) + "\" (it has " +
                                      (present.empty() ? std::string("none") : present) + ")");
    }
    if (found->bytes.size() != expected_bytes)
        throw format_error(path, where + "section \"" + found->name + "\" has " + std::to_string(found->bytes.size()) +
                                      " bytes, expected " + std::to_string(expected_bytes));
    return *found;
}

}  // namespace tenet::io
