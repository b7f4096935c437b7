// Learning-rate schedules against float64 reimplementations of PyTorch's
// closed forms (random configurations, every step) and against values
// PyTorch printed; early stopping on hand-made metric sequences.
#include <doctest/doctest.h>
#include <tenet/train/early_stopping.hpp>
#include <tenet/train/lr_schedule.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <random>
#include <type_traits>
#include <vector>

using namespace tenet::train;

namespace {

constexpr double pi = std::numbers::pi;

// The references: PyTorch's formulas in float64, written out independently.
double ref_step(const step_lr& s, std::uint64_t step)
{
    return double(s.lr) * std::pow(double(s.gamma), double(step / s.step_size));
}

double ref_warmup_cosine(const warmup_cosine_lr& s, std::uint64_t step)
{
    const double lr = s.lr, min_lr = s.min_lr;
    if (step < s.warmup_steps) return lr * double(step + 1) / double(s.warmup_steps);
    double p = (double(step) - double(s.warmup_steps)) / (double(s.total_steps) - double(s.warmup_steps));
    p = std::fmin(std::fmax(p, 0.0), 1.0);
    return min_lr + (lr - min_lr) * (1 + std::cos(pi * p)) / 2;
}

// torch.optim.lr_scheduler.OneCycleLR.get_lr, two phases, cosine.
double ref_one_cycle(const one_cycle_lr& s, std::uint64_t step)
{
    const double initial = double(s.max_lr) / double(s.div_factor);
    const double min_lr = initial / double(s.final_div_factor);
    struct phase {
        double end_step, start_lr, end_lr;
    };
    const phase phases[2] = {{double(s.pct_start) * double(s.total_steps) - 1, initial, s.max_lr},
                             {double(s.total_steps) - 1, s.max_lr, min_lr}};
    const double n = double(std::min(step, s.total_steps - 1));  // past the end: the final rate
    double start_step = 0;
    for (int i = 0; i < 2; ++i) {
        if (n <= phases[i].end_step || i == 1) {
            const double pct = (n - start_step) / (phases[i].end_step - start_step);
            return phases[i].end_lr + (phases[i].start_lr - phases[i].end_lr) / 2 * (std::cos(pi * pct) + 1);
        }
        start_step = phases[i].end_step;
    }
    return NAN;
}

// f32 evaluation: a few float roundings of a rate of scale `top`.
bool close(double got, double want, double top) { return std::fabs(got - want) <= 1e-6 * top + 1e-6 * std::fabs(want); }

template <class S, class Ref>
void check_all_steps(const S& s, Ref ref, std::uint64_t steps, double top)
{
    s.check();
    for (std::uint64_t step = 0; step < steps; ++step) {
        const float got = s(step);
        const double want = ref(s, step);
        if (!close(got, want, top)) {
            CAPTURE(step);
            CHECK(double(got) == doctest::Approx(want));
            return;
        }
    }
}

template <class S>
std::vector<float> rates(const S& s, std::uint64_t steps)
{
    std::vector<float> r(steps, -1.0f);
    for (std::uint64_t i = 0; i < steps; ++i) r[i] = s(i);
    return r;
}

}  // namespace

static_assert(lr_schedule<constant_lr> && lr_schedule<step_lr> && lr_schedule<warmup_cosine_lr> &&
              lr_schedule<one_cycle_lr>);
static_assert(!lr_schedule<int> && !lr_schedule<std::vector<float>>);
static_assert(constant_lr{0.25f}(12345) == 0.25f);  // usable in constant expressions

TEST_CASE("schedules match float64 references at every step of random configurations")
{
    std::mt19937_64 rng(20240917);
    std::uniform_real_distribution<double> unit(0, 1);
    auto steps_in = [&](std::uint64_t lo, std::uint64_t hi) {
        return std::uniform_int_distribution<std::uint64_t>(lo, hi)(rng);
    };
    auto rate = [&] { return float(std::exp(std::log(1e-4) + unit(rng) * std::log(1e4))); };  // 1e-4 .. 1
    for (int trial = 0; trial < 40; ++trial) {
        CAPTURE(trial);
        const float lr = rate();
        check_all_steps(constant_lr{lr}, [](const constant_lr& s, std::uint64_t) { return double(s.lr); }, 100, lr);

        const step_lr step{lr, steps_in(1, 50), float(0.05 + 0.9 * unit(rng))};
        check_all_steps(step, ref_step, 400, lr);

        const std::uint64_t total = steps_in(1, 3000);
        const warmup_cosine_lr warm{lr, steps_in(0, total), total, float(lr * 0.1 * unit(rng))};
        check_all_steps(warm, ref_warmup_cosine, total + 20, lr);

        const std::uint64_t cycle_total = steps_in(20, 3000);
        const one_cycle_lr cycle{lr, cycle_total, float(0.1 + 0.8 * unit(rng)), float(2 + 40 * unit(rng)),
                                 float(std::exp(unit(rng) * std::log(1e5)))};
        check_all_steps(cycle, ref_one_cycle, cycle_total + 20, lr);
    }
}

TEST_CASE("one_cycle_lr gives the rates PyTorch 2.15 OneCycleLR gave")
{
    // Printed by OneCycleLR(SGD, max_lr=0.1, total_steps=10) stepped after each update.
    const double defaults[10] = {0.0040000000000000036, 0.052000000000000005, 0.1, 0.09504846320134738,
                                 0.0811745653949763,    0.06112620219362893,  0.03887419780637107,
                                 0.0188258346050237,    0.004951936798652629, 4e-07};
    // max_lr=0.01, total_steps=20, pct_start=0.25, div_factor=10, final_div_factor=100.
    const double custom[20] = {0.0009999999999999992, 0.002318019484660536, 0.0055,
                               0.008681980515339464,  0.01,                 0.009890847265665359,
                               0.00956815956092479,   0.009046039886902862, 0.008347307378762497,
                               0.0075025000000000005, 0.006548539886902863, 0.005527119674021929,
                               0.004482880325978072,  0.0034614601130971384, 0.0025075000000000015,
                               0.001662692621237505,  0.0009639601130971381, 0.0004418404390752082,
                               0.0001191527343346406, 1e-05};
    const one_cycle_lr a{0.1f, 10};
    const one_cycle_lr b{0.01f, 20, 0.25f, 10, 100};
    for (std::uint64_t i = 0; i < 10; ++i) CHECK(close(a(i), defaults[i], 0.1));
    for (std::uint64_t i = 0; i < 20; ++i) CHECK(close(b(i), custom[i], 0.01));
    // By hand: step 1 is halfway up the cosine from 0.004 to 0.1.
    CHECK(a(1) == doctest::Approx(0.004 + (0.1 - 0.004) / 2).epsilon(1e-6));
    CHECK(a(2) == 0.1f);          // the peak, at pct_start * total - 1
    CHECK(a(9) == 0.1f / 25 / 1e4f);  // the last update reaches min exactly
    CHECK(a(10) == a(9));         // and the rate stays there
    CHECK(a(1000000) == a(9));
}

TEST_CASE("step_lr gives the rates PyTorch StepLR gave, constant within each step_size")
{
    // StepLR(SGD(lr=0.1), step_size=3, gamma=0.5)
    const double torch[10] = {0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025, 0.025, 0.025, 0.0125};
    const step_lr s{0.1f, 3, 0.5f};
    for (std::uint64_t i = 0; i < 10; ++i) CHECK(close(s(i), torch[i], 0.1));
    const step_lr slow{0.3f, 7, 0.9f};
    const auto r = rates(slow, 70);
    for (std::size_t i = 1; i < r.size(); ++i) {
        if (i % 7 == 0) CHECK(r[i] < r[i - 1]);
        else CHECK(r[i] == r[i - 1]);
    }
}

TEST_CASE("warmup_cosine_lr: hand-computed values, the stated boundaries, monotonic pieces")
{
    const warmup_cosine_lr s{1.0f, 4, 12, 0.1f};
    const double want[14] = {0.25, 0.5, 0.75, 1.0,  // (step+1)/4
                             1.0,                   // p = 0
                             0.1 + 0.45 * (1 + std::cos(pi / 8)), 0.1 + 0.45 * (1 + std::sqrt(0.5)),
                             0.1 + 0.45 * (1 + std::cos(3 * pi / 8)),
                             0.55,  // p = 1/2
                             0.1 + 0.45 * (1 - std::cos(3 * pi / 8)), 0.1 + 0.45 * (1 - std::sqrt(0.5)),
                             0.1 + 0.45 * (1 - std::cos(pi / 8)),
                             0.1, 0.1};  // p = 1 at step 12, clamped after
    for (std::uint64_t i = 0; i < 14; ++i) {
        CAPTURE(i);
        CHECK(close(s(i), want[i], 1));
    }
    CHECK(s(3) == 1.0f);
    CHECK(s(12) == 0.1f);
    CHECK(s(1u << 30) == 0.1f);

    const warmup_cosine_lr no_warmup{0.5f, 0, 100};
    CHECK(no_warmup(0) == 0.5f);
    CHECK(no_warmup(100) == 0.0f);
    const warmup_cosine_lr all_warmup{0.5f, 10, 10, 0.01f};
    CHECK(all_warmup(9) == 0.5f);
    CHECK(all_warmup(10) == 0.01f);

    const warmup_cosine_lr long_run{3e-3f, 200, 5000, 1e-5f};
    const auto r = rates(long_run, 5001);
    for (std::size_t i = 1; i < 200; ++i) CHECK(r[i] > r[i - 1]);
    int rises = 0;
    for (std::size_t i = 201; i < r.size(); ++i) rises += r[i] > r[i - 1];
    CHECK(rises == 0);
}

TEST_CASE("one_cycle_lr rises to max_lr, then falls to its minimum")
{
    const one_cycle_lr s{0.02f, 1000, 0.25f};
    const auto r = rates(s, 1000);
    // phase 1 ends at step 0.25 * 1000 - 1 = 249
    for (std::size_t i = 1; i < 250; ++i) CHECK(r[i] > r[i - 1]);
    CHECK(r[249] == doctest::Approx(0.02).epsilon(1e-6));
    int rises = 0;
    for (std::size_t i = 250; i < r.size(); ++i) rises += r[i] > r[i - 1];
    CHECK(rises == 0);
    CHECK(r[0] == doctest::Approx(0.02 / 25).epsilon(1e-6));
    CHECK(r[999] == doctest::Approx(0.02 / 25 / 1e4).epsilon(1e-6));
}

TEST_CASE("check() rejects configurations whose formulas are undefined")
{
    CHECK_NOTHROW(constant_lr{1e-3f}.check());
    // a rate that is negative, not finite, or zero for the whole schedule
    CHECK_THROWS_WITH_AS(constant_lr{0}.check(),
                         "tenet: constant_lr: lr must be positive and finite (got 0.000000; a rate of 0 never moves the "
                         "parameters)",
                         tenet::error);
    CHECK_THROWS_AS(constant_lr{-1}.check(), tenet::error);
    CHECK_THROWS_AS(constant_lr{NAN}.check(), tenet::error);
    CHECK_THROWS_AS(constant_lr{INFINITY}.check(), tenet::error);
    CHECK_THROWS_AS((warmup_cosine_lr{0.0f, 10, 100}.check()), tenet::error);
    CHECK_THROWS_AS((warmup_cosine_lr{0.1f, 10, 100, NAN}.check()), tenet::error);
    CHECK_NOTHROW((warmup_cosine_lr{0.1f, 10, 100, 0.0f}.check()));  // a floor of 0 is fine
    CHECK_THROWS_AS((one_cycle_lr{0.0f, 10}.check()), tenet::error);
    CHECK_THROWS_AS((step_lr{0.0f, 3, 0.5f}.check()), tenet::error);
    CHECK_NOTHROW((step_lr{0.1f, 1, 0.5f}.check()));
    CHECK_THROWS_WITH_AS((step_lr{0.1f, 0, 0.5f}.check()), "tenet: step_lr: step_size must be positive", tenet::error);
    CHECK_THROWS_AS((step_lr{0.1f, 3, 0.0f}.check()), tenet::error);
    CHECK_THROWS_AS((step_lr{NAN, 3, 0.5f}.check()), tenet::error);
    CHECK_NOTHROW((warmup_cosine_lr{0.1f, 10, 10}.check()));
    CHECK_THROWS_AS((warmup_cosine_lr{0.1f, 11, 10}.check()), tenet::error);
    CHECK_THROWS_AS((warmup_cosine_lr{0.1f, 1, 10, -1e-3f}.check()), tenet::error);
    CHECK_NOTHROW((one_cycle_lr{0.1f, 10}.check()));  // phase 1 ends at step 2
    CHECK_THROWS_AS((one_cycle_lr{0.1f, 3}.check()), tenet::error);  // 0.3 * 3 - 1 < 0: no rise
    CHECK_THROWS_AS((one_cycle_lr{0.1f, 10, 1.0f}.check()), tenet::error);
    CHECK_THROWS_AS((one_cycle_lr{0.1f, 10, 0.3f, 0.0f}.check()), tenet::error);
    CHECK_THROWS_AS((one_cycle_lr{0.1f, 10, 0.3f, 25, -1}.check()), tenet::error);
}

TEST_CASE("early stopping counts epochs without improvement and stops after patience of them")
{
    SUBCASE("minimize with min_delta")
    {
        early_stopping es(2, 0.01, early_stopping::mode::minimize);
        CHECK(es.best() == INFINITY);
        CHECK(!es.update(1.0));   // epoch 0: best 1.0
        CHECK(!es.update(0.995)); // not by more than 0.01
        CHECK(es.epochs_without_improvement() == 1);
        CHECK(!es.update(0.9));   // epoch 2: improves, counter resets
        CHECK(es.epochs_without_improvement() == 0);
        CHECK(!es.update(0.89));  // 0.9 - 0.01 = 0.89 is not strictly below
        CHECK(es.update(0.95));   // two in a row: stop
        CHECK(es.best() == 0.9);
        CHECK(es.best_epoch() == 2);
        CHECK(es.epochs() == 5);
        CHECK(es.should_stop());
        CHECK(!es.update(0.5));  // a late improvement clears the stop
        CHECK(es.best_epoch() == 5);
    }
    SUBCASE("maximize, NaN never improves")
    {
        early_stopping es(3, 0.0, early_stopping::mode::maximize);
        CHECK(es.best() == -INFINITY);
        CHECK(!es.update(NAN));
        CHECK(es.epochs_without_improvement() == 1);
        CHECK(!es.update(0.7));
        CHECK(!es.update(0.8));
        CHECK(!es.update(0.8));  // equal is not better
        CHECK(!es.update(NAN));
        CHECK(es.update(0.79));
        CHECK(es.best() == 0.8);
        CHECK(es.best_epoch() == 2);
        CHECK(es.epochs_without_improvement() == 3);
    }
    SUBCASE("patience 0 stops at the first epoch that does not improve")
    {
        early_stopping es(0, 0.0, early_stopping::mode::minimize);
        CHECK(!es.update(3));
        CHECK(!es.update(2));
        CHECK(es.update(2));
    }
    SUBCASE("random sequences against a direct count")
    {
        std::mt19937_64 rng(7);
        std::normal_distribution<double> noise(0, 1);
        for (int trial = 0; trial < 200; ++trial) {
            const std::size_t patience = trial % 6;
            const double delta = 0.05 * (trial % 4);
            early_stopping es(patience, delta, early_stopping::mode::maximize);
            double best = -INFINITY;
            std::size_t best_at = 0, since = 0;
            for (std::size_t epoch = 0; epoch < 40; ++epoch) {
                const double m = std::round((epoch * 0.02 + noise(rng) * 0.1) * 64) / 64;  // ties happen
                if (m > best + delta) {
                    best = m;
                    best_at = epoch;
                    since = 0;
                } else {
                    ++since;
                }
                const bool stop = es.update(m);
                REQUIRE(stop == (since > 0 && since >= patience));
                REQUIRE(es.best() == best);
                REQUIRE(es.best_epoch() == best_at);
            }
        }
    }
    CHECK_THROWS_AS(early_stopping(1, -0.1, early_stopping::mode::minimize), tenet::error);
    CHECK_THROWS_AS(early_stopping(1, NAN, early_stopping::mode::minimize), tenet::error);
    static_assert(std::is_trivially_copyable_v<early_stopping>);
}
