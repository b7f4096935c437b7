// Independent reference for floating-point formats, for tests only.
//
// It shares no code with tenet's numeric/ headers: a format's values are
// decoded with std::ldexp, tabulated in encoding order, and a value is rounded
// by searching that table for its two neighbours and picking the nearer (the
// even encoding on a tie). Distances are exact in double: the neighbours of x
// are within a factor of two of it (Sterbenz).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace ref {

struct format {
    int exponent_bits;
    int mantissa_bits;
    bool has_infinity;
    bool saturate;
};

inline constexpr format f16{5, 10, true, false};
inline constexpr format bf16{8, 7, true, false};
inline constexpr format e4m3{4, 3, false, true};
inline constexpr format e5m2{5, 2, true, true};

inline std::uint64_t sign_bit(format f) { return std::uint64_t{1} << (f.exponent_bits + f.mantissa_bits); }
inline std::uint64_t all_magnitude_bits(format f) { return sign_bit(f) - 1; }
inline std::uint64_t infinity_bits(format f)
{
    return ((std::uint64_t{1} << f.exponent_bits) - 1) << f.mantissa_bits;
}

inline bool is_nan(std::uint64_t bits, format f)
{
    const std::uint64_t mag = bits & all_magnitude_bits(f);
    if (f.has_infinity) return mag > infinity_bits(f);
    return mag == all_magnitude_bits(f);
}

inline double decode(std::uint64_t bits, format f)
{
    if (is_nan(bits, f)) return NAN;
    const double sign = (bits & sign_bit(f)) ? -1.0 : 1.0;
    const std::uint64_t mag = bits & all_magnitude_bits(f);
    if (f.has_infinity && mag == infinity_bits(f)) return sign * INFINITY;
    const int bias = (1 << (f.exponent_bits - 1)) - 1;
    const int field = static_cast<int>(mag >> f.mantissa_bits);
    const double fraction = static_cast<double>(mag & ((std::uint64_t{1} << f.mantissa_bits) - 1));
    if (field == 0) return sign * std::ldexp(fraction, 1 - bias - f.mantissa_bits);
    return sign * std::ldexp(fraction + std::ldexp(1.0, f.mantissa_bits), field - bias - f.mantissa_bits);
}

// All finite non-negative values of a format, indexed by their encoding.
inline std::vector<double> finite_values(format f)
{
    std::vector<double> values;
    for (std::uint64_t bits = 0;; ++bits) {
        const double v = decode(bits, f);
        if (std::isnan(v) || std::isinf(v)) break;
        values.push_back(v);
    }
    return values;
}

// Rounds x to format f: nearest, ties to even; NaN -> all magnitude bits set;
// overflow -> infinity, or the largest finite value for saturating formats.
class rounder {
public:
    explicit rounder(format f) : f_(f), values_(finite_values(f)) {}

    std::uint64_t operator()(double x) const
    {
        if (std::isnan(x)) return all_magnitude_bits(f_);
        const std::uint64_t sign = std::signbit(x) ? sign_bit(f_) : 0;
        const double a = std::fabs(x);
        const std::uint64_t max_index = values_.size() - 1;
        // One step past the largest finite value, where infinity would sit.
        const double beyond = values_[max_index] + (values_[max_index] - values_[max_index - 1]);
        std::uint64_t index;
        if (a >= beyond) {
            index = max_index + 1;
        } else {
            const auto hi = std::lower_bound(values_.begin(), values_.end(), a);
            const std::uint64_t hi_index = static_cast<std::uint64_t>(hi - values_.begin());
            const double hi_value = hi == values_.end() ? beyond : *hi;
            if (hi_value == a) {
                index = hi_index;
            } else {
                const std::uint64_t lo_index = hi_index - 1;
                const double below = a - values_[lo_index], above = hi_value - a;
                if (below < above) index = lo_index;
                else if (above < below) index = hi_index;
                else index = (lo_index % 2 == 0) ? lo_index : hi_index;
            }
        }
        if (index > max_index) index = (f_.saturate || !f_.has_infinity) ? max_index : infinity_bits(f_);
        return sign | index;
    }

    const std::vector<double>& values() const { return values_; }

private:
    format f_;
    std::vector<double> values_;
};

// Floating -> integer: nearest even (the default rounding mode), saturate, NaN -> 0.
template <class I>
I round_to_integer(double x, double lo, double hi)
{
    if (std::isnan(x)) return 0;
    const double r = std::nearbyint(x);
    return static_cast<I>(std::clamp(r, lo, hi));
}

}  // namespace ref
