// Device results that must equal host references bit for bit, reported so a
// failure on a borrowed GPU can be fixed offline: what was computed, how
// many elements differ, and the first one (index, device bits and value,
// host bits and value).
#pragma once

#include <doctest/doctest.h>
#include <tenet/numeric/convert.hpp>
#include <tenet/numeric/types.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>

namespace testing {

namespace detail {

template <class T>
std::string element_text(const T& value)
{
    unsigned char bytes[sizeof(T)];
    std::memcpy(bytes, &value, sizeof(T));
    std::string text = "0x";
    char digits[3];
    for (std::size_t b = sizeof(T); b-- > 0;) {  // most significant byte first (x86 is little-endian)
        std::snprintf(digits, sizeof digits, "%02x", bytes[b]);
        text += digits;
    }
    if constexpr (std::is_arithmetic_v<T> || std::is_same_v<T, tenet::f16> || std::is_same_v<T, tenet::bf16>) {
        char number[40];
        std::snprintf(number, sizeof number, " (%.9g)", tenet::convert<tenet::f64>(value));
        text += number;
    }
    return text;
}

}  // namespace detail

// Empty when the n elements of got and want have the same bits; otherwise
// one line naming `what`, the count that differ and the first of them.
template <class T>
std::string bitwise_report(const char* what, const T* got, const T* want, std::size_t n)
{
    std::size_t differ = 0, first = 0;
    for (std::size_t i = 0; i < n; ++i)
        if (std::memcmp(got + i, want + i, sizeof(T)) != 0 && differ++ == 0) first = i;
    if (differ == 0) return {};
    return std::string(what) + ": " + std::to_string(differ) + " of " + std::to_string(n) +
           " elements differ in their bits; first [" + std::to_string(first) + "] device " +
           detail::element_text(got[first]) + ", host " + detail::element_text(want[first]);
}

}  // namespace testing

// CHECK that n device elements equal the host's bit for bit, with
// bitwise_report's line when they do not.
#define CHECK_BITWISE_EQUAL(what, got, want, n)                                                    \
    do {                                                                                          \
        const std::string bitwise_report_ = testing::bitwise_report(what, got, want, n);           \
        CHECK_MESSAGE(bitwise_report_.empty(), bitwise_report_);                                  \
    } while (0)
