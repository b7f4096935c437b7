// Entry point of the GPU tests: with no usable CUDA device they report that
// they were skipped and pass; with one they run for real.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <tenet/memory/device.hpp>

#include <cstdio>

int main(int argc, char** argv)
{
    if (!tenet::has_device()) {
        std::puts("skipped: no CUDA device");
        return 0;
    }
    doctest::Context context(argc, argv);
    return context.run();
}
