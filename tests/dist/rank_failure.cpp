// One rank of a data-parallel job throws in the middle of training (a bad
// label, caught before its collective); the others must fail with a clear
// error within the communicator's timeout, not hang. Run by
// check_rank_failure.cmake under mpirun:
//   caught   the failing rank catches its error and stalls: the others time
//            out, say so, and the job ends (MPI_Abort from mpi_session)
//   escaped  its error leaves main (std::terminate): mpirun ends the job
#include <tenet/dist/dist.hpp>
#include <tenet/nn/nn.hpp>
#include <tenet/train/trainer.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

using namespace tenet;

int main(int argc, char** argv)
{
    const bool escaped = argc > 1 && std::strcmp(argv[1], "escaped") == 0;
    dist::mpi_session mpi(argc, argv);
    dist::mpi_communicator world(MPI_COMM_WORLD, dist::mpi_options{std::chrono::seconds(3)});
    const int rank = world.rank();
    const bool failing = rank == world.size() - 1;

    nn::model<nn::Sequential<nn::Linear<6, 8>, nn::ReLU, nn::Linear<8, 3>>, fp32, Shape<4, 6>, Host> net(1);
    train::trainer t(net, train::adamw{}, train::constant_lr{1e-3f}, {.communicator = &world});
    Tensor<f32, Shape<4, 6>, Host> x;
    Tensor<i32, Shape<4>, Host> labels, valid;
    for (std::size_t i = 0; i < 24; ++i) x.data()[i] = static_cast<float>(i % 7) - 3.0f;
    for (std::size_t i = 0; i < 4; ++i) labels.data()[i] = static_cast<i32>(i % 3), valid.data()[i] = 1;
    t.step(x, labels, valid);  // every rank takes part

    if (failing) {
        labels.data()[2] = 99;  // outside the 3 classes: refused before anything changes
        try {
            t.step(x, labels, valid);
        } catch (const tenet::error& e) {
            std::printf("rank %d threw: %s\n", rank, e.what());
            std::fflush(stdout);
            if (escaped) throw;
            std::this_thread::sleep_for(std::chrono::seconds(30));  // stalled: the others must not wait for it
            return 0;
        }
        return 2;
    }
    try {
        t.step(x, labels, valid);
    } catch (const dist::communication_error& e) {
        std::printf("rank %d failed cleanly: %s\n", rank, e.what());
        std::fflush(stdout);
        std::this_thread::sleep_for(std::chrono::seconds(2));  // let the other survivors report too
        return 3;
    }
    std::printf("rank %d: the step returned although a rank never joined it\n", rank);
    return 1;
}
