// event_marks: points in a CUDA stream's work, timed. mark() records an
// event on the current stream; after wait(), ms_between(a, b) is the
// device time between two marks. The events are kept and reused after
// clear(), so a profile of many steps creates them once.
#pragma once

#include "../memory/stream.hpp"

#include <cstddef>
#include <vector>

namespace tenet::profile {

class event_marks {
public:
    event_marks() = default;
    event_marks(const event_marks&) = delete;
    event_marks& operator=(const event_marks&) = delete;
    ~event_marks()
    {
        for (cudaEvent_t e : events_) cudaEventDestroy(e);
    }

    std::size_t mark()
    {
        if (used_ == events_.size()) {
            cudaEvent_t e = nullptr;
            TENET_CUDA_CHECK(cudaEventCreate(&e));
            events_.push_back(e);
        }
        TENET_CUDA_CHECK(cudaEventRecord(events_[used_], current_stream().get()));
        return used_++;
    }

    // Waits for the last mark's work.
    void wait() const
    {
        if (used_ > 0) TENET_CUDA_CHECK(cudaEventSynchronize(events_[used_ - 1]));
    }

    double ms_between(std::size_t from, std::size_t to) const
    {
        float ms = 0;
        TENET_CUDA_CHECK(cudaEventElapsedTime(&ms, events_.at(from), events_.at(to)));
        return ms;
    }

    std::size_t size() const { return used_; }
    void clear() { used_ = 0; }

private:
    std::vector<cudaEvent_t> events_;
    std::size_t used_ = 0;
};

}  // namespace tenet::profile
