// The error hierarchy, the CUDA-call check and the no-device error.
#include <doctest/doctest.h>
#include <tenet/config.hpp>
#include <tenet/memory/cuda_check.hpp>
#include <tenet/memory/device.hpp>

#include <string>

namespace {

cudaError_t failing_call() { return cudaErrorMemoryAllocation; }

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("TENET_CUDA_CHECK names the call, the file, the line and CUDA's message")
{
    const int line = __LINE__ + 2;
    try {
        TENET_CUDA_CHECK(failing_call());
        FAIL("no exception");
    } catch (const tenet::cuda_error& e) {
        const std::string what = e.what();
        CHECK(contains(what, "tenet: CUDA call failing_call() failed"));
        CHECK(contains(what, "errors.cpp:" + std::to_string(line)));
        CHECK(contains(what, "cudaErrorMemoryAllocation"));
        CHECK(contains(what, "out of memory"));
        CHECK(e.code() == cudaErrorMemoryAllocation);
        CHECK(e.call() == "failing_call()");
        CHECK(e.line() == line);
    }
    CHECK_NOTHROW(TENET_CUDA_CHECK(cudaSuccess));
}

TEST_CASE("every tenet exception is a tenet::error and a std::runtime_error")
{
    CHECK_THROWS_AS(TENET_CUDA_CHECK(failing_call()), tenet::error);
    CHECK_THROWS_AS(throw tenet::format_error("model.ckpt", "bad magic"), tenet::io_error);
    CHECK_THROWS_AS(throw tenet::no_device_error("x"), std::runtime_error);
    const tenet::format_error bad("data/train.idx", "truncated: 12 of 784 bytes");
    CHECK(std::string(bad.what()) == "tenet: data/train.idx: truncated: 12 of 784 bytes");
    CHECK(bad.path() == "data/train.idx");
}

TEST_CASE("require_device throws a clear error exactly when there is no device")
{
    if (tenet::device_count() == 0) {
        CHECK_FALSE(tenet::has_device());
        try {
            tenet::require_device();
            FAIL("no exception");
        } catch (const tenet::no_device_error& e) {
            CHECK(contains(e.what(), "tenet: no CUDA device"));
        }
    } else {
        CHECK(tenet::has_device());
        CHECK_NOTHROW(tenet::require_device());
    }
}

TEST_CASE("without an NVIDIA driver, CUDA errors say that no driver was found")
{
    using tenet::detail::memory::describe_cuda_status;
    auto cuda_words = [](cudaError_t status) {
        return std::string(cudaGetErrorString(status)) + " (" + cudaGetErrorName(status) + ")";
    };
    CHECK(describe_cuda_status(cudaErrorInsufficientDriver, false) ==
          "no NVIDIA driver was found (libcuda.so.1 cannot be loaded; cudaErrorInsufficientDriver)");
    // A driver too old for the runtime keeps CUDA's words, and so does every other status.
    CHECK(describe_cuda_status(cudaErrorInsufficientDriver, true) == cuda_words(cudaErrorInsufficientDriver));
    CHECK(contains(cuda_words(cudaErrorInsufficientDriver), "insufficient"));
    CHECK(describe_cuda_status(cudaErrorMemoryAllocation, false) == cuda_words(cudaErrorMemoryAllocation));
    CHECK(describe_cuda_status(cudaErrorNoDevice, false) == cuda_words(cudaErrorNoDevice));

    const bool driver = tenet::detail::memory::nvidia_driver_installed();
    if (tenet::has_device()) CHECK(driver);
    if (!driver) {  // this machine has none: what a Device program sees
        int count = -1;
        REQUIRE(cudaGetDeviceCount(&count) == cudaErrorInsufficientDriver);
        try {
            tenet::require_device();
            FAIL("no exception");
        } catch (const tenet::no_device_error& e) {
            CHECK(contains(e.what(), "tenet: no CUDA device: device work needs a GPU, and no NVIDIA driver was found"));
            CHECK_FALSE(contains(e.what(), "insufficient"));
        }
        try {
            TENET_CUDA_CHECK(cudaGetDeviceCount(&count));
            FAIL("no exception");
        } catch (const tenet::cuda_error& e) {
            CHECK(contains(e.what(), "no NVIDIA driver was found"));
            CHECK(e.code() == cudaErrorInsufficientDriver);
        }
    }
}

TEST_CASE("the version in config.hpp is the CMake project's version")
{
    CHECK(std::string(TENET_VERSION_STRING) == TENET_TEST_PROJECT_VERSION);
    CHECK(TENET_VERSION_MAJOR * 10000 + TENET_VERSION_MINOR * 100 + TENET_VERSION_PATCH > 0);
}
