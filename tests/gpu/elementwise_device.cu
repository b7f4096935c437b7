// The host test cases, run on the device: every operation against its
// float64 reference and against the host's result; vector and scalar paths,
// tails, broadcasting, views, multi-output, random numbers, augmentation.
#include "device_testing.hpp"
#include "op_cases.hpp"

#include <tenet/autodiff/autodiff.hpp>
#include <tenet/data/augment.hpp>
#include <tenet/expr/random.hpp>

using namespace tenet;
using testing::close;
using testing::to_device;
using testing::to_host;
using testing::tolerance;

namespace {

// Device and host each within tolerance of the reference, so within twice it
// of each other -- or, for 16-bit storage, neighbours: f32 results a hair
// apart near a midpoint round to either side.
template <class T>
bool agree(double device, double host, double scale, tolerance tol)
{
    if (close<T>(device, host, scale, tolerance{2 * tol.f32_ulps_relative, 2 * tol.f32_ulps_absolute})) return true;
    return !std::is_same_v<T, f32> && std::fabs(device - host) <= testing::storage_ulp<T>(host);
}

double moderate(std::mt19937_64& rng) { return std::uniform_real_distribution<double>(-2.0, 2.0)(rng); }

template <class T>
struct device_runner {
    using S = Shape<37, 29>;  // 1073 elements: a tail after the vector chunks

    template <class Make, class Ref, class Scale>
    void unary(const char* name, Make make, Ref ref, tolerance tol, Scale scale)
    {
        Tensor<T, S, Host> x, host_result;
        testing::fill_random(x, 17);
        host_result = make(x);
        const auto xd = to_device(x);
        Tensor<T, S, Device> yd;
        testing::poison(yd);
        yd = make(xd);
        const auto y = to_host(yd);
        mismatch_log log;
        for (std::size_t i = 0; i < S::numel; ++i) {
            const double in = convert<f64>(x.data()[i]), got = convert<f64>(y.data()[i]);
            if (!close<T>(got, ref(in), scale(in), tol) ||
                !agree<T>(got, convert<f64>(host_result.data()[i]), scale(in), tol))
                log.add("%s(%a): device %a, reference %a, host %a", name, in, got, ref(in),
                        convert<f64>(host_result.data()[i]));
        }
        INFO(name, " / ", numeric_traits<T>::name);
        CHECK_NO_MISMATCH(log);
    }

    template <class Make, class Ref, class Scale>
    void binary(const char* name, Make make, Ref ref, tolerance tol, Scale scale)
    {
        Tensor<T, S, Host> a, b, host_result;
        testing::fill_random(a, 18);
        testing::fill_random(b, 19);
        host_result = make(a, b);
        const auto ad = to_device(a), bd = to_device(b);
        Tensor<T, S, Device> yd;
        testing::poison(yd);
        yd = make(ad, bd);
        const auto y = to_host(yd);
        mismatch_log log;
        for (std::size_t i = 0; i < S::numel; ++i) {
            const double x = convert<f64>(a.data()[i]), z = convert<f64>(b.data()[i]);
            const double got = convert<f64>(y.data()[i]), host = convert<f64>(host_result.data()[i]);
            if (!close<T>(got, ref(x, z), scale(x, z), tol) || !agree<T>(got, host, scale(x, z), tol))
                log.add("%s(%a, %a): device %a, reference %a, host %a", name, x, z, got, ref(x, z), host);
        }
        INFO(name, " / ", numeric_traits<T>::name);
        CHECK_NO_MISMATCH(log);
    }
};

template <class T, class S>
bool same_bits(const Tensor<T, S, Host>& a, const Tensor<T, S, Host>& b)
{
    return std::memcmp(a.data(), b.data(), sizeof(T) * S::numel) == 0;
}

}  // namespace

TEST_CASE_TEMPLATE("device: unary operations match float64 references and the host", T, f32, f16, bf16)
{
    device_runner<T> run;
    testing::unary_cases(run);
}

TEST_CASE_TEMPLATE("device: binary operations match float64 references and the host", T, f32, f16, bf16)
{
    device_runner<T> run;
    testing::binary_cases(run);
}

TEST_CASE("device: data movement through views is bit-exact with the host")
{
    Tensor<bf16, Shape<6, 40, 33>, Host> x;
    testing::fill_random(x, 23);
    const auto xd = to_device(x);
    Tensor<bf16, Shape<33, 6, 40>, Host> p_host = permute<2, 0, 1>(x);
    Tensor<bf16, Shape<33, 6, 40>, Device> p = permute<2, 0, 1>(xd);
    CHECK(same_bits(to_host(p), p_host));
    Tensor<bf16, Shape<6, 20, 11>, Host> s_host = slice<2, 1, 33, 3>(slice<1, 0, 40, 2>(x));
    Tensor<bf16, Shape<6, 20, 11>, Device> s = slice<2, 1, 33, 3>(slice<1, 0, 40, 2>(xd));
    CHECK(same_bits(to_host(s), s_host));
    Tensor<bf16, Shape<4, 6, 40, 33>, Device> b = broadcast_to<Shape<4, 6, 40, 33>>(xd);
    Tensor<bf16, Shape<4, 6, 40, 33>, Host> b_host = broadcast_to<Shape<4, 6, 40, 33>>(x);
    CHECK(same_bits(to_host(b), b_host));
    Tensor<bf16, Shape<40, 6, 33>, Device> r = reshape<Shape<40, 6, 33>>(transpose(reshape<Shape<6, 33, 40>>(xd)));
    Tensor<bf16, Shape<40, 6, 33>, Host> r_host = reshape<Shape<40, 6, 33>>(transpose(reshape<Shape<6, 33, 40>>(x)));
    CHECK(same_bits(to_host(r), r_host));
}

TEST_CASE("device: misaligned memory takes the scalar path and stays correct")
{
    constexpr std::size_t n = (1 << 16) - 1;
    Tensor<f32, Shape<n + 1>, Host> a, b;
    testing::fill_random(a, 31, &moderate);
    testing::fill_random(b, 32, &moderate);
    const auto ad = to_device(a), bd = to_device(b);
    // Views that start 4 bytes past a 16-byte boundary: contiguous, so the
    // vector path is compiled in, but the alignment check at launch refuses it.
    const auto shifted = make_view<Shape<n>, Device>(ad.data() + 1);
    const auto also_shifted = make_view<Shape<n>, Device>(bd.data() + 1);
    Tensor<f32, Shape<n>, Device> y = shifted * 2.0f + also_shifted;
    const auto got = to_host(y);
    mismatch_log log;
    for (std::size_t i = 0; i < n; ++i) {
        const float x = a.data()[i + 1], z = b.data()[i + 1];
        if (!close<f32>(got.data()[i], x * 2.0f + z, std::fabs(x * 2.0f) + std::fabs(z), tolerance{1, 1}))
            log.add("%zu", i);
    }
    CHECK_NO_MISMATCH(log);
}

// A user's functor (tenet::map) and its derivative run in the same kernels.
struct user_softsign {
    TENET_HD float operator()(float x) const { return x / (1.0f + fabsf(x)); }
    template <std::size_t J>
    TENET_HD float derivative(float x) const
    {
        const float d = 1.0f + fabsf(x);
        return 1.0f / (d * d);
    }
};

TEST_CASE("device: a user's functor through tenet::map and gradients, bit-identical to the host")
{
    using S = Shape<257, 33>;
    Tensor<f32, S, Host> x, dy;
    testing::fill_random(x, 43, &moderate);
    testing::fill_random(dy, 44, &moderate);
    const auto xd = to_device(x);
    const auto dyd = to_device(dy);
    Tensor<f32, S, Device> y, dx;
    testing::poison(y);
    testing::poison(dx);
    y = map(user_softsign{}, xd * 2.0f) + 1.0f;
    dx = gradient<0>(map(user_softsign{}, var<0>(xd)), dyd);
    Tensor<f32, S, Host> y_host = map(user_softsign{}, x * 2.0f) + 1.0f;
    Tensor<f32, S, Host> dx_host = gradient<0>(map(user_softsign{}, var<0>(x)), dy);
    CHECK(same_bits(to_host(y), y_host));
    CHECK(same_bits(to_host(dx), dx_host));
}

TEST_CASE("device: in-place, broadcast scalars and multi-output in one kernel")
{
    using S = Shape<513, 130>;
    Tensor<f32, S, Host> x;
    testing::fill_random(x, 41, &moderate);  // no NaN: the GPU's NaN bits differ from x86's
    auto xd = to_device(x);
    Tensor<f32, Shape<130>, Device> bias = random_uniform<Shape<130>>(5);
    Tensor<f32, Shape<130>, Host> bias_host = random_uniform<Shape<130>>(5);
    Tensor<f32, S, Device> activated;
    Tensor<bool, S, Device> mask;
    tie(activated, mask) = pack(relu(xd + bias), xd + bias > 0);
    xd = xd * 0.5f;  // in place
    Tensor<f32, S, Host> activated_host = relu(x + bias_host);
    Tensor<bool, S, Host> mask_host = x + bias_host > 0;
    x = x * 0.5f;
    CHECK(same_bits(to_host(activated), activated_host));
    CHECK(same_bits(to_host(mask), mask_host));
    CHECK(same_bits(to_host(xd), x));
}

TEST_CASE("device: random numbers are bit-identical to the host's for the same seed and offset")
{
    using S = Shape<3, 100003>;
    Tensor<f32, S, Device> u = random_uniform<S>(11, 2, -1.0f, 3.0f), z = random_normal<S>(11, 2, 0.5f, 2.0f);
    Tensor<bool, S, Device> b = bernoulli<S>(0.25f, 11, 2);
    Tensor<f32, S, Host> u_host = random_uniform<S>(11, 2, -1.0f, 3.0f), z_host = random_normal<S>(11, 2, 0.5f, 2.0f);
    Tensor<bool, S, Host> b_host = bernoulli<S>(0.25f, 11, 2);
    CHECK(same_bits(to_host(u), u_host));
    CHECK(same_bits(to_host(z), z_host));
    CHECK(same_bits(to_host(b), b_host));
}

TEST_CASE("device: work on a user stream, ordered by the stream")
{
    stream s;
    stream_scope on(s);
    Tensor<f32, Shape<1 << 20>, Device> a = iota<Shape<1 << 20>>(0.0f, 1.0f);
    Tensor<f32, Shape<1 << 20>, Device> b = a * a;
    Tensor<f32, Shape<1 << 20>, HostPinned> pinned;
    copy(pinned, b);
    s.synchronize();
    CHECK(pinned(1000) == 1000000.0f);
}

TEST_CASE("device: augmenting raw bytes on the device is bit-identical to the host")
{
    using S = Shape<300, 28, 28, 1>;
    std::vector<std::uint8_t> raw(S::numel);
    std::mt19937_64 rng(29);
    for (auto& p : raw) p = static_cast<std::uint8_t>(rng());
    buffer<std::uint8_t, Device> raw_device(raw.size(), current_stream());
    copy_bytes<Device, Host>(raw_device.data(), raw.data(), raw.size(), current_stream());
    const data::augment_options<1> options{.pad = 2, .flip = true};
    Tensor<bf16, S, Device> x;
    testing::poison(x);
    x = data::augment<28, 28, 1>(data::pixel_batch<S, Device>{raw_device.data()}, options, 3, 17);
    Tensor<bf16, Shape<300, 784>, Host> x_host = data::augment<28, 28, 1>(
        data::pixel_batch<Shape<300, 784>, Host>{raw.data()}, options, 3, 17);
    CHECK_BITWISE_EQUAL("data::augment (crop, flip, normalise)", to_host(x).data(), x_host.data(), S::numel);
}
