// Breaks the rules from the bottom layer.
#pragma once

namespace tenet::detail::low {
struct helper {};
}  // namespace tenet::detail::low

namespace tenet::nn {
namespace detail {
struct hidden {};
}  // namespace detail
}  // namespace tenet::nn

namespace tenet::internal {
using detail::low::helper;
}  // namespace tenet::internal

namespace tenet {
// detail::high::in_a_comment is not a use
using reached_up = detail::high::x;
using exported_from_above = internal::from_high;
}  // namespace tenet
