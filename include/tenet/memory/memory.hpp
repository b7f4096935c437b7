// The memory layer: places (Host, HostPinned, Device), streams, errors and
// CUDA checks, device queries, allocation, buffer, copy_bytes, element and
// chunk access. (Each header also stands alone.)
#pragma once

#include "access.hpp"
#include "allocate.hpp"
#include "buffer.hpp"
#include "converting_chunks.hpp"
#include "copy_bytes.hpp"
#include "cuda_check.hpp"
#include "device.hpp"
#include "error.hpp"
#include "place.hpp"
#include "stream.hpp"
