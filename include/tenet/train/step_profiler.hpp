// step_profiler: the per-layer profile of a training loop's first steps,
// with the trainer switched to eager steps while it watches (captured
// steps show no layers) and put back as it was afterwards.
//
//   train::step_profiler watch(trainer, {.warmup_steps = 3, .steps = 20, .trace_path = "steps.trace.json"});
//   for (;;) {
//       { auto wait = watch.data_wait(); if (!loader.next(b)) break; }
//       trainer.step(b.x(), b.labels(), b.valid());
//       if (watch.step_done()) std::cout << watch.profile().table();
//   }
//
// After warmup_steps + steps steps it stops observing by itself (the loop
// runs on unobserved); step_done() is true after that last step alone.
// With no steps at all ({.warmup_steps = 0, .steps = 0}) it watches
// nothing and changes nothing, so a loop can keep one whether it profiles
// or not.
#pragma once

#include "../profile/layer_profile.hpp"

#include <memory>
#include <optional>
#include <string>

namespace tenet::train {

struct step_profiler_options {
    std::size_t warmup_steps = 3;  // observed, not counted (first-touch, primitive creation)
    std::size_t steps = 20;        // counted
    std::string trace_path{};      // a Chrome trace of every observed step ("": none)
    profile::machine_peak peak{};  // the roofline's figures (linalg::measure_peak)
};

template <class Trainer>
class step_profiler {
public:
    step_profiler(Trainer& trainer, step_profiler_options options)
        : trainer_(trainer), total_(options.warmup_steps + options.steps), was_capturing_(trainer.capturing()),
          trace_(options.trace_path.empty() ? nullptr : std::make_unique<profile::trace_writer>(options.trace_path)),
          profile_({.warmup_steps = options.warmup_steps, .peak = std::move(options.peak), .trace = trace_.get()})
    {
        if (total_ == 0) return;
        trainer_.capture(false);
        trainer_.observe(&profile_);
    }
    ~step_profiler() { stop(); }
    step_profiler(const step_profiler&) = delete;
    step_profiler& operator=(const step_profiler&) = delete;

    // The wait for the next batch, while observing.
    profile::observed_section data_wait() { return {watching() ? &profile_ : nullptr, profile::data_section}; }

    // Call after each step: true after the last observed one (then the
    // profile is complete and the trainer as it was).
    bool step_done()
    {
        if (!watching()) return false;
        if (++seen_ < total_) return false;
        stop();
        return true;
    }

    // Stops watching now (a loop that ended before warmup_steps + steps);
    // true when some steps were counted, so the profile has rows to show.
    bool finish()
    {
        if (!watching()) return false;
        seen_ = total_;
        stop();
        return profile_.steps() > 0;
    }

    bool watching() const { return seen_ < total_; }
    // The profile while watching, else null: for a loader's observe()
    // (data::batch_loader, data::array_loader: batch fills and copies).
    profile::step_observer* observer() { return watching() ? &profile_ : nullptr; }
    const profile::layer_profile& profile() const { return profile_; }
    const profile::trace_writer* trace() const { return trace_.get(); }

private:
    void stop()
    {
        if (stopped_ || total_ == 0) return;
        stopped_ = true;
        trainer_.observe(nullptr);
        trainer_.capture(was_capturing_);
    }

    Trainer& trainer_;
    std::size_t total_, seen_ = 0;
    bool was_capturing_, stopped_ = false;
    std::unique_ptr<profile::trace_writer> trace_;
    profile::layer_profile profile_;
};

}  // namespace tenet::train
