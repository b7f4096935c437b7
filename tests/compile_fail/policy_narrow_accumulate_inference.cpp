// The accumulate rule holds for inference policies too.
#include <tenet/tenet.hpp>
// expect: tenet: precision policy: the accumulate type is narrower than the compute type
using bad = tenet::inference_precision<tenet::f16, tenet::f32, tenet::f16>;
static_assert(tenet::precision_policy<bad>);
