// The data-parallel tests run as every rank of an mpirun job (tests/dist/main.cpp).
#pragma once

#include <tenet/dist/dist.hpp>

namespace dist_testing {

// MPI_COMM_WORLD's communicator, with a timeout short enough that a test
// whose ranks fall out of step fails rather than hangs.
tenet::dist::mpi_communicator& world();

}  // namespace dist_testing
