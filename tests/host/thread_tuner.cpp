// train::thread_tuner against simulated machines: step times given as a
// function of the thread count (and of time, when another process comes and
// goes), with noise. It must settle on the fastest count, probe rarely on
// a steady machine, follow a change within a few steps, and cost little.
#include <doctest/doctest.h>
#include <tenet/exec/host_threads.hpp>
#include <tenet/train/thread_tuner.hpp>

#include <functional>
#include <map>
#include <random>

using tenet::train::thread_tuner;

namespace {

struct run_summary {
    double seconds = 0;              // simulated time spent stepping
    std::map<int, std::size_t> steps;  // steps run at each count
    int chosen = 0;
};

// `steps` steps of a machine whose step takes machine(threads, now) seconds
// (times 1 +- 5% noise).
run_summary simulate(thread_tuner& tuner, std::size_t steps, const std::function<double(int, double)>& machine,
                     double start = 0)
{
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> noise(0.95, 1.05);
    run_summary r;
    for (std::size_t i = 0; i < steps; ++i) {
        const int n = tuner.threads();
        const double t = machine(n, start + r.seconds) * noise(rng);
        tuner.record(t);
        r.seconds += t;
        ++r.steps[n];
    }
    r.chosen = tuner.chosen();
    return r;
}

}  // namespace

TEST_CASE("thread_tuner: the candidates halve down to 1; fixed keeps one; at least 1 thread")
{
    CHECK(thread_tuner(16).candidates() == std::vector<int>{16, 8, 4, 2, 1});
    CHECK(thread_tuner(6).candidates() == std::vector<int>{6, 3, 1});
    CHECK(thread_tuner(1).candidates() == std::vector<int>{1});
    CHECK(thread_tuner(6, true).candidates() == std::vector<int>{6});
    CHECK_THROWS_AS(thread_tuner(0), tenet::error);
    thread_tuner fixed(3, true);
    const run_summary r = simulate(fixed, 1000, [](int n, double) { return 1e-3 * n; });
    CHECK(r.steps.at(3) == 1000);
    CHECK(fixed.probes() == 0);
}

TEST_CASE("thread_tuner: an idle machine keeps every core, and probing costs under 1% of the time")
{
    thread_tuner tuner(2);
    // 1 ms per step on two threads, 1.8 ms on one: 20 s of training
    const run_summary r = simulate(tuner, 20000, [](int n, double) { return n == 2 ? 1e-3 : 1.8e-3; });
    CHECK(r.chosen == 2);
    const double ideal = 1e-3 * 20000;
    CHECK(r.seconds < 1.01 * ideal);
    CHECK(r.steps.at(1) < 20000 / 100);
    CHECK(tuner.probes() < 12);  // the wait doubles to 8 s
}

TEST_CASE("thread_tuner: with a core taken, it settles on the count that is fastest, however many cores")
{
    SUBCASE("2 cores, one busy: one thread")
    {
        thread_tuner tuner(2);
        // two threads stall on the shared core: 10x their idle time; one thread: 2.5x
        const run_summary r = simulate(tuner, 5000, [](int n, double) { return n == 2 ? 10e-3 : 2.5e-3; });
        CHECK(r.chosen == 1);
        CHECK(r.seconds < 1.1 * 5000 * 2.5e-3);
    }
    SUBCASE("16 cores: 4 threads best")
    {
        thread_tuner tuner(16);
        const std::map<int, double> ms{{16, 9.0}, {8, 5.0}, {4, 3.0}, {2, 4.0}, {1, 7.0}};
        const run_summary r = simulate(tuner, 5000, [&](int n, double) { return 1e-3 * ms.at(n); });
        CHECK(r.chosen == 4);
        CHECK(r.seconds < 1.15 * 5000 * 3e-3);
    }
}

TEST_CASE("thread_tuner: it follows a busy process that comes and goes")
{
    thread_tuner tuner(2);
    // busy from 5 s to 15 s of stepping
    const auto machine = [](int n, double now) {
        const bool busy = now >= 5 && now < 15;
        if (n == 2) return busy ? 10e-3 : 1e-3;
        return busy ? 2.5e-3 : 1.8e-3;
    };
    double now = 0;
    const auto step = [&] {
        const double t = machine(tuner.threads(), now);
        tuner.record(t);
        now += t;
    };
    while (now < 5) step();
    CHECK(tuner.chosen() == 2);
    std::size_t slow_steps = 0;  // into the busy stretch: within a handful of slow steps it moves to 1
    for (; tuner.chosen() != 1 && slow_steps < 1000; ++slow_steps) step();
    CHECK(slow_steps < 10);
    while (now < 15) step();
    CHECK(tuner.chosen() == 1);
    while (tuner.chosen() != 2 && now < 60) step();  // idle again: back within the longest wait and a probe
    CHECK(tuner.chosen() == 2);
    CHECK(now < 15 + 8.5);
}

TEST_CASE("host_threads_scope: sets the count for one scope and puts back the count it found")
{
    const int before = tenet::host_threads();
    CHECK(before >= 1);
    {
        const tenet::host_threads_scope one(1);
        CHECK(tenet::host_threads() == 1);
    }
    CHECK(tenet::host_threads() == before);
    try {
        const tenet::host_threads_scope one(1);
        throw std::runtime_error("a step that throws");
    } catch (const std::runtime_error&) {
    }
    CHECK(tenet::host_threads() == before);
    CHECK_THROWS_AS(tenet::set_host_threads(0), tenet::error);
    CHECK(tenet::host_threads() == before);
}
