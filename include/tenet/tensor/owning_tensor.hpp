// Tensor<T, Shape, Place>: owning, contiguous, row-major storage of a static
// shape. Movable; never copied implicitly (assign or tenet::copy instead).
// Construction allocates (uninitialised) on the current stream; assigning an
// expression evaluates it in one kernel or one loop nest.
#pragma once

#include "../memory/buffer.hpp"
#include "../memory/stream.hpp"
#include "tensor_view.hpp"

namespace tenet {

template <element T, shape_type S, memory_place P = Device>
class Tensor {
public:
    using element_type = T;
    using value_type = compute_t<T>;
    using shape = S;
    using place = P;
    using layout = contiguous_layout<S>;
    static constexpr std::size_t rank = S::rank;
    static constexpr std::size_t numel = S::numel;
    static constexpr std::size_t bytes = numel * sizeof(T);

    Tensor() : Tensor(current_stream()) {}
    explicit Tensor(stream_ref s) : storage_(numel, s) {}

    // Tensor<f32, Shape<N>> y = x * 2 + 1;
    template <class E>
        requires(expression<E> || scalar_value<E>)
    Tensor(const E& source) : Tensor()  // NOLINT: converting on purpose, as Eigen's
    {
        view() = source;
    }

    Tensor(Tensor&&) noexcept = default;
    Tensor& operator=(Tensor&&) noexcept = default;
    Tensor(const Tensor&) = delete;

    Tensor& operator=(const Tensor& source)
    {
        view() = source.view();
        return *this;
    }
    template <class E>
        requires(detail::tensor::expression_like<E> || scalar_value<E>)
    Tensor& operator=(const E& source)
    {
        view() = source;
        return *this;
    }

    T* data() noexcept { return storage_.data(); }
    const T* data() const noexcept { return storage_.data(); }
    stream_ref stream() const noexcept { return storage_.stream(); }

    TensorView<T, layout, P> view() noexcept { return TensorView<T, layout, P>(data()); }
    TensorView<const T, layout, P> view() const noexcept { return TensorView<const T, layout, P>(data()); }

    template <class Context>
    detail::tensor::leaf_eval<const T, layout> prepare(Context&) const
    {
        return {data()};
    }

    template <class... I>
    T& operator()(I... index)
    {
        return view()(index...);
    }
    template <class... I>
    const T& operator()(I... index) const
    {
        return view()(index...);
    }

private:
    buffer<T, P> storage_;
};

template <class T>
struct is_tensor : std::false_type {};
template <class T, class S, class P>
struct is_tensor<Tensor<T, S, P>> : std::true_type {};

template <class T>
struct is_tensor_view : std::false_type {};
template <class T, class L, class P>
struct is_tensor_view<TensorView<T, L, P>> : std::true_type {};

}  // namespace tenet
