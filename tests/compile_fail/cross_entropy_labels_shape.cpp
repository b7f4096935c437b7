// Cross-entropy labels that do not have one entry per row of the logits.
#include <tenet/tenet.hpp>
// expect: rowwise::row_op_operand_must_have_shape_Want_not_Got<tenet::detail::rowwise::name::cross_entropy_forward, tenet::detail::rowwise::name::labels,
// expect-cxx: tenet: cross_entropy_forward: labels must have shape Shape<4>, got Shape<5>
// expect-cuda: labels, tenet::Shape<4UL>, tenet::Shape<5UL>>
using namespace tenet;
void f(Tensor<f32, Shape<>, Host>& loss, Tensor<f32, Shape<4, 10>, Host>& probs, const Tensor<f32, Shape<4, 10>, Host>& logits,
       const Tensor<i32, Shape<5>, Host>& labels)
{
    cross_entropy_forward(loss, probs, logits, labels);
}
