// Uses tenet through add_subdirectory in a CUDA project: converts on the GPU
// when there is one, and checks the device agrees with the host.
#include <tenet/tenet.hpp>

#include <cstdio>

__global__ void to_f16(float x, tenet::f16* out) { *out = tenet::convert<tenet::f16>(x); }

int main()
{
    const tenet::f16 host = tenet::convert<tenet::f16>(1.0f / 3.0f);
    std::printf("tenet %s (add_subdirectory, nvcc): 1/3 as f16 on the host reads back as %.9g\n",
                TENET_VERSION_STRING, tenet::convert<float>(host));
    if (!tenet::has_device()) {
        std::printf("no CUDA device: the device conversion was compiled but not run\n");
        return 0;
    }
    tenet::f16* out = nullptr;
    TENET_CUDA_CHECK(cudaMalloc(&out, sizeof *out));
    to_f16<<<1, 1>>>(1.0f / 3.0f, out);
    TENET_CUDA_CHECK(cudaGetLastError());
    tenet::f16 device;
    TENET_CUDA_CHECK(cudaMemcpy(&device, out, sizeof device, cudaMemcpyDeviceToHost));
    TENET_CUDA_CHECK(cudaFree(out));
    std::printf("on the GPU: %.9g\n", tenet::convert<float>(device));
    return tenet::detail::to_bits(device) == tenet::detail::to_bits(host) ? 0 : 1;
}
