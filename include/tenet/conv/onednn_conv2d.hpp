// The host convolution on oneDNN (Debian's libdnnl-dev, the engine PyTorch's
// CPU path uses), in f32 or bf16 (bf16 input, weights, bias, output and
// activation gradients, f32 weight and bias gradients: a mixed policy's
// types; oneDNN accumulates in f32): chosen over the im2col + GEMM lowering by
// bench_host_conv (about 2x on the Fashion-MNIST CNN's convolutions, layout
// reorders included; bench/RESULTS.md). Built when the consumer defines
// TENET_WITH_ONEDNN and links DNNL::dnnl, as tenet::tenet does where CMake
// finds oneDNN 2.x. It calls oneDNN's C API: nvcc 13 in C++20 mode stops
// with an internal error on the C++ header (dnnl.hpp), and every translation
// unit, CUDA ones included, must see the same layer types.
//
// onednn_conv2d is the plan for one convolution problem, built once: the
// primitives with the layouts they choose (format `any`: channel-blocked
// for AVX-512 and AVX2), the reorders between those layouts and tenet's
// (NHWC activations, [Cout, K, K, Cin / Groups] weights), the buffers in the
// primitives' layouts and one scratchpad shared by the three passes, all
// allocated at construction. The forward keeps its reordered input for the
// weight gradient, as the lowering keeps its columns. A fused ReLU is a
// post-op of the forward primitive.
#pragma once

#include "../linalg/onednn_handle.hpp"
#include "../memory/error.hpp"
#include "conv2d_problem.hpp"

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>

static_assert(DNNL_VERSION_MAJOR == 2, "tenet: the host convolution is written for oneDNN 2.x (Debian 12's libdnnl-dev)");

namespace tenet::conv {

// A oneDNN call failed; the message says what tenet asked of it.
class onednn_error : public error {
public:
    onednn_error(const std::string& what_tenet_did, dnnl_status_t status)
        : error("tenet: oneDNN failed to " + what_tenet_did + ": " + dnnl_status2str(status)), status_(status)
    {
    }
    dnnl_status_t status() const noexcept { return status_; }

private:
    dnnl_status_t status_;
};

namespace detail {

using internal::dnnl_attr_handle, internal::dnnl_engine_handle, internal::dnnl_memory_handle, internal::dnnl_pd_handle,
    internal::dnnl_post_ops_handle, internal::dnnl_primitive_handle, internal::dnnl_stream_handle;

}  // namespace detail

class onednn_conv2d {
    using memory_desc = dnnl_memory_desc_t;

public:
    // storage: dnnl_f32 or dnnl_bf16. A CPU without oneDNN's bf16 kernels
    // (AVX2) makes a bf16 plan an onednn_error with status dnnl_unimplemented.
    explicit onednn_conv2d(const conv2d_problem& p, dnnl_data_type_t storage = dnnl_f32)
        : problem_(p),
          running_forward_("run a convolution's forward " + named(p, storage)),
          running_backward_("run a convolution's backward " + named(p, storage))
    {
        if (storage != dnnl_f32 && storage != dnnl_bf16)
            throw onednn_error("plan a convolution " + named(p, storage) + " (tenet plans f32 and bf16)",
                               dnnl_invalid_arguments);
        const std::string what = "plan a convolution " + named(p, storage) + ": ";
        engine_.reset(create<dnnl_engine_t>(what + "engine", dnnl_engine_create, dnnl_cpu, 0));
        stream_.reset(create<dnnl_stream_t>(what + "stream", dnnl_stream_create, engine_.get(), dnnl_stream_default_flags));
        const geometry g(p, storage);
        dnnl_convolution_desc_t forward{}, data{}, weights{};
        const memory_desc bias = bias_desc(p, storage), dbias = bias_desc(p, dnnl_f32);
        check(what + "forward descriptor",
              dnnl_dilated_convolution_forward_desc_init(&forward, dnnl_forward_training, dnnl_convolution_direct,
                                                         &g.any_input, &g.any_weights, p.bias ? &bias : nullptr,
                                                         &g.any_output, g.strides, g.dilation, g.padding_l, g.padding_r));
        check(what + "backward-data descriptor",
              dnnl_dilated_convolution_backward_data_desc_init(&data, dnnl_convolution_direct, &g.any_input,
                                                               &g.any_weights, &g.any_output, g.strides, g.dilation,
                                                               g.padding_l, g.padding_r));
        check(what + "backward-weights descriptor",
              dnnl_dilated_convolution_backward_weights_desc_init(&weights, dnnl_convolution_direct, &g.any_input,
                                                                  &g.any_weight_gradient, p.bias ? &dbias : nullptr,
                                                                  &g.any_output, g.strides, g.dilation, g.padding_l,
                                                                  g.padding_r));
        forward_pd_ = primitive_desc(what + "forward", &forward, p.relu, nullptr);
        data_pd_ = primitive_desc(what + "backward data", &data, false, forward_pd_.get());
        weights_pd_ = primitive_desc(what + "backward weights", &weights, false, forward_pd_.get());
        forward_ = primitive(what + "forward", forward_pd_.get());
        backward_data_ = primitive(what + "backward data", data_pd_.get());
        backward_weights_ = primitive(what + "backward weights", weights_pd_.get());

        const memory_desc input = input_desc(p, storage), output = output_desc(p, storage),
                          weight = weight_desc(p, storage);
        x_ = stage(what, input, query(forward_pd_, dnnl_query_src_md));
        w_ = stage(what, weight, query(forward_pd_, dnnl_query_weights_md));
        y_ = stage(what, output, query(forward_pd_, dnnl_query_dst_md));
        bias_ = stage(what, bias, bias);
        x_weights_ = stage(what, input, query(weights_pd_, dnnl_query_src_md));
        dz_weights_ = stage(what, output, query(weights_pd_, dnnl_query_diff_dst_md));
        dw_ = stage(what, weight_desc(p, dnnl_f32), query(weights_pd_, dnnl_query_diff_weights_md));
        dbias_ = stage(what, dbias, dbias);
        dz_data_ = stage(what, output, query(data_pd_, dnnl_query_diff_dst_md));
        w_data_ = stage(what, weight, query(data_pd_, dnnl_query_weights_md));
        dx_ = stage(what, input, query(data_pd_, dnnl_query_diff_src_md));
        memory_desc pad = query(forward_pd_, dnnl_query_scratchpad_md);
        for (const auto* pd : {&data_pd_, &weights_pd_}) {
            const memory_desc other = query(*pd, dnnl_query_scratchpad_md);
            if (dnnl_memory_desc_get_size(&other) > dnnl_memory_desc_get_size(&pad)) pad = other;
        }
        scratchpad_.reset(create<dnnl_memory_t>(what + "scratchpad", dnnl_memory_create, &pad, engine_.get(),
                                                DNNL_MEMORY_ALLOCATE));
        scratchpad_bytes_ = dnnl_memory_desc_get_size(&pad);
    }

    // y = act(conv(x, w) + b); b is null without a bias. x, w, b and y hold
    // the storage type.
    void forward(const void* x, const void* w, const void* b, void* y)
    {
        const std::string& what = running_forward_;
        dnnl_memory_t src = bind(what, x_, x), weights = bind(what, w_, w), dst = bind(what, y_, y);
        copy_in(what, x_);
        copy_in(what, w_);
        if (problem_.bias)
            execute(what, forward_, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_BIAS, bind(what, bias_, b)},
                                     {DNNL_ARG_DST, dst}, {DNNL_ARG_SCRATCHPAD, scratchpad_.get()}});
        else
            execute(what, forward_, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, dst},
                                     {DNNL_ARG_SCRATCHPAD, scratchpad_.get()}});
        copy_out(what, y_);
        wait(what);
    }

    // From the output gradient dz (already through a fused ReLU's mask): dw
    // and db (null without a bias) for the x of the last forward, and dx
    // (null: not wanted). dw and db are f32, the others the storage type.
    void backward(const void* dz, const void* x, const void* w, float* dw, float* db, void* dx)
    {
        const std::string& what = running_backward_;
        const dnnl_memory_t src = kept_input(what, x), diff_dst = stage_gradient(what, dz_weights_, dz, nullptr),
                            diff_weights = bind(what, dw_, dw);
        if (problem_.bias)
            execute(what, backward_weights_,
                    {{DNNL_ARG_SRC, src}, {DNNL_ARG_DIFF_DST, diff_dst}, {DNNL_ARG_DIFF_WEIGHTS, diff_weights},
                     {DNNL_ARG_DIFF_BIAS, bind(what, dbias_, db)}, {DNNL_ARG_SCRATCHPAD, scratchpad_.get()}});
        else
            execute(what, backward_weights_,
                    {{DNNL_ARG_SRC, src}, {DNNL_ARG_DIFF_DST, diff_dst}, {DNNL_ARG_DIFF_WEIGHTS, diff_weights},
                     {DNNL_ARG_SCRATCHPAD, scratchpad_.get()}});
        copy_out(what, dw_);
        if (dx != nullptr) {
            const dnnl_memory_t diff_dst_data = stage_gradient(what, dz_data_, dz, &dz_weights_);
            const dnnl_memory_t weights = weights_for_data(what, w), diff_src = bind(what, dx_, dx);
            execute(what, backward_data_, {{DNNL_ARG_DIFF_DST, diff_dst_data}, {DNNL_ARG_WEIGHTS, weights},
                                           {DNNL_ARG_DIFF_SRC, diff_src}, {DNNL_ARG_SCRATCHPAD, scratchpad_.get()}});
            copy_out(what, dx_);
        }
        wait(what);
    }

    // Bytes the plan holds in the primitives' layouts, scratchpad included.
    std::size_t workspace_bytes() const
    {
        std::size_t bytes = scratchpad_bytes_;
        for (const staged* s : {&x_, &w_, &y_, &x_weights_, &dz_weights_, &dw_, &dz_data_, &w_data_, &dx_}) bytes += s->bytes;
        return bytes;
    }

private:
    // A tensor in tenet's layout (the caller's pointer, bound per call) and
    // in a primitive's: the same memory when the layouts agree, else a
    // buffer and a reorder each way.
    struct staged {
        detail::dnnl_memory_handle user, inner;
        detail::dnnl_primitive_handle in, out;
        std::size_t bytes = 0;
        bool reordered() const { return inner != nullptr; }
        dnnl_memory_t primitive_side() const { return reordered() ? inner.get() : user.get(); }
    };

    // The problem's descriptors and window as oneDNN takes them.
    struct geometry {
        memory_desc any_input, any_weights, any_weight_gradient, any_output;
        dnnl_dims_t strides, dilation, padding_l, padding_r;

        geometry(const conv2d_problem& p, dnnl_data_type_t storage)
            : any_input(any(input_desc(p, storage))), any_weights(any(weight_desc(p, storage))),
              any_weight_gradient(any(weight_desc(p, dnnl_f32))), any_output(any(output_desc(p, storage))),
              strides{p.stride, p.stride}, dilation{p.dilation - 1, p.dilation - 1}, padding_l{p.padding, p.padding},
              // the right padding that makes oneDNN's output extent PyTorch's
              // floor formula (it may be below the left one, even negative)
              padding_r{(p.out_height - 1) * p.stride + p.dilation * (p.kernel - 1) + 1 - p.height - p.padding,
                        (p.out_width - 1) * p.stride + p.dilation * (p.kernel - 1) + 1 - p.width - p.padding}
        {
        }
    };

    static std::string named(const conv2d_problem& p, dnnl_data_type_t storage)
    {
        return describe(p) + " in " + dnnl_dt2str(storage);
    }

    static void check(const std::string& what, dnnl_status_t status)
    {
        if (status != dnnl_success) throw onednn_error(what, status);
    }

    template <class H, class... Args>
    static H create(const std::string& what, dnnl_status_t (*make)(H*, Args...), std::type_identity_t<Args>... args)
    {
        H h = nullptr;
        check(what, make(&h, args...));
        return h;
    }

    static memory_desc strided(dnnl_data_type_t type, std::initializer_list<long> dims,
                               std::initializer_list<long> strides)
    {
        dnnl_dims_t d{}, s{};
        std::copy(dims.begin(), dims.end(), d);
        std::copy(strides.begin(), strides.end(), s);
        memory_desc md{};
        check("describe a tensor", dnnl_memory_desc_init_by_strides(&md, static_cast<int>(dims.size()), d, type, s));
        return md;
    }
    // NHWC, as strides over oneDNN's logical NCHW.
    static memory_desc input_desc(const conv2d_problem& p, dnnl_data_type_t type)
    {
        const long c = p.in_channels, w = p.width, h = p.height;
        return strided(type, {p.batch, c, h, w}, {h * w * c, 1, w * c, c});
    }
    static memory_desc output_desc(const conv2d_problem& p, dnnl_data_type_t type)
    {
        const long c = p.out_channels, w = p.out_width, h = p.out_height;
        return strided(type, {p.batch, c, h, w}, {h * w * c, 1, w * c, c});
    }
    // [Cout, K, K, Cin / G] over oneDNN's logical [G, Cout / G, Cin / G, K, K]
    // (the group dimension only with groups).
    static memory_desc weight_desc(const conv2d_problem& p, dnnl_data_type_t type)
    {
        const long k = p.kernel, ig = p.in_channels / p.groups, og = p.out_channels / p.groups;
        if (p.groups == 1) return strided(type, {og, ig, k, k}, {k * k * ig, 1, k * ig, ig});
        return strided(type, {p.groups, og, ig, k, k}, {og * k * k * ig, k * k * ig, 1, k * ig, ig});
    }
    static memory_desc bias_desc(const conv2d_problem& p, dnnl_data_type_t type)
    {
        return strided(type, {p.out_channels}, {1});
    }
    static memory_desc any(const memory_desc& d)
    {
        memory_desc md{};
        check("describe a tensor", dnnl_memory_desc_init_by_tag(&md, d.ndims, d.dims, d.data_type, dnnl_format_tag_any));
        return md;
    }

    static memory_desc query(const detail::dnnl_pd_handle& pd, dnnl_query_t what)
    {
        const memory_desc* md = dnnl_primitive_desc_query_md(pd.get(), what, 0);
        if (md == nullptr) throw onednn_error("describe a primitive's tensor", dnnl_invalid_arguments);
        return *md;
    }

    detail::dnnl_pd_handle primitive_desc(const std::string& what, const dnnl_convolution_desc_t* op, bool relu,
                                          const_dnnl_primitive_desc_t hint) const
    {
        detail::dnnl_attr_handle attr(create<dnnl_primitive_attr_t>(what + " attributes", dnnl_primitive_attr_create));
        check(what + " attributes", dnnl_primitive_attr_set_scratchpad_mode(attr.get(), dnnl_scratchpad_mode_user));
        if (relu) {
            detail::dnnl_post_ops_handle ops(create<dnnl_post_ops_t>(what + " ReLU post-op", dnnl_post_ops_create));
            check(what + " ReLU post-op", dnnl_post_ops_append_eltwise(ops.get(), 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f));
            check(what + " ReLU post-op", dnnl_primitive_attr_set_post_ops(attr.get(), ops.get()));
        }
        dnnl_primitive_desc_t pd = nullptr;
        check(what + " primitive", dnnl_primitive_desc_create(&pd, op, attr.get(), engine_.get(), hint));
        return detail::dnnl_pd_handle(pd);
    }

    static detail::dnnl_primitive_handle primitive(const std::string& what, const_dnnl_primitive_desc_t pd)
    {
        return detail::dnnl_primitive_handle(create<dnnl_primitive_t>(what + " primitive", dnnl_primitive_create, pd));
    }

    detail::dnnl_primitive_handle reorder(const std::string& what, const memory_desc& from, const memory_desc& to) const
    {
        dnnl_primitive_desc_t pd = nullptr;
        check(what + "reorder", dnnl_reorder_primitive_desc_create(&pd, &from, engine_.get(), &to, engine_.get(), nullptr));
        const detail::dnnl_pd_handle owned(pd);
        return primitive(what + "reorder", pd);
    }

    staged stage(const std::string& what, const memory_desc& user, const memory_desc& wanted) const
    {
        staged s;
        s.user.reset(create<dnnl_memory_t>(what + "memory", dnnl_memory_create, &user, engine_.get(), DNNL_MEMORY_NONE));
        if (dnnl_memory_desc_equal(&user, &wanted)) return s;
        s.inner.reset(create<dnnl_memory_t>(what + "memory", dnnl_memory_create, &wanted, engine_.get(), DNNL_MEMORY_ALLOCATE));
        s.in = reorder(what, user, wanted);
        s.out = reorder(what, wanted, user);
        s.bytes = dnnl_memory_desc_get_size(&wanted);
        return s;
    }

    // The caller's pointer bound to s; what the primitive reads or writes.
    static dnnl_memory_t bind(const std::string& what, staged& s, const void* p)
    {
        check(what, dnnl_memory_set_data_handle(s.user.get(), const_cast<void*>(p)));
        return s.primitive_side();
    }

    void execute(const std::string& what, const detail::dnnl_primitive_handle& p, std::initializer_list<dnnl_exec_arg_t> args)
    {
        check(what, dnnl_primitive_execute(p.get(), stream_.get(), static_cast<int>(args.size()), args.begin()));
    }
    void copy_in(const std::string& what, staged& s)
    {
        if (s.reordered()) execute(what, s.in, {{DNNL_ARG_FROM, s.user.get()}, {DNNL_ARG_TO, s.inner.get()}});
    }
    void copy_out(const std::string& what, staged& s)
    {
        if (s.reordered()) execute(what, s.out, {{DNNL_ARG_FROM, s.inner.get()}, {DNNL_ARG_TO, s.user.get()}});
    }
    void wait(const std::string& what) { check(what, dnnl_stream_wait(stream_.get())); }

    static bool same_layout(const memory_desc& a, const memory_desc& b) { return dnnl_memory_desc_equal(&a, &b) != 0; }

    // The input in the weight-gradient primitive's layout: the forward's
    // reordered copy when the layouts agree, else x reordered again.
    dnnl_memory_t kept_input(const std::string& what, const void* x)
    {
        if (same_layout(query(weights_pd_, dnnl_query_src_md), query(forward_pd_, dnnl_query_src_md)))
            return x_.reordered() ? x_.inner.get() : bind(what, x_, x);
        const dnnl_memory_t m = bind(what, x_weights_, x);
        copy_in(what, x_weights_);
        return m;
    }

    // dz in a primitive's layout, reusing the weight gradient's copy when
    // the data gradient wants the same layout.
    dnnl_memory_t stage_gradient(const std::string& what, staged& s, const void* dz, const staged* done)
    {
        if (done != nullptr && done->reordered() &&
            same_layout(query(data_pd_, dnnl_query_diff_dst_md), query(weights_pd_, dnnl_query_diff_dst_md)))
            return done->inner.get();
        const dnnl_memory_t m = bind(what, s, dz);
        copy_in(what, s);
        return m;
    }

    // The weights in the data-gradient primitive's layout: the forward's copy
    // when the layouts agree (the weights have not changed since), else w
    // reordered again.
    dnnl_memory_t weights_for_data(const std::string& what, const void* w)
    {
        if (same_layout(query(data_pd_, dnnl_query_weights_md), query(forward_pd_, dnnl_query_weights_md)))
            return w_.reordered() ? w_.inner.get() : bind(what, w_, w);
        const dnnl_memory_t m = bind(what, w_data_, w);
        copy_in(what, w_data_);
        return m;
    }

    conv2d_problem problem_;
    std::string running_forward_, running_backward_;  // error contexts, written once rather than per call
    detail::dnnl_engine_handle engine_;
    detail::dnnl_stream_handle stream_;
    detail::dnnl_pd_handle forward_pd_, data_pd_, weights_pd_;
    detail::dnnl_primitive_handle forward_, backward_data_, backward_weights_;
    staged x_, w_, y_, bias_, x_weights_, dz_weights_, dw_, dbias_, dz_data_, w_data_, dx_;
    detail::dnnl_memory_handle scratchpad_;
    std::size_t scratchpad_bytes_ = 0;
};

}  // namespace tenet::conv
