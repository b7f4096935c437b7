// What the device bundle's run.sh (scripts/device_bundle/run.sh) asks about
// the machine it lands on, which has no compiler:
//
//   tenet_device_probe device            the GPU, its driver and the runtime
//                                        linked in; exit 3 and "no GPU: why"
//                                        when there is none to use
//   tenet_device_probe built             one line per library the bundle was
//                                        built against: name, soname, the
//                                        headers' version, the least it needs
//   tenet_device_probe version NAME FILE the version of library NAME (cublasLt,
//                                        cudnn, nccl) in FILE; exit 4 when
//                                        FILE cannot be loaded
//
// The libraries are opened with dlopen, so the probe runs where they are
// missing. Host code only: it launches nothing.
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#if defined(TENET_WITH_CUDNN)
#include <cudnn_version.h>
#endif
#if defined(TENET_WITH_NCCL)
#include <nccl.h>
#endif

#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <string>

namespace {

// cuBLAS, cuDNN 9 and NCCL 2.9+ all encode a version as
// major * 10000 + minor * 100 + patch.
std::string dotted(long long code)
{
    return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." + std::to_string(code % 100);
}

int device()
{
    int driver = 0, runtime = 0, count = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    const cudaError_t status = cudaGetDeviceCount(&count);
    std::printf("driver: %s\n", driver ? ("supports CUDA " + std::to_string(driver / 1000) + "." +
                                          std::to_string(driver % 1000 / 10)).c_str()
                                       : "none (no libcuda.so.1)");
    std::printf("runtime: CUDA %d.%d (linked statically into every bundle binary)\n", runtime / 1000,
                runtime % 1000 / 10);
    if (driver == 0) {
        std::printf("no GPU: no NVIDIA driver on this machine\n");
        return 3;
    }
    if (status != cudaSuccess || count == 0) {
        std::printf("no GPU: %s\n", status != cudaSuccess ? cudaGetErrorString(status) : "no CUDA device");
        return 3;
    }
    for (int i = 0; i < count; ++i) {
        cudaDeviceProp p{};
        if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
        std::printf("device %d: %s, sm_%d%d, %.1f GiB, %d SMs\n", i, p.name, p.major, p.minor,
                    static_cast<double>(p.totalGlobalMem) / (1 << 30), p.multiProcessorCount);
    }
    return 0;
}

void built_line(const char* name, const std::string& soname, long long headers, long long least)
{
    std::printf("%s\t%s\t%s\t%s\n", name, soname.c_str(), dotted(headers).c_str(), dotted(least).c_str());
}

int built()
{
    // Any cuBLASLt of the headers' major version: the soname's promise.
    built_line("cublasLt", "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR), CUBLAS_VERSION, CUBLAS_VER_MAJOR * 10000LL);
#if defined(TENET_WITH_CUDNN)
    // The backend API of cuDNN 9.0 is all tenet calls (conv/cudnn_*.hpp).
    built_line("cudnn", "libcudnn.so.9", CUDNN_VERSION, 90000);
#endif
#if defined(TENET_WITH_NCCL)
    // ncclCommInitRankConfig and ncclCommFinalize came in NCCL 2.14.
    built_line("nccl", "libnccl.so.2", NCCL_VERSION_CODE, 21400);
#endif
    return 0;
}

int version(const char* name, const char* file)
{
    void* library = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        std::printf("cannot load: %s\n", dlerror());
        return 4;
    }
    long long code = -1;
    if (std::strcmp(name, "cublasLt") == 0) {
        if (auto get = reinterpret_cast<std::size_t (*)()>(dlsym(library, "cublasLtGetVersion"))) code = get();
    } else if (std::strcmp(name, "cudnn") == 0) {
        if (auto get = reinterpret_cast<std::size_t (*)()>(dlsym(library, "cudnnGetVersion"))) code = get();
    } else if (std::strcmp(name, "nccl") == 0) {
        int v = 0;
        if (auto get = reinterpret_cast<int (*)(int*)>(dlsym(library, "ncclGetVersion")); get && get(&v) == 0) code = v;
    }
    if (code < 0) {
        std::printf("no version function for %s in %s\n", name, file);
        return 4;
    }
    std::printf("%s\n", dotted(code).c_str());
    return 0;
}

}  // namespace

int main(int argc, char** argv)
{
    if (argc == 2 && std::strcmp(argv[1], "device") == 0) return device();
    if (argc == 2 && std::strcmp(argv[1], "built") == 0) return built();
    if (argc == 4 && std::strcmp(argv[1], "version") == 0) return version(argv[2], argv[3]);
    std::fprintf(stderr, "usage: %s device | built | version cublasLt|cudnn|nccl FILE\n", argv[0]);
    return 2;
}
