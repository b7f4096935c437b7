// copy_bytes<To, From>(to, from, bytes, stream): raw bytes between places,
// asynchronous on the stream (what tensor copies and checkpoint sections
// move through).
#pragma once

#include "cuda_check.hpp"
#include "place.hpp"
#include "stream.hpp"

#include <cstddef>
#include <cstring>

namespace tenet {

// Raw bytes into memory of place To from memory of place From (a
// checkpoint's sections, a mask): one memcpy when both are host memory, else
// one cudaMemcpyAsync on the stream.
template <class To, class From>
void copy_bytes(void* to, const void* from, std::size_t bytes, stream_ref stream)
{
    if constexpr (host_accessible_v<To> && host_accessible_v<From>)
        std::memcpy(to, from, bytes);
    else
        TENET_CUDA_CHECK(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDefault, stream.get()));
}

}  // namespace tenet
