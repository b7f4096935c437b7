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

// What this CPU does for bf16 arithmetic (oneDNN's bf16 convolutions and
// GEMMs need AVX-512; AVX512_BF16 adds the dot-product instructions).
inline const char* bf16_support()
{
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512bf16")) return "AVX512_BF16";
    if (__builtin_cpu_supports("avx512f")) return "AVX-512 without AVX512_BF16 (oneDNN emulates bf16)";
    return "no AVX-512: bf16 convolutions take the im2col lowering";
}

// What this CPU does for f16: tenet's host fp16_mixed converts f16 to f32
// in its loops (F16C's instructions where the build targets them) and runs
// its GEMMs and convolutions in f32 on the converted values.
inline const char* f16_support()
{
    __builtin_cpu_init();
#if defined(__F16C__)
    const bool built = true;
#else
    const bool built = false;
#endif
    if (!__builtin_cpu_supports("f16c")) return "no F16C: f16 converted in software";
    return built ? "F16C" : "F16C, not targeted by this build (-march): f16 converted in software";
}

inline std::string cpu_model()
{
    std::ifstream cpuinfo("/proc/cpuinfo");
    for (std::string line; std::getline(cpuinfo, line);)
        if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
    return "unknown CPU";
}

}  // namespace bench
