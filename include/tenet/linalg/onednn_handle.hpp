// Ownership of oneDNN's C handles (engines, streams, primitives, memory):
// a unique_ptr that calls the handle's destroy function. Shared by the host
// GEMM (linalg/) and, through tenet::internal, the host convolution (conv/).
#pragma once

#include <oneapi/dnnl/dnnl.h>

#include <memory>
#include <type_traits>

namespace tenet::linalg::detail {

template <class H, dnnl_status_t (*Destroy)(H)>
struct dnnl_destroy {
    void operator()(H h) const noexcept { Destroy(h); }
};

template <class H, dnnl_status_t (*Destroy)(H)>
using dnnl_handle = std::unique_ptr<std::remove_pointer_t<H>, dnnl_destroy<H, Destroy>>;

using dnnl_engine_handle = dnnl_handle<dnnl_engine_t, dnnl_engine_destroy>;
using dnnl_stream_handle = dnnl_handle<dnnl_stream_t, dnnl_stream_destroy>;
using dnnl_pd_handle = dnnl_handle<dnnl_primitive_desc_t, dnnl_primitive_desc_destroy>;
using dnnl_primitive_handle = dnnl_handle<dnnl_primitive_t, dnnl_primitive_destroy>;
using dnnl_memory_handle = dnnl_handle<dnnl_memory_t, dnnl_memory_destroy>;
using dnnl_attr_handle = dnnl_handle<dnnl_primitive_attr_t, dnnl_primitive_attr_destroy>;
using dnnl_post_ops_handle = dnnl_handle<dnnl_post_ops_t, dnnl_post_ops_destroy>;

}  // namespace tenet::linalg::detail

namespace tenet::internal {
using linalg::detail::dnnl_attr_handle;
using linalg::detail::dnnl_engine_handle;
using linalg::detail::dnnl_memory_handle;
using linalg::detail::dnnl_pd_handle;
using linalg::detail::dnnl_post_ops_handle;
using linalg::detail::dnnl_primitive_handle;
using linalg::detail::dnnl_stream_handle;
}  // namespace tenet::internal
