// What one forward and one backward of a layer cost, known at compile time
// from its shapes: floating-point operations and bytes moved. The per-layer
// profile (profile/) divides them by measured times for GFLOP/s, GB/s and
// the fraction of the machine's peak.
//
// FLOPs count the GEMMs and convolutions alone, 2 per multiply-add, as
// PyTorch's flop counter does (torch.utils.flop_counter: mm, addmm, bmm,
// convolution); elementwise work, normalisations and softmax are counted
// as bytes only, and are judged by bandwidth. Bytes count each tensor an
// operation reads or writes once (a GEMM reads its operands and writes its
// result), with the parameters' gradients in the gradient type.
//
// A layer declares `static constexpr layer_cost cost = ...;`; containers sum
// their children. A layer that declares none is taken as elementwise: no
// FLOPs; its forward reads its input and writes its output, its backward
// reads the output gradient and the input and writes the input gradient.
// The backward's weight-gradient share is kept apart, so that nn::Frozen,
// which skips it, can take it off.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace tenet::nn {

struct layer_cost {
    std::uint64_t forward_flops = 0, forward_bytes = 0;
    std::uint64_t backward_flops = 0, backward_bytes = 0;  // the weight gradients' share included
    std::uint64_t weight_gradient_flops = 0, weight_gradient_bytes = 0;

    friend constexpr layer_cost operator+(const layer_cost& a, const layer_cost& b)
    {
        return {a.forward_flops + b.forward_flops,
                a.forward_bytes + b.forward_bytes,
                a.backward_flops + b.backward_flops,
                a.backward_bytes + b.backward_bytes,
                a.weight_gradient_flops + b.weight_gradient_flops,
                a.weight_gradient_bytes + b.weight_gradient_bytes};
    }
    friend constexpr bool operator==(const layer_cost&, const layer_cost&) = default;

    // The backward without the input gradient (a model's first layer's).
    constexpr layer_cost weight_gradient_only() const
    {
        return {forward_flops, forward_bytes, weight_gradient_flops, weight_gradient_bytes, weight_gradient_flops,
                weight_gradient_bytes};
    }

    // The backward without the weight gradients (a frozen layer's).
    constexpr layer_cost input_gradient_only() const
    {
        return {forward_flops, forward_bytes, backward_flops - weight_gradient_flops,
                backward_bytes - weight_gradient_bytes, 0, 0};
    }
};

// y = x W^T + b over M rows: x [M, In], W [Out, In], in T; gradients of W and
// b in G. forward: one GEMM; backward: dx = dy W and dW = dy^T x, db = sum dy.
template <class T, class G>
constexpr layer_cost linear_cost(std::uint64_t m, std::uint64_t in, std::uint64_t out, bool bias)
{
    const std::uint64_t gemm = 2 * m * in * out, t = sizeof(T), g = sizeof(G);
    const std::uint64_t weight_gradient_bytes = t * (m * out + m * in) + g * (in * out + (bias ? out : 0));
    return {gemm,
            t * (m * in + in * out + (bias ? out : 0) + m * out),
            2 * gemm,
            t * (m * out + in * out + m * in) + weight_gradient_bytes,
            gemm,
            weight_gradient_bytes};
}

// An elementwise layer of n inputs and outputs in T (the default).
template <class T>
constexpr layer_cost elementwise_cost(std::uint64_t inputs, std::uint64_t outputs)
{
    return {0, sizeof(T) * (inputs + outputs), 0, sizeof(T) * (outputs + inputs + inputs), 0, 0};
}

// L's cost: L::cost where declared, else elementwise over In -> Out (the
// shapes its container runs it on; by default L's own input_shape and
// output_shape, which the layer protocol does not require: without them,
// and without In and Out, nothing is counted).
template <class L, class T, class In = void, class Out = In>
constexpr layer_cost cost_of()
{
    if constexpr (requires { L::cost; }) return L::cost;
    else if constexpr (!std::is_void_v<In>) return elementwise_cost<T>(In::numel, Out::numel);
    else if constexpr (requires { L::input_shape::numel + L::output_shape::numel; })
        return elementwise_cost<T>(L::input_shape::numel, L::output_shape::numel);
    else return layer_cost{};
}

}  // namespace tenet::nn
