// A kernel that must spill when held to 24 registers (the harness's negative
// test: ptx_check has to notice the spills and fail).
#include <cuda_runtime.h>

// PTX-CHECK: kernel=register_hungry spills=0
extern "C" __global__ void __maxnreg__(24)
    register_hungry(const float* __restrict__ in, float* __restrict__ out)
{
    float acc[48];
#pragma unroll
    for (int k = 0; k < 48; ++k) acc[k] = in[threadIdx.x + k * 1024];
    float total = 0;
#pragma unroll
    for (int r = 0; r < 8; ++r)
#pragma unroll
        for (int k = 0; k < 48; ++k) total += acc[k] * acc[(k * 7 + r) % 48];
    out[threadIdx.x] = total;
}
