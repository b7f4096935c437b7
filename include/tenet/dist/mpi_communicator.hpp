// MPI for Host models: dist::mpi_session (the process's MPI) and
// dist::mpi_communicator (the collectives, on a duplicate of a communicator
// such as MPI_COMM_WORLD). Link MPI (tenet::tenet does where CMake found it);
// launch with mpirun, on one machine or across several with a hostfile:
//
//   dist::mpi_session mpi(argc, argv);
//   dist::mpi_communicator world;                  // MPI_COMM_WORLD
//   train::trainer t(net, train::adamw{}, schedule, {.communicator = &world});
//
// - Sums are deterministic: a reduce-scatter by all-to-all, each rank adding
//   the ranks' pieces of its shard in rank order, then an all-gather. Every
//   rank gets the same bits, run after run; the traffic per rank is the ring
//   allreduce's, 2 (P - 1) / P of the buffer.
// - Every collective is non-blocking underneath and waited for with a
//   deadline (mpi_options::timeout): a rank that fails or stops calling
//   collectives makes the others throw dist::communication_error naming the
//   collective, rather than hang. MPI's own errors return (MPI_ERRORS_RETURN)
//   and are thrown with MPI's message.
#pragma once

#include "communicator.hpp"

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace tenet::dist {

namespace detail {

// Set when a collective of this process timed out: MPI_Finalize would wait
// for ranks that never come, so mpi_session aborts the job instead.
inline std::atomic<bool> collective_failed{false};

inline std::string mpi_message(int code)
{
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
    return std::string(text, static_cast<std::size_t>(length));
}

inline void check_mpi(int code, const char* call)
{
    if (code != MPI_SUCCESS)
        throw communication_error(std::string("tenet: dist: ") + call + " failed: " + mpi_message(code));
}

inline int world_value(int (*query)(MPI_Comm, int*))
{
    int value = 0;
    check_mpi(query(MPI_COMM_WORLD, &value), "querying MPI_COMM_WORLD");
    return value;
}

}  // namespace detail

// The process's MPI: initialised on construction (unless something else did
// it first), finalised on destruction. A process that leaves while an
// exception is in flight, or after a collective timed out, calls MPI_Abort
// instead: the job ends at once rather than leave other ranks waiting in a
// collective or in MPI_Finalize.
class mpi_session {
public:
    mpi_session() : mpi_session(nullptr, nullptr) {}
    mpi_session(int& argc, char**& argv) : mpi_session(&argc, &argv) {}

    mpi_session(const mpi_session&) = delete;
    mpi_session& operator=(const mpi_session&) = delete;

    ~mpi_session()
    {
        if (!owned_) return;
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (finalized) return;
        if (std::uncaught_exceptions() > 0 || detail::collective_failed.load()) MPI_Abort(MPI_COMM_WORLD, 1);
        else MPI_Finalize();
    }

    int rank() const { return detail::world_value(MPI_Comm_rank); }
    int size() const { return detail::world_value(MPI_Comm_size); }

    // Ends every rank's process now, with this exit code: what a rank that
    // failed does when the others may be waiting for it in a collective.
    [[noreturn]] void abort(int code = 1) const
    {
        MPI_Abort(MPI_COMM_WORLD, code);
        std::_Exit(code);  // (MPI_Abort does not return; should it, leave anyway)
    }

private:
    mpi_session(int* argc, char*** argv)
    {
        int initialized = 0;
        detail::check_mpi(MPI_Initialized(&initialized), "MPI_Initialized");
        if (initialized) return;
        int provided = 0;  // OpenMP threads never call MPI: the main thread alone does
        detail::check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
        owned_ = true;
    }

    bool owned_ = false;
};

struct mpi_options {
    // How long a collective waits for the other ranks before it throws.
    std::chrono::milliseconds timeout = std::chrono::minutes(5);
};

class mpi_communicator final : public communicator {
public:
    // A duplicate of `parent` (collective over its ranks), so tenet's
    // messages never meet the application's.
    explicit mpi_communicator(MPI_Comm parent = MPI_COMM_WORLD, mpi_options options = {})
        : options_(options), scratch_(std::make_unique<scratch>())
    {
        int initialized = 0;
        detail::check_mpi(MPI_Initialized(&initialized), "MPI_Initialized");
        if (!initialized) throw communication_error("tenet: dist: MPI is not initialised: create a dist::mpi_session first");
        if (options.timeout.count() <= 0) throw error("tenet: dist: mpi_options::timeout must be positive");
        detail::check_mpi(MPI_Comm_dup(parent, &comm_), "MPI_Comm_dup");
        MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
        detail::check_mpi(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
        detail::check_mpi(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
    }

    mpi_communicator(const mpi_communicator&) = delete;
    mpi_communicator& operator=(const mpi_communicator&) = delete;

    ~mpi_communicator() override
    {
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (!failed_ && !finalized) MPI_Comm_free(&comm_);
    }

    int rank() const override { return rank_; }
    int size() const override { return size_; }
    bool host_memory() const override { return true; }
    MPI_Comm get() const { return comm_; }
    const mpi_options& options() const { return options_; }

    void allreduce_sum(float* data, std::size_t n, stream_ref) override
    {
        auto& s = usable();
        // Whole chunks go straight from and into data, in pieces that bound
        // the scratch memory and keep MPI's int counts in range; the last
        // n mod P elements go through scratch, padded to one per rank.
        const std::size_t piece = (std::size_t{1} << 24) / ranks() * ranks();
        std::size_t done = 0;
        while (n - done >= ranks()) {
            const std::size_t count = std::min(piece, (n - done) / ranks() * ranks());
            sum_shards(data + done, count / ranks(), "allreduce_sum");
            gather_sums(data + done, count / ranks(), "allreduce_sum");
            done += count;
        }
        if (done == n) return;
        s.padded.assign(ranks(), 0.0f);
        std::copy(data + done, data + n, s.padded.begin());
        sum_shards(s.padded.data(), 1, "allreduce_sum");
        gather_sums(s.padded.data(), 1, "allreduce_sum");
        std::copy_n(s.padded.begin(), n - done, data + done);
    }

    void reduce_scatter_sum(const float* in, float* out, std::size_t n, stream_ref) override
    {
        auto& s = usable();
        sum_shards(in, n, "reduce_scatter_sum");
        std::copy_n(s.receive.begin(), n, out);
    }

    void all_gather(const void* in, void* out, std::size_t bytes, stream_ref) override
    {
        auto& s = usable();
        s.bytes.resize(bytes * ranks() + bytes);
        std::memcpy(s.bytes.data() + bytes * ranks(), in, bytes);
        MPI_Request request = MPI_REQUEST_NULL;
        detail::check_mpi(MPI_Iallgather(s.bytes.data() + bytes * ranks(), counted(bytes), MPI_BYTE, s.bytes.data(), counted(bytes),
                             MPI_BYTE, comm_, &request),
              "MPI_Iallgather");
        complete(request, "all_gather");
        std::memcpy(out, s.bytes.data(), bytes * ranks());
    }

    void wait(stream_ref) override {}  // each collective completed before it returned

    void broadcast(void* data, std::size_t bytes, int root, stream_ref) override
    {
        if (root < 0 || root >= size_)
            throw error("tenet: dist: broadcast from rank " + std::to_string(root) + " of " + std::to_string(size_));
        auto& s = usable();
        s.bytes.assign(static_cast<const std::byte*>(data), static_cast<const std::byte*>(data) + bytes);
        constexpr std::size_t piece = std::size_t{1} << 30;
        for (std::size_t done = 0; done < bytes; done += piece) {
            MPI_Request request = MPI_REQUEST_NULL;
            detail::check_mpi(MPI_Ibcast(s.bytes.data() + done, counted(std::min(piece, bytes - done)), MPI_BYTE, root, comm_,
                             &request),
                  "MPI_Ibcast");
            complete(request, "broadcast");
        }
        std::memcpy(data, s.bytes.data(), bytes);
    }

private:
    // What collectives receive into besides the caller's buffers: a
    // collective that timed out may still complete into it later, so it is
    // let go (never freed) then. (allreduce_sum sends from and gathers into
    // the caller's buffer: after a timeout the process must end, as
    // mpi_session makes it.)
    struct scratch {
        std::vector<float> receive, padded;
        std::vector<std::byte> bytes;
    };

    std::size_t ranks() const { return static_cast<std::size_t>(size_); }

    // in holds one chunk per rank; afterwards scratch.receive[0, chunk) holds
    // this rank's chunk summed over the ranks, in rank order.
    void sum_shards(const float* in, std::size_t chunk, const char* what)
    {
        auto& s = *scratch_;
        if (s.receive.size() < chunk * ranks()) s.receive.resize(chunk * ranks());
        MPI_Request request = MPI_REQUEST_NULL;
        detail::check_mpi(MPI_Ialltoall(in, counted(chunk), MPI_FLOAT, s.receive.data(), counted(chunk), MPI_FLOAT, comm_,
                                        &request),
                          "MPI_Ialltoall");
        complete(request, what);
        float* sum = s.receive.data();
        for (std::size_t r = 1; r < ranks(); ++r) {
            const float* part = s.receive.data() + r * chunk;
            for (std::size_t i = 0; i < chunk; ++i) sum[i] += part[i];
        }
    }

    // out[r * chunk, (r + 1) * chunk) = rank r's sum (sum_shards).
    void gather_sums(float* out, std::size_t chunk, const char* what)
    {
        MPI_Request request = MPI_REQUEST_NULL;
        detail::check_mpi(MPI_Iallgather(scratch_->receive.data(), counted(chunk), MPI_FLOAT, out, counted(chunk), MPI_FLOAT,
                                         comm_, &request),
                          "MPI_Iallgather");
        complete(request, what);
    }

    static int counted(std::size_t n)
    {
        if (n > static_cast<std::size_t>(INT_MAX))
            throw communication_error("tenet: dist: " + std::to_string(n) + " elements exceed MPI's int count");
        return static_cast<int>(n);
    }

    scratch& usable()
    {
        if (failed_)
            throw communication_error("tenet: dist: rank " + std::to_string(rank_) +
                                      ": this communicator failed earlier (a collective timed out); it cannot be used again");
        return *scratch_;
    }

    // Polls until the collective completes: spinning first (a step's
    // collectives usually complete within microseconds of each other), then
    // sleeping between polls so waiting ranks leave the cores to the others.
    void complete(MPI_Request& request, const char* what)
    {
        using clock = std::chrono::steady_clock;
        const auto deadline = clock::now() + options_.timeout;
        for (unsigned polls = 0;; ++polls) {
            int done = 0;
            detail::check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
            if (done) return;
            if (clock::now() >= deadline) fail(what);
            if (polls >= 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
    }

    [[noreturn]] void fail(const char* what)
    {
        failed_ = true;
        detail::collective_failed = true;
        static_cast<void>(scratch_.release());  // MPI may still write into it (see scratch)
        throw communication_error("tenet: dist: " + std::string(what) + " on rank " + std::to_string(rank_) + " of " +
                                  std::to_string(size_) + " timed out after " + std::to_string(options_.timeout.count()) +
                                  " ms: another rank failed or stopped calling collectives; this communicator "
                                  "cannot be used again");
    }

    mpi_options options_;
    std::unique_ptr<scratch> scratch_;
    MPI_Comm comm_ = MPI_COMM_NULL;
    int rank_ = 0;
    int size_ = 1;
    bool failed_ = false;
};

}  // namespace tenet::dist
