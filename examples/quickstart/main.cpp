// quickstart: the README's example. One value through the storage types of
// tenet's precision policies, on the host and, when a GPU is present, on the
// device: the same bits either way.
#include <tenet/tenet.hpp>

#include <cstdio>

int main()
{
    using policy = tenet::bf16_mixed;  // storage bf16, compute f32
    const policy::storage w = tenet::convert<policy::storage>(1.0f / 3.0f);
    std::printf("1/3 as bf16: %.9g\n", tenet::convert<float>(w));
    const tenet::f8e4m3 big = tenet::convert<tenet::f8e4m3>(1e6f);
    std::printf("1e6 as f8e4m3 (saturates): %.9g\n", tenet::convert<float>(big));
    std::printf("device: %s\n", tenet::has_device() ? "present" : "none (host only)");
}
