// Reading and writing files safely: bounded reads, atomic writes, the
// bounds-checked byte reader, the checkpoint container and its sections.
// (Each header also stands alone.)
#pragma once

#include "atomic_file.hpp"
#include "byte_reader.hpp"
#include "checkpoint_file.hpp"
#include "checkpoint_sections.hpp"
#include "read_file.hpp"
