// data::augment: random crop from a zero-padded image, left-right flip and
// normalisation of raw 8-bit images in one expression, against a reference
// written here from the derivation augment.hpp documents (plain loops over a
// padded copy, the draws from the Philox primitive); the draws' statistics;
// reproducibility, and independence from how a batch is cut; fusion; the
// evaluation mode against normalize_pixels bit for bit.
#include "mismatch_log.hpp"

#include <doctest/doctest.h>
#include <tenet/data/augment.hpp>
#include <tenet/data/batches.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

using namespace tenet;

namespace {

struct draws {
    unsigned dy = 0, dx = 0;
    bool flip = false;
    bool operator==(const draws&) const = default;
};

// The documented draws of one image, from the Philox primitive alone.
draws reference_draws(std::uint64_t seed, std::uint64_t step, std::uint64_t image, unsigned pad, bool flip)
{
    const auto lo = [](std::uint64_t v) { return static_cast<std::uint32_t>(v); };
    const auto w = detail::expr::philox4x32_10({lo(image), lo(image >> 32), lo(step), lo(step >> 32)},
                                               {lo(seed), lo(seed >> 32) ^ 0x4155474Du});
    const std::uint64_t offsets = 2 * std::uint64_t{pad} + 1;
    return {static_cast<unsigned>(w[0] * offsets >> 32), static_cast<unsigned>(w[1] * offsets >> 32),
            flip && (w[2] >> 31) == 0};
}

std::vector<std::uint8_t> random_bytes(std::size_t n, std::uint64_t seed)
{
    std::mt19937_64 rng(seed);
    std::vector<std::uint8_t> bytes(n);
    for (auto& b : bytes) b = static_cast<std::uint8_t>(rng());
    return bytes;
}

// The batch padded, cropped, flipped and normalised by plain loops: one
// padded copy of each image, the window read from it.
template <std::size_t H, std::size_t W, std::size_t C>
std::vector<f32> reference(const std::vector<std::uint8_t>& raw, const data::augment_options<C>& o,
                           std::uint64_t seed, std::uint64_t step, std::uint64_t first_image = 0)
{
    const std::size_t pad = o.pad, padded_w = W + 2 * pad, images = raw.size() / (H * W * C);
    std::vector<f32> out;
    for (std::size_t b = 0; b < images; ++b) {
        std::vector<std::uint8_t> padded((H + 2 * pad) * padded_w * C, 0);
        for (std::size_t y = 0; y < H; ++y)
            for (std::size_t x = 0; x < W; ++x)
                for (std::size_t c = 0; c < C; ++c)
                    padded[((y + pad) * padded_w + x + pad) * C + c] = raw[((b * H + y) * W + x) * C + c];
        const draws d = reference_draws(seed, step, first_image + b, o.pad, o.flip);
        for (std::size_t y = 0; y < H; ++y)
            for (std::size_t x = 0; x < W; ++x)
                for (std::size_t c = 0; c < C; ++c) {
                    const std::size_t column = (d.flip ? W - 1 - x : x) + d.dx;
                    const std::uint8_t p = padded[((y + d.dy) * padded_w + column) * C + c];
                    out.push_back(data::normalize_pixels{o.mean[c], o.std[c]}(p));
                }
    }
    return out;
}

template <class T>
bool same_bits(T a, T b)
{
    return std::memcmp(&a, &b, sizeof(T)) == 0;
}

template <class T, class S>
void poison(Tensor<T, S, Host>& t)
{
    std::memset(static_cast<void*>(t.data()), 0xA5, sizeof(T) * S::numel);
}

template <class T, class S>
void check_against(const Tensor<T, S, Host>& got, const std::vector<f32>& want, const char* what)
{
    REQUIRE(want.size() == S::numel);
    mismatch_log log;
    for (std::size_t i = 0; i < S::numel; ++i)
        if (!same_bits(got.data()[i], convert<T>(want[i])))
            log.add("%s: element %zu is %g, want %g", what, i, convert<f64>(got.data()[i]), double{want[i]});
    CHECK_NO_MISMATCH(log);
}

// Images whose pixels are all different (1 + y * W + x; 0 is padding), so
// the window and the flip of each output image can be read back from it.
template <std::size_t H, std::size_t W>
std::vector<std::uint8_t> numbered_images(std::size_t count)
{
    static_assert(H * W < 255);
    std::vector<std::uint8_t> raw(count * H * W);
    for (std::size_t i = 0; i < raw.size(); ++i) raw[i] = static_cast<std::uint8_t>(1 + i % (H * W));
    return raw;
}

// Each image's draws read back from numbered images augmented with mean 0
// and std 1 (value = p / 255): from the pixels at (pad, pad) and
// (pad, pad + 1), which always lie inside the image.
template <std::size_t H, std::size_t W, class S>
std::vector<draws> read_draws(const Tensor<f32, S, Host>& out, unsigned pad)
{
    const auto pixel = [&](std::size_t b, std::size_t y, std::size_t x) {
        return static_cast<long>(std::lround(out.data()[(b * H + y) * W + x] * 255.0)) - 1;
    };
    std::vector<draws> found;
    for (std::size_t b = 0; b < S::extents[0]; ++b) {
        const long at = pixel(b, pad, pad), next = pixel(b, pad, pad + 1);
        const long sy = at / static_cast<long>(W), sx = at % static_cast<long>(W);
        const bool flip = next % static_cast<long>(W) == sx - 1;
        // sx = (flip ? W - 1 - pad : pad) + dx - pad
        const long dx = sx - (flip ? static_cast<long>(W - 1 - pad) : static_cast<long>(pad)) + pad;
        found.push_back({static_cast<unsigned>(sy), static_cast<unsigned>(dx), flip});
    }
    return found;
}

template <std::size_t N>
data::pixel_batch<Shape<N, 8, 8, 1>, Host> numbered_view(const std::vector<std::uint8_t>& raw)
{
    return {raw.data()};
}

}  // namespace

TEST_CASE("augment with no padding and no flip is normalize_pixels, bit for bit (the evaluation mode)")
{
    std::vector<std::uint8_t> raw(3 * 256);
    for (std::size_t i = 0; i < raw.size(); ++i) raw[i] = static_cast<std::uint8_t>(i * 7 + i / 256);
    const data::pixel_batch<Shape<3, 16, 16, 1>, Host> images{raw.data()};
    const data::pixel_batch<Shape<3, 256>, Host> rows{raw.data()};
    Tensor<f32, Shape<3, 16, 16, 1>, Host> x, other_draws;
    Tensor<bf16, Shape<3, 256>, Host> x_bf16;
    poison(x);
    poison(other_draws);
    poison(x_bf16);
    x = data::augment<16, 16, 1>(images);
    other_draws = data::augment<16, 16, 1>(images, {}, 99, 12345);
    x_bf16 = data::augment<16, 16, 1>(rows, {});
    mismatch_log log;
    for (std::size_t i = 0; i < raw.size(); ++i) {
        const f32 want = data::normalize_pixels{}(raw[i]);  // Fashion-MNIST's mean and std
        if (!same_bits(x.data()[i], want) || !same_bits(other_draws.data()[i], want) ||
            !same_bits(x_bf16.data()[i], convert<bf16>(want)))
            log.add("pixel %u: %a %a %a, want %a", unsigned{raw[i]}, x.data()[i], other_draws.data()[i],
                    convert<f32>(x_bf16.data()[i]), want);
    }
    CHECK_NO_MISMATCH(log);
}

// Its three roundings: p / 255 and the difference (an ulp at the operands'
// scale, which cancellation does not shrink), then the quotient.
TEST_CASE("the f32 normalisation is within its roundings of the exact value")
{
    for (const auto [mean, std] : {std::array{data::fashion_mnist_mean, data::fashion_mnist_std},
                                   std::array{0.4914f, 0.2470f}, std::array{0.0f, 1.0f}}) {
        mismatch_log log;
        for (unsigned p = 0; p < 256; ++p) {
            const double exact = (p / 255.0 - double{mean}) / double{std};
            const f32 got = data::normalize_pixels{mean, std}(static_cast<std::uint8_t>(p));
            const double scale = std::fmax(p / 255.0, double{mean}) / double{std};
            if (std::fabs(got - exact) > (scale + 2 * std::fabs(exact)) * 0x1p-24)
                log.add("p = %u: %a, exact %a", p, got, exact);
        }
        CHECK_NO_MISMATCH(log);
    }
}

TEST_CASE_TEMPLATE("crop, flip and normalisation match the reference for every pad, seed and step", T, f32, bf16,
                   f16)
{
    const std::vector<std::uint8_t> gray = random_bytes(29 * 5 * 7, 1), color = random_bytes(17 * 6 * 4 * 3, 2);
    const data::pixel_batch<Shape<29, 5, 7, 1>, Host> gray_images{gray.data()};
    const data::pixel_batch<Shape<17, 72>, Host> color_rows{color.data()};  // flat rows of 6 x 4 x 3
    for (unsigned pad = 0; pad <= 4; ++pad)
        for (const bool flip : {false, true})
            for (const std::uint64_t seed : {std::uint64_t{1}, std::uint64_t{0xDEADBEEFCAFE}})
                for (const std::uint64_t step : {std::uint64_t{0}, std::uint64_t{1}, (std::uint64_t{1} << 40) + 3}) {
                    CAPTURE(pad);
                    CAPTURE(flip);
                    CAPTURE(seed);
                    CAPTURE(step);
                    const data::augment_options<1> gray_options{pad, flip, {0.3f}, {0.25f}};
                    const data::augment_options<3> color_options{pad, flip, {0.49f, 0.48f, 0.45f},
                                                                 {0.25f, 0.24f, 0.26f}};
                    Tensor<T, Shape<29, 5, 7, 1>, Host> x;
                    Tensor<T, Shape<17, 72>, Host> y;
                    poison(x);
                    poison(y);
                    x = data::augment<5, 7, 1>(gray_images, gray_options, seed, step);
                    y = data::augment<6, 4, 3>(color_rows, color_options, seed, step);
                    check_against(x, reference<5, 7, 1>(gray, gray_options, seed, step), "C = 1");
                    check_against(y, reference<6, 4, 3>(color, color_options, seed, step), "C = 3");
                }
}

TEST_CASE("the windows and flips are uniform, independent and the documented draws")
{
    constexpr std::size_t n = 14000;
    constexpr unsigned pad = 3, offsets = 2 * pad + 1;
    const std::vector<std::uint8_t> raw = numbered_images<8, 8>(n);
    Tensor<f32, Shape<n, 8, 8, 1>, Host> out;
    poison(out);
    out = data::augment<8, 8, 1>(numbered_view<n>(raw), {pad, true, {0.0f}, {1.0f}}, 7, 3);
    const std::vector<draws> found = read_draws<8, 8>(out, pad);

    std::array<double, offsets> dy{}, dx{};
    std::array<double, offsets * offsets * 2> joint{};
    double flips = 0;
    std::size_t undocumented = 0;
    for (std::size_t b = 0; b < n; ++b) {
        const draws& d = found[b];
        REQUIRE(d.dy < offsets);
        REQUIRE(d.dx < offsets);
        undocumented += !(d == reference_draws(7, 3, b, pad, true));
        ++dy[d.dy];
        ++dx[d.dx];
        ++joint[(d.dy * offsets + d.dx) * 2 + d.flip];
        flips += d.flip;
    }
    CHECK(undocumented == 0);
    // each offset's count within five binomial standard deviations
    const double p = 1.0 / offsets, sd = std::sqrt(n * p * (1 - p));
    for (unsigned k = 0; k < offsets; ++k) {
        CAPTURE(k);
        CHECK(std::fabs(dy[k] - n * p) < 5 * sd);
        CHECK(std::fabs(dx[k] - n * p) < 5 * sd);
    }
    CHECK(std::fabs(flips - n / 2.0) < 5 * std::sqrt(n / 4.0));
    // (dy, dx, flip) together: chi-square of 97 degrees of freedom, far below
    // its mean + 6 standard deviations (97 + 6 * 14) if independent
    double chi2 = 0;
    const double expected = double(n) / joint.size();
    for (const double count : joint) chi2 += (count - expected) * (count - expected) / expected;
    CHECK(chi2 < 97 + 6 * std::sqrt(2.0 * 97));
}

TEST_CASE("draws repeat for the same seed and step and change with either")
{
    constexpr std::size_t n = 500;
    constexpr unsigned pad = 2;
    const std::vector<std::uint8_t> raw = numbered_images<8, 8>(n);
    const auto view = numbered_view<n>(raw);
    const data::augment_options<1> options{pad, true, {0.0f}, {1.0f}};
    Tensor<f32, Shape<n, 8, 8, 1>, Host> a, again, next_step, other_seed;
    for (auto* t : {&a, &again, &next_step, &other_seed}) poison(*t);
    a = data::augment<8, 8, 1>(view, options, 11, 40);
    again = data::augment<8, 8, 1>(view, options, 11, 40);
    next_step = data::augment<8, 8, 1>(view, options, 11, 41);
    other_seed = data::augment<8, 8, 1>(view, options, 12, 40);
    CHECK(std::memcmp(a.data(), again.data(), sizeof(f32) * a.numel) == 0);
    const std::vector<draws> base = read_draws<8, 8>(a, pad), stepped = read_draws<8, 8>(next_step, pad),
                             reseeded = read_draws<8, 8>(other_seed, pad);
    std::size_t same_step = 0, same_seed = 0;
    for (std::size_t b = 0; b < n; ++b) {
        same_step += base[b] == stepped[b];
        same_seed += base[b] == reseeded[b];
    }
    // 50 equally likely draws: about 10 of 500 agree by chance
    CHECK(same_step < 30);
    CHECK(same_seed < 30);
}

TEST_CASE("a batch cut into views draws what the whole batch draws")
{
    const std::vector<std::uint8_t> raw = random_bytes(40 * 6 * 5 * 3, 3);
    const data::augment_options<3> options{2, true, {0.5f, 0.4f, 0.3f}, {0.2f, 0.3f, 0.4f}};
    Tensor<bf16, Shape<40, 6, 5, 3>, Host> whole;
    Tensor<bf16, Shape<25, 90>, Host> first;
    Tensor<bf16, Shape<15, 90>, Host> second;
    poison(whole);
    poison(first);
    poison(second);
    whole = data::augment<6, 5, 3>(data::pixel_batch<Shape<40, 6, 5, 3>, Host>{raw.data()}, options, 5, 9);
    first = data::augment<6, 5, 3>(data::pixel_batch<Shape<25, 90>, Host>{raw.data()}, options, 5, 9);
    second = data::augment<6, 5, 3>(data::pixel_batch<Shape<15, 90>, Host>{raw.data() + 25 * 90}, options, 5, 9, 25);
    CHECK(std::memcmp(whole.data(), first.data(), sizeof(bf16) * first.numel) == 0);
    CHECK(std::memcmp(whole.data() + first.numel, second.data(), sizeof(bf16) * second.numel) == 0);
}

TEST_CASE("augment fuses into a larger expression")
{
    const std::vector<std::uint8_t> raw = random_bytes(9 * 7 * 6, 4);
    const data::pixel_batch<Shape<9, 42>, Host> rows{raw.data()};
    const data::augment_options<1> options{3, true};
    Tensor<f32, Shape<9, 42>, Host> scaled;
    Tensor<bf16, Shape<9, 42>, Host> scaled_bf16;
    poison(scaled);
    poison(scaled_bf16);
    scaled = (data::augment<7, 6, 1>(rows, options, 2, 8) - 1.0f) * 0.5f;
    scaled_bf16 = (data::augment<7, 6, 1>(rows, options, 2, 8) - 1.0f) * 0.5f;
    std::vector<f32> want = reference<7, 6, 1>(raw, options, 2, 8);
    for (f32& v : want) v = (v - 1.0f) * 0.5f;
    check_against(scaled, want, "(augment - 1) * 0.5");
    check_against(scaled_bf16, want, "(augment - 1) * 0.5 in bf16");
}

TEST_CASE("augment refuses pixels without memory and a pad beyond the image")
{
    const std::vector<std::uint8_t> raw(2 * 4 * 6, 0);
    const data::pixel_batch<Shape<2, 4, 6, 1>, Host> images{raw.data()};
    const auto without_memory = [] { return data::augment<4, 6, 1>(data::pixel_batch<Shape<2, 24>, Host>{}); };
    const auto padded_by = [&](unsigned pad) { return data::augment<4, 6, 1>(images, {.pad = pad}); };
    CHECK_THROWS_WITH_AS(without_memory(), "tenet: data::augment: the pixel batch has no memory (a null pointer)",
                         error);
    CHECK_THROWS_WITH_AS(padded_by(5), "tenet: data::augment: pad 5 exceeds the 4 x 6 image (at most 4)", error);
    CHECK_NOTHROW(padded_by(4));
}
