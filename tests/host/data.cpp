// data/: IDX files (raw and gzip) and every way they can be wrong, the
// platform-independent shuffle, the batch loader (each sample once per epoch,
// padding, transforms, bf16 rounding, the device pipeline when there is a
// GPU), and Fashion-MNIST itself when this machine has it.
#include "mismatch_log.hpp"
#include "scratch_dir.hpp"

#include <doctest/doctest.h>
#include <tenet/data/data.hpp>

#include <zlib.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

using namespace tenet;
using namespace tenet::data;
namespace fs = std::filesystem;

namespace {

using bytes = std::vector<std::uint8_t>;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }


const fs::path& temp_dir()
{
    static const testing::scratch_dir dir("tenet-data");  // removed at exit
    return dir.path;
}

std::string write_raw(const std::string& name, const bytes& content)
{
    const std::string path = (temp_dir() / name).string();
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(content.data()), static_cast<std::streamsize>(content.size()));
    REQUIRE(out.good());
    return path;
}

std::string write_gz(const std::string& name, const bytes& content)
{
    const std::string path = (temp_dir() / name).string();
    gzFile f = gzopen(path.c_str(), "wb");
    REQUIRE(f != nullptr);
    REQUIRE(gzwrite(f, content.data(), static_cast<unsigned>(content.size())) == static_cast<int>(content.size()));
    REQUIRE(gzclose(f) == Z_OK);
    return path;
}

bytes read_file(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    return bytes(std::istreambuf_iterator<char>(in), {});
}

// An IDX file's bytes: header as the format says, written out by hand.
bytes idx_file(std::uint8_t type, const std::vector<std::uint32_t>& dims, const bytes& payload)
{
    bytes out{0, 0, type, static_cast<std::uint8_t>(dims.size())};
    for (std::uint32_t d : dims)
        for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<std::uint8_t>(d >> shift));
    out.insert(out.end(), payload.begin(), payload.end());
    return out;
}

bytes random_bytes(std::size_t n, std::uint64_t seed, unsigned below = 256)
{
    std::mt19937_64 rng(seed);
    bytes out(n);
    for (auto& b : out) b = static_cast<std::uint8_t>(rng() % below);
    return out;
}

// The message of the format_error reading `path` throws ("" when none).
template <class Read>
std::string format_message(Read read)
{
    try {
        read();
    } catch (const format_error& e) {
        return e.what();
    }
    return "";
}

std::string idx_error(const std::string& path)
{
    return format_message([&] { read_idx(path); });
}

}  // namespace

TEST_CASE("read_idx reads raw and gzip'd files")
{
    const bytes payload = random_bytes(3 * 5 * 7, 1);
    for (const std::string& path : {write_raw("a.idx", idx_file(0x08, {3, 5, 7}, payload)),
                                    write_gz("a.idx.gz", idx_file(0x08, {3, 5, 7}, payload))}) {
        CAPTURE(path);
        const idx_array a = read_idx(path);
        CHECK(a.type_code == 0x08);
        CHECK(a.dims == std::vector<std::size_t>{3, 5, 7});
        CHECK(a.bytes == payload);
    }
    // extents use all four bytes, big-endian: 0x00010203 = 66051
    const bytes wide = random_bytes(66051, 2);
    const idx_array b = read_idx(write_gz("wide.gz", idx_file(0x08, {0x00010203}, wide)));
    CHECK(b.dims == std::vector<std::size_t>{66051});
    CHECK(b.bytes == wide);
    const idx_array r4 = read_idx(write_raw("rank4.idx", idx_file(0x08, {2, 1, 3, 2}, random_bytes(12, 3))));
    CHECK(r4.dims == std::vector<std::size_t>{2, 1, 3, 2});
}

TEST_CASE("read_idx rejects every malformed file with the path and what it expected")
{
    const bytes payload = random_bytes(15, 4);
    const bytes good = idx_file(0x08, {3, 5}, payload);

    SUBCASE("missing file: io_error, not format_error")
    {
        const std::string path = (temp_dir() / "nowhere.gz").string();
        try {
            read_idx(path);
            FAIL("no exception");
        } catch (const format_error&) {
            FAIL("a missing file is not a format error");
        } catch (const io_error& e) {
            CHECK(contains(e.what(), path));
            CHECK(contains(e.what(), "cannot open"));
            CHECK(e.path() == path);
        }
    }
    SUBCASE("bad magic")
    {
        bytes b = good;
        b[0] = 0x01;
        const std::string m = idx_error(write_raw("magic.idx", b));
        CHECK(contains(m, "magic.idx: bad magic: expected 0x00 0x00, found 0x01 0x00"));
        b[0] = 0, b[1] = 0x2A;
        CHECK(contains(idx_error(write_gz("magic.gz", b)), "found 0x00 0x2A"));
    }
    SUBCASE("unsupported type")
    {
        const std::string m = idx_error(write_raw("type.idx", idx_file(0x0D, {3, 5}, payload)));
        CHECK(contains(m, "unsupported element type 0x0D (expected 0x08"));
    }
    SUBCASE("rank 0 and rank 5")
    {
        CHECK(contains(idx_error(write_raw("rank0.idx", idx_file(0x08, {}, payload))), "rank 0 (expected 1 to 4)"));
        CHECK(contains(idx_error(write_raw("rank5.idx", idx_file(0x08, {1, 1, 3, 5, 1}, payload))),
                       "rank 5 (expected 1 to 4)"));
    }
    SUBCASE("zero and absurd dimensions")
    {
        CHECK(contains(idx_error(write_raw("zero.idx", idx_file(0x08, {3, 0}, {}))), "dimension 1 is 0"));
        CHECK(contains(idx_error(write_raw("big.idx", idx_file(0x08, {65536, 65536}, payload))),
                       "dimensions [65536, 65536] exceed the limit of 1073741824 bytes"));
        // four maximal extents: the product would overflow 64 bits
        const std::uint32_t m = 0xFFFFFFFFu;
        CHECK(contains(idx_error(write_raw("huge.idx", idx_file(0x08, {m, m, m, m}, payload))), "exceed the limit"));
        CHECK(contains(idx_error(write_raw("limit.idx", idx_file(0x08, {1u << 15, (1u << 15) + 1}, payload))),
                       "exceed the limit"));
    }
    SUBCASE("truncated header, dimensions, payload")
    {
        CHECK(contains(idx_error(write_raw("t0.idx", {})), "truncated: 0 of 4 header bytes"));
        CHECK(contains(idx_error(write_raw("t1.idx", bytes(good.begin(), good.begin() + 3))),
                       "truncated: 3 of 4 header bytes"));
        CHECK(contains(idx_error(write_raw("t2.idx", bytes(good.begin(), good.begin() + 9))),
                       "truncated: 5 of 8 bytes of dimensions"));
        const bytes short_payload(good.begin(), good.end() - 1);
        for (const std::string& path : {write_raw("t3.idx", short_payload), write_gz("t3.gz", short_payload)})
            CHECK(contains(idx_error(path), "truncated: dimensions [3, 5] need 15 bytes of data, found 14"));
    }
    SUBCASE("trailing bytes")
    {
        bytes long_file = good;
        long_file.insert(long_file.end(), {7, 8, 9});
        for (const std::string& path : {write_raw("o.idx", long_file), write_gz("o.gz", long_file)})
            CHECK(contains(idx_error(path), "3 trailing bytes after the 15 bytes that dimensions [3, 5] need"));
        bytes big = good;
        big.resize(good.size() + 10000, 1);
        CHECK(contains(idx_error(write_gz("o2.gz", big)), "10000 trailing bytes"));
    }
    SUBCASE("corrupt and cut-off gzip streams")
    {
        // random bytes do not compress: the payload is stored, so a flipped
        // byte changes data that only the CRC can catch
        const std::string path = write_gz("c.gz", idx_file(0x08, {100, 50}, random_bytes(5000, 5)));
        const bytes compressed = read_file(path);
        bytes flipped = compressed;
        flipped[compressed.size() / 2] ^= 0x10;
        CHECK(contains(idx_error(write_raw("flipped.gz", flipped)), "corrupt or truncated gzip data"));
        bytes crc = compressed;
        crc[compressed.size() - 6] ^= 0x01;  // the stored CRC-32 itself
        CHECK(contains(idx_error(write_raw("crc.gz", crc)), "corrupt or truncated gzip data"));
        const bytes cut(compressed.begin(), compressed.begin() + static_cast<std::ptrdiff_t>(compressed.size() - 20));
        CHECK(contains(idx_error(write_raw("cut.gz", cut)), "corrupt or truncated gzip data"));
        CHECK_NOTHROW(read_idx(write_raw("whole.gz", compressed)));
    }
}

TEST_CASE("typed readers check dimensions and label range")
{
    const std::string images = write_gz("img.gz", idx_file(0x08, {4, 3, 2}, random_bytes(24, 6)));
    CHECK(read_idx_images(images, 3, 2).dims == std::vector<std::size_t>{4, 3, 2});
    CHECK(contains(format_message([&] { read_idx_images(images, 2, 3); }),
                   "expected images of dimensions [N, 2, 3], found [4, 3, 2]"));
    const std::string flat = write_gz("flat.gz", idx_file(0x08, {24}, random_bytes(24, 6)));
    CHECK(contains(format_message([&] { read_idx_images(flat, 3, 2); }), "found [24]"));

    bytes labels = random_bytes(9, 7, 10);
    CHECK(read_idx_labels(write_raw("lab.idx", idx_file(0x08, {9}, labels)), 10).bytes == labels);
    labels[4] = 12;
    const std::string bad = write_raw("lab_bad.idx", idx_file(0x08, {9}, labels));
    CHECK(contains(format_message([&] { read_idx_labels(bad, 10); }), "label 4 is 12 (expected below 10)"));
    CHECK_NOTHROW(read_idx_labels(bad, 13));
    CHECK(contains(format_message([&] { read_idx_labels(bad, 12); }), "label 4 is 12 (expected below 12)"));
    CHECK(contains(format_message([&] { read_idx_labels(images, 10); }), "expected labels of dimensions [N]"));
}

TEST_CASE("load_mnist reads the four standard files and checks the counts agree")
{
    const fs::path dir = temp_dir() / "mnist";
    fs::create_directories(dir);
    const auto put = [&](const char* name, const std::vector<std::uint32_t>& dims, const bytes& payload) {
        write_gz("mnist/" + std::string(name), idx_file(0x08, dims, payload));
    };
    const bytes train_images = random_bytes(5 * 784, 8), test_images = random_bytes(3 * 784, 9);
    const bytes train_labels = random_bytes(5, 10, 10), test_labels = random_bytes(3, 11, 10);
    put("train-images-idx3-ubyte.gz", {5, 28, 28}, train_images);
    put("train-labels-idx1-ubyte.gz", {5}, train_labels);
    put("t10k-images-idx3-ubyte.gz", {3, 28, 28}, test_images);
    put("t10k-labels-idx1-ubyte.gz", {3}, test_labels);
    const mnist_dataset d = load_mnist(dir.string());
    CHECK(d.train.count == 5);
    CHECK(d.test.count == 3);
    CHECK(d.train.images == train_images);
    CHECK(d.test.images == test_images);
    CHECK(d.train.labels == std::vector<std::int32_t>(train_labels.begin(), train_labels.end()));
    CHECK(d.test.labels == std::vector<std::int32_t>(test_labels.begin(), test_labels.end()));

    const mnist_split first = subset(d.train, 2);
    CHECK(first.count == 2);
    CHECK(first.images == bytes(train_images.begin(), train_images.begin() + 2 * 784));
    CHECK(first.labels == std::vector<std::int32_t>(train_labels.begin(), train_labels.begin() + 2));
    CHECK(subset(d.train, 0).images.empty());
    CHECK_THROWS_AS(subset(d.train, 6), index_error);

    put("t10k-labels-idx1-ubyte.gz", {4}, random_bytes(4, 12, 10));
    const std::string m = format_message([&] { load_mnist(dir.string()); });
    CHECK(contains(m, "t10k-labels-idx1-ubyte.gz: 4 labels for the 3 images of"));
    CHECK(contains(m, "t10k-images-idx3-ubyte.gz"));
    fs::remove(dir / "train-images-idx3-ubyte.gz");
    CHECK_THROWS_AS(load_mnist(dir.string()), io_error);
}

TEST_CASE("permutation: known answers, a permutation, deterministic")
{
    // from an independent Python implementation of the stated algorithm
    CHECK(permutation(10, 42, 0) == std::vector<std::uint32_t>{5, 1, 9, 6, 7, 2, 4, 0, 8, 3});
    CHECK(permutation(10, 42, 1) == std::vector<std::uint32_t>{6, 2, 0, 7, 8, 3, 9, 5, 4, 1});
    CHECK(permutation(10, 43, 0) == std::vector<std::uint32_t>{9, 7, 1, 3, 2, 8, 5, 0, 4, 6});
    CHECK(permutation(20, 0, 0) ==
          std::vector<std::uint32_t>{11, 16, 17, 9, 14, 3, 0, 8, 1, 6, 7, 13, 19, 12, 4, 10, 15, 5, 18, 2});
    CHECK(permutation(0, 1, 2).empty());
    CHECK(permutation(1, 1, 2) == std::vector<std::uint32_t>{0});
    for (std::size_t n : {2u, 3u, 1000u, 60000u}) {
        const auto p = permutation(n, 7, 3);
        CHECK(p == permutation(n, 7, 3));
        CHECK(std::set<std::uint32_t>(p.begin(), p.end()).size() == n);
        CHECK(*std::max_element(p.begin(), p.end()) == n - 1);
    }
    CHECK(permutation(1000, 7, 3) != permutation(1000, 7, 4));
    CHECK(permutation(1000, 7, 3) != permutation(1000, 8, 3));
    CHECK_THROWS_AS(permutation((std::size_t{1} << 32) + 1, 0, 0), error);
}

TEST_CASE("shuffle draws: known answers and unbiased bounded values")
{
    data::detail::shuffle_draws d(5, 9);
    CHECK(d.next() == 0x611d2b3du);
    CHECK(d.next() == 0xa09f62c9u);
    // a bound of 3 * 2^30 rejects a quarter of the draws (3 of 15 here)
    data::detail::shuffle_draws r(5, 9);
    const std::array<std::uint32_t, 12> expected{1221976173, 2021100054, 2733937353, 1895161425,
                                                 2687093570, 2061962758, 2475519822, 493059590,
                                                 790252061,  2873707708, 2814276449, 2431132654};
    for (std::uint32_t e : expected) CHECK(r.below(3ull << 30) == e);
    data::detail::shuffle_draws full(5, 9);
    CHECK(full.below(1ull << 32) == 1629301565u);
    CHECK(full.below(1ull << 32) == 2694800073u);
    CHECK(full.below(1ull << 32) == 3645249805u);
    CHECK(full.below(1) == 0u);

    // Without rejection, value % 3 for this bound would be 0 half the time
    // (those values have two preimages): chi-square with 2 degrees of freedom.
    data::detail::shuffle_draws u(11, 0);
    std::array<double, 3> counts{};
    const int n = 30000;
    for (int i = 0; i < n; ++i) {
        const std::uint32_t v = u.below(3ull << 30);
        REQUIRE(v < (3ull << 30));
        counts[v % 3] += 1;
    }
    double chi2 = 0;
    for (double c : counts) chi2 += (c - n / 3.0) * (c - n / 3.0) / (n / 3.0);
    CHECK(chi2 < 18.4);  // p = 1e-4
}

TEST_CASE("permutation is uniform: first and last positions over many seeds")
{
    constexpr std::size_t n = 8;
    const int seeds = 8000;
    std::array<double, n> first{}, last{};
    for (int s = 0; s < seeds; ++s) {
        const auto p = permutation(n, static_cast<std::uint64_t>(s), 5);
        first[p[0]] += 1;
        last[p[n - 1]] += 1;
    }
    const double e = double(seeds) / n;
    double chi_first = 0, chi_last = 0;
    for (std::size_t v = 0; v < n; ++v) {
        chi_first += (first[v] - e) * (first[v] - e) / e;
        chi_last += (last[v] - e) * (last[v] - e) / e;
    }
    CHECK(chi_first < 29.9);  // 7 degrees of freedom, p = 1e-4
    CHECK(chi_last < 29.9);
}

namespace {

constexpr std::size_t feats = 6;
// At namespace scope: nvcc 12 spells a loader type first named with a local
// constant as `unsigned long((16))` in later functions, which g++ rejects.
constexpr std::size_t batch_rows = 16;

// Pixels 0 and 1 spell the sample's index, so a row names its sample.
mnist_split tagged_split(std::size_t count, std::uint64_t seed)
{
    mnist_split s;
    s.count = count;
    s.images = random_bytes(count * feats, seed);
    s.labels.resize(count);
    std::mt19937_64 rng(seed + 1);
    for (std::size_t i = 0; i < count; ++i) {
        s.images[i * feats] = static_cast<std::uint8_t>(i % 256);
        s.images[i * feats + 1] = static_cast<std::uint8_t>(i / 256);
        s.labels[i] = static_cast<std::int32_t>(rng() % 10);
    }
    return s;
}

f32 identity(std::uint8_t p) { return static_cast<f32>(p); }

// One epoch's batches, copied out: x, labels, valid, rows per batch.
struct epoch_copy {
    std::vector<std::vector<f32>> x;
    std::vector<std::vector<std::int32_t>> labels, valid;
    std::vector<std::size_t> rows;
};

template <std::size_t Batch, class Loader>
epoch_copy read_epoch(Loader& loader, std::uint64_t seed, std::uint64_t epoch, bool shuffle = true)
{
    epoch_copy out;
    typename Loader::batch b;
    loader.start_epoch(seed, epoch, shuffle);
    while (loader.next(b)) {
        out.x.emplace_back(b.x().data(), b.x().data() + Batch * feats);
        out.labels.emplace_back(b.labels().data(), b.labels().data() + Batch);
        out.valid.emplace_back(b.valid().data(), b.valid().data() + Batch);
        out.rows.push_back(b.rows());
    }
    return out;
}

}  // namespace

TEST_CASE("batch_loader: every sample once per epoch, in the permutation's order, padded at the end")
{
    const mnist_split split = tagged_split(103, 20);
    batch_loader<f32, batch_rows, feats, Host> loader(split, identity);
    CHECK(loader.batches_per_epoch() == 7);  // 6 full batches and 7 rows

    for (std::uint64_t epoch : {0u, 1u}) {
        CAPTURE(epoch);
        // slot 0 held the full batch 4 when the padded batch 6 is written
        // into it: stale rows would show
        const epoch_copy e = read_epoch<batch_rows>(loader, 99, epoch);
        REQUIRE(e.x.size() == 7);
        const auto order = permutation(103, 99, epoch);
        std::vector<int> seen(103, 0);
        for (std::size_t b = 0; b < 7; ++b) {
            CHECK(e.rows[b] == (b < 6 ? 16u : 7u));
            for (std::size_t r = 0; r < batch_rows; ++r) {
                const f32* row = e.x[b].data() + r * feats;
                if (r >= e.rows[b]) {
                    for (std::size_t f = 0; f < feats; ++f) CHECK(row[f] == 0.0f);
                    CHECK(e.labels[b][r] == 0);
                    CHECK(e.valid[b][r] == 0);
                    continue;
                }
                const auto sample = static_cast<std::size_t>(row[0] + 256 * row[1]);
                REQUIRE(sample < 103);
                CHECK(sample == order[b * batch_rows + r]);
                ++seen[sample];
                for (std::size_t f = 0; f < feats; ++f) CHECK(row[f] == f32(split.images[sample * feats + f]));
                CHECK(e.labels[b][r] == split.labels[sample]);
                CHECK(e.valid[b][r] == 1);
            }
        }
        CHECK(std::count(seen.begin(), seen.end(), 1) == 103);
    }

    typename decltype(loader)::batch b;
    CHECK_FALSE(loader.next(b));  // still at the end of epoch 1
    CHECK(b.x().data() == nullptr);

    const epoch_copy in_order = read_epoch<batch_rows>(loader, 99, 0, false);
    for (std::size_t i = 0; i < 103; ++i)
        CHECK(in_order.x[i / batch_rows][(i % batch_rows) * feats] == f32(i % 256));
}

namespace {
constexpr std::size_t image_pixels = 784, image_batch = 64;  // 50,176 pixels a batch: written by both cores
}

TEST_CASE("batch_loader: batches large enough to be written across cores, every pixel in place")
{
    constexpr std::size_t count = 150;  // two full batches and 22 rows
    mnist_split split;
    split.count = count;
    split.images = random_bytes(count * image_pixels, 31);
    split.labels.resize(count);
    for (std::size_t i = 0; i < count; ++i) split.labels[i] = static_cast<std::int32_t>((i * 7) % 10);
    batch_loader<bf16, image_batch, image_pixels, Host> loader(split);  // the default transform
    const auto order = permutation(count, 5, 3);
    loader.start_epoch(5, 3);
    typename decltype(loader)::batch b;
    mismatch_log log;
    for (std::size_t k = 0; loader.next(b); ++k) {
        for (std::size_t r = 0; r < image_batch; ++r) {
            const std::size_t i = k * image_batch + r;
            const bool sample = i < count;
            if (b.labels()(r) != (sample ? split.labels[order[i]] : 0) || b.valid()(r) != (sample ? 1 : 0))
                log.add("batch %zu row %zu: label %d valid %d", k, r, int(b.labels()(r)), int(b.valid()(r)));
            for (std::size_t f = 0; f < image_pixels; ++f) {
                const f32 want = sample ? f32(convert<bf16>(normalize_pixels{}(split.images[order[i] * image_pixels + f]))) : 0.0f;
                if (f32(b.x()(r, f)) != want) log.add("batch %zu row %zu pixel %zu: %g, want %g", k, r, f, double(f32(b.x()(r, f))), double(want));
            }
        }
    }
    CHECK_NO_MISMATCH(log);
}

TEST_CASE("batch_loader: deterministic per (seed, epoch), exact multiples, misuse")
{
    const mnist_split split = tagged_split(300, 21);
    batch_loader<f32, 20, feats, Host> a(split, identity), b(split, identity);
    const epoch_copy first = read_epoch<20>(a, 5, 2);
    CHECK(first.x == read_epoch<20>(b, 5, 2).x);
    CHECK(first.labels == read_epoch<20>(b, 5, 2).labels);
    CHECK(first.x != read_epoch<20>(b, 5, 3).x);
    CHECK(first.x.size() == 15);  // 300 / 20: no padding batch
    for (std::size_t r : first.rows) CHECK(r == 20);

    batch_loader<f32, 20, feats, Host> fresh(split, identity);
    typename decltype(fresh)::batch out;
    CHECK_THROWS_AS(fresh.next(out), error);

    mnist_split broken = split;
    broken.labels.pop_back();
    CHECK_THROWS_AS((batch_loader<f32, 20, feats, Host>(broken)), error);

    // a temporary split would dangle: only lvalues are accepted
    static_assert(!std::is_constructible_v<batch_loader<f32, 20, feats, Host>, mnist_split&&>);
    static_assert(std::is_constructible_v<batch_loader<f32, 20, feats, Host>, const mnist_split&>);

    mnist_split empty;
    batch_loader<f32, 20, feats, Host> none(empty);
    none.start_epoch(1, 1);
    CHECK(none.batches_per_epoch() == 0);
    CHECK_FALSE(none.next(out));
}

namespace {

// World ranks, each loading batch_rows rows, against one loader of the
// global batch (batch_rows * World rows) over the same split and order.
template <std::size_t World>
void check_shards(const mnist_split& split, std::uint64_t epoch)
{
    constexpr std::size_t global = batch_rows * World;
    batch_loader<f32, global, feats, Host> whole(split, identity);
    const epoch_copy all = read_epoch<global>(whole, 7, epoch);
    std::vector<int> seen(split.count, 0);
    for (std::size_t rank = 0; rank < World; ++rank) {
        CAPTURE(rank);
        batch_loader<f32, batch_rows, feats, Host> part(split, identity, current_stream(), shard{rank, World});
        CHECK(part.batches_per_epoch() == whole.batches_per_epoch());
        const epoch_copy mine = read_epoch<batch_rows>(part, 7, epoch);
        REQUIRE(mine.x.size() == all.x.size());
        for (std::size_t b = 0; b < mine.x.size(); ++b) {
            // this rank's rows are rows [rank * batch_rows, (rank + 1) * batch_rows) of the global batch
            const auto from = [&](const auto& rows, std::size_t width) {
                return std::vector(rows[b].begin() + rank * batch_rows * width,
                                   rows[b].begin() + (rank + 1) * batch_rows * width);
            };
            CHECK(mine.x[b] == from(all.x, feats));
            CHECK(mine.labels[b] == from(all.labels, 1));
            CHECK(mine.valid[b] == from(all.valid, 1));
            CHECK(mine.rows[b] == std::size_t(std::count(mine.valid[b].begin(), mine.valid[b].end(), 1)));
            for (std::size_t r = 0; r < mine.rows[b]; ++r)
                ++seen[static_cast<std::size_t>(mine.x[b][r * feats] + 256 * mine.x[b][r * feats + 1])];
        }
    }
    CHECK(std::count(seen.begin(), seen.end(), 1) == static_cast<std::ptrdiff_t>(split.count));
}

}  // namespace

TEST_CASE("batch_loader shards: each rank its part of every global batch, every sample once per epoch")
{
    // 103 samples: 2 ranks take 4 global batches of 32 (the last: 7 real rows,
    // all on rank 0); 3 ranks take 3 of 48 (the last: 7 real rows, on rank 0)
    const mnist_split split = tagged_split(103, 23);
    for (std::uint64_t epoch : {0u, 1u}) {
        CAPTURE(epoch);
        check_shards<1>(split, epoch);
        check_shards<2>(split, epoch);
        check_shards<3>(split, epoch);
    }
    batch_loader<f32, batch_rows, feats, Host> last(split, identity, current_stream(), shard{2, 3});
    typename decltype(last)::batch b;
    last.start_epoch(7, 0);
    std::size_t rows = 0;
    while (last.next(b)) rows = b.rows();
    CHECK(rows == 0);  // rank 2's part of the last global batch is all padding
    CHECK_THROWS_AS((batch_loader<f32, batch_rows, feats, Host>(split, identity, current_stream(), shard{2, 2})), error);
    CHECK_THROWS_AS((batch_loader<f32, batch_rows, feats, Host>(split, identity, current_stream(), shard{0, 0})), error);
}

namespace {

// Every pixel value once, in one sample.
mnist_split all_pixels()
{
    mnist_split s;
    s.count = 1;
    for (unsigned p = 0; p < 256; ++p) s.images.push_back(static_cast<std::uint8_t>(p));
    s.labels = {7};
    return s;
}

double reference(unsigned p) { return (p / 255.0 - 0.2860) / 0.3530; }

std::uint16_t bits(bf16 v) { return tenet::internal::bit_cast<std::uint16_t>(v); }

double from_bits(std::uint16_t u) { return convert<f64>(tenet::internal::bit_cast<bf16>(u)); }

// No bf16 neighbour of v (the next encodings up and down; NaN past zero's
// edge compares false) is closer to the exact value.
bool nearest_bf16(bf16 v, double exact)
{
    const std::uint16_t u = bits(v);
    const double here = std::fabs(from_bits(u) - exact);
    return !(here > std::fabs(from_bits(static_cast<std::uint16_t>(u + 1)) - exact)) &&
           !(here > std::fabs(from_bits(static_cast<std::uint16_t>(u - 1)) - exact));
}

}  // namespace

TEST_CASE("batch_loader: the default transform against float64, in f32 and rounded to bf16")
{
    const mnist_split split = all_pixels();
    batch_loader<f32, 3, 256, Host> f(split);
    f.start_epoch(0, 0);
    typename decltype(f)::batch fb;
    REQUIRE(f.next(fb));
    CHECK(fb.rows() == 1);
    CHECK(fb.labels()(0) == 7);
    for (unsigned p = 0; p < 256; ++p) {
        CAPTURE(p);
        CHECK(std::fabs(fb.x()(0, p) - reference(p)) <= 4e-7 * std::max(1.0, std::fabs(reference(p))));
        CHECK(fb.x()(1, p) == 0.0f);
        CHECK(fb.x()(2, p) == 0.0f);
    }

    batch_loader<bf16, 3, 256, Host> h(split);
    h.start_epoch(0, 0);
    typename decltype(h)::batch hb;
    REQUIRE(h.next(hb));
    for (unsigned p = 0; p < 256; ++p) {
        CAPTURE(p);
        CHECK(nearest_bf16(hb.x()(0, p), reference(p)));
        CHECK(bits(hb.x()(2, p)) == 0);  // +0, not -0
    }
    // a custom transform, rounded the same way
    batch_loader<bf16, 3, 256, Host> c(split, [](std::uint8_t p) { return p / 3.0f; });
    c.start_epoch(0, 0);
    REQUIRE(c.next(hb));
    for (unsigned p = 0; p < 256; ++p) {
        CAPTURE(p);
        CHECK(nearest_bf16(hb.x()(0, p), p / 3.0));
    }
}

namespace {
void CUDART_CB sleep_2ms(void*) { std::this_thread::sleep_for(std::chrono::milliseconds(2)); }
}  // namespace

TEST_CASE("batch_loader<Device>: the same batches as the host, while the compute stream lags")
{
    if (!has_device()) {
        MESSAGE("skipped: no CUDA device");
        const mnist_split small = tagged_split(10, 1);
        CHECK_THROWS_AS((batch_loader<f32, batch_rows, feats, Device>(small)), no_device_error);
        return;
    }
    const mnist_split split = tagged_split(203, 22);
    batch_loader<f32, batch_rows, feats, Host> host_loader(split, identity);
    const epoch_copy expected = read_epoch<batch_rows>(host_loader, 3, 1);
    const std::size_t n = expected.x.size();

    // Each step sleeps on the compute stream before reading its batch back,
    // so the host runs many batches ahead: a slot refilled too early shows.
    stream compute;
    batch_loader<f32, batch_rows, feats, Device> loader(split, identity, compute);
    constexpr std::size_t x_bytes = batch_rows * feats * 4, row_bytes = batch_rows * 4;
    constexpr std::size_t per_batch = x_bytes + 2 * row_bytes;
    buffer<std::byte, HostPinned> results(n * per_batch, compute);
    std::memset(results.data(), 0xA5, n * per_batch);  // poison
    typename decltype(loader)::batch b;
    loader.start_epoch(3, 1);
    for (std::size_t k = 0; loader.next(b); ++k) {
        REQUIRE(k < n);
        TENET_CUDA_CHECK(cudaLaunchHostFunc(compute.get(), sleep_2ms, nullptr));
        std::byte* to = results.data() + k * per_batch;
        TENET_CUDA_CHECK(cudaMemcpyAsync(to, b.x().data(), x_bytes, cudaMemcpyDeviceToHost, compute.get()));
        TENET_CUDA_CHECK(
            cudaMemcpyAsync(to + x_bytes, b.labels().data(), row_bytes, cudaMemcpyDeviceToHost, compute.get()));
        TENET_CUDA_CHECK(cudaMemcpyAsync(to + x_bytes + row_bytes, b.valid().data(), row_bytes, cudaMemcpyDeviceToHost,
                                         compute.get()));
        CHECK(b.rows() == expected.rows[k]);
    }
    compute.synchronize();
    for (std::size_t k = 0; k < n; ++k) {
        CAPTURE(k);
        const std::byte* from = results.data() + k * per_batch;
        CHECK(std::memcmp(from, expected.x[k].data(), x_bytes) == 0);
        CHECK(std::memcmp(from + x_bytes, expected.labels[k].data(), row_bytes) == 0);
        CHECK(std::memcmp(from + x_bytes + row_bytes, expected.valid[k].data(), row_bytes) == 0);
    }
}

TEST_CASE("Fashion-MNIST: 60000 + 10000 samples, balanced classes, normalised pixels")
{
    if (!fs::exists(fashion_mnist_dir)) {
        MESSAGE("skipped: no Fashion-MNIST at " << fashion_mnist_dir);
        return;
    }
    const mnist_dataset d = load_mnist(fashion_mnist_dir);
    CHECK(d.train.count == 60000);
    CHECK(d.test.count == 10000);
    CHECK(d.train.images.size() == 60000 * mnist_pixels);
    std::array<int, 10> train_classes{}, test_classes{};
    for (std::int32_t l : d.train.labels) ++train_classes.at(static_cast<std::size_t>(l));
    for (std::int32_t l : d.test.labels) ++test_classes.at(static_cast<std::size_t>(l));
    for (int c : train_classes) CHECK(c == 6000);
    for (int c : test_classes) CHECK(c == 1000);

    // the normalisation constants are the training set's: mean 0, std 1
    batch_loader<bf16, 256, mnist_pixels, Host> loader(d.train);
    CHECK(loader.batches_per_epoch() == 235);
    typename decltype(loader)::batch b;
    loader.start_epoch(1, 0);
    double sum = 0, squares = 0, rows = 0;
    while (loader.next(b)) {
        rows += static_cast<double>(b.rows());
        for (std::size_t i = 0; i < b.rows() * mnist_pixels; ++i) {
            const double v = convert<f64>(b.x().data()[i]);
            sum += v;
            squares += v * v;
        }
    }
    CHECK(rows == 60000);
    const double count = rows * mnist_pixels, mean = sum / count;
    CHECK(std::fabs(mean) < 0.01);
    CHECK(std::fabs(std::sqrt(squares / count - mean * mean) - 1.0) < 0.01);
}
