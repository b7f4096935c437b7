// The context of one assignment: the stream it runs on and the scratch
// tensors it needs (reductions materialised inside a larger expression),
// which live until the assignment's work has been queued and are then freed
// in stream order.
#pragma once

#include "../memory/stream.hpp"
#include "../tensor/owning_tensor.hpp"

#include <memory>
#include <vector>

namespace tenet::detail::exec {

template <class Place>
class exec_context {
public:
    using place = Place;

    explicit exec_context(stream_ref s) : stream_(s) {}

    stream_ref stream() const noexcept { return stream_; }

    template <class T, class S>
    Tensor<T, S, Place>& scratch()
    {
        auto tensor = std::make_shared<Tensor<T, S, Place>>(stream_);
        Tensor<T, S, Place>& ref = *tensor;
        scratch_.push_back(std::move(tensor));
        return ref;
    }

private:
    stream_ref stream_;
    std::vector<std::shared_ptr<void>> scratch_;
};

}  // namespace tenet::detail::exec

namespace tenet {
using detail::exec::exec_context;
}  // namespace tenet
