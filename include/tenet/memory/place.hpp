// Places: where a tensor's memory lives. The place is part of a tensor's
// type, so mixing places in one expression is a compile error, and the
// backend (host loop or CUDA kernel) is chosen at compile time.
#pragma once

#include "../diagnostic.hpp"

#include <type_traits>

namespace tenet {

struct Host {
    static constexpr auto name() { return fixed_string("Host"); }
};
// Page-locked host memory: host code reads it; copies to and from the device
// are truly asynchronous.
struct HostPinned {
    static constexpr auto name() { return fixed_string("HostPinned"); }
};
struct Device {
    static constexpr auto name() { return fixed_string("Device"); }
};
// Scalars, iota and random generators live nowhere: they fit any place.
struct AnyPlace {
    static constexpr auto name() { return fixed_string("AnyPlace"); }
};

template <class P>
concept memory_place = std::is_same_v<P, Host> || std::is_same_v<P, HostPinned> || std::is_same_v<P, Device>;

template <class P>
inline constexpr bool host_accessible_v = std::is_same_v<P, Host> || std::is_same_v<P, HostPinned>;

namespace detail::memory {

// Where an expression over operands in places A and B is computed: the host
// for Host and HostPinned, the device for Device; void when they do not mix.
template <class A, class B>
struct combine_places {
    using type = void;
};
template <class A>
struct combine_places<A, A> {
    using type = A;
};
template <class A>
struct combine_places<A, AnyPlace> {
    using type = A;
};
template <class B>
struct combine_places<AnyPlace, B> {
    using type = B;
};
template <>
struct combine_places<AnyPlace, AnyPlace> {
    using type = AnyPlace;
};
template <>
struct combine_places<Host, HostPinned> {
    using type = Host;
};
template <>
struct combine_places<HostPinned, Host> {
    using type = Host;
};

}  // namespace detail::memory

template <class A, class B>
using combined_place_t = typename detail::memory::combine_places<A, B>::type;

namespace detail::memory {
template <class... P>
struct combine_all;
template <class P>
struct combine_all<P> {
    using type = P;
};
template <class A, class B, class... Rest>
struct combine_all<A, B, Rest...> {
    using type = typename combine_all<combined_place_t<A, B>, Rest...>::type;
};
}  // namespace detail::memory

// The place of an expression over operands in places P...; void when they do not mix.
template <class... P>
using combined_places_t = typename detail::memory::combine_all<P...>::type;

// The backend that computes in place P: Host for host memory, Device otherwise.
template <class P>
using compute_place_t = std::conditional_t<host_accessible_v<P>, Host, P>;

}  // namespace tenet
