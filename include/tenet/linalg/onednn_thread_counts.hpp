// oneDNN fixes a primitive's thread count, and its split of the work, when
// it makes the primitive, so a primitive made under 2 threads runs 2 even
// when the caller has chosen 1 (a busy machine: thread_tuner). tenet's
// oneDNN plans (the host GEMM, the host convolution) therefore make a
// primitive per thread count they are called under, but results must not
// depend on the count: a count's own primitive runs only where it gives
// the bits of the reference (the plan's first) on the same random
// operands. Forward passes and data gradients split their outputs among
// threads and agree; where oneDNN splits a sum among threads (a
// convolution's weight gradient) the reference runs. A GEMM with a long
// inner dimension is cut into fixed slices instead (onednn_inner_slices.hpp).
//
//   onednn_random_bytes(bytes, type, seed)   values in [-1, 1) as the bytes
//                                            of f32 or bf16 (an f32's top half)
#pragma once

#include <oneapi/dnnl/dnnl.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace tenet::linalg::detail {

inline std::string onednn_random_bytes(std::size_t bytes, dnnl_data_type_t type, std::uint32_t seed)
{
    const std::size_t size = type == dnnl_bf16 ? 2 : 4;
    std::string out(bytes, '\0');
    std::uint32_t state = 2463534242u * seed;
    for (std::size_t i = 0; i + size <= bytes; i += size) {
        state ^= state << 13, state ^= state >> 17, state ^= state << 5;
        const float v = static_cast<float>(state >> 8) * 0x1p-23f - 1.0f;
        std::uint32_t bits;
        std::memcpy(&bits, &v, 4);
        if (size == 2) bits >>= 16;
        std::memcpy(out.data() + i, &bits, size);
    }
    return out;
}

}  // namespace tenet::linalg::detail

namespace tenet::internal {
using linalg::detail::onednn_random_bytes;
}
