// Compile-time diagnostics that name the offending shapes and places on the
// compiler's first error line.
//
// C++20 static_assert messages must be literals, so a static_assert can only
// say what failed in general. tenet instead names an incomplete type whose
// spelling is the message, and the compiler's error quotes it:
//     static_assert(diagnose<ok, shape_mismatch_in_assignment<Shape<2,3>, Shape<2,4>>>::value);
// g++ prints the failure's text(), shapes and places written out:
//     error: invalid application of 'sizeof' to incomplete type 'compile_error<...>'
//            {aka 'message<fixed_string<84>{"tenet: shape mismatch in assignment: ..."}>'}
// nvcc's front end spells a string argument character by character, so there
// the failure's own type is the message: a name that says what went wrong,
// with the shapes (or places, or types) as its arguments:
//     error: incomplete type "...shape_mismatch_in_assignment<Shape<2UL, 3UL>, Shape<2UL, 4UL>>" is not allowed
// So every failure type is named as its message reads, the layer or
// function first and what was given last:
//     BatchNorm2d_takes_NHWC_images_Shape_N_H_W_Channels_not<16UL, Shape<2UL, 8UL, 8UL, 8UL>>
// Either way it is the only error: the check reports as success once it has
// failed, so nothing follows from it. The text is only computed on failure.
#pragma once

#include <cstddef>

namespace tenet {

// Compile-time text, e.g. a tenet::map functor's name() for diagnostics:
//   static constexpr auto name() { return tenet::fixed_string("softsign"); }
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

// text_of<element_name<T>>(): a constexpr C string as a fixed_string.
template <const char* const& Text>
constexpr auto text_of()
{
    constexpr std::size_t n = [] {
        std::size_t i = 0;
        while (Text[i] != '\0') ++i;
        return i;
    }();
    fixed_string<n> text;
    for (std::size_t i = 0; i != n; ++i) text.chars[i] = Text[i];
    return text;
}

namespace detail::diagnostic {

constexpr std::size_t decimal_digits(std::size_t value)
{
    std::size_t digits = 1;
    while (value >= 10) {
        value /= 10;
        ++digits;
    }
    return digits;
}

// Never defined: naming one is the error; its argument is the message.
template <fixed_string Message>
struct message;
template <class Failure>
struct unmet;

#if defined(__NVCC__)
template <class Failure>
using compile_error = unmet<Failure>;
#else
template <class Failure>
using compile_error = message<Failure::text()>;
#endif

}  // namespace detail::diagnostic

// decimal<42>() is fixed_string("42"): numbers inside a diagnostic's text().
template <std::size_t Value>
constexpr auto decimal()
{
    constexpr std::size_t digits = detail::diagnostic::decimal_digits(Value);
    fixed_string<digits> text;
    std::size_t v = Value;
    for (std::size_t i = digits; i-- > 0; v /= 10) text.chars[i] = static_cast<char>('0' + v % 10);
    return text;
}

// static_assert(diagnose<ok, Failure>::value): when !ok, one error naming
// Failure (a type with a static constexpr text()). Usable at any scope, by
// the library's checks and by a user's own.
template <bool Ok, class Failure>
struct diagnose {
    static constexpr bool value = true;
};

template <class Failure>
struct diagnose<false, Failure> {
    static_assert(!sizeof(detail::diagnostic::compile_error<Failure>), "tenet: see the type named in this error");
    static constexpr bool value = true;  // no follow-on error at the caller
};

}  // namespace tenet
