// The host's F16C conversions (memory/converting_chunks.hpp) against
// tenet::convert's portable bit-level routines, bit for bit: every f16
// pattern widened, every f32 pattern narrowed, and f16 expressions (the
// lane walk, tails, cast) against element-by-element loops. Compiled with
// -mf16c (and -mavx512f for the second program), so the hardware path is
// the one a chunk takes here, while convert<>() of single values still runs
// the portable routines.
#include <tenet/tenet.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>

static_assert(TENET_HOST_F16C, "tenet: the F16C checks must be compiled with -mf16c");
#if defined(TENET_F16C_CHECKS_AVX512) && !defined(__AVX512F__)
#error "tenet: the AVX-512 F16C checks must be compiled with -mavx512f"
#endif

using namespace tenet;

namespace {

int failures = 0;

void fail(const char* what, std::uint32_t input, std::uint32_t got, std::uint32_t want)
{
    if (++failures <= 10) std::printf("%s: input 0x%08x gives 0x%08x, want 0x%08x\n", what, input, got, want);
}

std::uint16_t bits_of(f16 x)
{
    std::uint16_t b;
    std::memcpy(&b, &x, 2);
    return b;
}

f16 f16_of(std::uint16_t b)
{
    f16 x;
    std::memcpy(static_cast<void*>(&x), &b, 2);
    return x;
}

std::uint32_t bits_of(f32 x)
{
    std::uint32_t b;
    std::memcpy(&b, &x, 4);
    return b;
}

void widen_every_pattern()
{
    alignas(64) f16 in[16];
    for (std::uint32_t first = 0; first < 65536; first += 16) {
        for (std::uint32_t k = 0; k < 16; ++k) in[k] = f16_of(static_cast<std::uint16_t>(first + k));
        const vec<f32, 16> out = internal::load_chunk_as<f32, 16>(in);
        for (std::uint32_t k = 0; k < 16; ++k) {
            const std::uint32_t got = bits_of(out[k]), want = bits_of(convert<f32>(in[k]));
            if (got != want) fail("f16 -> f32", first + k, got, want);
        }
    }
}

// Every f32 pattern, 16 at a time.
void narrow_every_pattern()
{
    constexpr std::uint32_t batch = 1u << 16;
    const auto in = std::make_unique<f32[]>(batch);
    const auto out = std::make_unique<f16[]>(batch), want = std::make_unique<f16[]>(batch);
    for (std::uint64_t first = 0; first < (std::uint64_t{1} << 32); first += batch) {
        for (std::uint32_t k = 0; k < batch; ++k) {
            const auto b = static_cast<std::uint32_t>(first + k);
            std::memcpy(&in[k], &b, 4);
        }
        std::memset(static_cast<void*>(out.get()), 0x5A, batch * sizeof(f16));  // poison
        for (std::uint32_t k = 0; k < batch; k += 16) {
            vec<f32, 16> chunk;
            std::memcpy(&chunk, &in[k], sizeof chunk);
            internal::store_chunk_as<16>(&out[k], chunk);
        }
#pragma omp simd
        for (std::uint32_t k = 0; k < batch; ++k) want[k] = convert<f16>(in[k]);
        if (std::memcmp(out.get(), want.get(), batch * sizeof(f16)) == 0) continue;
        for (std::uint32_t k = 0; k < batch; ++k)
            if (bits_of(out[k]) != bits_of(want[k]))
                fail("f32 -> f16", static_cast<std::uint32_t>(first + k), bits_of(out[k]), bits_of(want[k]));
    }
}

// A shape whose element count is not a multiple of 16 (the loops' tails).
using S = Shape<1000, 37>;
constexpr std::size_t n = S::numel;

// Random f16 values with zeros, subnormals, infinities and NaNs mixed in.
void fill_random(f16* x, std::uint64_t seed)
{
    std::uint64_t s = seed;
    for (std::size_t i = 0; i < n; ++i) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        const auto r = static_cast<std::uint16_t>(s >> 48);
        const std::uint16_t specials[] = {0x0000, 0x8000, 0x0001, 0x83FF, 0x7C00, 0xFC00, 0x7E01, 0xFFFF, 0x7BFF};
        x[i] = (s >> 20) % 16 == 0 ? f16_of(specials[(s >> 8) % 9]) : f16_of(r);
    }
}

template <class Got, class Want>
void compare_all(const char* what, const Got& got, Want want)
{
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint32_t g = bits_of(got.data()[i]), w = bits_of(want(i));
        if (g != w) fail(what, static_cast<std::uint32_t>(i), g, w);
    }
}

void expressions()
{
    Tensor<f16, S, Host> x, y, z;
    Tensor<f32, S, Host> w, u;
    fill_random(x.data(), 1);
    fill_random(y.data(), 2);
    const auto v = [](const Tensor<f16, S, Host>& t, std::size_t i) { return convert<f32>(t.data()[i]); };

    fill(z, 12345.0f);  // poison
    z = where(x > 0.0f, x * y, x - 1.5f);
    compare_all("where(x > 0, x * y, x - 1.5)", z, [&](std::size_t i) {
        return convert<f16>(v(x, i) > 0.0f ? v(x, i) * v(y, i) : v(x, i) - 1.5f);
    });

    fill(w, 7.0f);
    w = x + y;
    compare_all("f32 = x + y", w, [&](std::size_t i) { return v(x, i) + v(y, i); });

    fill(z, 12345.0f);  // poison
    z = cast<f16>(w * 3.0f);
    compare_all("f16 = cast<f16>(w * 3)", z, [&](std::size_t i) { return convert<f16>(w.data()[i] * 3.0f); });

    fill(u, 7.0f);
    u = cast<f16>(w) * 2.0f;  // the round trip inside an expression
    compare_all("f32 = cast<f16>(w) * 2", u, [&](std::size_t i) { return convert<f32>(convert<f16>(w.data()[i])) * 2.0f; });

    fill(z, 12345.0f);  // poison
    z = max(x, y) * 0.5f + min(x, 0.0f);
    compare_all("max(x, y) * 0.5 + min(x, 0)", z, [&](std::size_t i) {
        const f32 a = v(x, i), b = v(y, i);
        return convert<f16>(ops::maximum{}(a, b) * 0.5f + ops::minimum{}(a, 0.0f));
    });
}

}  // namespace

int tenet_f16c_checks()
{
    widen_every_pattern();
    narrow_every_pattern();
    expressions();
    return failures;
}
