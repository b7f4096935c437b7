// Uses tenet from an install prefix with g++ alone.
#include <tenet/tenet.hpp>

#include <cstdio>

int main()
{
    using policy = tenet::bf16_mixed;
    const policy::storage third = tenet::convert<policy::storage>(1.0f / 3.0f);
    const float back = tenet::convert<policy::compute>(third);
    std::printf("tenet %s (find_package, g++): 1/3 stored as %s reads back as %.9g\n", TENET_VERSION_STRING,
                tenet::numeric_traits<policy::storage>::name, back);
    return back == 0.333984375f ? 0 : 1;
}
