// Reading and writing files safely: bounded reads, atomic writes, the
// bounds-checked byte reader, the checkpoint container and its sections,
// NumPy .npy files, safetensors files (and models as safetensors with
// PyTorch's names and layouts).
// (Each header also stands alone.)
#pragma once

#include "atomic_file.hpp"
#include "byte_reader.hpp"
#include "checkpoint_file.hpp"
#include "checkpoint_sections.hpp"
#include "mapped_file.hpp"
#include "model_safetensors.hpp"
#include "model_values.hpp"
#include "npy.hpp"
#include "read_file.hpp"
#include "safetensors.hpp"
