// Compile-time diagnostics that name the offending shapes and places.
//
// C++20 static_assert messages must be literals, so tenet puts the full text
// in the asserted condition instead:
//     if constexpr (!ok) static_assert(diagnostic<Message::text()>, "tenet: ...");
// The compiler prints the literal as the error and, on g++, the full text
// (shapes and places included) in the note saying which condition failed; nvcc
// names the types in its "detected during instantiation" lines. The text is
// only computed when the check fails.
#pragma once

#include <cstddef>

namespace tenet::detail {

template <std::size_t N>
struct fixed_string {
    char chars[N + 1]{};

    constexpr fixed_string() = default;
    constexpr fixed_string(const char (&text)[N + 1])
    {
        for (std::size_t i = 0; i <= N; ++i) chars[i] = text[i];
    }
    static constexpr std::size_t size() { return N; }
};

template <std::size_t N>
fixed_string(const char (&)[N]) -> fixed_string<N - 1>;

template <std::size_t A, std::size_t B>
constexpr fixed_string<A + B> operator+(const fixed_string<A>& a, const fixed_string<B>& b)
{
    fixed_string<A + B> joined;
    for (std::size_t i = 0; i != A; ++i) joined.chars[i] = a.chars[i];
    for (std::size_t i = 0; i != B; ++i) joined.chars[A + i] = b.chars[i];
    return joined;
}

constexpr std::size_t decimal_digits(std::size_t value)
{
    std::size_t digits = 1;
    while (value >= 10) {
        value /= 10;
        ++digits;
    }
    return digits;
}

template <std::size_t Value>
constexpr auto decimal()
{
    fixed_string<decimal_digits(Value)> text;
    std::size_t v = Value;
    for (std::size_t i = decimal_digits(Value); i-- > 0; v /= 10) text.chars[i] = static_cast<char>('0' + v % 10);
    return text;
}

// Always false; its template argument is the message the compiler shows.
template <fixed_string Message>
inline constexpr bool diagnostic = false;

}  // namespace tenet::detail
