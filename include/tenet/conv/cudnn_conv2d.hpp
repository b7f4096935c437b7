// The device convolution on cuDNN 9's graph API (CUDA translation units,
// with TENET_WITH_CUDNN, which tenet::tenet defines where CMake finds cuDNN) (its backend descriptors,
// called directly: no frontend to install): cudnn_conv2d is the plan for one
// convolution problem and element type, built once, at construction. Three
// one-operation graphs -- forward, backward data, backward filter -- over
// tenet's layouts as they are (NHWC activations, [Cout, K, K, Cin / Groups]
// weights, which is cuDNN's KRSC; groups follow from the weight's input
// channels), each with the execution plan of the first engine cuDNN's
// heuristics rank (mode A, then the fallback list) that is deterministic,
// accumulates in full precision and, in f32, has no numerical note at all
// (no TF32 tensor cores, FFT or Winograd); one workspace, the
// largest the three plans ask for, allocated with the plan. A call binds the
// pointers (a variant pack) and enqueues the plan on the current stream: no
// allocation, no synchronisation, so CUDA Graph capture records it and a
// replay reuses the plan. Compiled for sm_80 and sm_90 here; not yet run on
// a GPU.
#pragma once

#include "../config.hpp"

#if TENET_CUDA_COMPILER && defined(TENET_WITH_CUDNN)

#include "../memory/buffer.hpp"
#include "../memory/error.hpp"
#include "../memory/place.hpp"
#include "../memory/stream.hpp"
#include "conv2d_problem.hpp"

#include <cudnn.h>

static_assert(CUDNN_MAJOR >= 9, "tenet: device convolutions are written for cuDNN 9's graph API");

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tenet::conv {

// A cuDNN call failed; the message says what tenet asked of it.
class cudnn_error : public error {
public:
    cudnn_error(const std::string& what_tenet_did, cudnnStatus_t status)
        : error("tenet: cuDNN failed to " + what_tenet_did + ": " + cudnnGetErrorString(status) + " (status " +
                std::to_string(static_cast<int>(status)) + ")"),
          status_(status)
    {
    }
    cudnnStatus_t status() const noexcept { return status_; }

private:
    cudnnStatus_t status_;
};

namespace detail {

inline void check_cudnn(const std::string& what, cudnnStatus_t status)
{
    if (status != CUDNN_STATUS_SUCCESS) throw cudnn_error(what, status);
}

// One backend descriptor, destroyed with its owner.
class cudnn_descriptor {
public:
    cudnn_descriptor() = default;
    explicit cudnn_descriptor(cudnnBackendDescriptorType_t type)
    {
        check_cudnn("create a backend descriptor", cudnnBackendCreateDescriptor(type, &d_));
    }
    cudnn_descriptor(cudnn_descriptor&& o) noexcept : d_(std::exchange(o.d_, nullptr)) {}
    cudnn_descriptor& operator=(cudnn_descriptor&& o) noexcept
    {
        std::swap(d_, o.d_);
        return *this;
    }
    cudnn_descriptor(const cudnn_descriptor&) = delete;
    cudnn_descriptor& operator=(const cudnn_descriptor&) = delete;
    ~cudnn_descriptor()
    {
        if (d_) cudnnBackendDestroyDescriptor(d_);
    }

    cudnnBackendDescriptor_t get() const noexcept { return d_; }

    template <class V>
    cudnn_descriptor& set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, const V* values,
                          std::int64_t count = 1)
    {
        check_cudnn("set a descriptor attribute (" + std::to_string(static_cast<int>(name)) + ")",
                    cudnnBackendSetAttribute(d_, name, type, count, values));
        return *this;
    }
    cudnn_descriptor& set(cudnnBackendAttributeName_t name, const cudnn_descriptor& other)
    {
        const cudnnBackendDescriptor_t d = other.get();
        return set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, &d);
    }
    cudnn_descriptor& finalize(const std::string& what)
    {
        check_cudnn(what, cudnnBackendFinalize(d_));
        return *this;
    }

private:
    cudnnBackendDescriptor_t d_ = nullptr;
};

// A cuDNN handle, destroyed with its owner (moving it keeps the handle, so
// plans built on it stay valid).
class cudnn_handle {
public:
    cudnn_handle() { check_cudnn("create a handle", cudnnCreate(&h_)); }
    cudnn_handle(cudnn_handle&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
    cudnn_handle& operator=(cudnn_handle&& o) noexcept
    {
        std::swap(h_, o.h_);
        return *this;
    }
    cudnn_handle(const cudnn_handle&) = delete;
    cudnn_handle& operator=(const cudnn_handle&) = delete;
    ~cudnn_handle()
    {
        if (h_) cudnnDestroy(h_);
    }
    cudnnHandle_t get() const noexcept { return h_; }

private:
    cudnnHandle_t h_ = nullptr;
};

}  // namespace detail

class cudnn_conv2d {
    // the tensors' unique ids in the graphs
    enum tensor_id : std::int64_t { x_id = 1, w_id = 2, y_id = 3 };
    // every pointer cuDNN is given must be aligned to this
    static constexpr std::int64_t alignment = 16;

    struct plan {
        detail::cudnn_descriptor config, descriptor;  // (the engine configuration lives as long as its plan)
        std::int64_t workspace = 0;
        std::string running;  // the error context of a run, written once here rather than per call
    };

public:
    // io: the element type of x, w, y and their gradients.
    cudnn_conv2d(const conv2d_problem& p, cudnnDataType_t io) : problem_(p)
    {
        const std::string what = "plan a convolution " + describe(p);
        const bool f32 = io == CUDNN_DATA_FLOAT;
        forward_ = build(what + " (forward)", CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
                         {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                          CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                          CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA},
                         io, f32);
        data_ = build(what + " (backward data)", CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
                      {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
                       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
                       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA},
                      io, f32);
        filter_ = build(what + " (backward filter)", CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
                        {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
                         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
                         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
                         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
                         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA},
                        io, f32);
        forward_.running = "run a convolution's forward " + describe(p);
        data_.running = "run a convolution's backward data " + describe(p);
        filter_.running = "run a convolution's backward filter " + describe(p);
        workspace_bytes_ =
            static_cast<std::size_t>(std::max({forward_.workspace, data_.workspace, filter_.workspace, std::int64_t{0}}));
        workspace_ = buffer<std::byte, Device>(workspace_bytes_ + 1, current_stream());
        // the allocation is ordered on this stream; calls may come on others
        current_stream().synchronize();
    }

    // y = conv(x, w) (NHWC x and y, KRSC w), enqueued on s.
    void forward(const void* x, const void* w, void* y, stream_ref s) { run(forward_, x, w, y, s); }
    // dx = the input gradient from dy.
    void backward_data(const void* dy, const void* w, void* dx, stream_ref s) { run(data_, dx, w, dy, s); }
    // dw = the weight gradient from x and dy.
    void backward_filter(const void* x, const void* dy, void* dw, stream_ref s)
    {
        run(filter_, x, dw, dy, s);
    }

    // What the three plans asked for.
    std::size_t workspace_bytes() const { return workspace_bytes_; }

private:
    // NHWC as strides over cuDNN's logical NCHW; KRSC over KCRS.
    static std::array<std::int64_t, 4> dims_of(tensor_id id, const conv2d_problem& p)
    {
        if (id == x_id) return {p.batch, p.in_channels, p.height, p.width};
        if (id == y_id) return {p.batch, p.out_channels, p.out_height, p.out_width};
        return {p.out_channels, p.in_channels / p.groups, p.kernel, p.kernel};
    }
    static std::array<std::int64_t, 4> strides_of(const std::array<std::int64_t, 4>& d)
    {
        return {d[1] * d[2] * d[3], 1, d[3] * d[1], d[1]};
    }

    static detail::cudnn_descriptor tensor(tensor_id id, const conv2d_problem& p, cudnnDataType_t type)
    {
        const auto d = dims_of(id, p);
        const auto s = strides_of(d);
        const std::int64_t uid = id;
        detail::cudnn_descriptor t(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
        t.set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, &type)
            .set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, d.data(), 4)
            .set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, s.data(), 4)
            .set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, &uid)
            .set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, &alignment)
            .finalize("describe a tensor");
        return t;
    }

    static detail::cudnn_descriptor convolution(const conv2d_problem& p)
    {
        const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
        const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
        const std::int64_t spatial = 2;
        const std::array<std::int64_t, 2> dilation{p.dilation, p.dilation}, stride{p.stride, p.stride},
            padding{p.padding, p.padding};
        detail::cudnn_descriptor c(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
        c.set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, &compute)
            .set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, &mode)
            .set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, &spatial)
            .set(CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, dilation.data(), 2)
            .set(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, stride.data(), 2)
            .set(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, padding.data(), 2)
            .set(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, padding.data(), 2)
            .finalize("describe the convolution");
        return c;
    }

    // Whether an engine configuration keeps tenet's numerics: deterministic,
    // accumulating in full precision, and in f32 without tensor cores (TF32),
    // inputs converted down, FFT or Winograd.
    static bool acceptable(const detail::cudnn_descriptor& config, bool f32)
    {
        detail::cudnn_descriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
        cudnnBackendDescriptor_t e = engine.get();
        std::int64_t count = 0;
        detail::check_cudnn("read an engine configuration",
                            cudnnBackendGetAttribute(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE,
                                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &count, &e));
        std::array<cudnnBackendNumericalNote_t, CUDNN_NUMERICAL_NOTE_TYPE_COUNT> notes{};
        detail::check_cudnn("read an engine's numerical notes",
                            cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                                     static_cast<std::int64_t>(notes.size()), &count, notes.data()));
        for (std::int64_t i = 0; i < count; ++i) {
            const auto n = notes[static_cast<std::size_t>(i)];
            if (n == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC || n == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION)
                return false;
            if (f32 && n != CUDNN_NUMERICAL_NOTE_STRICT_NAN_PROP) return false;
        }
        return true;
    }

    // One operation's graph, and the plan of the best acceptable engine.
    // names: the attributes of the operation's x-, w- and y-shaped tensors
    // (forward X, W, Y; backward data DX, W, DY; backward filter X, DW, DY),
    // its convolution, alpha and beta.
    plan build(const std::string& what, cudnnBackendDescriptorType_t type,
               std::array<cudnnBackendAttributeName_t, 6> names, cudnnDataType_t io, bool f32)
    {
        const detail::cudnn_descriptor x = tensor(x_id, problem_, io), w = tensor(w_id, problem_, io),
                                       y = tensor(y_id, problem_, io), conv = convolution(problem_);
        const float alpha = 1.0f, beta = 0.0f;
        detail::cudnn_descriptor op(type);
        op.set(names[0], x).set(names[1], w).set(names[2], y).set(names[3], conv);
        op.set(names[4], CUDNN_TYPE_FLOAT, &alpha).set(names[5], CUDNN_TYPE_FLOAT, &beta).finalize(what + ": the operation");

        const cudnnHandle_t h = handle_.get();
        const cudnnBackendDescriptor_t op_d = op.get();
        detail::cudnn_descriptor graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
        graph.set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, &op_d)
            .set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, &h)
            .finalize(what + ": the graph");

        cudnnStatus_t last = CUDNN_STATUS_SUCCESS;
        std::int64_t ranked = 0;
        // mode A's ranking first; where it offers nothing acceptable, the fallback list
        for (const cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
            detail::cudnn_descriptor heuristics(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
            heuristics.set(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph)
                .set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, &mode)
                .finalize(what + ": the heuristics");
            std::int64_t count = 0;
            detail::check_cudnn(what + ": count the engines",
                                cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr));
            std::vector<detail::cudnn_descriptor> configs;
            std::vector<cudnnBackendDescriptor_t> raw;
            for (std::int64_t i = 0; i < count; ++i) {
                configs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
                raw.push_back(configs.back().get());
            }
            detail::check_cudnn(what + ": read the engines",
                                cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &count, raw.data()));
            ranked += count;
            for (std::int64_t i = 0; i < count; ++i) {
                detail::cudnn_descriptor& config = configs[static_cast<std::size_t>(i)];
                if (!acceptable(config, f32)) continue;
                plan p{std::move(config), detail::cudnn_descriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR), 0, {}};
                p.descriptor.set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, &h)
                    .set(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, p.config);
                last = cudnnBackendFinalize(p.descriptor.get());
                if (last != CUDNN_STATUS_SUCCESS) continue;  // the next engine
                std::int64_t n = 0;
                detail::check_cudnn(what + ": the workspace size",
                                    cudnnBackendGetAttribute(p.descriptor.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                                             CUDNN_TYPE_INT64, 1, &n, &p.workspace));
                return p;
            }
        }
        throw error("tenet: cuDNN has no deterministic engine" + std::string(f32 ? " with f32 arithmetic" : "") +
                    " to " + what + " (" + std::to_string(ranked) + " engines ranked" +
                    (last != CUDNN_STATUS_SUCCESS ? std::string(", the last plan failed: ") + cudnnGetErrorString(last)
                                                  : std::string()) +
                    ")");
    }

    // Enqueues a plan on s with a, b, c bound to the x, w and y ids.
    void run(plan& p, const void* a, const void* b, const void* c, stream_ref s)
    {
        const std::string& what = p.running;
        void* pointers[3] = {const_cast<void*>(a), const_cast<void*>(b), const_cast<void*>(c)};
        for (void* q : pointers)
            if (reinterpret_cast<std::uintptr_t>(q) % alignment != 0)
                throw error("tenet: " + what + ": a tensor is not " + std::to_string(alignment) + "-byte aligned");
        const std::int64_t ids[3] = {x_id, w_id, y_id};
        void* workspace = workspace_.data();
        detail::cudnn_descriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
        pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, ids, 3)
            .set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, pointers, 3)
            .set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, &workspace)
            .finalize(what);
        detail::check_cudnn(what, cudnnSetStream(handle_.get(), s.get()));
        detail::check_cudnn(what, cudnnBackendExecute(handle_.get(), p.descriptor.get(), pack.get()));
    }

    conv2d_problem problem_;
    detail::cudnn_handle handle_;
    plan forward_, data_, filter_;
    std::size_t workspace_bytes_ = 0;
    buffer<std::byte, Device> workspace_{1, current_stream()};
};

}  // namespace tenet::conv

#endif  // TENET_CUDA_COMPILER && TENET_WITH_CUDNN
