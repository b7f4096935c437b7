// convert only knows tenet's element types.
#include <tenet/tenet.hpp>
// expect: tenet: convert<To>(x): To and x's type must be tenet element types
long long wide = tenet::convert<long long>(1.0f);
