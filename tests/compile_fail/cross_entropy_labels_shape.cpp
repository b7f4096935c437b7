// Cross-entropy labels that do not have one entry per row of the logits.
#include <tenet/tenet.hpp>
// expect: tenet: an operand of a row-wise op has the wrong shape
// expect-cxx: tenet: cross_entropy_forward: labels must have shape Shape<4>, got Shape<5>
// expect-cuda: Shape<5UL>
using namespace tenet;
void f(Tensor<f32, Shape<>, Host>& loss, Tensor<f32, Shape<4, 10>, Host>& probs, const Tensor<f32, Shape<4, 10>, Host>& logits,
       const Tensor<i32, Shape<5>, Host>& labels)
{
    cross_entropy_forward(loss, probs, logits, labels);
}
