// Exporting pruned weights: CSR and 2:4 forms against hand-built references
// (round trips bitwise, kept zeros, empty and full rows, every malformed
// structure rejected), sparse inference against a dense float loop in the
// same order (bitwise) and against model.forward (within rounding), and the
// sparse file: round trips, and damaged or foreign files refused with the
// model and masks unchanged. Masks are drawn here, independently of the
// selection code.
#include "tensor_testing.hpp"

#include <tenet/prune/compressed_24.hpp>
#include <tenet/prune/csr.hpp>
#include <tenet/prune/masks.hpp>
#include <tenet/prune/sparse_file.hpp>
#include <tenet/prune/sparse_model.hpp>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <ratio>
#include <string>
#include <vector>

using namespace tenet;

namespace {

namespace fs = std::filesystem;

// Two activations, a Dropout between a ReLU and the next Linear, and a fused
// Linear-GELU-Linear: units (16 -> 12, relu), (12 -> 8, gelu), (8 -> 4).
// 70 rows: a full block of the sparse kernel (64 rows) and a padded one.
using spec = nn::Sequential<nn::Linear<16, 12>, nn::ReLU, nn::Dropout<std::ratio<1, 4>>, nn::Linear<12, 8>, nn::GELU,
                            nn::Linear<8, 4>>;
using input = Shape<5, 14, 16>;
using net_t = nn::model<spec, fp32, input, Host>;
using masks_t = prune::masks<net_t>;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b)
{
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

// where(keep, w, +0), element by element.
template <class T>
std::vector<T> masked(const T* w, const bool* keep, std::size_t n)
{
    std::vector<T> out(n, convert<T>(0.0f));
    for (std::size_t i = 0; i < n; ++i)
        if (keep[i]) out[i] = w[i];
    return out;
}

// Each element kept with probability p.
void random_mask(bool* keep, std::size_t n, double p, std::mt19937_64& rng)
{
    std::bernoulli_distribution kept(p);
    for (std::size_t i = 0; i < n; ++i) keep[i] = kept(rng);
}

// A 2:4 mask: per group of 4 along each row, 2 random positions kept, or
// (one group in four) 0 or 1 of them.
void random_24_mask(bool* keep, std::size_t n, std::mt19937_64& rng)
{
    std::uniform_int_distribution<int> position(0, 3), fewer(0, 7);
    for (std::size_t g = 0; g < n; g += 4) {
        std::fill(keep + g, keep + g + 4, false);
        const int count = std::min(2, fewer(rng));  // 0: 1/8, 1: 1/8, 2: 3/4
        for (int kept = 0; kept < count;) {
            const int p = position(rng);
            if (!keep[g + p]) keep[g + p] = true, ++kept;
        }
    }
}

// The model's flat parameters and masks, to see that nothing changed.
struct snapshot {
    std::vector<f32> values;
    std::vector<char> keep;
    explicit snapshot(masks_t& m)
        : values(m.model().parameters(), m.model().parameters() + net_t::flat_numel), keep(m.to_host())
    {
    }
    bool operator==(const snapshot& o) const { return same_bits(values, o.values) && keep == o.keep; }
};

struct scratch_dir {
    fs::path path = fs::temp_directory_path() / ("tenet_prune_export_" + std::to_string(::getpid()));
    scratch_dir() { fs::create_directories(path); }
    ~scratch_dir()
    {
        std::error_code ignored;
        fs::remove_all(path, ignored);
    }
    std::string file(const std::string& name) const { return (path / name).string(); }
};

std::vector<char> read_bytes(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
void write_bytes(const std::string& path, const std::vector<char>& bytes)
{
    std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// The dense-with-mask forward in plain float loops: per output, k ascending
// from +0 over EVERY input (pruned weights are zeros), then + bias, then the
// activation. Returns [rows, 4].
std::vector<f32> dense_reference(masks_t& m, const f32* x)
{
    constexpr std::size_t rows = 70;
    std::vector<std::vector<f32>> weights, biases;
    m.for_each([&](const std::string&, auto w, auto keep) {
        weights.push_back(masked(w.data(), keep.data(), decltype(w)::shape::numel));
    });
    m.model().for_each_parameter([&](const std::string&, auto v, auto) {
        if constexpr (decltype(v)::shape::rank == 1) biases.emplace_back(v.data(), v.data() + decltype(v)::shape::numel);
    });
    std::vector<f32> h(x, x + rows * 16);
    for (std::size_t u = 0; u < 3; ++u) {
        const std::size_t out = biases[u].size(), in = weights[u].size() / out;
        std::vector<f32> next(rows * out);
        for (std::size_t r = 0; r < rows; ++r)
            for (std::size_t o = 0; o < out; ++o) {
                f32 acc = 0.0f;
                for (std::size_t k = 0; k < in; ++k) acc += weights[u][o * in + k] * h[r * in + k];
                const f32 z = acc + biases[u][o];
                next[r * out + o] = u == 0 ? ops::relu{}(z) : u == 1 ? ops::gelu{}(z) : z;
            }
        h = std::move(next);
    }
    return h;
}

}  // namespace

TEST_CASE("to_csr: the mask's structure, kept zeros included; to_dense is where(mask, w, 0) bitwise")
{
    std::mt19937_64 rng(101);
    for (const double p : {0.0, 0.35, 0.8, 1.0}) {
        CAPTURE(p);
        Tensor<f32, Shape<7, 10>, Host> w;
        Tensor<bool, Shape<7, 10>, Host> keep;
        testing::fill_random(w, rng());  // NaN and infinities too: copied bit for bit
        random_mask(keep.data(), 70, p, rng);
        std::fill(keep.data() + 20, keep.data() + 30, false);  // row 2 empty
        std::fill(keep.data() + 50, keep.data() + 60, true);   // row 5 full
        w.data()[51] = 0.0f;                                    // kept zeros
        w.data()[52] = -0.0f;

        const prune::csr_matrix<f32> csr = prune::to_csr(w, keep);
        std::vector<std::uint32_t> offsets{0}, columns;
        std::vector<f32> values;
        for (std::size_t r = 0; r < 7; ++r) {
            for (std::size_t c = 0; c < 10; ++c)
                if (keep.data()[r * 10 + c]) {
                    columns.push_back(static_cast<std::uint32_t>(c));
                    values.push_back(w.data()[r * 10 + c]);
                }
            offsets.push_back(static_cast<std::uint32_t>(columns.size()));
        }
        CHECK(csr.rows == 7);
        CHECK(csr.cols == 10);
        CHECK(csr.row_offsets == offsets);
        CHECK(csr.columns == columns);
        CHECK(same_bits(csr.values, values));
        CHECK(csr.nonzeros() == columns.size());
        CHECK(csr.bytes() == 8 * 4 + columns.size() * (4 + 4));
        CHECK_NOTHROW(csr.check());
        CHECK(same_bits(csr.to_dense(), masked(w.data(), keep.data(), 70)));
    }

    SUBCASE("rank 3 is [everything but the last axis, last axis]; T is the weight's type")
    {
        Tensor<bf16, Shape<2, 3, 8>, Host> w;
        Tensor<bool, Shape<2, 3, 8>, Host> keep;
        testing::fill_random(w, 5);
        random_mask(keep.data(), 48, 0.5, rng);
        const auto csr = prune::to_csr(w, keep.view());
        static_assert(std::is_same_v<decltype(csr), const prune::csr_matrix<bf16>>);
        CHECK(csr.rows == 6);
        CHECK(csr.cols == 8);
        CHECK(csr.bytes() == 7 * 4 + csr.nonzeros() * (4 + 2));
        CHECK(csr.nonzeros() == static_cast<std::size_t>(std::count(keep.data(), keep.data() + 48, true)));
        CHECK(same_bits(csr.to_dense(), masked(w.data(), keep.data(), 48)));
    }
}

TEST_CASE("csr_matrix::check rejects each kind of malformed structure")
{
    // 3 x 5: row 0 keeps columns 1, 3; row 1 none; row 2 keeps 0, 2, 4.
    Tensor<f32, Shape<3, 5>, Host> w;
    Tensor<bool, Shape<3, 5>, Host> keep;
    testing::fill_random(w, 9);
    const bool pattern[15] = {0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 1};
    std::copy(pattern, pattern + 15, keep.data());
    const prune::csr_matrix<f32> good = prune::to_csr(w, keep);
    REQUIRE(good.row_offsets == std::vector<std::uint32_t>{0, 2, 2, 5});

    const auto rejects = [&](auto damage, const char* why) {
        CAPTURE(why);
        prune::csr_matrix<f32> bad = good;
        damage(bad);
        try {
            bad.check("weight 7");
            FAIL("accepted");
        } catch (const format_error& e) {
            CHECK(contains(e.what(), "tenet: weight 7: "));
            CHECK(contains(e.what(), why));
        }
        CHECK_THROWS_AS(bad.to_dense(), format_error);
    };
    rejects([](auto& c) { c.row_offsets.pop_back(); }, "row_offsets has 3 entries for 3 rows");
    rejects([](auto& c) { c.values.push_back(1.0f); }, "5 columns for 6 values");
    rejects([](auto& c) { c.row_offsets[0] = 1; }, "starts at 1");
    rejects([](auto& c) { c.row_offsets[1] = 3; }, "decrease at row 1 (3 then 2)");
    rejects([](auto& c) { c.row_offsets[3] = 4; }, "ends at 4 but there are 5 entries");
    rejects([](auto& c) { c.columns[4] = 5; }, "row 2: column 5 is outside the 5 columns");
    rejects([](auto& c) { c.columns[1] = 1; }, "row 0: columns 1 then 1 are not strictly increasing");
    rejects([](auto& c) { std::swap(c.columns[2], c.columns[3]); }, "row 2: columns 2 then 0");
    CHECK_NOTHROW(good.check());
}

TEST_CASE("compress_24: the layout by hand, and round trips of random 2:4 masks")
{
    SUBCASE("one row of three groups: two kept, one kept (a zero fills), none kept")
    {
        Tensor<f32, Shape<1, 12>, Host> w;
        Tensor<bool, Shape<1, 12>, Host> keep;
        for (int i = 0; i < 12; ++i) w.data()[i] = static_cast<f32>(i + 1);
        const bool pattern[12] = {0, 1, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0};
        std::copy(pattern, pattern + 12, keep.data());
        const prune::compressed_24<f32> c = prune::compress_24(w, keep);
        CHECK(c.values == std::vector<f32>{2, 4, 0, 7, 0, 0});
        // group 0: positions 1, 3 -> 0xD; group 1: 0 (filled), 2 -> 0x8; group 2: 0, 1 -> 0x4
        CHECK(c.indices == std::vector<std::uint8_t>{0x8D, 0x04});
        CHECK(c.bytes() == 6 * 4 + 2);
        CHECK(same_bits(c.to_dense(), masked(w.data(), keep.data(), 12)));
    }
    SUBCASE("random masks, kept zeros, an odd and an even group count, rank 3")
    {
        std::mt19937_64 rng(202);
        Tensor<f32, Shape<6, 12>, Host> w;
        Tensor<bool, Shape<6, 12>, Host> keep;
        testing::fill_random(w, 3);
        random_24_mask(keep.data(), 72, rng);
        for (std::size_t i = 0; i < 72; i += 7)
            if (keep.data()[i]) w.data()[i] = -0.0f;
        const auto c = prune::compress_24(w, keep);
        CHECK(c.rows == 6);
        CHECK(c.row_bytes() == 2);
        CHECK(c.bytes() == 36 * 4 + 12);
        CHECK_NOTHROW(c.check());
        CHECK(same_bits(c.to_dense(), masked(w.data(), keep.data(), 72)));
        for (std::size_t r = 0; r < 6; ++r)
            for (std::size_t g = 0; g < 3; ++g) {
                const unsigned n = c.nibble(r, g);
                for (unsigned i = 0; i < 4; ++i)
                    if (keep.data()[r * 12 + 4 * g + i]) CHECK(((n & 3u) == i || (n >> 2) == i));
            }

        Tensor<bf16, Shape<3, 2, 16>, Host> w3;
        Tensor<bool, Shape<3, 2, 16>, Host> keep3;
        testing::fill_random(w3, 4);
        random_24_mask(keep3.data(), 96, rng);
        const auto c3 = prune::compress_24(w3, keep3);
        CHECK(c3.rows == 6);
        CHECK(c3.row_bytes() == 2);
        CHECK(c3.bytes() == 48 * 2 + 12);
        CHECK(same_bits(c3.to_dense(), masked(w3.data(), keep3.data(), 96)));
    }
}

TEST_CASE("compressed_24::check rejects malformed forms; compress_24 rejects groups keeping more than two")
{
    Tensor<f32, Shape<2, 12>, Host> w;
    Tensor<bool, Shape<2, 12>, Host> keep;
    std::mt19937_64 rng(303);
    testing::fill_random(w, 6);
    random_24_mask(keep.data(), 24, rng);
    const prune::compressed_24<f32> good = prune::compress_24(w, keep);
    const auto rejects = [&](auto damage, const char* why) {
        CAPTURE(why);
        prune::compressed_24<f32> bad = good;
        damage(bad);
        CHECK_THROWS_WITH_AS(bad.check(), doctest::Contains(why), format_error);
        CHECK_THROWS_AS(bad.to_dense(), format_error);
    };
    rejects([](auto& c) { c.values.pop_back(); }, "11 values for 2 x 12");
    rejects([](auto& c) { c.indices.push_back(0); }, "5 index bytes for 2 rows of 2");
    rejects([](auto& c) { c.indices[2] = (c.indices[2] & 0xF0) | 0x5; }, "row 1, group 0: positions 1 and 1");
    rejects([](auto& c) { c.indices[1] = 0x07; }, "row 0, group 2: positions 3 and 1");
    rejects([](auto& c) { c.indices[3] |= 0x40; }, "row 1: the unused high nibble");
    rejects([](auto& c) { c.cols = 10; }, "10 columns: not a multiple of 4");
    CHECK_NOTHROW(good.check());

    std::fill(keep.data(), keep.data() + 24, false);
    keep.data()[12 + 8] = keep.data()[12 + 9] = keep.data()[12 + 11] = true;
    CHECK_THROWS_WITH_AS(prune::compress_24(w, keep),
                         "tenet: prune::compress_24: row 1, group 2 (columns 8 to 11) keeps 3 weights; 2:4 keeps at most 2",
                         error);
    keep.data()[12 + 10] = true;
    CHECK_THROWS_WITH_AS(prune::compress_24(w, keep), doctest::Contains("keeps 4 weights"), error);
}

TEST_CASE("sparse_model: bitwise the dense-with-mask float loop, and model.forward within rounding")
{
    net_t net;
    net.eval();
    masks_t m(net);
    Tensor<f32, input, Host> x;
    Tensor<f64, input, Host> x64;
    std::mt19937_64 rng(404);
    std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
    for (std::size_t i = 0; i < input::numel; ++i) x64.data()[i] = x.data()[i] = uniform(rng);

    for (const double p : {1.0, 0.5, 0.1, 0.0}) {  // kept fraction
        CAPTURE(p);
        net.initialize(7);
        m.reset();
        m.for_each([&](const std::string&, auto, auto keep) {
            random_mask(keep.data(), decltype(keep)::shape::numel, p, rng);
        });
        std::size_t kept = 0;
        for (const auto& q : m.prunable())
            kept += static_cast<std::size_t>(std::count(m.data() + q.offset, m.data() + q.offset + q.numel, true));

        // Built before the masks are applied: pruned weights are left out whatever their values.
        prune::sparse_model<spec, input> sparse(net, m);
        CHECK(sparse.unit_count() == 3);
        CHECK(sparse.unit<0>().activation == linalg::activation::relu);
        CHECK(sparse.unit<1>().activation == linalg::activation::gelu);
        CHECK(sparse.unit<2>().activation == linalg::activation::none);
        CHECK(sparse.unit<1>().weight.rows == 8);
        CHECK(sparse.unit<1>().weight.cols == 12);
        CHECK(sparse.nonzeros() == kept);
        CHECK(sparse.bytes() == (13 + 9 + 5) * 4 + kept * 8 + (12 + 8 + 4) * 4);

        std::memset(const_cast<f32*>(sparse.output().data()), 0xA5, 70 * 4 * sizeof(f32));
        const auto& y = sparse.forward(x);
        const std::vector<f32> got(y.data(), y.data() + 280);
        const std::vector<f32> want = dense_reference(m, x.data());
        CHECK(same_bits(got, want));
        std::memset(const_cast<f32*>(sparse.output().data()), 0xA5, 70 * 4 * sizeof(f32));
        CHECK(same_bits(std::vector<f32>(sparse.forward(x64).data(), sparse.forward(x64).data() + 280), want));

        m.apply();
        const auto& dense = net.forward(x);
        mismatch_log log;
        for (std::size_t i = 0; i < 280; ++i)
            if (!(std::fabs(dense.data()[i] - got[i]) <= 1e-5f * (1.0f + std::fabs(got[i]))))
                log.add("%zu: model %.9g, sparse %.9g", i, double(dense.data()[i]), double(got[i]));
        CHECK_NO_MISMATCH(log);
    }
}

TEST_CASE("sparse file: round trips in CSR and 2:4")
{
    scratch_dir dir;
    const std::string path = dir.file("net.sparse");
    net_t net(21);
    masks_t m(net);
    std::mt19937_64 rng(505);

    SUBCASE("csr: parameters zero where pruned, kept zeros stay kept, masks exact")
    {
        m.for_each([&](const std::string&, auto w, auto keep) {
            random_mask(keep.data(), decltype(keep)::shape::numel, 0.4, rng);
            w.data()[3] = 0.0f;  // kept or not: the mask says
            keep.data()[3] = true;
        });
        const std::vector<char> keep = m.to_host();
        std::vector<f32> want = snapshot(m).values;
        for (const auto& q : m.prunable())
            for (std::size_t i = q.offset; i < q.offset + q.numel; ++i)
                if (!keep[i]) want[i] = 0.0f;
        prune::save_sparse(path, m, prune::sparse_format::csr);

        net.initialize(99);
        m.reset();
        prune::load_sparse(path, m);
        const snapshot back(m);
        CHECK(same_bits(back.values, want));
        CHECK(back.keep == keep);
    }
    SUBCASE("2:4: parameters zero where pruned; a group that kept fewer than two comes back keeping two")
    {
        m.for_each([&](const std::string&, auto, auto keep) {
            random_24_mask(keep.data(), decltype(keep)::shape::numel, rng);
        });
        const std::vector<char> keep = m.to_host();
        std::vector<f32> want = snapshot(m).values;
        for (const auto& q : m.prunable())
            for (std::size_t i = q.offset; i < q.offset + q.numel; ++i)
                if (!keep[i]) want[i] = 0.0f;
        prune::save_sparse(path, m, prune::sparse_format::two_four);

        net.initialize(99);
        m.reset();
        prune::load_sparse(path, m);
        const snapshot back(m);
        CHECK(same_bits(back.values, want));
        std::size_t grown = 0;
        for (std::size_t i = 0; i < net_t::flat_numel; ++i) {
            if (keep[i]) CHECK(back.keep[i] == 1);
            grown += back.keep[i] != keep[i];
        }
        CHECK(grown > 0);  // random_24_mask leaves some groups short
        for (const auto& q : m.prunable())
            for (std::size_t g = q.offset; g < q.offset + q.numel; g += 4)
                CHECK(std::count(back.keep.begin() + g, back.keep.begin() + g + 4, 1) == 2);
    }
    SUBCASE("2:4 with a group keeping three: tenet::error and no file")
    {
        m.for_each([&](const std::string&, auto, auto keep) {
            random_24_mask(keep.data(), decltype(keep)::shape::numel, rng);
        });
        m.data()[m.prunable()[1].offset + 4 * 5 + 1] = true;
        m.data()[m.prunable()[1].offset + 4 * 5 + 2] = true;
        m.data()[m.prunable()[1].offset + 4 * 5 + 3] = true;
        CHECK_THROWS_WITH_AS(prune::save_sparse(path, m, prune::sparse_format::two_four),
                             doctest::Contains("row 1, group 2"), error);
        CHECK(!fs::exists(path));
    }
}

TEST_CASE("sparse file: damaged, inconsistent and foreign files are refused; model and masks unchanged")
{
    scratch_dir dir;
    net_t net(31);
    masks_t m(net);
    std::mt19937_64 rng(606);
    m.for_each([&](const std::string&, auto, auto keep) {
        random_24_mask(keep.data(), decltype(keep)::shape::numel, rng);
    });
    const std::string csr = dir.file("csr"), two_four = dir.file("24"), bad = dir.file("bad");
    prune::save_sparse(csr, m, prune::sparse_format::csr);
    prune::save_sparse(two_four, m, prune::sparse_format::two_four);
    net.initialize(32);  // another state, which every failed load must leave alone
    m.for_each([&](const std::string&, auto, auto keep) {
        random_mask(keep.data(), decltype(keep)::shape::numel, 0.5, rng);
    });
    const snapshot before(m);

    const auto refused = [&](const std::string& file, const std::string& why) {
        CAPTURE(why);
        CHECK_THROWS_WITH_AS(prune::load_sparse(file, m), doctest::Contains(why.c_str()), format_error);
        CHECK(snapshot(m) == before);
    };
    // Rewrites a valid file with its contents changed (the container stays valid).
    const auto rewritten = [&](const std::string& from, prune::sparse_format f, auto change) {
        io::checkpoint_contents c = io::read_checkpoint_file(from, prune::detail::sparse_signature(net, f));
        change(c);
        io::write_checkpoint_file(bad, c);
        return bad;
    };
    const auto section = [](io::checkpoint_contents& c, const std::string& name) -> std::vector<std::byte>& {
        return std::find_if(c.sections.begin(), c.sections.end(), [&](const auto& s) { return s.name == name; })->bytes;
    };

    SUBCASE("a flipped byte, a truncated file")
    {
        std::vector<char> bytes = read_bytes(csr);
        bytes[bytes.size() / 2] ^= 0x10;
        write_bytes(bad, bytes);
        refused(bad, "checksum mismatch");
        bytes = read_bytes(two_four);
        bytes.resize(bytes.size() - 9);
        write_bytes(bad, bytes);
        refused(bad, "truncated");
    }
    SUBCASE("another model's file")
    {
        refused(rewritten(csr, prune::sparse_format::csr,
                          [](auto& c) { c.signature.replace(c.signature.find("3.weight[8,12]"), 14, "3.weight[8,13]"); }),
                "signature mismatch");
    }
    SUBCASE("CSR structure: columns out of order or out of range, offsets that disagree with the sizes")
    {
        const auto columns = [&](std::size_t at, std::uint32_t value) {
            return [=, &section](auto& c) { std::memcpy(section(c, "3.weight/columns").data() + 4 * at, &value, 4); };
        };
        refused(rewritten(csr, prune::sparse_format::csr, columns(1, 0)), "3.weight: row 0: columns");
        refused(rewritten(csr, prune::sparse_format::csr, columns(0, 12)), "column 12 is outside the 12 columns");
        refused(rewritten(csr, prune::sparse_format::csr,
                          [&](auto& c) { section(c, "0.weight/row_offsets")[4 * 12] = std::byte{0}; }),
                "section \"0.weight/columns\" has");
    }
    SUBCASE("2:4 structure: a bad position pair, a short values section")
    {
        refused(rewritten(two_four, prune::sparse_format::two_four,
                          [&](auto& c) { section(c, "5.weight/indices")[0] = std::byte{0x55}; }),
                "5.weight: row 0, group 0: positions 1 and 1");
        refused(rewritten(two_four, prune::sparse_format::two_four,
                          [&](auto& c) { section(c, "0.weight/values").resize(4 * 95); }),
                "section \"0.weight/values\" has 380 bytes, expected 384");
    }
    SUBCASE("a section missing, a section too many")
    {
        refused(rewritten(csr, prune::sparse_format::csr,
                          [](auto& c) {
                              c.sections.erase(std::find_if(c.sections.begin(), c.sections.end(),
                                                            [](const auto& s) { return s.name == "0.bias"; }));
                          }),
                "no section \"0.bias\"");
        refused(rewritten(two_four, prune::sparse_format::two_four,
                          [](auto& c) { c.sections.push_back({"extra", {}}); }),
                "has 10 sections, this model's 2:4 form has 9");
    }
    // Nothing above was lost: the good files still load.
    prune::load_sparse(csr, m);
    CHECK(!(snapshot(m) == before));
}
