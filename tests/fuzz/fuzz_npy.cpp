// libFuzzer entry point for the npy reader (scripts/fuzz.sh builds and runs it).
#include "targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    tenet::fuzz::npy(data, size);
    return 0;
}
