// The engine that runs one static convolution (nn::conv2d_layer holds one):
//   conv2d_engine<G, Groups, OutChannels, Act, Bias, T, Grad, Place>
//     forward(y, x, w, b)                 y = act(conv(x, w) + b)
//     backward(dz, x, w, dw, db, dx)      dw, db for the x of the last
//                                         forward (dw null: neither, the
//                                         layer is inside nn::Frozen), and dx
//                                         (no_input_gradient: not wanted)
//     kept_bytes                          what it keeps from the forward
// (b, db: no_bias without one; y and dz are [M, Cout] matrices, x and dx
// NHWC.) On the host in f32, bf16_mixed and fp16_mixed (16-bit storage, f32
// gradients), with oneDNN built in (TENET_WITH_ONEDNN), it is oneDNN's plan
// (onednn_conv2d.hpp), chosen by bench_host_conv; on the device in f32,
// with cuDNN (TENET_WITH_CUDNN), cuDNN's plan (cudnn_conv2d.hpp);
// everywhere else (16-bit mixed policies on the device, pure f16 and bf16
// and f64 storage on the host, builds without either library) the
// im2col + GEMM lowering of conv2d.hpp, which owns its column buffer.
#pragma once

#include "conv2d.hpp"

#if defined(TENET_WITH_ONEDNN)
#include "onednn_conv2d.hpp"
#endif
#include "cudnn_conv2d.hpp"

#include <cstdio>
#include <memory>
#include <type_traits>
#include <vector>

namespace tenet::conv {

// Passed for dx when the caller wants no input gradient.
struct no_input_gradient {};

template <class G, std::size_t Groups, std::size_t OutChannels, linalg::activation Act, class T, class Place>
class gemm_conv2d {
#if defined(TENET_WITH_CUDNN) && !TENET_CUDA_COMPILER
    // CUDA translation units run f32 device convolutions on cuDNN: a host
    // compiler's unit must not build the same layer type differently.
    static_assert(host_accessible_v<Place>,
                  "tenet: a device convolution layer must be compiled as CUDA (nvcc): that is where it runs on cuDNN");
#endif
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
        if (dw.data() != nullptr) conv2d_backward_weights<G, Groups>(dw, db, dz, columns(), x);
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

namespace detail {

template <class T>
inline constexpr dnnl_data_type_t onednn_type = std::is_same_v<T, bf16> ? dnnl_bf16 : dnnl_f32;

// Said once per process: bf16 convolutions on a CPU oneDNN has no bf16 kernel for.
inline void note_bf16_convolutions_lowered()
{
    static const bool said = [] {
        std::fprintf(stderr, "tenet: note: oneDNN has no bf16 convolution for this CPU (it needs AVX-512); bf16 "
                             "convolutions take the im2col + GEMM lowering, slower than f32 on oneDNN\n");
        return true;
    }();
    (void)said;
}

}  // namespace detail

// oneDNN's plan as an engine, in T = f32, bf16 or f16 (a mixed policy: f32
// weight and bias gradients). Where oneDNN has no bf16 kernel for the CPU
// (AVX2), a bf16 engine runs the lowering instead, decided at construction
// and said once on stderr. f16 runs the f32 plan on f32 copies of its
// operands (oneDNN 2.6 has f16 convolutions only for AVX512_FP16): a
// conversion pass over each is cheaper than the lowering (bench/RESULTS.md).
template <class G, std::size_t Groups, std::size_t OutChannels, linalg::activation Act, bool Bias, class T, class Place>
class onednn_engine {
    static_assert(std::is_same_v<T, f32> || std::is_same_v<T, bf16> || std::is_same_v<T, f16>,
                  "tenet: internal: oneDNN plans f32, bf16 and f16 (through f32)");
    using lowering = gemm_conv2d<G, Groups, OutChannels, Act, T, Place>;
    template <class V>
    using element_of = std::remove_cvref_t<decltype(*std::declval<const V&>().data())>;
    using planned = std::conditional_t<std::is_same_v<T, f16>, f32, T>;
    static constexpr bool converts = !std::is_same_v<T, planned>;
    static constexpr std::size_t inputs = G::batch * G::height * G::width * G::channels,
                                 outputs = G::batch * G::out_height * G::out_width * OutChannels,
                                 weights = OutChannels * G::kernel * G::kernel * (G::channels / Groups);

    // The f32 copies an f16 engine hands the plan (the output's doubles as
    // the output gradient's).
    struct f32_copies {
        std::vector<f32> x = std::vector<f32>(inputs), w = std::vector<f32>(weights), b = std::vector<f32>(OutChannels),
                         y = std::vector<f32>(outputs), dx = std::vector<f32>(inputs);
        std::size_t bytes() const { return sizeof(f32) * (x.size() + w.size() + b.size() + y.size() + dx.size()); }
    };
    struct none {
        static constexpr std::size_t bytes() { return 0; }
    };

public:
    // (the plan's buffers, or the lowering's columns, are workspace allocated at construction: workspace_bytes())
    static constexpr std::size_t kept_bytes = 0;

    onednn_engine()
    {
        const conv2d_problem p = problem_of<G, Groups, OutChannels, Bias, Act == linalg::activation::relu>();
        try {
            plan_ = std::make_unique<onednn_conv2d>(p, detail::onednn_type<planned>);
        } catch (const onednn_error& e) {
            if (!std::is_same_v<T, bf16> || e.status() != dnnl_unimplemented) throw;
            detail::note_bf16_convolutions_lowered();
            lowering_ = std::make_unique<lowering>();
        }
    }

    template <class Y, class X, class W, class B>
    void forward(const Y& y, const X& x, const W& w, const B& b)
    {
        if (lowering_) return lowering_->forward(y, x, w, b);
        detail::require_separate(y, x);
        if constexpr (converts) {
            const TensorView<f32, typename Y::layout, Host> y32(copies_.y.data());
            const auto x32 = converted(copies_.x, x);
            const auto w32 = converted(copies_.w, w);
            if constexpr (!std::is_same_v<B, no_bias>) converted(copies_.b, b);
            plan_->forward(x32.data(), w32.data(), std::is_same_v<B, no_bias> ? nullptr : copies_.b.data(), y32.data());
            assign(y, cast<T>(y32));
        } else {
            plan_->forward(x.data(), w.data(), bias_data(b), y.data());
        }
    }

    template <class DZ, class X, class W, class DW, class DB, class DX>
    void backward(const DZ& dz, const X& x, const W& w, const DW& dw, const DB& db, const DX& dx)
    {
        static_assert(std::is_same_v<element_of<DZ>, T> && std::is_same_v<element_of<DW>, f32>,
                      "tenet: internal: oneDNN's convolution takes the output gradient in the storage type and "
                      "writes f32 weight gradients");
        if (lowering_) return lowering_->backward(dz, x, w, dw, db, dx);
        void* dx_data = nullptr;
        if constexpr (!std::is_same_v<DX, no_input_gradient>) {
            static_assert(std::is_same_v<element_of<DX>, T>,
                          "tenet: internal: oneDNN's convolution writes the input gradient in the storage type");
            detail::require_separate(dx, dz);
            if constexpr (converts) dx_data = copies_.dx.data();
            else dx_data = dx.data();
        }
        if constexpr (converts) {
            // x and w: the forward's copies (the x and w of the last forward)
            const auto dz32 = converted(copies_.y, dz);
            plan_->backward(dz32.data(), copies_.x.data(), copies_.w.data(), dw.data(), bias_data(db), dx_data);
            if constexpr (!std::is_same_v<DX, no_input_gradient>)
                assign(dx, cast<T>(TensorView<const f32, typename DX::layout, Host>(copies_.dx.data())));
        } else {
            plan_->backward(dz.data(), x.data(), w.data(), dw.data(), bias_data(db), dx_data);
        }
    }

    // Whether oneDNN runs it (false: the lowering, for bf16 on a CPU without oneDNN's bf16 kernels).
    bool on_onednn() const noexcept { return plan_ != nullptr; }
    std::size_t workspace_bytes() const
    {
        return plan_ ? plan_->workspace_bytes() + copies_.bytes() : lowering::kept_bytes;
    }

private:
    // v's values as f32 in copy (v: contiguous, as the plan reads it), viewed with v's layout.
    template <class V>
    static auto converted(std::vector<f32>& copy, const V& v)
    {
        const TensorView<f32, typename V::layout, Host> view(copy.data());
        assign(view, cast<f32>(v));
        return view;
    }

    template <class B>
    static auto bias_data(const B& b)
    {
        if constexpr (std::is_same_v<B, no_bias>) return nullptr;
        else return b.data();
    }

    std::unique_ptr<onednn_conv2d> plan_;
    std::unique_ptr<lowering> lowering_;
    [[no_unique_address]] std::conditional_t<converts, f32_copies, none> copies_;
};

// Host convolutions in f32, and 16-bit storage with f32 gradients
// (bf16_mixed, fp16_mixed), run on oneDNN.
template <class T, class Grad, class Place>
inline constexpr bool runs_on_onednn = (std::is_same_v<T, f32> || std::is_same_v<T, bf16> || std::is_same_v<T, f16>)&&std::
                                           is_same_v<Grad, f32> && host_accessible_v<Place>;

#else

template <class T, class Grad, class Place>
inline constexpr bool runs_on_onednn = false;

#endif

#if TENET_CUDA_COMPILER && defined(TENET_WITH_CUDNN)

// cuDNN's plan as an engine (the device, f32): the convolution itself on
// cuDNN, then the bias and activation as one fused elementwise pass, the
// bias gradient as tenet's column sum. It keeps nothing: the weight gradient
// reads the caller's x.
template <class G, std::size_t Groups, std::size_t OutChannels, linalg::activation Act, bool Bias>
class cudnn_engine {
public:
    static constexpr std::size_t kept_bytes = 0;

    template <class Y, class X, class W, class B>
    void forward(const Y& y, const X& x, const W& w, const B& b)
    {
        detail::require_separate(y, x);
        plan_.forward(x.data(), w.data(), y.data(), current_stream());
        if constexpr (Bias) assign(y, detail::activate<Act>(y + b));
        else if constexpr (Act != linalg::activation::none) assign(y, detail::activate<Act>(y));
    }

    template <class DZ, class X, class W, class DW, class DB, class DX>
    void backward(const DZ& dz, const X& x, const W& w, const DW& dw, const DB& db, const DX& dx)
    {
        if (dw.data() != nullptr) {
            plan_.backward_filter(x.data(), dz.data(), dw.data(), current_stream());
            if constexpr (Bias) assign(db, sum<0>(dz));
        }
        if constexpr (!std::is_same_v<DX, no_input_gradient>) {
            detail::require_separate(dx, dz);
            plan_.backward_data(dz.data(), w.data(), dx.data(), current_stream());
        }
    }

    std::size_t workspace_bytes() const { return plan_.workspace_bytes(); }

private:
    cudnn_conv2d plan_{problem_of<G, Groups, OutChannels, Bias, Act == linalg::activation::relu>(), CUDNN_DATA_FLOAT};
};

// f32 device convolutions run on cuDNN. A mixed policy's f32 weight
// gradient of 16-bit activations stays on the lowering (cuBLASLt), whose
// GEMM writes it in f32 and adds the bias before rounding to 16 bits.
template <class T, class Grad, class Place>
inline constexpr bool runs_on_cudnn = !host_accessible_v<Place> && std::is_same_v<T, f32> && std::is_same_v<Grad, f32>;

#else

template <class T, class Grad, class Place>
inline constexpr bool runs_on_cudnn = false;

#endif

namespace detail {

enum class conv_engine_kind { gemm, onednn, cudnn };

template <class T, class Grad, class Place>
inline constexpr conv_engine_kind engine_kind = runs_on_onednn<T, Grad, Place>  ? conv_engine_kind::onednn
                                                : runs_on_cudnn<T, Grad, Place> ? conv_engine_kind::cudnn
                                                                                : conv_engine_kind::gemm;

template <conv_engine_kind Kind, class G, std::size_t Groups, std::size_t OutChannels, linalg::activation Act, bool Bias,
          class T, class Place>
struct engine_for {
    using type = gemm_conv2d<G, Groups, OutChannels, Act, T, Place>;
};
#if defined(TENET_WITH_ONEDNN)
template <class G, std::size_t Groups, std::size_t OutChannels, linalg::activation Act, bool Bias, class T, class Place>
struct engine_for<conv_engine_kind::onednn, G, Groups, OutChannels, Act, Bias, T, Place> {
    using type = onednn_engine<G, Groups, OutChannels, Act, Bias, T, Place>;
};
#endif
#if TENET_CUDA_COMPILER && defined(TENET_WITH_CUDNN)
template <class G, std::size_t Groups, std::size_t OutChannels, linalg::activation Act, bool Bias, class T, class Place>
struct engine_for<conv_engine_kind::cudnn, G, Groups, OutChannels, Act, Bias, T, Place> {
    using type = cudnn_engine<G, Groups, OutChannels, Act, Bias>;
};
#endif

}  // namespace detail

template <class G, std::size_t Groups, std::size_t OutChannels, linalg::activation Act, bool Bias, class T, class Grad,
          class Place>
using conv2d_engine =
    typename detail::engine_for<detail::engine_kind<T, Grad, Place>, G, Groups, OutChannels, Act, Bias, T, Place>::type;

}  // namespace tenet::conv
