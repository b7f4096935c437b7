// i8 x i8 products need an integer accumulator of at least 32 bits.
#include <tenet/tenet.hpp>
// expect: tenet: inference_precision: integer storage needs an integer accumulate type of at least 32 bits
using bad = tenet::inference_precision<tenet::i8, tenet::f32, tenet::i8>;
static_assert(tenet::precision_policy<bad>);
