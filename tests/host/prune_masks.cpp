// Mask selection against independent references: magnitude pruning (per
// layer and global) against a std::sort over (kept, |w|, index) with Python's
// round written out; N:M against a brute-force search over the C(M, N)
// patterns; the sparsity schedules against their formulas; the report
// against counting by hand.
#include "tensor_testing.hpp"

#include <tenet/prune/magnitude.hpp>
#include <tenet/prune/report.hpp>
#include <tenet/prune/sparsity_schedule.hpp>
#include <tenet/prune/structured.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

using namespace tenet;
namespace nn = tenet::nn;
namespace prune = tenet::prune;

namespace {

// Last extents 16 and 24: multiples of 2, 4 and 8.
using spec = nn::Sequential<nn::Linear<16, 24>, nn::ReLU, nn::Linear<24, 8>>;
using input = Shape<4, 16>;
using net_f32 = nn::model<spec, fp32, input, Host>;
using net_bf16 = nn::model<spec, bf16_mixed, input, Host>;

double normal(std::mt19937_64& rng) { return std::normal_distribution<double>(0.0, 1.0)(rng); }

// A few values, both zeros among them: ties everywhere.
double few_values(std::mt19937_64& rng)
{
    static const double values[] = {-2.0, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 2.0};
    return values[std::uniform_int_distribution<int>(0, 7)(rng)];
}

// Every parameter (biases too) drawn from `draw`.
template <class Net>
void fill_parameters(Net& net, std::uint64_t seed, double (*draw)(std::mt19937_64&))
{
    std::mt19937_64 rng(seed);
    net.for_each_parameter([&](const std::string&, auto value, auto) {
        using T = typename decltype(value)::element_type;
        for (std::size_t i = 0; i < decltype(value)::shape::numel; ++i) value.data()[i] = convert<T>(draw(rng));
    });
}

template <class Net>
std::vector<double> flat_weights(const Net& net)
{
    std::vector<double> w(Net::flat_numel);
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = convert<f64>(net.parameters()[i]);
    return w;
}

// A mask that keeps each prunable weight with probability `keep`, and
// everything else.
template <class Net>
std::vector<char> random_mask(const prune::masks<Net>& m, double keep, std::uint64_t seed)
{
    std::mt19937_64 rng(seed);
    std::bernoulli_distribution kept(keep);
    std::vector<char> mask(Net::flat_numel, 1);
    for (const auto& p : m.prunable())
        for (std::size_t i = p.offset; i < p.offset + p.numel; ++i) mask[i] = kept(rng);
    return mask;
}

// Python's round(x): to nearest, half to even.
std::size_t python_round(double x)
{
    const double f = std::floor(x);
    const double rest = x - f;
    const auto n = static_cast<std::size_t>(f);
    if (rest > 0.5) return n + 1;
    if (rest < 0.5) return n;
    return n % 2 == 0 ? n : n + 1;
}

// Prunes k of the group: sorted by (kept, |w|, index), NaN above every
// number, the first k pruned; already-pruned weights stay pruned.
void reference_magnitude(const std::vector<double>& w, std::vector<char>& mask,
                         const std::vector<prune::prunable_parameter>& group, std::size_t k)
{
    std::vector<std::size_t> order;
    for (const auto& p : group)
        for (std::size_t i = p.offset; i < p.offset + p.numel; ++i) order.push_back(i);
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        if (mask[a] != mask[b]) return mask[a] < mask[b];
        const double x = std::fabs(w[a]), y = std::fabs(w[b]);
        if (std::isnan(x) != std::isnan(y)) return std::isnan(y);
        if (!std::isnan(x) && x != y) return x < y;
        return a < b;
    });
    for (std::size_t j = 0; j < k; ++j) mask[order[j]] = 0;
}

std::vector<char> reference_selection(const std::vector<double>& w, std::vector<char> mask,
                                      const std::vector<prune::prunable_parameter>& all, double s, prune::scope sc)
{
    if (sc == prune::scope::global) {
        std::size_t n = 0;
        for (const auto& p : all) n += p.numel;
        reference_magnitude(w, mask, all, python_round(s * static_cast<double>(n)));
    } else {
        for (const auto& p : all) reference_magnitude(w, mask, {p}, python_round(s * static_cast<double>(p.numel)));
    }
    return mask;
}

std::size_t pruned_in(const std::vector<char>& mask, const prune::prunable_parameter& p)
{
    return static_cast<std::size_t>(std::count(mask.begin() + static_cast<std::ptrdiff_t>(p.offset),
                                               mask.begin() + static_cast<std::ptrdiff_t>(p.offset + p.numel), 0));
}

// The best of the C(M, N) patterns by kept magnitude (already-pruned weights
// scored -1, below every kept one), the first in lexicographic order of the
// kept indices on ties; the result is the pattern and the old mask.
template <std::size_t N, std::size_t M>
std::vector<char> brute_force_n_of_m(const double* w, const char* keep)
{
    std::vector<int> chosen(N), best;
    for (std::size_t i = 0; i < N; ++i) chosen[i] = static_cast<int>(i);
    double best_sum = -std::numeric_limits<double>::infinity();
    while (true) {
        double sum = 0;
        for (int i : chosen) sum += keep[i] ? std::fabs(w[i]) : -1.0;
        if (sum > best_sum) best_sum = sum, best = chosen;
        // the next N-subset of [0, M) in lexicographic order
        int i = static_cast<int>(N) - 1;
        while (i >= 0 && chosen[static_cast<std::size_t>(i)] == static_cast<int>(M - N) + i) --i;
        if (i < 0) break;
        ++chosen[static_cast<std::size_t>(i)];
        for (std::size_t j = static_cast<std::size_t>(i) + 1; j < N; ++j) chosen[j] = chosen[j - 1] + 1;
    }
    std::vector<char> out(M, 0);
    for (int i : best) out[static_cast<std::size_t>(i)] = keep[i];
    return out;
}

template <std::size_t N, std::size_t M, class Net>
void check_n_of_m_against_brute_force(Net& net, prune::masks<Net>& m, const std::vector<char>& before)
{
    const std::vector<double> w = flat_weights(net);
    const std::vector<char> after = m.to_host();
    for (const auto& p : m.prunable())
        for (std::size_t g = p.offset; g < p.offset + p.numel; g += M) {
            CAPTURE(p.name);
            CAPTURE(g - p.offset);
            const std::vector<char> want = brute_force_n_of_m<N, M>(w.data() + g, before.data() + g);
            CHECK(std::equal(want.begin(), want.end(), after.begin() + static_cast<std::ptrdiff_t>(g)));
        }
    for (std::size_t i = 0; i < after.size(); ++i) {
        bool prunable = false;
        for (const auto& p : m.prunable()) prunable = prunable || (i >= p.offset && i < p.offset + p.numel);
        if (!prunable) REQUIRE(after[i] == before[i]);
    }
}

}  // namespace

TEST_CASE("magnitude: exact counts per layer and global, round half to even, against a sort")
{
    net_f32 net(1);
    fill_parameters(net, 11, normal);
    prune::masks<net_f32> m(net);
    REQUIRE(m.prunable().size() == 2);
    const std::vector<double> w = flat_weights(net);
    const std::vector<char> all_kept = m.to_host();
    // 1/128 and 3/128: 384 * s, 192 * s, 576 * s hit .5 (1.5, 4.5, 13.5 round to 2, 4, 14).
    for (const double s : {0.0, 1.0 / 128, 3.0 / 128, 0.3, 0.5, 0.77, 0.9, 1.0}) {
        for (const auto sc : {prune::scope::per_layer, prune::scope::global}) {
            CAPTURE(s);
            CAPTURE(int(sc));
            m.reset();
            prune::magnitude(m, s, sc);
            const std::vector<char> got = m.to_host();
            CHECK(got == reference_selection(w, all_kept, m.prunable(), s, sc));
            std::size_t total = 0, numel = 0;
            for (const auto& p : m.prunable()) {
                total += pruned_in(got, p);
                numel += p.numel;
                if (sc == prune::scope::per_layer) CHECK(pruned_in(got, p) == python_round(s * double(p.numel)));
            }
            if (sc == prune::scope::global) CHECK(total == python_round(s * double(numel)));
            CHECK(prune::sparsity(m) == doctest::Approx(double(total) / double(numel)));
        }
    }
    m.reset();
    prune::magnitude(m, 1.0 / 128, prune::scope::per_layer);  // 3 and round(1.5) = 2
    CHECK(pruned_in(m.to_host(), m.prunable()[0]) == 3);
    CHECK(pruned_in(m.to_host(), m.prunable()[1]) == 2);
    m.reset();
    prune::magnitude(m, 1.0 / 128, prune::scope::global);  // round(4.5) = 4
    CHECK(pruned_in(m.to_host(), m.prunable()[0]) + pruned_in(m.to_host(), m.prunable()[1]) == 4);
}

TEST_CASE("magnitude: global ranks across layers with one threshold, per-layer does not")
{
    net_f32 net(2);
    fill_parameters(net, 12, normal);
    prune::masks<net_f32> m(net);
    const auto& second = m.prunable()[1];
    for (std::size_t i = second.offset; i < second.offset + second.numel; ++i) net.parameters()[i] *= 10.0f;
    const std::vector<double> w = flat_weights(net);
    const std::vector<char> all_kept = m.to_host();
    prune::magnitude(m, 0.5, prune::scope::global);
    const std::vector<char> global = m.to_host();
    CHECK(global == reference_selection(w, all_kept, m.prunable(), 0.5, prune::scope::global));
    // One threshold: every pruned |w| is below every kept one, across layers.
    double largest_pruned = 0, smallest_kept = std::numeric_limits<double>::infinity();
    for (const auto& p : m.prunable())
        for (std::size_t i = p.offset; i < p.offset + p.numel; ++i) {
            if (global[i]) smallest_kept = std::min(smallest_kept, std::fabs(w[i]));
            else largest_pruned = std::max(largest_pruned, std::fabs(w[i]));
        }
    CHECK(largest_pruned <= smallest_kept);
    CHECK(pruned_in(global, second) < 40);
    CHECK(pruned_in(global, m.prunable()[0]) > 250);
    m.reset();
    prune::magnitude(m, 0.5, prune::scope::per_layer);
    CHECK(pruned_in(m.to_host(), second) == 96);
}

TEST_CASE("magnitude: heavy ties still give exact counts, by flat index (bf16 weights)")
{
    net_bf16 net(3);
    fill_parameters(net, 13, few_values);
    prune::masks<net_bf16> m(net);
    const std::vector<double> w = flat_weights(net);
    const std::vector<char> all_kept = m.to_host();
    for (const double s : {0.1, 0.25, 0.5, 0.6, 0.95})
        for (const auto sc : {prune::scope::per_layer, prune::scope::global}) {
            CAPTURE(s);
            m.reset();
            prune::magnitude(m, s, sc);
            CHECK(m.to_host() == reference_selection(w, all_kept, m.prunable(), s, sc));
        }
}

TEST_CASE("magnitude: masks only shrink; already-pruned weights rank lowest and are never revived")
{
    net_f32 net(4);
    fill_parameters(net, 14, normal);
    prune::masks<net_f32> m(net);
    const std::vector<double> w = flat_weights(net);
    for (const auto sc : {prune::scope::per_layer, prune::scope::global}) {
        // A random earlier mask (~40% pruned, large weights among them).
        const std::vector<char> earlier = random_mask(m, 0.6, 21);
        for (const double s : {0.1, 0.3, 0.5, 0.8}) {
            CAPTURE(s);
            m.from_host(earlier);
            prune::magnitude(m, s, sc);
            const std::vector<char> got = m.to_host();
            CHECK(got == reference_selection(w, earlier, m.prunable(), s, sc));
            for (std::size_t i = 0; i < got.size(); ++i)
                if (!earlier[i]) REQUIRE(!got[i]);
        }
        // Gradual: each step prunes exactly to its count.
        m.reset();
        for (const double s : {0.2, 0.5, 0.7}) {
            std::vector<char> before = m.to_host();
            prune::magnitude(m, s, sc);
            CHECK(m.to_host() == reference_selection(w, before, m.prunable(), s, sc));
        }
        // A lower target changes nothing.
        const std::vector<char> at_70 = m.to_host();
        prune::magnitude(m, 0.4, sc);
        CHECK(m.to_host() == at_70);
    }
}

TEST_CASE("magnitude: NaN and infinity rank highest; zeros of both signs tie")
{
    net_f32 net(5);
    fill_parameters(net, 15, normal);
    const auto offset = prune::masks<net_f32>(net).prunable()[0].offset;
    f32* w0 = net.parameters() + offset;
    w0[3] = std::numeric_limits<f32>::quiet_NaN();
    w0[7] = -std::numeric_limits<f32>::infinity();
    w0[8] = std::numeric_limits<f32>::infinity();
    w0[9] = -0.0f;
    w0[10] = 0.0f;
    prune::masks<net_f32> m(net);
    const std::vector<double> w = flat_weights(net);
    const std::vector<char> all_kept = m.to_host();
    prune::magnitude(m, 383.0 / 384, prune::scope::per_layer);  // layer 0: one kept (layer 2: round(191.5) = 192)
    std::vector<char> got = m.to_host();
    CHECK(got[offset + 3] == 1);
    CHECK(pruned_in(got, m.prunable()[0]) == 383);
    m.reset();
    prune::magnitude(m, 0.99, prune::scope::per_layer);  // round(380.16) = 380: 4 kept: NaN, the infinities, ...
    got = m.to_host();
    CHECK(got == reference_selection(w, all_kept, m.prunable(), 0.99, prune::scope::per_layer));
    CHECK((got[offset + 3] && got[offset + 7] && got[offset + 8]));
    m.reset();
    prune::magnitude(m, 1.0 / 384, prune::scope::per_layer);  // round(1) in layer 0: -0.0 at 9 goes first
    got = m.to_host();
    CHECK(got[offset + 9] == 0);
    CHECK(got[offset + 10] == 1);
}

TEST_CASE("magnitude: sparsity outside [0, 1] is an error and changes nothing")
{
    net_f32 net(6);
    prune::masks<net_f32> m(net);
    const std::vector<char> before = random_mask(m, 0.5, 22);
    m.from_host(before);
    for (const double s : {-0.01, 1.01, std::numeric_limits<double>::quiet_NaN()}) {
        CHECK_THROWS_AS(prune::magnitude(m, s, prune::scope::global), tenet::error);
        CHECK_THROWS_WITH(prune::magnitude(m, s, prune::scope::per_layer),
                          doctest::Contains("tenet: prune::magnitude: sparsity"));
    }
    CHECK(m.to_host() == before);
}

TEST_CASE("n_of_m: one group against the brute force, exhaustively over small values with ties")
{
    // Every 4-tuple over {0, 1, 2} (ties, zeros) times every earlier mask.
    const float values[] = {0.0f, 1.0f, 2.0f};
    std::size_t cases = 0;
    for (int v = 0; v < 81; ++v)
        for (int bits = 0; bits < 16; ++bits) {
            float w[4];
            double wd[4];
            char keep[4];
            for (int j = 0, x = v; j < 4; ++j, x /= 3) {
                w[j] = values[x % 3];
                wd[j] = w[j];
                keep[j] = static_cast<char>((bits >> j) & 1);
            }
            const auto run = [&]<std::size_t N>() {
                bool mask[4];
                for (int j = 0; j < 4; ++j) mask[j] = keep[j];
                prune::detail::keep_n_of_m<N, 4>(w, mask);
                const std::vector<char> want = brute_force_n_of_m<N, 4>(wd, keep);
                for (int j = 0; j < 4; ++j) REQUIRE(mask[j] == bool(want[static_cast<std::size_t>(j)]));
                ++cases;
            };
            CAPTURE(v);
            CAPTURE(bits);
            run.template operator()<1>();
            run.template operator()<2>();
            run.template operator()<3>();
        }
    CHECK(cases == 81 * 16 * 3);
    // NaN ranks above everything: kept first.
    float w[4] = {1.0f, std::numeric_limits<float>::quiet_NaN(), 3.0f, 2.0f};
    bool mask[4] = {true, true, true, true};
    prune::detail::keep_n_of_m<2, 4>(w, mask);
    CHECK((!mask[0] && mask[1] && mask[2] && !mask[3]));
}

TEST_CASE("two_four: every group valid and the brute-force best, on a model; after magnitude too")
{
    net_f32 net(7);
    prune::masks<net_f32> m(net);
    for (const auto draw : {normal, few_values}) {
        fill_parameters(net, 16, draw);
        m.reset();
        CHECK(!prune::satisfies_n_of_m<2, 4>(m));
        const std::vector<char> before = m.to_host();
        prune::two_four(m);
        CHECK(prune::satisfies_n_of_m<2, 4>(m));
        check_n_of_m_against_brute_force<2, 4>(net, m, before);
        CHECK(prune::sparsity(m) == 0.5);
        // On top of an unstructured mask: pruned weights rank lowest, never revived.
        const std::vector<char> earlier = random_mask(m, 0.7, 23);
        m.from_host(earlier);
        prune::two_four(m);
        CHECK(prune::satisfies_n_of_m<2, 4>(m));
        check_n_of_m_against_brute_force<2, 4>(net, m, earlier);
    }
}

TEST_CASE("n_of_m: 1:4, 3:4 and 2:8 against the brute force; satisfies_n_of_m")
{
    net_f32 net(8);
    fill_parameters(net, 17, normal);
    prune::masks<net_f32> m(net);
    std::vector<char> before = m.to_host();
    prune::n_of_m<1, 4>(m);
    check_n_of_m_against_brute_force<1, 4>(net, m, before);
    CHECK(prune::satisfies_n_of_m<1, 4>(m));
    CHECK(prune::satisfies_n_of_m<2, 4>(m));
    CHECK(prune::sparsity(m) == 0.75);
    m.reset();
    prune::n_of_m<3, 4>(m);
    check_n_of_m_against_brute_force<3, 4>(net, m, before);
    CHECK(!prune::satisfies_n_of_m<2, 4>(m));
    m.reset();
    fill_parameters(net, 18, few_values);
    before = random_mask(m, 0.8, 24);
    m.from_host(before);
    prune::n_of_m<2, 8>(m);
    check_n_of_m_against_brute_force<2, 8>(net, m, before);
    CHECK(prune::satisfies_n_of_m<2, 8>(m));
    CHECK(!prune::satisfies_n_of_m<1, 8>(m));
}

TEST_CASE("gradual_sparsity: the cubic formula, its known points, prunes_at and check()")
{
    static_assert(prune::sparsity_schedule<prune::gradual_sparsity> && prune::sparsity_schedule<prune::one_shot>);
    const prune::gradual_sparsity g{0.1, 0.85, 200, 8, 50};  // t0 = 200, n = 8, Δt = 50: ends at 600
    g.check();
    CHECK(g.at(0) == 0.1);
    CHECK(g.at(199) == 0.1);
    CHECK(g.at(200) == 0.1);
    CHECK(g.at(600) == 0.85);
    CHECK(g.at(601) == 0.85);
    CHECK(g.at(1'000'000) == 0.85);
    CHECK(g.at(400) == doctest::Approx(0.85 - 0.75 / 8).epsilon(1e-15));  // halfway: (1/2)^3
    for (std::uint64_t t = 200; t <= 600; ++t) {
        const double want = 0.85 + (0.1 - 0.85) * std::pow(1.0 - double(t - 200) / 400.0, 3);
        REQUIRE(std::fabs(g.at(t) - want) < 1e-15);
        if (t > 200) REQUIRE(g.at(t) >= g.at(t - 1));
    }
    std::vector<std::uint64_t> prunes;
    for (std::uint64_t t = 0; t < 800; ++t)
        if (g.prunes_at(t)) prunes.push_back(t);
    CHECK(prunes == std::vector<std::uint64_t>{200, 250, 300, 350, 400, 450, 500, 550, 600});
    CHECK(prune::gradual_sparsity{}.prunes_at(0));
    CHECK(prune::gradual_sparsity{}.at(1000) == 0.9);

    const auto rejects = [](prune::gradual_sparsity bad, const char* text) {
        CHECK_THROWS_WITH_AS(bad.check(), doctest::Contains(text), tenet::error);
    };
    rejects({-0.1, 0.5}, "initial sparsity");
    rejects({0.0, 1.5}, "final sparsity");
    rejects({0.0, std::numeric_limits<double>::quiet_NaN()}, "final sparsity");
    rejects({0.6, 0.5}, "above the final");
    rejects({0.0, 0.5, 0, 0, 10}, "must be positive");
    rejects({0.0, 0.5, 0, 10, 0}, "must be positive");
    rejects({0.0, 0.5, 10, std::uint64_t{1} << 40, std::uint64_t{1} << 40}, "overflows");
    prune::gradual_sparsity{0.5, 0.5, 0, 1, 1}.check();
    prune::gradual_sparsity{0.0, 1.0}.check();
}

TEST_CASE("one_shot: the sparsity from its step on; prunes once; check()")
{
    const prune::one_shot o{0.7, 30};
    o.check();
    CHECK(o.at(0) == 0.0);
    CHECK(o.at(29) == 0.0);
    CHECK(o.at(30) == 0.7);
    CHECK(o.at(31) == 0.7);
    for (std::uint64_t t = 0; t < 100; ++t) REQUIRE(o.prunes_at(t) == (t == 30));
    CHECK_THROWS_WITH_AS(prune::one_shot{1.2}.check(), doctest::Contains("tenet: prune::one_shot: sparsity"),
                         tenet::error);
    CHECK_THROWS_AS(prune::one_shot{-0.2}.check(), tenet::error);
}

TEST_CASE("report: counts per layer and in total against counting by hand; the table names the layers")
{
    net_f32 net(9);
    fill_parameters(net, 19, normal);
    prune::masks<net_f32> m(net);
    m.from_host(random_mask(m, 0.35, 25));
    m.apply();
    // A few zeros that the masks keep, in a weight and in a bias.
    const auto& first = m.prunable()[0];
    std::size_t kept_zero = 0;
    for (std::size_t i = first.offset; i < first.offset + first.numel && kept_zero < 3; ++i)
        if (net.parameters()[i] != 0.0f) {
            net.parameters()[i] = 0.0f;
            ++kept_zero;
        }
    net.for_each_parameter([](const std::string& name, auto value, auto) {
        if (name == "0.bias") value.data()[1] = 0.0f;
    });

    const std::vector<char> mask = m.to_host();
    const prune::sparsity_report r = prune::report(m);
    REQUIRE(r.layers.size() == 2);
    std::size_t numel = 0, kept = 0, nonzero = 0;
    for (std::size_t l = 0; l < 2; ++l) {
        const auto& p = m.prunable()[l];
        std::size_t k = 0, nz = 0;
        for (std::size_t i = p.offset; i < p.offset + p.numel; ++i) {
            k += mask[i];
            nz += net.parameters()[i] != 0.0f;
        }
        CAPTURE(l);
        CHECK(r.layers[l].name == p.name);
        CHECK(r.layers[l].rows == (l == 0 ? 24 : 8));
        CHECK(r.layers[l].cols == (l == 0 ? 16 : 24));
        CHECK(r.layers[l].numel == p.numel);
        CHECK(r.layers[l].kept == k);
        CHECK(r.layers[l].nonzero == nz);
        CHECK(r.layers[l].sparsity() == doctest::Approx(1.0 - double(k) / double(p.numel)));
        numel += p.numel;
        kept += k;
        nonzero += nz;
    }
    CHECK(r.layers[0].nonzero == r.layers[0].kept - 3);
    CHECK(r.layers[1].nonzero == r.layers[1].kept);
    CHECK(r.numel == numel);
    CHECK(r.kept == kept);
    CHECK(r.nonzero == nonzero);
    CHECK(r.sparsity() == doctest::Approx(1.0 - double(kept) / double(numel)));
    CHECK(prune::sparsity(m) == r.sparsity());
    CHECK(r.parameters == net_f32::parameter_count);
    CHECK(r.parameter_nonzero == nonzero + 24 + 8 - 1);  // the biases, one zeroed
    const std::string table = r.table();
    CHECK(table.find("0.weight") != std::string::npos);
    CHECK(table.find("2.weight") != std::string::npos);
    CHECK(table.find("24 x 16") != std::string::npos);
    CHECK(table.find(std::to_string(r.layers[1].nonzero) + " / 192") != std::string::npos);
    CHECK(table.find("total") != std::string::npos);
    CHECK(table.find(std::to_string(nonzero) + " / 576") != std::string::npos);
    CHECK(std::count(table.begin(), table.end(), '\n') == 5);
}
