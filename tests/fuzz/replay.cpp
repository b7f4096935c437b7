// The fuzz corpus as a test: every file under tests/fuzz/corpus/<reader>/,
// and hand-made malformed seeds, fed to the same entry points the fuzzer
// runs (targets.hpp). Each must parse or throw tenet::error: a crash or any
// other exception (bad_alloc included) ends the program with a failure.
//   tenet_fuzz_replay <corpus directory>
#include "targets.hpp"

#include <zlib.h>

#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

namespace {

namespace fs = std::filesystem;
using bytes_t = std::vector<std::uint8_t>;
using entry_point = void (*)(const std::uint8_t*, std::size_t);

bytes_t file_bytes(const fs::path& path)
{
    std::ifstream in(path, std::ios::binary);
    return bytes_t(std::istreambuf_iterator<char>(in), {});
}

bytes_t gzip(const bytes_t& raw)
{
    uLongf size = compressBound(raw.size()) + 32;
    bytes_t out(size);
    z_stream z{};
    if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) std::abort();
    z.next_in = const_cast<Bytef*>(raw.data());
    z.avail_in = static_cast<uInt>(raw.size());
    z.next_out = out.data();
    z.avail_out = static_cast<uInt>(out.size());
    if (deflate(&z, Z_FINISH) != Z_STREAM_END) std::abort();
    out.resize(z.total_out);
    deflateEnd(&z);
    return out;
}

// A valid file written by the real writer, then read back as bytes.
template <class Write>
bytes_t written(Write write)
{
    const std::string path = tenet::fuzz::scratch_file("seed");
    write(path);
    bytes_t out = file_bytes(path);
    std::remove(path.c_str());
    return out;
}

// The file, every prefix of it and the reported corruption (header length
// 0, signature length FFFFFFFF) of a checkpoint-container file.
std::vector<bytes_t> damaged(const bytes_t& good, bool container)
{
    std::vector<bytes_t> out{good};
    for (std::size_t size = 0; size < good.size(); ++size) out.emplace_back(good.begin(), good.begin() + size);
    if (container && good.size() >= 24) {
        bytes_t bad = good;
        for (std::size_t i = 12; i < 20; ++i) bad[i] = 0;
        for (std::size_t i = 20; i < 24; ++i) bad[i] = 0xFF;
        out.push_back(bad);
    }
    return out;
}

std::vector<bytes_t> checkpoint_seeds()
{
    tenet::fuzz::net_t net(3);
    tenet::train::trainer t(net, tenet::train::adamw{}, tenet::train::constant_lr{1e-3f});
    return damaged(written([&](const std::string& p) { t.save(p); }), true);
}

std::vector<bytes_t> sparse_seeds()
{
    tenet::fuzz::net_t net(4);
    tenet::prune::masks<tenet::fuzz::net_t> m(net);
    return damaged(written([&](const std::string& p) { tenet::prune::save_sparse(p, m, tenet::prune::sparse_format::csr); }),
                   true);
}

std::vector<bytes_t> idx_seeds()
{
    const bytes_t small{0, 0, 8, 2, 0, 0, 0, 2, 0, 0, 0, 3, 1, 2, 3, 4, 5, 6};
    const bytes_t huge_claim{0, 0, 8, 3, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 4, 0, 7};  // 17 bytes claiming 1 GiB
    std::vector<bytes_t> out = damaged(small, false);
    for (const bytes_t& b : damaged(gzip(small), false)) out.push_back(b);
    out.push_back(huge_claim);
    out.push_back(gzip(huge_claim));
    return out;
}

std::vector<bytes_t> safetensors_seeds()
{
    tenet::fuzz::net_t net(6);
    std::vector<bytes_t> out = damaged(written([&](const std::string& p) { tenet::io::save_safetensors(net, p); }), false);
    const float x[3] = {1.5f, -2.0f, 0.25f};
    const tenet::i32 k[2] = {7, -9};
    for (bytes_t& b : damaged(written([&](const std::string& p) {
                                  tenet::io::save_tensors(p, {tenet::io::tensor_of("x", x, {3}), tenet::io::tensor_of("k", k, {2, 1})},
                                                          {{"format", "pt"}});
                              }),
                              false))
        out.push_back(std::move(b));
    return out;
}

std::vector<bytes_t> npy_seeds()
{
    const float x[6] = {1.5f, -2.0f, 0.25f, 3.0f, -0.5f, 8.0f};
    const std::size_t shape[2] = {2, 3};
    return damaged(written([&](const std::string& p) { tenet::io::save_npy(p, x, std::span<const std::size_t>(shape)); }),
                   false);
}

}  // namespace

int main(int argc, char** argv)
{
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s <corpus directory>\n", argv[0]);
        return 2;
    }
    const struct {
        const char* name;
        entry_point read;
        std::vector<bytes_t> (*seeds)();
    } readers[] = {{"checkpoint", tenet::fuzz::checkpoint, checkpoint_seeds},
                   {"sparse", tenet::fuzz::sparse, sparse_seeds},
                   {"idx", tenet::fuzz::idx, idx_seeds},
                   {"safetensors", tenet::fuzz::safetensors, safetensors_seeds},
                   {"npy", tenet::fuzz::npy, npy_seeds}};
    for (const auto& reader : readers) {
        std::size_t inputs = 0;
        for (const bytes_t& seed : reader.seeds()) {
            reader.read(seed.data(), seed.size());
            ++inputs;
        }
        const fs::path dir = fs::path(argv[1]) / reader.name;
        if (!fs::is_directory(dir)) {
            std::fprintf(stderr, "no corpus at %s\n", dir.c_str());
            return 1;
        }
        for (const auto& entry : fs::directory_iterator(dir)) {
            const bytes_t input = file_bytes(entry.path());
            reader.read(input.data(), input.size());
            ++inputs;
        }
        std::remove(tenet::fuzz::scratch_file(reader.name).c_str());
        std::printf("%s: %zu inputs parsed or rejected with tenet::error\n", reader.name, inputs);
    }
    return 0;
}
