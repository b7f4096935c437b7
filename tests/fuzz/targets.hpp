// The fuzzed readers, one entry point each: the input becomes a file (the
// readers take paths) and is read; a tenet::error is the expected way to say
// no, anything else (a crash, bad_alloc, another exception) escapes to the
// fuzzer or to replay.cpp, which fail.
#pragma once

#include <tenet/data/idx.hpp>
#include <tenet/io/model_safetensors.hpp>
#include <tenet/io/npy.hpp>
#include <tenet/io/safetensors.hpp>
#include <tenet/nn/nn.hpp>
#include <tenet/prune/sparse_file.hpp>
#include <tenet/train/trainer.hpp>

#include <unistd.h>
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace tenet::fuzz {

using net_t = nn::model<nn::Sequential<nn::Linear<4, 4>, nn::ReLU>, fp32, Shape<2, 4>, Host>;

inline std::string scratch_file(const char* reader)
{
    const char* dir = std::getenv("TMPDIR");
    return std::string(dir && *dir ? dir : "/tmp") + "/tenet-fuzz-" + reader + "-" + std::to_string(::getpid());
}

inline std::string as_file(const char* reader, const std::uint8_t* data, std::size_t size)
{
    const std::string path = scratch_file(reader);
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f || (size != 0 && std::fwrite(data, 1, size, f) != size) || std::fclose(f) != 0) std::abort();
    return path;
}

// The input with its last four bytes made the container's CRC of the rest:
// mutations then reach the parser behind the checksum.
inline std::vector<std::uint8_t> with_crc(const std::uint8_t* data, std::size_t size)
{
    std::vector<std::uint8_t> out(data, data + size);
    if (size < 4) return out;
    const auto crc = static_cast<std::uint32_t>(::crc32_z(0, out.data(), size - 4));
    for (std::size_t i = 0; i < 4; ++i) out[size - 4 + i] = static_cast<std::uint8_t>(crc >> (8 * i));
    return out;
}

template <class Read>
void expect_parse_or_error(Read read)
{
    try {
        read();
    } catch (const tenet::error&) {
    }
}

inline void checkpoint(const std::uint8_t* data, std::size_t size)
{
    static net_t net(1);
    static train::trainer t(net, train::adamw{}, train::constant_lr{1e-3f});
    for (const std::vector<std::uint8_t>& input : {std::vector<std::uint8_t>(data, data + size), with_crc(data, size)}) {
        const std::string path = as_file("checkpoint", input.data(), input.size());
        expect_parse_or_error([&] { (void)io::read_checkpoint_file(path, "fuzz"); });
        expect_parse_or_error([&] { t.load(path); });
    }
}

inline void sparse(const std::uint8_t* data, std::size_t size)
{
    static net_t net(2);
    static prune::masks<net_t> m(net);
    for (const std::vector<std::uint8_t>& input : {std::vector<std::uint8_t>(data, data + size), with_crc(data, size)}) {
        const std::string path = as_file("sparse", input.data(), input.size());
        expect_parse_or_error([&] { prune::load_sparse(path, m); });
    }
}

inline void idx(const std::uint8_t* bytes, std::size_t size)
{
    const std::string path = as_file("idx", bytes, size);
    expect_parse_or_error([&] { (void)data::read_idx(path); });
}

// A safetensors file: the header checked, every tensor read as f32 and as
// i32 (each may refuse), and a non-strict load into a model.
inline void safetensors(const std::uint8_t* bytes, std::size_t size)
{
    static net_t net(5);
    const std::string path = as_file("safetensors", bytes, size);
    expect_parse_or_error([&] {
        const io::safetensors_file f(path);
        for (const auto& entry : f.tensors()) {  // (clang 14 captures no structured bindings)
            const std::string& name = entry.first;
            const io::safetensor& t = entry.second;
            std::vector<f32> floats(t.numel());
            std::vector<i32> ints(t.numel());
            expect_parse_or_error([&] { f.read(name, floats.data(), std::span<const std::size_t>(t.shape)); });
            expect_parse_or_error([&] { f.read(name, ints.data(), std::span<const std::size_t>(t.shape)); });
        }
    });
    expect_parse_or_error([&] { (void)io::load_safetensors(net, path, false); });
}

inline void npy(const std::uint8_t* bytes, std::size_t size)
{
    const std::string path = as_file("npy", bytes, size);
    expect_parse_or_error([&] { (void)io::read_npy(path); });
    expect_parse_or_error([&] { (void)io::load_npy<f32>(path); });
    expect_parse_or_error([&] { (void)io::load_npy<i32>(path); });
}

}  // namespace tenet::fuzz
