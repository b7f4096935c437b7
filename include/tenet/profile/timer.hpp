// host_timer: wall-clock seconds on the host's monotonic clock, for epoch
// times, throughput and ETAs (device work is timed with CUDA events).
#pragma once

#include "../config.hpp"

#include <chrono>

namespace tenet::profile {

class host_timer {
public:
    host_timer() : start_(clock::now()) {}

    void restart() { start_ = clock::now(); }
    double seconds() const { return std::chrono::duration<double>(clock::now() - start_).count(); }
    // seconds(), and the timer starts again from now
    double lap()
    {
        const auto now = clock::now();
        const double s = std::chrono::duration<double>(now - start_).count();
        start_ = now;
        return s;
    }

private:
    using clock = std::chrono::steady_clock;
    clock::time_point start_;
};

}  // namespace tenet::profile
