// The static geometry of a square window sliding over NHWC images
// (Shape<N, H, W, C>): convolution and pooling read their inputs through it.
// A window has Kernel taps Dilation apart along each spatial axis, moves
// Stride at a time, over an image padded by Padding on every side; output
// extent = (extent + 2 Padding - (Dilation (Kernel - 1) + 1)) / Stride + 1,
// as PyTorch computes it (floor, no ceil mode).
#pragma once

#include "../diagnostic.hpp"
#include "../shape/layout.hpp"

#include <cstddef>
#include <cstdint>

namespace tenet::conv {

template <class In, std::size_t Kernel, std::size_t Stride, std::size_t Padding, std::size_t Dilation = 1>
struct window_geometry {
    static_assert(In::rank == 4, "tenet: internal: window_geometry takes an NHWC shape");
    static constexpr std::size_t batch = In::extents[0], height = In::extents[1], width = In::extents[2],
                                 channels = In::extents[3];
    static constexpr std::size_t kernel = Kernel, stride = Stride, padding = Padding, dilation = Dilation;
    static constexpr std::size_t taps = Kernel * Kernel;
    // The extent one window covers along an axis.
    static constexpr std::size_t span = Dilation * (Kernel - 1) + 1;
    static constexpr bool fits = height + 2 * Padding >= span && width + 2 * Padding >= span;
    // (1 where the window does not fit: the caller's diagnostic is the only error)
    static constexpr std::size_t out_height = fits ? (height + 2 * Padding - span) / Stride + 1 : 1;
    static constexpr std::size_t out_width = fits ? (width + 2 * Padding - span) / Stride + 1 : 1;
    // Output pixels over the batch: the rows of a convolution's GEMM.
    static constexpr std::size_t positions = batch * out_height * out_width;
    template <std::size_t OutChannels>
    using output_shape = Shape<batch, out_height, out_width, OutChannels>;
    using input_shape = In;
    // Offsets into the input fit this type.
    using input_index = index_for<In::numel>;

    // The input row (or column) that tap t of output row o reads; outside
    // [0, extent) it reads padding.
    template <class Index>
    TENET_HD static constexpr std::int64_t source(Index out, std::size_t tap)
    {
        return static_cast<std::int64_t>(out * Stride + tap * Dilation) - static_cast<std::int64_t>(Padding);
    }

    // The output row whose tap t reads input row `in`, or -1 when none does.
    template <std::size_t OutExtent, class Index>
    TENET_HD static constexpr std::int64_t reader(Index in, std::size_t tap)
    {
        const std::int64_t shifted =
            static_cast<std::int64_t>(in) + static_cast<std::int64_t>(Padding) - static_cast<std::int64_t>(tap * Dilation);
        if (shifted < 0 || shifted % static_cast<std::int64_t>(Stride) != 0) return -1;
        const std::int64_t out = shifted / static_cast<std::int64_t>(Stride);
        return out < static_cast<std::int64_t>(OutExtent) ? out : -1;
    }
};

}  // namespace tenet::conv
