// Affine int8 quantization parameters: real = (q - zero_point) * scale.
//
// choose_affine(min, max, scheme) is PyTorch's _calculate_qparams for qint8,
// so that models quantized here and there agree:
//   - the range is first widened to contain 0 (zero is always representable:
//     ReLU outputs and padding quantize exactly);
//   - symmetric: scale = max(-min, max) / ((qmax - qmin) / 2), zero point 0;
//   - asymmetric: scale = (max - min) / (qmax - qmin), zero point =
//     qmin - round(min / scale) (nearest even), clamped to [qmin, qmax];
//   - scale is clamped to at least eps (torch.finfo(float32).eps by default),
//     so an all-zero tensor still has a usable scale.
// narrow_range uses -127..127 (symmetric weights then have no lone -128 and
// negate exactly).
//
// The functors scale_from_range / zero_point_from_range apply the same rules
// per element of device tensors of minima and maxima (per-channel weights in
// quantization-aware training), with no trip to the host.
#pragma once

#include "../config.hpp"
#include "../diagnostic.hpp"
#include "../numeric/convert.hpp"

#include <cstdint>

namespace tenet::quant {

inline constexpr float default_eps = 1.1920928955078125e-07f;  // torch.finfo(torch.float32).eps

// How a tensor maps onto int8.
struct scheme {
    bool symmetric = false;
    bool narrow_range = false;  // -127..127 instead of -128..127
    float eps = default_eps;

    TENET_HD constexpr std::int32_t qmin() const { return narrow_range ? -127 : -128; }
    TENET_HD constexpr std::int32_t qmax() const { return 127; }
};

// Activations: asymmetric over the full range (PyTorch's quint8 activations,
// shifted to int8). Weights: symmetric, narrow range, zero point 0 (what an
// int8 GEMM wants: no weight zero-point correction).
inline constexpr scheme activation_scheme{false, false};
inline constexpr scheme weight_scheme{true, true};

struct affine {
    float scale;
    std::int32_t zero_point;
};

TENET_HD constexpr affine choose_affine(float min, float max, scheme s)
{
    const float lo = min < 0.0f ? min : 0.0f;
    const float hi = max > 0.0f ? max : 0.0f;
    const float qmin = static_cast<float>(s.qmin()), qmax = static_cast<float>(s.qmax());
    if (s.symmetric) {
        const float bound = -lo > hi ? -lo : hi;
        const float scale = bound / ((qmax - qmin) / 2.0f);
        return {scale > s.eps ? scale : s.eps, 0};
    }
    float scale = (hi - lo) / (qmax - qmin);
    scale = scale > s.eps ? scale : s.eps;
    const std::int32_t zero = s.qmin() - convert<i32>(lo / scale);
    return {scale, zero < s.qmin() ? s.qmin() : (zero > s.qmax() ? s.qmax() : zero)};
}

// Elementwise forms of choose_affine, for expressions over (min, max) tensors.
struct scale_from_range {
    scheme s;
    static constexpr auto name() { return fixed_string("scale_from_range"); }
    TENET_HD constexpr f32 operator()(f32 min, f32 max) const { return choose_affine(min, max, s).scale; }
};
struct zero_point_from_range {
    scheme s;
    static constexpr auto name() { return fixed_string("zero_point_from_range"); }
    TENET_HD constexpr i32 operator()(f32 min, f32 max) const { return choose_affine(min, max, s).zero_point; }
};

}  // namespace tenet::quant
