// The device GEMM: one cublasLtMatmul call, with a fused epilogue (bias,
// activation, the activation's saved input, bias gradients) when asked.
//
// Row-major problems are solved as their column-major transposes: tenet's
// D[m, n] = A[m, k] B[k, n] (row-major) is cuBLASLt's D^T[n, m] =
// B^T[n, k] A^T[k, m] (column-major) over the same memory, so B is passed
// as cuBLASLt's A and A as its B, a row-major operand needs no transpose and
// a transposed view (column-major) becomes CUBLAS_OP_T. This is also what
// makes a bias per output feature line up: cuBLASLt's bias runs along the
// rows of its column-major D, i.e. along tenet's columns.
//
// Everything that does not change between calls is built once and cached:
// one cuBLASLt handle per device; per GEMM problem type (shapes, types,
// orders, epilogue), device and pointer alignment, the matmul descriptor,
// the four matrix layouts and the algorithm the heuristic picks; and one
// workspace per device and stream. A call then only sets the epilogue
// pointers and enqueues cublasLtMatmul on the current stream: no allocation,
// no synchronisation, so it can be captured into a CUDA Graph.
//
// int8 (linalg/int8_gemm.hpp) goes through the same plans: i8 inputs,
// CUBLAS_COMPUTE_32I, i32 alpha / beta and an i32 result (IMMA).
//
// A combination cuBLASLt has no algorithm for (say, an f32 bias vector with
// a bf16 result on some architecture) is reported as unsupported, and the
// caller falls back to a plain GEMM plus one fused elementwise pass.
#pragma once

#include "../config.hpp"

#if TENET_CUDA_COMPILER

#include "../memory/cuda_check.hpp"
#include "../memory/error.hpp"
#include "../memory/stream.hpp"
#include "../numeric/types.hpp"
#include "cublas_error.hpp"
#include "gemm_layout.hpp"

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <tuple>
#include <type_traits>

namespace tenet::linalg::detail {

inline void check_cublas(cublasStatus_t status, const char* call)
{
    if (status != CUBLAS_STATUS_SUCCESS)
        throw cublas_error(static_cast<int>(status), call, cublasLtGetStatusName(status));
}

// cuBLASLt's epilogues, as tenet uses them. The GELU ones are cuBLASLt's
// GELU, which is the tanh approximation (PyTorch's gelu(approximate="tanh"),
// tenet's gelu_tanh): the erf GELU never maps to them.
enum class lt_epilogue {
    none,
    bias,
    relu_bias,
    gelu_tanh_bias,
    relu,
    gelu_tanh,
    relu_aux_bias,       // also writes the ReLU bit mask
    gelu_tanh_aux_bias,  // also writes the GELU input (the pre-activation)
    drelu_bgrad,         // D *= relu'(mask); bias gradient = sum of D's rows (tenet's columns summed over rows)
    dgelu_tanh_bgrad,    // D *= gelu_tanh'(aux); the same bias gradient
    bgradb,              // bias gradient from cuBLASLt's B operand, summed over k
};

constexpr cublasLtEpilogue_t lt_epilogue_value(lt_epilogue e)
{
    switch (e) {
    case lt_epilogue::none: return CUBLASLT_EPILOGUE_DEFAULT;
    case lt_epilogue::bias: return CUBLASLT_EPILOGUE_BIAS;
    case lt_epilogue::relu_bias: return CUBLASLT_EPILOGUE_RELU_BIAS;
    case lt_epilogue::gelu_tanh_bias: return CUBLASLT_EPILOGUE_GELU_BIAS;
    case lt_epilogue::relu: return CUBLASLT_EPILOGUE_RELU;
    case lt_epilogue::gelu_tanh: return CUBLASLT_EPILOGUE_GELU;
    case lt_epilogue::relu_aux_bias: return CUBLASLT_EPILOGUE_RELU_AUX_BIAS;
    case lt_epilogue::gelu_tanh_aux_bias: return CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
    case lt_epilogue::drelu_bgrad: return CUBLASLT_EPILOGUE_DRELU_BGRAD;
    case lt_epilogue::dgelu_tanh_bgrad: return CUBLASLT_EPILOGUE_DGELU_BGRAD;
    case lt_epilogue::bgradb: return CUBLASLT_EPILOGUE_BGRADB;
    }
    return CUBLASLT_EPILOGUE_DEFAULT;
}

constexpr bool lt_uses_vector(lt_epilogue e)
{
    return e != lt_epilogue::none && e != lt_epilogue::relu && e != lt_epilogue::gelu_tanh;
}
constexpr bool lt_uses_aux(lt_epilogue e)
{
    return e == lt_epilogue::relu_aux_bias || e == lt_epilogue::gelu_tanh_aux_bias || e == lt_epilogue::drelu_bgrad ||
           e == lt_epilogue::dgelu_tanh_bgrad;
}

// The epilogue of one GEMM type: its kind, the element type of its vector
// (bias or bias gradient; void for none), of its auxiliary matrix (void for
// none, i8 for the ReLU bit mask) and the auxiliary leading dimension (in
// elements; in bits for the mask).
template <lt_epilogue Kind, class Vector = void, class Aux = void, std::size_t AuxLd = 0>
struct lt_epilogue_spec {
    static constexpr lt_epilogue kind = Kind;
    using vector_type = Vector;
    using aux_type = Aux;
    static constexpr std::size_t aux_ld = AuxLd;
};

template <class T>
constexpr cudaDataType_t cuda_type()
{
    if constexpr (std::is_same_v<T, f32>) return CUDA_R_32F;
    else if constexpr (std::is_same_v<T, f64>) return CUDA_R_64F;
    else if constexpr (std::is_same_v<T, f16>) return CUDA_R_16F;
    else if constexpr (std::is_same_v<T, bf16>) return CUDA_R_16BF;
    else if constexpr (std::is_same_v<T, i8>) return CUDA_R_8I;
    else if constexpr (std::is_same_v<T, i32>) return CUDA_R_32I;
    else static_assert(sizeof(T) == 0, "tenet: internal: no cuBLASLt type for this element");
}

// Compute type per precision: 16-bit inputs on tensor cores with f32 sums;
// f32 in f32 unless the policy asked for TF32; f64 in f64; i8 in i32.
template <class Problem>
constexpr cublasComputeType_t lt_compute_type()
{
    using T = typename Problem::input_type;
    if constexpr (std::is_same_v<typename Problem::accumulate_type, f64>) return CUBLAS_COMPUTE_64F;
    else if constexpr (std::is_same_v<typename Problem::accumulate_type, i32>) return CUBLAS_COMPUTE_32I;
    else if constexpr (std::is_same_v<T, f32> && Problem::math == matmul_math::tf32) return CUBLAS_COMPUTE_32F_FAST_TF32;
    else return CUBLAS_COMPUTE_32F;
}

// alpha and beta: in the accumulate type (f32 for 16-bit inputs).
template <class Problem>
using lt_scale_t = std::conditional_t<std::is_same_v<typename Problem::accumulate_type, f64>, double,
                                      std::conditional_t<std::is_same_v<typename Problem::accumulate_type, i32>, i32, float>>;

// D = alpha A B + beta C: beta 1 accumulates into D (C is D, in place).
struct lt_scaling {
    int alpha = 1;
    int beta = 0;
};

// The pointers of one call, in tenet's (row-major) roles.
struct lt_pointers {
    const void* a;
    const void* b;
    void* d;
    const void* vector;  // bias (read) or bias gradient (written)
    const void* aux;     // the activation's saved input or mask (written forward, read backward)
};

// The largest power of two (up to 256) dividing every non-null pointer:
// cuBLASLt's heuristic must not pick kernels that assume more.
inline unsigned lt_alignment(const lt_pointers& p)
{
    std::uintptr_t bits = 256;
    for (const void* q : {p.a, p.b, static_cast<const void*>(p.d), p.vector, p.aux})
        if (q) bits |= reinterpret_cast<std::uintptr_t>(q);
    return static_cast<unsigned>(bits & (~bits + 1));  // lowest set bit
}

// How many GEMM types cuBLASLt declined, so that they ran as a plain GEMM
// plus tenet's passes instead (tests and benchmarks report it).
inline std::atomic<int>& lt_declined_plans()
{
    static std::atomic<int> count{0};
    return count;
}

// One handle per device, created on first use and kept for the process (its
// destruction at exit could run after the CUDA context is gone).
inline cublasLtHandle_t lt_handle(int device)
{
    static std::mutex mutex;
    static std::map<int, cublasLtHandle_t> handles;
    std::lock_guard lock(mutex);
    auto [it, created] = handles.try_emplace(device, nullptr);
    if (created) {
        try {
            check_cublas(cublasLtCreate(&it->second), "cublasLtCreate");
        } catch (...) {
            handles.erase(it);
            throw;
        }
    }
    return it->second;
}

// The workspace the algorithms may use: 32 MiB (what cuBLAS asks for on
// Hopper), one per device and stream -- two streams running GEMMs at once
// must not share it. The per-thread default stream is a different stream in
// each thread, so the thread is part of its key. Allocated on first use and
// kept; first use inside a stream capture is allowed to allocate (the
// allocation is not a stream operation and is not captured).
inline constexpr std::size_t lt_workspace_bytes = std::size_t{32} << 20;

inline void* lt_workspace(int device, cudaStream_t stream)
{
    using key = std::tuple<int, cudaStream_t, std::thread::id>;
    static std::mutex mutex;
    static std::map<key, void*> spaces;
    const bool per_thread = stream == cudaStreamPerThread || stream == nullptr;
    const key k{device, stream, per_thread ? std::this_thread::get_id() : std::thread::id{}};
    std::lock_guard lock(mutex);
    if (auto it = spaces.find(k); it != spaces.end()) return it->second;
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    TENET_CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
    void* p = nullptr;
    const cudaError_t status = cudaMalloc(&p, lt_workspace_bytes);
    TENET_CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
    if (status == cudaErrorMemoryAllocation) {
        cudaGetLastError();
        throw out_of_memory_error("Device", lt_workspace_bytes);
    }
    TENET_CUDA_CHECK(status);
    spaces.emplace(k, p);
    return p;
}

// Descriptors of one GEMM type on one device (host memory only).
class lt_plan {
public:
    lt_plan() = default;
    lt_plan(const lt_plan&) = delete;
    lt_plan& operator=(const lt_plan&) = delete;
    ~lt_plan()
    {
        if (preference_) cublasLtMatmulPreferenceDestroy(preference_);
        for (cublasLtMatrixLayout_t l : {a_, b_, d_})
            if (l) cublasLtMatrixLayoutDestroy(l);
        if (desc_) cublasLtMatmulDescDestroy(desc_);
    }

    template <class Problem, class Epilogue>
    void build(cublasLtHandle_t handle, unsigned alignment, const lt_pointers& p);

    bool supported() const { return supported_; }
    bool needs_workspace() const { return needs_workspace_; }

    // Enqueues the GEMM; false when cuBLASLt reports the call unsupported
    // (nothing was enqueued, and the plan is not used again).
    template <class Problem, class Epilogue>
    bool run(cublasLtHandle_t handle, const lt_pointers& p, void* workspace, cudaStream_t stream, lt_scaling scaling);

private:
    template <class V>
    void set(cublasLtMatmulDescAttributes_t attribute, const V& value, const char* call)
    {
        check_cublas(cublasLtMatmulDescSetAttribute(desc_, attribute, &value, sizeof(V)), call);
    }
    void set_pointers(const lt_pointers& p) const;

    static cublasLtMatrixLayout_t layout(cudaDataType_t type, std::size_t rows, std::size_t cols, std::size_t ld,
                                         std::size_t batch, std::size_t batch_stride);

    cublasLtMatmulDesc_t desc_ = nullptr;
    cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, d_ = nullptr;
    cublasLtMatmulPreference_t preference_ = nullptr;
    cublasLtMatmulAlgo_t algo_{};
    bool supported_ = false;
    bool needs_workspace_ = false;
    bool sets_vector_ = false, sets_aux_ = false;
};

inline cublasLtMatrixLayout_t lt_plan::layout(cudaDataType_t type, std::size_t rows, std::size_t cols, std::size_t ld,
                                              std::size_t batch, std::size_t batch_stride)
{
    cublasLtMatrixLayout_t l = nullptr;
    check_cublas(cublasLtMatrixLayoutCreate(&l, type, rows, cols, static_cast<std::int64_t>(ld)), "cublasLtMatrixLayoutCreate");
    if (batch > 1) {
        const std::int32_t count = static_cast<std::int32_t>(batch);
        const std::int64_t stride = static_cast<std::int64_t>(batch_stride);
        cublasStatus_t s = cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count));
        if (s == CUBLAS_STATUS_SUCCESS)
            s = cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride));
        if (s != CUBLAS_STATUS_SUCCESS) {
            cublasLtMatrixLayoutDestroy(l);
            check_cublas(s, "cublasLtMatrixLayoutSetAttribute");
        }
    }
    return l;
}

inline void lt_plan::set_pointers(const lt_pointers& p) const
{
    if (sets_vector_)
        check_cublas(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &p.vector, sizeof(p.vector)),
                     "cublasLtMatmulDescSetAttribute(BIAS_POINTER)");
    if (sets_aux_)
        check_cublas(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &p.aux, sizeof(p.aux)),
                     "cublasLtMatmulDescSetAttribute(EPILOGUE_AUX_POINTER)");
}

template <class Problem, class Epilogue>
void lt_plan::build(cublasLtHandle_t handle, unsigned alignment, const lt_pointers& p)
{
    using T = typename Problem::input_type;
    using TD = typename Problem::output_type;
    constexpr gemm_dims g = Problem::dims;
    constexpr cudaDataType_t scale = cuda_type<lt_scale_t<Problem>>();
    check_cublas(cublasLtMatmulDescCreate(&desc_, lt_compute_type<Problem>(), scale), "cublasLtMatmulDescCreate");

    // cuBLASLt's A is tenet's B: [k, n] row-major is [n, k] column-major (no
    // transpose); a column-major B is [k, n] column-major, transposed.
    const std::int32_t trans_a = g.b.column_major ? CUBLAS_OP_T : CUBLAS_OP_N;
    const std::int32_t trans_b = g.a.column_major ? CUBLAS_OP_T : CUBLAS_OP_N;
    set(CUBLASLT_MATMUL_DESC_TRANSA, trans_a, "cublasLtMatmulDescSetAttribute(TRANSA)");
    set(CUBLASLT_MATMUL_DESC_TRANSB, trans_b, "cublasLtMatmulDescSetAttribute(TRANSB)");
    a_ = g.b.column_major ? layout(cuda_type<T>(), g.k, g.n, g.b.ld, g.batch, g.b.batch_stride)
                          : layout(cuda_type<T>(), g.n, g.k, g.b.ld, g.batch, g.b.batch_stride);
    b_ = g.a.column_major ? layout(cuda_type<T>(), g.m, g.k, g.a.ld, g.batch, g.a.batch_stride)
                          : layout(cuda_type<T>(), g.k, g.m, g.a.ld, g.batch, g.a.batch_stride);
    d_ = layout(cuda_type<TD>(), g.n, g.m, g.d.ld, g.batch, g.d.batch_stride);

    constexpr lt_epilogue kind = Epilogue::kind;
    const std::uint32_t epilogue = lt_epilogue_value(kind);
    set(CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue, "cublasLtMatmulDescSetAttribute(EPILOGUE)");
    if constexpr (lt_uses_vector(kind)) {
        using V = typename Epilogue::vector_type;
        if constexpr (!std::is_same_v<V, TD>) {
            const std::int32_t type = cuda_type<V>();
            set(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, type, "cublasLtMatmulDescSetAttribute(BIAS_DATA_TYPE)");
        }
        sets_vector_ = true;
    }
    if constexpr (lt_uses_aux(kind)) {
        using X = typename Epilogue::aux_type;
        const std::int64_t ld = static_cast<std::int64_t>(Epilogue::aux_ld);
        set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, ld, "cublasLtMatmulDescSetAttribute(EPILOGUE_AUX_LD)");
        if constexpr (!std::is_same_v<X, i8> && !std::is_same_v<X, TD>) {
            const std::int32_t type = cuda_type<X>();
            set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, type, "cublasLtMatmulDescSetAttribute(EPILOGUE_AUX_DATA_TYPE)");
        }
        sets_aux_ = true;
    }
    // The heuristic reads the epilogue pointers' alignment off their values.
    set_pointers(p);

    check_cublas(cublasLtMatmulPreferenceCreate(&preference_), "cublasLtMatmulPreferenceCreate");
    const auto prefer = [&](cublasLtMatmulPreferenceAttributes_t attribute, const auto& value) {
        check_cublas(cublasLtMatmulPreferenceSetAttribute(preference_, attribute, &value, sizeof(value)),
                     "cublasLtMatmulPreferenceSetAttribute");
    };
    prefer(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, std::uint64_t{lt_workspace_bytes});
    const std::uint32_t align = alignment;
    prefer(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align);
    prefer(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align);
    prefer(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align);
    prefer(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align);

    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t status =
        cublasLtMatmulAlgoGetHeuristic(handle, desc_, a_, b_, d_, d_, preference_, 1, &result, &found);
    // An epilogue cuBLASLt rejects (it may say INVALID_VALUE for an attribute
    // combination it lacks) leaves supported_ false: the caller falls back.
    const bool declined = status == CUBLAS_STATUS_NOT_SUPPORTED ||
                          (status == CUBLAS_STATUS_INVALID_VALUE && kind != lt_epilogue::none);
    if (!declined) check_cublas(status, "cublasLtMatmulAlgoGetHeuristic");
    if (declined || found == 0 || result.state != CUBLAS_STATUS_SUCCESS) {
        ++lt_declined_plans();
        return;
    }
    algo_ = result.algo;
    needs_workspace_ = result.workspaceSize > 0;
    supported_ = true;
}

template <class Problem, class Epilogue>
bool lt_plan::run(cublasLtHandle_t handle, const lt_pointers& p, void* workspace, cudaStream_t stream,
                  lt_scaling scaling)
{
    using S = lt_scale_t<Problem>;
    const S alpha = static_cast<S>(scaling.alpha), beta = static_cast<S>(scaling.beta);
    set_pointers(p);
    // C is D (read only when beta != 0): cuBLASLt's A and B are tenet's B and A.
    const cublasStatus_t status = cublasLtMatmul(handle, desc_, &alpha, p.b, a_, p.a, b_, &beta, p.d, d_, p.d, d_,
                                                 &algo_, workspace, workspace ? lt_workspace_bytes : 0, stream);
    if (status == CUBLAS_STATUS_NOT_SUPPORTED) {
        supported_ = false;
        ++lt_declined_plans();
        return false;
    }
    check_cublas(status, "cublasLtMatmul");
    return true;
}

// The plans of one GEMM type, per device and alignment. The mutex also
// covers a call's pointer attributes and its enqueue: the descriptor is
// shared by threads.
template <class Problem, class Epilogue>
struct lt_plan_cache {
    std::mutex mutex;
    std::map<std::pair<int, unsigned>, std::unique_ptr<lt_plan>> plans;
};

template <class Problem, class Epilogue>
lt_plan_cache<Problem, Epilogue>& lt_plans()
{
    static lt_plan_cache<Problem, Epilogue> cache;
    return cache;
}

// One GEMM with its epilogue on the stream; false (nothing done) when
// cuBLASLt has no algorithm for it.
template <class Problem, class Epilogue>
bool lt_gemm(const lt_pointers& p, stream_ref stream, lt_scaling scaling = {})
{
    int device = 0;
    TENET_CUDA_CHECK(cudaGetDevice(&device));
    const unsigned alignment = lt_alignment(p);
    const cublasLtHandle_t handle = lt_handle(device);
    auto& cache = lt_plans<Problem, Epilogue>();
    std::lock_guard lock(cache.mutex);
    auto& plan = cache.plans[{device, alignment}];
    if (!plan) {
        auto built = std::make_unique<lt_plan>();
        built->template build<Problem, Epilogue>(handle, alignment, p);
        plan = std::move(built);
    }
    if (!plan->supported()) return false;
    void* workspace = plan->needs_workspace() ? lt_workspace(device, stream.get()) : nullptr;
    return plan->template run<Problem, Epilogue>(handle, p, workspace, stream.get(), scaling);
}

}  // namespace tenet::linalg::detail

#endif  // TENET_CUDA_COMPILER
