// train::thread_tuner against simulated machines: step times given as a
// function of the thread count (and of time, when another process comes and
// goes), with noise. It must settle on the fastest count, probe rarely on
// a steady machine, follow a change within a few steps, and cost little.
#include <doctest/doctest.h>
#include <tenet/data/batch_pipeline.hpp>
#include <tenet/exec/host_threads.hpp>
#include <tenet/train/thread_tuner.hpp>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include <functional>
#include <map>
#include <random>
#include <set>
#include <vector>

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
    CHECK(tuner.probes() < 12);  // the wait doubles to 16 s
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
    CHECK(slow_steps < 20);  // 2 to notice, 10 ms untimed (4), a probe of 15 ms (6)
    while (now < 15) step();
    CHECK(tuner.chosen() == 1);
    while (tuner.chosen() != 2 && now < 60) step();  // idle again: back within the longest wait (16 s) and a probe
    CHECK(tuner.chosen() == 2);
    CHECK(now < 15 + 16.5);
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

TEST_CASE("thread_tuner: publishes the count its steps run with for the work between steps, and clears it")
{
    const int most = tenet::host_threads();
    CHECK(tenet::host_threads_between_steps() == most);  // no tuner: every thread
    {
        thread_tuner tuner(2);
        tuner.record(1e-3);
        CHECK(tenet::host_threads_between_steps() == std::min(2, most));
        // a machine where one thread is 4x faster: the tuner moves, and the work between steps follows at once
        simulate(tuner, 200, [](int n, double) { return n == 1 ? 1e-3 : 4e-3; });
        CHECK(tuner.chosen() == 1);
        CHECK(tenet::host_threads_between_steps() == std::min(tuner.threads(), most));  // (a probe's count while it runs)
        while (tuner.threads() != 1) tuner.record(1e-3);
        CHECK(tenet::host_threads_between_steps() == 1);
        {
            thread_tuner other(3, true);  // a second trainer's tuner: the latest step's count holds
            other.record(1e-3);
            CHECK(tenet::host_threads_between_steps() == std::min(3, most));
        }
        CHECK(tenet::host_threads_between_steps() == most);  // it cleared its own count
        tuner.record(1e-3);
        CHECK(tenet::host_threads_between_steps() == std::min(tuner.threads(), most));
        {
            thread_tuner other(3, true);
            other.record(1e-3);
            tuner.record(1e-3);
        }  // (its count was replaced: it leaves the first tuner's)
        CHECK(tenet::host_threads_between_steps() == std::min(tuner.threads(), most));
    }
    CHECK(tenet::host_threads_between_steps() == most);  // the last tuner gone: every thread again
    tenet::set_host_threads_between_steps(most + 5);  // never above host_threads()
    CHECK(tenet::host_threads_between_steps() == most);
    tenet::set_host_threads_between_steps(0);
    CHECK_THROWS_AS(tenet::set_host_threads_between_steps(-1), tenet::error);
    CHECK(tenet::host_threads() == most);  // a getter changes nothing
}

TEST_CASE("a loader's fill runs on the between-steps count, and writes every row whatever the count")
{
    // 512 rows of 256 values: large enough to be split across threads
    std::vector<std::uint32_t> samples(512);
    std::mt19937 rng(3);
    for (auto& s : samples) s = static_cast<std::uint32_t>(rng() % 100000);
    const auto fill = [&](int between) {
        tenet::set_host_threads_between_steps(between);
        std::vector<std::uint32_t> rows(samples.size(), 0xFFFFFFFFu);  // poisoned
        std::set<int> teams;
        std::vector<int> team_of_row(samples.size());
        tenet::data::detail::fill_rows(samples, 256, [&](std::size_t r, std::size_t sample) {
            rows[r] = static_cast<std::uint32_t>(sample);
#if defined(_OPENMP)
            team_of_row[r] = omp_get_num_threads();
#else
            team_of_row[r] = 1;
#endif
        });
        tenet::set_host_threads_between_steps(0);
        CHECK(rows == samples);
        return std::set<int>(team_of_row.begin(), team_of_row.end());
    };
    const int before = tenet::host_threads();
    CHECK(fill(1) == std::set<int>{1});
    CHECK(fill(0) == std::set<int>{before});
    CHECK(tenet::host_threads() == before);  // the fill put the caller's count back
}
