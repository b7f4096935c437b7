// dist::nccl_communicator: NCCL between GPUs, for Device models: one GPU per
// rank (the device current when it is made). Compiled by nvcc where CMake
// finds NCCL (TENET_WITH_NCCL, defined by tenet::tenet in CUDA projects).
//
//   dist::mpi_session mpi(argc, argv);
//   dist::mpi_communicator world;                  // the processes (mpirun)
//   cudaSetDevice(local_rank);                     // one GPU per rank
//   dist::nccl_communicator gpus(world);           // NCCL's id travels over MPI
//   train::trainer t(net, rule, schedule, {.communicator = &gpus});
//
// - The collectives are queued on the given stream (the trainer's): they
//   overlap host work and are captured into CUDA Graphs with the step. Every
//   rank gets the same sums (NCCL reduces each element once and sends the
//   result on); their order is NCCL's, fixed for a given size and topology.
// - NCCL runs non-blocking (ncclConfig_t::blocking = 0): creation and every
//   call are waited for with the timeout, and wait(stream) polls the
//   stream's work and NCCL's asynchronous error. A failure or a timeout
//   aborts the NCCL communicator (ncclCommAbort, which releases kernels
//   waiting for absent ranks) and throws communication_error; it cannot be
//   used afterwards.
#pragma once

#include "../config.hpp"

#if TENET_CUDA_COMPILER && defined(TENET_WITH_NCCL)

#include "../memory/cuda_check.hpp"
#include "communicator.hpp"

#include <nccl.h>

#include <chrono>
#include <string>
#include <thread>

namespace tenet::dist {

struct nccl_options {
    // How long creation, a call, or wait() waits for the other ranks.
    std::chrono::milliseconds timeout = std::chrono::minutes(5);
};

class nccl_communicator final : public communicator {
public:
    // Collective over bootstrap's ranks, which must be host memory (an
    // mpi_communicator across processes, a local_communicator for one):
    // rank 0 creates NCCL's unique id and broadcasts it. The ranks are
    // bootstrap's.
    explicit nccl_communicator(communicator& bootstrap, nccl_options options = {})
        : options_(options), rank_(bootstrap.rank()), size_(bootstrap.size())
    {
        if (!bootstrap.host_memory())
            throw error("tenet: dist: nccl_communicator: the bootstrap communicator must use host memory (MPI)");
        if (options.timeout.count() <= 0) throw error("tenet: dist: nccl_options::timeout must be positive");
        TENET_CUDA_CHECK(cudaGetDevice(&device_));
        ncclUniqueId id{};
        if (rank_ == 0) check(ncclGetUniqueId(&id), "ncclGetUniqueId");
        bootstrap.broadcast(&id, sizeof id, 0, {});
        ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
        config.blocking = 0;
        enqueued(ncclCommInitRankConfig(&comm_, size_, id, rank_, &config), "ncclCommInitRankConfig");
        TENET_CUDA_CHECK(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
    }

    nccl_communicator(const nccl_communicator&) = delete;
    nccl_communicator& operator=(const nccl_communicator&) = delete;

    ~nccl_communicator() override
    {
        if (done_) cudaEventDestroy(done_);
        if (!comm_) return;
        if (failed_) {
            ncclCommAbort(comm_);
            return;
        }
        ncclResult_t state = ncclCommFinalize(comm_);
        while (state == ncclInProgress) ncclCommGetAsyncError(comm_, &state);
        ncclCommDestroy(comm_);
    }

    int rank() const override { return rank_; }
    int size() const override { return size_; }
    bool host_memory() const override { return false; }
    int device() const { return device_; }
    ncclComm_t get() const { return comm_; }

    void allreduce_sum(float* data, std::size_t n, stream_ref s) override
    {
        enqueued(ncclAllReduce(data, data, n, ncclFloat32, ncclSum, usable(), s.get()), "ncclAllReduce");
    }

    void reduce_scatter_sum(const float* in, float* out, std::size_t n, stream_ref s) override
    {
        enqueued(ncclReduceScatter(in, out, n, ncclFloat32, ncclSum, usable(), s.get()), "ncclReduceScatter");
    }

    void all_gather(const void* in, void* out, std::size_t bytes, stream_ref s) override
    {
        enqueued(ncclAllGather(in, out, bytes, ncclUint8, usable(), s.get()), "ncclAllGather");
    }

    void broadcast(void* data, std::size_t bytes, int root, stream_ref s) override
    {
        if (root < 0 || root >= size_)
            throw error("tenet: dist: broadcast from rank " + std::to_string(root) + " of " + std::to_string(size_));
        enqueued(ncclBroadcast(data, data, bytes, ncclUint8, root, usable(), s.get()), "ncclBroadcast");
    }

    // Polls an event after the stream's work and NCCL's asynchronous error
    // until the work is done: a hang past the timeout, or an error, aborts.
    void wait(stream_ref s) override
    {
        ncclComm_t comm = usable();
        TENET_CUDA_CHECK(cudaEventRecord(done_, s.get()));
        const auto deadline = std::chrono::steady_clock::now() + options_.timeout;
        for (;;) {
            const cudaError_t query = cudaEventQuery(done_);
            if (query == cudaSuccess) return;
            if (query != cudaErrorNotReady) TENET_CUDA_CHECK(query);
            ncclResult_t state = ncclSuccess;
            check(ncclCommGetAsyncError(comm, &state), "ncclCommGetAsyncError");
            if (state != ncclSuccess && state != ncclInProgress) fail("wait", state);
            if (std::chrono::steady_clock::now() >= deadline) fail("wait", ncclInProgress);
            std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
    }

private:
    ncclComm_t usable() const
    {
        if (failed_)
            throw communication_error("tenet: dist: rank " + std::to_string(rank_) +
                                      ": this NCCL communicator failed earlier; it cannot be used again");
        return comm_;
    }

    void check(ncclResult_t result, const char* call)
    {
        if (result != ncclSuccess) fail(call, result);
    }

    // A non-blocking call returns ncclInProgress until NCCL has taken it:
    // poll the communicator's state until then, within the timeout.
    void enqueued(ncclResult_t result, const char* call)
    {
        const auto deadline = std::chrono::steady_clock::now() + options_.timeout;
        while (result == ncclInProgress) {
            if (std::chrono::steady_clock::now() >= deadline) fail(call, result);
            std::this_thread::yield();
            check(ncclCommGetAsyncError(comm_, &result), "ncclCommGetAsyncError");
        }
        check(result, call);
    }

    [[noreturn]] void fail(const char* what, ncclResult_t result)
    {
        failed_ = comm_ != nullptr;
        const std::string reason = result == ncclInProgress
                                       ? "timed out after " + std::to_string(options_.timeout.count()) +
                                             " ms: another rank failed or stopped calling collectives"
                                       : std::string(ncclGetErrorString(result)) +
                                             (comm_ ? std::string(" (") + ncclGetLastError(comm_) + ")" : "");
        if (failed_) ncclCommAbort(comm_), comm_ = nullptr;
        throw communication_error("tenet: dist: " + std::string(what) + " on rank " + std::to_string(rank_) + " of " +
                                  std::to_string(size_) + ": " + reason);
    }

    nccl_options options_;
    int rank_ = 0;
    int size_ = 1;
    int device_ = 0;
    ncclComm_t comm_ = nullptr;
    cudaEvent_t done_ = nullptr;
    bool failed_ = false;
};

}  // namespace tenet::dist

#endif  // TENET_CUDA_COMPILER && TENET_WITH_NCCL
