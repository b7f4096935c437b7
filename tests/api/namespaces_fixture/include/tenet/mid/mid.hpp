// A second owner of low/'s detail namespace.
#pragma once

namespace tenet::detail::low {
struct twice {};
}  // namespace tenet::detail::low
