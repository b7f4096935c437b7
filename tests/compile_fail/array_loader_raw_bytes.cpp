// Raw u8 batches pass bytes unchanged: their features must be bytes too.
#include <tenet/data/array_loader.hpp>
// expect: tenet: array_loader<std::uint8_t, ...>: raw u8 batches need a dataset of std::uint8_t features
using images = tenet::data::array_dataset<float, tenet::i32, tenet::Shape<28, 28>>;
void f(const images& set)
{
    tenet::data::array_loader<std::uint8_t, 64, images, tenet::Host> loader(set);
    loader.start_epoch(1, 0);
}
