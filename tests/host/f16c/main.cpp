// The entry point of the F16C checks (checks.cpp, compiled for the ISA
// this program is named after). This file is compiled for the baseline
// x86-64, includes nothing of tenet's, and runs the checks only on a CPU
// that has the instructions they were compiled for.
#include <cstdio>
#include <cstring>

int tenet_f16c_checks();

int main()
{
#if defined(TENET_F16C_CHECKS_AVX512)
    const char* isa = "AVX-512 and F16C";
    const bool supported = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx2") &&
                           __builtin_cpu_supports("f16c") && __builtin_cpu_supports("fma");
#else
    const char* isa = "AVX2 and F16C";
    const bool supported =
        __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c") && __builtin_cpu_supports("fma");
#endif
    if (!supported) {
        std::printf("skipped: this CPU lacks %s\n", isa);
        return 0;
    }
    const int failures = tenet_f16c_checks();
    std::printf("%s: %s (%d failures)\n", isa, failures == 0 ? "passed" : "FAILED", failures);
    return failures == 0 ? 0 : 1;
}
