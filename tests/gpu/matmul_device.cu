// matmul, its fused epilogues and the Linear layer's GEMMs on the device
// (cuBLASLt) against the host (Eigen, itself checked against float64 in
// tests/host/matmul.cpp), on the same stored inputs.
//
// Tolerance: both results are within the K-dependent bound of the float64
// product, (K + 2) u sum_k |a_ik b_kj| (u = 2^-24 for f32 accumulation,
// 2^-53 for f64), plus half an ulp of a 16-bit result; so they are within
// twice that of each other. TF32 rounds each input to 10 significand bits
// first: u = 2^-11 for the products. cuBLASLt's GELU epilogue is its own
// implementation of the tanh form (accuracy undocumented): its results may
// differ by 2^-10 relative to tenet's gelu_tanh.
#include "device_testing.hpp"

#include <cmath>
#include <cstddef>
#include <vector>

using namespace tenet;
using linalg::activation;
using testing::to_device;
using testing::to_host;

namespace {

double unit(std::mt19937_64& rng) { return std::uniform_real_distribution<double>(-1.0, 1.0)(rng); }

template <class T, class S>
Tensor<T, S, Host> random_host(std::uint64_t seed)
{
    Tensor<T, S, Host> t;
    testing::fill_random(t, seed, &unit);
    return t;
}

struct tolerance {
    std::size_t k;
    double u = 0x1p-24;       // of the products' accumulation
    double slope = 1;         // of what follows the product (1.13 for gelu)
    double relative = 0;      // of the result, for activation implementations
};

// sum_k |a_ik b_kj| in float64, on the host.
template <class A, class B>
auto magnitude(const A& a, const B& b)
{
    Tensor<f64, typename decltype(matmul(a, b))::shape, Host> m;
    m = matmul(abs(cast<f64>(a)), abs(cast<f64>(b)));
    return m;
}

template <class T, class S>
void check_against_host(const Tensor<T, S, Device>& device, const Tensor<T, S, Host>& host,
                        const Tensor<f64, S, Host>& mag, tolerance tol)
{
    const auto got = to_host(device);
    mismatch_log log;
    for (std::size_t i = 0; i < S::numel; ++i) {
        const double g = convert<f64>(got.data()[i]), want = convert<f64>(host.data()[i]);
        double bound = 2 * tol.slope * static_cast<double>(tol.k + 2) * tol.u * mag.data()[i] + tol.relative * std::fabs(want);
        if constexpr (sizeof(T) < 4) bound += testing::storage_ulp<T>(want);
        if (!(std::fabs(g - want) <= bound)) log.add("element %zu: device %.9g, host %.9g (bound %.3g)", i, g, want, bound);
    }
    CHECK_NO_MISMATCH(log);
}

template <class T, std::size_t M, std::size_t K, std::size_t N>
void plain_product()
{
    CAPTURE(M);
    CAPTURE(K);
    CAPTURE(N);
    const auto a = random_host<T, Shape<M, K>>(M * 1000 + K);
    const auto b = random_host<T, Shape<K, N>>(N * 1000 + K + 1);
    const auto ad = to_device(a);
    const auto bd = to_device(b);
    Tensor<T, Shape<M, N>, Device> y;
    testing::poison(y);
    y = matmul(ad, bd);
    Tensor<T, Shape<M, N>, Host> want = matmul(a, b);
    check_against_host(y, want, magnitude(a, b), {K, std::is_same_v<T, f64> ? 0x1p-53 : 0x1p-24});
}

}  // namespace

TEST_CASE_TEMPLATE("device matmul: rank 2 agrees with the host", T, f32, f16, bf16)
{
    // (not [1, 1]: the core's elementwise kernel for fewer elements than one
    // chunk does not compile under --Werror, see exec/launch.hpp)
    plain_product<T, 1, 5, 9>();
    plain_product<T, 7, 13, 5>();
    plain_product<T, 33, 17, 65>();
    plain_product<T, 128, 256, 64>();
    plain_product<T, 256, 784, 256>();
}

TEST_CASE("device matmul: f64")
{
    plain_product<f64, 7, 13, 5>();
    plain_product<f64, 64, 96, 40>();
}

TEST_CASE_TEMPLATE("device matmul: transposed, sliced and batched operands", T, f32, bf16)
{
    const auto at = random_host<T, Shape<13, 7>>(1);
    const auto bt = random_host<T, Shape<5, 13>>(2);
    const auto wide = random_host<T, Shape<7, 24>>(3);
    const auto atd = to_device(at);
    const auto btd = to_device(bt);
    const auto wided = to_device(wide);

    Tensor<T, Shape<7, 5>, Device> y;
    testing::poison(y);
    y = matmul(transpose(atd), transpose(btd));
    Tensor<T, Shape<7, 5>, Host> want = matmul(transpose(at), transpose(bt));
    check_against_host(y, want, magnitude(transpose(at), transpose(bt)), {13});

    testing::poison(y);
    y = matmul(slice<1, 3, 16>(wided), transpose(btd));  // leading dimension 24, offset 3 elements
    want = matmul(slice<1, 3, 16>(wide), transpose(bt));
    check_against_host(y, want, magnitude(slice<1, 3, 16>(wide), transpose(bt)), {13});

    const auto wider = random_host<T, Shape<7, 26>>(4);
    const auto wider_d = to_device(wider);
    testing::poison(y);
    y = matmul(slice<1, 0, 26, 2>(wider_d), transpose(btd));  // every other column: copied first
    want = matmul(slice<1, 0, 26, 2>(wider), transpose(bt));
    check_against_host(y, want, magnitude(slice<1, 0, 26, 2>(wider), transpose(bt)), {13});

    const auto a3 = random_host<T, Shape<4, 9, 11>>(5);
    const auto b3 = random_host<T, Shape<4, 11, 6>>(6);
    Tensor<T, Shape<4, 9, 6>, Device> y3;
    testing::poison(y3);
    const auto a3d = to_device(a3);
    const auto b3d = to_device(b3);
    y3 = matmul(a3d, b3d);
    Tensor<T, Shape<4, 9, 6>, Host> want3 = matmul(a3, b3);
    check_against_host(y3, want3, magnitude(a3, b3), {11});

    const auto x = random_host<T, Shape<10, 3, 7>>(7);
    const auto w = random_host<T, Shape<5, 7>>(8);
    const auto xd = to_device(x);
    const auto wd = to_device(w);
    Tensor<T, Shape<3, 10, 5>, Device> ys;
    testing::poison(ys);
    ys = matmul(permute<1, 0, 2>(xd), transpose(wd));  // batches interleaved, shared weights (batch stride 0)
    Tensor<T, Shape<3, 10, 5>, Host> wants = matmul(permute<1, 0, 2>(x), transpose(w));
    check_against_host(ys, wants, magnitude(permute<1, 0, 2>(x), transpose(w)), {7});

    const auto xc = random_host<T, Shape<3, 10, 7>>(9);
    testing::poison(ys);
    const auto xcd = to_device(xc);
    ys = matmul(xcd, transpose(wd));  // stacked: one taller GEMM
    wants = matmul(xc, transpose(w));
    check_against_host(ys, wants, magnitude(xc, transpose(w)), {7});
}

TEST_CASE("device matmul: precision policies")
{
    const auto a = random_host<f32, Shape<64, 200>>(10);
    const auto b = random_host<f32, Shape<200, 48>>(11);
    const auto ad = to_device(a);
    const auto bd = to_device(b);
    const auto mag = magnitude(a, b);
    Tensor<f32, Shape<64, 48>, Host> want = matmul(a, b);
    Tensor<f32, Shape<64, 48>, Device> y;

    testing::poison(y);
    y = matmul<fp32_tf32>(ad, bd);
    check_against_host(y, want, mag, {200, 0x1p-11});

    testing::poison(y);
    y = matmul<bf16_mixed>(ad, bd);  // operands rounded to bf16 on both sides
    Tensor<f32, Shape<64, 48>, Host> want_bf16 = matmul<bf16_mixed>(a, b);
    check_against_host(y, want_bf16, mag, {200});

    Tensor<bf16, Shape<64, 200>, Host> ah = a;
    Tensor<f32, Shape<64, 48>, Device> y_mixed;  // bf16 inputs, f32 result written by cuBLASLt
    const auto ahd = to_device(ah);
    y_mixed = matmul(ahd, cast<bf16>(bd));
    Tensor<f32, Shape<64, 48>, Host> want_mixed = matmul(ah, cast<bf16>(b));
    check_against_host(y_mixed, want_mixed, mag, {200});
}

TEST_CASE_TEMPLATE("device epilogues agree with the host's GEMM + pass", T, f32, f16, bf16)
{
    constexpr std::size_t M = 33, In = 17, Out = 24;
    const auto x = random_host<T, Shape<M, In>>(20);
    const auto w = random_host<T, Shape<Out, In>>(21);
    const auto b = random_host<T, Shape<Out>>(22);
    const auto b32 = random_host<f32, Shape<Out>>(23);
    const auto xd = to_device(x);
    const auto wd = to_device(w);
    const auto bd = to_device(b);
    const auto b32d = to_device(b32);
    auto mag = magnitude(x, transpose(w));
    mag = mag + abs(cast<f64>(b32)) + abs(cast<f64>(b));
    Tensor<T, Shape<M, Out>, Device> y;
    Tensor<T, Shape<M, Out>, Host> want;
    const tolerance plain{In + 1}, activated{In + 1, 0x1p-24, 1.13, 0x1p-10};

    SUBCASE("bias")
    {
        testing::poison(y);
        y = matmul(xd, transpose(wd)) + bd;
        want = matmul(x, transpose(w)) + b;
        check_against_host(y, want, mag, plain);
    }
    SUBCASE("f32 bias first, 16-bit result")
    {
        testing::poison(y);
        y = b32d + matmul(xd, transpose(wd));
        want = b32 + matmul(x, transpose(w));
        check_against_host(y, want, mag, plain);
    }
    SUBCASE("relu + bias")
    {
        testing::poison(y);
        y = relu(matmul(xd, transpose(wd)) + bd);
        want = relu(matmul(x, transpose(w)) + b);
        check_against_host(y, want, mag, plain);
    }
    SUBCASE("gelu_tanh + bias (cuBLASLt's GELU)")
    {
        testing::poison(y);
        y = gelu_tanh(matmul(xd, transpose(wd)) + bd);
        want = gelu_tanh(matmul(x, transpose(w)) + b);
        check_against_host(y, want, mag, activated);
    }
    SUBCASE("gelu (erf) + bias: GEMM, then one pass")
    {
        testing::poison(y);
        y = gelu(matmul(xd, transpose(wd)) + bd);
        want = gelu(matmul(x, transpose(w)) + b);
        check_against_host(y, want, mag, {In + 1, 0x1p-24, 1.13, 0x1p-21});
    }
    SUBCASE("relu without a bias")
    {
        testing::poison(y);
        y = relu(matmul(xd, transpose(wd)));
        want = relu(matmul(x, transpose(w)));
        check_against_host(y, want, mag, plain);
    }
    SUBCASE("f32 result of 16-bit inputs, relu + bias")
    {
        Tensor<f32, Shape<M, Out>, Device> y32;
        testing::poison(y32);
        y32 = relu(matmul(xd, transpose(wd)) + b32d);
        Tensor<f32, Shape<M, Out>, Host> want32 = relu(matmul(x, transpose(w)) + b32);
        check_against_host(y32, want32, mag, plain);
    }
    SUBCASE("batched relu + bias")
    {
        const auto x3 = random_host<T, Shape<2, M, In>>(24);
        Tensor<T, Shape<2, M, Out>, Device> y3;
        testing::poison(y3);
        const auto x3d = to_device(x3);
        y3 = relu(matmul(x3d, transpose(wd)) + bd);
        Tensor<T, Shape<2, M, Out>, Host> want3 = relu(matmul(x3, transpose(w)) + b);
        auto mag3 = magnitude(x3, transpose(w));
        mag3 = mag3 + abs(cast<f64>(b));
        check_against_host(y3, want3, mag3, plain);
    }
    SUBCASE("any other expression: the product into scratch, then one pass")
    {
        const auto c = random_host<T, Shape<M, Out>>(25);
        testing::poison(y);
        const auto cd = to_device(c);
        y = tanh(matmul(xd, transpose(wd))) * 2 + cd;
        want = tanh(matmul(x, transpose(w))) * 2 + c;
        check_against_host(y, want, mag, {In + 1, 0x1p-24, 2, 0x1p-21});
    }
}

TEST_CASE("device epilogues: stream-aware, cached plans, capturable in a CUDA graph")
{
    constexpr std::size_t M = 64, In = 96, Out = 40;
    const auto x = to_device(random_host<bf16, Shape<M, In>>(30));
    const auto w = to_device(random_host<bf16, Shape<Out, In>>(31));
    const auto b = to_device(random_host<bf16, Shape<Out>>(32));
    Tensor<bf16, Shape<M, Out>, Device> eager, replayed;
    const int declined = linalg::detail::lt_declined_plans();
    eager = relu(matmul(x, transpose(w)) + b);  // builds and caches the plan
    CHECK(linalg::detail::lt_declined_plans() == declined);  // bf16 RELU_BIAS: one fused cuBLASLt call

    tenet::stream s;
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    {
        stream_scope on(s);
        replayed = relu(matmul(x, transpose(w)) + b);  // warm: this stream's workspace
        testing::poison(replayed);
        TENET_CUDA_CHECK(cudaStreamBeginCapture(s.get(), cudaStreamCaptureModeGlobal));
        replayed = relu(matmul(x, transpose(w)) + b);
        TENET_CUDA_CHECK(cudaStreamEndCapture(s.get(), &graph));
    }
    TENET_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    TENET_CUDA_CHECK(cudaGraphLaunch(exec, s.get()));
    s.synchronize();
    const auto e = to_host(eager), r = to_host(replayed);
    mismatch_log log;
    for (std::size_t i = 0; i < M * Out; ++i)
        if (convert<f32>(e.data()[i]) != convert<f32>(r.data()[i])) log.add("element %zu", i);
    CHECK_NO_MISMATCH(log);  // the same cached algorithm: the same bits
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
}

namespace {

constexpr std::size_t M = 48, In = 40, Hidden = 36, Out = 24;

// One hidden layer forward and backward on both sides, compared.
template <activation Act, class T, class G>
void check_layer()
{
    CAPTURE(static_cast<int>(Act));
    const auto x = random_host<T, Shape<M, In>>(40);
    const auto w1 = random_host<T, Shape<Hidden, In>>(41);
    const auto b1 = random_host<T, Shape<Hidden>>(42);
    const auto w2 = random_host<T, Shape<Out, Hidden>>(43);
    const auto dz = random_host<T, Shape<M, Out>>(44);
    const auto xd = to_device(x);
    const auto w1d = to_device(w1);
    const auto b1d = to_device(b1);
    const auto w2d = to_device(w2);
    const auto dzd = to_device(dz);
    const tolerance forward_tol{In + 1, 0x1p-24, 1.13, Act == activation::gelu_tanh ? 0x1p-10 : 0x1p-21};
    auto mag1 = magnitude(x, transpose(w1));
    mag1 = mag1 + abs(cast<f64>(b1));

    // forward, with aux
    Tensor<T, Shape<M, Hidden>, Device> h;
    linalg::aux_tensor_t<Act, T, Shape<M, Hidden>, Device> aux;
    testing::poison(h);
    linalg::linear_forward<Act>(h, aux, xd, w1d, b1d);
    Tensor<T, Shape<M, Hidden>, Host> h_host;
    linalg::aux_tensor_t<Act, T, Shape<M, Hidden>, Host> aux_host;
    linalg::linear_forward<Act>(h_host, aux_host, x, w1, b1);
    check_against_host(h, h_host, mag1, forward_tol);

    // the saved aux: mask bits agree except next to zero; pre-activations within rounding
    Tensor<f32, Shape<M, Hidden>, Host> pre_host = matmul(x, transpose(w1)) + b1;
    if constexpr (Act == activation::relu) {
        const auto bits = to_host(aux);
        mismatch_log log;
        for (std::size_t m = 0; m < M; ++m)
            for (std::size_t n = 0; n < Hidden; ++n) {
                const auto bit = [&](const auto& t) { return (static_cast<unsigned char>(t(m, n / 8)) >> (n % 8)) & 1; };
                const double near_zero = 2 * (In + 3) * 0x1p-24 * mag1(m, n);
                if (bit(bits) != bit(aux_host) && std::fabs(pre_host(m, n)) > near_zero) log.add("bit %zu, %zu", m, n);
            }
        CHECK_NO_MISMATCH(log);
    } else if constexpr (Act != activation::none) {
        Tensor<T, Shape<M, Hidden>, Device> saved = slice<1, 0, Hidden>(aux);
        Tensor<T, Shape<M, Hidden>, Host> saved_host = slice<1, 0, Hidden>(aux_host);
        check_against_host(saved, saved_host, mag1, {In + 1});
    }

    // weight gradients of the second layer: dw2 = dz^T h, db2 = column sums of dz (f32 from 16-bit)
    Tensor<G, Shape<Out, Hidden>, Device> dw;
    Tensor<G, Shape<Out>, Device> db;
    testing::poison(dw);
    testing::poison(db);
    linalg::linear_backward_weights(dw, db, dzd, h);
    const auto h_used = to_host(h);  // the device's activations, on both sides
    Tensor<G, Shape<Out, Hidden>, Host> dw_host;
    Tensor<G, Shape<Out>, Host> db_host;
    linalg::linear_backward_weights(dw_host, db_host, dz, h_used);
    check_against_host(dw, dw_host, magnitude(transpose(dz), h_used), {M});
    Tensor<f64, Shape<Out>, Host> db_mag = sum<0>(abs(cast<f64>(dz)));
    check_against_host(db, db_host, db_mag, {M});

    // the gradient into the hidden layer: (dz w2) * act'(pre), and its bias gradient,
    // from the device's aux on both sides
    Tensor<T, Shape<M, Hidden>, Device> dz_prev;
    Tensor<G, Shape<Hidden>, Device> db_prev;
    testing::poison(dz_prev);
    testing::poison(db_prev);
    linalg::linear_backward_input_act<Act>(dz_prev, db_prev, dzd, w2d, aux);
    Tensor<T, Shape<M, Hidden>, Host> dz_prev_host;
    Tensor<G, Shape<Hidden>, Host> db_prev_host;
    linalg::aux_tensor_t<Act, T, Shape<M, Hidden>, Host> aux_used;
    if constexpr (Act != activation::none) copy(aux_used, aux);
    current_stream().synchronize();
    linalg::linear_backward_input_act<Act>(dz_prev_host, db_prev_host, dz, w2, aux_used);
    const Tensor<f64, Shape<M, Hidden>, Host> mag2 = magnitude(dz, w2);
    const tolerance backward_tol{Out, 0x1p-24, 1.13, Act == activation::gelu_tanh ? 0x1p-10 : 0x1p-21};
    check_against_host(dz_prev, dz_prev_host, mag2, backward_tol);
    Tensor<f64, Shape<Hidden>, Host> db_prev_mag = sum<0>(mag2);
    check_against_host(db_prev, db_prev_host, db_prev_mag, {Out + M, 0x1p-24, 1.13, 0x1p-10});

    // dx = dz w2 (no activation)
    Tensor<T, Shape<M, Hidden>, Device> dx;
    testing::poison(dx);
    linalg::linear_backward_input(dx, dzd, w2d);
    Tensor<T, Shape<M, Hidden>, Host> dx_host;
    linalg::linear_backward_input(dx_host, dz, w2);
    check_against_host(dx, dx_host, mag2, {Out});
}

}  // namespace

TEST_CASE_TEMPLATE("device linalg: Linear forward and backward agree with the host", T, f32, bf16, f16)
{
    check_layer<activation::none, T, f32>();
    check_layer<activation::relu, T, f32>();
    check_layer<activation::gelu_tanh, T, f32>();
    check_layer<activation::gelu, T, f32>();
    check_layer<activation::relu, T, T>();  // bias gradients in the storage type
    // which fused forms this GPU's cuBLASLt lacked (they ran as GEMM + tenet passes)
    MESSAGE("GEMM types cuBLASLt declined so far: ", linalg::detail::lt_declined_plans().load());
}
