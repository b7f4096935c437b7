// masks<Model>: which weights of a model are kept (true) or pruned (false).
// One bool per element of the model's flat parameter buffer, in the model's
// place and at the same offsets as the parameters, so
//   - the fused optimizer reads mask[i] beside parameter i (train/optimizer.hpp),
//   - each parameter's mask is a tensor view of its own shape (for_each),
//   - applying the masks to the model is ONE pass over the flat buffer.
// Only weights (parameters of rank >= 2: Linear's [out, in]) are prunable;
// biases, norms' gains and the padding between parameters stay true.
//
//   prune::masks<decltype(net)> m(net);            // everything kept
//   prune::magnitude(m, 0.9, prune::scope::global); // magnitude.hpp
//   m.apply();                                     // pruned weights := 0
#pragma once

#include "../exec/assign.hpp"
#include "../expr/operators.hpp"
#include "../memory/buffer.hpp"
#include "../tensor/copy.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace tenet::prune {

// A prunable parameter: where it is in the flat buffers, and its shape as a
// matrix (rows = everything but the last axis, cols = the last axis: a
// Linear weight's output and input features).
struct prunable_parameter {
    std::string name;
    std::size_t offset = 0;
    std::size_t numel = 0;
    std::size_t rows = 0;
    std::size_t cols = 0;
};

template <class Shape>
inline constexpr bool is_prunable_shape = Shape::rank >= 2;

template <class Model>
class masks {
public:
    using model_type = Model;
    using place = typename Model::place;
    using storage_type = typename Model::storage_type;
    static constexpr std::size_t numel = Model::flat_numel;
    static constexpr std::size_t bytes = numel * sizeof(bool);

    explicit masks(Model& model) : model_(model), keep_(numel, current_stream())
    {
        model.for_each_parameter([&](const std::string& name, auto value, auto) {
            using shape = typename decltype(value)::shape;
            if constexpr (is_prunable_shape<shape>) {
                constexpr std::size_t cols = shape::extents[shape::rank - 1];
                const auto offset = static_cast<std::size_t>(value.data() - model.parameters());
                prunable_.push_back({name, offset, shape::numel, shape::numel / cols, cols});
            }
        });
        reset();
    }

    masks(const masks&) = delete;
    masks& operator=(const masks&) = delete;

    // Every weight kept again.
    void reset() { assign(flat(), true); }

    // The whole flat mask, as the optimizer reads it.
    auto flat() { return make_view<Shape<numel>, place>(keep_.data()); }
    auto flat() const { return make_view<Shape<numel>, place>(static_cast<const bool*>(keep_.data())); }
    bool* data() { return keep_.data(); }
    const bool* data() const { return keep_.data(); }

    const std::vector<prunable_parameter>& prunable() const { return prunable_; }
    Model& model() const { return model_; }

    // f(name, weight view, mask view) for every prunable parameter, in the
    // model's order; the views have the parameter's static shape.
    template <class F>
    void for_each(F&& f)
    {
        model_.for_each_parameter([&](const std::string& name, auto value, auto) {
            using shape = typename decltype(value)::shape;
            if constexpr (is_prunable_shape<shape>) {
                const auto offset = value.data() - model_.parameters();
                f(name, value, make_view<shape, place>(keep_.data() + offset));
            }
        });
    }

    // Pruned weights := 0 in the model's parameters (one fused pass).
    void apply()
    {
        auto values = make_view<Shape<numel>, place>(model_.parameters());
        assign(values, where(flat(), values, 0));
    }

    // The flat mask copied to the host (waits for the stream).
    std::vector<char> to_host() const
    {
        std::vector<char> out(numel);
        tenet::copy_bytes<Host, place>(out.data(), keep_.data(), bytes, current_stream());
        current_stream().synchronize();
        return out;
    }

    // Replaces the mask from host bytes (numel of them, each 0 or 1; else
    // tenet::format_error naming `source`, and nothing changes).
    void from_host(const std::vector<char>& keep, const std::string& source = "prune::masks")
    {
        check_bytes(keep, source);
        tenet::copy_bytes<place, Host>(keep_.data(), keep.data(), bytes, current_stream());
        current_stream().synchronize();  // keep is the caller's
    }

    static void check_bytes(const std::vector<char>& keep, const std::string& source)
    {
        if (keep.size() != numel)
            throw format_error(source, std::to_string(keep.size()) + " mask bytes for a model of " +
                                           std::to_string(numel) + " parameter elements");
        for (std::size_t i = 0; i < numel; ++i)
            if (keep[i] != 0 && keep[i] != 1)
                throw format_error(source, "mask byte " + std::to_string(i) + " is " + std::to_string(int(keep[i])) +
                                               ", not 0 or 1");
    }

private:
    Model& model_;
    buffer<bool, place> keep_;
    std::vector<prunable_parameter> prunable_;
};

}  // namespace tenet::prune
