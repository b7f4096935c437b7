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

private:
    using clock = std::chrono::steady_clock;
    clock::time_point start_;
};

}  // namespace tenet::profile
