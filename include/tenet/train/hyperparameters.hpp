// Checking a rule's or schedule's configuration on the host, once, where it
// is built: a value outside its formula's domain is a tenet::error naming
// the owner ("tenet: sgd: ...").
#pragma once

#include "../memory/error.hpp"

#include <string>

namespace tenet::train::detail {

inline void require_hyperparameter(bool ok, const char* owner, const char* what)
{
    if (!ok) throw error(std::string("tenet: ") + owner + ": " + what);
}

}  // namespace tenet::train::detail
