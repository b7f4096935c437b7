// step_observer: the protocol by which a training step tells a profiler
// what it is running. The trainer reports each step, the loss, the
// optimizer and the collectives; a Sequential model reports each of its
// layers' forward and backward; a training loop reports its data wait. An
// observer sees begin(s) and end(s) around each section, nested as they
// run. With no observer set (the default) nothing is built or called.
//
//   profile::layer_profile p;               // an observer (layer_profile.hpp)
//   trainer.observe(&p);
//   ... steps ...
//   trainer.observe(nullptr);
//
// A section's FLOPs and bytes are known at compile time from the layer's
// shapes (nn::layer_cost); 0 where they are not counted.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

namespace tenet::profile {

enum class section_kind {
    step,        // one trainer step, around everything below
    data,        // waiting for the next batch (reported by the loop)
    layer,       // one layer's forward or backward
    loss,        // the loss's forward or backward
    optimizer,   // the fused update (with gradient accumulation's sum)
    collective,  // data parallel: an all-reduce, reduce-scatter or all-gather
};

inline const char* kind_name(section_kind k)
{
    switch (k) {
    case section_kind::step: return "step";
    case section_kind::data: return "data";
    case section_kind::layer: return "layer";
    case section_kind::loss: return "loss";
    case section_kind::optimizer: return "optimizer";
    case section_kind::collective: return "collective";
    }
    return "?";
}

struct section {
    section_kind kind = section_kind::layer;
    std::string name{};   // "3 Linear", "loss", "optimizer", "gradient all-reduce"
    std::string pass{};   // "forward", "backward", or "" (not a pass)
    std::string shape{};  // a layer's "Shape<256, 784> -> Shape<256, 10>"
    std::uint64_t flops = 0, bytes = 0;
    // The work runs on the current CUDA stream (time it with events), not
    // on the calling thread.
    bool device = false;
    // A step replayed from a CUDA Graph: nothing inside it is reported.
    bool captured = false;
    // The trace track to draw it on ("": the calling thread's for host
    // work, "device stream" for device work).
    std::string track{};
};

// The wait for the next batch (a training loop reports it).
inline section data_section() { return {.kind = section_kind::data, .name = "data"}; }

class step_observer {
public:
    virtual void begin(const section& s) = 0;
    virtual void end(const section& s) = 0;

protected:
    ~step_observer() = default;
};

// begin(s) when made and end(s) when it goes; with a null observer,
// nothing (the section is not even made: pass a function that makes it).
// An observer's end() does not throw: it may run during unwinding.
class observed_section {
public:
    template <class Make>
        requires std::is_invocable_r_v<section, Make>
    observed_section(step_observer* observer, Make&& make) : observer_(observer)
    {
        if (!observer_) return;
        section_ = std::forward<Make>(make)();
        observer_->begin(section_);
    }
    ~observed_section()
    {
        if (observer_) observer_->end(section_);
    }
    observed_section(const observed_section&) = delete;
    observed_section& operator=(const observed_section&) = delete;

private:
    step_observer* observer_;
    section section_;
};

}  // namespace tenet::profile
