// Breaks the rules from the top layer; its use of internal::helper is fine.
#pragma once

namespace tenet::detail::high {
struct x {};
struct from_high {};
}  // namespace tenet::detail::high

namespace tenet::internal {
using detail::high::from_high;
}  // namespace tenet::internal

namespace tenet {
namespace detail {
struct shared {};
}  // namespace detail

using allowed = internal::helper;
using reached_down = nn::detail::hidden;
using never_exported = internal::nobody;

inline void opens_everything()
{
    using namespace ::tenet::detail;
}

inline void opens_everything_too()
{
    using namespace detail;
}
}  // namespace tenet
