// How a trainer stages a batch before its forward: the inputs with padding
// rows cleared, the sequence lengths with padding sequences 0, and which
// samples are real -- each as one expression over the batch's row mask
// `valid` (the output's rows: 1 real, 0 padding).
#pragma once

#include "../nn/layer.hpp"
#include "../reduce/reduce.hpp"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <type_traits>
#include <utility>

namespace tenet::train::detail {

template <class Rows, class Ones>
struct append_ones;
template <std::size_t... R, std::size_t... K>
struct append_ones<Shape<R...>, std::index_sequence<K...>> {
    using type = Shape<R..., (K * 0 + 1)...>;
};

template <class InputShape, class RowsShape, class InputType>
struct batch_staging {
    static_assert(RowsShape::rank <= InputShape::rank &&
                      std::equal(RowsShape::extents.begin(), RowsShape::extents.end(), InputShape::extents.begin()),
                  "tenet: trainer: the model's input shape must begin with its output's rows (a mask entry per row)");
    static constexpr std::size_t batch = InputShape::extents[0];
    // The rows with axes of extent 1 up to the input's rank: a row's mask
    // broadcast over its features.
    using row_mask_shape =
        typename append_ones<RowsShape, std::make_index_sequence<InputShape::rank - RowsShape::rank>>::type;

    // x with padding rows 0. Values: a mask entry other than 0 and 1 (only
    // the device gets here with one) makes its row NaN, so the step shows
    // as non-finite rather than silently weighting the row. Tokens have no
    // NaN: padding rows read token 0, and such an entry counts as a real row
    // unless the batch is checked (always on the host; check_batches on the
    // device).
    template <class X, class Valid>
    static auto inputs(const X& x, const Valid& valid)
    {
        const auto row = broadcast_to<InputShape>(reshape<row_mask_shape>(valid));
        if constexpr (std::is_integral_v<InputType>) return where(row == 0, 0, x);
        else return where(row == 0, 0, where(row == 1, x, std::numeric_limits<float>::quiet_NaN()));
    }

    // A sequence none of whose rows is real (valid all 0) has length 0.
    template <class Lengths, class Valid>
    static auto lengths(const Lengths& lengths, const Valid& valid)
    {
        const auto real = max<1>(reshape<Shape<batch, RowsShape::numel / batch>>(cast<i32>(valid != 0)));
        return where(real > 0, lengths, 0);
    }

    // 1 for each batch entry with a real row, 0 for padding ([Batch]).
    template <class Valid>
    static auto real_samples(const Valid& valid)
    {
        return max<1>(reshape<Shape<batch, RowsShape::numel / batch>>(cast<f32>(valid != 0)));
    }
};

}  // namespace tenet::train::detail
