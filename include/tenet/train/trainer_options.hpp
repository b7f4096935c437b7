// What a trainer is told (trainer_options) and what its end_epoch()
// returns (epoch_summary).
#pragma once

#include "../dist/communicator.hpp"
#include "optimizer.hpp"

#include <cstddef>
#include <string>
#include <type_traits>

namespace tenet::train {

// What trainer::end_epoch() returns: the window's metrics (NaN where the
// window saw nothing: no steps, no evaluated rows, or a loss that does not
// classify for accuracy).
struct epoch_summary {
    double mean_loss;            // the mean micro-batch loss of the steps
    std::size_t steps;           // micro-batches stepped
    double evaluation_loss;      // the mean loss per valid row evaluated
    double evaluated_rows;       // valid rows evaluated
    double accuracy;             // the fraction of them predicted right
};

struct trainer_options {
    std::size_t accumulation_steps = 1;  // micro-batches per update
    optimizer_options optimizer{};
    // Device models: read each batch's labels and mask back and check them
    // before anything changes, throwing as the host does. Costs one wait for
    // the batch per step; off, a bad batch shows as a non-finite step.
    // (Host models always check.)
    bool check_batches = false;
    // Data-parallel training over these ranks (null: this process alone).
    // Host models take a host-memory communicator (dist::mpi_communicator).
    dist::communicator* communicator = nullptr;
    // Gradients are summed across ranks in buckets of this many bytes.
    std::size_t bucket_bytes = std::size_t{25} << 20;
    // ZeRO stage 1 (with a communicator): optimizer state sharded over the
    // ranks. For rules that update element by element (sgd, adamw).
    bool zero = false;
    // Host models: the threads each step runs on. 0: the steps find the
    // fastest count themselves (thread_tuner), up to host_threads() at
    // construction (OMP_NUM_THREADS, or set_host_threads), so a busy
    // machine does not stall them; n: always n. Results do not depend on it.
    int host_threads = 0;
};

namespace detail {

// o, or an error naming what is wrong with it for a trainer of a model in
// host memory (OnHost) whose gradients are Master.
template <bool OnHost, class Master>
trainer_options checked(trainer_options o)
{
    if (o.accumulation_steps == 0) throw error("tenet: trainer: accumulation_steps must be at least 1");
    if (o.host_threads < 0)
        throw error("tenet: trainer: host_threads is a thread count (or 0: tuned), not " + std::to_string(o.host_threads));
    if (o.communicator && o.bucket_bytes < sizeof(f32)) throw error("tenet: trainer: bucket_bytes must hold a gradient");
    if (o.zero && !o.communicator)
        throw error("tenet: trainer: zero shards the optimizer state over the communicator's ranks: set one");
    if (o.communicator && !std::is_same_v<Master, f32>)
        throw error(std::string("tenet: trainer: data-parallel training sums f32 gradients; this policy's are ") +
                    element_name<Master>);
    if (o.communicator && o.communicator->host_memory() != OnHost)
        throw error(OnHost ? "tenet: trainer: a Host model needs a host-memory communicator (dist::mpi_communicator)"
                           : "tenet: trainer: a Device model needs a device-memory communicator (dist::nccl_communicator)");
    return o;
}

}  // namespace detail

}  // namespace tenet::train
