// What tenet knows about each element type: its category, its bit-level
// format, and its limits (max, lowest, epsilon, ...), usable on host, device
// and at compile time.
#pragma once

#include "float_format.hpp"
#include "types.hpp"

#include <cstdint>
#include <type_traits>

namespace tenet {

template <class T>
inline constexpr bool is_floating_v =
    std::is_same_v<T, f32> || std::is_same_v<T, f64> || std::is_same_v<T, f16> || std::is_same_v<T, bf16> ||
    std::is_same_v<T, f8e4m3> || std::is_same_v<T, f8e5m2>;

template <class T>
inline constexpr bool is_integer_v = std::is_same_v<T, i8> || std::is_same_v<T, i32>;

template <class T>
inline constexpr bool is_bool_v = std::is_same_v<T, bool>;

// The types tensors can hold.
template <class T>
concept element = is_floating_v<T> || is_integer_v<T> || is_bool_v<T>;

// 16- and 8-bit floats: stored narrow, computed in f32.
template <class T>
concept narrow_floating = is_floating_v<T> && sizeof(T) < 4;

namespace detail::numeric {

template <class T> struct format_of;
template <> struct format_of<f16> { static constexpr float_format value = binary16_format; using bits = std::uint16_t; };
template <> struct format_of<bf16> { static constexpr float_format value = bfloat16_format; using bits = std::uint16_t; };
template <> struct format_of<f8e4m3> { static constexpr float_format value = e4m3_format; using bits = std::uint8_t; };
template <> struct format_of<f8e5m2> { static constexpr float_format value = e5m2_format; using bits = std::uint8_t; };
template <> struct format_of<f32> { static constexpr float_format value = binary32_format; using bits = std::uint32_t; };
template <> struct format_of<f64> { static constexpr float_format value = binary64_format; using bits = std::uint64_t; };

template <class T>
TENET_HD constexpr std::uint64_t to_bits(T x)
{
    return bit_cast<typename format_of<T>::bits>(x);
}

template <class T>
TENET_HD constexpr T from_bits(std::uint64_t bits)
{
    return bit_cast<T>(static_cast<typename format_of<T>::bits>(bits));
}

}  // namespace detail::numeric

// The element type's short name (diagnostics, checkpoint signatures).
template <class T> inline constexpr const char* element_name = "?";
template <> inline constexpr const char* element_name<f32> = "f32";
template <> inline constexpr const char* element_name<f64> = "f64";
template <> inline constexpr const char* element_name<f16> = "f16";
template <> inline constexpr const char* element_name<bf16> = "bf16";
template <> inline constexpr const char* element_name<f8e4m3> = "f8e4m3";
template <> inline constexpr const char* element_name<f8e5m2> = "f8e5m2";
template <> inline constexpr const char* element_name<i8> = "i8";
template <> inline constexpr const char* element_name<i32> = "i32";
template <> inline constexpr const char* element_name<bool> = "bool";

template <class T>
struct numeric_traits {
    static_assert(element<T>,
                  "tenet: numeric_traits<T>: T is not a tenet element type "
                  "(f32, f64, f16, bf16, f8e4m3, f8e5m2, i8, i32, bool)");
};

// Floating types: every limit is read off the format's bits, so f16 and fp8
// get exactly the values their encodings define.
template <class T>
    requires is_floating_v<T>
struct numeric_traits<T> {
    static constexpr detail::numeric::float_format format = detail::numeric::format_of<T>::value;
    static constexpr const char* name = element_name<T>;
    static constexpr int bits = format.total_bits();
    static constexpr bool is_floating = true;
    static constexpr bool is_signed = true;
    static constexpr bool has_infinity = format.has_infinity;
    // As std::numeric_limits: significand bits with the implicit one, and
    // the largest e with 2^(e-1) finite.
    static constexpr int digits = format.mantissa_bits + 1;
    static constexpr int max_exponent =
        static_cast<int>(format.max_finite_bits() >> format.mantissa_bits) - format.bias() + 1;

    TENET_HD static constexpr T max() { return detail::numeric::from_bits<T>(format.max_finite_bits()); }
    TENET_HD static constexpr T lowest() { return detail::numeric::from_bits<T>(format.sign_mask() | format.max_finite_bits()); }
    TENET_HD static constexpr T epsilon()
    {
        return detail::numeric::from_bits<T>(static_cast<std::uint64_t>(format.bias() - format.mantissa_bits) << format.mantissa_bits);
    }
    TENET_HD static constexpr T min_normal() { return detail::numeric::from_bits<T>(std::uint64_t{1} << format.mantissa_bits); }
    TENET_HD static constexpr T denorm_min() { return detail::numeric::from_bits<T>(1); }
    TENET_HD static constexpr T quiet_nan() { return detail::numeric::from_bits<T>(format.canonical_nan_bits()); }
    TENET_HD static constexpr T infinity()
        requires(format.has_infinity)
    {
        return detail::numeric::from_bits<T>(format.infinity_bits());
    }
};

template <class T>
    requires is_integer_v<T>
struct numeric_traits<T> {
    static constexpr const char* name = element_name<T>;
    static constexpr int bits = 8 * sizeof(T);
    static constexpr bool is_floating = false;
    static constexpr bool is_signed = true;
    static constexpr bool has_infinity = false;
    static constexpr int digits = bits - 1;
    static constexpr int max_exponent = 0;

    TENET_HD static constexpr T max() { return static_cast<T>((std::uint64_t{1} << digits) - 1); }
    TENET_HD static constexpr T lowest() { return static_cast<T>(-max() - 1); }
    TENET_HD static constexpr T epsilon() { return T{0}; }
};

}  // namespace tenet

namespace tenet {

template <>
struct numeric_traits<bool> {
    static constexpr const char* name = "bool";
    static constexpr int bits = 8;
    static constexpr bool is_floating = false;
    static constexpr bool is_signed = false;
    static constexpr bool has_infinity = false;
    static constexpr int digits = 1;
    static constexpr int max_exponent = 0;

    TENET_HD static constexpr bool max() { return true; }
    TENET_HD static constexpr bool lowest() { return false; }
    TENET_HD static constexpr bool epsilon() { return false; }
};

}  // namespace tenet
