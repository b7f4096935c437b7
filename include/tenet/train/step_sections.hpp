// What a trainer tells a profile::step_observer (trainer::observe): the
// step, the loss's forward and backward, the optimizer and the collectives,
// as sections; and the scope in which the model reports its layers too.
#pragma once

#include "../profile/step_observer.hpp"

#include <cstdint>
#include <string>

namespace tenet::train::detail {

inline profile::section step_section(bool device, bool captured)
{
    return {.kind = profile::section_kind::step, .name = "step", .device = device, .captured = captured};
}

// The loss reads the prediction (and writes its gradient, backward): bytes
// of the output's elements; the targets and mask are not counted.
inline profile::section loss_section(const char* pass, std::uint64_t output_bytes, bool device)
{
    const bool backward = std::string(pass) == "backward";
    return {.kind = profile::section_kind::loss,
            .name = "loss",
            .pass = pass,
            .bytes = backward ? 2 * output_bytes : output_bytes,
            .device = device};
}

inline profile::section optimizer_section(bool device, std::uint64_t bytes)
{
    return {.kind = profile::section_kind::optimizer, .name = "optimizer", .bytes = bytes, .device = device};
}

// Gradient accumulation's sum of a micro-batch's gradients (bytes read and written).
inline profile::section accumulation_section(bool device, std::uint64_t bytes)
{
    return {.kind = profile::section_kind::optimizer, .name = "gradient accumulation", .bytes = bytes, .device = device};
}

inline profile::section collective_section(const char* name, bool device)
{
    return {.kind = profile::section_kind::collective, .name = name, .device = device};
}

// The model reports its layers to `observer` while this lives, then to
// whatever it reported to before.
template <class Model>
class model_observed {
public:
    model_observed(Model& model, profile::step_observer* observer) : model_(model), before_(model.observer())
    {
        model_.observe(observer);
    }
    ~model_observed() { model_.observe(before_); }
    model_observed(const model_observed&) = delete;
    model_observed& operator=(const model_observed&) = delete;

private:
    Model& model_;
    profile::step_observer* before_;
};

}  // namespace tenet::train::detail
