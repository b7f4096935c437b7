// Data parallel on the host, run under mpirun:
//
//   mpirun -np 2 --oversubscribe -x OMP_NUM_THREADS=1 bench_host_data_parallel [--steps N]
//
// 1. Allreduce: tenet's dist::mpi_communicator::allreduce_sum (deterministic:
//    all-to-all, rank-order sums, all-gather) against OpenMPI's own
//    MPI_Allreduce (whose order is its own), 4 KiB to 64 MiB of f32, median
//    of repetitions: the algorithm bandwidth (bytes / s) and the bus
//    bandwidth (x 2 (P - 1) / P, nccl-tests' convention: what each rank moves).
// 2. A training step of the Fashion-MNIST MLP (784-256-128-10, fp32, AdamW,
//    256 rows per rank, random data): one process alone (rank 0, with every
//    core's OpenMP thread, the other ranks waiting) against the
//    data-parallel step of all ranks (a global batch of 256 P rows), and the
//    part of it spent summing the gradients; samples per second both ways;
//    and the same step with ZeRO-1 (optimizer state sharded over the ranks),
//    with its optimizer-state bytes per rank.
// Rank 0 prints; the last line is JSON.
#include "support/host_machine.hpp"

#include <tenet/dist/dist.hpp>
#include <tenet/tenet.hpp>

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace tenet;
namespace nn = tenet::nn;
namespace train = tenet::train;
using clock_type = std::chrono::steady_clock;

constexpr std::size_t batch = 256;
using mlp = nn::Sequential<nn::Linear<784, 256>, nn::ReLU, nn::Linear<256, 128>, nn::ReLU, nn::Linear<128, 10>>;
using model_t = nn::model<mlp, fp32, Shape<batch, 784>, Host>;

double seconds_since(clock_type::time_point start)
{
    return std::chrono::duration<double>(clock_type::now() - start).count();
}

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// Every rank's median of `f`'s seconds over `reps` calls, taken as rank 0's.
template <class F>
double timed(dist::communicator& world, int reps, F&& f)
{
    std::vector<double> seconds;
    for (int r = 0; r < reps; ++r) {
        float sync = 0;
        world.allreduce_sum(&sync, 1, {});  // start together
        const auto start = clock_type::now();
        f();
        seconds.push_back(seconds_since(start));
    }
    return median(seconds);
}

void allreduce_table(dist::mpi_communicator& world)
{
    const double p = world.size(), bus = 2.0 * (p - 1) / p;
    if (world.rank() == 0)
        std::printf("%12s %16s %16s %16s %16s %10s\n", "bytes", "tenet algo GB/s", "tenet bus GB/s", "MPI algo GB/s",
                    "MPI bus GB/s", "tenet/MPI");
    for (std::size_t bytes = 4096; bytes <= (std::size_t{64} << 20); bytes *= 4) {
        const std::size_t n = bytes / sizeof(float);
        std::vector<float> data(n, 1.0f), out(n);
        const int reps = bytes >= (std::size_t{16} << 20) ? 5 : 20;
        const double ours = timed(world, reps, [&] { world.allreduce_sum(data.data(), n, {}); });
        const double theirs = timed(world, reps, [&] {
            MPI_Allreduce(data.data(), out.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, world.get());
        });
        if (world.rank() == 0)
            std::printf("%12zu %16.2f %16.2f %16.2f %16.2f %10.2f\n", bytes, bytes / ours / 1e9, bus * bytes / ours / 1e9,
                        bytes / theirs / 1e9, bus * bytes / theirs / 1e9, theirs / ours);
    }
}

struct batch_data {
    Tensor<f32, Shape<batch, 784>, Host> x;
    Tensor<i32, Shape<batch>, Host> labels, valid;
    explicit batch_data(std::uint64_t seed)
    {
        std::mt19937_64 rng(seed);
        std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
        for (std::size_t i = 0; i < batch * 784; ++i) x.data()[i] = pixel(rng);
        for (std::size_t r = 0; r < batch; ++r) labels.data()[r] = static_cast<i32>(rng() % 10), valid.data()[r] = 1;
    }
};

// Seconds per step (median after a warm-up), on this rank's data.
template <class Trainer>
double step_seconds(Trainer& trainer, const batch_data& b, int steps)
{
    std::vector<double> seconds;
    for (int s = 0; s < steps + 2; ++s) {
        const auto start = clock_type::now();
        trainer.step(b.x, b.labels, b.valid);
        if (s >= 2) seconds.push_back(seconds_since(start));
    }
    return median(seconds);
}

}  // namespace

int main(int argc, char** argv)
{
    dist::mpi_session mpi(argc, argv);
    dist::mpi_communicator world;
    int steps = 40;
    for (int i = 1; i + 1 < argc; ++i)
        if (std::string(argv[i]) == "--steps") steps = std::max(1, std::stoi(argv[i + 1]));
    const int rank = world.rank(), ranks = world.size();
    const int threads = omp_get_max_threads();
    if (rank == 0)
        std::printf("== host data parallel: %d ranks x %d OpenMP threads, %d cores (%s)\n", ranks, threads,
                    omp_get_num_procs(), bench::vector_isa());

    allreduce_table(world);

    // One process alone: rank 0 with every core; the others wait in a broadcast.
    double alone = 0;
    float done = 0;
    if (rank == 0) {
        omp_set_num_threads(omp_get_num_procs());
        model_t net(1);
        train::trainer one(net, train::adamw{});
        alone = step_seconds(one, batch_data(7), steps);
        omp_set_num_threads(threads);
    }
    world.broadcast(&done, sizeof done, 0, {});

    // Every rank, each on its own 256 rows; then the gradient sum alone.
    model_t net(1);
    train::trainer dp(net, train::adamw{}, train::constant_lr{1e-3f}, {.communicator = &world});
    const double parallel = step_seconds(dp, batch_data(7 + static_cast<std::uint64_t>(rank)), steps);
    model_t sharded_net(1);
    train::trainer zero(sharded_net, train::adamw{}, train::constant_lr{1e-3f}, {.communicator = &world, .zero = true});
    const double zero_step = step_seconds(zero, batch_data(7 + static_cast<std::uint64_t>(rank)), steps);
    using optimizer_t = decltype(zero)::optimizer_type;
    std::vector<float> gradients(model_t::flat_numel, 1.0f);
    const double summing = timed(world, steps, [&] { world.allreduce_sum(gradients.data(), gradients.size(), {}); });

    if (rank == 0) {
        const double alone_rate = batch / alone, parallel_rate = batch * ranks / parallel;
        std::printf("MLP step, 256 rows per rank: 1 process (%d threads) %.2f ms (%.0f samples/s); %d ranks %.2f ms "
                    "(%.0f samples/s, %.2fx), of which the gradient allreduce (%.2f MB) %.2f ms\n",
                    omp_get_num_procs(), alone * 1e3, alone_rate, ranks, parallel * 1e3, parallel_rate,
                    parallel_rate / alone_rate, model_t::flat_numel * 4 / 1e6, summing * 1e3);
        const std::size_t state = optimizer_t::state_bytes, sharded = optimizer_t::sharded_state_bytes(ranks);
        std::printf("ZeRO-1 step: %.2f ms (%.2fx the plain data-parallel step); optimizer state %zu bytes per rank "
                    "(%zu unsharded)\n",
                    zero_step * 1e3, zero_step / parallel, sharded, state);
        std::printf("{\"bench\":\"host_data_parallel\",\"ranks\":%d,\"threads_per_rank\":%d,\"alone_step_s\":%.6f,"
                    "\"parallel_step_s\":%.6f,\"zero_step_s\":%.6f,\"allreduce_s\":%.6f,\"speedup\":%.3f,"
                    "\"state_bytes\":%zu,\"zero_state_bytes_per_rank\":%zu}\n",
                    ranks, threads, alone, parallel, zero_step, summing, parallel_rate / alone_rate, state, sharded);
    }
    return 0;
}
