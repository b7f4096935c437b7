// A checkpoint file: named byte sections behind a signature and a step
// count, written atomically and checked completely before anything is
// returned. The container is generic; the trainer decides the sections.
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

#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

namespace tenet::train {

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

inline std::string system_message() { return std::strerror(errno); }

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

// The temporary file a checkpoint is written to; removed unless renamed over
// the destination by commit().
class checkpoint_temp_file {
public:
    explicit checkpoint_temp_file(const std::string& path)
        : path_(path), temp_(path + ".tmp." + std::to_string(::getpid())), file_(std::fopen(temp_.c_str(), "wb"))
    {
        if (!file_) fail("cannot create");
    }
    checkpoint_temp_file(const checkpoint_temp_file&) = delete;
    checkpoint_temp_file& operator=(const checkpoint_temp_file&) = delete;
    ~checkpoint_temp_file()
    {
        if (file_) std::fclose(file_);
        if (!committed_) std::remove(temp_.c_str());
    }

    void write(const std::byte* data, std::size_t bytes)
    {
        if (bytes != 0 && std::fwrite(data, 1, bytes, file_) != bytes) fail("cannot write");
        crc_ = crc32_update(crc_, data, bytes);
    }

    // Appends the CRC, makes the file durable and puts it in place.
    void commit()
    {
        std::vector<std::byte> crc;
        put_le(crc, crc_, 4);
        write(crc.data(), crc.size());
        if (std::fflush(file_) != 0 || ::fsync(::fileno(file_)) != 0) fail("cannot flush");
        std::FILE* file = std::exchange(file_, nullptr);
        if (std::fclose(file) != 0) fail("cannot close");
        if (std::rename(temp_.c_str(), path_.c_str()) != 0) fail("cannot rename", " over it");
        committed_ = true;
    }

private:
    // Reads errno before anything else can change it.
    [[noreturn]] void fail(const char* verb, const char* tail = "") const
    {
        const std::string reason = system_message();
        throw io_error(path_, std::string(verb) + " " + temp_ + tail + ": " + reason);
    }

    std::string path_;
    std::string temp_;
    std::FILE* file_;
    std::uint32_t crc_ = 0;
    bool committed_ = false;
};

inline std::vector<std::byte> read_whole_file(const std::string& path)
{
    std::FILE* file = std::fopen(path.c_str(), "rb");
    if (!file) throw io_error(path, "cannot open: " + system_message());
    struct stat info {};
    if (::fstat(::fileno(file), &info) != 0) {
        const std::string reason = system_message();
        std::fclose(file);
        throw io_error(path, "cannot read: " + reason);
    }
    std::vector<std::byte> bytes(static_cast<std::size_t>(info.st_size));
    const bool complete = std::fread(bytes.data(), 1, bytes.size(), file) == bytes.size() && std::fgetc(file) == EOF;
    const bool failed = std::ferror(file) != 0;
    const std::string reason = failed ? system_message() : "it changed size while being read";
    std::fclose(file);
    if (failed || !complete) throw io_error(path, "cannot read: " + reason);
    return bytes;
}

// Magic, version and a size that can hold the smallest checkpoint.
inline void check_checkpoint_prefix(const std::string& path, const std::vector<std::byte>& file)
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

// The header's fields, read without trusting any length in them.
struct checkpoint_layout {
    checkpoint_contents contents;  // the sections named, their bytes still empty
    std::vector<std::uint64_t> lengths;
    std::size_t payload_start = 0;
    std::string problem;  // empty when header, section table and file length agree
};

class header_cursor {
public:
    header_cursor(const std::byte* data, std::size_t end, std::size_t at) : data_(data), end_(end), at_(at) {}
    bool overrun() const { return overrun_; }
    std::size_t at() const { return at_; }

    std::uint64_t number(int bytes)
    {
        if (!take(static_cast<std::size_t>(bytes))) return 0;
        return get_le(data_ + at_ - bytes, bytes);
    }
    std::string text()
    {
        const std::size_t length = static_cast<std::size_t>(number(4));
        if (!take(length)) return {};
        return std::string(reinterpret_cast<const char*>(data_ + at_ - length), length);
    }

private:
    bool take(std::size_t bytes)
    {
        overrun_ = overrun_ || bytes > end_ - at_;
        if (!overrun_) at_ += bytes;
        return !overrun_;
    }

    const std::byte* data_;
    std::size_t end_;
    std::size_t at_;
    bool overrun_ = false;
};

inline checkpoint_layout parse_checkpoint_layout(const std::vector<std::byte>& file)
{
    checkpoint_layout out;
    const std::size_t size = file.size();
    const std::size_t body = size - checkpoint_crc_bytes;
    const std::uint64_t header_length = get_le(&file[checkpoint_magic.size() + 4], 8);
    if (header_length > body) {
        out.problem = "the header claims " + std::to_string(header_length) + " bytes but the file has only " +
                      std::to_string(size) + ": truncated?";
        return out;
    }
    header_cursor cursor(file.data(), static_cast<std::size_t>(header_length), checkpoint_prefix_bytes);
    out.contents.signature = cursor.text();
    out.contents.step = cursor.number(8);
    const std::uint64_t count = cursor.number(4);
    std::unordered_set<std::string> names;
    for (std::uint64_t i = 0; i < count && !cursor.overrun(); ++i) {
        std::string name = cursor.text();
        const std::uint64_t length = cursor.number(8);
        if (cursor.overrun()) break;
        if (!names.insert(name).second) {
            out.problem = "section \"" + name + "\" appears twice";
            return out;
        }
        out.contents.sections.push_back({std::move(name), {}});
        out.lengths.push_back(length);
    }
    const std::string header_text = "the header's " + std::to_string(header_length) + " bytes";
    if (cursor.overrun()) {
        out.problem = "the section table runs past " + header_text;
        return out;
    }
    if (cursor.at() != header_length) {
        out.problem = "the section table ends at byte " + std::to_string(cursor.at()) + ", before the end of " + header_text;
        return out;
    }
    std::uint64_t payload = 0;
    for (std::uint64_t length : out.lengths) {
        if (length > body - header_length - payload) {
            out.problem = "the sections need more bytes than the file's " + std::to_string(size) + ": truncated?";
            return out;
        }
        payload += length;
    }
    if (header_length + payload != body)
        out.problem = "the sections end at byte " + std::to_string(header_length + payload) +
                      " but the checksum starts at byte " + std::to_string(body) + ": " +
                      std::to_string(body - header_length - payload) + " trailing bytes";
    out.payload_start = static_cast<std::size_t>(header_length);
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

inline void check_signature(const std::string& path, const std::string& found, const std::string& expected)
{
    if (found == expected) return;
    const std::size_t at =
        static_cast<std::size_t>(std::mismatch(found.begin(), found.end(), expected.begin(), expected.end()).first -
                                 found.begin());
    throw format_error(path, "signature mismatch: the file was written for " + shorten(found, at) + " but " +
                                 shorten(expected, at) + " was expected (they differ from character " +
                                 std::to_string(at) + ")");
}

}  // namespace detail

// Writes path.tmp.<pid>, syncs it and renames it over path: a reader sees the
// old file or the new one, never a mixture. On failure the temporary file is
// removed, an existing file at path is untouched, and io_error is thrown.
inline void write_checkpoint_file(const std::string& path, const checkpoint_contents& contents)
{
    const std::vector<std::byte> header = detail::encode_checkpoint_header(contents);
    detail::checkpoint_temp_file file(path);
    file.write(header.data(), header.size());
    for (const checkpoint_section& section : contents.sections) file.write(section.bytes.data(), section.bytes.size());
    file.commit();
}

// Reads and checks the whole file (magic, version, checksum, section table
// against the length, signature); throws format_error unless all agree.
inline checkpoint_contents read_checkpoint_file(const std::string& path, const std::string& expected_signature)
{
    const std::vector<std::byte> file = detail::read_whole_file(path);
    detail::check_checkpoint_prefix(path, file);
    const std::size_t body = file.size() - detail::checkpoint_crc_bytes;
    const std::uint32_t stored = static_cast<std::uint32_t>(detail::get_le(&file[body], 4));
    const std::uint32_t computed = detail::crc32_update(0, file.data(), body);
    detail::checkpoint_layout layout = detail::parse_checkpoint_layout(file);
    if (stored != computed)
        throw format_error(path, "checksum mismatch (stored " + detail::hex32(stored) + ", computed " +
                                     detail::hex32(computed) + "): " +
                                     (layout.problem.empty() ? "the contents are corrupt" : layout.problem));
    if (!layout.problem.empty()) throw format_error(path, "section table inconsistent with the file: " + layout.problem);
    detail::check_signature(path, layout.contents.signature, expected_signature);
    std::size_t at = layout.payload_start;
    for (std::size_t i = 0; i < layout.lengths.size(); ++i) {
        const std::size_t length = static_cast<std::size_t>(layout.lengths[i]);
        layout.contents.sections[i].bytes.assign(file.begin() + at, file.begin() + at + length);
        at += length;
    }
    return std::move(layout.contents);
}

// The section called name, which must hold exactly expected_bytes.
inline const checkpoint_section& find_section(const checkpoint_contents& contents, std::string_view name,
                                              std::size_t expected_bytes)
{
    const std::string where = "checkpoint at step " + std::to_string(contents.step);
    const auto found = std::find_if(contents.sections.begin(), contents.sections.end(),
                                    [&](const checkpoint_section& s) { return s.name == name; });
    if (found == contents.sections.end()) {
        std::string present;
        for (const checkpoint_section& s : contents.sections) present += (present.empty() ? "\"" : ", \"") + s.name + "\"";
        throw format_error(where, "no section \"" + std::string(name) + "\" (it has " +
                                      (present.empty() ? std::string("none") : present) + ")");
    }
    if (found->bytes.size() != expected_bytes)
        throw format_error(where, "section \"" + found->name + "\" has " + std::to_string(found->bytes.size()) +
                                      " bytes, expected " + std::to_string(expected_bytes));
    return *found;
}

}  // namespace tenet::train
