// Device results against host references by relative error, reported so a
// failure on a borrowed GPU can be fixed offline: what was computed (the op
// or kernel), the error against the tolerance, and the first and the worst
// element (index, device value, host reference).
#pragma once

#include <doctest/doctest.h>
#include <tenet/numeric/convert.hpp>
#include <tenet/numeric/types.hpp>

#include <cmath>
#include <cstdio>
#include <string>

namespace testing {

template <class T, class U>
double relative_error(const T* got, const U* want, std::size_t n)
{
    double err = 0, norm = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const double w = tenet::convert<tenet::f64>(want[i]);
        err += std::pow(tenet::convert<tenet::f64>(got[i]) - w, 2);
        norm += w * w;
    }
    return std::sqrt(err) / (std::sqrt(norm) + 1e-30);
}

// Empty when ||got - want|| / ||want|| <= tolerance. Otherwise one line
// naming `what`, the first element further from its reference than
// tolerance x the references' root mean square (NaN included), and the worst.
template <class T, class U>
std::string relative_error_report(const char* what, const T* got, const U* want, std::size_t n, double tolerance)
{
    const double error = relative_error(got, want, n);
    if (error <= tolerance) return {};
    double square_sum = 0;
    for (std::size_t i = 0; i < n; ++i) square_sum += std::pow(tenet::convert<tenet::f64>(want[i]), 2);
    const double allowed = tolerance * std::sqrt(square_sum / static_cast<double>(n ? n : 1));
    std::size_t first = n, worst = 0;
    double worst_difference = -1;
    for (std::size_t i = 0; i < n; ++i) {
        const double difference = std::fabs(tenet::convert<tenet::f64>(got[i]) - tenet::convert<tenet::f64>(want[i]));
        if (first == n && !(difference <= allowed)) first = i;
        const bool worse = std::isnan(difference) ? !std::isnan(worst_difference) : difference > worst_difference;
        if (worse) worst = i, worst_difference = difference;  // the first NaN is the worst
    }
    const auto element = [&](std::size_t i) {
        char text[128];
        std::snprintf(text, sizeof text, "[%zu] device %.9g, host %.9g", i, tenet::convert<tenet::f64>(got[i]),
                      tenet::convert<tenet::f64>(want[i]));
        return std::string(text);
    };
    char numbers[128];
    std::snprintf(numbers, sizeof numbers, ": relative error %.3g > %.3g over %zu elements; ", error, tolerance, n);
    return what + std::string(numbers) + (first < n ? "first off " + element(first) + "; " : std::string()) + "worst " +
           element(worst);
}

}  // namespace testing

// CHECK that device values `got` are within `tolerance` of `want` by
// relative error, with relative_error_report's line when they are not.
#define CHECK_RELATIVE_ERROR(what, got, want, n, tolerance)                                                       \
    do {                                                                                                         \
        const std::string relative_error_report_ = testing::relative_error_report(what, got, want, n, tolerance); \
        CHECK_MESSAGE(relative_error_report_.empty(), relative_error_report_);                                   \
    } while (0)
