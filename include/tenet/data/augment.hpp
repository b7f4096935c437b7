// data::augment<H, W, C>(pixels, options, seed, step): raw 8-bit images made
// into training inputs where they lie -- randomly cropped from a zero-padded
// image, flipped left to right, normalised -- as one fusable expression:
// assigned to a tensor it is one kernel on the device, one loop on the host,
// the same __host__ __device__ code on both.
//
//   buffer<std::uint8_t, Device> raw(Batch * 784, s);  // copied from the host
//   x = data::augment<28, 28, 1>(data::pixel_batch<Shape<Batch, 784>, Device>{raw.data()},
//                                {.pad = 2, .flip = true}, seed, step);
//
// Element (b, y, x, c) of image b, whose draws are (dy, dx, flip):
//   xs    = flip ? W - 1 - x : x
//   p     = raw[b, y + dy - pad, xs + dx - pad, c], or 0 outside the image
//   value = (p / 255 - mean[c]) / std[c], in f32; the assignment rounds it
// which is torchvision's RandomCrop(padding=pad) (fill 0, on raw pixels),
// RandomHorizontalFlip, ToTensor and Normalize in that order: padding
// becomes (0 - mean) / std, not 0.
//
// The draws of image b, with image = first_image + b, are one Philox4x32-10
// block (expr/random.hpp):
//   w    = philox4x32_10(counter {image, image >> 32, step, step >> 32},
//                        key {seed, (seed >> 32) ^ 0x4155474D})   ("AUGM")
//   dy   = (w[0] * (2 pad + 1)) >> 32   (64-bit product: uniform in [0, 2 pad]
//   dx   = (w[1] * (2 pad + 1)) >> 32    up to a bias below 2^-28)
//   flip = options.flip && w[2] < 2^31                     (w[3] is unused)
// so they are a pure function of (seed, step, image): the same on host and
// device, in any order, however a step's batch is cut into views (pass each
// view's first_image). The key's tag keeps them apart from random_uniform
// or bernoulli drawn with the same seed and step.
#pragma once

#include "../expr/exact_math.hpp"
#include "../expr/generator.hpp"
#include "../expr/random.hpp"
#include "fashion_mnist.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace tenet::data {

// Raw 8-bit pixels of a batch in memory of Place, contiguous and row-major:
// S is [Batch, H, W, C] (NHWC) or [Batch, H * W * C] (one row per image).
// A view: the memory is owned elsewhere (a buffer, a loader's slot).
template <shape_type S, memory_place Place = Device>
struct pixel_batch {
    const std::uint8_t* data = nullptr;
};

namespace detail {

template <std::size_t C>
using per_channel = std::array<f32, C>;

template <std::size_t C>
constexpr per_channel<C> every_channel(f32 value)
{
    per_channel<C> values{};
    values.fill(value);
    return values;
}

}  // namespace detail

// What augment does; the defaults (no padding, no flip) normalise only: the
// evaluation mode. mean and std default to Fashion-MNIST's, as
// normalize_pixels's do.
template <std::size_t C = 1>
struct augment_options {
    unsigned pad = 0;  // crop offsets in [0, 2 pad] on each axis; at most H and W
    bool flip = false;  // left-right, with probability 1/2
    detail::per_channel<C> mean = detail::every_channel<C>(fashion_mnist_mean);
    detail::per_channel<C> std = detail::every_channel<C>(fashion_mnist_std);
};

namespace detail {

inline constexpr std::uint32_t augment_key_tag = 0x4155474Du;  // "AUGM"

struct image_draws {
    std::uint32_t dy = 0, dx = 0;
    bool flip = false;
};

// One image's draws (see the top of this file).
TENET_HD inline image_draws draw_image(std::uint64_t seed, std::uint64_t step, std::uint64_t image, unsigned pad,
                                       bool flip)
{
    const internal::philox_block w = internal::philox4x32_10(
        {static_cast<std::uint32_t>(image), static_cast<std::uint32_t>(image >> 32),
         static_cast<std::uint32_t>(step), static_cast<std::uint32_t>(step >> 32)},
        {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32) ^ augment_key_tag});
    const std::uint64_t offsets = 2 * std::uint64_t{pad} + 1;
    return {static_cast<std::uint32_t>(w[0] * offsets >> 32), static_cast<std::uint32_t>(w[1] * offsets >> 32),
            flip && w[2] < 0x80000000u};
}

template <std::size_t H, std::size_t W, std::size_t C>
struct augment_generator {
    using value_type = f32;
    const std::uint8_t* pixels;
    std::uint64_t seed, step, first_image;
    augment_options<C> options;

    TENET_HD f32 operator()(std::uint64_t i) const
    {
        constexpr std::uint64_t image_size = H * W * C;
        const std::uint64_t b = i / image_size, r = i % image_size;
        const std::uint64_t y = r / (W * C), x = r / C % W, c = r % C;
        const bool random = options.pad != 0 || options.flip;  // evaluation batches skip the draws
        const image_draws d =
            random ? draw_image(seed, step, first_image + b, options.pad, options.flip) : image_draws{};
        // Unsigned: a row or column above or left of the image wraps past H or W.
        const std::uint64_t sy = y + d.dy - options.pad;
        const std::uint64_t sx = (d.flip ? W - 1 - x : x) + d.dx - options.pad;
        const f32 p = sy < H && sx < W ? static_cast<f32>(pixels[b * image_size + (sy * W + sx) * C + c]) : 0.0f;
        // exact: one rounding per operation, as normalize_pixels, on host and device alike
        return exact::div(exact::add(exact::div(p, 255.0f), -options.mean[c]), options.std[c]);
    }
};

template <class S, std::size_t H, std::size_t W, std::size_t C>
inline constexpr bool holds_images =
    H > 0 && W > 0 && C > 0 &&
    ((S::rank == 4 && S::extents[1] == H && S::extents[2] == W && S::extents[3] == C) ||
     (S::rank == 2 && S::extents[1] == H * W * C));

template <class S, std::size_t H, std::size_t W, std::size_t C>
struct data_augment_needs_images_of_shape_H_W_C {
    static constexpr auto text()
    {
        return fixed_string("tenet: data::augment<") + decimal<H>() + fixed_string(", ") + decimal<W>() +
               fixed_string(", ") + decimal<C>() + fixed_string(">: pixels of shape ") + shape_name<S>::text() +
               fixed_string(" are not [Batch, ") + decimal<H>() + fixed_string(", ") + decimal<W>() +
               fixed_string(", ") + decimal<C>() + fixed_string("] nor [Batch, ") + decimal<H * W * C>() +
               fixed_string("]");
    }
};

}  // namespace detail

// The batch cropped, flipped and normalised as options say, an f32
// expression of the pixels' shape in their place. seed and step pick the
// draws; first_image is the index of the batch's first image in the step's
// (a part of a larger batch, a data-parallel rank's share). Throws
// tenet::error for pixels without memory or a pad beyond H or W.
template <std::size_t H, std::size_t W, std::size_t C, class S, class Place>
auto augment(pixel_batch<S, Place> pixels, const augment_options<C>& options = {}, std::uint64_t seed = 0,
             std::uint64_t step = 0, std::uint64_t first_image = 0)
{
    static_assert(diagnose<detail::holds_images<S, H, W, C>, detail::data_augment_needs_images_of_shape_H_W_C<S, H, W, C>>::value);
    if (pixels.data == nullptr) throw error("tenet: data::augment: the pixel batch has no memory (a null pointer)");
    if (options.pad > H || options.pad > W)
        throw error("tenet: data::augment: pad " + std::to_string(options.pad) + " exceeds the " + std::to_string(H) +
                    " x " + std::to_string(W) + " image (at most " + std::to_string(H < W ? H : W) + ")");
    return internal::generator_expr<detail::augment_generator<H, W, C>, S, Place>{
        {pixels.data, seed, step, first_image, options}};
}

}  // namespace tenet::data
