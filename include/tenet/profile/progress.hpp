// profile::progress_bar: training progress as one line,
//   epoch 3 [=========>          ] 123/235 loss 0.4321 12345 samples/s ETA 0:12
// redrawn in place with '\r' on a terminal; elsewhere (CI logs, files) a line
// per tenth of the epoch, so logs stay short. The formatting functions are
// pure so that the exact text can be tested.
#pragma once

#include "timer.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <iostream>
#include <limits>
#include <string>
#include <string_view>
#include <utility>

namespace tenet::profile {

inline constexpr std::size_t progress_bar_width = 20;

// "0:07", "12:34", "1:02:03" (rounded to the second); "-:--" when unknown.
inline std::string format_duration(double seconds)
{
    if (!std::isfinite(seconds) || seconds < 0) return "-:--";
    const long long total = std::llround(seconds);
    const long long h = total / 3600, m = total / 60 % 60, s = total % 60;
    char text[32];
    if (h > 0)
        std::snprintf(text, sizeof text, "%lld:%02lld:%02lld", h, m, s);
    else
        std::snprintf(text, sizeof text, "%lld:%02lld", m, s);
    return text;
}

// Seconds left if the remaining steps run at the pace so far; NaN before the first.
inline double eta_seconds(double elapsed_seconds, std::size_t done, std::size_t total)
{
    if (done == 0) return std::numeric_limits<double>::quiet_NaN();
    if (done >= total) return 0;
    return elapsed_seconds / static_cast<double>(done) * static_cast<double>(total - done);
}

namespace detail {

// "label [=====>    ] 123/235": done is right-aligned to total's width so
// that redrawn lines keep their columns.
inline std::string progress_head(std::string_view label, std::size_t done, std::size_t total)
{
    done = std::min(done, total);
    const std::size_t filled = total == 0 ? progress_bar_width : done * progress_bar_width / total;
    std::string bar(filled, '=');
    if (filled < progress_bar_width) bar += '>';
    bar.resize(progress_bar_width, ' ');
    const std::string total_text = std::to_string(total);
    std::string done_text = std::to_string(done);
    done_text.insert(0, total_text.size() - done_text.size(), ' ');
    return std::string(label) + " [" + bar + "] " + done_text + "/" + total_text;
}

inline std::string progress_rates(double loss, double samples_per_s)
{
    char text[64];
    std::snprintf(text, sizeof text, "loss %.4f %.0f samples/s", loss, samples_per_s);
    return text;
}

inline bool is_terminal(const std::ostream& out)
{
    if (&out == &std::cout) return ::isatty(STDOUT_FILENO) != 0;
    if (&out == &std::cerr || &out == &std::clog) return ::isatty(STDERR_FILENO) != 0;
    return false;
}

}  // namespace detail

inline std::string format_progress(std::string_view label, std::size_t done, std::size_t total, double loss,
                                   double samples_per_s, double eta_seconds)
{
    return detail::progress_head(label, done, total) + " " + detail::progress_rates(loss, samples_per_s) + " ETA " +
           format_duration(eta_seconds);
}

// The last line of an epoch: a full bar and the time it took.
inline std::string format_progress_final(std::string_view label, std::size_t total, double loss, double samples_per_s,
                                         double elapsed_seconds)
{
    return detail::progress_head(label, total, total) + " " + detail::progress_rates(loss, samples_per_s) + " in " +
           format_duration(elapsed_seconds);
}

// One epoch's bar; the clock starts at construction.
class progress_bar {
public:
    // Redraws in place when out is std::cout/std::cerr/std::clog on a terminal.
    progress_bar(std::ostream& out, std::string label, std::size_t total_steps)
        : progress_bar(out, std::move(label), total_steps, detail::is_terminal(out))
    {
    }
    progress_bar(std::ostream& out, std::string label, std::size_t total_steps, bool redraw)
        : out_(out), label_(std::move(label)), total_(total_steps), redraw_(redraw)
    {
    }

    // Without redraw, prints only on reaching a new tenth before the end:
    // finish() prints the last line.
    void update(std::size_t step_done, double loss, double samples_per_s)
    {
        if (!redraw_) {
            const std::size_t tenth = total_ == 0 ? 10 : std::min(step_done, total_) * 10 / total_;
            if (tenth <= tenths_shown_ || step_done >= total_) return;
            tenths_shown_ = tenth;
        }
        const double eta = eta_seconds(timer_.seconds(), step_done, total_);
        show(format_progress(label_, step_done, total_, loss, samples_per_s, eta));
    }

    void finish(double loss, double samples_per_s)
    {
        show(format_progress_final(label_, total_, loss, samples_per_s, timer_.seconds()));
        if (redraw_) out_ << '\n' << std::flush;
    }

private:
    void show(const std::string& line)
    {
        if (!redraw_) {
            out_ << line << '\n' << std::flush;
            return;
        }
        // Spaces over whatever a longer previous line left behind.
        out_ << '\r' << line << std::string(drawn_ > line.size() ? drawn_ - line.size() : 0, ' ') << std::flush;
        drawn_ = line.size();
    }

    std::ostream& out_;
    std::string label_;
    std::size_t total_;
    bool redraw_;
    host_timer timer_;
    std::size_t tenths_shown_ = 0;
    std::size_t drawn_ = 0;
};

}  // namespace tenet::profile
