// thread_tuner: the host thread count a training loop's steps run fastest
// with, found by measuring the steps themselves. Static shapes make every
// step the same work, so their wall times compare directly.
//
// Why: on a machine whose cores are shared (a compiler, a data loader, a
// second MPI rank), a parallel loop waits for its slowest thread, and a
// thread that shares its core with a busy process is descheduled for whole
// time slices: an epoch on every core can take 10x its idle time, where
// one thread fewer keeps it within 2-3x. No setting from the user is needed.
//
// How: candidates are the most threads allowed, half that, ..., 1. The
// steps run with the current count while their times are kept (the last
// 16); right after the first 8 (or 3 that took 0.1 s) and then every so
// often (a second of steps at first) one neighbouring count is probed for
// at least 3 steps and 15 ms -- up to 8 while its mean is within 2 standard
// errors of the current count's -- and taken if its mean step is at least
// 5% faster. A probe that loses doubles the wait before the next (up to
// 16 s), so on a steady machine probing costs well under 1%; a probe whose
// first step is 1.5x slower stops at once. When the current count's steps
// slow down by half (another process started), a probe follows at once (at
// most one every quarter second: steps beside a busy process are noisy).
// After every change of count, the first 10 ms of steps are not timed
// (OpenMP's threads still spin from the count before), unless a step takes
// 50 ms.
//
//   thread_tuner tuner(host_threads());
//   { host_threads_scope s(tuner.threads()); ... one step ... }
//   tuner.record(seconds);  // since the last step ended: the step and the
//                           // work between (a loader's fill) both count
//
// Each recorded step also publishes threads() as host_threads_between_steps()
// (exec/host_threads.hpp), the count a loader fills the next batch with;
// the tuner clears it when it goes.
#pragma once

#include "../exec/host_threads.hpp"
#include "../memory/error.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

namespace tenet::train {

class thread_tuner {
public:
    // Candidates most, most / 2, ..., 1; or most alone when fixed.
    explicit thread_tuner(int most, bool fixed = false)
    {
        if (most < 1) throw error("tenet: thread_tuner: at least 1 thread, not " + std::to_string(most));
        for (int n = most; n >= 1; n = fixed ? 0 : n / 2) candidates_.push_back(n);
    }
    ~thread_tuner()
    {
        if (published_ > 0) clear_host_threads_between_steps(published_);
    }
    thread_tuner(const thread_tuner&) = delete;
    thread_tuner& operator=(const thread_tuner&) = delete;

    // The count the next step runs with.
    int threads() const noexcept { return candidates_[probing_ ? probe_ : current_]; }
    // The count the tuner holds best so far (what steps run with between probes).
    int chosen() const noexcept { return candidates_[current_]; }
    const std::vector<int>& candidates() const noexcept { return candidates_; }
    std::size_t probes() const noexcept { return probes_; }

    // The wall time of the step that just ran with threads().
    void record(double seconds)
    {
        const int ran = threads();
        update(seconds);
        if (threads() != ran) settle_ = settle_seconds;
        set_host_threads_between_steps(published_ = threads());  // (every step: the latest tuner's count holds)
    }

private:
    static constexpr std::size_t warmup_steps = 2;  // allocation, first touches, oneDNN's plans
    // A probe runs at least 3 steps and 15 ms, and counts are compared by
    // their mean step: beside a busy process most steps on every core are
    // fast and a few stall for a time slice, so a median would pick them.
    static constexpr std::size_t probe_steps = 3;
    static constexpr double probe_seconds = 0.015;
    // The current count is first compared after 8 steps, or 3 of 0.1 s.
    static constexpr std::size_t fewest_recent = 8;  // (of the 16 kept)
    static constexpr double enough_recent_seconds = 0.1;
    // seconds of steps between probes: a probe that loses costs its steps'
    // difference, so at first one a second, doubling to one in 16 s
    static constexpr double first_interval = 1.0, last_interval = 16.0;
    static constexpr double slowdown_gap = 0.25;  // the least time between probes a slowdown starts
    // A probe whose mean is within 2 standard errors of the baseline goes
    // on, up to 8 steps (steps beside a busy process are noisy).
    static constexpr std::size_t most_probe_steps = 8;
    static constexpr double win = 0.95, clear_win = 0.8, slowdown = 1.5;
    // After the count changes, steps are not timed until this much time has
    // passed: libgomp's idle threads spin for several milliseconds after a
    // parallel loop (3.5-7 ms measured, 2-core AMD EPYC), so the first steps
    // on fewer threads would be timed beside them.
    // A step of 50 ms or more is timed at once (the spinning is a small part).
    static constexpr double settle_seconds = 0.01, long_step = 0.05;

    void update(double seconds)
    {
        if (candidates_.size() == 1 || ++steps_ <= warmup_steps) return;
        if (settle_ > 0 && seconds < long_step) {
            settle_ -= seconds;
            return;
        }
        settle_ = 0;
        if (probing_) return record_probe(seconds);
        recent_[recent_count_++ % recent_.size()] = seconds;
        since_probe_ += seconds;
        if (!enough_recent()) return;
        if (!(baseline_ > 0)) baseline_ = recent_mean();
        const bool slowed = latest_mean() > slowdown * baseline_ && since_probe_ >= slowdown_gap;
        if (slowed || since_probe_ >= interval_) start_probe(slowed);
    }

    void start_probe(bool slowed)
    {
        baseline_ = slowed ? latest_mean() : recent_mean();  // (slowed: the older steps are of the past)
        // the neighbours of the current count, taking turns
        const bool down = (probes_ % 2 == 0 && current_ + 1 < candidates_.size()) || current_ == 0;
        probe_ = down ? current_ + 1 : current_ - 1;
        probing_ = true;
        probe_steps_ = 0;
        probe_time_ = probe_squares_ = 0;
        ++probes_;
    }

    void record_probe(double seconds)
    {
        probe_time_ += seconds;
        probe_squares_ += seconds * seconds;
        const bool hopeless = ++probe_steps_ == 1 && seconds > slowdown * baseline_;
        if (!hopeless && (probe_steps_ < probe_steps || probe_time_ < probe_seconds)) return;
        const double n = static_cast<double>(probe_steps_), probe_mean = probe_time_ / n;
        const double variance = std::max(0.0, probe_squares_ / n - probe_mean * probe_mean) * n / (n - 1);
        const bool unsure = std::fabs(probe_mean - baseline_) < 2 * std::sqrt(variance / n);
        if (!hopeless && unsure && probe_steps_ < most_probe_steps) return;
        probing_ = false;
        since_probe_ = 0;
        // a clear win (the machine changed) probes on soon; a narrow one may
        // be noise, and waits as a loss does
        interval_ = !hopeless && probe_mean < clear_win * baseline_ ? first_interval
                                                                   : std::min(2 * interval_, last_interval);
        if (!hopeless && probe_mean < win * baseline_) {  // the probed count wins
            current_ = probe_;
            baseline_ = probe_mean;
            recent_count_ = 0;  // the current count's times start again
        }
    }

    // the mean of the current count's last n steps (n at most what the ring holds)
    double mean_of_last(std::size_t n) const
    {
        double sum = 0;
        for (std::size_t k = 1; k <= n; ++k) sum += recent_[(recent_count_ - k) % recent_.size()];
        return sum / static_cast<double>(n);
    }
    bool enough_recent() const
    {
        if (recent_count_ >= fewest_recent) return true;
        return recent_count_ >= probe_steps && mean_of_last(recent_count_) * static_cast<double>(recent_count_) >=
                                                   enough_recent_seconds;
    }
    double recent_mean() const { return mean_of_last(std::min(recent_count_, recent_.size())); }
    double latest_mean() const { return mean_of_last(3); }

    std::vector<int> candidates_;  // most, most / 2, ..., 1
    int published_ = 0;  // the count last set as host_threads_between_steps()
    std::size_t current_ = 0, probe_ = 0;
    bool probing_ = false;
    std::size_t steps_ = 0, probes_ = 0;
    std::array<double, 16> recent_{};  // the current count's latest step times (a ring)
    std::size_t recent_count_ = 0;
    std::size_t probe_steps_ = 0;
    double probe_time_ = 0, probe_squares_ = 0;  // the probe's steps so far, their seconds and squares
    double baseline_ = 0;  // the current count's mean step when last compared
    double since_probe_ = first_interval;  // (the first probe follows the first measured steps)
    double interval_ = first_interval;
    double settle_ = 0;  // seconds of steps left untimed since the count changed
};

}  // namespace tenet::train
