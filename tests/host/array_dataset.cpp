// data/: array_dataset (from vectors and .npy files, every size and shape
// check) and array_loader (conversions of each feature type to each storage
// type, targets, the shuffled order, the padded last batch, sharding across
// ranks), against references written out here: plain loops over the
// dataset's arrays, and IEEE rounding by the compiler rather than tenet's
// convert.
#include "scratch_dir.hpp"

#include <doctest/doctest.h>
#include <tenet/data/data.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

using namespace tenet;
using namespace tenet::data;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

template <class E, class F>
std::string message_of(F&& f)
{
    try {
        f();
    } catch (const E& e) {
        return e.what();
    }
    FAIL("no exception");
    return {};
}

template <class T>
std::vector<T> random_values(std::size_t n, std::uint32_t seed)
{
    std::mt19937 rng(seed);
    std::vector<T> out(n);
    for (T& v : out) {
        if constexpr (std::is_same_v<T, std::uint8_t>)
            v = static_cast<T>(std::uniform_int_distribution<int>(0, 255)(rng));
        else if constexpr (std::is_same_v<T, i8> || std::is_same_v<T, i32>)
            v = static_cast<T>(std::uniform_int_distribution<int>(-100, 100)(rng));
        else v = static_cast<T>(std::uniform_real_distribution<double>(-4.0, 4.0)(rng));
    }
    return out;
}

std::vector<i32> random_labels(std::size_t n, std::uint32_t seed)
{
    std::mt19937 rng(seed);
    std::vector<i32> out(n);
    for (i32& v : out) v = std::uniform_int_distribution<i32>(0, 9)(rng);
    return out;
}

std::uint16_t bits(bf16 v) { return tenet::internal::bit_cast<std::uint16_t>(v); }

// bf16 encoding u as a double: the top half of an f32.
double bf16_value(std::uint16_t u)
{
    return static_cast<double>(tenet::internal::bit_cast<float>(static_cast<std::uint32_t>(u) << 16));
}

// No bf16 neighbour of v (one encoding up or down) is closer to exact.
bool nearest_bf16(bf16 v, double exact)
{
    const std::uint16_t u = bits(v);
    const double here = std::fabs(bf16_value(u) - exact);
    return !(here > std::fabs(bf16_value(static_cast<std::uint16_t>(u + 1)) - exact)) &&
           !(here > std::fabs(bf16_value(static_cast<std::uint16_t>(u - 1)) - exact));
}

// Whether `stored` is what a batch of storage S must hold for feature v.
template <class S, class V>
bool stored_as(S stored, V v)
{
    const double exact = static_cast<double>(v);  // exact for every V used here
    if constexpr (std::is_same_v<S, V>) return std::memcmp(&stored, &v, sizeof v) == 0;
    else if constexpr (std::is_same_v<S, f32>) return stored == static_cast<float>(exact);  // one IEEE rounding
    else if constexpr (std::is_same_v<S, bf16>) return nearest_bf16(stored, exact) && (exact != 0 || bits(stored) == 0);
    else static_assert(std::is_same_v<S, V>, "a storage type this test has no reference for");
}

bool is_zero(const void* p, std::size_t bytes)
{
    const auto* b = static_cast<const unsigned char*>(p);
    return std::all_of(b, b + bytes, [](unsigned char c) { return c == 0; });
}

// One epoch's batches, copied out.
template <class Loader>
struct epoch_copy {
    using storage = std::remove_pointer_t<decltype(std::declval<typename Loader::batch>().x_data())>;
    std::vector<std::vector<storage>> x;
    std::vector<std::vector<typename Loader::target_type>> targets;
    std::vector<std::vector<i32>> valid;
    std::vector<std::size_t> rows;
};

template <class Loader>
epoch_copy<Loader> read_epoch(Loader& loader, std::uint64_t seed, std::uint64_t epoch, bool shuffle = true)
{
    constexpr std::size_t batch = Loader::x_shape::extents[0];
    constexpr std::size_t xs = Loader::x_shape::numel, ts = Loader::targets_shape::numel;
    epoch_copy<Loader> out;
    typename Loader::batch b;
    loader.start_epoch(seed, epoch, shuffle);
    while (loader.next(b)) {
        out.x.emplace_back(b.x_data(), b.x_data() + xs);
        out.targets.emplace_back(b.targets().data(), b.targets().data() + ts);
        out.valid.emplace_back(b.valid().data(), b.valid().data() + batch);
        out.rows.push_back(b.rows());
    }
    return out;
}

// Every batch of a one-rank epoch against the dataset read in `order`:
// row r of batch b is sample order[b * Batch + r], or padding (all zero,
// valid 0) past the end.
template <class Loader, class Dataset>
void check_epoch(const epoch_copy<Loader>& e, const Dataset& set, const std::vector<std::uint32_t>& order)
{
    constexpr std::size_t batch = Loader::x_shape::extents[0];
    constexpr std::size_t fs = Dataset::feature_size, ts = Dataset::target_size;
    using target = typename Loader::target_type;
    const std::size_t n = set.size();
    REQUIRE(order.size() == n);
    REQUIRE(e.x.size() == (n + batch - 1) / batch);
    for (std::size_t b = 0; b < e.x.size(); ++b) {
        CAPTURE(b);
        CHECK(e.rows[b] == std::min(batch, n - b * batch));
        for (std::size_t r = 0; r < batch; ++r) {
            CAPTURE(r);
            const std::size_t at = b * batch + r;
            if (at >= n) {
                CHECK(is_zero(&e.x[b][r * fs], fs * sizeof(e.x[b][0])));
                CHECK(is_zero(&e.targets[b][r * ts], ts * sizeof(target)));
                CHECK(e.valid[b][r] == 0);
                continue;
            }
            const std::size_t sample = order[at];
            for (std::size_t f = 0; f < fs; ++f) CHECK(stored_as(e.x[b][r * fs + f], set.features()[sample * fs + f]));
            for (std::size_t k = 0; k < ts; ++k) {
                const auto t = set.targets()[sample * ts + k];
                if constexpr (std::is_same_v<target, i32>) CHECK(e.targets[b][r * ts + k] == static_cast<int>(t));
                else CHECK(std::memcmp(&e.targets[b][r * ts + k], &t, sizeof t) == 0);
            }
            CHECK(e.valid[b][r] == 1);
        }
    }
}

std::vector<std::uint32_t> in_order(std::size_t n)
{
    std::vector<std::uint32_t> order(n);
    for (std::size_t i = 0; i < n; ++i) order[i] = static_cast<std::uint32_t>(i);
    return order;
}

}  // namespace

TEST_CASE("array_dataset from vectors: sizes, spans, and mismatches naming both counts")
{
    using set = array_dataset<f32, i32, Shape<3, 4, 2>>;
    static_assert(set::feature_size == 24 && set::target_size == 1);
    const std::vector<f32> features = random_values<f32>(5 * 24, 1);
    const std::vector<i32> labels = random_labels(5, 2);
    const set s(features, labels);
    CHECK(s.size() == 5);
    CHECK(std::equal(s.features().begin(), s.features().end(), features.begin(), features.end()));
    CHECK(std::equal(s.targets().begin(), s.targets().end(), labels.begin(), labels.end()));
    CHECK(set().size() == 0);

    const std::string short_features =
        message_of<error>([&] { (void)set(std::vector<f32>(features.begin(), features.end() - 1), labels); });
    CHECK(contains(short_features, "tenet: array_dataset"));
    CHECK(contains(short_features, "need 120 feature values"));
    CHECK(contains(short_features, "found 119"));
    CHECK(contains(short_features, "Shape<3,4,2>"));
    CHECK_THROWS_AS(set(features, std::vector<i32>(6, 0)), error);

    using pairs = array_dataset<f64, f32, Shape<2>, Shape<2>>;
    const std::string odd = message_of<error>([] { (void)pairs(std::vector<f64>(6), std::vector<f32>(5)); });
    CHECK(contains(odd, "5 target values are not a whole number of Shape<2> targets"));
    CHECK(pairs(std::vector<f64>(6), std::vector<f32>(6)).size() == 3);
}

TEST_CASE("array_loader: the permutation's order, new each epoch, the same for two loaders, padded at the end")
{
    using set = array_dataset<f32, i32, Shape<5>>;
    const set s(random_values<f32>(103 * 5, 3), random_labels(103, 4));
    using loader_t = array_loader<f32, 16, set, Host>;
    static_assert(std::is_same_v<loader_t::x_shape, Shape<16, 5>>);
    static_assert(std::is_same_v<loader_t::targets_shape, Shape<16>>);
    static_assert(std::is_same_v<loader_t::target_type, i32>);
    loader_t loader(s), twin(s);
    CHECK(loader.batches_per_epoch() == 7);  // 6 full batches and 7 rows

    for (std::uint64_t epoch : {0u, 1u}) {
        CAPTURE(epoch);
        // slot 0 held the full batch 4 when the padded batch 6 is written
        // into it: stale rows would show
        const auto e = read_epoch(loader, 99, epoch);
        check_epoch(e, s, permutation(103, 99, epoch));
        CHECK(e.x == read_epoch(twin, 99, epoch).x);
        CHECK(e.targets == read_epoch(twin, 99, epoch).targets);
    }
    CHECK(read_epoch(loader, 99, 0).x != read_epoch(loader, 99, 1).x);
    CHECK(read_epoch(loader, 99, 0).x != read_epoch(loader, 98, 0).x);
    check_epoch(read_epoch(loader, 99, 0, false), s, in_order(103));

    typename loader_t::batch b;
    CHECK_FALSE(loader.next(b));  // at the end of the epoch: b untouched
    CHECK(b.x_data() == nullptr);
    CHECK(b.rows() == 0);
}

namespace {

template <class B>
concept has_x_view = requires(const B& b) { b.x(); };

// Rank-3 features of type F as storage S: every batch against the
// reference, and the x() view's indices against row-major offsets.
template <class F, class S>
void check_conversion(std::uint32_t seed)
{
    CAPTURE(seed);
    using set = array_dataset<F, i32, Shape<3, 4, 2>>;
    std::vector<F> features = random_values<F>(37 * 24, seed);
    // Doubles that round to a bf16 tie in f32: rounding through f32 would
    // land on the even neighbour instead of the nearest bf16.
    if constexpr (std::is_same_v<F, f64>)
        for (std::size_t i = 0; i < features.size(); i += 7)
            features[i] = std::ldexp(1.0 + 0x1p-8 + 0x1p-30, static_cast<int>(i % 5) - 2) * (i % 2 ? -1 : 1);
    const set s(std::move(features), random_labels(37, seed + 1));
    using loader_t = array_loader<S, 8, set, Host>;
    static_assert(std::is_same_v<typename loader_t::x_shape, Shape<8, 3, 4, 2>>);
    loader_t loader(s);
    for (std::uint64_t epoch : {3u, 4u}) check_epoch(read_epoch(loader, 5, epoch), s, permutation(37, 5, epoch));

    if constexpr (element<S>) {
        const auto order = permutation(37, 5, 0);
        typename loader_t::batch b;
        loader.start_epoch(5, 0);
        REQUIRE(loader.next(b));
        for (std::size_t r = 0; r < 8; ++r)
            for (std::size_t i = 0; i < 3; ++i)
                for (std::size_t j = 0; j < 4; ++j)
                    for (std::size_t k = 0; k < 2; ++k)
                        CHECK(stored_as(b.x()(r, i, j, k), s.features()[order[r] * 24 + i * 8 + j * 2 + k]));
    }
}

}  // namespace

TEST_CASE("array_loader: features of each type into f32, bf16 and raw u8 storage")
{
    check_conversion<f32, f32>(10);
    check_conversion<f64, f32>(11);  // rounded once
    check_conversion<i32, f32>(12);
    check_conversion<std::uint8_t, f32>(13);
    check_conversion<f32, bf16>(14);
    check_conversion<f64, bf16>(15);  // rounded once, from f64 (not through f32)
    check_conversion<std::uint8_t, bf16>(16);
    check_conversion<std::uint8_t, std::uint8_t>(17);  // the bytes as they are

    using raw = array_dataset<std::uint8_t, i32, Shape<3, 4, 2>>;
    static_assert(!has_x_view<array_loader<std::uint8_t, 8, raw, Host>::batch>,
                  "u8 is no element type: raw batches have x_data() and pixels() only");
    static_assert(std::is_same_v<decltype(std::declval<array_loader<std::uint8_t, 8, raw, Host>::batch>().pixels()),
                                 pixel_batch<Shape<8, 3, 4, 2>, Host>>);
    static_assert(has_x_view<array_loader<f32, 8, raw, Host>::batch>);
}

namespace {

// Targets of type T and shape TS, with rank-1 features.
template <class T, class TS>
void check_targets(std::uint32_t seed)
{
    CAPTURE(seed);
    using set = array_dataset<f32, T, Shape<2>, TS>;
    std::vector<T> targets;
    if constexpr (std::is_same_v<T, bf16>)
        for (const f32 v : random_values<f32>(29 * TS::numel, seed)) targets.push_back(convert<bf16>(v));
    else targets = random_values<T>(29 * TS::numel, seed);
    const set s(random_values<f32>(29 * 2, seed + 1), targets);
    using loader_t = array_loader<f32, 8, set, Host>;
    using expected_target = std::conditional_t<is_floating_v<T>, T, i32>;
    static_assert(std::is_same_v<typename loader_t::target_type, expected_target>);
    using batch_shape = typename loader_t::targets_view::shape;
    static_assert(batch_shape::rank == TS::rank + 1 && batch_shape::extents[0] == 8 &&
                  batch_shape::numel == 8 * TS::numel);
    loader_t loader(s);
    check_epoch(read_epoch(loader, 8, 1), s, permutation(29, 8, 1));
}

}  // namespace

TEST_CASE("array_loader: batches large enough to be written across cores (40 x 1,024 features), every value in place")
{
    using set = array_dataset<f64, i32, Shape<32, 32>>;
    const set s(random_values<f64>(90 * 1024, 41), random_labels(90, 42));
    array_loader<bf16, 40, set, Host> loader(s);
    check_epoch(read_epoch(loader, 6, 2), s, permutation(90, 6, 2));  // two full batches, then 10 rows
}

TEST_CASE("array_loader: class labels become i32, floating targets of any shape stay as they are")
{
    check_targets<i32, Shape<>>(20);
    check_targets<i8, Shape<>>(21);
    check_targets<std::uint8_t, Shape<>>(22);
    check_targets<i32, Shape<3>>(23);  // e.g. several labels per sample
    check_targets<f32, Shape<>>(24);
    check_targets<f32, Shape<2, 3>>(25);
    check_targets<f64, Shape<4>>(26);  // not rounded to f32
    check_targets<bf16, Shape<2>>(27);
}

TEST_CASE("array_loader: the same batches as batch_loader over the same pixels, labels, seed and shard")
{
    constexpr std::size_t n = 57, pixels = 6;
    mnist_split split;
    split.count = n;
    split.images = random_values<std::uint8_t>(n * pixels, 30);
    split.labels = random_labels(n, 31);
    using set = array_dataset<std::uint8_t, i32, Shape<pixels>>;
    const set s(split.images, split.labels);
    const auto identity = [](std::uint8_t p) { return static_cast<f32>(p); };
    for (const shard part : {shard{0, 1}, shard{1, 2}}) {
        CAPTURE(part.rank);
        batch_loader<f32, 8, pixels, Host> mnist(split, identity, current_stream(), part);
        array_loader<f32, 8, set, Host> arrays(s, current_stream(), part);
        REQUIRE(arrays.batches_per_epoch() == mnist.batches_per_epoch());
        for (std::uint64_t epoch : {0u, 1u}) {
            typename decltype(mnist)::batch a;
            typename decltype(arrays)::batch b;
            mnist.start_epoch(12, epoch);
            arrays.start_epoch(12, epoch);
            while (mnist.next(a)) {
                REQUIRE(arrays.next(b));
                CHECK(a.rows() == b.rows());
                CHECK(std::memcmp(a.x().data(), b.x().data(), 8 * pixels * sizeof(f32)) == 0);
                CHECK(std::memcmp(a.labels().data(), b.targets().data(), 8 * sizeof(i32)) == 0);
                CHECK(std::memcmp(a.valid().data(), b.valid().data(), 8 * sizeof(i32)) == 0);
            }
            CHECK_FALSE(arrays.next(b));
        }
    }
}

namespace {

constexpr std::size_t shard_rows = 8;

// Features whose first value is the sample's index, so a row names its sample.
array_dataset<i32, i32, Shape<4>> tagged(std::size_t n, std::uint32_t seed)
{
    std::vector<i32> features = random_values<i32>(n * 4, seed);
    for (std::size_t i = 0; i < n; ++i) features[i * 4] = static_cast<i32>(i);
    return {std::move(features), random_labels(n, seed + 1)};
}

// World ranks of shard_rows rows each against one loader of the global
// batch (shard_rows * World rows) over the same dataset and order.
template <std::size_t World>
void check_shards(const array_dataset<i32, i32, Shape<4>>& s, std::uint64_t epoch)
{
    CAPTURE(World);
    using set = array_dataset<i32, i32, Shape<4>>;
    array_loader<f32, shard_rows * World, set, Host> whole(s);
    const auto all = read_epoch(whole, 7, epoch);
    std::vector<int> seen(s.size(), 0);
    for (std::size_t rank = 0; rank < World; ++rank) {
        CAPTURE(rank);
        array_loader<f32, shard_rows, set, Host> part(s, current_stream(), shard{rank, World});
        CHECK(part.part().rank == rank);
        CHECK(part.batches_per_epoch() == whole.batches_per_epoch());
        CHECK(part.batches_per_epoch() == (s.size() + shard_rows * World - 1) / (shard_rows * World));
        const auto mine = read_epoch(part, 7, epoch);
        REQUIRE(mine.x.size() == all.x.size());
        for (std::size_t b = 0; b < mine.x.size(); ++b) {
            CAPTURE(b);
            // this rank's rows are rows [rank * shard_rows, (rank + 1) * shard_rows) of the global batch
            const auto from = [&](const auto& rows, std::size_t width) {
                return std::vector(rows[b].begin() + static_cast<std::ptrdiff_t>(rank * shard_rows * width),
                                   rows[b].begin() + static_cast<std::ptrdiff_t>((rank + 1) * shard_rows * width));
            };
            CHECK(mine.x[b] == from(all.x, 4));
            CHECK(mine.targets[b] == from(all.targets, 1));
            CHECK(mine.valid[b] == from(all.valid, 1));
            CHECK(mine.rows[b] == std::size_t(std::count(mine.valid[b].begin(), mine.valid[b].end(), 1)));
            for (std::size_t r = 0; r < mine.rows[b]; ++r) ++seen[static_cast<std::size_t>(mine.x[b][r * 4])];
        }
    }
    CHECK(std::count(seen.begin(), seen.end(), 1) == static_cast<std::ptrdiff_t>(s.size()));
}

}  // namespace

TEST_CASE("array_loader shards: 1 to 4 ranks, each its part of every global batch, every sample once per epoch")
{
    for (const std::size_t n : {103u, 96u, 5u}) {
        CAPTURE(n);
        const auto s = tagged(n, static_cast<std::uint32_t>(40 + n));
        // the one-rank loader of the global batch is itself checked against the permutation
        array_loader<f32, shard_rows * 3, array_dataset<i32, i32, Shape<4>>, Host> whole(s);
        check_epoch(read_epoch(whole, 7, 1), s, permutation(n, 7, 1));
        for (std::uint64_t epoch : {0u, 1u}) {
            CAPTURE(epoch);
            check_shards<1>(s, epoch);
            check_shards<2>(s, epoch);
            check_shards<3>(s, epoch);
            check_shards<4>(s, epoch);
        }
    }
    // 103 samples on 4 ranks: 4 global batches of 32, the last with 7 real
    // rows, all on rank 0; rank 3's part of it is all padding
    const auto s = tagged(103, 50);
    array_loader<f32, shard_rows, array_dataset<i32, i32, Shape<4>>, Host> last(s, current_stream(), shard{3, 4});
    const auto e = read_epoch(last, 7, 0);
    REQUIRE(e.rows.size() == 4);
    CHECK(e.rows == std::vector<std::size_t>{8, 8, 8, 0});
    CHECK(std::count(e.valid[3].begin(), e.valid[3].end(), 0) == 8);
}

namespace {

using npy_set = array_dataset<f32, i32, Shape<3, 4, 2>>;

// A |u1 (uint8) .npy file, which save_npy does not write: the header as
// NumPy lays it out, padded so that the data starts at a multiple of 64.
void save_u8_npy(const std::string& path, const std::vector<std::uint8_t>& data, const std::string& shape)
{
    std::string header = "{'descr': '|u1', 'fortran_order': False, 'shape': " + shape + ", }";
    const std::size_t total = (10 + header.size() + 1 + 63) / 64 * 64;  // magic, version, length, header, '\n'
    header.append(total - 10 - header.size() - 1, ' ');
    header += '\n';
    std::ofstream out(path, std::ios::binary);
    out.write("\x93NUMPY\x01\x00", 8);
    out.put(static_cast<char>(header.size() & 0xFF));
    out.put(static_cast<char>(header.size() >> 8));
    out << header;
    out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
}

}  // namespace

TEST_CASE("array_dataset::from_npy: round trips, and shapes, counts and inexact elements refused by name")
{
    const testing::scratch_dir dir("tenet-array-dataset");
    const std::vector<f32> features = random_values<f32>(10 * 24, 60);
    const std::vector<i32> labels = random_labels(10, 61);
    const std::vector<std::size_t> x_shape{10, 3, 4, 2}, y_shape{10};
    io::save_npy(dir.file("x.npy"), features.data(), x_shape);
    io::save_npy(dir.file("y.npy"), labels.data(), y_shape);

    const npy_set s = npy_set::from_npy(dir.file("x.npy"), dir.file("y.npy"));
    CHECK(s.size() == 10);
    CHECK(std::equal(s.features().begin(), s.features().end(), features.begin(), features.end()));
    CHECK(std::equal(s.targets().begin(), s.targets().end(), labels.begin(), labels.end()));

    // f64 features rounded to f32 once; f64 targets kept exactly with their shape
    const std::vector<f64> wide = random_values<f64>(10 * 24, 62);
    io::save_npy(dir.file("x64.npy"), wide.data(), x_shape);
    const std::vector<std::size_t> pair_shape{10, 12};
    const std::vector<f64> values = random_values<f64>(10 * 12, 63);
    io::save_npy(dir.file("pairs.npy"), values.data(), pair_shape);
    using regression = array_dataset<f32, f64, Shape<3, 4, 2>, Shape<12>>;
    const regression r = regression::from_npy(dir.file("x64.npy"), dir.file("pairs.npy"));
    for (std::size_t i = 0; i < wide.size(); ++i) CHECK(r.features()[i] == static_cast<float>(wide[i]));
    CHECK(std::equal(r.targets().begin(), r.targets().end(), values.begin(), values.end()));

    // raw bytes: from a |u1 file, and from an integer file within [0, 255]
    using raw = array_dataset<std::uint8_t, std::uint8_t, Shape<3, 4, 2>>;
    const std::vector<std::uint8_t> pixels = random_values<std::uint8_t>(10 * 24, 64);
    save_u8_npy(dir.file("u8.npy"), pixels, "(10, 3, 4, 2)");
    const std::vector<i32> small = random_values<i32>(10, 65);
    std::vector<i32> classes(10);
    for (std::size_t i = 0; i < 10; ++i) classes[i] = small[i] + 100;  // 0 .. 200
    io::save_npy(dir.file("classes.npy"), classes.data(), y_shape);
    const raw bytes = raw::from_npy(dir.file("u8.npy"), dir.file("classes.npy"));
    CHECK(std::equal(bytes.features().begin(), bytes.features().end(), pixels.begin(), pixels.end()));
    for (std::size_t i = 0; i < 10; ++i) CHECK(int(bytes.targets()[i]) == classes[i]);
    classes[7] = 256;
    io::save_npy(dir.file("big.npy"), classes.data(), y_shape);
    const std::string big = message_of<format_error>([&] { raw::from_npy(dir.file("u8.npy"), dir.file("big.npy")); });
    CHECK(contains(big, "big.npy"));
    CHECK(contains(big, "element 7 is 256, outside u8's range [0, 255]"));

    // shapes
    const std::vector<std::size_t> wrong_sample{10, 3, 4, 3};
    io::save_npy(dir.file("x343.npy"), random_values<f32>(10 * 36, 66).data(), wrong_sample);
    const auto load_error = [&](const char* x, const char* y) {
        return message_of<format_error>([&] { npy_set::from_npy(dir.file(x), dir.file(y)); });
    };
    const std::string sample = load_error("x343.npy", "y.npy");
    CHECK(contains(sample, "x343.npy: array_dataset: the features file holds shape [10, 3, 4, 3]"));
    CHECK(contains(sample, "expected [N, 3, 4, 2] (N samples of Shape<3,4,2>)"));
    const std::vector<std::size_t> flat{10, 24};
    io::save_npy(dir.file("flat.npy"), features.data(), flat);
    CHECK_THROWS_AS(npy_set::from_npy(dir.file("flat.npy"), dir.file("y.npy")), format_error);

    const std::vector<std::size_t> nine{9};
    io::save_npy(dir.file("y9.npy"), labels.data(), nine);
    const std::string count = load_error("x.npy", "y9.npy");
    CHECK(contains(count, "y9.npy: array_dataset: the targets file holds shape [9], expected [10]"));
    CHECK(contains(count, "a Shape<> target for each of the features file's 10 samples"));
    const std::vector<std::size_t> column{10, 1};
    io::save_npy(dir.file("y10x1.npy"), labels.data(), column);
    CHECK_THROWS_AS(npy_set::from_npy(dir.file("x.npy"), dir.file("y10x1.npy")), format_error);

    // floats are not rounded into labels; a missing file is an io_error
    io::save_npy(dir.file("yf.npy"), features.data(), y_shape);
    const std::string floats = load_error("x.npy", "yf.npy");
    CHECK(contains(floats, "yf.npy"));
    CHECK(contains(floats, "'<f4' data cannot be loaded as i32"));
    CHECK_THROWS_AS(npy_set::from_npy(dir.file("none.npy"), dir.file("y.npy")), io_error);

    // an empty dataset is a dataset
    const std::vector<std::size_t> none_x{0, 3, 4, 2}, none_y{0};
    io::save_npy(dir.file("x0.npy"), features.data(), none_x);
    io::save_npy(dir.file("y0.npy"), labels.data(), none_y);
    const npy_set empty = npy_set::from_npy(dir.file("x0.npy"), dir.file("y0.npy"));
    CHECK(empty.size() == 0);
    array_loader<f32, 4, npy_set, Host> loader(empty);
    typename decltype(loader)::batch b;
    loader.start_epoch(1, 1);
    CHECK(loader.batches_per_epoch() == 0);
    CHECK_FALSE(loader.next(b));
}

TEST_CASE("array_loader: misuse is a tenet::error naming the loader")
{
    using set = array_dataset<f32, i32, Shape<5>>;
    const set s(random_values<f32>(20 * 5, 70), random_labels(20, 71));
    using loader_t = array_loader<f32, 4, set, Host>;

    loader_t fresh(s);
    typename loader_t::batch b;
    CHECK(contains(message_of<error>([&] { fresh.next(b); }), "tenet: array_loader::next called before start_epoch"));

    const std::string rank = message_of<error>([&] { (void)loader_t(s, current_stream(), shard{2, 2}); });
    CHECK(contains(rank, "tenet: array_loader: shard rank 2 of 2 ranks"));
    CHECK_THROWS_AS(loader_t(s, current_stream(), shard{0, 0}), error);

    // a temporary dataset would dangle: only lvalues are accepted
    static_assert(!std::is_constructible_v<loader_t, set&&>);
    static_assert(std::is_constructible_v<loader_t, const set&>);
    static_assert(!std::is_copy_constructible_v<loader_t>);

    if (!has_device()) CHECK_THROWS_AS((array_loader<f32, 4, set, Device>(s)), no_device_error);
}

TEST_CASE("batch_pipeline: a loader of one's own writes rows; the pipeline pads and writes valid after the payload")
{
    // payload: one i32 per row, the sample's index plus 1000
    constexpr std::size_t rows = 4, payload = rows * sizeof(i32);
    const std::size_t valid_at = batch_pipeline<Host>::valid_offset(payload);
    CHECK(valid_at % 256 == 0);
    CHECK(valid_at >= payload);
    batch_pipeline<Host> pipe(10, rows, payload, current_stream(), shard{1, 2}, "my_loader");
    CHECK(pipe.batches_per_epoch() == 2);  // global batches of 8: [0, 8) and [8, 10)
    const auto fill = [](std::byte* base, std::span<const std::uint32_t> samples) {
        for (std::size_t r = 0; r < samples.size(); ++r)
            reinterpret_cast<i32*>(base)[r] = static_cast<i32>(samples[r]) + 1000;
    };
    const auto order = permutation(10, 4, 2);
    batch_pipeline<Host>::slot s;
    pipe.start_epoch(4, 2, true, fill);
    std::vector<std::vector<i32>> seen;
    while (pipe.next(s, fill)) {
        const auto* x = reinterpret_cast<const i32*>(s.base);
        const auto* valid = reinterpret_cast<const i32*>(s.base + valid_at);
        seen.push_back(std::vector<i32>(x, x + rows));
        seen.push_back(std::vector<i32>(valid, valid + rows));
    }
    // rank 1 takes rows [4, 8) of each global batch; of the second, none is real
    REQUIRE(seen.size() == 4);
    for (std::size_t r = 0; r < rows; ++r) CHECK(seen[0][r] == static_cast<i32>(order[4 + r]) + 1000);
    CHECK(seen[1] == std::vector<i32>{1, 1, 1, 1});
    CHECK(seen[2] == std::vector<i32>{0, 0, 0, 0});
    CHECK(seen[3] == std::vector<i32>{0, 0, 0, 0});

    const std::string zero = message_of<error>([] { batch_pipeline<Host>(10, 0, 16, current_stream(), {}, "mine"); });
    CHECK(contains(zero, "tenet: mine: a batch of 0 rows"));
}
