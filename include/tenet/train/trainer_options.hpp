// What a trainer is told (trainer_options) and what its end_epoch()
// returns (epoch_summary).
#pragma once

#include "../dist/communicator.hpp"
#include "optimizer.hpp"

#include <cstddef>

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

}  // namespace tenet::train
