// A training policy whose compute type is an integer cannot carry gradients.
#include <tenet/tenet.hpp>
// expect: tenet: training_precision: the compute type must be floating-point
using bad = tenet::training_precision<tenet::bf16, tenet::i32, tenet::f32, tenet::f32>;
static_assert(tenet::training_policy<bad>);
