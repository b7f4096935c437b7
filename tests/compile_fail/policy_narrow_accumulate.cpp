// Accumulating in bf16 while computing in f32 loses what the compute produced.
#include <tenet/tenet.hpp>
// expect: tenet: precision policy: the accumulate type is narrower than the compute type
using bad = tenet::training_precision<tenet::bf16, tenet::f32, tenet::bf16, tenet::f32>;
bad::storage weight{};
