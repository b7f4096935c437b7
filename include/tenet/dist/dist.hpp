// Scale-out: the communicator protocol and its engines. Not in tenet.hpp:
// a program that trains across processes includes this header and links
// tenet::mpi (MPI from Debian's libopenmpi-dev); the trainer itself needs
// only communicator.hpp. NCCL's engine is there in CUDA translation units
// where CMake found NCCL.
#pragma once

#include "communicator.hpp"
#include "local_communicator.hpp"
#include "mpi_communicator.hpp"
#include "nccl_communicator.hpp"
