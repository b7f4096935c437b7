// tensorboard_writer: scalars in TensorBoard's event-file format, written by
// tenet itself (no protobuf library, no Python at run time):
//
//   profile::tensorboard_writer log("runs/mlp");   // runs/mlp/events.out.tfevents.<seconds>.<host>.<pid>
//   log.scalar("train/loss", loss, step);
//   log.scalar("train/lr", lr, step);
//
// The file is a sequence of TFRecords -- u64 length, u32 masked CRC32C of
// the length, the bytes, u32 masked CRC32C of the bytes (all little-endian)
// -- each holding one tensorflow.Event message: the first with
// file_version "brain.Event:2", then one per scalar with wall_time, step
// and a Summary of one Value {tag, simple_value}. Only those fields are
// encoded (protobuf's wire format: varints, fixed64 / fixed32, length-
// delimited). Each record goes out whole and is flushed, so a run that
// stops early leaves a file TensorBoard reads up to its last scalar.
#pragma once

#include "../memory/error.hpp"

#include <array>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <unistd.h>

namespace tenet::profile {

namespace detail {

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as TFRecord uses.
inline constexpr std::array<std::uint32_t, 256> crc32c_table = [] {
    std::array<std::uint32_t, 256> table{};
    for (std::uint32_t i = 0; i < 256; ++i) {
        std::uint32_t c = i;
        for (int k = 0; k < 8; ++k) c = (c & 1u) != 0 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        table[i] = c;
    }
    return table;
}();

}  // namespace detail

inline std::uint32_t crc32c(std::string_view bytes)
{
    std::uint32_t c = 0xFFFFFFFFu;
    for (const char b : bytes) c = detail::crc32c_table[(c ^ static_cast<unsigned char>(b)) & 0xFFu] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

// TFRecord's masked CRC: rotated right by 15 and offset, so that a CRC of
// bytes that hold CRCs is not degenerate.
inline std::uint32_t masked_crc32c(std::string_view bytes)
{
    const std::uint32_t c = crc32c(bytes);
    return ((c >> 15) | (c << 17)) + 0xA282EAD8u;
}

namespace detail {

// The protobuf wire format, for the fields an Event needs.
namespace protobuf {

inline void varint(std::string& out, std::uint64_t v)
{
    while (v >= 0x80) {
        out.push_back(static_cast<char>((v & 0x7F) | 0x80));
        v >>= 7;
    }
    out.push_back(static_cast<char>(v));
}

template <class T>
void little_endian(std::string& out, T v)
{
    for (std::size_t i = 0; i < sizeof(T); ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

enum wire : std::uint32_t { varint_type = 0, fixed64_type = 1, bytes_type = 2, fixed32_type = 5 };

inline void key(std::string& out, std::uint32_t field, wire type) { varint(out, (field << 3) | type); }

inline void bytes_field(std::string& out, std::uint32_t field, std::string_view bytes)
{
    key(out, field, bytes_type);
    varint(out, bytes.size());
    out.append(bytes);
}

inline void double_field(std::string& out, std::uint32_t field, double v)
{
    key(out, field, fixed64_type);
    little_endian(out, std::bit_cast<std::uint64_t>(v));
}

inline void float_field(std::string& out, std::uint32_t field, float v)
{
    key(out, field, fixed32_type);
    little_endian(out, std::bit_cast<std::uint32_t>(v));
}

inline void int64_field(std::string& out, std::uint32_t field, std::int64_t v)
{
    key(out, field, varint_type);
    varint(out, static_cast<std::uint64_t>(v));
}

}  // namespace protobuf

// tensorflow.Event {1: wall_time, 2: step, 3: file_version} without a summary.
inline std::string event_file_version(double wall_time)
{
    std::string e;
    protobuf::double_field(e, 1, wall_time);
    protobuf::bytes_field(e, 3, "brain.Event:2");
    return e;
}

// tensorflow.Event {1: wall_time, 2: step, 5: Summary {1: Value {1: tag, 2: simple_value}}}.
inline std::string event_scalar(double wall_time, std::int64_t step, std::string_view tag, float value)
{
    std::string v;
    protobuf::bytes_field(v, 1, tag);
    protobuf::float_field(v, 2, value);
    std::string summary;
    protobuf::bytes_field(summary, 1, v);
    std::string e;
    protobuf::double_field(e, 1, wall_time);
    protobuf::int64_field(e, 2, step);
    protobuf::bytes_field(e, 5, summary);
    return e;
}

// One TFRecord around `data`.
inline std::string tfrecord(std::string_view data)
{
    std::string length;
    protobuf::little_endian(length, static_cast<std::uint64_t>(data.size()));
    std::string out = length;
    protobuf::little_endian(out, masked_crc32c(length));
    out.append(data);
    protobuf::little_endian(out, masked_crc32c(data));
    return out;
}

}  // namespace detail

class tensorboard_writer {
public:
    // Creates `dir` (and its parents) and a new event file in it.
    explicit tensorboard_writer(const std::string& dir) : path_(new_file_path(dir))
    {
        file_.reset(std::fopen(path_.c_str(), "wb"));
        if (!file_) throw io_error(path_, "cannot create a TensorBoard event file");
        write(detail::event_file_version(now()));
    }

    // One scalar point of the curve `tag` ("train/loss"); a non-finite value
    // is written as it is (TensorBoard shows NaN and inf).
    void scalar(std::string_view tag, double value, std::int64_t step)
    {
        if (tag.empty()) throw error("tenet: tensorboard_writer::scalar: the tag is empty");
        write(detail::event_scalar(now(), step, tag, static_cast<float>(value)));
    }

    const std::string& path() const { return path_; }

private:
    static double now()
    {
        return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    }

    // TensorBoard finds files by "tfevents" in the name; the seconds, host
    // and process id keep two writers to one directory apart.
    static std::string new_file_path(const std::string& dir)
    {
        std::error_code ec;
        std::filesystem::create_directories(dir, ec);
        if (ec) throw io_error(dir, "cannot create the log directory: " + ec.message());
        char host[256] = "localhost";
        gethostname(host, sizeof host - 1);
        const auto seconds = static_cast<long long>(std::floor(now()));
        const std::string base = (std::filesystem::path(dir) / ("events.out.tfevents." + std::to_string(seconds) + "." +
                                                               std::string(host) + "." + std::to_string(getpid())))
                                     .string();
        std::string path = base;
        for (int n = 1; std::filesystem::exists(path); ++n) path = base + "." + std::to_string(n);
        return path;
    }

    void write(std::string_view event)
    {
        const std::string record = detail::tfrecord(event);
        if (std::fwrite(record.data(), 1, record.size(), file_.get()) != record.size() || std::fflush(file_.get()) != 0)
            throw io_error(path_, "cannot write to the TensorBoard event file");
    }

    struct closer {
        void operator()(std::FILE* f) const { std::fclose(f); }
    };
    std::string path_;
    std::unique_ptr<std::FILE, closer> file_;
};

}  // namespace tenet::profile
