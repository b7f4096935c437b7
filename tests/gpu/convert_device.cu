// Device conversions give the same bits as host conversions, for all 81
// (To, From) pairs: every pattern of the 8- and 16-bit types, ten million
// random floats, and the edge cases of every format.
#include <doctest/doctest.h>
#include <tenet/numeric/convert.hpp>

#include "device_buffer.hpp"
#include "mismatch_log.hpp"
#include "samples.hpp"

#include <cstring>
#include <tuple>

using namespace tenet;

namespace {

template <class To, class From>
__global__ void convert_all(const From* in, To* out, std::size_t n)
{
    for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n; i += std::size_t{gridDim.x} * blockDim.x)
        out[i] = convert<To>(in[i]);
}

template <class To, class From>
void check_pair(const std::vector<From>& inputs, const device_buffer<From>& device_inputs)
{
    device_buffer<To> device_out(inputs.size());
    convert_all<<<1024, 256>>>(device_inputs.data(), device_out.data(), inputs.size());
    TENET_CUDA_CHECK(cudaGetLastError());
    TENET_CUDA_CHECK(cudaDeviceSynchronize());
    const auto got = device_out.to_host();
    mismatch_log log;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        const From input = inputs[i];
        const To want = convert<To>(input);
        if (std::memcmp(&got[i], &want, sizeof(To)) != 0) {
            unsigned long long in_bits = 0, got_bits = 0, want_bits = 0;
            std::memcpy(&in_bits, &input, sizeof(From));
            std::memcpy(&got_bits, &got[i], sizeof(To));
            std::memcpy(&want_bits, &want, sizeof(To));
            log.add("%s -> %s: input %#llx: device %#llx, host %#llx", numeric_traits<From>::name,
                    numeric_traits<To>::name, in_bits, got_bits, want_bits);
        }
    }
    CHECK_NO_MISMATCH(log);
}

using all_elements = std::tuple<f32, f64, f16, bf16, f8e4m3, f8e5m2, i8, i32, bool>;

template <class F>
void for_each_element(F&& f)
{
    std::apply([&](auto... types) { (f(types), ...); }, all_elements{});
}

template <class T>
__global__ void write_limits(double* out)
{
    using traits = numeric_traits<T>;
    out[0] = convert<f64>(traits::max());
    out[1] = convert<f64>(traits::lowest());
    out[2] = convert<f64>(traits::epsilon());
}

}  // namespace

TEST_CASE("device conversions are bit-identical to host conversions for every pair")
{
    int pairs = 0;
    for_each_element([&](auto from) {
        using From = decltype(from);
        const std::size_t random_count = std::is_same_v<From, f32> ? 5'000'000 : 200'000;
        const std::vector<From> inputs = samples::values_of<From>(random_count);
        const device_buffer<From> device_inputs(inputs);
        for_each_element([&](auto to) {
            check_pair<decltype(to), From>(inputs, device_inputs);
            ++pairs;
        });
    });
    CHECK(pairs == 81);
}

TEST_CASE("numeric_traits evaluate to the same limits on the device")
{
    for_each_element([](auto type) {
        using T = decltype(type);
        device_buffer<double> out(3);
        write_limits<T><<<1, 1>>>(out.data());
        TENET_CUDA_CHECK(cudaGetLastError());
        const auto got = out.to_host();
        CHECK(got[0] == convert<f64>(numeric_traits<T>::max()));
        CHECK(got[1] == convert<f64>(numeric_traits<T>::lowest()));
        CHECK(got[2] == convert<f64>(numeric_traits<T>::epsilon()));
    });
}
