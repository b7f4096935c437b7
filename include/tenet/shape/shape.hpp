// The shape layer: Shape<N...> (static_shape.hpp), broadcasting, static
// layouts and their index maps, view transforms. (Each header also stands
// alone.)
#pragma once

#include "broadcast.hpp"
#include "layout.hpp"
#include "static_shape.hpp"
#include "transform.hpp"
