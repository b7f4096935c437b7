// parameter_groups: per-parameter learning-rate multipliers and weight decay,
// resolved once by name and shape and applied inside the fused update (still
// one launch per step; optimizer_options::groups).
//
//   train::optimizer_options o;
//   o.groups = train::parameter_groups{{
//       {.pattern = "0.*", .lr_scale = 0.1f},               // the backbone at a tenth of the rate
//       {.pattern = "4.weight", .weight_decay = 0.05f},     // the head's weights decay more
//       {.lr_scale = 2.0f, .layer = "*Norm*"},              // every LayerNorm and BatchNorm2d
//   }};
//
// How a parameter's settings are found (torch.optim's param_groups, timm's
// recipe):
// - Biases and normalisation parameters -- every parameter of rank 1 (what
//   timm's `param.ndim <= 1` selects) -- take no weight decay, unless
//   decay_biases_and_norms is set. That is the default once any group is
//   given (a single {"*"} gives it alone); an optimizer given no groups
//   decays every parameter, as torch.optim.AdamW(model.parameters()) does.
// - The first group that selects a parameter gives the rate multiplier
//   and, for parameters that decay, the weight decay (unset: the rule's).
//   A group selects by name (`pattern`), by the kind of layer that holds
//   the parameter (`layer`: nn::layer_kind_v, "Linear", "LayerNorm", ...),
//   or both; an empty one selects any. Both are globs over the whole text:
//   '*' any run, '?' one character.
//   A group that matches no parameter is an error (a misspelt name would
//   otherwise train silently with the defaults).
// - lr_scale 0 stops a parameter's updates at run time (gradual unfreezing:
//   optimizer::set_groups). Its gradient and optimizer state are still
//   computed; nn::Frozen decides at compile time and computes neither.
#pragma once

#include "../memory/error.hpp"

#include <cmath>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tenet::train {

struct parameter_group {
    std::string pattern{};              // glob over parameter names ("0.*", "*.bias", "3.?.weight"); empty: any
    float lr_scale = 1.0f;              // multiplies the schedule's rate; 0 stops updates
    std::optional<float> weight_decay{};  // replaces the rule's; unset: the rule's
    std::string layer{};                // glob over layer kinds ("LayerNorm", "*Norm*", "Conv2d"); empty: any
};

struct parameter_groups {
    std::vector<parameter_group> groups{};  // the first match wins
    bool decay_biases_and_norms = false;  // true: rank-1 parameters decay as the rest

    // Whether any group is given: an optimizer given none trains every
    // parameter as its rule says (biases and norms decay too, as in
    // torch.optim); a single group {"*"} gives the recipe alone.
    bool given() const { return !groups.empty(); }
};

// Layer-wise rate decay for fine-tuning (BEiT, timm's param_groups_layer_decay):
// `layers` are patterns from the bottom (the embeddings) to the top (the last
// encoder layer); layer j of L learns at decay^(L - j) of the rate, and
// parameters none matches (the head) at the full rate. Append other groups
// after these (or before, to take precedence).
inline std::vector<parameter_group> layer_rate_decay(float decay, const std::vector<std::string>& layers)
{
    if (!(decay > 0.0f && decay <= 1.0f))
        throw error("tenet: layer_rate_decay: decay " + std::to_string(decay) + " must lie in (0, 1]");
    std::vector<parameter_group> out;
    for (std::size_t j = 0; j < layers.size(); ++j)
        out.push_back({layers[j], std::pow(decay, static_cast<float>(layers.size() - j)), std::nullopt});
    return out;
}

// What one parameter trains with.
struct parameter_setting {
    float lr_scale = 1.0f;
    float weight_decay = 0.0f;
};

// A trainable parameter as groups see it: its name, rank and the kind of
// the layer that holds it (nn::layer_kind_v; "" where unknown).
struct parameter_identity {
    std::string name;
    std::size_t rank = 0;
    std::string kind{};
};

namespace detail {

// Whether `name` matches the glob `pattern` as a whole ('*', '?').
inline bool glob_match(std::string_view pattern, std::string_view name)
{
    std::size_t p = 0, n = 0, star = std::string_view::npos, resume = 0;
    while (n < name.size()) {
        if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
            ++p, ++n;
        } else if (p < pattern.size() && pattern[p] == '*') {
            star = p++;
            resume = n;
        } else if (star != std::string_view::npos) {
            p = star + 1;
            n = ++resume;
        } else {
            return false;
        }
    }
    while (p < pattern.size() && pattern[p] == '*') ++p;
    return p == pattern.size();
}

// How a group is named in messages: its pattern and layer kind.
inline std::string group_name(const parameter_group& group)
{
    std::string out = "'" + (group.pattern.empty() ? std::string("*") : group.pattern) + "'";
    return group.layer.empty() ? out : out + " (layer " + group.layer + ")";
}

inline bool selects(const parameter_group& group, const parameter_identity& p)
{
    return (group.pattern.empty() || glob_match(group.pattern, p.name)) &&
           (group.layer.empty() || glob_match(group.layer, p.kind));
}

inline void check_groups(const parameter_groups& g)
{
    for (const parameter_group& group : g.groups) {
        if (group.pattern.empty() && group.layer.empty())
            throw error("tenet: a parameter group selects nothing: give it a pattern, a layer kind, or \"*\"");
        if (!(group.lr_scale >= 0.0f && std::isfinite(group.lr_scale)))
            throw error("tenet: parameter group " + group_name(group) + ": lr_scale " + std::to_string(group.lr_scale) +
                        " must be >= 0 and finite");
        if (group.weight_decay && !(*group.weight_decay >= 0.0f && std::isfinite(*group.weight_decay)))
            throw error("tenet: parameter group " + group_name(group) + ": weight_decay " +
                        std::to_string(*group.weight_decay) + " must be >= 0 and finite");
    }
}

}  // namespace detail

// The settings of every parameter, in order, from their names, ranks and
// layer kinds; rule_decay is the rule's weight decay. Throws when a group
// selects nothing.
inline std::vector<parameter_setting> resolve_groups(const parameter_groups& g,
                                                     const std::vector<parameter_identity>& parameters, float rule_decay)
{
    detail::check_groups(g);
    std::vector<bool> used(g.groups.size(), false);
    std::vector<parameter_setting> out;
    for (const parameter_identity& p : parameters) {
        parameter_setting s{1.0f, rule_decay};
        std::size_t k = 0;
        while (k < g.groups.size() && !detail::selects(g.groups[k], p)) ++k;
        if (k < g.groups.size()) {
            used[k] = true;
            s.lr_scale = g.groups[k].lr_scale;
            if (g.groups[k].weight_decay) s.weight_decay = *g.groups[k].weight_decay;
        }
        if (p.rank <= 1 && !g.decay_biases_and_norms) s.weight_decay = 0.0f;
        out.push_back(s);
    }
    for (std::size_t k = 0; k < g.groups.size(); ++k)
        if (!used[k]) {
            std::string list;
            for (const parameter_identity& p : parameters)
                list += (list.empty() ? "" : ", ") + p.name + (p.kind.empty() ? "" : " (" + p.kind + ")");
            throw error("tenet: parameter group " + detail::group_name(g.groups[k]) +
                        " selects no parameter (or only ones an earlier group took); the parameters: " + list);
        }
    return out;
}

}  // namespace tenet::train
