// The host GEMM on oneDNN's matmul primitive, f32 or bf16 operands into f32
// (Debian's libdnnl-dev; kernels JIT-compiled for the machine's widest ISA,
// run on OpenMP). bf16 pairs are multiplied directly on a CPU with
// AVX512_BF16 (about 2x its f32 rate on the MLP's shapes, bench/RESULTS.md),
// where converting them to f32 first would cost a pass and the f32 rate.
// Products of bf16 values are exact in f32 and the sums accumulate in f32:
// the same numbers as the f32 GEMM of the converted operands, up to the
// order of the sums.
//
// One plan per problem (its shapes and layouts are compile-time), built on
// first use: the primitive reads tenet's memory where it is (row-major or
// column-major with any leading dimension), a batch of GEMMs (attention's
// heads) in one call. Calls from several threads are safe: each builds its
// own memory objects, stream and scratchpad around the shared primitive
// (oneDNN's own scratchpad is one per process in Debian's build: two
// threads running primitives at once wrote each other's partial sums). A call under
// another thread count runs a primitive made for that count where its
// results are the same bits (onednn_gemm::route); a long inner dimension
// never gets here (onednn_inner_slices.hpp). The C API, as
// conv/onednn_conv2d.hpp explains.
#pragma once

#include "../exec/host_threads.hpp"
#include "../memory/error.hpp"
#include "../numeric/types.hpp"
#include "gemm_layout.hpp"
#include "onednn_handle.hpp"
#include "onednn_thread_counts.hpp"

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>

#include <cstddef>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

namespace tenet::linalg::detail {

inline void onednn_check(dnnl_status_t status, const char* what)
{
    if (status != dnnl_success)
        throw error(std::string("tenet: oneDNN failed to ") + what + " for the host matmul: " + dnnl_status2str(status));
}

// The leading dimension oneDNN is given for a rows x cols operand: a
// column-major one is the transpose of the row-major matrix at the same
// address. oneDNN wants ld >= the stored matrix's columns even when it has
// one row, where tenet's ld may be anything (any ld reads the same elements).
constexpr dnnl_dim_t onednn_ld(gemm_operand o, std::size_t rows, std::size_t cols)
{
    const std::size_t stored_rows = o.column_major ? cols : rows, stored_cols = o.column_major ? rows : cols;
    return static_cast<dnnl_dim_t>(stored_rows == 1 && o.ld < stored_cols ? stored_cols : o.ld);
}

// One GEMM operand, rows x cols per batch, as oneDNN describes it: 3-D with
// the batch leading when there are several (batch 1 with stride 0: shared
// by every batch, which oneDNN broadcasts).
inline dnnl_memory_desc_t onednn_matrix(std::size_t batch, std::size_t rows, std::size_t cols, gemm_operand o,
                                        dnnl_data_type_t type)
{
    const dnnl_dim_t ld = onednn_ld(o, rows, cols), r = static_cast<dnnl_dim_t>(rows), c = static_cast<dnnl_dim_t>(cols);
    const dnnl_dim_t n = o.batch_stride == 0 ? 1 : static_cast<dnnl_dim_t>(batch);
    const dnnl_dim_t step = o.batch_stride == 0 ? r * c : static_cast<dnnl_dim_t>(o.batch_stride);
    const dnnl_dims_t dims = {n, r, c}, row_major = {step, ld, 1}, column_major = {step, 1, ld};
    const int rank = batch > 1 ? 3 : 2;  // 2-D: the last two of each
    dnnl_memory_desc_t md;
    onednn_check(dnnl_memory_desc_init_by_strides(&md, rank, dims + 3 - rank, type,
                                                  (o.column_major ? column_major : row_major) + 3 - rank),
                 "describe a matrix");
    return md;
}

// The calling thread's scratchpad for its oneDNN GEMMs (they run one at a
// time on a thread), at least `bytes` long.
inline void* thread_scratchpad(std::size_t bytes)
{
    thread_local std::vector<std::byte> scratch;
    if (scratch.size() < bytes) scratch.resize(bytes);
    return scratch.data();
}

template <class T>
inline constexpr dnnl_data_type_t onednn_type = std::is_same_v<T, bf16> ? dnnl_bf16 : dnnl_f32;

template <gemm_dims G, class In>
class onednn_gemm {
    static_assert(std::is_same_v<In, bf16> || std::is_same_v<In, f32>, "tenet: internal: oneDNN GEMMs read bf16 or f32");

public:
    // d = a b for every batch, in one call.
    static void run(const In* a, const In* b, f32* d)
    {
        onednn_gemm& plan = instance();
        plan.execute(plan.route_for(host_threads()), a, b, d);
    }

private:
    // The primitive a thread count runs (onednn_thread_counts.hpp): the
    // first use's is the reference; a count met later runs its own where
    // that gives the reference's bits. A primitive runs under the count it
    // was made under (oneDNN's matmul also reads the calling count).
    struct route {
        int threads;
        dnnl_primitive_t matmul;
        int made_under;
        dnnl_memory_desc_t scratchpad;
    };

    struct made {
        dnnl_primitive_handle matmul;
        dnnl_memory_desc_t scratchpad;
    };

    onednn_gemm()
        : a_(onednn_matrix(G.batch, G.m, G.k, G.a, onednn_type<In>)),
          b_(onednn_matrix(G.batch, G.k, G.n, G.b, onednn_type<In>)),
          d_(onednn_matrix(G.batch, G.m, G.n, G.d, dnnl_f32))
    {
        dnnl_engine_t engine;
        onednn_check(dnnl_engine_create(&engine, dnnl_cpu, 0), "create an engine");
        engine_.reset(engine);
        made reference = make_matmul();
        routes_.push_back({host_threads(), reference.matmul.get(), host_threads(), reference.scratchpad});
        own_.push_back(std::move(reference.matmul));
    }

    static onednn_gemm& instance()
    {
        static onednn_gemm plan;
        return plan;
    }

    // A matmul primitive made under the calling thread's count, with the
    // scratchpad it wants from each call.
    made make_matmul() const
    {
        dnnl_matmul_desc_t desc;
        onednn_check(dnnl_matmul_desc_init(&desc, &a_, &b_, nullptr, &d_), "describe a matmul");
        dnnl_primitive_attr_t raw_attr;
        onednn_check(dnnl_primitive_attr_create(&raw_attr), "make attributes");
        const dnnl_attr_handle attr(raw_attr);
        onednn_check(dnnl_primitive_attr_set_scratchpad_mode(raw_attr, dnnl_scratchpad_mode_user),
                     "ask for a scratchpad of its own");
        dnnl_primitive_desc_t pd;
        onednn_check(dnnl_primitive_desc_create(&pd, &desc, raw_attr, engine_.get(), nullptr), "plan a matmul");
        const dnnl_pd_handle pd_handle(pd);
        dnnl_primitive_t matmul;
        onednn_check(dnnl_primitive_create(&matmul, pd), "create a matmul");
        return {dnnl_primitive_handle(matmul), *dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0)};
    }

    route route_for(int threads)
    {
        const std::lock_guard lock(mutex_);
        for (const route& r : routes_)
            if (r.threads == threads) return r;
        const route reference = routes_.front();
        made mine = make_matmul();
        const std::string a = onednn_random_bytes(dnnl_memory_desc_get_size(&a_), onednn_type<In>, 1),
                          b = onednn_random_bytes(dnnl_memory_desc_get_size(&b_), onednn_type<In>, 2);
        std::string want(dnnl_memory_desc_get_size(&d_), '\0'), got = want;
        auto in = [](const std::string& s) { return reinterpret_cast<const In*>(s.data()); };
        execute(reference, in(a), in(b), reinterpret_cast<f32*>(want.data()));
        const route own{threads, mine.matmul.get(), threads, mine.scratchpad};
        execute(own, in(a), in(b), reinterpret_cast<f32*>(got.data()));
        if (got == want) own_.push_back(std::move(mine.matmul));
        routes_.push_back(got == want ? own : route{threads, reference.matmul, reference.made_under, reference.scratchpad});
        return routes_.back();
    }

    // Safe from several threads: each call builds its own memory objects,
    // stream and scratchpad (the calling thread's) around the shared primitive.
    void execute(const route& r, const In* a, const In* b, f32* d) const
    {
        const host_threads_scope count(r.made_under);
        dnnl_stream_t raw_stream;
        onednn_check(dnnl_stream_create(&raw_stream, engine_.get(), dnnl_stream_default_flags), "create a stream");
        const dnnl_stream_handle stream(raw_stream);
        const dnnl_memory_handle src = bind(a_, a), weights = bind(b_, b), dst = bind(d_, d),
                                 pad = bind(r.scratchpad, thread_scratchpad(dnnl_memory_desc_get_size(&r.scratchpad)));
        const dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, src.get()},
                                        {DNNL_ARG_WEIGHTS, weights.get()},
                                        {DNNL_ARG_DST, dst.get()},
                                        {DNNL_ARG_SCRATCHPAD, pad.get()}};
        onednn_check(dnnl_primitive_execute(r.matmul, stream.get(), 4, args), "run");
        onednn_check(dnnl_stream_wait(stream.get()), "wait for a stream");
    }

    dnnl_memory_handle bind(const dnnl_memory_desc_t& md, const void* data) const
    {
        dnnl_memory_t memory;
        onednn_check(dnnl_memory_create(&memory, &md, engine_.get(), const_cast<void*>(data)), "wrap a matrix");
        return dnnl_memory_handle(memory);
    }

    dnnl_memory_desc_t a_, b_, d_;
    dnnl_engine_handle engine_;
    std::mutex mutex_;                         // guards the two below
    std::vector<dnnl_primitive_handle> own_;   // [0]: the reference
    std::vector<route> routes_;
};

}  // namespace tenet::linalg::detail
