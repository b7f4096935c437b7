// What a host benchmark ran on, for its header line: the CPU's model name
// and the widest vector ISA the build targets (-march=native: the machine's).
#pragma once

#include <fstream>
#include <string>

namespace bench {

constexpr const char* vector_isa()
{
#if defined(__AVX512F__)
    return "AVX-512";
#elif defined(__AVX2__)
    return "AVX2";
#else
    return "baseline x86-64";
#endif
}

inline std::string cpu_model()
{
    std::ifstream cpuinfo("/proc/cpuinfo");
    for (std::string line; std::getline(cpuinfo, line);)
        if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
    return "unknown CPU";
}

}  // namespace bench
