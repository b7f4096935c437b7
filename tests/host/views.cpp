// Views (reshape, permute, transpose, slice, broadcast_to, unsqueeze,
// squeeze) of tensors and of expressions, read and written, against
// hand-written loops; broadcasting in operators; multi-output assignment.
#include "tensor_testing.hpp"

#include <cstring>

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

namespace {

double moderate(std::mt19937_64& rng) { return std::uniform_real_distribution<double>(-2.0, 2.0)(rng); }

// y = (x - mean) * (rstd * gamma) + beta, as BatchNorm writes it: per-channel
// vectors broadcast over NHWC rows, which the host loop reads in chunks.
template <class T, std::size_t C>
void check_channel_affine()
{
    using S = Shape<3, 5, 7, C>;
    Tensor<T, S, Host> x, y;
    Tensor<f32, Shape<C>, Host> mean, rstd, gamma, beta;
    testing::fill_random(x, 21, &moderate);
    testing::fill_random(mean, 22, &moderate);
    testing::fill_random(rstd, 23, &moderate);
    testing::fill_random(gamma, 24, &moderate);
    testing::fill_random(beta, 25, &moderate);
    testing::poison(y);
    y = (x - mean) * (rstd * gamma) + beta;
    mismatch_log log;
    for (std::size_t i = 0; i < S::numel; ++i) {
        const std::size_t c = i % C;
        const double want = (convert<f64>(x.data()[i]) - mean(c)) * (static_cast<double>(rstd(c)) * gamma(c)) + beta(c);
        const double got = convert<f64>(y.data()[i]);
        if (!(std::fabs(got - want) <= 4 * convert<f64>(numeric_traits<T>::epsilon()) * (std::fabs(want) + 4)))
            log.add("y[%zu] = %a, want %a", i, got, want);
    }
    INFO(numeric_traits<T>::name, " C = ", C);
    CHECK_NO_MISMATCH(log);
}

}  // namespace

TEST_CASE_TEMPLATE("per-channel broadcasts over NHWC rows (the host's chunked walk) match float64", T, f32, bf16, f16)
{
    check_channel_affine<T, 16>();
    check_channel_affine<T, 32>();
    check_channel_affine<T, 48>();
    check_channel_affine<T, 12>();  // chunks do not fit: the element walk
}

TEST_CASE("chunked walks: per-image and per-pixel broadcasts, masks, integers, strided destinations, calls")
{
    using S = Shape<2, 3, 4, 32>;
    Tensor<f32, S, Host> x, y;
    Tensor<f32, Shape<2, 1, 1, 32>, Host> image;  // one vector per image
    Tensor<f32, Shape<2, 3, 4, 1>, Host> pixel;   // one value per pixel (a uniform chunk)
    testing::fill_random(x, 31, &moderate);
    testing::fill_random(image, 32, &moderate);
    testing::fill_random(pixel, 33, &moderate);
    const auto at = [](std::size_t i) { return std::array<std::size_t, 4>{i / 384, i / 128 % 3, i / 32 % 4, i % 32}; };

    testing::poison(y);
    y = where(x > image, x * pixel, image - pixel);
    for (std::size_t i = 0; i < S::numel; ++i) {
        const auto [n, h, w, c] = at(i);
        const float xv = x.data()[i], im = image(n, 0, 0, c), px = pixel(n, h, w, 0);
        REQUIRE(y.data()[i] == (xv > im ? xv * px : im - px));
    }

    Tensor<i32, S, Host> k, ik;
    Tensor<i32, Shape<32>, Host> offsets;
    k = iota<S>(-700, 3);
    offsets = iota<Shape<32>>(5, -2);
    testing::poison(ik);
    ik = k * offsets + offsets / 3;
    for (std::size_t i = 0; i < S::numel; ++i) {
        const std::int32_t kv = k.data()[i], o = offsets(i % 32);
        REQUIRE(ik.data()[i] == kv * o + o / 3);
    }

    // into columns 16..47 of a wider matrix (vector chunks), and 8..39 (not aligned to a chunk)
    Tensor<f32, Shape<24, 64>, Host> wide;
    const auto xm = reshape<Shape<24, 32>>(x);
    Tensor<f32, Shape<32>, Host> scale;
    testing::fill_random(scale, 34, &moderate);
    for (std::size_t first : {std::size_t{16}, std::size_t{8}}) {
        testing::poison(wide);
        Tensor<f32, Shape<24, 64>, Host> before;
        copy(before, wide);
        if (first == 16) slice<1, 16, 48>(wide) = xm * scale;
        else slice<1, 8, 40>(wide) = xm * scale;
        for (std::size_t r = 0; r < 24; ++r)
            for (std::size_t c = 0; c < 64; ++c) {
                const bool inside = c >= first && c < first + 32;
                if (inside) REQUIRE(wide(r, c) == x.data()[r * 32 + c - first] * scale(c - first));
                else REQUIRE(std::memcmp(&wide(r, c), &before(r, c), sizeof(float)) == 0);  // left alone
            }
    }

    // a call (exp) in the chunk walk: applied lane by lane, as the element loop does
    testing::poison(y);
    y = exp(x - image);
    for (std::size_t i = 0; i < S::numel; ++i) {
        const auto [n, h, w, c] = at(i);
        const double want = std::exp(static_cast<double>(x.data()[i]) - image(n, 0, 0, c));
        REQUIRE(std::fabs(y.data()[i] - want) <= 4 * 0x1p-23 * want);
    }
}

// The chunk walk loads each leaf once per 16 elements (a vector, or one value
// for a broadcast) and applies the tree lane by lane (expr/lanes.hpp): views
// of expressions, selects on NaN, masks, storage types and in-place updates.
TEST_CASE_TEMPLATE("the lane-by-lane chunk walk matches the element walk", T, f32, bf16)
{
    using S = Shape<6, 48>;
    Tensor<T, S, Host> x, y, inplace;
    Tensor<f32, Shape<6>, Host> row;
    Tensor<f32, Shape<48>, Host> column;
    testing::fill_random(x, 41, &moderate);
    testing::fill_random(column, 42, &moderate);
    for (std::size_t r = 0; r < 6; ++r) row(r) = static_cast<float>(r % 3);  // 0, 1, 2: padding, real, invalid
    x.data()[5] = convert<T>(std::numeric_limits<float>::quiet_NaN());
    column(7) = std::numeric_limits<float>::quiet_NaN();
    const auto rows = broadcast_to<S>(reshape<Shape<6, 1>>(row));
    const auto columns = broadcast_to<S>(reshape<Shape<1, 48>>(column));
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const auto same = [](double got, double want) { return std::isnan(want) ? std::isnan(got) : got == want; };
    const auto round = [](double v) { return convert<f64>(convert<T>(static_cast<float>(v))); };

    // the trainer's batch staging: a uniform chunk per row, nested selects
    testing::poison(y);
    y = where(rows == 0, 0, where(rows == 1, x, nan));
    for (std::size_t i = 0; i < S::numel; ++i) {
        const float r = row(i / 48);
        const double want = r == 0 ? 0.0 : r == 1 ? convert<f64>(x.data()[i]) : nan;
        REQUIRE(same(convert<f64>(y.data()[i]), want));
    }

    // NaN-propagating max and min against a broadcast column, through a
    // broadcast of an expression (uniform: evaluated once per chunk) and a
    // reshape of one (contiguous: walked)
    testing::poison(y);
    y = min(max(x + columns, broadcast_to<S>(reshape<Shape<6, 1>>(row * 0.5f))),
            reshape<S>(reshape<Shape<288>>(x) * 2.0f + 1.0f));
    for (std::size_t i = 0; i < S::numel; ++i) {
        const float xv = convert<float>(x.data()[i]), lo = row(i / 48) * 0.5f, hi = xv * 2.0f + 1.0f;
        const float s = xv + column(i % 48);
        const float m = std::isnan(s) ? s : (lo > s ? lo : s);
        const double want = round(std::isnan(m) || std::isnan(hi) ? nan : (hi < m ? hi : m));
        REQUIRE(same(convert<f64>(y.data()[i]), want));
    }

    // in place: every lane is read before the chunk is written
    copy(inplace, x);
    inplace = where(rows > 0, inplace * columns, -inplace);
    for (std::size_t i = 0; i < S::numel; ++i) {
        const float xv = convert<float>(x.data()[i]);
        REQUIRE(same(convert<f64>(inplace.data()[i]), round(row(i / 48) > 0 ? xv * column(i % 48) : -xv)));
    }

    // a column reduction (16 columns a chunk) and row reductions (16 elements
    // a step) over broadcasts and calls; x's NaN reaches column 5 and row 0
    Tensor<f32, Shape<48>, Host> shift, column_sums;
    Tensor<f32, Shape<6>, Host> row_max;
    testing::fill_random(shift, 43, &moderate);
    testing::poison(column_sums);
    testing::poison(row_max);
    column_sums = sum<0>(exp(x * 0.5f - broadcast_to<S>(reshape<Shape<1, 48>>(shift))) * rows);
    row_max = max<1>(tanh(x + broadcast_to<S>(reshape<Shape<1, 48>>(shift))));
    for (std::size_t c = 0; c < 48; ++c) {
        double want = 0, magnitude = 0;
        for (std::size_t r = 0; r < 6; ++r) {
            const double term = std::exp(convert<f64>(x(r, c)) * 0.5 - shift(c)) * row(r);
            want += term;
            magnitude += std::fabs(term);
        }
        INFO("column ", c);
        if (std::isnan(want)) REQUIRE(std::isnan(column_sums(c)));
        else REQUIRE(std::fabs(column_sums(c) - want) <= 1e-5 * magnitude + 1e-30);
    }
    for (std::size_t r = 0; r < 6; ++r) {
        double want = -2;
        for (std::size_t c = 0; c < 48; ++c) {
            const double v = std::tanh(convert<f64>(x(r, c)) + shift(c));
            want = std::isnan(want) ? want : std::isnan(v) ? v : std::max(want, v);
        }
        INFO("row ", r);
        if (std::isnan(want)) REQUIRE(std::isnan(row_max(r)));
        else REQUIRE(std::fabs(row_max(r) - want) <= 4e-7);
    }

    // a comparison's mask as the result (bool, then i32)
    Tensor<i32, S, Host> flags;
    testing::poison(flags);
    flags = cast<i32>(x > columns) + cast<i32>(rows != 1);
    for (std::size_t i = 0; i < S::numel; ++i)
        REQUIRE(flags.data()[i] == int(convert<float>(x.data()[i]) > column(i % 48)) + int(row(i / 48) != 1));
}

TEST_CASE("the host walks per-channel broadcasts in chunks, contiguous reads and calls element by element")
{
    Tensor<f32, Shape<8, 32>, Host> x;
    Tensor<f32, Shape<32>, Host> m;
    Tensor<f32, Shape<8, 12>, Host> narrow;
    Tensor<f32, Shape<12>, Host> n;
    exec_context<Host> context(current_stream());
    const auto walk = [&](const auto& e) { return internal::host_walk_of<decltype(e.prepare(context)), 16>(); };
    CHECK(walk(x) == internal::host_walk::either);
    CHECK(walk(x * 2.0f + x) == internal::host_walk::either);
    CHECK(walk(x - m) == internal::host_walk::chunks);
    CHECK(walk(where(x > m, x, m)) == internal::host_walk::chunks);
    CHECK(walk(exp(x - m)) == internal::host_walk::chunks);  // calls too: applied lane by lane
    CHECK(walk(exp(x)) == internal::host_walk::either);
    CHECK(walk(narrow - n) == internal::host_walk::elements);  // 12 columns: chunks of 16 would gather
    CHECK(walk(transpose(x)) == internal::host_walk::elements);
}

TEST_CASE("copy of a broadcast view repeats its row (a broadcast is not contiguous: no memcpy past the source)")
{
    Tensor<f32, Shape<3>, Host> row;
    testing::fill_random(row, 51, &moderate);
    Tensor<f32, Shape<4, 3>, Host> full;
    testing::poison(full);
    copy(full, broadcast_to<Shape<4, 3>>(row));
    for (std::size_t i = 0; i < 4; ++i)
        for (std::size_t j = 0; j < 3; ++j) REQUIRE(full(i, j) == row(j));
}
