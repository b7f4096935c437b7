// take along an axis the table does not have.
#include <tenet/tenet.hpp>
// expect: take_table_has_no_such_axis<
// expect-cxx: tenet: take<2>: the table Shape<10,4> has no axis 2
void run(const tenet::Tensor<float, tenet::Shape<10, 4>, tenet::Host>& table,
         const tenet::Tensor<int, tenet::Shape<3>, tenet::Host>& idx)
{
    tenet::Tensor<float, tenet::Shape<3, 4>, tenet::Host> y;
    y = tenet::take<2>(table, idx);
}
