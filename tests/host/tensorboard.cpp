// profile::tensorboard_writer: CRC-32C against the published check values
// (RFC 3720's vectors and the "123456789" check), the protobuf encoding of
// an Event byte by byte, TFRecord framing decoded back, and a writer whose
// file holds exactly the records it was given, in order, whatever was
// written; train::log_progress's scalars. tests/tools/read_tensorboard.py reads a file back with
// TensorBoard's own reader where the package is installed (ctest
// tensorboard.read_back).
#include "scratch_dir.hpp"

#include <doctest/doctest.h>
#include <tenet/profile/tensorboard.hpp>
#include <tenet/train/tensorboard_scalars.hpp>

#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

using namespace tenet;

namespace {

std::string bytes(std::initializer_list<unsigned> list)
{
    std::string out;
    for (unsigned b : list) out.push_back(static_cast<char>(b));
    return out;
}

template <class T>
T read_le(const std::string& s, std::size_t at)
{
    T v = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) v |= static_cast<T>(static_cast<unsigned char>(s[at + i])) << (8 * i);
    return v;
}

// The records of a TFRecord file, each checked against its two CRCs.
std::vector<std::string> records_of(const std::string& file)
{
    std::vector<std::string> out;
    std::size_t at = 0;
    while (at < file.size()) {
        REQUIRE(at + 12 <= file.size());
        const auto length = read_le<std::uint64_t>(file, at);
        CHECK(read_le<std::uint32_t>(file, at + 8) == profile::masked_crc32c(file.substr(at, 8)));
        REQUIRE(at + 12 + length + 4 <= file.size());
        out.push_back(file.substr(at + 12, length));
        CHECK(read_le<std::uint32_t>(file, at + 12 + length) == profile::masked_crc32c(out.back()));
        at += 12 + length + 4;
    }
    return out;
}

std::string read_all(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("tensorboard: CRC-32C matches the published check values")
{
    CHECK(profile::crc32c("123456789") == 0xE3069283u);
    CHECK(profile::crc32c(std::string(32, '\0')) == 0x8A9136AAu);   // RFC 3720, B.4
    CHECK(profile::crc32c(std::string(32, '\xFF')) == 0x62A8AB43u);
    std::string ascending;
    for (int i = 0; i < 32; ++i) ascending.push_back(static_cast<char>(i));
    CHECK(profile::crc32c(ascending) == 0x46DD794Eu);
    CHECK(profile::crc32c("") == 0u);
    // the mask: rotate right by 15, add 0xA282EAD8
    const std::uint32_t c = profile::crc32c("123456789");
    CHECK(profile::masked_crc32c("123456789") == static_cast<std::uint32_t>(((c >> 15) | (c << 17)) + 0xA282EAD8u));
}

TEST_CASE("tensorboard: an Event's protobuf encoding, byte by byte")
{
    std::string v;
    profile::detail::protobuf::varint(v, 300);
    CHECK(v == bytes({0xAC, 0x02}));
    v.clear();
    profile::detail::protobuf::varint(v, std::numeric_limits<std::uint64_t>::max());  // (a negative int64 step: ten bytes)
    CHECK(v == bytes({0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01}));

    // Event {wall_time 1.5, step 3, summary {value {tag "a", simple_value 2}}}
    const std::string want = bytes({0x09, 0, 0, 0, 0, 0, 0, 0xF8, 0x3F,  // 1: wall_time, fixed64
                                    0x10, 0x03,                         // 2: step, varint
                                    0x2A, 0x0A,                         // 5: summary, 10 bytes
                                    0x0A, 0x08,                         //   1: value, 8 bytes
                                    0x0A, 0x01, 'a',                    //     1: tag
                                    0x15, 0, 0, 0, 0x40});              //     2: simple_value, fixed32
    CHECK(profile::detail::event_scalar(1.5, 3, "a", 2.0f) == want);
    CHECK(profile::detail::event_file_version(1.5) ==
          bytes({0x09, 0, 0, 0, 0, 0, 0, 0xF8, 0x3F, 0x1A, 13}) + "brain.Event:2");

    const std::string record = profile::detail::tfrecord(want);
    CHECK(record.size() == 8 + 4 + want.size() + 4);
    CHECK(records_of(record) == std::vector<std::string>{want});
}

TEST_CASE("tensorboard: a writer's file holds its records in order, each flushed as it is written")
{
    testing::scratch_dir dir("tensorboard");
    const std::string logs = dir.file("runs/a");  // (parents created)
    std::vector<std::pair<std::string, float>> written;
    std::string path;
    {
        profile::tensorboard_writer log(logs);
        path = log.path();
        CHECK(path.find("events.out.tfevents.") != std::string::npos);
        std::mt19937 rng(5);
        std::normal_distribution<float> normal(0.0f, 3.0f);
        for (int step = 0; step < 40; ++step) {
            const std::string tag = step % 3 == 0 ? "train/loss" : step % 3 == 1 ? "train/lr" : "train/grad_norm";
            const float value = step == 7 ? std::numeric_limits<float>::quiet_NaN() : normal(rng);
            log.scalar(tag, value, step);
            written.emplace_back(tag, value);
        }
        CHECK(records_of(read_all(path)).size() == 41);  // all on disk before the writer closes
        CHECK_THROWS_AS(log.scalar("", 1.0, 0), error);
    }
    const auto records = records_of(read_all(path));
    REQUIRE(records.size() == 41);
    CHECK(records[0].find("brain.Event:2") != std::string::npos);
    for (std::size_t i = 0; i < written.size(); ++i) {
        const std::string& e = records[i + 1];
        // the record is this scalar's Event, whatever its wall time
        const double wall = std::bit_cast<double>(read_le<std::uint64_t>(e, 1));
        CHECK(e == profile::detail::event_scalar(wall, static_cast<std::int64_t>(i), written[i].first, written[i].second));
        CHECK(std::abs(wall - std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count()) < 600);
    }

    // A second writer to the same directory makes a file of its own.
    profile::tensorboard_writer again(logs);
    CHECK(again.path() != path);

    // A directory that cannot be made: an io_error naming it.
    std::ofstream(dir.file("plain")) << "x";
    CHECK_THROWS_AS(profile::tensorboard_writer(dir.file("plain/sub")), io_error);
}

TEST_CASE("tensorboard: train::log_progress writes a step's scalars; what was not computed is left out")
{
    testing::scratch_dir dir("tensorboard_progress");
    std::string path;
    {
        profile::tensorboard_writer log(dir.file("run"));
        path = log.path();
        train::step_state s;
        s.loss_scale = 1024.0f;
        s.last_lr = 0.01f;
        s.last_grad_norm = 2.5f;
        s.skipped = 3;
        train::log_progress(log, s, 1.25, 7, 100.0);
        s.last_grad_norm = 0.0f;  // (a step that computes no norm)
        train::log_progress(log, s, std::numeric_limits<double>::quiet_NaN(), 8, 50.0);  // (an empty window)
    }
    const auto records = records_of(read_all(path));
    const std::vector<std::tuple<std::int64_t, std::string, float>> want{
        {7, "train/loss", 1.25f},         {7, "train/lr", 0.01f},          {7, "train/grad_norm", 2.5f},
        {7, "train/loss_scale", 1024.0f}, {7, "train/skipped_steps", 3.0f}, {7, "train/samples_per_second", 100.0f},
        {8, "train/lr", 0.01f},           {8, "train/loss_scale", 1024.0f}, {8, "train/skipped_steps", 3.0f},
        {8, "train/samples_per_second", 50.0f}};
    REQUIRE(records.size() == want.size() + 1);
    for (std::size_t i = 0; i < want.size(); ++i) {
        const auto& [step, tag, value] = want[i];
        CAPTURE(tag);
        const double wall = std::bit_cast<double>(read_le<std::uint64_t>(records[i + 1], 1));
        CHECK(records[i + 1] == profile::detail::event_scalar(wall, step, tag, value));
    }
}
