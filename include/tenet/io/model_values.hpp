// What no model can hold, refused when a checkpoint or safetensors file is
// loaded (a format_error naming the file and the tensor; the model is left
// unchanged): an inf or NaN in a parameter or buffer -- only corruption or a
// diverged run makes one, and the next step would spread it -- and a
// negative running variance (a buffer called running_var, BatchNorm's,
// whose square root evaluation takes).
#pragma once

#include <cmath>
#include <string_view>

namespace tenet::io {

// Why `value` cannot be tensor `name`'s ("0.running_var"), or "" when it can.
inline const char* implausible_value(std::string_view name, double value)
{
    if (!std::isfinite(value)) return "not finite";
    const bool variance = name == "running_var" || name.ends_with(".running_var");
    if (variance && value < 0) return "a negative running variance";
    return "";
}

}  // namespace tenet::io
