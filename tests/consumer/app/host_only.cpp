// A host-only program of a CUDA project: g++ compiles it, and it must not
// depend on cuBLASLt, cuDNN or NCCL (check_needed.cmake reads its NEEDED
// entries after the build). It still runs a host GEMM through tenet's linalg.
#include <tenet/tenet.hpp>

#include <cstdio>

using namespace tenet;

int main()
{
    Tensor<f32, Shape<4, 8>, Host> a;
    Tensor<f32, Shape<8, 3>, Host> b;
    Tensor<f32, Shape<4, 3>, Host> c;
    for (std::size_t i = 0; i < 32; ++i) a.data()[i] = float(i % 5);
    for (std::size_t i = 0; i < 24; ++i) b.data()[i] = float(i % 3) - 1.0f;
    c = matmul(a, b);
    int failures = 0;
    for (std::size_t r = 0; r < 4; ++r)
        for (std::size_t k = 0; k < 3; ++k) {
            float want = 0;
            for (std::size_t j = 0; j < 8; ++j) want += a.data()[r * 8 + j] * b.data()[j * 3 + k];
            failures += c.data()[r * 3 + k] != want;
        }
    std::printf("host-only program of a CUDA project: host GEMM %s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
