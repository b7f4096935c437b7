// How many threads the host backend's parallel loops use: OpenMP's thread
// count of the calling thread, which tenet's loops and oneDNN's primitives
// (Debian's libdnnl runs on the same OpenMP runtime) both follow. Results
// never depend on it: every host reduction and GEMM adds in an order fixed
// by the shapes alone.
//
//   host_threads()          the count the next parallel loop of this thread uses
//   set_host_threads(n)     n >= 1 (else tenet::error); this thread only
//   host_threads_scope s(n) n for one scope; the count it found comes back
//                           when the scope ends, on every path
//
// Without OpenMP (-fopenmp off) the host backend is serial: host_threads()
// is 1 and setting it changes nothing.
#pragma once

#include "../memory/error.hpp"

#include <string>

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace tenet {

inline int host_threads() noexcept
{
#if defined(_OPENMP)
    return omp_get_max_threads();
#else
    return 1;
#endif
}

inline void set_host_threads(int n)
{
    if (n < 1) throw error("tenet: set_host_threads: a thread count is at least 1, not " + std::to_string(n));
#if defined(_OPENMP)
    omp_set_num_threads(n);
#endif
}

class host_threads_scope {
public:
    explicit host_threads_scope(int n) : previous_(host_threads()) { set_host_threads(n); }
    ~host_threads_scope()
    {
#if defined(_OPENMP)
        omp_set_num_threads(previous_);
#endif
    }
    host_threads_scope(const host_threads_scope&) = delete;
    host_threads_scope& operator=(const host_threads_scope&) = delete;

private:
    int previous_;
};

}  // namespace tenet
