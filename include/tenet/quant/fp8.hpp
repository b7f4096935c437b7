// fp8 training with delayed per-tensor scaling, as NVIDIA's Transformer
// Engine does it: a tensor x is cast as fp8(x * scale) and read back as
// fp8 * (1 / scale), so that x's largest magnitude lands near the format's
// largest finite value.
//
//   scale = fp8_max / amax / 2^margin, amax the largest |x| over the last
//   History steps (a ring); the old scale is kept when amax is 0 or not
//   finite, and a scale that would overflow (tiny amax) is FLT_MAX.
//
// "Delayed": the scale a step casts with comes from the steps before it, so
// the cast needs no reduction over x first; the step's own amax is recorded
// for the next steps (record(), then update()). All state lives in the
// tensor's place and is updated by small kernels that never read back to
// the host, so a training step stays graph-capturable.
//
// fp8_training<Base> is a precision policy: Base's storage, master weights
// and loss scaling, with every Linear an fp8_linear_layer (fp8_linear.hpp,
// which includes this header: include that one to build models).
#pragma once

#include "../config.hpp"
#include "../expr/random.hpp"
#include "../linalg/activation_kind.hpp"
#include "../memory/error.hpp"
#include "../numeric/precision.hpp"
#include "../reduce/reduce.hpp"

#include <cstddef>
#include <string>
#include <type_traits>

namespace tenet::quant {

// The largest finite value of an fp8 format.
template <class Format>
inline constexpr float fp8_max = [] {
    static_assert(std::is_same_v<Format, f8e4m3> || std::is_same_v<Format, f8e5m2>,
                  "tenet: fp8_max<Format>: Format must be f8e4m3 or f8e5m2");
    return std::is_same_v<Format, f8e4m3> ? 448.0f : 57344.0f;
}();

// Transformer Engine's scale update (margin >= 0).
TENET_HD constexpr float delayed_scale(float amax, float old_scale, float fp8_max, int margin)
{
    const float float_max = numeric_traits<f32>::max();
    if (!(amax > 0.0f && amax <= float_max)) return old_scale;  // 0, inf, NaN
    float scale = fp8_max / amax;
    for (int i = 0; i < margin; ++i) scale *= 0.5f;  // exact: powers of two
    return scale <= float_max ? scale : float_max;
}

namespace detail {

// delayed_scale over (amax, old scale) tensors.
struct delayed_scale_op {
    float fp8_max;
    int margin;
    static constexpr auto name() { return fixed_string("delayed_scale"); }
    TENET_HD constexpr f32 operator()(f32 amax, f32 old_scale) const
    {
        return delayed_scale(amax, old_scale, fp8_max, margin);
    }
};

}  // namespace detail

// One tensor's scaling state: the amax history (a ring of History steps,
// zeros at first), where the next amax goes, and the scale (1 at first) with
// its inverse. scale() and scale_inverse() are rank-0 tensors meant to be
// used inside expressions (fp8(x * scale), y * scale_inverse).
template <class Format, std::size_t History, class Place>
class delayed_scaling {
    static_assert(History >= 1, "tenet: delayed_scaling: the amax history needs at least one step");

public:
    using format = Format;
    static constexpr std::size_t history_length = History;
    static constexpr std::size_t bytes = (History + 2) * sizeof(f32) + sizeof(i32);

    explicit delayed_scaling(int margin = 0) : margin_(margin)
    {
        if (margin < 0)
            throw error("tenet: delayed_scaling: the margin (" + std::to_string(margin) +
                        ") counts powers of two of headroom and cannot be negative");
        history_ = 0.0f;
        position_ = 0;
        scale_ = 1.0f;
        scale_inverse_ = 1.0f;
    }

    // This step's amax (a rank-0 expression such as max(abs(x)), or a
    // number) overwrites the oldest entry of the history.
    template <class A>
    void record(const A& amax)
    {
        history_ = where(iota<Shape<History>>(0, 1) == position_, amax, history_);
    }

    // The scale for the next step, from the history (this step's amax
    // included); then the ring moves on.
    void update()
    {
        scale_ = tenet::internal::make_map(detail::delayed_scale_op{fp8_max<Format>, margin_}, tenet::max(history_), scale_);
        scale_inverse_ = 1.0f / scale_;
        position_ = where(position_ + 1 < static_cast<i32>(History), position_ + 1, 0);
    }

    const Tensor<f32, Shape<>, Place>& scale() const { return scale_; }
    const Tensor<f32, Shape<>, Place>& scale_inverse() const { return scale_inverse_; }
    const Tensor<f32, Shape<History>, Place>& history() const { return history_; }
    int margin() const { return margin_; }

private:
    int margin_;
    Tensor<f32, Shape<History>, Place> history_;
    Tensor<i32, Shape<>, Place> position_;
    Tensor<f32, Shape<>, Place> scale_;
    Tensor<f32, Shape<>, Place> scale_inverse_;
};

template <class P, class S, class Place, std::size_t In, std::size_t Out, linalg::activation Act>
class fp8_linear_layer;

// A training policy Base whose Linear layers run their GEMMs on fp8 values:
// x and W as e4m3, the gradient as e5m2, each with its own delayed scale.
template <training_policy Base, std::size_t History = 16, int Margin = 0>
struct fp8_training : Base {
    static_assert(History >= 1, "tenet: fp8_training: the amax history needs at least one step");
    static_assert(Margin >= 0, "tenet: fp8_training: the margin counts powers of two of headroom (>= 0)");
    using fp8_forward = f8e4m3;
    using fp8_backward = f8e5m2;
    static constexpr std::size_t amax_history = History;
    static constexpr int margin = Margin;
    template <class P, class S, class Place, std::size_t In, std::size_t Out, linalg::activation Act>
    using linear_layer = fp8_linear_layer<P, S, Place, In, Out, Act>;
};

using fp8_mixed = fp8_training<bf16_mixed>;

}  // namespace tenet::quant
