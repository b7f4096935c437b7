// Scale-out: the communicator protocol and its engines. Not in tenet.hpp:
// a program that trains across processes includes this header and links
// tenet::mpi (MPI from Debian's libopenmpi-dev); the trainer itself needs
// only communicator.hpp.
#pragma once

#include "communicator.hpp"
#include "mpi_communicator.hpp"
