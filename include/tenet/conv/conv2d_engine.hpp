// The engine that runs one static convolution (nn::conv2d_layer holds one):
//   conv2d_engine<G, Groups, OutChannels, Act, Bias, T, Grad, Place>
//     forward(y, x, w, b)                 y = act(conv(x, w) + b)
//     backward(dz, x, w, dw, db, dx)      dw, db for the x of the last
//                                         forward, and dx (no_input_gradient:
//                                         not wanted)
//     kept_bytes                          what it keeps from the forward
// (b, db: no_bias without one; y and dz are [M, Cout] matrices, x and dx
// NHWC.) On the host in f32, with oneDNN built in (TENET_WITH_ONEDNN), it is
// oneDNN's plan (onednn_conv2d.hpp), chosen by bench_host_conv; everywhere
// else (the device, 16-bit and f64 storage, a build without oneDNN) it is
// the im2col + GEMM lowering of conv2d.hpp, which owns its column buffer.
#pragma once

#include "conv2d.hpp"

#if defined(TENET_WITH_ONEDNN)
#include "onednn_conv2d.hpp"
#endif

#include <type_traits>

namespace tenet::conv {

// Passed for dx when the caller wants no input gradient.
struct no_input_gradient {};

template <class G, std::size_t Groups, std::size_t OutChannels, linalg::activation Act, class T, class Place>
class gemm_conv2d {
    static constexpr bool keeps_columns = !reads_input_as_columns<G, Groups>;
    using columns_tensor = Tensor<T, columns_shape<G, Groups>, Place>;
    struct none {};

public:
    // the im2col columns, kept from the forward for the weight gradient
    static constexpr std::size_t kept_bytes = keeps_columns ? columns_tensor::bytes : 0;

    template <class Y, class X, class W, class B>
    void forward(const Y& y, const X& x, const W& w, const B& b)
    {
        conv2d_forward<G, Groups, Act>(y, columns(), x, w, b);
    }

    template <class DZ, class X, class W, class DW, class DB, class DX>
    void backward(const DZ& dz, const X& x, const W& w, const DW& dw, const DB& db, const DX& dx)
    {
        conv2d_backward_weights<G, Groups>(dw, db, dz, columns(), x);
        if constexpr (!std::is_same_v<DX, no_input_gradient>) conv2d_backward_input<G, Groups>(dx, columns(), dz, w);
    }

private:
    auto columns()
    {
        if constexpr (keeps_columns) return columns_.view();
        else return none{};
    }

    std::conditional_t<keeps_columns, columns_tensor, none> columns_;
};

#if defined(TENET_WITH_ONEDNN)

template <class G, std::size_t Groups, std::size_t OutChannels, linalg::activation Act, bool Bias>
class onednn_engine {
public:
    // (the plan's buffers are workspace, allocated at construction: workspace_bytes())
    static constexpr std::size_t kept_bytes = 0;

    template <class Y, class X, class W, class B>
    void forward(const Y& y, const X& x, const W& w, const B& b)
    {
        detail::require_separate(y, x);
        plan_.forward(x.data(), w.data(), bias_data(b), y.data());
    }

    template <class DZ, class X, class W, class DW, class DB, class DX>
    void backward(const DZ& dz, const X& x, const W& w, const DW& dw, const DB& db, const DX& dx)
    {
        float* dx_data = nullptr;
        if constexpr (!std::is_same_v<DX, no_input_gradient>) {
            detail::require_separate(dx, dz);
            dx_data = dx.data();
        }
        plan_.backward(dz.data(), x.data(), w.data(), dw.data(), bias_data(db), dx_data);
    }

    std::size_t workspace_bytes() const { return plan_.workspace_bytes(); }

private:
    template <class B>
    static auto bias_data(const B& b)
    {
        if constexpr (std::is_same_v<B, no_bias>) return nullptr;
        else return b.data();
    }

    static conv2d_problem problem()
    {
        auto l = [](std::size_t v) { return static_cast<long>(v); };
        return {l(G::batch),      l(G::height), l(G::width),  l(G::channels), l(G::out_height), l(G::out_width),
                l(OutChannels),   l(G::kernel), l(G::stride), l(G::padding),  l(G::dilation),   l(Groups),
                Bias,             Act == linalg::activation::relu};
    }

    onednn_conv2d plan_{problem()};
};

template <class T, class Grad, class Place>
inline constexpr bool runs_on_onednn = std::is_same_v<T, f32> && std::is_same_v<Grad, f32> && host_accessible_v<Place>;

#else

template <class T, class Grad, class Place>
inline constexpr bool runs_on_onednn = false;

#endif

namespace detail {

template <bool OneDNN, class G, std::size_t Groups, std::size_t OutChannels, linalg::activation Act, bool Bias,
          class T, class Place>
struct engine_for {
    using type = gemm_conv2d<G, Groups, OutChannels, Act, T, Place>;
};
#if defined(TENET_WITH_ONEDNN)
template <class G, std::size_t Groups, std::size_t OutChannels, linalg::activation Act, bool Bias, class T, class Place>
struct engine_for<true, G, Groups, OutChannels, Act, Bias, T, Place> {
    using type = onednn_engine<G, Groups, OutChannels, Act, Bias>;
};
#endif

}  // namespace detail

template <class G, std::size_t Groups, std::size_t OutChannels, linalg::activation Act, bool Bias, class T, class Grad,
          class Place>
using conv2d_engine =
    typename detail::engine_for<runs_on_onednn<T, Grad, Place>, G, Groups, OutChannels, Act, Bias, T, Place>::type;

}  // namespace tenet::conv
