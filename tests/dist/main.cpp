// The data-parallel tests' entry point: every rank of `mpirun -np N` runs
// every test case (each is a collective), and the job fails when any rank's
// does.
#define DOCTEST_CONFIG_IMPLEMENT
#include "world.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <memory>

namespace {
std::unique_ptr<tenet::dist::mpi_communicator> the_world;
}

tenet::dist::mpi_communicator& dist_testing::world() { return *the_world; }

int main(int argc, char** argv)
{
    tenet::dist::mpi_session mpi(argc, argv);
    the_world = std::make_unique<tenet::dist::mpi_communicator>(MPI_COMM_WORLD,
                                                                 tenet::dist::mpi_options{std::chrono::seconds(120)});
    doctest::Context context(argc, argv);
    if (the_world->rank() != 0) context.setOption("no-intro", true);
    const int failed = context.run();
    // Every rank's verdict: a rank whose check failed fails the job, and the
    // others say so rather than pass alone.
    float failures = failed ? 1.0f : 0.0f;
    the_world->allreduce_sum(&failures, 1, {});
    the_world.reset();
    return failures > 0 ? 1 : 0;
}
