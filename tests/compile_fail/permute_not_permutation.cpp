// permute needs each axis exactly once.
#include <tenet/tenet.hpp>
// expect: tenet: permute<...>: the axes must be a permutation of 0 .. rank-1
auto f(const tenet::Tensor<float, tenet::Shape<4, 5>, tenet::Host>& x) { return tenet::permute<0, 0>(x); }
