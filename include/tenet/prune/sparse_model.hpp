// sparse_model<Spec, In>: host inference of a pruned model, each Linear's
// weight in CSR form (csr.hpp) holding only what its mask keeps, so the work
// and the bytes shrink with the sparsity.
//
//   prune::sparse_model<mlp, Shape<256, 784>> sparse(net, m);  // net: any policy, any place
//   const auto& logits = sparse.forward(x);                    // x: host tensor, shape In
//
// Each Linear (with the activation right after it; Dropout, the identity at
// inference, vanishes) is a unit: a csr_matrix<f32> weight and an f32 bias,
// converted from the model's storage type. Activations are kept transposed,
// in f32, by blocks of 64 rows: [blocks][features][64]. For an output
// feature o and each weight w = W[o, k] it keeps, the inner loop
// y[o, block] += w * x[k, block] runs over 64 contiguous rows, whose sums stay
// in registers (it vectorizes); the block's inputs stay in cache while every
// output feature reads them, and threads split the (block, output feature)
// pairs. The input is transposed once on the way in, the logits once on the
// way out.
//
// Every output element is summed as the dense product with the mask applied
// would be in a plain float loop over k ascending from +0 -- the pruned terms
// are exact zeros -- then the bias is added and the activation applied. For
// finite inputs the result is therefore bitwise the dense-with-mask result in
// that order, compiled with the same contraction into fused multiply-adds (an
// infinite or NaN input would make the skipped 0 * x NaN).
#pragma once

#include "../nn/linear_units.hpp"
#include "../nn/model.hpp"
#include "csr.hpp"
#include "masks.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tenet::prune {

// One Linear (+ activation) of a sparse_model.
struct sparse_unit {
    linalg::activation activation = linalg::activation::none;
    csr_matrix<f32> weight;  // [out, in]
    std::vector<f32> bias;   // [out]
};

namespace detail {

template <class S>
struct sparse_model_a_layer_has_no_sparse_form {
    static constexpr auto text()
    {
        return tenet::fixed_string(
            "tenet: sparse_model: a layer has no sparse form (supported: Linear, ReLU/GELU/GELUTanh right after a "
            "Linear, Dropout, Sequential, Checkpointed, Offloaded)");
    }
    static constexpr void reject()
    {
        static_assert(tenet::diagnose<false, sparse_model_a_layer_has_no_sparse_form>::value);
    }
};

template <class Model>
struct spec_of {};
template <class Spec, precision_policy P, shape_type In, memory_place Place>
struct spec_of<nn::model<Spec, P, In, Place>> {
    using type = Spec;
};

template <linalg::activation Act>
f32 activate(f32 v)
{
    if constexpr (Act == linalg::activation::none) return v;
    else return linalg::activation_op<Act>{}(v);
}

}  // namespace detail

template <class Spec, shape_type In>
class sparse_model {
    using units = nn::linear_units_t<Spec, detail::sparse_model_a_layer_has_no_sparse_form>;
    static constexpr std::size_t count = nn::list_size<units>;
    static constexpr std::size_t features = nn::last_extent<In>;
    static constexpr std::size_t rows = In::numel / features;
    template <std::size_t I>
    using unit_t = nn::at_t<I, units>;
    // Activations are stored by blocks of rows, [blocks][features][block]
    // (the last block padded with rows that are computed and never read):
    // a block's sums stay in registers, 8 vectors of 8 lanes, independent
    // chains enough to hide the latency of the multiply-adds, and its inputs
    // stay in cache while every output feature reads them.
    static constexpr std::size_t lanes = 8, block = 8 * lanes;
    static constexpr std::size_t blocks = (rows + block - 1) / block;

public:
    using input_shape = In;
    using output_shape = typename Spec::template output_shape<In>;
    using output_tensor = Tensor<f32, output_shape, Host>;
    static_assert(count > 0, "tenet: sparse_model: the model has no Linear layer");

    // From a model of the same spec and input shape (any policy, any place)
    // and its masks: what the masks prune is left out, whatever the model's
    // values there.
    template <class Model>
    sparse_model(Model& model, masks<Model>& m)
    {
        static_assert(std::is_same_v<typename detail::spec_of<Model>::type, Spec> &&
                          std::is_same_v<typename Model::input_shape, In>,
                      "tenet: sparse_model: the model has another spec or input shape");
        if (&m.model() != &model) throw error("tenet: sparse_model: the masks are another model's");
        std::size_t weights = 0, biases = 0;
        m.for_each([&](const std::string&, auto weight, auto keep) {
            const auto csr = to_csr(weight, keep);
            csr_matrix<f32>& w = units_[weights++].weight;
            w = {csr.rows, csr.cols, csr.row_offsets, csr.columns, std::vector<f32>(csr.values.size())};
            std::transform(csr.values.begin(), csr.values.end(), w.values.begin(),
                           [](auto v) { return convert<f32>(v); });
        });
        model.for_each_parameter([&](const std::string&, auto value, auto) {
            if constexpr (decltype(value)::shape::rank == 1) {
                const auto host = detail::on_host(value);
                current_stream().synchronize();
                std::vector<f32>& b = units_[biases++].bias;
                for (std::size_t i = 0; i < decltype(value)::shape::numel; ++i) b.push_back(convert<f32>(host.data()[i]));
            }
        });
        [&]<std::size_t... I>(std::index_sequence<I...>) {
            ((units_[I].activation = unit_t<I>::activation), ...);
        }(std::make_index_sequence<count>{});
        std::size_t widest = features;
        for (const sparse_unit& u : units_) widest = std::max(widest, u.weight.rows);
        ping_.resize(blocks * widest * block);
        pong_.resize(blocks * widest * block);
    }

    // Logits for a batch of inputs (a contiguous host tensor or view of
    // shape In, any floating element type).
    template <class X>
    const output_tensor& forward(const X& x)
    {
        static_assert(host_accessible_v<typename detail::view_of<X>::place>,
                      "tenet: sparse_model::forward takes a host tensor");
        if constexpr (nn::check_model_input<In, X>()) {
            const auto xm = nn::contiguous_as<Shape<rows, features>>(x);
            f32* to = ping_.data();
            TENET_OMP_PARALLEL_FOR_IF(blocks > 1 && rows * features >= 32768)
            for (std::size_t b = 0; b < blocks; ++b)
                for (std::size_t k = 0; k < features; ++k)
                    for (std::size_t i = 0; i < block; ++i) {
                        const std::size_t r = b * block + i;
                        to[(b * features + k) * block + i] = r < rows ? convert<f32>(xm.data()[r * features + k]) : 0.0f;
                    }
            run_from<0>(ping_.data(), pong_.data());
        }
        return output_;
    }

    const output_tensor& output() const { return output_; }

    template <std::size_t I>
    const sparse_unit& unit() const
    {
        static_assert(I < count, "tenet: sparse_model::unit<I>: no such unit");
        return units_[I];
    }
    static constexpr std::size_t unit_count() { return count; }

    // Weights kept (stored), and the bytes of everything that defines the
    // model: CSR weights and f32 biases.
    std::size_t nonzeros() const
    {
        std::size_t n = 0;
        for (const sparse_unit& u : units_) n += u.weight.nonzeros();
        return n;
    }
    std::size_t bytes() const
    {
        std::size_t n = 0;
        for (const sparse_unit& u : units_) n += u.weight.bytes() + u.bias.size() * sizeof(f32);
        return n;
    }

private:
    // Unit I from x [blocks][in][block] into y [blocks][out][block]; the
    // last unit's output is transposed into the logits. Threads split the
    // (block, output feature) pairs: whole blocks when there are enough.
    template <std::size_t I>
    void run_from(f32* x, f32* y)
    {
        constexpr std::size_t in = unit_t<I>::in_features, out = unit_t<I>::out_features;
        constexpr linalg::activation act = unit_t<I>::activation;
        const sparse_unit& u = units_[I];
        TENET_OMP_PARALLEL_FOR_IF(blocks * out > 1 && u.weight.nonzeros() * rows >= 32768)
        for (std::size_t t = 0; t < blocks * out; ++t) {
            const std::size_t b = t / out, o = t % out;
            output_feature<act>(u, o, x + b * in * block, y + (b * out + o) * block);
        }
        if constexpr (I + 1 < count) {
            run_from<I + 1>(y, x);  // x is free again
        } else {
            f32* logits = output_.data();
            for (std::size_t r = 0; r < rows; ++r)
                for (std::size_t o = 0; o < out; ++o) logits[r * out + o] = y[(r / block * out + o) * block + r % block];
        }
    }

    // Output feature o of one block of rows: x is the block's [in][block]
    // inputs, y its [block] outputs.
    template <linalg::activation Act>
    static void output_feature(const sparse_unit& u, std::size_t o, const f32* x, f32* y)
    {
        f32 acc[block / lanes][lanes] = {};
        const std::uint32_t* columns = u.weight.columns.data();
        const f32* values = u.weight.values.data();
        for (std::uint32_t j = u.weight.row_offsets[o]; j < u.weight.row_offsets[o + 1]; ++j) {
            const f32 w = values[j];
            const f32* xk = x + std::size_t{columns[j]} * block;
            for (std::size_t q = 0; q < block / lanes; ++q)
                for (std::size_t r = 0; r < lanes; ++r) acc[q][r] += w * xk[q * lanes + r];
        }
        const f32 b = u.bias[o];
        for (std::size_t r = 0; r < block; ++r) y[r] = detail::activate<Act>(acc[r / lanes][r % lanes] + b);
    }

    std::array<sparse_unit, count> units_;
    std::vector<f32> ping_, pong_;  // activations, [blocks][features][block]
    output_tensor output_;
};

}  // namespace tenet::prune
