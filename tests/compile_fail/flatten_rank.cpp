// Flatten of a rank-1 input: there is no batch axis to keep.
#include <tenet/tenet.hpp>
// expect: Flatten_needs_a_batch_axis_and_at_least_one_more_not<
// expect-cxx: tenet: Flatten fed Shape<10>: it needs a batch axis and at least one more
using net = tenet::nn::Sequential<tenet::nn::Flatten>;
using model = tenet::nn::model<net, tenet::fp32, tenet::Shape<10>, tenet::Host>;
model make() { return model(1); }
