// optimizer<Model, Rule, Schedule>: the state a rule (sgd, adamw, lamb) needs
// for one model, allocated once in the model's place, and the fused step.
//
//   nn::model<mlp, bf16_mixed, Shape<256, 784>> net(42);
//   train::optimizer opt(net, train::adamw{}, train::warmup_cosine_lr{1e-3f, 500, 10000, 0.0f});
//   net.forward(x); ...; net.backward(dy);
//   opt.step();        // ONE launch: every parameter, master weights and state
//
// - Master weights: when the storage type is narrower than the master type
//   (bf16, fp16 policies) the optimizer keeps an fp32 copy of every parameter
//   and writes the rounded storage weights in the same pass; for fp32 the
//   parameters are the master weights.
// - The learning rate, the step counters, the loss scale and the skip flag live
//   in the model's place (`step_state`), so steps can be captured in a CUDA
//   Graph and replayed with nothing read back.
// - Dynamic loss scaling is on exactly when the policy says so
//   (fp16_mixed): the backward multiplies by loss_scale(), the step divides it
//   out, skips a step with an inf/NaN gradient and adjusts the scale. Whenever
//   the step computes the global gradient norm (loss scaling, clipping, LAMB,
//   optimizer_options::skip_nonfinite) a non-finite gradient skips the update;
//   otherwise the update runs (the weights it touches become NaN). Either way
//   step_state::nonfinite counts the step (read when asked: no sync per step).
// - Pruning (optimizer_options::masked): the optimizer keeps a
//   prune::masks<Model>; in the same pass the step drops pruned weights'
//   gradients and writes those weights, their master copies and their state
//   as exact zeros, so they stay zero however long training goes on.
// - Sharding (ZeRO stage 1, what trainer_options::zero sets up): given a
//   parameter_shard, the optimizer keeps master weights and state for that
//   shard alone and updates only its parameters. The global gradient norm
//   and inf/NaN check then span the ranks: measure() writes this shard's
//   totals, the ranks sum them, step(gradients, divisor, totals) updates.
// - Weight averaging (optimizer_options::average, ema.hpp): an exponential
//   moving average of the weights, moved in the same launch, saved in
//   checkpoints; swap_average() (or train::average_scope) puts it in the
//   model for evaluation and takes it out again.
// - Parameter groups (optimizer_options::groups, parameter_groups.hpp): a
//   rate multiplier and weight decay per parameter, from a table in the
//   model's place read by the same launch. set_groups() rewrites the table
//   in place, so a captured step replays with the new settings.
#pragma once

#include "../io/checkpoint_sections.hpp"
#include "../memory/copy_bytes.hpp"
#include "../nn/layer.hpp"
#include "../prune/masks.hpp"
#include "adamw.hpp"
#include "element_passes.hpp"
#include "ema.hpp"
#include "fused_update.hpp"
#include "lamb.hpp"
#include "lr_schedule.hpp"
#include "parameter_groups.hpp"
#include "parameter_shard.hpp"
#include "sgd.hpp"
#include "update_ranges.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace tenet::train {

struct optimizer_options {
    float clip_norm = 0.0f;         // clip the global gradient norm to this; 0 is off
    loss_scaler_options scaler{};   // for policies with dynamic loss scaling
    bool masked = false;            // keep pruning masks (masks()) and enforce them in every step
    bool skip_nonfinite = false;    // skip a step with an inf/NaN gradient (as scaling, clipping, LAMB do)
    // Per-parameter rate multipliers and weight decay. None given (the
    // default): every parameter trains with the rule as it is, decay
    // included, as torch.optim does. (Not a std::optional: g++ 12 warns
    // falsely of its flag read uninitialized when such options are copied.)
    parameter_groups groups{};
    // An exponential moving average of the weights (ema.hpp); none: not kept.
    std::optional<ema> average{};
};

template <class Model, class Rule, lr_schedule Schedule = constant_lr>
class optimizer {
public:
    using policy = typename Model::policy;
    using storage_type = typename policy::storage;
    using master_type = nn::gradient_t<policy>;
    using place = typename Model::place;
    using rule_type = Rule;
    using schedule_type = Schedule;

    static_assert(training_policy<policy>, "tenet: an optimizer needs a model with a training precision policy");
    static_assert(std::is_trivially_copyable_v<Schedule>,
                  "tenet: an LR schedule runs inside the optimizer kernel: it must be trivially copyable");

    static constexpr std::size_t numel = Model::trainable_numel;  // (frozen parameters have no state)
    static constexpr bool separate_master = !std::is_same_v<storage_type, master_type>;
    static constexpr bool dynamic_loss_scaling = policy::dynamic_loss_scaling;
    static constexpr bool on_host = host_accessible_v<place>;
    // Master weights (when separate) and the rule's state, in bytes: for the
    // whole model, and at most per rank when sharded over `ranks` (ZeRO-1).
    static constexpr std::size_t state_bytes_for(std::size_t elements)
    {
        return ((separate_master ? elements : 0) + Rule::slots * elements) * sizeof(master_type);
    }  // (a kept average adds elements * sizeof(master_type))
    static constexpr std::size_t state_bytes = state_bytes_for(numel);
    static constexpr std::size_t sharded_state_bytes(std::size_t ranks)
    {
        return state_bytes_for(parameter_shard::largest(numel, ranks));
    }

    explicit optimizer(Model& model, Rule rule = {}, Schedule schedule = default_schedule<Rule, Schedule>(),
                       optimizer_options options = {}, parameter_shard shard = parameter_shard::whole(numel))
        : model_(model), rule_(rule), schedule_(schedule), options_(checked(options)), shard_(checked(shard)),
          master_(separate_master ? shard_.size() : 0, current_stream()),
          slots_(Rule::slots * shard_.size(), current_stream()),
          state_(1, current_stream()),
          parameters_(detail::trainable_parameters(model)),
          segments_(detail::trainable_segments(model).size(), current_stream()),
          ranges_(options_.groups.given() ? detail::shard_ranges(detail::trainable_segments(model), numel, shard_).size() : 0,
                  current_stream()),
          average_(options_.average ? shard_.size() : 0, current_stream())
    {
        grouped_ = options_.groups.given();
        upload_settings(options_.groups, grouped_);
        if (options.masked) masks_ = std::make_unique<prune::masks<Model>>(model);
        static_assert(on_host || TENET_CUDA_COMPILER,
                      "tenet: an optimizer for a Device model needs a CUDA compiler: compile this file with nvcc");
        if constexpr (requires { rule.check(); }) rule.check();
        if constexpr (requires { schedule.check(); }) schedule.check();
        detail::for_each_element<place>(slots_.size(), detail::zero_element<master_type>{slots_.data()}, current_stream());
        load_master_from_parameters();
        if (averaging()) reset_average();
        step_state initial;
        if constexpr (dynamic_loss_scaling) initial.loss_scale = options.scaler.initial_scale;
        set_state(initial);
        prepare_device_scratch();
    }

    optimizer(const optimizer&) = delete;
    optimizer& operator=(const optimizer&) = delete;

    // Updates every parameter from the model's gradients (one launch).
    void step() { step(model_.gradients(), 1.0f); }

    // ... from `gradients` (flat, like the model's), which sum `divisor`
    // micro-batches: the update uses their mean.
    void step(const master_type* gradients, float divisor)
    {
        if (sharded())
            throw error("tenet: optimizer: a sharded optimizer's step spans the ranks: measure(), sum the totals "
                        "over the ranks, then step(gradients, divisor, totals)");
        update(arguments(gradients, divisor, nullptr, false));
    }

    // A sharded step, in two calls around a sum over the ranks. measure()
    // writes totals[0, 2) (in the model's place): this shard's sum of
    // squared gradients and whether one is inf/NaN, after the loss scale and
    // `divisor` are divided out. step() takes those totals summed over the
    // ranks (the global norm and check) and updates this shard's parameters
    // from `gradients` (flat, whole: this shard's part is read, the ranks'
    // sum by then). Every rank then holds the same step state.
    void measure(const master_type* gradients, float divisor, master_type* totals)
    {
        update(arguments(gradients, divisor, totals, true));
    }
    void step(const master_type* gradients, float divisor, master_type* totals)
    {
        update(arguments(gradients, divisor, totals, false));
    }

    // The elements whose master weights and state this optimizer keeps.
    const parameter_shard& shard() const { return shard_; }
    bool sharded() const { return shard_ != parameter_shard::whole(numel); }

    // The step state, read back to the host (waits for the stream).
    step_state state() const
    {
        step_state s;
        copy_raw(&s, state_.data(), sizeof s);
        current_stream().synchronize();
        return s;
    }

    void set_state(const step_state& s)
    {
        copy_raw(state_.data(), &s, sizeof s);
        current_stream().synchronize();  // s may be a temporary
    }

    // The loss scale as a rank-0 tensor in the model's place (1 without
    // dynamic scaling): the backward's upstream gradient.
    auto loss_scale() const { return make_view<Shape<>, place>(static_cast<const float*>(&state_.data()->loss_scale)); }

    // The master weights (the parameters themselves for fp32) and the rule's
    // state slots, each shard().size() long (numel unless sharded): what a
    // checkpoint saves.
    master_type* master()
    {
        if constexpr (separate_master) return master_.data();
        else return model_.parameters() + shard_.begin;
    }
    master_type* slot(std::size_t j) { return slots_.data() + j * shard_.size(); }

    // Master weights from the model's parameters (after the parameters were
    // set from outside: initialisation, a checkpoint).
    void load_master_from_parameters()
    {
        if constexpr (separate_master)
            detail::for_each_element<place>(
                shard_.size(), detail::widen_element<master_type, storage_type>{master_.data(), model_.parameters() + shard_.begin},
                current_stream());
    }

    // ---- the weights' moving average (optimizer_options::average) ----------

    bool averaging() const { return average_.size() > 0; }
    bool average_swapped_in() const { return averaged_in_; }
    // The average of this shard's weights (shard().size() long).
    master_type* average()
    {
        require_average("average");
        return average_.data();
    }

    // Starts the average again from the weights as they are now.
    void reset_average()
    {
        require_average("reset_average");
        require_swapped_out("reset_average");
        tenet::copy_bytes<place, place>(average_.data(), master(), shard_.size() * sizeof(master_type), current_stream());
    }

    // Puts the averaged weights into the model (this shard's: a sharded
    // optimizer's trainer gathers them), or, called again, the trained
    // weights back, exactly as they were. No copy is made: fp32 weights trade
    // places with the average; 16-bit storage weights are rounded from the
    // average, then from the master weights again. Steps and saves refuse to
    // run while the average is in (train::average_scope restores it).
    void swap_average()
    {
        require_average("swap_average");
        storage_type* weights = model_.parameters() + shard_.begin;
        if constexpr (separate_master) {
            const master_type* from = averaged_in_ ? master_.data() : average_.data();
            detail::for_each_element<place>(shard_.size(), detail::round_element<storage_type, master_type>{weights, from},
                                            current_stream());
        } else {
            detail::for_each_element<place>(shard_.size(), detail::swap_element<master_type>{weights, average_.data()},
                                            current_stream());
        }
        averaged_in_ = !averaged_in_;
    }

    // The pruning masks (optimizer_options::masked): change them with prune/
    // (magnitude, n_of_m, pruner), then apply_masks().
    bool masked() const { return masks_ != nullptr; }
    prune::masks<Model>& masks()
    {
        if (!masks_) throw error("tenet: optimizer: no pruning masks: construct it with optimizer_options::masked = true");
        return *masks_;
    }

    // Zeroes the pruned weights, their master copies and their state now (the
    // next step would too; this prunes the model before it runs again).
    void apply_masks()
    {
        auto& m = masks();
        m.apply();
        if constexpr (separate_master) zero_pruned(master_.data());
        for (std::size_t j = 0; j < Rule::slots; ++j) zero_pruned(slot(j));
        if (averaging()) zero_pruned(average_.data());
    }

    // The optimizer's state in one checksummed file, written atomically: the
    // master weights (when separate from the parameters), the rule's state,
    // the step state (learning-rate step, loss scale, counters) and the
    // pruning masks when masked. The model's parameters are the model's to
    // save (nn::model::save): a hand-written loop saves both. (A sharded
    // optimizer's state is saved by its trainer, which gathers the shards.)
    void save(const std::string& path)
    {
        if (sharded())
            throw error("tenet: optimizer: a sharded optimizer holds one shard of the state: save it with its "
                        "trainer (train::trainer::save gathers the shards into one file)");
        io::checkpoint_contents contents{signature(), model_.step(), {}};
        append_sections(contents);
        io::write_checkpoint_file(path, contents);
    }

    // Restores what save() wrote (a sharded optimizer takes its shard of
    // it). The whole file is checked first (format,
    // checksum, signature, every section's size, a step state advance()
    // could reach, every value finite, mask bytes 0 or 1): on any error
    // tenet::format_error / io_error is thrown and nothing has changed.
    // Masked: the pruned weights of the model are zeroed.
    void load(const std::string& path)
    {
        const std::string expected = signature();
        const io::checkpoint_contents contents =
            io::read_checkpoint_file(path, expected, io::checkpoint_size_bound(expected, max_sections, max_payload));
        restore(checked_sections(path, contents));
    }

    // What a file of this optimizer's state must match: the policy's types,
    // the rule, loss scaling, whether it is masked, every parameter's name
    // and shape.
    std::string signature()
    {
        return std::string("tenet-optimizer/") + element_name<storage_type> + "/" + element_name<master_type> + "/" +
               Rule::name + (dynamic_loss_scaling ? "/dynamic-scaling" : "") + (masked() ? "/masked" : "") +
               (averaging() ? "/average" : "") + ":" + model_.parameter_list();
    }

    // The pieces of save() and load(), for files that hold more (a trainer's
    // checkpoint): append the sections; find and check them all (nothing
    // changes); restore from what was checked.
    static constexpr std::size_t max_sections = 3 + separate_master + Rule::slots;
    static constexpr std::uint64_t max_payload = std::uint64_t{numel} * sizeof(bool) +
                                                 std::uint64_t{numel} * sizeof(master_type) *
                                                     (1 + separate_master + Rule::slots) +
                                                 sizeof(step_state);

    // Sections hold whole buffers: a sharded optimizer's caller gives
    // `whole`, which maps a shard's data to the whole buffer's (numel long,
    // in the model's place), gathered from the ranks -- or to null on a rank
    // that only takes part in the gather and writes no file.
    void append_sections(io::checkpoint_contents& contents)
    {
        append_sections(contents, [](const master_type* data) { return data; });
    }
    template <class Whole>
    void append_sections(io::checkpoint_contents& contents, Whole&& whole)
    {
        require_swapped_out("save");
        const auto append = [&](std::string name, const master_type* data) {
            if (const master_type* all = whole(data)) contents.sections.push_back(section(std::move(name), all));
        };
        if constexpr (separate_master) append("master", master_.data());
        for (std::size_t j = 0; j < Rule::slots; ++j) append("state" + std::to_string(j), slot(j));
        if (averaging()) append("average", average_.data());
        if (masked())
            contents.sections.push_back(io::section_of<place>("masks", masks().data(), numel, current_stream()));
        contents.sections.push_back(io::section_of_value("step_state", state()));
    }

    struct checked_state {
        const io::checkpoint_section* master = nullptr;
        std::array<const io::checkpoint_section*, Rule::slots> slots{};
        const io::checkpoint_section* average = nullptr;
        step_state state;
        std::vector<char> keep;  // masked: the mask bytes
    };

    checked_state checked_sections(const std::string& path, const io::checkpoint_contents& contents) const
    {
        constexpr std::size_t bytes = numel * sizeof(master_type);
        checked_state c;
        if constexpr (separate_master) c.master = &io::find_section(path, contents, "master", bytes);
        for (std::size_t j = 0; j < Rule::slots; ++j) c.slots[j] = &io::find_section(path, contents, "state" + std::to_string(j), bytes);
        if (average_.size() > 0) {
            c.average = &io::find_section(path, contents, "average", bytes);
            io::check_finite<master_type>(path, *c.average);
        }
        const auto& state = io::find_section(path, contents, "step_state", sizeof(step_state));
        std::memcpy(&c.state, state.bytes.data(), sizeof c.state);
        if (const char* why = implausible(c.state, dynamic_loss_scaling, options_.scaler); *why)
            throw format_error(path, std::string("step_state: ") + why);
        if (c.master) io::check_finite<master_type>(path, *c.master);
        for (const io::checkpoint_section* slot : c.slots) io::check_finite<master_type>(path, *slot);
        if (masks_) {
            const auto& masks = io::find_section(path, contents, "masks", numel * sizeof(bool));
            c.keep.resize(numel);
            std::memcpy(c.keep.data(), masks.bytes.data(), numel);
            masks_->check_bytes(c.keep, path);
        }
        return c;
    }

    void restore(const checked_state& c)
    {
        if (c.master) upload_shard(master_.data(), *c.master);
        for (std::size_t j = 0; j < Rule::slots; ++j) upload_shard(slot(j), *c.slots[j]);
        if (c.average) upload_shard(average_.data(), *c.average);
        averaged_in_ = false;  // (the caller restored the trained weights)
        set_state(c.state);
        if (masks_) {
            masks_->from_host(c.keep);
            apply_masks();  // the file's pruned weights may not be zero
        }
    }

    // Replaces the parameter groups (gradual unfreezing: raise a group's
    // lr_scale from 0). The table is rewritten in place, so captured steps
    // (the trainer's CUDA Graph) replay with it. Only an optimizer built
    // with groups has a table the update reads: any other throws. (Given no
    // groups, the biases and norms still keep out of the decay.)
    void set_groups(const parameter_groups& groups)
    {
        if (!grouped_)
            throw error("tenet: optimizer: set_groups needs an optimizer built with optimizer_options::groups "
                        "(without them the update reads no table: start with a group such as {\"*\"})");
        upload_settings(groups, true);  // checks everything before it changes anything
        options_.groups = groups;
    }

    // Each parameter's name and what it trains with (rate multiplier, weight
    // decay), in the model's order.
    std::vector<std::pair<std::string, parameter_setting>> parameter_settings() const
    {
        std::vector<std::pair<std::string, parameter_setting>> out;
        for (std::size_t p = 0; p < parameters_.size(); ++p) out.emplace_back(parameters_[p].name, settings_[p]);
        return out;
    }

    const Rule& rule() const { return rule_; }
    const Schedule& schedule() const { return schedule_; }
    const optimizer_options& options() const { return options_; }
    Model& model() { return model_; }

private:
    using args_type = detail::update_args<Rule, Schedule, storage_type, master_type>;

    io::checkpoint_section section(std::string name, const master_type* data) const
    {
        return io::section_of<place>(std::move(name), data, numel, current_stream());
    }

    // This shard's part of a whole section (whose size was checked).
    void upload_shard(master_type* to, const io::checkpoint_section& from) const
    {
        copy_raw(to, from.bytes.data() + shard_.begin * sizeof(master_type), shard_.size() * sizeof(master_type));
        current_stream().synchronize();  // the section is the caller's
    }

    // Settings its own checkpoints can hold: implausible() refuses a loss
    // scale that is not finite and positive, and good_steps at or past the
    // growth interval (which a growth interval of 0 would always be).
    static optimizer_options checked(const optimizer_options& o)
    {
        const auto require = [](bool ok, const char* what) { detail::require_hyperparameter(ok, "optimizer", what); };
        constexpr float largest = std::numeric_limits<float>::max();
        require(o.clip_norm >= 0 && o.clip_norm <= largest, "clip_norm must be >= 0 (0: no clipping) and finite");
        require(o.scaler.initial_scale > 0 && o.scaler.initial_scale <= largest,
                "scaler.initial_scale must be positive and finite");
        require(o.scaler.growth_factor >= 1 && o.scaler.growth_factor <= largest,
                "scaler.growth_factor must be >= 1 and finite");
        require(o.scaler.backoff_factor > 0 && o.scaler.backoff_factor <= 1, "scaler.backoff_factor must lie in (0, 1]");
        require(o.scaler.growth_interval > 0, "scaler.growth_interval must be positive");
        if (o.average) o.average->check();
        return o;
    }

    parameter_shard checked(parameter_shard shard) const
    {
        check_shard(shard, numel);
        if (Rule::layerwise && shard != parameter_shard::whole(numel))
            throw error(std::string("tenet: optimizer: ") + Rule::name +
                        " scales each tensor's update by its norms, which a shard does not hold whole: shard "
                        "(ZeRO-1) rules that update element by element (sgd, adamw)");
        return shard;
    }

    void require_average(const char* what) const
    {
        if (!averaging())
            throw error(std::string("tenet: optimizer: ") + what +
                        ": no average is kept: construct it with optimizer_options::average = train::ema{...}");
    }
    void require_swapped_out(const char* what) const
    {
        if (averaged_in_)
            throw error(std::string("tenet: optimizer: ") + what +
                        " with the averaged weights swapped in: swap_average() again (or let the average_scope end) first");
    }

    void update(const args_type& args)
    {
        require_swapped_out("a step");
        if constexpr (on_host) {
            detail::host_update<dynamic_loss_scaling>(args);
        } else {
#if TENET_CUDA_COMPILER
            detail::device_update<dynamic_loss_scaling>(args, grid_, current_stream());
#endif
        }
    }

    // Between the model's place and host memory (either way: cudaMemcpyDefault).
    static void copy_raw(void* to, const void* from, std::size_t bytes)
    {
        tenet::copy_bytes<place, Host>(to, from, bytes, current_stream());
    }

    // The shard's pruned elements of `data` (shard-long) set to zero.
    void zero_pruned(master_type* data)
    {
        detail::for_each_element<place>(
            shard_.size(), detail::zero_pruned_element<master_type>{data, masks_->data() + shard_.begin}, current_stream());
    }

    // The rule's weight decay, which groups replace (a rule without one
    // takes none from them).
    float rule_decay(const parameter_groups& groups) const
    {
        if constexpr (requires { rule_.weight_decay; }) {
            return rule_.weight_decay;
        } else {
            for (const parameter_group& g : groups.groups)
                    if (g.weight_decay)
                        throw error("tenet: parameter group " + detail::group_name(g) + " sets a weight decay, "
                                    "which the rule " + Rule::name + " does not have");
            return 0.0f;
        }
    }

    // Resolves `groups` (not `grouped`: every parameter as the rule says)
    // and writes the settings into the segments and ranges in the model's place.
    void upload_settings(const parameter_groups& groups, bool grouped)
    {
        const float decay = rule_decay(groups);
        std::vector<parameter_setting> settings =
            grouped ? resolve_groups(groups, parameters_, decay)
                   : std::vector<parameter_setting>(parameters_.size(), parameter_setting{1.0f, decay});
        std::vector<detail::segment> list = detail::trainable_segments(model_);
        for (std::size_t p = 0; p < list.size(); ++p) {
            list[p].lr_scale = settings[p].lr_scale;
            list[p].weight_decay = settings[p].weight_decay;
        }
        const std::vector<detail::segment> ranges = detail::shard_ranges(list, numel, shard_);
        copy_raw(segments_.data(), list.data(), list.size() * sizeof(detail::segment));
        if (ranges_.size() > 0) copy_raw(ranges_.data(), ranges.data(), ranges.size() * sizeof(detail::segment));
        current_stream().synchronize();  // the lists are about to go
        settings_ = std::move(settings);
    }

    void prepare_device_scratch()
    {
#if TENET_CUDA_COMPILER
        if constexpr (!on_host) {
            grid_ = detail::update_grid<dynamic_loss_scaling, Rule, Schedule, storage_type, master_type>(numel);
            partials_ = buffer<master_type, place>(std::size_t{grid_} * (2 + 2 * segments_.size()), current_stream());
        }
#endif
    }

    args_type arguments(const master_type* gradients, float divisor, master_type* totals, bool measure)
    {
        args_type a{};
        a.master = master();
        a.parameters = model_.parameters() + shard_.begin;
        a.gradients = gradients + shard_.begin;
        a.keep = masks_ ? masks_->data() + shard_.begin : nullptr;
        for (std::size_t j = 0; j < Rule::slots; ++j) a.slots[j] = slot(j);
        a.numel = shard_.size();
        a.segments = segments_.data();
        a.segment_count = static_cast<unsigned>(segments_.size());
        a.ranges = ranges_.size() > 0 ? ranges_.data() : nullptr;
        a.range_count = static_cast<unsigned>(ranges_.size());
        a.state = state_.data();
        a.partials = partials_.data();
        a.rule = rule_;
        a.schedule = schedule_;
        a.scaler = options_.scaler;
        a.clip_norm = options_.clip_norm;
        a.grad_divisor = divisor;
        a.skip_nonfinite = options_.skip_nonfinite;
        a.totals = totals;
        a.measure = measure;
        a.average = averaging() ? average_.data() : nullptr;
        a.average_rule = options_.average.value_or(ema{});
        return a;
    }

    Model& model_;
    Rule rule_;
    Schedule schedule_;
    optimizer_options options_;
    parameter_shard shard_;
    buffer<master_type, place> master_;
    buffer<master_type, place> slots_;
    buffer<step_state, place> state_;
    std::vector<parameter_identity> parameters_;  // each trainable parameter's name, rank and layer kind
    std::vector<parameter_setting> settings_;                // each parameter's, as the update reads them
    buffer<detail::segment, place> segments_;
    buffer<detail::segment, place> ranges_;  // with groups: the update's ranges of this shard
    buffer<master_type, place> average_;  // the weights' moving average, when kept
    buffer<master_type, place> partials_{0, current_stream()};
    unsigned grid_ = 0;
    bool averaged_in_ = false;  // the model holds the average (swap_average)
    bool grouped_ = false;      // built with groups: the update reads the ranges
    std::unique_ptr<prune::masks<Model>> masks_;  // only when masked
};

}  // namespace tenet::train
