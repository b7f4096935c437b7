// How many threads the host backend's parallel loops use: OpenMP's thread
// count of the calling thread, which tenet's loops and oneDNN's primitives
// (Debian's libdnnl runs on the same OpenMP runtime) both follow. Results
// never depend on it: every host reduction adds in an order fixed by the
// shapes alone, and a oneDNN primitive (the host GEMM, the host
// convolution) runs under the count its plan was made under (a layer's
// construction, a GEMM's first use) unless the primitive made for the
// caller's count gives the same bits (linalg/onednn_thread_counts.hpp).
// That first count is the one thing a result can depend on: a plan made
// under another count may differ in the last bits of a convolution's
// weight gradient (a GEMM with a long inner dimension is cut into fixed
// slices instead: linalg/onednn_inner_slices.hpp).
//
//   host_threads()          the count the next parallel loop of this thread uses
//   set_host_threads(n)     n >= 1 (else tenet::error); this thread only
//   host_threads_scope s(n) n for one scope; the count it found comes back
//                           when the scope ends, on every path
//
// Host work between training steps (a loader filling the next batch) runs
// on the count the steps were found to run fastest with, since a parallel
// loop beside a busy process stalls there as much as in a step:
//   host_threads_between_steps()       that count (a thread_tuner's choice,
//                                      process-wide), at most host_threads();
//                                      host_threads() while no tuner has chosen
//   set_host_threads_between_steps(n)  what a thread_tuner calls; 0 clears it
//   clear_host_threads_between_steps(n) clears it if it still reads n (a
//                                      tuner leaving; another's count stays)
//
// Without OpenMP (-fopenmp off) the host backend is serial: host_threads()
// is 1 and setting it changes nothing.
#pragma once

#include "../memory/error.hpp"

#include <algorithm>
#include <atomic>
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

namespace detail::exec {
inline std::atomic<int> between_steps_threads{0};
}

inline int host_threads_between_steps() noexcept
{
    const int tuned = detail::exec::between_steps_threads.load(std::memory_order_relaxed);
    return tuned > 0 ? std::min(tuned, host_threads()) : host_threads();
}

inline void set_host_threads_between_steps(int n)
{
    if (n < 0) throw error("tenet: set_host_threads_between_steps: a thread count is at least 0, not " +
                           std::to_string(n));
    detail::exec::between_steps_threads.store(n, std::memory_order_relaxed);
}

inline void clear_host_threads_between_steps(int n) noexcept
{
    detail::exec::between_steps_threads.compare_exchange_strong(n, 0, std::memory_order_relaxed);
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
