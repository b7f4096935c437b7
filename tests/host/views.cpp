// Views (reshape, permute, transpose, slice, broadcast_to, unsqueeze,
// squeeze) of tensors and of expressions, read and written, against
// hand-written loops; broadcasting in operators; multi-output assignment.
#include "tensor_testing.hpp"

using namespace tenet;

namespace {

template <class T, class S>
void fill_index(Tensor<T, S, Host>& t)
{
    for (std::size_t i = 0; i < S::numel; ++i) t.data()[i] = static_cast<T>(i);
}

}  // namespace

TEST_CASE("permute and transpose of a tensor and of an expression")
{
    Tensor<f32, Shape<2, 3, 4>, Host> x;
    fill_index(x);
    Tensor<f32, Shape<4, 2, 3>, Host> p, q;
    testing::poison(p);
    p = permute<2, 0, 1>(x);
    q = permute<2, 0, 1>(x + 0.0f);  // a view of an expression re-indexes it
    Tensor<f32, Shape<2, 4, 3>, Host> t = transpose(x);
    for (std::size_t i = 0; i < 2; ++i)
        for (std::size_t j = 0; j < 3; ++j)
            for (std::size_t k = 0; k < 4; ++k) {
                REQUIRE(p(k, i, j) == x(i, j, k));
                REQUIRE(q(k, i, j) == x(i, j, k));
                REQUIRE(t(i, k, j) == x(i, j, k));
            }
}

TEST_CASE("slices with steps, read and written")
{
    Tensor<i32, Shape<5, 7>, Host> x;
    fill_index(x);
    Tensor<i32, Shape<2, 3>, Host> s = slice<1, 1, 7, 2>(slice<0, 2, 4>(x));
    for (std::size_t i = 0; i < 2; ++i)
        for (std::size_t j = 0; j < 3; ++j) REQUIRE(s(i, j) == x(2 + i, 1 + 2 * j));
    slice<1, 0, 7, 3>(x) = -1;  // columns 0, 3, 6
    CHECK(x(4, 3) == -1);
    CHECK(x(4, 4) == 32);
    Tensor<i32, Shape<5, 3>, Host> from_expression = slice<1, 0, 7, 3>(x * 2);
    CHECK(from_expression(1, 1) == -2);
}

TEST_CASE("reshape, unsqueeze and squeeze keep row-major order")
{
    Tensor<f32, Shape<3, 4>, Host> x;
    fill_index(x);
    Tensor<f32, Shape<2, 6>, Host> r = reshape<Shape<2, 6>>(x);
    CHECK(r(1, 0) == 6.0f);
    Tensor<f32, Shape<4, 3>, Host> rt = reshape<Shape<4, 3>>(transpose(x));  // non-contiguous: re-indexed
    CHECK(rt(0, 1) == x(1, 0));
    CHECK(rt(1, 0) == x(0, 1));
    Tensor<f32, Shape<3, 1, 4>, Host> u = unsqueeze<1>(x);
    CHECK(u(2, 0, 3) == 11.0f);
    Tensor<f32, Shape<3, 4>, Host> s = squeeze<1>(u);
    CHECK(s(2, 3) == 11.0f);
    reshape<Shape<12>>(x) = iota<Shape<12>>(100.0f, 1.0f);  // writing through a contiguous reshape
    CHECK(x(2, 3) == 111.0f);
}

TEST_CASE("reshape of an expression re-indexes it, fused, in row-major order")
{
    Tensor<f32, Shape<3, 4>, Host> x;
    testing::fill_random(x, 21);  // specials included: the expression carries them
    Tensor<f32, Shape<6, 2>, Host> y;
    testing::poison(y);
    y = reshape<Shape<6, 2>>(x * x + 1.0f) * 0.5f;
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < 12; ++i) {
        const double v = static_cast<double>(x.data()[i]), want = (v * v + 1.0) * 0.5;
        wrong += !testing::close<f32>(static_cast<double>(y(i / 2, i % 2)), want, want, {1.5, 0});
    }
    CHECK(wrong == 0);
    Tensor<f32, Shape<3, 4>, Host> n;
    fill_index(n);
    Tensor<f32, Shape<2, 2, 3>, Host> z = reshape<Shape<2, 2, 3>>(transpose(n) - 1.0f);  // re-indexing a re-indexing
    CHECK(z(1, 0, 2) == n(2, 2) - 1.0f);  // index 8 of n^T (4 x 3) is n^T(2, 2)
    CHECK(z(0, 1, 0) == n(0, 1) - 1.0f);  // index 3 is n^T(1, 0)
}

TEST_CASE("broadcasting follows NumPy rules in every operator")
{
    Tensor<f32, Shape<4, 1, 3>, Host> a;
    Tensor<f32, Shape<5, 1>, Host> b;
    Tensor<f32, Shape<3>, Host> c;
    testing::fill_random(a, 11);
    testing::fill_random(b, 12);
    testing::fill_random(c, 13);
    Tensor<f32, Shape<4, 5, 3>, Host> y;
    testing::poison(y);
    y = a * b - c + 2.0f;
    for (std::size_t i = 0; i < 4; ++i)
        for (std::size_t j = 0; j < 5; ++j)
            for (std::size_t k = 0; k < 3; ++k) {
                const float want = a(i, 0, k) * b(j, 0) - c(k) + 2.0f;
                REQUIRE((std::isnan(want) ? std::isnan(y(i, j, k)) : y(i, j, k) == want));
            }
    Tensor<f32, Shape<4, 5, 3>, Host> z = broadcast_to<Shape<4, 5, 3>>(c);
    CHECK(z(3, 4, 2) == c(2));
    y = 1.5f;  // a scalar broadcasts to the whole destination
    CHECK(y(3, 4, 2) == 1.5f);
    y = c;  // so does a smaller expression
    CHECK(y(2, 1, 1) == c(1));
}

TEST_CASE("tie(...) = pack(...) writes several destinations in one traversal")
{
    Tensor<f32, Shape<33, 17>, Host> x, activated;
    Tensor<bool, Shape<33, 17>, Host> mask;
    Tensor<bf16, Shape<33, 17>, Host> rounded;
    testing::fill_random(x, 21);
    testing::poison(activated);
    tie(activated, mask, rounded) = pack(relu(x), x > 0, x);
    for (std::size_t i = 0; i < 33 * 17; ++i) {
        const float v = x.data()[i];
        REQUIRE((std::isnan(v) ? std::isnan(activated.data()[i]) : activated.data()[i] == (v < 0 ? 0.0f : v)));
        REQUIRE(mask.data()[i] == (v > 0));
        REQUIRE(detail::numeric::to_bits(rounded.data()[i]) == detail::numeric::to_bits(convert<bf16>(v)));
    }
}

TEST_CASE("fill sets every element; iota counts in row-major order")
{
    Tensor<bf16, Shape<3, 5>, Host> t;
    testing::poison(t);
    fill(t, 0.25);
    for (std::size_t i = 0; i < 15; ++i) REQUIRE(convert<f32>(t.data()[i]) == 0.25f);
    fill(slice<1, 0, 5, 2>(t), -1);  // a view
    CHECK(convert<f32>(t(2, 4)) == -1.0f);
    CHECK(convert<f32>(t(2, 3)) == 0.25f);

    Tensor<i32, Shape<3, 4>, Host> n = iota<Shape<3, 4>>(10, 3);
    CHECK(n(2, 3) == 10 + 3 * 11);
    Tensor<f32, Shape<5>, Host> f = iota<Shape<5>>(-1.0f, 0.5f);
    CHECK(f(4) == 1.0f);
}
