// How sparse a model is, per prunable parameter and in total: `kept` counts
// the mask's trues (what pruning decided), `nonzero` the weights that are not
// zero (what the model holds: equal to kept once apply() ran, unless a kept
// weight is itself 0). Sparsity is the pruned fraction, from the masks.
//
//   std::cout << prune::report(m).table();
#pragma once

#include "../numeric/convert.hpp"
#include "masks.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

namespace tenet::prune {

namespace detail {

inline double pruned_fraction(std::size_t numel, std::size_t kept)
{
    return numel == 0 ? 0.0 : static_cast<double>(numel - kept) / static_cast<double>(numel);
}

}  // namespace detail

struct layer_sparsity {
    std::string name;
    std::size_t rows = 0, cols = 0, numel = 0, kept = 0, nonzero = 0;

    double sparsity() const { return detail::pruned_fraction(numel, kept); }
};

struct sparsity_report {
    std::vector<layer_sparsity> layers;
    std::size_t numel = 0, kept = 0, nonzero = 0;   // the prunable parameters together
    std::size_t parameters = 0, parameter_nonzero = 0;  // every parameter of the model

    double sparsity() const { return detail::pruned_fraction(numel, kept); }

    // An aligned text table: name, shape, nonzero / numel, sparsity; then the
    // prunable total and every parameter's nonzero count.
    std::string table() const
    {
        struct row {
            std::string name, shape, count, sparsity;
        };
        const auto percent = [](double fraction) {
            char text[32];
            std::snprintf(text, sizeof text, "%.2f%%", 100.0 * fraction);
            return std::string(text);
        };
        const auto count = [](std::size_t nonzero, std::size_t numel) {
            return std::to_string(nonzero) + " / " + std::to_string(numel);
        };
        std::vector<row> rows{{"parameter", "shape", "nonzero / numel", "sparsity"}};
        for (const auto& l : layers)
            rows.push_back({l.name, std::to_string(l.rows) + " x " + std::to_string(l.cols), count(l.nonzero, l.numel),
                            percent(l.sparsity())});
        rows.push_back({"total", "", count(nonzero, numel), percent(sparsity())});
        rows.push_back({"all parameters", "", count(parameter_nonzero, parameters), ""});
        std::size_t width[4] = {};
        for (const auto& r : rows) {
            width[0] = std::max(width[0], r.name.size());
            width[1] = std::max(width[1], r.shape.size());
            width[2] = std::max(width[2], r.count.size());
            width[3] = std::max(width[3], r.sparsity.size());
        }
        const auto pad = [](const std::string& s, std::size_t w, bool right) {
            const std::string space(w - s.size(), ' ');
            return right ? space + s : s + space;
        };
        std::string out;
        for (const auto& r : rows) {
            std::string line = pad(r.name, width[0], false) + "  " + pad(r.shape, width[1], false) + "  " +
                               pad(r.count, width[2], true) + "  " + pad(r.sparsity, width[3], true);
            line.erase(line.find_last_not_of(' ') + 1);
            out += line + "\n";
        }
        return out;
    }
};

// Reads the masks and the model's parameters back to the host and counts.
template <class Model>
sparsity_report report(const masks<Model>& m)
{
    using place = typename masks<Model>::place;
    using T = typename Model::storage_type;
    Model& model = m.model();
    std::vector<T> values(Model::flat_numel);
    tenet::copy_bytes<Host, place>(values.data(), model.parameters(), Model::flat_numel * sizeof(T),
                                           current_stream());
    const std::vector<char> keep = m.to_host();  // (synchronizes the stream)
    const auto nonzero = [&](std::size_t offset, std::size_t numel) {
        std::size_t n = 0;
        for (std::size_t i = offset; i < offset + numel; ++i) n += convert<f64>(values[i]) != 0.0;
        return n;
    };
    sparsity_report r;
    for (const auto& p : m.prunable()) {
        const std::size_t kept = static_cast<std::size_t>(
            std::count(keep.begin() + static_cast<std::ptrdiff_t>(p.offset),
                       keep.begin() + static_cast<std::ptrdiff_t>(p.offset + p.numel), char{1}));
        r.layers.push_back({p.name, p.rows, p.cols, p.numel, kept, nonzero(p.offset, p.numel)});
        r.numel += p.numel;
        r.kept += kept;
        r.nonzero += r.layers.back().nonzero;
    }
    model.for_each_parameter([&](const std::string&, auto value, auto) {
        using shape = typename decltype(value)::shape;
        r.parameters += shape::numel;
        r.parameter_nonzero += nonzero(static_cast<std::size_t>(value.data() - model.parameters()), shape::numel);
    });
    return r;
}

// The pruned fraction of the prunable weights (reads the masks back).
template <class Model>
double sparsity(const masks<Model>& m)
{
    const std::vector<char> keep = m.to_host();
    std::size_t numel = 0, kept = 0;
    for (const auto& p : m.prunable()) {
        numel += p.numel;
        for (std::size_t i = p.offset; i < p.offset + p.numel; ++i) kept += keep[i] != 0;
    }
    return detail::pruned_fraction(numel, kept);
}

}  // namespace tenet::prune
