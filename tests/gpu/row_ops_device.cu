// Row-wise NN ops on the device against the same ops on the host (which
// tests/host/row_ops.cpp checks against float64 and finite differences):
// every op and precision, rows handled by a warp (short), a block (long) and a
// block re-reading its row (too long to cache), vector and scalar chunks,
// padding rows, out-of-range labels, determinism, and a CUDA Graph replay
// with the loss scale read on the device. Also active learning's uncertainty
// scores and top_k (CUB's radix sort) against the host's.
#include "device_testing.hpp"

#include <cmath>
#include <cstring>
#include <vector>

using namespace tenet;
using testing::to_device;
using testing::to_host;

namespace {

template <class S>
constexpr std::size_t row_length = S::extents[S::rank - 1];
template <class S>
using rows_of = detail::rowwise::rows_shape_t<S>;
template <class S>
using columns_of = Shape<row_length<S>>;

template <class T, class S>
void fill_normal(Tensor<T, S, Host>& t, std::uint64_t seed, double offset = 0, double spread = 1)
{
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> normal(0.0, 1.0);
    for (std::size_t i = 0; i < S::numel; ++i) t.data()[i] = convert<T>(offset + spread * normal(rng));
}

// Device against host: within one unit of T in the last place (the two round
// f32 results that may straddle a rounding boundary) plus `ulps` of f32 at
// |host| + floor (different summation orders, CUDA's math functions). NaN
// must match NaN.
template <class T, class S>
void expect_agree(mismatch_log& log, const char* what, const Tensor<T, S, Device>& device,
                  const Tensor<T, S, Host>& host, double ulps, double floor)
{
    const auto got = to_host(device);
    for (std::size_t i = 0; i < S::numel; ++i) {
        const double d = convert<f64>(got.data()[i]), h = convert<f64>(host.data()[i]);
        if (std::isnan(d) || std::isnan(h)) {
            if (std::isnan(d) != std::isnan(h)) log.add("%s[%zu]: device %.9g, host %.9g", what, i, d, h);
            continue;
        }
        if (std::isinf(d) || std::isinf(h)) {
            if (d != h) log.add("%s[%zu]: device %.9g, host %.9g", what, i, d, h);
            continue;
        }
        const double allowed = testing::storage_ulp<T>(h) + ulps * 0x1p-23 * (std::fabs(h) + floor);
        if (!(std::fabs(d - h) <= allowed)) log.add("%s[%zu]: device %.9g, host %.9g", what, i, d, h);
    }
}

double sum_ulps(std::size_t n) { return 8.0 + static_cast<double>(n) / 2; }

// A device tensor whose data starts one element past a 16-byte boundary: its
// chunks cannot use vector accesses, so the op takes its scalar path.
template <class T, class S>
class misaligned {
public:
    explicit misaligned(const Tensor<T, S, Host>& h) : storage_(S::numel + 8, current_stream())
    {
        TENET_CUDA_CHECK(cudaMemcpyAsync(view().data(), h.data(), sizeof(T) * S::numel, cudaMemcpyHostToDevice,
                                         current_stream().get()));
    }
    auto view() const { return make_view<S, Device>(storage_.data() + 1); }

private:
    buffer<T, Device> storage_;
};

// ------------------------------------------------------------------ softmax

template <class T, class S>
void compare_softmax(std::uint64_t seed, double offset, double spread)
{
    constexpr std::size_t n = row_length<S>;
    Tensor<T, S, Host> x, y_host, ly_host, fused_host, dx_host, ldx_host, dy;
    fill_normal(x, seed, offset, spread);
    fill_normal(dy, seed + 1);
    if constexpr (S::numel > 3 * n) {  // a NaN row and a row of -inf
        x.data()[n + 1] = convert<T>(NAN);
        for (std::size_t j = 0; j < n; ++j) x.data()[2 * n + j] = convert<T>(-INFINITY);
    }
    y_host = softmax(x);
    ly_host = log_softmax(x);
    fused_host = softmax(x * 0.5f) + 1.0f;
    softmax_backward(dx_host, dy, y_host);
    log_softmax_backward(ldx_host, dy, ly_host);

    const auto xd = to_device(x), dyd = to_device(dy);
    Tensor<T, S, Device> y, ly, fused, dx, ldx;
    for (auto* t : {&y, &ly, &fused, &dx, &ldx}) testing::poison(*t);
    y = softmax(xd);
    ly = log_softmax(xd);
    fused = softmax(xd * 0.5f) + 1.0f;  // the input fused in; the result materialised once
    softmax_backward(dx, dyd, to_device(y_host));
    log_softmax_backward(ldx, dyd, to_device(ly_host));

    mismatch_log log;
    expect_agree(log, "softmax", y, y_host, sum_ulps(n), 1);
    expect_agree(log, "log_softmax", ly, ly_host, sum_ulps(n), 1);
    expect_agree(log, "softmax(x * 0.5) + 1", fused, fused_host, sum_ulps(n), 1);
    expect_agree(log, "softmax_backward", dx, dx_host, sum_ulps(n), 1);
    expect_agree(log, "log_softmax_backward", ldx, ldx_host, sum_ulps(n), 1);

    const misaligned<T, S> x_odd(x);  // the scalar-chunk kernel
    Tensor<T, S, Device> y_odd;
    testing::poison(y_odd);
    y_odd = softmax(x_odd.view());
    expect_agree(log, "softmax (misaligned input)", y_odd, y_host, sum_ulps(n), 1);
    INFO(numeric_traits<T>::name, " rows of ", n);
    CHECK_NO_MISMATCH(log);
}

// ---------------------------------------------------------------- layernorm

template <class T, class S>
void compare_layernorm(std::uint64_t seed, double offset, double spread)
{
    constexpr std::size_t n = row_length<S>;
    using C = columns_of<S>;
    using R = rows_of<S>;
    Tensor<T, S, Host> x, dy, y_host, dx_host;
    Tensor<T, C, Host> gamma, beta;
    Tensor<f32, C, Host> dg_host, db_host;
    Tensor<f32, R, Host> mean_host, rstd_host;
    fill_normal(x, seed, offset, spread);
    fill_normal(dy, seed + 1);
    fill_normal(gamma, seed + 2, 1, 0.5);
    fill_normal(beta, seed + 3, 0, 0.5);
    layernorm_forward(y_host, mean_host, rstd_host, x, gamma, beta);
    layernorm_backward(dx_host, dg_host, db_host, dy, x, mean_host, rstd_host, gamma);

    const auto xd = to_device(x), dyd = to_device(dy);
    const auto gd = to_device(gamma), bd = to_device(beta);
    Tensor<T, S, Device> y, dx;
    Tensor<f32, R, Device> mean, rstd;
    Tensor<f32, C, Device> dg, db, dg2, db2;
    for (auto* t : {&y, &dx}) testing::poison(*t);
    for (auto* t : {&mean, &rstd}) testing::poison(*t);
    for (auto* t : {&dg, &db}) testing::poison(*t);
    layernorm_forward(y, mean, rstd, xd, gd, bd);
    // the backward from the host's saved statistics: compares the backward alone
    const auto mean_d = to_device(mean_host), rstd_d = to_device(rstd_host);
    layernorm_backward(dx, dg, db, dyd, xd, mean_d, rstd_d, gd);
    layernorm_backward(dx, dg2, db2, dyd, xd, mean_d, rstd_d, gd);

    mismatch_log log;
    const double rows = static_cast<double>(S::numel / n);
    expect_agree(log, "y", y, y_host, 4 * sum_ulps(n), 4);
    expect_agree(log, "mean", mean, mean_host, sum_ulps(n), std::fabs(offset) + spread);
    expect_agree(log, "rstd", rstd, rstd_host, 2 * sum_ulps(n), 0);
    expect_agree(log, "dx", dx, dx_host, 4 * sum_ulps(n), 4);
    // column sums over the rows: bounded by rows x |dy| x (1 + |xhat|)
    expect_agree(log, "dgamma", dg, dg_host, sum_ulps(static_cast<std::size_t>(rows)), 2 * rows);
    expect_agree(log, "dbeta", db, db_host, sum_ulps(static_cast<std::size_t>(rows)), 2 * rows);
    const auto g1 = to_host(dg), g2 = to_host(dg2), b1 = to_host(db), b2 = to_host(db2);
    CHECK_BITWISE_EQUAL("layernorm dgamma, run twice", g2.data(), g1.data(), n);  // deterministic: same bits again
    CHECK_BITWISE_EQUAL("layernorm dbeta, run twice", b2.data(), b1.data(), n);

    const misaligned<T, S> x_odd(x);
    Tensor<T, S, Device> y_odd;
    testing::poison(y_odd);
    layernorm_forward(y_odd, mean, rstd, x_odd.view(), gd, bd);
    expect_agree(log, "y (misaligned input)", y_odd, y_host, 4 * sum_ulps(n), 4);
    INFO(numeric_traits<T>::name, " rows of ", n);
    CHECK_NO_MISMATCH(log);
}

// ------------------------------------------------------------ cross-entropy

// Labels in range; every third row padding with an out-of-range label.
template <class S>
struct labelled_batch {
    static constexpr std::size_t n = row_length<S>, rows = S::numel / n;
    Tensor<i32, rows_of<S>, Host> labels;
    Tensor<bool, rows_of<S>, Host> valid;

    explicit labelled_batch(std::uint64_t seed, bool any_valid = true)
    {
        std::mt19937_64 rng(seed);
        for (std::size_t r = 0; r < rows; ++r) {
            const bool ok = any_valid && r % 3 != 2;
            labels.data()[r] = ok ? static_cast<i32>(rng() % n) : -7;
            valid.data()[r] = ok;
        }
    }
};

double loss_of(const Tensor<f32, Shape<>, Device>& loss) { return to_host(loss).data()[0]; }

template <class T, class S>
void compare_losses(std::uint64_t seed, double spread, float smoothing = 0)
{
    const label_smoothing e{smoothing};
    constexpr std::size_t n = row_length<S>;
    const labelled_batch<S> batch(seed);
    Tensor<T, S, Host> x, target, probs_host, dx_host, dp_host;
    Tensor<f32, Shape<>, Host> ce_host, mse_host, scale_host;
    fill_normal(x, seed, 0, spread);
    fill_normal(target, seed + 1);
    scale_host.data()[0] = 0.375f;
    cross_entropy_forward(ce_host, probs_host, x, batch.labels, batch.valid, e);
    cross_entropy_backward(dx_host, probs_host, batch.labels, batch.valid, scale_host, e);
    mse_forward(mse_host, x, target, batch.valid);
    mse_backward(dp_host, x, target, batch.valid, 2.5f);

    const auto xd = to_device(x), td = to_device(target);
    const auto scale = to_device(scale_host);
    const auto labels = to_device(batch.labels);
    const auto valid = to_device(batch.valid);
    Tensor<T, S, Device> probs, dx, dp;
    Tensor<f32, Shape<>, Device> ce, ce2, mse;
    for (auto* t : {&probs, &dx, &dp}) testing::poison(*t);
    for (auto* t : {&ce, &ce2, &mse}) testing::poison(*t);
    cross_entropy_forward(ce, probs, xd, labels, valid, e);
    cross_entropy_forward(ce2, probs, xd, labels, valid, e);
    cross_entropy_backward(dx, to_device(probs_host), labels, valid, scale, e);  // scale read on the device
    mse_forward(mse, xd, td, valid);
    mse_backward(dp, xd, td, valid, 2.5f);

    mismatch_log log;
    expect_agree(log, "probs", probs, probs_host, sum_ulps(n), 1);
    expect_agree(log, "dlogits", dx, dx_host, 8, 0);
    expect_agree(log, "dpred", dp, dp_host, 8, 0);
    const double rows = static_cast<double>(S::numel / n);
    const double ce_d = loss_of(ce), ce_h = ce_host.data()[0], mse_d = loss_of(mse), mse_h = mse_host.data()[0];
    CHECK(std::fabs(ce_d - ce_h) <= (sum_ulps(n) + rows) * 0x1p-23 * (std::fabs(ce_h) + spread));
    CHECK(std::fabs(mse_d - mse_h) <= sum_ulps(S::numel) * 0x1p-23 * mse_h);
    CHECK(loss_of(ce2) == ce_d);  // deterministic
    const auto padding = to_host(dx);
    for (std::size_t i = 0; i < S::numel; ++i)
        if (!batch.valid.data()[i / n] && convert<f64>(padding.data()[i]) != 0.0) log.add("padding dlogits[%zu]", i);
    INFO(numeric_traits<T>::name, " rows of ", n, ", label smoothing ", smoothing);
    CHECK_NO_MISMATCH(log);
}

}  // namespace

TEST_CASE_TEMPLATE("device: softmax, log_softmax and their backwards agree with the host", T, f32, bf16, f16)
{
    compare_softmax<T, Shape<300, 7>>(1, 0, 3);     // a warp per row, scalar chunks
    compare_softmax<T, Shape<64, 128>>(2, 0, 3);    // a warp per row, vector chunks
    compare_softmax<T, Shape<9, 1000>>(3, 1e4, 3);  // a warp per long row
    compare_softmax<T, Shape<5, 4096>>(4, 0, 1e4);  // a block per row
    compare_softmax<T, Shape<2, 70001>>(5, 0, 3);   // a block re-reading its row
    compare_softmax<T, Shape<4, 5, 33>>(6, 0, 3);
    compare_softmax<T, Shape<1000, 1>>(7, 0, 3);
}

TEST_CASE_TEMPLATE("device: layernorm forward and backward agree with the host", T, f32, bf16, f16)
{
    compare_layernorm<T, Shape<300, 7>>(10, 0, 1);
    compare_layernorm<T, Shape<2000, 100>>(11, 0, 1);  // warp teams: partial rows combined in shared memory
    compare_layernorm<T, Shape<64, 1024>>(12, 5, 2);
    compare_layernorm<T, Shape<3, 16384>>(13, 0, 1);   // the backward re-reads its rows
    compare_layernorm<T, Shape<4, 5, 33>>(14, 0, 1);
}

TEST_CASE_TEMPLATE("device: cross-entropy and MSE agree with the host; padding rows ignored", T, f32, bf16, f16)
{
    compare_losses<T, Shape<256, 10>>(20, 3);
    compare_losses<T, Shape<64, 1000>>(21, 1e4);
    compare_losses<T, Shape<6, 50000>>(22, 3);
    compare_losses<T, Shape<2, 3, 33>>(23, 3);
    compare_losses<T, Shape<256, 10>>(24, 3, 0.1f);  // label smoothing: the row sum read by the team
    compare_losses<T, Shape<64, 1000>>(25, 1e4, 0.3f);
    compare_losses<T, Shape<6, 50000>>(26, 3, 1.0f);
}

TEST_CASE("device: an all-padding batch gives loss 0 and zero gradients; a bad label gives NaN")
{
    using S = Shape<6, 10>;
    Tensor<f32, S, Host> x;
    fill_normal(x, 30);
    const auto xd = to_device(x);
    const labelled_batch<S> none(31, false);
    const auto labels = to_device(none.labels);
    const auto valid = to_device(none.valid);
    Tensor<f32, S, Device> probs, dx, dp;
    Tensor<f32, Shape<>, Device> loss;
    testing::poison(loss);
    testing::poison(dx);
    testing::poison(dp);
    cross_entropy_forward(loss, probs, xd, labels, valid);
    cross_entropy_backward(dx, probs, labels, valid, 1.0f);
    CHECK(loss_of(loss) == 0.0);
    mse_forward(loss, xd, xd * 2.0f, valid);
    mse_backward(dp, xd, xd * 2.0f, valid, 1.0f);
    CHECK(loss_of(loss) == 0.0);
    const auto dxh = to_host(dx), dph = to_host(dp);
    for (std::size_t i = 0; i < S::numel; ++i) {
        CHECK(dxh.data()[i] == 0.0f);
        CHECK(dph.data()[i] == 0.0f);
    }

    // the device cannot throw: a label out of range on a valid row makes
    // that row's loss NaN (so the mean is NaN) and its gradient NaN
    Tensor<i32, Shape<6>, Host> bad;
    Tensor<bool, Shape<6>, Host> all;
    for (int r = 0; r < 6; ++r) bad.data()[r] = r == 4 ? 10 : r;
    fill(all, true);
    const auto bad_d = to_device(bad);
    const auto all_d = to_device(all);
    cross_entropy_forward(loss, probs, xd, bad_d, all_d);
    CHECK(std::isnan(loss_of(loss)));
    cross_entropy_backward(dx, probs, bad_d, all_d, 1.0f);
    const auto g = to_host(dx);
    for (std::size_t j = 0; j < 10; ++j) {
        CHECK(std::isnan(g(4, j)));
        CHECK(std::isfinite(g(3, j)));
    }
}

TEST_CASE("device: a loss step replays from a CUDA Graph, the loss scale read on the device")
{
    using S = Shape<128, 10>;
    Tensor<f32, S, Host> x;
    fill_normal(x, 40, 0, 2);
    const labelled_batch<S> batch(41);
    const auto xd = to_device(x);
    const auto labels = to_device(batch.labels);
    const auto valid = to_device(batch.valid);
    Tensor<f32, Shape<>, Host> scale_host;
    Tensor<f32, Shape<>, Device> scale, loss, loss_eager;
    Tensor<f32, S, Device> probs, dx, dx_eager;

    stream s;
    const stream_scope scope(s);
    const auto step = [&](Tensor<f32, Shape<>, Device>& l, Tensor<f32, S, Device>& d) {
        cross_entropy_forward(l, probs, xd, labels, valid);
        cross_entropy_backward(d, probs, labels, valid, scale);
    };
    scale_host.data()[0] = 1.0f;
    copy(scale, scale_host);
    step(loss_eager, dx_eager);  // eager, also warms the per-kernel caches
    s.synchronize();

    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    TENET_CUDA_CHECK(cudaStreamBeginCapture(s.get(), cudaStreamCaptureModeRelaxed));
    step(loss, dx);
    TENET_CUDA_CHECK(cudaStreamEndCapture(s.get(), &graph));
    TENET_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    for (const float k : {1.0f, 4.0f}) {
        scale_host.data()[0] = k;
        copy(scale, scale_host);
        testing::poison(dx);
        TENET_CUDA_CHECK(cudaGraphLaunch(exec, s.get()));
        s.synchronize();
        const auto got = to_host(dx), want = to_host(dx_eager);
        CHECK(loss_of(loss) == loss_of(loss_eager));
        mismatch_log log;
        for (std::size_t i = 0; i < S::numel; ++i)
            if (got.data()[i] != k * want.data()[i]) log.add("dlogits[%zu] %g vs %g", i, got.data()[i], k * want.data()[i]);
        INFO("scale ", k);
        CHECK_NO_MISMATCH(log);
    }
    TENET_CUDA_CHECK(cudaGraphExecDestroy(exec));
    TENET_CUDA_CHECK(cudaGraphDestroy(graph));
}

// ------------------------------------------------------------ active learning

namespace {

// Uncertainty scores on the device against the host's (which
// tests/host/active_learning.cpp checks against long-double loops). Both take
// x - max with the same f32 operations; they differ in exp, log1p and expm1
// (a few ulps) and the order of the row's sums: relative tolerances.
template <class T, class S>
void compare_uncertainty(std::uint64_t seed, double spread)
{
    constexpr std::size_t n = row_length<S>;
    using R = rows_of<S>;
    Tensor<T, S, Host> x;
    fill_normal(x, seed, 0, spread);
    if constexpr (S::numel >= 4 * n && n >= 2) {  // a NaN row, -inf entries, a tie at the top
        x.data()[n / 2] = convert<T>(NAN);
        for (std::size_t j = 0; j < n; j += 2) x.data()[n + j] = convert<T>(-INFINITY);
        x.data()[2 * n] = x.data()[2 * n + 1] = convert<T>(4 * spread);
    }
    const auto xd = to_device(x);
    const misaligned<T, S> x_odd(x);  // the scalar-chunk kernel
    mismatch_log log;
    for (const uncertainty kind : {uncertainty::entropy, uncertainty::margin, uncertainty::least_confidence}) {
        Tensor<f32, R, Host> host;
        Tensor<f32, R, Device> device, odd;
        testing::poison(device);
        testing::poison(odd);
        uncertainty_scores(host, x, kind);
        uncertainty_scores(device, xd, kind);
        uncertainty_scores(odd, x_odd.view(), kind);
        const char* what[] = {"entropy", "margin", "least_confidence"};
        expect_agree(log, what[static_cast<int>(kind)], device, host, sum_ulps(n) + 8, 0);
        expect_agree(log, what[static_cast<int>(kind)], odd, host, sum_ulps(n) + 8, 0);
    }
    INFO(numeric_traits<T>::name, " rows of ", n);
    CHECK_NO_MISMATCH(log);
}

// top_k on the device against the host: the same positions, ties, NaN and all.
template <class T, std::size_t N>
void compare_top_k(std::uint64_t seed)
{
    Tensor<T, Shape<N>, Host> scores;
    std::mt19937_64 rng(seed);
    const double values[] = {-2, -1, 0.5, 1, 3, NAN, INFINITY, -INFINITY, 0.0, -0.0};
    for (std::size_t i = 0; i < N; ++i) scores.data()[i] = convert<T>(values[rng() % 10]);
    const auto sd = to_device(scores);
    for (const std::size_t count : {N, N / 2 + 1}) {
        for (const std::size_t k : {std::size_t{1}, std::size_t{100}, count}) {
            Tensor<i32, Shape<N>, Host> host, poisoned;
            Tensor<i32, Shape<N>, Device> device;
            std::memset(poisoned.data(), 0xA5, sizeof(i32) * N);
            host = poisoned;
            copy(device, poisoned);
            top_k(host, scores, k, count);
            top_k(device, sd, k, count);
            const auto got = to_host(device);
            INFO(numeric_traits<T>::name, " N ", N, ", k ", k, ", count ", count);
            CHECK_BITWISE_EQUAL("top_k positions", got.data(), host.data(), N);
        }
    }
    Tensor<i32, Shape<10>, Device> few;  // errors before anything runs
    CHECK_THROWS_AS(top_k(few, sd, 11), tenet::error);
}

}  // namespace

TEST_CASE("device: uncertainty scores agree with the host")
{
    compare_uncertainty<f32, Shape<300, 10>>(30, 2);    // a warp per row
    compare_uncertainty<bf16, Shape<16, 4096>>(31, 8);  // a block per row, vector chunks of 8
    compare_uncertainty<f32, Shape<2, 40000>>(32, 8);   // a block re-reading its row
    compare_uncertainty<f64, Shape<64, 100>>(33, 2);
}

TEST_CASE("device: top_k agrees with the host, ties by lower position, NaN last")
{
    compare_top_k<f32, 5000>(40);
    compare_top_k<f64, 5000>(41);
}
