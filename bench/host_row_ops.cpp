// Host row-wise ops, f32: softmax, log_softmax, layernorm forward (gamma,
// beta; saving mean and rstd) and its backward (dx, dgamma, dbeta), softmax
// cross-entropy forward (saving the probabilities; 5% padding rows) and its
// backward, and a row sum (sum<1>), over 2^24 elements as [2^24 / N, N] for
// N = 1024, 4096, 16384.
//
// GB/s counts the bytes each op must move: its [rows, N] inputs read once and
// its output written once ([rows, N], or [rows] for the row sum), plus the
// parameters (gamma and beta, their gradients; mean and rstd; labels and mask). The roofline
// is a memcpy of the [rows, N] tensor split across the same OpenMP threads
// (read + write counted, as in host_elementwise). Each op is run twice
// untimed (first touch), then timed: the best of 15 runs (the least
// disturbed by other work on the machine). Before timing, each op's result
// is checked against a float64 loop on a few rows (the cross-entropy loss on
// all rows); a mismatch aborts. One JSON line per (op, N) goes to stdout for
// bench/peers/row_ops_torch_cpu.py --compare.
#include "support/host_machine.hpp"

#include <tenet/tenet.hpp>

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using namespace tenet;

constexpr std::size_t total = std::size_t{1} << 24;
constexpr std::size_t tensor_bytes = total * sizeof(f32);
constexpr int warmups = 2, repetitions = 15;

// The fewest milliseconds of f() over `repetitions` runs, after `warmups`.
template <class F>
double best_ms(F&& f)
{
    for (int i = 0; i < warmups; ++i) f();
    double best = INFINITY;
    for (int i = 0; i < repetitions; ++i) {
        const auto start = std::chrono::steady_clock::now();
        f();
        best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    return best;
}

// GB/s of a memcpy of one [rows, N] tensor, in as many equal blocks per
// thread as OpenMP's static schedule gives tenet's own row loops.
double copy_gbps()
{
    constexpr std::size_t blocks = 64, block = total / blocks;
    const std::vector<f32> from(total, 1.0f);
    std::vector<f32> to(total);
    const double ms = best_ms([&] {
#pragma omp parallel for schedule(static)
        for (std::size_t k = 0; k < blocks; ++k)
            std::memcpy(to.data() + k * block, from.data() + k * block, block * sizeof(f32));
    });
    return 2.0 * tensor_bytes / ms / 1e6;
}

struct result {
    const char* op;
    std::size_t n;
    double ms, gbps;
};

[[noreturn]] void mismatch(const char* op, std::size_t n, std::size_t row, std::size_t column, double got, double want)
{
    std::fprintf(stderr, "host_row_ops: %s, N = %zu, row %zu, column %zu: tenet %.9g, float64 %.9g\n", op, n, row,
                 column, got, want);
    std::exit(1);
}

// |got - want| within 1e-4 of scale (NaN fails).
void check(const char* op, std::size_t n, std::size_t row, std::size_t column, double got, double want, double scale)
{
    if (!(std::fabs(got - want) <= 1e-4 * scale)) mismatch(op, n, row, column, got, want);
}

// One row length: the inputs (x ~ N(0, 1), gamma ~ N(1, 0.1), beta
// ~ N(0, 1), labels uniform in [0, N), 95% valid rows, as
// device_row_ops.cu) and the outputs.
template <std::size_t N>
struct workload {
    static constexpr std::size_t rows = total / N;
    using S = Shape<rows, N>;
    using R = Shape<rows>;
    using C = Shape<N>;
    Tensor<f32, S, Host> x, y, dx, dy;
    Tensor<f32, C, Host> gamma, beta, dgamma, dbeta;
    Tensor<i32, R, Host> labels;
    Tensor<bool, R, Host> valid;
    Tensor<f32, R, Host> mean, rstd, row_sum;
    Tensor<f32, Shape<>, Host> loss;

    workload()
    {
        x = random_normal<S>(1);
        gamma = random_normal<C>(2, 0, 1.0f, 0.1f);
        beta = random_normal<C>(3);
        dy = random_normal<S>(6);
        labels = min(cast<i32>(random_uniform<R>(4) * static_cast<float>(N)), static_cast<int>(N) - 1);
        valid = random_uniform<R>(5) < 0.95f;
    }

    const f32* row(const Tensor<f32, S, Host>& t, std::size_t r) const { return t.data() + r * N; }

    // The rows checked: the first two, the middle, the last and the first padding row.
    std::vector<std::size_t> sample_rows() const
    {
        std::vector<std::size_t> sample{0, 1, rows / 2, rows - 1};
        for (std::size_t r = 0; r < rows; ++r)
            if (!valid.data()[r]) {
                sample.push_back(r);
                break;
            }
        return sample;
    }

    // Row r's max and sum(exp(x - max)) in float64.
    std::pair<double, double> max_and_sum(std::size_t r) const
    {
        const f32* in = row(x, r);
        double m = -INFINITY, s = 0;
        for (std::size_t c = 0; c < N; ++c) m = std::max(m, double{in[c]});
        for (std::size_t c = 0; c < N; ++c) s += std::exp(in[c] - m);
        return {m, s};
    }

    void check_softmax(const char* op, bool log) const
    {
        for (std::size_t r : sample_rows()) {
            const auto [m, s] = max_and_sum(r);
            for (std::size_t c = 0; c < N; ++c) {
                const double want = log ? (row(x, r)[c] - m) - std::log(s) : std::exp(row(x, r)[c] - m) / s;
                check(op, N, r, c, row(y, r)[c], want, log ? 1 + std::fabs(want) : std::fabs(want));
            }
        }
    }

    void check_layernorm() const
    {
        for (std::size_t r : sample_rows()) {
            const f32* in = row(x, r);
            double mu = 0, var = 0;
            for (std::size_t c = 0; c < N; ++c) mu += in[c];
            mu /= N;
            for (std::size_t c = 0; c < N; ++c) var += (in[c] - mu) * (in[c] - mu);
            const double rs = 1 / std::sqrt(var / N + 1e-5);
            check("layernorm mean", N, r, 0, mean.data()[r], mu, 1);
            check("layernorm rstd", N, r, 0, rstd.data()[r], rs, rs);
            for (std::size_t c = 0; c < N; ++c) {
                const double want = (in[c] - mu) * rs * gamma.data()[c] + beta.data()[c];
                check("layernorm", N, r, c, row(y, r)[c], want, 1 + std::fabs(want));
            }
        }
    }

    // The loss over every row; the probabilities on the sample rows.
    void check_cross_entropy() const
    {
        double sum = 0;
        std::size_t count = 0;
        for (std::size_t r = 0; r < rows; ++r) {
            if (!valid.data()[r]) continue;
            const auto [m, s] = max_and_sum(r);
            sum += m + std::log(s) - row(x, r)[labels.data()[r]];
            ++count;
        }
        const double want = sum / count;
        check("cross_entropy loss", N, 0, 0, loss.data()[0], want, 1 + want);
        check_softmax("cross_entropy probabilities", false);
    }

    // dlogits = (softmax - onehot(label)) / valid rows; exactly 0 on padding rows.
    void check_cross_entropy_backward() const
    {
        const double count = static_cast<double>(std::count(valid.data(), valid.data() + rows, true));
        for (std::size_t r : sample_rows()) {
            const auto [m, s] = max_and_sum(r);
            for (std::size_t c = 0; c < N; ++c) {
                const double p = std::exp(row(x, r)[c] - m) / s;
                const double want =
                    valid.data()[r] ? (p - (static_cast<std::size_t>(labels.data()[r]) == c ? 1 : 0)) / count : 0;
                check("cross_entropy_backward", N, r, c, row(dx, r)[c], want, std::fabs(want));
            }
        }
    }

    // dx = rstd (g - mean(g) - xhat mean(g xhat)), g = dy gamma, on the
    // sample rows; dgamma = sum over rows of dy xhat and dbeta = sum of dy on
    // three columns (xhat from the saved mean and rstd).
    void check_layernorm_backward() const
    {
        const auto xhat = [&](std::size_t r, std::size_t c) {
            return (double{row(x, r)[c]} - mean.data()[r]) * rstd.data()[r];
        };
        for (std::size_t r : sample_rows()) {
            double g_sum = 0, gx_sum = 0;
            for (std::size_t c = 0; c < N; ++c) {
                const double g = double{row(dy, r)[c]} * gamma.data()[c];
                g_sum += g;
                gx_sum += g * xhat(r, c);
            }
            for (std::size_t c = 0; c < N; ++c) {
                const double g = double{row(dy, r)[c]} * gamma.data()[c];
                const double want = rstd.data()[r] * (g - g_sum / N - xhat(r, c) * gx_sum / N);
                check("layernorm_backward dx", N, r, c, row(dx, r)[c], want, 1 + std::fabs(want));
            }
        }
        for (std::size_t c : {std::size_t{0}, N / 2, N - 1}) {
            double dg = 0, db = 0, magnitude = 0;
            for (std::size_t r = 0; r < rows; ++r) {
                dg += row(dy, r)[c] * xhat(r, c);
                db += row(dy, r)[c];
                magnitude += std::fabs(row(dy, r)[c]) * (1 + std::fabs(xhat(r, c)));
            }
            check("layernorm_backward dgamma", N, 0, c, dgamma.data()[c], dg, magnitude);
            check("layernorm_backward dbeta", N, 0, c, dbeta.data()[c], db, magnitude);
        }
    }

    void check_row_sum() const
    {
        for (std::size_t r : sample_rows()) {
            double want = 0, magnitude = 0;
            for (std::size_t c = 0; c < N; ++c) want += row(x, r)[c], magnitude += std::fabs(row(x, r)[c]);
            check("row_sum", N, r, 0, row_sum.data()[r], want, magnitude);
        }
    }
};

// Checks, then times each op at row length N; prints its JSON lines.
template <std::size_t N>
void measure(std::vector<result>& results)
{
    workload<N> w;
    constexpr double rows = workload<N>::rows;
    const auto time = [&](const char* op, double bytes, auto&& run, auto&& verify) {
        run();
        verify();
        const double ms = best_ms(run);
        results.push_back({op, N, ms, bytes / ms / 1e6});
        std::printf("{\"framework\": \"tenet\", \"op\": \"%s\", \"row_length\": %zu, \"ms\": %.4f, \"gbps\": %.2f}\n", op,
                    N, ms, results.back().gbps);
        std::fflush(stdout);
    };
    time("softmax", 2.0 * tensor_bytes, [&] { w.y = softmax(w.x); }, [&] { w.check_softmax("softmax", false); });
    time("log_softmax", 2.0 * tensor_bytes, [&] { w.y = log_softmax(w.x); },
         [&] { w.check_softmax("log_softmax", true); });
    time("layernorm", 2.0 * tensor_bytes + 8 * rows + 8.0 * N,
         [&] { layernorm_forward(w.y, w.mean, w.rstd, w.x, w.gamma, w.beta); }, [&] { w.check_layernorm(); });
    // (reads the mean and rstd the forward saved)
    time("layernorm_backward", 3.0 * tensor_bytes + 8 * rows + 12.0 * N,
         [&] { layernorm_backward(w.dx, w.dgamma, w.dbeta, w.dy, w.x, w.mean, w.rstd, w.gamma); },
         [&] { w.check_layernorm_backward(); });
    time("cross_entropy", 2.0 * tensor_bytes + 5 * rows,
         [&] { cross_entropy_forward(w.loss, w.y, w.x, w.labels, w.valid); }, [&] { w.check_cross_entropy(); });
    // (reads the probabilities the forward saved in y)
    time("cross_entropy_backward", 2.0 * tensor_bytes + 5 * rows,
         [&] { cross_entropy_backward(w.dx, w.y, w.labels, w.valid, 1.0f); },
         [&] { w.check_cross_entropy_backward(); });
    time("row_sum", tensor_bytes + 4 * rows, [&] { w.row_sum = sum<1>(w.x); }, [&] { w.check_row_sum(); });
}

}  // namespace

int main()
{
    std::printf("== host row ops, f32, %zu elements as [2^24 / N, N]; %s, %s, %d OpenMP threads\n", total,
                bench::cpu_model().c_str(), bench::vector_isa(), omp_get_max_threads());
    const double copy = copy_gbps();
    std::printf("copy (memcpy of one [rows, N] tensor, read + write): %.2f GB/s\n", copy);
    std::vector<result> results;
    measure<1024>(results);
    measure<4096>(results);
    measure<16384>(results);
    std::printf("\n%-24s %6s %10s %10s %10s\n", "op", "N", "ms", "GB/s", "of copy");
    for (const result& r : results)
        std::printf("%-24s %6zu %10.3f %10.2f %9.0f%%\n", r.op, r.n, r.ms, r.gbps, 100 * r.gbps / copy);
}
