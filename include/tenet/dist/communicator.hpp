// dist::communicator: the collectives data-parallel training issues, over an
// engine the field already trusts -- MPI between Host processes
// (mpi_communicator.hpp), NCCL between GPUs (nccl_communicator.hpp). The
// trainer takes one (trainer_options::communicator) and calls it once per
// gradient bucket: coarse calls, so a virtual interface costs nothing and
// lets one trainer type serve every engine.
//
// Every rank must issue the same collectives in the same order with the same
// sizes. A collective that fails, or waits longer than the communicator's
// timeout for the other ranks, throws dist::communication_error; the
// communicator is unusable afterwards.
#pragma once

#include "../memory/error.hpp"
#include "../memory/stream.hpp"

#include <cstddef>

namespace tenet::dist {

// A collective failed (with the engine's message) or timed out.
class communication_error : public error {
public:
    using error::error;
};

class communicator {
public:
    virtual ~communicator() = default;

    virtual int rank() const = 0;
    virtual int size() const = 0;
    // Where the buffers of every call live: host memory (MPI) or the
    // device's (NCCL). A trainer checks it against its model's place.
    virtual bool host_memory() const = 0;

    // data[0, n) becomes the sum over ranks, element by element: the same
    // bits on every rank (the sum is taken in a fixed order).
    virtual void allreduce_sum(float* data, std::size_t n, stream_ref s) = 0;
    // out[0, n) = the sum over ranks of their in[rank() * n, (rank() + 1) * n):
    // in holds size() * n elements.
    virtual void reduce_scatter_sum(const float* in, float* out, std::size_t n, stream_ref s) = 0;
    // out[r * bytes, (r + 1) * bytes) = rank r's in[0, bytes).
    virtual void all_gather(const void* in, void* out, std::size_t bytes, stream_ref s) = 0;
    // data[0, bytes) becomes root's.
    virtual void broadcast(void* data, std::size_t bytes, int root, stream_ref s) = 0;
    // Waits for the stream's work, its collectives included: one that does
    // not complete within the communicator's timeout throws rather than
    // hang. (MPI's collectives are complete when they return; NCCL's run on
    // the stream.)
    virtual void wait(stream_ref s) = 0;

protected:
    communicator() = default;
    communicator(const communicator&) = default;
    communicator& operator=(const communicator&) = default;
};

}  // namespace tenet::dist
