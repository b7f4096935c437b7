// TensorView<T, Layout, Place>: a non-owning view of memory with a static
// layout -- a tensor's own view, a transposed / sliced / broadcast view, or
// memory from another library (make_view). Assigning to a view writes its
// elements; copying a view copies the handle.
#pragma once

#include "../memory/error.hpp"
#include "../memory/place.hpp"
#include "expression.hpp"
#include "leaf.hpp"

#include <array>
#include <string>
#include <type_traits>

namespace tenet {

template <class T, class L, class P = Device>
class TensorView {
public:
    using element_type = std::remove_const_t<T>;
    using value_type = compute_t<element_type>;
    using layout = L;
    using shape = typename L::shape;
    using place = P;
    static constexpr std::size_t rank = shape::rank;

    static_assert(element<element_type>, "tenet: TensorView<T, ...>: T is not a tenet element type");

    constexpr explicit TensorView(T* data) : data_(data) {}
    TensorView(const TensorView&) = default;

    // Assignment writes elements (of any expression, or a scalar broadcast).
    const TensorView& operator=(const TensorView& source) const
    {
        assign(*this, source);
        return *this;
    }
    template <class E>
        requires(detail::tensor::expression_like<E> || scalar_value<E>)
    const TensorView& operator=(const E& source) const
    {
        assign(*this, source);
        return *this;
    }

    T* data() const noexcept { return data_; }

    template <class Context>
    detail::tensor::leaf_eval<T, L> prepare(Context&) const
    {
        return {data_};
    }

    // Element access, for host memory: t(i, j, ...).
    template <class... I>
        requires(sizeof...(I) == rank && (std::is_integral_v<I> && ...))
    T& operator()(I... index) const
    {
        static_assert(host_accessible_v<P>,
                      "tenet: element access t(i, ...) needs a Host or HostPinned tensor; "
                      "copy device tensors to the host first");
        const std::array<std::size_t, rank> at{static_cast<std::size_t>(index)...};
        std::size_t offset = L::offset;
        for (std::size_t d = 0; d != rank; ++d) {
            if (at[d] >= L::extents[d])
                throw index_error("tenet: index " + std::to_string(at[d]) + " out of range for dimension " +
                                  std::to_string(d) + " of " + shape_name<shape>::text().chars);
            offset += at[d] * L::strides[d];
        }
        return data_[offset];
    }

private:
    T* data_;
};

// A view of memory owned elsewhere (another library's pointer), contiguous
// and row-major.
template <class Shape, class P = Device, class T>
TensorView<T, contiguous_layout<Shape>, P> make_view(T* data)
{
    return TensorView<T, contiguous_layout<Shape>, P>(data);
}

}  // namespace tenet
