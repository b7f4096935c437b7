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
// allocated at construction (a thread count's own, at its first forward). The forward keeps its reordered input for the
// weight gradient, as the lowering keeps its columns. A fused ReLU is a
// post-op of the forward primitive. A forward under a thread count met for
// the first time plans the three passes again under it and keeps those
// that give the construction's bits (onednn_thread_counts.hpp), so a
// thread_tuner's 1 thread reaches oneDNN without changing a result.
#pragma once

#include "../exec/host_threads.hpp"
#include "../linalg/onednn_handle.hpp"
#include "../linalg/onednn_thread_counts.hpp"
#include "../memory/error.hpp"
#include "conv2d_problem.hpp"

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

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
        : problem_(p), storage_(storage),
          running_forward_("run a convolution's forward " + named(p, storage)),
          running_backward_("run a convolution's backward " + named(p, storage))
    {
        if (storage != dnnl_f32 && storage != dnnl_bf16)
            throw onednn_error("plan a convolution " + named(p, storage) + " (tenet plans f32 and bf16)",
                               dnnl_invalid_arguments);
        const std::string what = "plan a convolution " + named(p, storage) + ": ";
        engine_.reset(create<dnnl_engine_t>(what + "engine", dnnl_engine_create, dnnl_cpu, 0));
        stream_.reset(create<dnnl_stream_t>(what + "stream", dnnl_stream_create, engine_.get(), dnnl_stream_default_flags));
        plans_.push_back(make_plan());
        last_forward_ = plans_.front().get();
        const threaded_plan* reference = last_forward_;
        routes_.push_back({reference->threads, reference, reference, reference});
    }

    // y = act(conv(x, w) + b); b is null without a bias. x, w, b and y hold
    // the storage type.
    void forward(const void* x, const void* w, const void* b, void* y) { forward_on(*route_for_forward().forward, x, w, b, y); }

    // From the output gradient dz (already through a fused ReLU's mask): dw
    // and db (null without a bias) for the x of the last forward (dw null:
    // neither), and dx (null: not wanted). dw and db are f32, the others the
    // storage type.
    void backward(const void* dz, const void* x, const void* w, float* dw, float* db, void* dx)
    {
        const route& r = route_for_backward();
        backward_on(*r.weights, *r.data, dz, x, w, dw, db, dx);
    }

    // Bytes the plan holds in the primitives' layouts, scratchpad included
    // (grown by a thread count's own primitives once a forward meets it).
    std::size_t workspace_bytes() const
    {
        std::size_t bytes = scratchpad_bytes_;
        for (const auto& plan : plans_)
            for (const staged* s : plan->buffers()) bytes += s->bytes;
        return bytes;
    }

    // How many thread counts run primitives of their own (1: only those
    // made at construction). A getter for tests and benchmarks.
    std::size_t thread_counts_planned() const { return plans_.size(); }

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

    // The three primitives as oneDNN made them under one thread count (it
    // fixes a primitive's count, and its split of the work, when it makes
    // it), with their layouts' buffers.
    struct threaded_plan {
        int threads = 1;
        detail::dnnl_pd_handle forward_pd, data_pd, weights_pd;
        detail::dnnl_primitive_handle forward, backward_data, backward_weights;
        staged x, w, y, bias, x_weights, dz_weights, dw, dbias, dz_data, w_data, dx;
        std::array<const staged*, 9> buffers() const
        {
            return {&x, &w, &y, &x_weights, &dz_weights, &dw, &dz_data, &w_data, &dx};
        }
    };

    // Which plan runs each pass under one thread count: the count's own
    // where it gave the construction's bits (onednn_thread_counts.hpp; the
    // weight gradient usually stays on the construction's).
    struct route {
        int threads;
        const threaded_plan *forward, *data, *weights;
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

    // The primitives under the calling thread's count, and a scratchpad
    // large enough for them.
    std::unique_ptr<threaded_plan> make_plan()
    {
        const conv2d_problem& p = problem_;
        const std::string what = "plan a convolution " + named(p, storage_) + ": ";
        auto plan = std::make_unique<threaded_plan>();
        plan->threads = host_threads();
        const geometry g(p, storage_);
        dnnl_convolution_desc_t forward{}, data{}, weights{};
        const memory_desc bias = bias_desc(p, storage_), dbias = bias_desc(p, dnnl_f32);
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
        plan->forward_pd = primitive_desc(what + "forward", &forward, p.relu, nullptr);
        plan->data_pd = primitive_desc(what + "backward data", &data, false, plan->forward_pd.get());
        plan->weights_pd = primitive_desc(what + "backward weights", &weights, false, plan->forward_pd.get());
        plan->forward = primitive(what + "forward", plan->forward_pd.get());
        plan->backward_data = primitive(what + "backward data", plan->data_pd.get());
        plan->backward_weights = primitive(what + "backward weights", plan->weights_pd.get());

        const memory_desc input = input_desc(p, storage_), output = output_desc(p, storage_),
                          weight = weight_desc(p, storage_);
        plan->x = stage(what, input, query(plan->forward_pd, dnnl_query_src_md));
        plan->w = stage(what, weight, query(plan->forward_pd, dnnl_query_weights_md));
        plan->y = stage(what, output, query(plan->forward_pd, dnnl_query_dst_md));
        plan->bias = stage(what, bias, bias);
        plan->x_weights = stage(what, input, query(plan->weights_pd, dnnl_query_src_md));
        plan->dz_weights = stage(what, output, query(plan->weights_pd, dnnl_query_diff_dst_md));
        plan->dw = stage(what, weight_desc(p, dnnl_f32), query(plan->weights_pd, dnnl_query_diff_weights_md));
        plan->dbias = stage(what, dbias, dbias);
        plan->dz_data = stage(what, output, query(plan->data_pd, dnnl_query_diff_dst_md));
        plan->w_data = stage(what, weight, query(plan->data_pd, dnnl_query_weights_md));
        plan->dx = stage(what, input, query(plan->data_pd, dnnl_query_diff_src_md));
        for (const auto* pd : {&plan->forward_pd, &plan->data_pd, &plan->weights_pd}) {
            const memory_desc pad = query(*pd, dnnl_query_scratchpad_md);
            const std::size_t bytes = dnnl_memory_desc_get_size(&pad);
            if (bytes <= scratchpad_bytes_ && scratchpad_) continue;
            scratchpad_.reset(create<dnnl_memory_t>(what + "scratchpad", dnnl_memory_create, &pad, engine_.get(),
                                                    DNNL_MEMORY_ALLOCATE));
            scratchpad_bytes_ = bytes;
        }
        return plan;
    }

    // The route for the calling thread's count: found, or (a count met for
    // the first time) made by planning under it and comparing each pass
    // with the construction's on random operands. This runs before a
    // forward, whose staged input nothing reads any more.
    const route& route_for_forward()
    {
        if (const route* r = find_route(host_threads())) return *r;
        std::unique_ptr<threaded_plan> candidate = make_plan();
        const threaded_plan& reference = *plans_.front();
        const pass_results a = run_random(reference), b = run_random(*candidate);
        const threaded_plan* own = candidate.get();
        routes_.push_back({own->threads, a.y == b.y ? own : &reference, a.dx == b.dx ? own : &reference,
                           a.dw == b.dw && a.db == b.db ? own : &reference});
        const route& r = routes_.back();
        if (r.forward == own || r.data == own || r.weights == own) plans_.push_back(std::move(candidate));
        return r;
    }
    // A backward under a count no forward has met runs the construction's
    // primitives (planning here would overwrite the staged input).
    const route& route_for_backward() const
    {
        const route* r = find_route(host_threads());
        return r ? *r : routes_.front();
    }
    const route* find_route(int threads) const
    {
        for (const route& r : routes_)
            if (r.threads == threads) return &r;
        return nullptr;
    }

    // Every pass of a plan on the same pseudo-random operands, as bytes.
    struct pass_results {
        std::string y, dx, dw, db;
    };
    pass_results run_random(const threaded_plan& plan)
    {
        const conv2d_problem& p = problem_;
        const std::size_t value = storage_ == dnnl_bf16 ? 2 : 4,
                          inputs = std::size_t(p.batch) * p.height * p.width * p.in_channels,
                          outputs = std::size_t(p.batch) * p.out_height * p.out_width * p.out_channels,
                          weights = std::size_t(p.out_channels) * p.kernel * p.kernel * (p.in_channels / p.groups);
        auto random = [&](std::size_t n, std::uint32_t seed) { return internal::onednn_random_bytes(n * value, storage_, seed); };
        const std::string x = random(inputs, 1), w = random(weights, 2), b = random(p.out_channels, 3), dz = random(outputs, 4);
        pass_results r{std::string(outputs * value, '\0'), std::string(inputs * value, '\0'),
                       std::string(weights * 4, '\0'), std::string(p.bias ? p.out_channels * 4 : 0, '\0')};
        forward_on(plan, x.data(), w.data(), p.bias ? b.data() : nullptr, r.y.data());
        backward_on(plan, plan, dz.data(), x.data(), w.data(), reinterpret_cast<float*>(r.dw.data()),
                    p.bias ? reinterpret_cast<float*>(r.db.data()) : nullptr, r.dx.data());
        return r;
    }
    void forward_on(const threaded_plan& const_plan, const void* x, const void* w, const void* b, void* y)
    {
        threaded_plan& plan = const_cast<threaded_plan&>(const_plan);  // its staging, never its primitives
        const std::string& what = running_forward_;
        const host_threads_scope count(plan.threads);
        dnnl_memory_t src = bind(what, plan.x, x), weights = bind(what, plan.w, w), dst = bind(what, plan.y, y);
        copy_in(what, plan.x);
        copy_in(what, plan.w);
        if (problem_.bias)
            execute(what, plan.forward, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights},
                                         {DNNL_ARG_BIAS, bind(what, plan.bias, b)}, {DNNL_ARG_DST, dst},
                                         {DNNL_ARG_SCRATCHPAD, scratchpad_.get()}});
        else
            execute(what, plan.forward, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, dst},
                                         {DNNL_ARG_SCRATCHPAD, scratchpad_.get()}});
        copy_out(what, plan.y);
        wait(what);
        last_forward_ = &plan;
    }

    // The weight gradient on one plan, the data gradient on another (each
    // reuses the last forward's staged copies where its layouts agree). A
    // primitive runs under the count it was made under.
    void backward_on(const threaded_plan& weights_plan, const threaded_plan& data_plan, const void* dz, const void* x,
                     const void* w, float* dw, float* db, void* dx)
    {
        threaded_plan& wp = const_cast<threaded_plan&>(weights_plan);
        threaded_plan& dp = const_cast<threaded_plan&>(data_plan);
        const std::string& what = running_backward_;
        std::optional<host_threads_scope> count(std::in_place, wp.threads);
        if (dw != nullptr) {
            const dnnl_memory_t src = kept_input(what, wp, x), diff_dst = stage_gradient(what, wp.dz_weights, dz),
                                diff_weights = bind(what, wp.dw, dw);
            if (problem_.bias)
                execute(what, wp.backward_weights,
                        {{DNNL_ARG_SRC, src}, {DNNL_ARG_DIFF_DST, diff_dst}, {DNNL_ARG_DIFF_WEIGHTS, diff_weights},
                         {DNNL_ARG_DIFF_BIAS, bind(what, wp.dbias, db)}, {DNNL_ARG_SCRATCHPAD, scratchpad_.get()}});
            else
                execute(what, wp.backward_weights,
                        {{DNNL_ARG_SRC, src}, {DNNL_ARG_DIFF_DST, diff_dst}, {DNNL_ARG_DIFF_WEIGHTS, diff_weights},
                         {DNNL_ARG_SCRATCHPAD, scratchpad_.get()}});
            copy_out(what, wp.dw);
        }
        if (dx != nullptr) {
            wait(what);
            count.emplace(dp.threads);
            // (dz as the weight gradient staged it, when it was staged now)
            const dnnl_memory_t diff_dst_data =
                dw != nullptr ? gradient_for_data(what, dp, wp, dz) : stage_gradient(what, dp.dz_data, dz);
            const dnnl_memory_t weights = weights_for_data(what, dp, w), diff_src = bind(what, dp.dx, dx);
            execute(what, dp.backward_data, {{DNNL_ARG_DIFF_DST, diff_dst_data}, {DNNL_ARG_WEIGHTS, weights},
                                             {DNNL_ARG_DIFF_SRC, diff_src}, {DNNL_ARG_SCRATCHPAD, scratchpad_.get()}});
            copy_out(what, dp.dx);
        }
        wait(what);
    }

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

    // The input in the weight-gradient primitive's layout: the last
    // forward's reordered copy when the layouts agree, else x reordered again.
    dnnl_memory_t kept_input(const std::string& what, threaded_plan& plan, const void* x)
    {
        threaded_plan& last = *last_forward_;
        if (same_layout(query(plan.weights_pd, dnnl_query_src_md), query(last.forward_pd, dnnl_query_src_md)))
            return last.x.reordered() ? last.x.inner.get() : bind(what, last.x, x);
        const dnnl_memory_t m = bind(what, plan.x_weights, x);
        copy_in(what, plan.x_weights);
        return m;
    }

    dnnl_memory_t stage_gradient(const std::string& what, staged& s, const void* dz)
    {
        const dnnl_memory_t m = bind(what, s, dz);
        copy_in(what, s);
        return m;
    }
    // dz in the data gradient's layout, reusing the weight gradient's copy
    // when the layouts agree.
    dnnl_memory_t gradient_for_data(const std::string& what, threaded_plan& data, threaded_plan& weights, const void* dz)
    {
        if (weights.dz_weights.reordered() &&
            same_layout(query(data.data_pd, dnnl_query_diff_dst_md), query(weights.weights_pd, dnnl_query_diff_dst_md)))
            return weights.dz_weights.inner.get();
        return stage_gradient(what, data.dz_data, dz);
    }

    // The weights in the data-gradient primitive's layout: the last
    // forward's copy when the layouts agree (the weights have not changed
    // since), else w reordered again.
    dnnl_memory_t weights_for_data(const std::string& what, threaded_plan& plan, const void* w)
    {
        threaded_plan& last = *last_forward_;
        if (same_layout(query(plan.data_pd, dnnl_query_weights_md), query(last.forward_pd, dnnl_query_weights_md)))
            return last.w.reordered() ? last.w.inner.get() : bind(what, last.w, w);
        const dnnl_memory_t m = bind(what, plan.w_data, w);
        copy_in(what, plan.w_data);
        return m;
    }

    conv2d_problem problem_;
    dnnl_data_type_t storage_;
    std::string running_forward_, running_backward_;  // error contexts, written once rather than per call
    detail::dnnl_engine_handle engine_;
    detail::dnnl_stream_handle stream_;
    std::vector<std::unique_ptr<threaded_plan>> plans_;  // [0]: made at construction, the reference
    std::vector<route> routes_;                          // [0]: the construction's count
    threaded_plan* last_forward_ = nullptr;
    detail::dnnl_memory_handle scratchpad_;
    std::size_t scratchpad_bytes_ = 0;
};

}  // namespace tenet::conv
