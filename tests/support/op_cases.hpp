// Every elementwise operation with its float64 reference and tolerance. The
// host tests and the GPU tests run the same list through their own runner:
//   run.unary(name, make_expression, reference, tolerance, scale)
//   run.binary(name, make_expression, reference, tolerance, scale)
// scale(x[, y]) is the magnitude of the operation's intermediates, for
// results that cancel (absolute tolerance).
#pragma once

#include "tensor_testing.hpp"

#include <cmath>

namespace testing {

inline double unit_scale(double) { return 1.0; }
inline double magnitude(double x) { return std::fabs(x); }
inline double unit_scale2(double, double) { return 1.0; }

inline double ref_sign(double x) { return x > 0 ? 1.0 : (x < 0 ? -1.0 : x); }
inline double ref_relu(double x) { return x < 0 ? 0.0 : x; }
inline double ref_min(double a, double b) { return std::isnan(a) ? a : (std::isnan(b) ? b : (b < a ? b : a)); }
inline double ref_max(double a, double b) { return std::isnan(a) ? a : (std::isnan(b) ? b : (b > a ? b : a)); }
inline double ref_sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
inline double ref_gelu(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
inline double ref_gelu_tanh(double x)
{
    return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}
inline double ref_softplus(double x) { return std::fmax(x, 0.0) + std::log1p(std::exp(-std::fabs(x))); }

template <class Run>
void unary_cases(Run& run)
{
    using namespace tenet;
    run.unary("negate", [](const auto& x) { return -x; }, [](double v) { return -v; }, tolerance{0.5}, unit_scale);
    run.unary("abs", [](const auto& x) { return abs(x); }, [](double v) { return std::fabs(v); }, tolerance{0.5}, unit_scale);
    run.unary("sign", [](const auto& x) { return sign(x); }, ref_sign, tolerance{0}, unit_scale);
    run.unary("square", [](const auto& x) { return square(x); }, [](double v) { return v * v; }, tolerance{0.5}, unit_scale);
    run.unary("reciprocal", [](const auto& x) { return reciprocal(x); }, [](double v) { return 1.0 / v; }, tolerance{0.5}, unit_scale);
    run.unary("exp", [](const auto& x) { return exp(x); }, [](double v) { return std::exp(v); }, tolerance{3}, unit_scale);
    run.unary("exp2", [](const auto& x) { return exp2(x); }, [](double v) { return std::exp2(v); }, tolerance{3}, unit_scale);
    run.unary("expm1", [](const auto& x) { return expm1(x); }, [](double v) { return std::expm1(v); }, tolerance{3}, unit_scale);
    run.unary("log", [](const auto& x) { return log(x); }, [](double v) { return std::log(v); }, tolerance{3}, unit_scale);
    run.unary("log2", [](const auto& x) { return log2(x); }, [](double v) { return std::log2(v); }, tolerance{3}, unit_scale);
    run.unary("log1p", [](const auto& x) { return log1p(x); }, [](double v) { return std::log1p(v); }, tolerance{3}, unit_scale);
    run.unary("sqrt", [](const auto& x) { return sqrt(x); }, [](double v) { return std::sqrt(v); }, tolerance{0.5}, unit_scale);
    run.unary("rsqrt", [](const auto& x) { return rsqrt(x); }, [](double v) { return 1.0 / std::sqrt(v); }, tolerance{3}, unit_scale);
    run.unary("sin", [](const auto& x) { return sin(x); }, [](double v) { return std::sin(v); }, tolerance{3, 3}, unit_scale);
    run.unary("cos", [](const auto& x) { return cos(x); }, [](double v) { return std::cos(v); }, tolerance{3, 3}, unit_scale);
    run.unary("tanh", [](const auto& x) { return tanh(x); }, [](double v) { return std::tanh(v); }, tolerance{3}, unit_scale);
    run.unary("sigmoid", [](const auto& x) { return sigmoid(x); }, ref_sigmoid, tolerance{4}, unit_scale);
    run.unary("relu", [](const auto& x) { return relu(x); }, ref_relu, tolerance{0}, unit_scale);
    run.unary("leaky_relu", [](const auto& x) { return leaky_relu(x, 0.125f); },
              [](double v) { return v > 0 ? v : 0.125 * v; }, tolerance{0.5}, unit_scale);
    run.unary("elu", [](const auto& x) { return elu(x, 0.75f); },
              [](double v) { return v > 0 ? v : 0.75 * std::expm1(v); }, tolerance{3}, unit_scale);
    run.unary("silu", [](const auto& x) { return silu(x); }, [](double v) { return v / (1.0 + std::exp(-v)); },
              tolerance{4}, unit_scale);
    run.unary("gelu", [](const auto& x) { return gelu(x); }, ref_gelu, tolerance{4, 4}, magnitude);
    run.unary("gelu_tanh", [](const auto& x) { return gelu_tanh(x); }, ref_gelu_tanh, tolerance{6, 8},
              [](double v) { return std::fabs(v) * (1.0 + 0.04 * v * v); });
    run.unary("softplus", [](const auto& x) { return softplus(x); }, ref_softplus, tolerance{3, 2}, unit_scale);
    run.unary("clamp", [](const auto& x) { return clamp(x, -1.5, 2.25); },
              [](double v) { return ref_min(ref_max(v, -1.5), 2.25); }, tolerance{0}, unit_scale);
    run.unary("scalar-chain", [](const auto& x) { return (2.5f - x) * 3 + x / 4.0; },
              [](double v) { return (2.5 - v) * 3 + v / 4.0; }, tolerance{2, 4}, [](double v) { return 3 * std::fabs(v) + 8; });
    run.unary("cast-bf16", [](const auto& x) { return cast<bf16>(x) * 1.0f; },
              [](double v) { return convert<f64>(convert<bf16>(v)); }, tolerance{0}, unit_scale);
}

template <class Run>
void binary_cases(Run& run)
{
    using namespace tenet;
    run.binary("plus", [](const auto& a, const auto& b) { return a + b; }, [](double x, double y) { return x + y; },
               tolerance{0.5}, unit_scale2);
    run.binary("minus", [](const auto& a, const auto& b) { return a - b; }, [](double x, double y) { return x - y; },
               tolerance{0.5}, unit_scale2);
    run.binary("multiplies", [](const auto& a, const auto& b) { return a * b; },
               [](double x, double y) { return x * y; }, tolerance{0.5}, unit_scale2);
    run.binary("divides", [](const auto& a, const auto& b) { return a / b; }, [](double x, double y) { return x / y; },
               tolerance{0.5}, unit_scale2);
    // exact in f32 (the remainder is representable): only the store rounds
    run.binary("fmod", [](const auto& a, const auto& b) { return fmod(a, b); },
               [](double x, double y) { return std::fmod(x, y); }, tolerance{0}, unit_scale2);
    run.binary("operator%", [](const auto& a, const auto& b) { return (a * 8.0f) % b; },
               [](double x, double y) { return std::fmod(static_cast<double>(static_cast<float>(x * 8)), y); },
               tolerance{0}, unit_scale2);  // x * 8 in the f32 compute type (it may overflow there)
    run.binary("min", [](const auto& a, const auto& b) { return min(a, b); }, ref_min, tolerance{0}, unit_scale2);
    run.binary("max", [](const auto& a, const auto& b) { return max(a, b); }, ref_max, tolerance{0}, unit_scale2);
    run.binary("pow", [](const auto& a, const auto& b) { return pow(abs(a), b * 0.125f); },
               [](double x, double y) { return std::pow(std::fabs(x), y * 0.125); }, tolerance{8}, unit_scale2);
    // a * b may overflow in f32 and then give infinity -- unless the compiler
    // fuses it into an FMA (the GPU does): no claim for those inputs.
    run.binary("fma-like", [](const auto& a, const auto& b) { return a * b + a; },
               [](double x, double y) { return x * y + x; }, tolerance{2, 2},
               [](double x, double y) {
                   return std::fabs(x * y) > 0x1.fffffep127 ? INFINITY : std::fabs(x * y) + std::fabs(x);
               });
    run.binary("where", [](const auto& a, const auto& b) { return where(a > b, a - b, b * 0.5f); },
               [](double x, double y) { return x > y ? x - y : y * 0.5; }, tolerance{0.5}, unit_scale2);
}

}  // namespace testing
