// The ReLU bit mask: what a Linear layer's forward keeps for its backward
// when the activation is ReLU, in cuBLASLt's AUX format, so that the fused
// epilogues (RELU_AUX_BIAS forward, DRELU_BGRAD backward) and tenet's own
// passes (the host, and the device when cuBLASLt declines) read and write
// the same bits. For a result [M, N], row m holds round_up(N, 128) bits
// (cuBLASLt's AUX leading dimension must be a multiple of 128 bits); bit n
// of row m, set when the pre-activation is > 0, is bit n % 8 of byte
// m * row_bytes + n / 8.
//
//   relu_mask_pack<N, RowBytes>(pre)   an expression of the mask's bytes, to assign to them
//   relu_mask_read<M, N>(bytes)        relu'(pre) as an expression of shape [M, N]: 1 or 0
#pragma once

#include "../exec/aliasing.hpp"
#include "../expr/node.hpp"
#include "../memory/place.hpp"
#include "../numeric/types.hpp"
#include "../tensor/tensor.hpp"

#include <cstddef>

namespace tenet::linalg::detail {

constexpr std::size_t relu_mask_row_bits(std::size_t n) { return (n + 127) / 128 * 128; }
constexpr std::size_t relu_mask_row_bytes(std::size_t n) { return relu_mask_row_bits(n) / 8; }

// Byte i of the mask from the pre-activation (row-major [M, N]).
template <class Eval, std::size_t N, std::size_t RowBytes>
struct relu_mask_pack_eval : ::tenet::reads_evaluators<relu_mask_pack_eval<Eval, N, RowBytes>> {
    using value_type = i8;
    Eval pre;

    template <class Index>
    TENET_HD i8 at(Index i) const
    {
        const Index row = i / RowBytes, first = (i % RowBytes) * 8;
        unsigned bits = 0;
#if !TENET_DEVICE_PASS
        // On the host the byte's 8 values as one chunk (an f16 bias then
        // converts in a loop of its own, not per element).
        if constexpr (N % 8 == 0) {
            if (first >= N) return i8{0};  // the row's padding
            const auto values = pre.template chunk<8>(static_cast<Index>(row * N + first));
            for (unsigned b = 0; b != 8; ++b) bits |= unsigned{values[b] > 0} << b;
            return static_cast<i8>(bits);
        }
#endif
TENET_UNROLL
        for (unsigned b = 0; b != 8; ++b)
            if (first + b < N && pre.at(static_cast<Index>(row * N + first + b)) > 0) bits |= 1u << b;
        return static_cast<i8>(bits);  // the bit pattern (two's complement)
    }

    template <std::size_t K, class Index>
    TENET_HD ::tenet::vec<i8, K> chunk(Index i) const
    {
        return ::tenet::chunk_by_elements<K>(*this, i);
    }

    template <std::size_t K>
    bool aligned() const
    {
        return true;
    }

    static constexpr bool reads_at_own_index = false;  // 8 elements per byte written
    static constexpr std::size_t host_reads_per_element = 8;
    auto reads() const { return ::tenet::make_value_pack(pre); }

    static constexpr std::size_t smallest_element = Eval::smallest_element;
};

template <class E, std::size_t RowBytes>
struct relu_mask_pack_expr {
    static_assert(E::shape::rank == 2, "tenet: internal: a ReLU mask is made from a matrix");
    static constexpr std::size_t rows = E::shape::extents[0], cols = E::shape::extents[1];
    using shape = Shape<rows, RowBytes>;
    using value_type = i8;
    using place = typename E::place;
    E pre;

    template <class Context>
    auto prepare(Context& context) const
    {
        using eval = decltype(pre.prepare(context));
        return relu_mask_pack_eval<eval, cols, RowBytes>{{}, pre.prepare(context)};
    }
};

template <class E>
auto relu_mask_pack(E&& pre)
{
    using N = ::tenet::node_t<E>;
    return relu_mask_pack_expr<N, relu_mask_row_bytes(N::shape::extents[1])>{
        ::tenet::as_node(std::forward<E>(pre))};
}

// relu'(pre) read from the mask: 1 where the bit is set, else 0.
template <std::size_t M, std::size_t N>
struct relu_mask_read_eval {
    static constexpr std::size_t row_bytes = relu_mask_row_bytes(N);
    using value_type = f32;
    using bytes_leaf = ::tenet::leaf_eval<const i8, contiguous_layout<Shape<M, row_bytes>>>;
    bytes_leaf bytes;

    // Bit b of a mask byte as 1.0f or 0.0f: converted, not selected, since
    // g++ turns a select per bit into a branch per bit, mispredicted half
    // the time.
    TENET_HD static f32 bit(unsigned char byte, std::size_t b) { return static_cast<f32>((unsigned{byte} >> b) & 1u); }

    template <class Index>
    TENET_HD f32 at(Index i) const
    {
        const Index row = i / N, col = i % N;
        return bit(static_cast<unsigned char>(bytes.data[row * row_bytes + col / 8]), col % 8);
    }

    // Chunks of whole bytes within a row are expanded from the bytes
    // directly, so host loops walk in chunks (dz = dy * relu'(pre), and the
    // bias gradient, its sum over the batch, read vectors instead of
    // dividing each position into a row, a byte and a bit); any other chunk
    // element by element.
    template <std::size_t K>
    static constexpr ::tenet::internal::host_walk host_walk_for =
        K % 8 == 0 && N % K == 0 ? ::tenet::internal::host_walk::chunks : ::tenet::internal::host_walk::elements;

    template <std::size_t K, class Index>
    TENET_HD ::tenet::vec<f32, K> chunk(Index i) const
    {
        if constexpr (K % 8 == 0 && N % K == 0) {
            const Index row = i / N, col = i % N;
            if (col % K == 0) {
                const auto* row_bits = reinterpret_cast<const unsigned char*>(bytes.data) + row * row_bytes + col / 8;
                ::tenet::vec<f32, K> r;
TENET_UNROLL
                for (std::size_t k = 0; k < K; ++k) r[k] = bit(row_bits[k / 8], k % 8);
                return r;
            }
        }
        return ::tenet::chunk_by_elements<K>(*this, i);
    }

    template <std::size_t K>
    bool aligned() const
    {
        return true;
    }

    template <class F>
    void visit_leaves(F&& f, bool) const
    {
        f(bytes, false);
    }

    static constexpr std::size_t smallest_element = 1;
};

template <std::size_t M, std::size_t N, class Place>
struct relu_mask_read_expr {
    using shape = Shape<M, N>;
    using value_type = f32;
    using place = Place;
    const i8* bytes;

    template <class Context>
    relu_mask_read_eval<M, N> prepare(Context&) const
    {
        return {{bytes}};
    }
};

}  // namespace tenet::linalg::detail
