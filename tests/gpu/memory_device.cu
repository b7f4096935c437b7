// Device memory: copies between places, out-of-memory, CUDA errors.
#include "tensor_testing.hpp"

using namespace tenet;

TEST_CASE("device: host -> device -> pinned -> host round trips keep every bit")
{
    Tensor<bf16, Shape<77, 131>, Host> x, back;
    testing::fill_random(x, 1);
    testing::poison(back);
    Tensor<bf16, Shape<77, 131>, Device> d;
    Tensor<bf16, Shape<77, 131>, HostPinned> pinned;
    copy(d, x);
    copy(pinned, d);
    current_stream().synchronize();
    copy(back, pinned);
    CHECK(std::memcmp(x.data(), back.data(), x.bytes) == 0);
}

TEST_CASE("device: out of memory throws, frees nothing it should not, and the device stays usable")
{
    Tensor<f32, Shape<1024>, Device> kept = iota<Shape<1024>>(0.0f, 1.0f);
    using huge = Shape<std::size_t{1} << 42>;  // 16 TiB
    CHECK_THROWS_AS((Tensor<f32, huge, Device>{}), out_of_memory_error);
    Tensor<f32, Shape<1024>, Device> after = kept * 2.0f;  // allocation and kernels still work
    Tensor<f32, Shape<1024>, Host> host;
    copy(host, after);
    current_stream().synchronize();
    CHECK(host(1023) == 2046.0f);
}

TEST_CASE("device: a failing CUDA call becomes a cuda_error naming it")
{
    void* nowhere = reinterpret_cast<void*>(0x10);
    try {
        TENET_CUDA_CHECK(cudaMemcpy(nowhere, nowhere, 1 << 20, cudaMemcpyDeviceToDevice));
        FAIL("no exception");
    } catch (const cuda_error& e) {
        CHECK(std::string(e.what()).find("cudaMemcpy(nowhere") != std::string::npos);
    }
    cudaGetLastError();
}
