// quickstart: the README's example. One fused expression, evaluated on the
// host -- and on the GPU, in one kernel, when this file is compiled by nvcc
// and a GPU is present.
#include <tenet/tenet.hpp>

#include <cstdio>

using namespace tenet;

template <class Place>
void run(const char* where)
{
    using X = Shape<1024, 4096>;
    Tensor<bf16, X, Place> x = random_normal<X>(/*seed=*/1);  // bf16 storage
    Tensor<f32, Shape<4096>, Place> b = random_uniform<Shape<4096>>(2, 0, -0.5f, 0.5f);
    Tensor<bf16, X, Place> y;
    y = gelu(x * 0.5f + b);                 // ONE kernel; b broadcast along rows; f32 math, one rounding
    Tensor<f32, Shape<>, Place> total = sum(y);  // a reduction fused with its input
    Tensor<f32, Shape<>, Host> result;
    copy(result, total);
    current_stream().synchronize();
    std::printf("%-6s sum(gelu(x * 0.5 + b)) over %zu bf16 elements = %.4f\n", where, X::numel, result());
}

int main()
{
    run<Host>("host");
#if TENET_CUDA_COMPILER
    if (has_device()) run<Device>("device");
    else std::printf("device: none (the device path was compiled, not run)\n");
#else
    std::printf("device: this build has no CUDA compiler\n");
#endif
}
