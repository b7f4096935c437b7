// The PTX harness's own proof: a trivial 16-byte-vectorised kernel, whose
// loads, stores, kernel count and spills are known.
#include <cuda_runtime.h>

// PTX-CHECK: kernels=1
// PTX-CHECK: kernel=trivial_scale ld.global=1 ld.global.nc=1 ld.global.v4=1 st.global=1 st.global.v4=1 spills=0 stack=0
extern "C" __global__ void trivial_scale(const float4* __restrict__ in, float4* __restrict__ out, float s, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        const float4 v = in[i];
        out[i] = make_float4(v.x * s, v.y * s, v.z * s, v.w * s);
    }
}
