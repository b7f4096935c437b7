// numeric_traits of a type tenet does not store.
#include <tenet/tenet.hpp>
// expect: tenet: numeric_traits<T>: T is not a tenet element type
// expect-errors: 2 (the use of ::max() that follows is the caller's)
auto biggest = tenet::numeric_traits<unsigned short>::max();
