// int8 models are trained in floating point and quantized afterwards.
#include <tenet/tenet.hpp>
// expect: tenet: training_precision: the storage type must be floating-point
using bad = tenet::training_precision<tenet::i8, tenet::f32, tenet::f32, tenet::f32>;
static_assert(tenet::training_policy<bad>);
