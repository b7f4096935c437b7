// tenet::copy(dst, src[, stream]): values between places, asynchronous on the
// stream. Contiguous tensors move as one cudaMemcpyAsync (host to host: one
// memcpy); within one place any layouts copy by assignment. Reading a host
// destination of a device-to-host copy needs the stream synchronised first
// (tenet never synchronises behind your back).
#pragma once

#include "../memory/copy_bytes.hpp"
#include "tensor.hpp"

#include <type_traits>

namespace tenet {
namespace detail::tensor {

template <class X>
auto as_view(X& x)
{
    if constexpr (is_tensor<std::remove_const_t<X>>::value) return x.view();
    else return x;
}

}  // namespace detail::tensor

template <class Dst, class Src>
void copy(Dst&& destination, const Src& source, stream_ref stream = current_stream())
{
    auto dst = detail::tensor::as_view(destination);
    auto src = detail::tensor::as_view(source);
    using D = decltype(dst);
    using S = decltype(src);
    static_assert(std::is_same_v<typename D::element_type, typename S::element_type>,
                  "tenet: copy: the element types differ (convert with an assignment instead)");
    static_assert(std::is_same_v<typename D::shape, typename S::shape>, "tenet: copy: the shapes differ");
    constexpr bool contiguous =
        index_map<typename D::layout>::contiguous && index_map<typename S::layout>::contiguous;
    constexpr bool same_backend =
        std::is_same_v<compute_place_t<typename D::place>, compute_place_t<typename S::place>>;
    static_assert(contiguous || same_backend,
                  "tenet: copy between places needs contiguous tensors; copy into a contiguous tensor "
                  "in the same place first");
    if constexpr (contiguous) {
        auto* to = dst.data() + D::layout::offset;
        const auto* from = src.data() + S::layout::offset;
        constexpr std::size_t bytes = D::shape::numel * sizeof(typename D::element_type);
        copy_bytes<typename D::place, typename S::place>(to, from, bytes, stream);
    } else if constexpr (same_backend) {
        stream_scope on(stream);
        dst = src;
    }
}

}  // namespace tenet

namespace tenet {
using detail::tensor::as_view;
}  // namespace tenet
