// matmul, its epilogue patterns and the Linear layer's GEMMs on the host,
// against float64 loops over the same (stored) inputs.
//
// Tolerance of a product element against the float64 result: the standard
// bound of a length-K dot product accumulated in f32 plus the final
// rounding, (K + 2) * 2^-24 * sum_k |a_ik b_kj| (u = 2^-53 for f64), plus
// half an ulp of the destination type when it is 16-bit (the one rounding of
// the f32 result). Products of 16-bit inputs are exact in f32, so K and the
// magnitudes are all that matter. An activation after the product adds its
// slope (<= 1.13 for gelu) times that and a few f32 ulps of its own.
// Fused and unfused evaluations on the host run the same GEMM and the same
// pass, so they are compared for exact equality.
#include "tensor_testing.hpp"

#include <tenet/exec/host_threads.hpp>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <numbers>
#include <string>
#include <vector>

using namespace tenet;
using linalg::activation;

namespace {

double unit(std::mt19937_64& rng) { return std::uniform_real_distribution<double>(-1.0, 1.0)(rng); }

template <class T, class S>
Tensor<T, S, Host> random_tensor(std::uint64_t seed)
{
    Tensor<T, S, Host> t;
    testing::fill_random(t, seed, &unit);
    return t;
}

// The logical values of any host expression, in float64 (row-major).
template <class E>
Tensor<f64, typename E::shape, Host> as_f64(const E& e)
{
    Tensor<f64, typename E::shape, Host> t;
    t = e;
    return t;
}

// A batch of float64 matrices (rank 2 is one batch).
struct matrices {
    std::size_t batch = 1, rows = 0, cols = 0;
    std::vector<double> v;
    double operator()(std::size_t b, std::size_t i, std::size_t j) const { return v[(b * rows + i) * cols + j]; }
};

template <class E>
matrices matrices_of(const E& e)
{
    using S = typename E::shape;
    const auto t = as_f64(e);
    matrices m;
    m.batch = S::rank == 3 ? S::extents[0] : 1;
    m.rows = S::extents[S::rank - 2];
    m.cols = S::extents[S::rank - 1];
    m.v.assign(t.data(), t.data() + S::numel);
    return m;
}

// The float64 product and, per element, sum_k |a_ik b_kj|.
struct product_reference {
    matrices value, magnitude;
    std::size_t k = 0;
};

product_reference reference_product(const matrices& a, const matrices& b)
{
    product_reference r;
    r.k = a.cols;
    const std::size_t batch = a.batch > b.batch ? a.batch : b.batch;
    r.value = {batch, a.rows, b.cols, std::vector<double>(batch * a.rows * b.cols)};
    r.magnitude = r.value;
    for (std::size_t n = 0; n < batch; ++n)
        for (std::size_t i = 0; i < a.rows; ++i)
            for (std::size_t j = 0; j < b.cols; ++j) {
                double s = 0, m = 0;
                for (std::size_t k = 0; k < a.cols; ++k) {
                    const double p = a(a.batch > 1 ? n : 0, i, k) * b(b.batch > 1 ? n : 0, k, j);
                    s += p;
                    m += std::fabs(p);
                }
                r.value.v[(n * a.rows + i) * b.cols + j] = s;
                r.magnitude.v[(n * a.rows + i) * b.cols + j] = m;
            }
    return r;
}

template <class E>
product_reference reference_product(const E& a, const auto& b)
{
    return reference_product(matrices_of(a), matrices_of(b));
}

template <class Acc>
constexpr double unit_roundoff = std::is_same_v<Acc, f64> ? 0x1p-53 : 0x1p-24;

// The bound of one product element (see the file comment).
template <class Out, class Acc = compute_t<Out>>
double product_bound(double magnitude, std::size_t k, double want)
{
    double bound = static_cast<double>(k + 2) * unit_roundoff<Acc> * magnitude;
    if constexpr (sizeof(Out) < 4) bound += 0.5 * testing::storage_ulp<Out>(want);
    return bound;
}

// got (any host expression) against the reference product, element by element.
template <class Out, class Acc = compute_t<Out>, class E>
void check_product(const E& got, const product_reference& r)
{
    const auto g = as_f64(got);
    mismatch_log log;
    for (std::size_t i = 0; i < r.value.v.size(); ++i) {
        const double want = r.value.v[i], bound = product_bound<Out, Acc>(r.magnitude.v[i], r.k, want);
        if (!(std::fabs(g.data()[i] - want) <= bound))
            log.add("element %zu: got %.9g, want %.9g (bound %.3g)", i, g.data()[i], want, bound);
    }
    CHECK_NO_MISMATCH(log);
}

// Bit-for-bit equality of two host tensors of one type.
template <class T, class S>
void check_identical(const Tensor<T, S, Host>& x, const Tensor<T, S, Host>& y)
{
    mismatch_log log;
    for (std::size_t i = 0; i < S::numel; ++i)
        if (std::memcmp(&x.data()[i], &y.data()[i], sizeof(T)) != 0)
            log.add("element %zu: %.9g vs %.9g", i, convert<f64>(x.data()[i]), convert<f64>(y.data()[i]));
    CHECK_NO_MISMATCH(log);
}

template <class T, std::size_t M, std::size_t K, std::size_t N>
void plain_product()
{
    CAPTURE(M);
    CAPTURE(K);
    CAPTURE(N);
    const auto a = random_tensor<T, Shape<M, K>>(M * 1000 + K);
    const auto b = random_tensor<T, Shape<K, N>>(N * 1000 + K + 1);
    Tensor<T, Shape<M, N>, Host> y;
    testing::poison(y);
    y = matmul(a, b);
    check_product<T>(y, reference_product(a, b));
}

}  // namespace

TEST_CASE_TEMPLATE("matmul: rank 2 against float64, shapes not multiples of 8", T, f32, f64, f16, bf16)
{
    plain_product<T, 1, 1, 1>();
    plain_product<T, 7, 13, 5>();
    plain_product<T, 33, 17, 65>();
    plain_product<T, 1, 40, 9>();
    plain_product<T, 64, 128, 32>();
    plain_product<T, 130, 3, 70>();
}

// The product under one thread count after another, against its bits
// under the count of its first use (a weight gradient's shape: a^T b).
template <class T, std::size_t M, std::size_t K, std::size_t N>
void same_bits_under_thread_counts()
{
    const host_threads_scope two(2);
    const auto at = random_tensor<T, Shape<K, M>>(M + K);
    const auto b = random_tensor<T, Shape<K, N>>(N);
    Tensor<T, Shape<M, N>, Host> first, again;
    testing::poison(first);
    first = matmul(transpose(at), b);
    check_product<T>(first, reference_product(transpose(at), b));
    for (const int threads : {1, 3, 2, 1}) {
        const host_threads_scope scope(threads);
        testing::poison(again);
        again = matmul(transpose(at), b);
        CAPTURE(threads);
        CHECK(std::memcmp(first.data(), again.data(), sizeof(T) * M * N) == 0);
    }
    CHECK(host_threads() == 2);
}

TEST_CASE_TEMPLATE("matmul: the same bits under any thread count", T, f32, bf16)
{
    // oneDNN splits a long inner dimension's sum among threads when the
    // output is small (here under 2 threads, not 1); such products are cut
    // into fixed slices of that dimension
    same_bits_under_thread_counts<T, 32, 8192, 10>();
    same_bits_under_thread_counts<T, 96, 200, 64>();
}

// A long inner dimension in slices (linalg/onednn_inner_slices.hpp), first
// used under 1 thread: every slice's offset in both layouts of each operand
// (a wrong one fails the float64 comparison), slices of unequal length, and
// the same bits under 2 and 3 threads.
template <class T, std::size_t M, std::size_t K, std::size_t N>
void sliced_product_first_used_alone()
{
    const host_threads_scope one(1);
    const auto at = random_tensor<T, Shape<K, M>>(3 * K + M);
    const auto a = random_tensor<T, Shape<M, K>>(5 * K + M);
    const auto b = random_tensor<T, Shape<K, N>>(7 * K + N);
    const auto bt = random_tensor<T, Shape<N, K>>(11 * K + N);
    Tensor<T, Shape<M, N>, Host> y[4], again;
    for (Tensor<T, Shape<M, N>, Host>& t : y) testing::poison(t);
    y[0] = matmul(transpose(at), b);
    y[1] = matmul(a, b);
    y[2] = matmul(a, transpose(bt));
    y[3] = matmul(transpose(at), transpose(bt));
    check_product<T>(y[0], reference_product(transpose(at), b));
    check_product<T>(y[1], reference_product(a, b));
    check_product<T>(y[2], reference_product(a, transpose(bt)));
    check_product<T>(y[3], reference_product(transpose(at), transpose(bt)));
    for (const int threads : {2, 3}) {
        const host_threads_scope scope(threads);
        CAPTURE(threads);
        testing::poison(again);
        again = matmul(transpose(at), b);
        CHECK(std::memcmp(y[0].data(), again.data(), sizeof(T) * M * N) == 0);
        testing::poison(again);
        again = matmul(a, transpose(bt));
        CHECK(std::memcmp(y[2].data(), again.data(), sizeof(T) * M * N) == 0);
    }
}

TEST_CASE_TEMPLATE("matmul: a long inner dimension in fixed slices", T, f32, bf16)
{
#if defined(TENET_WITH_ONEDNN)
    using linalg::detail::inner_slices;
    constexpr auto weight_gradient = [](std::size_t m, std::size_t k, std::size_t n) {
        return linalg::detail::gemm_dims{m, n, k, 1, {true, m, 0}, {false, n, 0}, {false, n, 0}};
    };
    CHECK(inner_slices(weight_gradient(64, 4096, 128)) == 4);  // the ViT's, batch 256 x 16 tokens
    CHECK(inner_slices(weight_gradient(784, 256, 256)) == 1);  // the MLP's
#endif
    sliced_product_first_used_alone<T, 24, 3001, 9>();         // 2 slices: 1501 and 1500
    sliced_product_first_used_alone<T, 7, 5000, 33>();         // 4 slices: 1250 each
}

TEST_CASE_TEMPLATE("matmul: transposed, sliced and strided operands", T, f32, bf16)
{
    const auto at = random_tensor<T, Shape<13, 7>>(1);   // a = at^T: [7, 13]
    const auto b = random_tensor<T, Shape<13, 5>>(2);
    const auto bt = random_tensor<T, Shape<5, 13>>(3);   // b = bt^T
    const auto wide = random_tensor<T, Shape<7, 20>>(4); // a = its first 13 columns (ld 20)
    Tensor<T, Shape<7, 5>, Host> y;

    SUBCASE("transposed left operand")
    {
        testing::poison(y);
        y = matmul(transpose(at), b);
        check_product<T>(y, reference_product(transpose(at), b));
    }
    SUBCASE("transposed right operand")
    {
        testing::poison(y);
        y = matmul(transpose(at), transpose(bt));
        check_product<T>(y, reference_product(transpose(at), transpose(bt)));
    }
    SUBCASE("a column slice (row-major, leading dimension 20)")
    {
        testing::poison(y);
        y = matmul(slice<1, 0, 13>(wide), b);
        check_product<T>(y, reference_product(slice<1, 0, 13>(wide), b));
    }
    SUBCASE("every other column (no BLAS layout: copied first)")
    {
        const auto wider = random_tensor<T, Shape<7, 26>>(5);
        testing::poison(y);
        y = matmul(slice<1, 0, 26, 2>(wider), b);
        check_product<T>(y, reference_product(slice<1, 0, 26, 2>(wider), b));
    }
    SUBCASE("expression operands are evaluated first")
    {
        // two expressions: multiplied in their compute type (f32), unrounded
        testing::poison(y);
        y = matmul(transpose(at) * 2.0f, b + 1.0f);
        check_product<T, f32>(y, reference_product(transpose(at) * 2.0f, b + 1.0f));
        // next to a tensor: rounded to its type, as an assignment to such a tensor would
        testing::poison(y);
        y = matmul(transpose(at), b + 1.0f);
        Tensor<T, Shape<13, 5>, Host> b1 = b + 1.0f;
        check_product<T>(y, reference_product(transpose(at), b1));
    }
    SUBCASE("a transposed destination")
    {
        Tensor<T, Shape<5, 7>, Host> yt;
        testing::poison(yt);
        transpose(yt) = matmul(transpose(at), b);
        check_product<T>(transpose(yt), reference_product(transpose(at), b));
    }
}

TEST_CASE_TEMPLATE("matmul: batched rank 3, shared weights, broadcast left", T, f32, f16, bf16)
{
    SUBCASE("[4, 9, 11] x [4, 11, 6]")
    {
        const auto a = random_tensor<T, Shape<4, 9, 11>>(10);
        const auto b = random_tensor<T, Shape<4, 11, 6>>(11);
        Tensor<T, Shape<4, 9, 6>, Host> y;
        testing::poison(y);
        y = matmul(a, b);
        check_product<T>(y, reference_product(a, b));
    }
    SUBCASE("[3, 10, 7] x [7, 5]: shared weights (one taller GEMM)")
    {
        const auto a = random_tensor<T, Shape<3, 10, 7>>(12);
        const auto w = random_tensor<T, Shape<5, 7>>(13);
        Tensor<T, Shape<3, 10, 5>, Host> y;
        testing::poison(y);
        y = matmul(a, transpose(w));
        check_product<T>(y, reference_product(a, transpose(w)));
    }
    SUBCASE("[3, 10, 7] permuted from [10, 3, 7] x [7, 5]: batches interleaved")
    {
        const auto x = random_tensor<T, Shape<10, 3, 7>>(14);
        const auto b = random_tensor<T, Shape<7, 5>>(15);
        Tensor<T, Shape<3, 10, 5>, Host> y;
        testing::poison(y);
        y = matmul(permute<1, 0, 2>(x), b);
        check_product<T>(y, reference_product(permute<1, 0, 2>(x), b));
    }
    SUBCASE("[6, 4] x [2, 4, 3]: one left matrix for every batch")
    {
        const auto a = random_tensor<T, Shape<6, 4>>(16);
        const auto b = random_tensor<T, Shape<2, 4, 3>>(17);
        Tensor<T, Shape<2, 6, 3>, Host> y;
        testing::poison(y);
        y = matmul(a, b);
        check_product<T>(y, reference_product(a, b));
    }
    SUBCASE("batched with transposed matrices on both sides")
    {
        const auto at = random_tensor<T, Shape<2, 8, 5>>(18);
        const auto bt = random_tensor<T, Shape<2, 3, 8>>(19);
        Tensor<T, Shape<2, 5, 3>, Host> y;
        testing::poison(y);
        y = matmul(transpose(at), transpose(bt));
        check_product<T>(y, reference_product(transpose(at), transpose(bt)));
    }
}

TEST_CASE("matmul: precision")
{
    const auto a = random_tensor<f32, Shape<9, 21>>(20);
    const auto b = random_tensor<f32, Shape<21, 4>>(21);
    const auto ah = random_tensor<bf16, Shape<9, 21>>(22);

    static_assert(std::is_same_v<decltype(matmul(ah, transpose(ah)))::value_type, f32>, "f32 accumulation");
    static_assert(std::is_same_v<decltype(matmul(ah, transpose(ah)))::precision::storage, bf16>);
    static_assert(std::is_same_v<decltype(matmul(ah, b))::precision::storage, f32>, "mixed types: common compute type");
    static_assert(std::is_same_v<decltype(matmul(ah * 2.0f, b))::precision::storage, f32>);
    static_assert(std::is_same_v<decltype(matmul(ah, transpose(ah * 2.0f)))::precision::storage, bf16>,
                  "an expression operand takes the tensor operand's type");

    SUBCASE("matmul<bf16_mixed> rounds f32 operands to bf16, accumulates in f32")
    {
        Tensor<f32, Shape<9, 4>, Host> y;
        testing::poison(y);
        y = matmul<bf16_mixed>(a, b);
        Tensor<bf16, Shape<9, 21>, Host> ar = a;
        Tensor<bf16, Shape<21, 4>, Host> br = b;
        check_product<f32>(y, reference_product(ar, br));
        // and it is not the f32 product (the rounding happened)
        Tensor<f32, Shape<9, 4>, Host> exact = matmul(a, b);
        bool differs = false;
        for (std::size_t i = 0; i < 36; ++i) differs |= y.data()[i] != exact.data()[i];
        CHECK(differs);
    }
    SUBCASE("mixed bf16 x f32 multiplies in f32 without rounding the f32 operand")
    {
        Tensor<f32, Shape<9, 4>, Host> y;
        testing::poison(y);
        y = matmul(ah, b);
        check_product<f32>(y, reference_product(ah, b));
    }
    SUBCASE("fp32_tf32 is plain f32 on the host")
    {
        Tensor<f32, Shape<9, 4>, Host> y, z;
        y = matmul<fp32_tf32>(a, b);
        z = matmul(a, b);
        check_identical(y, z);
    }
    SUBCASE("f64 accumulation of f32 storage (a policy asking for it)")
    {
        using f64_sums = training_precision<f32, f32, f64, f32>;
        Tensor<f64, Shape<9, 4>, Host> y;
        y = matmul<f64_sums>(a, b);
        check_product<f64>(y, reference_product(a, b));
    }
}

TEST_CASE("matmul: destinations that overlap an operand, and moved-from operands")
{
    auto a = random_tensor<f32, Shape<8, 8>>(30);
    const auto b = random_tensor<f32, Shape<8, 8>>(31);
    const auto want = reference_product(a, b);
    a = matmul(a, b);  // computed into scratch first
    check_product<f32>(a, want);

    Tensor<f32, Shape<8, 8>, Host> moved = std::move(a);
    Tensor<f32, Shape<8, 8>, Host> y;
    CHECK_THROWS_AS(y = matmul(a, b), tenet::error);
    (void)moved;
}

TEST_CASE("matmul inside larger expressions: evaluated once into scratch, then one pass")
{
    const auto a = random_tensor<f32, Shape<12, 30>>(40);
    const auto b = random_tensor<f32, Shape<30, 9>>(41);
    const auto c = random_tensor<f32, Shape<12, 9>>(42);
    const auto r = reference_product(a, b);
    const auto cc = as_f64(c);

    SUBCASE("y = tanh(matmul(a, b)) * 2 + c")
    {
        Tensor<f32, Shape<12, 9>, Host> y, unfused;
        testing::poison(y);
        y = tanh(matmul(a, b)) * 2 + c;
        Tensor<f32, Shape<12, 9>, Host> p = matmul(a, b);
        unfused = tanh(p) * 2 + c;
        check_identical(y, unfused);
        mismatch_log log;
        for (std::size_t i = 0; i < 108; ++i) {
            const double want = std::tanh(r.value.v[i]) * 2 + cc.data()[i];
            const double bound = 2 * product_bound<f32>(r.magnitude.v[i], r.k, 0) + 8 * 0x1p-24 * (std::fabs(want) + 2);
            if (!(std::fabs(y.data()[i] - want) <= bound)) log.add("element %zu: got %.9g want %.9g", i, y.data()[i], want);
        }
        CHECK_NO_MISMATCH(log);
    }
    SUBCASE("a reduction of a product")
    {
        Tensor<f32, Shape<12>, Host> s;
        testing::poison(s);
        s = sum<1>(matmul(a, b));
        for (std::size_t i = 0; i < 12; ++i) {
            double want = 0, bound = 0;
            for (std::size_t j = 0; j < 9; ++j) {
                want += r.value.v[i * 9 + j];
                bound += product_bound<f32>(r.magnitude.v[i * 9 + j], r.k + 9, 0);
            }
            CHECK(std::fabs(s(i) - want) <= bound);
        }
    }
    SUBCASE("two products in one expression")
    {
        Tensor<f32, Shape<12, 9>, Host> y;
        testing::poison(y);
        y = matmul(a, b) - matmul(a, b * 0.5f);
        for (std::size_t i = 0; i < 108; ++i)
            CHECK(std::fabs(y.data()[i] - 0.5 * r.value.v[i]) <= 3 * product_bound<f32>(r.magnitude.v[i], r.k, 0));
    }
}

namespace {

double act_f64(activation act, double x)
{
    switch (act) {
    case activation::relu: return x > 0 ? x : 0;
    case activation::gelu: return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    case activation::gelu_tanh: return 0.5 * x * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
    case activation::none: return x;
    }
    return x;
}

double act_derivative_f64(activation act, double x)
{
    switch (act) {
    case activation::relu: return x > 0 ? 1 : 0;
    case activation::gelu:
        return 0.5 * (1 + std::erf(x / std::sqrt(2.0))) + x * std::exp(-0.5 * x * x) / std::sqrt(2 * std::numbers::pi);
    case activation::gelu_tanh: {
        const double k = std::sqrt(2 / std::numbers::pi), c = 0.044715, t = std::tanh(k * (x + c * x * x * x));
        return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * c * x * x);
    }
    case activation::none: return 1;
    }
    return 1;
}

// y (any host expression) against act(product + bias) in float64.
template <class Out, class E>
void check_activated(const E& y, const product_reference& r, const std::vector<double>& bias, activation act)
{
    const auto g = as_f64(y);
    const std::size_t n = r.value.cols;
    mismatch_log log;
    for (std::size_t i = 0; i < r.value.v.size(); ++i) {
        const double pre = r.value.v[i] + bias[i % n];
        const double want = act_f64(act, pre);
        const double bound = 1.13 * product_bound<f32>(r.magnitude.v[i] + std::fabs(bias[i % n]), r.k + 1, 0) +
                             8 * 0x1p-24 * (std::fabs(want) + 1e-3) + product_bound<Out>(0, 0, want);
        if (!(std::fabs(g.data()[i] - want) <= bound))
            log.add("element %zu: got %.9g, want %.9g (bound %.3g)", i, g.data()[i], want, bound);
    }
    CHECK_NO_MISMATCH(log);
}

template <class V>
std::vector<double> values_of(const V& v)
{
    const auto t = as_f64(v);
    return {t.data(), t.data() + V::shape::numel};
}

}  // namespace

TEST_CASE_TEMPLATE("epilogue patterns equal their unfused evaluation and float64", T, f32, f16, bf16)
{
    constexpr std::size_t M = 33, In = 17, Out = 20;
    const auto x = random_tensor<T, Shape<M, In>>(50);
    const auto w = random_tensor<T, Shape<Out, In>>(51);
    const auto b = random_tensor<T, Shape<Out>>(52);
    const auto b32 = random_tensor<f32, Shape<Out>>(53);
    const auto r = reference_product(x, transpose(w));
    const auto bias = values_of(b), bias32 = values_of(b32);
    const std::vector<double> no_bias(Out, 0.0);
    Tensor<T, Shape<M, Out>, Host> y, unfused;
    Tensor<f32, Shape<M, Out>, Host> p = matmul(x, transpose(w));  // the unfused product, unrounded

    SUBCASE("matmul + b")
    {
        testing::poison(y);
        y = matmul(x, transpose(w)) + b;
        unfused = p + b;
        check_identical(y, unfused);
        check_activated<T>(y, r, bias, activation::none);
    }
    SUBCASE("b + matmul, f32 bias")
    {
        testing::poison(y);
        y = b32 + matmul(x, transpose(w));
        unfused = b32 + p;
        check_identical(y, unfused);
        check_activated<T>(y, r, bias32, activation::none);
    }
    SUBCASE("relu(matmul + b)")
    {
        testing::poison(y);
        y = relu(matmul(x, transpose(w)) + b);
        unfused = relu(p + b);
        check_identical(y, unfused);
        check_activated<T>(y, r, bias, activation::relu);
    }
    SUBCASE("relu(b + matmul)")
    {
        testing::poison(y);
        y = relu(b + matmul(x, transpose(w)));
        unfused = relu(b + p);
        check_identical(y, unfused);
        check_activated<T>(y, r, bias, activation::relu);
    }
    SUBCASE("gelu(matmul + b), erf form")
    {
        testing::poison(y);
        y = gelu(matmul(x, transpose(w)) + b);
        unfused = gelu(p + b);
        check_identical(y, unfused);
        check_activated<T>(y, r, bias, activation::gelu);
    }
    SUBCASE("gelu_tanh(matmul + b)")
    {
        testing::poison(y);
        y = gelu_tanh(matmul(x, transpose(w)) + b32);
        unfused = gelu_tanh(p + b32);
        check_identical(y, unfused);
        check_activated<T>(y, r, bias32, activation::gelu_tanh);
    }
    SUBCASE("relu(matmul) and gelu_tanh(matmul) without a bias")
    {
        testing::poison(y);
        y = relu(matmul(x, transpose(w)));
        unfused = relu(p);
        check_identical(y, unfused);
        check_activated<T>(y, r, no_bias, activation::relu);
        testing::poison(y);
        y = gelu_tanh(matmul(x, transpose(w)));
        unfused = gelu_tanh(p);
        check_identical(y, unfused);
        check_activated<T>(y, r, no_bias, activation::gelu_tanh);
    }
    SUBCASE("an f32 destination of 16-bit inputs")
    {
        Tensor<f32, Shape<M, Out>, Host> y32, unfused32;
        testing::poison(y32);
        y32 = relu(matmul(x, transpose(w)) + b);
        unfused32 = relu(p + b);
        check_identical(y32, unfused32);
        check_activated<f32>(y32, r, bias, activation::relu);
    }
    SUBCASE("batched: relu(matmul([2, M, In], w^T) + b)")
    {
        const auto x3 = random_tensor<T, Shape<2, M, In>>(54);
        Tensor<T, Shape<2, M, Out>, Host> y3, unfused3;
        testing::poison(y3);
        y3 = relu(matmul(x3, transpose(w)) + b);
        Tensor<f32, Shape<2, M, Out>, Host> p3 = matmul(x3, transpose(w));
        unfused3 = relu(p3 + b);
        check_identical(y3, unfused3);
        check_activated<T>(y3, reference_product(x3, transpose(w)), bias, activation::relu);
    }
}

TEST_CASE("activation derivatives against central differences in float64")
{
    // The functors' own derivatives (what the Linear backward and gradients(...) use).
    const ops::gelu g;
    const ops::gelu_tanh gt;
    const auto dg = [&](double x) { return g.derivative<0>(x); };
    const auto dgt = [&](double x) { return gt.derivative<0>(x); };
    for (double x = -6; x <= 6; x += 0.01) {
        const double h = 1e-5;
        CHECK(std::fabs(dg(x) - (g(x + h) - g(x - h)) / (2 * h)) <= 1e-8);
        CHECK(std::fabs(dgt(x) - (gt(x + h) - gt(x - h)) / (2 * h)) <= 1e-8);
        CHECK(std::fabs(dg(x) - act_derivative_f64(activation::gelu, x)) <= 1e-12);
        CHECK(std::fabs(dgt(x) - act_derivative_f64(activation::gelu_tanh, x)) <= 1e-12);
    }
}

namespace {

constexpr std::size_t M = 24, In = 20, Out = 12;

template <activation Act, class T>
void check_forward()
{
    CAPTURE(static_cast<int>(Act));
    const auto x = random_tensor<T, Shape<M, In>>(60);
    const auto w = random_tensor<T, Shape<Out, In>>(61);
    const auto b = random_tensor<T, Shape<Out>>(62);
    const auto r = reference_product(x, transpose(w));
    const auto bias = values_of(b);
    Tensor<T, Shape<M, Out>, Host> y;

    testing::poison(y);
    linalg::linear_forward<Act>(y, x, w, b);
    check_activated<T>(y, r, bias, Act);

    // with aux: the same y, and aux holds what the backward reads
    Tensor<T, Shape<M, Out>, Host> y2;
    linalg::aux_tensor_t<Act, T, Shape<M, Out>, Host> aux;
    testing::poison(y2);
    if constexpr (Act != activation::none) testing::poison(aux);
    linalg::linear_forward<Act>(y2, aux, x, w, b);
    check_activated<T>(y2, r, bias, Act);
    // (relu only: the two-destination pass of the aux variant is a scalar loop,
    // whose tanh and erf may differ in the last bit from the vectorised one)
    if constexpr (Act == activation::relu || Act == activation::none) check_identical(y, y2);

    Tensor<f32, Shape<M, Out>, Host> pre = matmul(x, transpose(w)) + b;  // the f32 pre-activation
    if constexpr (Act == activation::relu) {
        static_assert(std::is_same_v<decltype(aux), Tensor<i8, Shape<M, 16>, Host>>, "a row of 128 bits");
        mismatch_log log;
        for (std::size_t m = 0; m < M; ++m)
            for (std::size_t n = 0; n < 128; ++n) {
                const bool bit = (static_cast<unsigned char>(aux(m, n / 8)) >> (n % 8)) & 1;
                const bool want = n < Out && pre(m, n) > 0;
                if (bit != want) log.add("row %zu bit %zu: %d", m, n, int(bit));
            }
        CHECK_NO_MISMATCH(log);
    } else if constexpr (Act != activation::none) {
        static_assert(std::is_same_v<decltype(aux), Tensor<T, Shape<M, 16>, Host>>, "rows padded to 8 elements");
        Tensor<T, Shape<M, Out>, Host> saved = slice<1, 0, Out>(aux), want;
        want = pre;
        check_identical(saved, want);
    }
}

// Backward through a Linear of activation Act whose forward wrote aux:
// dz_prev = (dz w2) * act'(pre), db_prev = column sums of dz_prev.
template <activation Act, class T, class G>
void check_backward_input_act()
{
    CAPTURE(static_cast<int>(Act));
    const auto x = random_tensor<T, Shape<M, In>>(70);
    const auto w1 = random_tensor<T, Shape<Out, In>>(71);
    const auto b1 = random_tensor<T, Shape<Out>>(72);
    const auto w2 = random_tensor<T, Shape<9, Out>>(73);
    const auto dz = random_tensor<T, Shape<M, 9>>(74);
    Tensor<T, Shape<M, Out>, Host> h;
    linalg::aux_tensor_t<Act, T, Shape<M, Out>, Host> aux;
    linalg::linear_forward<Act>(h, aux, x, w1, b1);

    Tensor<T, Shape<M, Out>, Host> dz_prev;
    Tensor<G, Shape<Out>, Host> db_prev;
    testing::poison(dz_prev);
    testing::poison(db_prev);
    linalg::linear_backward_input_act<Act>(dz_prev, db_prev, dz, w2, aux);

    // the derivative as the forward saved it: the mask bit, or act' of the stored pre-activation
    const auto r = reference_product(dz, w2);
    std::vector<double> d(M * Out, 1.0);
    for (std::size_t m = 0; m < M; ++m)
        for (std::size_t n = 0; n < Out; ++n) {
            if constexpr (Act == activation::relu) d[m * Out + n] = (static_cast<unsigned char>(aux(m, n / 8)) >> (n % 8)) & 1;
            else if constexpr (Act != activation::none) d[m * Out + n] = act_derivative_f64(Act, convert<f64>(aux(m, n)));
        }
    const auto got = as_f64(dz_prev);
    const auto got_db = as_f64(db_prev);
    mismatch_log log;
    for (std::size_t n = 0; n < Out; ++n) {
        double db_want = 0, db_bound = 0;
        for (std::size_t m = 0; m < M; ++m) {
            const std::size_t i = m * Out + n;
            const double want = r.value.v[i] * d[i];
            const double bound = 1.13 * product_bound<f32>(r.magnitude.v[i], r.k, 0) +
                                 16 * 0x1p-24 * std::fabs(r.value.v[i]) + product_bound<T>(0, 0, want);
            if (!(std::fabs(got.data()[i] - want) <= bound)) log.add("dz_prev %zu: got %.9g want %.9g", i, got.data()[i], want);
            db_want += want;
            db_bound += bound - product_bound<T>(0, 0, want) + (M + 2) * 0x1p-24 * std::fabs(want);
        }
        db_bound += product_bound<G>(0, 0, db_want);
        if (!(std::fabs(got_db(n) - db_want) <= db_bound)) log.add("db_prev %zu: got %.9g want %.9g", n, got_db(n), db_want);
    }
    CHECK_NO_MISMATCH(log);
}

}  // namespace

TEST_CASE_TEMPLATE("linalg::linear_forward with and without aux", T, f32, bf16, f16)
{
    check_forward<activation::none, T>();
    check_forward<activation::relu, T>();
    check_forward<activation::gelu, T>();
    check_forward<activation::gelu_tanh, T>();
}

// A mask of 300 rows of 16 bytes: each byte reads 8 pre-activations, so the
// host splits its 4,800 bytes into blocks of 512 across cores (the last one
// partial). Every bit of every block.
TEST_CASE("linalg::linear_forward: a ReLU mask large enough to be split across cores")
{
    constexpr std::size_t rows = 300, in = 20, out = 100;
    const auto x = random_tensor<f32, Shape<rows, in>>(80);
    const auto w = random_tensor<f32, Shape<out, in>>(81);
    const auto b = random_tensor<f32, Shape<out>>(82);
    Tensor<f32, Shape<rows, out>, Host> y;
    linalg::aux_tensor_t<activation::relu, f32, Shape<rows, out>, Host> aux;
    static_assert(std::is_same_v<decltype(aux), Tensor<i8, Shape<rows, 16>, Host>>, "a row of 128 bits");
    testing::poison(aux);
    linalg::linear_forward<activation::relu>(y, aux, x, w, b);
    const Tensor<f32, Shape<rows, out>, Host> pre = matmul(x, transpose(w)) + b;
    mismatch_log log;
    std::size_t set = 0;
    for (std::size_t m = 0; m < rows; ++m)
        for (std::size_t n = 0; n < 128; ++n) {
            const bool bit = (static_cast<unsigned char>(aux(m, n / 8)) >> (n % 8)) & 1;
            const bool want = n < out && pre(m, n) > 0;
            set += bit;
            if (bit != want) log.add("row %zu bit %zu: %d", m, n, int(bit));
        }
    CHECK_NO_MISMATCH(log);
    CHECK(set > rows * out / 4);  // random inputs: both values occur
    CHECK(set < rows * out * 3 / 4);
}

TEST_CASE_TEMPLATE("linalg::linear_backward_weights: dw = dz^T x, db = column sums of dz", T, f32, bf16)
{
    const auto dz = random_tensor<T, Shape<M, Out>>(80);
    const auto x = random_tensor<T, Shape<M, In>>(81);
    const auto r = reference_product(transpose(dz), x);
    const auto dzv = as_f64(dz);

    Tensor<f32, Shape<Out, In>, Host> dw;
    Tensor<f32, Shape<Out>, Host> db;
    testing::poison(dw);
    testing::poison(db);
    linalg::linear_backward_weights(dw, db, dz, x);
    check_product<f32>(dw, r);
    for (std::size_t o = 0; o < Out; ++o) {
        double want = 0, magnitude = 0;
        for (std::size_t m = 0; m < M; ++m) want += dzv(m, o), magnitude += std::fabs(dzv(m, o));
        CHECK(std::fabs(db(o) - want) <= (M + 2) * 0x1p-24 * magnitude);
    }

    Tensor<T, Shape<Out, In>, Host> dw_storage;
    testing::poison(dw_storage);
    linalg::linear_backward_weights(dw_storage, dz, x);
    check_product<T>(dw_storage, r);
}

TEST_CASE_TEMPLATE("linalg::linear_backward_input: dx = dz w", T, f32, bf16)
{
    const auto dz = random_tensor<T, Shape<M, Out>>(90);
    const auto w = random_tensor<T, Shape<Out, In>>(91);
    Tensor<T, Shape<M, In>, Host> dx;
    testing::poison(dx);
    linalg::linear_backward_input(dx, dz, w);
    check_product<T>(dx, reference_product(dz, w));
}

TEST_CASE_TEMPLATE("linalg::linear_backward_input_act: activation derivative and bias gradient", T, f32, bf16)
{
    check_backward_input_act<activation::none, T, f32>();
    check_backward_input_act<activation::relu, T, f32>();
    check_backward_input_act<activation::gelu, T, f32>();
    check_backward_input_act<activation::gelu_tanh, T, f32>();
    check_backward_input_act<activation::relu, T, T>();
}

TEST_CASE("linalg functions take views: a Linear over column slices of wider buffers")
{
    const auto xs = random_tensor<f32, Shape<M, 32>>(100);
    const auto w = random_tensor<f32, Shape<Out, In>>(101);
    const auto b = random_tensor<f32, Shape<Out>>(102);
    Tensor<f32, Shape<M, 16>, Host> ys;
    testing::poison(ys);
    linalg::linear_forward<activation::relu>(slice<1, 0, Out>(ys), slice<1, 0, In>(xs), w, b);
    check_activated<f32>(slice<1, 0, Out>(ys), reference_product(slice<1, 0, In>(xs), transpose(w)), values_of(b),
                         activation::relu);
}
