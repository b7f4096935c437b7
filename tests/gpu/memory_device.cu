// Device memory: copies between places, out-of-memory, CUDA errors, and an
// array_loader's prefetched batches against the host loader's.
#include "bitwise_equal.hpp"
#include "tensor_testing.hpp"

#include <chrono>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

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
    CHECK_BITWISE_EQUAL("host -> device -> pinned -> host copy", back.data(), x.data(), x.numel);
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

namespace {

// At namespace scope: nvcc 12 spells a loader type first named with a local
// constant as `unsigned long((32))` in later functions, which g++ rejects.
constexpr std::size_t loader_rows = 32, image_values = 15;
using byte_images = data::array_dataset<std::uint8_t, i32, Shape<3, 5>>;
using host_images = data::array_loader<bf16, loader_rows, byte_images, Host>;
using device_images = data::array_loader<bf16, loader_rows, byte_images, Device>;

void CUDART_CB sleep_1ms(void*) { std::this_thread::sleep_for(std::chrono::milliseconds(1)); }

// One epoch of a Device loader, copied back, against the Host loader's.
// Each step sleeps on the compute stream before reading its batch back, so
// the host runs batches ahead: a slot refilled too early shows.
void check_against_host(const byte_images& set, data::shard part)
{
    constexpr std::size_t x_bytes = loader_rows * image_values * sizeof(bf16), row_bytes = loader_rows * sizeof(i32);
    constexpr std::size_t per_batch = x_bytes + 2 * row_bytes;
    stream compute;
    host_images expected(set, current_stream(), part);
    device_images loader(set, compute, part);
    const std::size_t batches = loader.batches_per_epoch();
    REQUIRE(batches == expected.batches_per_epoch());
    buffer<std::byte, HostPinned> results(batches * per_batch, compute);
    std::memset(results.data(), 0xA5, batches * per_batch);  // poison
    device_images::batch b;
    loader.start_epoch(3, 1);
    for (std::size_t k = 0; loader.next(b); ++k) {
        REQUIRE(k < batches);
        TENET_CUDA_CHECK(cudaLaunchHostFunc(compute.get(), sleep_1ms, nullptr));
        std::byte* to = results.data() + k * per_batch;
        TENET_CUDA_CHECK(cudaMemcpyAsync(to, b.x().data(), x_bytes, cudaMemcpyDeviceToHost, compute.get()));
        TENET_CUDA_CHECK(
            cudaMemcpyAsync(to + x_bytes, b.targets().data(), row_bytes, cudaMemcpyDeviceToHost, compute.get()));
        TENET_CUDA_CHECK(cudaMemcpyAsync(to + x_bytes + row_bytes, b.valid().data(), row_bytes, cudaMemcpyDeviceToHost,
                                         compute.get()));
    }
    compute.synchronize();
    host_images::batch h;
    expected.start_epoch(3, 1);
    for (std::size_t k = 0; expected.next(h); ++k) {
        CAPTURE(k);
        const std::byte* from = results.data() + k * per_batch;
        CHECK_BITWISE_EQUAL("array_loader batch images", from, reinterpret_cast<const std::byte*>(h.x().data()), x_bytes);
        CHECK_BITWISE_EQUAL("array_loader batch targets", from + x_bytes, reinterpret_cast<const std::byte*>(h.targets().data()), row_bytes);
        CHECK_BITWISE_EQUAL("array_loader batch valid mask", from + x_bytes + row_bytes,
                            reinterpret_cast<const std::byte*>(h.valid().data()), row_bytes);
    }
}

}  // namespace

TEST_CASE("device: array_loader's batches are the host loader's, sharded or not, while the compute stream lags")
{
    constexpr std::size_t n = 101;  // 4 batches of 32 on one rank, the last padded
    std::mt19937 rng(8);
    std::vector<std::uint8_t> pixels(n * image_values);
    std::vector<i32> labels(n);
    for (auto& p : pixels) p = static_cast<std::uint8_t>(rng() % 256);
    for (auto& l : labels) l = static_cast<i32>(rng() % 10);
    const byte_images set(pixels, labels);
    check_against_host(set, data::shard{0, 1});
    check_against_host(set, data::shard{1, 2});
}
