// Master weights narrower than the stored weights would lose the updates.
#include <tenet/tenet.hpp>
// expect: tenet: training_precision: the master-weight type is narrower than the storage type
using bad = tenet::training_precision<tenet::f32, tenet::f32, tenet::f32, tenet::bf16>;
bad::master m{};
