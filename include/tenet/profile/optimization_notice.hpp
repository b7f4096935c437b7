// The one-line notice a host-model trainer writes to stderr, once per process,
// when the program's host code was compiled without optimization:
//
//   tenet: compiled without optimization: host loops run about 20x slower
//
// CMake's default build type passes no -O flag, and host loops built that
// way run 15-20x slower with no other sign. Defining
// TENET_NO_OPTIMIZATION_NOTICE silences it.
#pragma once

#include <atomic>
#include <iostream>
#include <ostream>

namespace tenet::profile {

// Whether the translation unit that includes this header compiles host code
// without optimization (and has not silenced the notice): g++, clang and
// nvcc's host compiler define __OPTIMIZE__ from -O1 up. A namespace-scope
// constexpr has internal linkage, so each translation unit keeps its own answer.
#if defined(__OPTIMIZE__) || defined(TENET_NO_OPTIMIZATION_NOTICE)
constexpr bool unoptimized_host_code = false;
#else
constexpr bool unoptimized_host_code = true;
#endif

class optimization_notice {
public:
    // Writes the notice to `out` on the first call with `unoptimized` true
    // (from any thread); returns whether this call wrote it.
    bool report(std::ostream& out, bool unoptimized)
    {
        if (!unoptimized || written_.exchange(true)) return false;
        out << "tenet: compiled without optimization: host loops run about 20x slower\n" << std::flush;
        return true;
    }

private:
    std::atomic<bool> written_{false};
};

// The process's notice (train::trainer of a Host model reports to it on stderr).
inline optimization_notice& process_optimization_notice()
{
    static optimization_notice notice;
    return notice;
}

}  // namespace tenet::profile
