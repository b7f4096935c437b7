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
// steps run with the current count while their times are kept; right after
// the first 5 and then every so often (a quarter second of steps at first)
// one neighbouring count is probed for a few steps, and taken if its median step is at least 5%
// faster. A probe that loses doubles the wait before the next (up to 8 s),
// so on a steady machine probing costs well under 1%; a probe whose first
// step is 1.5x slower stops at once. When the current count's steps slow
// down by half (another process started), a probe follows at once.
//
//   thread_tuner tuner(host_threads());
//   { host_threads_scope s(tuner.threads()); ... one step, timed ... }
//   tuner.record(seconds);
#pragma once

#include "../memory/error.hpp"

#include <algorithm>
#include <array>
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

    // The count the next step runs with.
    int threads() const noexcept { return candidates_[probing_ ? probe_ : current_]; }
    // The count the tuner holds best so far (what steps run with between probes).
    int chosen() const noexcept { return candidates_[current_]; }
    const std::vector<int>& candidates() const noexcept { return candidates_; }
    std::size_t probes() const noexcept { return probes_; }

    // The wall time of the step that just ran with threads().
    void record(double seconds)
    {
        if (candidates_.size() == 1 || ++steps_ <= warmup_steps) return;
        if (probing_) return record_probe(seconds);
        recent_[recent_count_++ % recent_.size()] = seconds;
        since_probe_ += seconds;
        if (recent_count_ < recent_.size()) return;
        if (!(baseline_ > 0)) baseline_ = recent_median();
        if (latest_median() > slowdown * baseline_ || since_probe_ >= interval_) start_probe();
    }

private:
    static constexpr std::size_t warmup_steps = 2;  // allocation, first touches, oneDNN's plans
    static constexpr std::size_t probe_steps = 3;
    static constexpr double first_interval = 0.25, last_interval = 8.0;  // seconds of steps between probes
    static constexpr double win = 0.95, slowdown = 1.5;

    void start_probe()
    {
        baseline_ = recent_median();
        // the neighbours of the current count, taking turns
        const bool down = (probes_ % 2 == 0 && current_ + 1 < candidates_.size()) || current_ == 0;
        probe_ = down ? current_ + 1 : current_ - 1;
        probing_ = true;
        probe_times_.clear();
        ++probes_;
    }

    void record_probe(double seconds)
    {
        probe_times_.push_back(seconds);
        const bool hopeless = probe_times_.size() == 1 && seconds > slowdown * baseline_;
        if (!hopeless && probe_times_.size() < probe_steps) return;
        probing_ = false;
        since_probe_ = 0;
        if (!hopeless && median(probe_times_) < win * baseline_) {  // the probed count wins
            current_ = probe_;
            baseline_ = median(probe_times_);
            recent_count_ = 0;  // the current count's times start again
            interval_ = first_interval;
        } else {
            interval_ = std::min(2 * interval_, last_interval);
        }
    }

    double recent_median() const
    {
        return median(std::vector<double>(recent_.begin(), recent_.end()));
    }
    double latest_median() const
    {
        std::vector<double> last;
        for (std::size_t k = 1; k <= 3; ++k) last.push_back(recent_[(recent_count_ - k) % recent_.size()]);
        return median(last);
    }
    static double median(std::vector<double> v)
    {
        std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
        return v[v.size() / 2];
    }

    std::vector<int> candidates_;  // most, most / 2, ..., 1
    std::size_t current_ = 0, probe_ = 0;
    bool probing_ = false;
    std::size_t steps_ = 0, probes_ = 0;
    std::array<double, 5> recent_{};  // the current count's latest step times (a ring)
    std::size_t recent_count_ = 0;
    std::vector<double> probe_times_;
    double baseline_ = 0;  // the current count's median step when last compared
    double since_probe_ = first_interval;  // (the first probe follows the first measured steps)
    double interval_ = first_interval;
};

}  // namespace tenet::train
