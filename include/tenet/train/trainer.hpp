// trainer<Model, Rule, Schedule, Loss>: one training step -- the forward,
// the loss over the valid rows, the backward and the fused optimizer update --
// on the model's place. The loss (train/loss.hpp) is softmax cross-entropy
// unless one is given: mean_squared_error, elementwise_loss{f} for a user's
// loss, or any type meeting the loss protocol.
//
//   nn::model<mlp, bf16_mixed, Shape<256, 784>> net(42);
//   train::trainer t(net, train::adamw{}, train::warmup_cosine_lr{1e-3f, 200, 4000});
//   t.capture();                        // device: record the step as a CUDA Graph
//   while (loader.next(b)) t.step(b.x(), b.labels(), b.valid());
//   double loss = t.mean_loss();        // reads back (waits); changes nothing
//   train::epoch_summary e = t.end_epoch();  // every metric, then a new window
//
//   train::trainer r(regressor, train::adamw{}, train::constant_lr{1e-3f}, {}, train::mean_squared_error{});
//   r.step(x, targets, valid);          // targets: the output's shape
//
// - Eager by default (each kernel launched, easy to debug); after capture()
//   the first step with a given set of input buffers runs eagerly (it creates
//   cuBLASLt plans and workspaces), the second records the step as a CUDA
//   Graph, and every later one replays it: one launch per step. Graphs are
//   kept per input buffers and per accumulation phase. On the host capture()
//   changes nothing.
// - Gradient accumulation: with accumulation_steps = k, each step() is one
//   micro-batch; gradients add up in an accumulation buffer and every k-th
//   step updates with their mean (k equal micro-batches = one batch k times as big).
// - The loss scale of fp16 policies multiplies the loss gradient and is
//   divided out by the optimizer; everything stays on the device.
// - Device models run on the trainer's own stream (stream()): give it to the
//   data loader, so copies are ordered with the steps.
// - Models with Dropout draw a new mask on every replay: the step counter
//   the masks come from lives in the model's place and the captured step
//   advances it; a replayed step's masks are the eager step's of that number.
// - A bad batch: on the host, step() throws before anything changes when a
//   valid entry is neither 0 nor 1 (tenet::error) or the loss rejects a
//   target (cross-entropy: a valid row's label out of range, index_error).
//   The device cannot throw without waiting
//   for the batch: there such a step's gradient is NaN, which
//   nonfinite_steps() counts and skip_nonfinite skips (the loss turns NaN);
//   trainer_options{.check_batches = true} waits and throws as the host does.
// - Padding rows (valid 0) contribute nothing, whatever x holds there (NaN,
//   inf): the step zeroes them in its own copy of x (one fused pass), since
//   the weight gradient's 0 * NaN would otherwise be NaN. The model is told
//   which samples are real (model::forward(x, valid_samples(...))), so
//   layers that mix the batch (BatchNorm2d's statistics, running statistics
//   and gradients) count the real ones alone: a padded batch trains exactly
//   as the batch of its real rows alone would.
// - Modes: step() runs the model in training mode and evaluate() in
//   evaluation mode; each puts the model back in the mode it found, on
//   every path (nn::mode_scope).
// - Metrics: each is a running sum over a window that only reset_metrics()
//   or end_epoch() ends; reading one (mean_loss(), accuracy(),
//   evaluation_loss()) changes nothing. An empty window reads NaN.
// - Token models (an Embedding first: input_type i32): padding rows read
//   token 0; a real row's token outside [0, Vocab) is a tenet::index_error
//   before anything changes (host; device with check_batches). In a
//   captured device step nothing can be read back: there a bad token reads
//   NaN, so the step is non-finite (counted, and skipped with skip_nonfinite).
//   step(x, target, valid, lengths) adds key padding: each sequence's valid
//   length, honoured by the attention layers (checked the same way).
// - Non-finite gradients: nonfinite_steps() counts the steps that had one
//   (waits when asked, not per step). Loss scaling, clipping, LAMB or
//   trainer_options{.optimizer{.skip_nonfinite = true}} skip such a step;
//   otherwise it is applied and the weights become NaN.
// - Pruning: with trainer_options{.optimizer{.masked = true}} the optimizer
//   keeps prune::masks (optimizer().masks()); pruned weights stay zero in
//   every step, pruning between steps works with captured graphs, and
//   checkpoints carry the masks (prune/pruner.hpp drives a schedule).
// - Data parallel: trainer_options{.communicator = &comm} (dist/) makes this
//   rank one of comm.size() trainers of one model (data_parallel.hpp): rank
//   0's parameters at construction; each step() this rank's share of a
//   global batch (data::shard splits the loader's), its gradient summed
//   with the others' (once per update with accumulation), so every rank
//   takes the same update, skips the same non-finite steps and clips by the
//   same global norm. Metrics are the global batch's; save() is rank 0's;
//   dropout masks come from each rank's model seed. Every rank must
//   construct, step, evaluate, read metrics and save in the same order.
//   trainer_options::zero (ZeRO-1): each rank keeps master weights and state
//   for its parameter_shard alone; the steps are plain data parallelism's
//   (up to summation order), checkpoints the same whole file.
#pragma once

#include "../exec/host_threads.hpp"
#include "../index/index_range.hpp"
#include "../io/checkpoint_sections.hpp"
#include "../nn/mode_scope.hpp"
#include "../nn/valid_samples.hpp"
#include "../profile/nvtx.hpp"
#include "../profile/optimization_notice.hpp"
#include "../profile/timer.hpp"
#include "../reduce/reduce.hpp"
#include "../tensor/copy.hpp"
#include "data_parallel.hpp"
#include "graph.hpp"
#include "loss.hpp"
#include "optimizer.hpp"
#include "parameter_shard.hpp"
#include "batch_staging.hpp"
#include "step_sections.hpp"
#include "thread_tuner.hpp"
#include "trainer_options.hpp"

#include <algorithm>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tenet::train {

template <class Model, class Rule, lr_schedule Schedule = constant_lr, class Loss = softmax_cross_entropy>
class trainer {
    struct absent {};  // no lengths (step() without key padding), or no tokens to check

public:
    using model_type = Model;
    using optimizer_type = tenet::train::optimizer<Model, Rule, Schedule>;
    using policy = typename Model::policy;
    using place = typename Model::place;
    using storage_type = typename policy::storage;
    using master_type = nn::gradient_t<policy>;
    using output_shape = typename Model::output_shape;
    using input_shape = typename Model::input_shape;
    using input_type = typename Model::input_type;  // the storage type, or i32 tokens
    static constexpr bool on_host = host_accessible_v<place>;
    static_assert(detail::check_loss<Loss, policy, output_shape, place>());
    using loss_type = detail::bound_loss_t<Loss, policy, output_shape, place>;
    using target_type = typename loss_type::target_type;  // what step() takes as targets

    trainer(Model& model, Rule rule = {}, Schedule schedule = default_schedule<Rule, Schedule>(),
            trainer_options options = {}, const Loss& loss = {})
        : model_(model), options_(detail::checked<on_host, master_type>(options)),
          optimizer_(model, rule, schedule, options.optimizer, shard_of(options_)),
          loss_(loss), accumulated_(options.accumulation_steps > 1 ? Model::trainable_numel : 0, current_stream())
    {
        if constexpr (on_host) profile::process_optimization_notice().report(std::cerr, profile::unoptimized_host_code);
        current_stream().synchronize();  // the model and the optimizer are ready for stream_
        stream_scope on(stream_);
        assign(loss_sum_.view(), 0);
        clear_metrics();
        if (options_.communicator) {  // every rank starts from rank 0's weights
            parallel_ = std::make_unique<detail::data_parallel<Model>>(*options_.communicator, options_.bucket_bytes);
            parallel_->start_from_rank0(model_, stream_);
            optimizer_.load_master_from_parameters();
            options_.communicator->wait(stream_);
            stream_.synchronize();
        }
    }

    // The buffers are freed on the stream that allocated them: finish this one's work first.
    ~trainer() { stream_.synchronize(); }

    trainer(const trainer&) = delete;
    trainer& operator=(const trainer&) = delete;

    // One micro-batch: x of the model's input shape (input_type), the
    // loss's targets (cross-entropy: i32 labels of the output's row shape;
    // mean_squared_error: values of the output's shape) and valid (1: a real
    // row, 0: padding) of the output's row shape.
    template <class X, class Target, class Valid>
    void step(const X& x, const Target& target, const Valid& valid)
    {
        step(x, target, valid, absent{});
    }

    // The same for sequences with key padding: lengths (i32 [Batch], in the
    // model's place) holds each sequence's valid length, which attention
    // layers honour (model::forward(x, lengths)). Padding rows' lengths are
    // read as 0; a real row's outside [0, Seq] is a tenet::index_error, as a
    // real row's token outside the Embedding's vocabulary is (both checked
    // before anything changes on the host, and with check_batches on the device).
    template <class X, class Target, class Valid, class Lengths>
    void step(const X& x, const Target& target, const Valid& valid, const Lengths& lengths)
    {
        static_assert(nn::check_model_input_type<input_type, X>());  // (float tokens: one error, naming both)
        if (optimizer_.average_swapped_in())
            throw error("tenet: trainer: a step with the averaged weights swapped in: swap_average() again (or let "
                        "the average_scope end) first");
        stream_scope on(stream_);
        on_host_threads(tuner_.threads(), &tuner_, [&] { guarded_step(x, target, valid, lengths); });
    }

    // Graph mode on (device models); off returns to eager launches.
    void capture(bool on = true) { graphs_.enable(on && !on_host); }
    bool capturing() const { return graphs_.enabled(); }

    // A profiler (profile::layer_profile) told of each step, its layers'
    // forward and backward, the loss, the optimizer and the collectives;
    // null (the default) stops it. Captured steps are reported whole.
    void observe(profile::step_observer* observer) { observer_ = observer; }

    // The model in evaluation mode on one batch: adds its loss over the
    // valid rows to evaluation_loss(), and for a classifying loss counts
    // correct predictions (argmax of the logits == label) for accuracy().
    // Sequence models may pass lengths, as to step(); tokens and lengths are
    // staged (padding rows 0) and checked as step() does. The model's mode
    // afterwards is the one it had before.
    template <class X, class Target, class Valid, class Lengths = absent>
    void evaluate(const X& x, const Target& target, const Valid& valid, const Lengths& lengths = {})
    {
        static_assert(nn::check_model_input_type<input_type, X>());
        stream_scope on(stream_);
        on_host_threads(tuner_.chosen(), nullptr, [&] { evaluate_batch(x, target, valid, lengths); });
    }

    // Host models: the thread counts steps choose from and run with (see
    // trainer_options::host_threads).
    const thread_tuner& host_thread_tuner() const noexcept { return tuner_; }

    // The metrics' window: everything since construction, the last
    // reset_metrics() or end_epoch(). Reading a metric waits for the stream
    // and changes nothing; an empty window reads NaN. (Data parallel: every
    // rank must read in the same order, as they are summed over ranks.)

    // The mean micro-batch loss of the steps in the window.
    double mean_loss() const
    {
        return losses_ ? read(loss_sum_) / static_cast<double>(losses_) : std::numeric_limits<double>::quiet_NaN();
    }

    // The fraction of valid rows evaluate() predicted right in the window.
    double accuracy() const
        requires classifies<Loss>
    {
        return ratio(correct_, rows_);
    }

    // The mean loss per valid row of what evaluate() saw in the window.
    double evaluation_loss() const { return ratio(evaluated_loss_, evaluated_rows_); }

    // The steps taken (micro-batches) and the valid rows evaluated in the window.
    std::size_t steps_in_window() const { return losses_; }
    double evaluated_rows() const { return read_total(evaluated_rows_); }

    // Ends the window: every metric starts again from nothing.
    void reset_metrics()
    {
        stream_scope on(stream_);
        assign(loss_sum_.view(), 0);
        losses_ = 0;
        clear_metrics();
    }

    // Every metric of the window, then reset_metrics(): the end of an epoch.
    epoch_summary end_epoch()
    {
        epoch_summary e{mean_loss(), steps_in_window(), evaluation_loss(), evaluated_rows(),
                        std::numeric_limits<double>::quiet_NaN()};
        if constexpr (classifies<Loss>) e.accuracy = accuracy();
        reset_metrics();
        return e;
    }

    step_state state() const
    {
        stream_scope on(stream_);
        return optimizer_.state();
    }

    // Steps whose gradient held an inf or NaN (waits for the stream).
    std::uint64_t nonfinite_steps() const { return state().nonfinite; }

    // Parameters, master weights, optimizer state, loss-scaler state, the
    // step and the pruning masks (when masked), in one checksummed file
    // written atomically (the sections nn::model and train::optimizer save
    // on their own, in one file).
    // Data parallel: rank 0 writes (with zero, once every rank helped gather
    // the shards); save() returns on every rank once the file is in place,
    // or throws on every rank when rank 0 could not write it.
    void save(const std::string& path)
    {
        stream_scope on(stream_);
        const auto write = [&] { io::write_checkpoint_file(path, contents([](const master_type* data) { return data; })); };
        if (!parallel_) return write();
        if (!options_.zero) return parallel_->save_on_rank0(path, write, stream_);
        const auto gathered = parallel_->gathered([&](auto whole) { return contents(whole); }, stream_);
        parallel_->save_on_rank0(path, [&] { io::write_checkpoint_file(path, gathered); }, stream_);
    }

    // Restores what save() wrote. The whole file is checked first (format,
    // checksum, this model's signature, every section's size, a step state
    // advance() could reach, every weight and optimizer state finite -- inf or
    // NaN there only comes from corruption or a diverged run, and the next
    // step would spread it): on any error tenet::format_error / io_error is
    // thrown and nothing here has changed. Pruned weights load as zeros.
    void load(const std::string& path)
    {
        stream_scope on(stream_);
        const std::string expected = signature();
        const std::uint64_t payload = Model::payload_bytes + optimizer_type::max_payload;
        const io::checkpoint_contents contents = io::read_checkpoint_file(
            path, expected,
            io::checkpoint_size_bound(expected, Model::section_count + optimizer_type::max_sections, payload));
        const auto model_state = model_.checked_sections(path, contents);
        const auto state = optimizer_.checked_sections(path, contents);
        model_.restore(model_state);
        optimizer_.restore(state);
        model_.set_step(contents.step);
        micro_ = 0;
    }

    // What a checkpoint must match: the policy's types, the rule, whether it
    // is pruned (masked), and every parameter's name and shape.
    std::string signature()
    {
        return std::string("tenet-trainer/") + element_name<storage_type> + "/" + element_name<master_type> + "/" +
               Rule::name + (policy::dynamic_loss_scaling ? "/dynamic-scaling" : "") +
               (optimizer_.masked() ? "/masked" : "") + (optimizer_.averaging() ? "/average" : "") + ":" +
               model_.parameter_list();
    }

    // Puts the weights' moving average (trainer_options::optimizer.average)
    // into the model, or the trained weights back (optimizer::swap_average;
    // under zero every rank swaps its shard and the ranks gather them).
    // train::average_scope calls it twice: evaluate inside it.
    void swap_average()
    {
        stream_scope on(stream_);
        optimizer_.swap_average();
        if (parallel_ && options_.zero)
            parallel_->gather_shards(model_.parameters() + optimizer_.shard().begin, model_.parameters(), stream_);
    }

    Model& model() { return model_; }
    optimizer_type& optimizer() { return optimizer_; }
    // The data-parallel ranks (1 without a communicator), and this one's place among them.
    int world_size() const { return options_.communicator ? options_.communicator->size() : 1; }
    int rank() const { return options_.communicator ? options_.communicator->rank() : 0; }
    stream_ref stream() const { return stream_; }
    loss_type& loss() { return loss_; }
    // Cross-entropy: the softmax of the last forward's logits.
    const auto& probabilities() const
        requires requires(const loss_type& l) { l.probabilities(); }
    {
        return loss_.probabilities();
    }

private:
    // body() on n host threads (host models; the thread's own count comes
    // back after). A step's tuner (`timed`) is told the time since the last
    // step or evaluation ended: the step and the fill before it.
    template <class F>
    void on_host_threads(int n, thread_tuner* timed, F&& body)
    {
        if constexpr (!on_host) {
            body();
        } else {
            const host_threads_scope threads(n);
            body();
            timed ? timed->record(since_step_.lap()) : since_step_.restart();
        }
    }

    template <class X, class Target, class Valid, class Lengths>
    void guarded_step(const X& x, const Target& target, const Valid& valid, const Lengths& lengths)
    {
        if constexpr (on_host) {  // before anything changes
            loss_.check_batch(target, valid);
            check_inputs(x, valid, lengths);
        } else if (options_.check_batches) {
            check_on_host(x, target, valid, lengths);
        }
        nn::mode_scope training(model_, nn::mode::training);
        const std::size_t k = options_.accumulation_steps;
        const auto phase = k == 1 ? phase_kind::only
                         : micro_ == 0 ? phase_kind::first
                         : micro_ + 1 == k ? phase_kind::last : phase_kind::middle;
        micro_ = (micro_ + 1) % k;
        ++losses_;
        const std::uint64_t before = model_.step();
        const profile::observed_section whole(observer_, [&] { return detail::step_section(!on_host, graphs_.enabled()); });
        const detail::model_observed layers(model_, inner_observer());
        graphs_.run(graph_key{pointer(x), pointer(target), pointer(valid), pointer(lengths), phase}, stream_,
                    [&] { eager_step(x, target, valid, lengths, phase); });
        if (model_.step() == before) model_.set_step(before + 1);  // a replay: no forward ran on the host
    }

    template <class X, class Target, class Valid, class Lengths>
    void evaluate_batch(const X& x, const Target& target, const Valid& valid, const Lengths& lengths)
    {
        if constexpr (on_host) check_inputs(x, valid, lengths);
        nn::mode_scope evaluating(model_, nn::mode::evaluation);
        const auto& prediction = evaluation_forward(x, valid, lengths);
        const auto rows = sum(cast<f32>(valid != 0));
        loss_.forward(batch_loss_, prediction, target, valid);
        evaluated_loss_ = evaluated_loss_ + batch_loss_ * rows;
        evaluated_rows_ = evaluated_rows_ + rows;
        if constexpr (classifies<Loss>) {
            correct_ = correct_ + sum(cast<f32>(argmax<-1>(prediction) == target) * cast<f32>(valid != 0));
            rows_ = rows_ + rows;
        }
    }

    enum class phase_kind { only, first, middle, last };
    using rows_shape = nn::rows_shape_t<output_shape>;
    using staging = detail::batch_staging<input_shape, rows_shape, input_type>;

    struct graph_key {
        const void* x;
        const void* labels;
        const void* valid;
        const void* lengths;
        phase_kind phase;
        bool operator==(const graph_key&) const = default;
    };

    static parameter_shard shard_of(const trainer_options& o)
    {
        return o.zero ? detail::data_parallel<Model>::shard_of(*o.communicator) : parameter_shard::whole(Model::trainable_numel);
    }

    // The update from `gradients`, which sum `divisor` micro-batches: summed
    // over ranks first (data parallel), or sharded (ZeRO-1).
    void update(master_type* gradients, float divisor)
    {
        if constexpr (std::is_same_v<master_type, f32>) {  // (checked() allows no other with a communicator)
            if (parallel_ && options_.zero) {
                const profile::observed_section c(inner_observer(), [] {
                    return detail::collective_section("sharded update (reduce-scatter, update, all-gather)", !on_host);
                });
                return parallel_->sharded_update(model_, optimizer_, gradients, divisor, stream_);
            }
            if (parallel_) {
                const profile::observed_section c(inner_observer(), [] { return detail::collective_section("gradient all-reduce", !on_host); });
                parallel_->sum_gradients(gradients, stream_);
            }
        }
        const profile::observed_section o(inner_observer(), [] { return detail::optimizer_section(!on_host, update_bytes); });
        optimizer_.step(gradients, divisor);
    }

    // What the fused update reads and writes: its state (moments, master
    // weights) both ways, the gradients, the weights (written; read too
    // when they are the master weights). An estimate: a kept average is not counted.
    static constexpr std::uint64_t update_bytes =
        2 * optimizer_type::state_bytes +
        Model::trainable_numel * (sizeof(master_type) + (optimizer_type::separate_master ? 1 : 2) * sizeof(storage_type));
    static constexpr std::uint64_t loss_bytes = output_shape::numel * sizeof(storage_type);  // the prediction's
    // Sections inside a step are reported in eager mode alone (events are
    // not recorded into a captured graph).
    profile::step_observer* inner_observer() const { return graphs_.enabled() ? nullptr : observer_; }

    template <class T>
    static const void* pointer(const T& t)
    {
        if constexpr (std::is_same_v<T, absent>) return nullptr;
        else return tenet::destination_view(t).data();
    }

    template <class X, class Target, class Valid, class Lengths>
    void eager_step(const X& x, const Target& target, const Valid& valid, const Lengths& lengths, phase_kind phase)
    {
        {
            profile::scoped_range range("forward");
            const auto& prediction = staged_forward(x, valid, lengths);
            {
                const profile::observed_section l(inner_observer(), [] { return detail::loss_section("forward", loss_bytes, !on_host); });
                loss_.forward(batch_loss_, prediction, target, valid);
            }
            if (parallel_) {
                const profile::observed_section c(inner_observer(), [] { return detail::collective_section("loss all-reduce", !on_host); });
                parallel_->share(valid, batch_loss_, loss_sum_, stream_);
            } else {
                loss_sum_ = loss_sum_ + batch_loss_;
            }
        }
        {
            profile::scoped_range range("backward");
            loss_backward(target, valid);
            model_.backward(dprediction_);
        }
        profile::scoped_range range("optimizer");
        if (parallel_) {
            const profile::observed_section c(inner_observer(), [] { return detail::collective_section("buffer all-reduce", !on_host); });
            parallel_->share_buffers(model_, stream_);
        }
        constexpr std::size_t n = Model::trainable_numel;
        if (phase == phase_kind::only) return update(model_.gradients(), 1.0f);
        auto sum_view = make_view<Shape<n>, place>(accumulated_.data());
        const auto gradients = make_view<Shape<n>, place>(static_cast<const master_type*>(model_.gradients()));
        {
            const profile::observed_section a(inner_observer(), [phase] {
                return detail::accumulation_section(!on_host, (phase == phase_kind::first ? 2 : 3) * n * sizeof(master_type));
            });
            if (phase == phase_kind::first) sum_view = gradients;
            else sum_view = sum_view + gradients;
        }
        if (phase == phase_kind::last) update(accumulated_.data(), static_cast<float>(options_.accumulation_steps));
    }

    template <class Target, class Valid>
    void loss_backward(const Target& target, const Valid& valid)
    {
        const profile::observed_section l(inner_observer(), [] { return detail::loss_section("backward", loss_bytes, !on_host); });
        const auto& prediction = model_.output();
        if (parallel_) {  // (the loss scale is 1 without dynamic scaling)
            loss_.backward(dprediction_, prediction, target, valid, parallel_->loss_gradient_scale(optimizer_.loss_scale()));
        } else if constexpr (policy::dynamic_loss_scaling) {
            loss_.backward(dprediction_, prediction, target, valid, optimizer_.loss_scale());
        } else {
            loss_.backward(dprediction_, prediction, target, valid, 1.0f);
        }
    }

    // check_batches on a device model: one wait for the batch, then the
    // host's checks on copies of its labels, mask, tokens and lengths.
    template <class X, class Target, class Valid, class Lengths>
    void check_on_host(const X& x, const Target& target, const Valid& valid, const Lengths& lengths)
    {
        auto host_target = host_copy(target);
        auto host_valid = host_copy(valid);
        auto host_tokens = [&] {
            if constexpr (std::is_integral_v<input_type>) return host_copy(x);
            else return absent{};  // (other inputs are not checked)
        }();
        auto host_lengths = host_copy(lengths);
        stream_.synchronize();
        loss_.check_batch(host_target, host_valid);
        check_inputs(host_tokens, host_valid, host_lengths);
    }

    // The real rows' tokens lie below the model's input_limit, and their
    // lengths in [0, Seq] (tenet::index_error). Operands in one place
    // (the host's, or a host copy of a device batch); absent: not checked.
    template <class X, class Valid, class Lengths>
    void check_inputs(const X& x, const Valid& valid, const Lengths& lengths)
    {
        if constexpr (std::is_integral_v<input_type> && Model::input_limit > 0 && integer_expression<X>)
            check_index_range<Model::input_limit>(staging::inputs(x, valid), "trainer: a real row's token");
        if constexpr (!std::is_same_v<Lengths, absent>) {
            static_assert(input_shape::rank >= 2, "tenet: trainer: lengths are for sequence inputs [Batch, Seq, ...]");
            check_index_range<input_shape::extents[1] + 1>(staging::lengths(lengths, valid),
                                                           "trainer: a real sequence's length");
        }
    }

    // Evaluation reads float inputs as they are (the loss ignores padding
    // rows, whatever they hold); tokens and lengths are staged.
    template <class X, class Valid, class Lengths>
    const auto& evaluation_forward(const X& x, const Valid& valid, const Lengths& lengths)
    {
        if constexpr (std::is_integral_v<input_type> || !std::is_same_v<Lengths, absent>)
            return staged_forward(x, valid, lengths);
        else
            return model_.forward(x, nn::valid_samples(staging::real_samples(valid)));
    }

    // The model's forward on staged copies of x (and lengths).
    template <class X, class Valid, class Lengths>
    const auto& staged_forward(const X& x, const Valid& valid, const Lengths& lengths)
    {
        staged_ = staging::inputs(x, valid);
        if constexpr (std::is_same_v<Lengths, absent>) {
            return model_.forward(staged_, nn::valid_samples(staging::real_samples(valid)));
        } else {
            staged_lengths_ = staging::lengths(lengths, valid);
            return model_.forward(staged_, staged_lengths_, nn::valid_samples(staging::real_samples(valid)));
        }
    }

    template <class T>
    auto host_copy(const T& tensor)
    {
        if constexpr (std::is_same_v<T, absent>) {
            return absent{};
        } else {
            Tensor<std::remove_const_t<typename T::element_type>, typename T::shape, Host> copied;
            copy(copied, tensor, stream_);
            return copied;
        }
    }

    double read(const Tensor<f32, Shape<>, place>& t) const
    {
        Tensor<f32, Shape<>, Host> host;
        copy(host, t, stream_);
        if (options_.communicator) options_.communicator->wait(stream_);  // (NCCL: a hang throws)
        stream_.synchronize();
        return host.data()[0];
    }

    // A metric's sum over ranks (data parallel), read back; the metric
    // itself stays this rank's.
    double read_total(const Tensor<f32, Shape<>, place>& t) const
    {
        if (!parallel_) return read(t);
        stream_scope on(stream_);
        total_ = t;
        parallel_->total(total_, stream_);
        return read(total_);
    }

    // numerator / denominator, summed over ranks; NaN when nothing was counted.
    double ratio(const Tensor<f32, Shape<>, place>& numerator, const Tensor<f32, Shape<>, place>& denominator) const
    {
        const double n = read_total(numerator), d = read_total(denominator);
        return d > 0 ? n / d : std::numeric_limits<double>::quiet_NaN();
    }

    // The file's sections (`whole`: see optimizer::append_sections); only
    // rank 0, which writes, takes the model's.
    template <class Whole>
    io::checkpoint_contents contents(Whole&& whole)
    {
        io::checkpoint_contents c{signature(), model_.step(), {}};
        if (rank() == 0) model_.append_sections(c);
        optimizer_.append_sections(c, whole);
        return c;
    }

    void clear_metrics() { clear(correct_, rows_, evaluated_loss_, evaluated_rows_); }

    template <class... T>
    void clear(T&... scalars)
    {
        stream_scope on(stream_);
        (assign(scalars.view(), 0), ...);
    }

    Model& model_;
    trainer_options options_;
    std::optional<tenet::stream> own_stream_ = on_host ? std::nullopt : std::optional<tenet::stream>(std::in_place);
    stream_ref stream_ = own_stream_ ? stream_ref(*own_stream_) : current_stream();  // host: never used by a device
    optimizer_type optimizer_;
    loss_type loss_;
    buffer<master_type, place> accumulated_;
    Tensor<storage_type, output_shape, place> dprediction_;
    Tensor<input_type, input_shape, place> staged_;  // x with padding rows 0
    Tensor<i32, Shape<input_shape::extents[0]>, place> staged_lengths_;  // lengths with padding sequences 0
    Tensor<f32, Shape<>, place> batch_loss_;
    Tensor<f32, Shape<>, place> loss_sum_;
    Tensor<f32, Shape<>, place> correct_;  // accuracy(): correct predictions and the rows they came from
    Tensor<f32, Shape<>, place> rows_;
    Tensor<f32, Shape<>, place> evaluated_loss_;  // evaluation_loss(): loss times rows, and rows
    Tensor<f32, Shape<>, place> evaluated_rows_;
    mutable Tensor<f32, Shape<>, place> total_;  // scratch: a metric summed over ranks
    std::size_t micro_ = 0;
    std::size_t losses_ = 0;
    graph_cache<graph_key> graphs_;
    // With a communicator (a pointer, not an optional: GCC warns of the
    // empty optional's buffers as maybe uninitialized).
    std::unique_ptr<detail::data_parallel<Model>> parallel_;
    profile::host_timer since_step_;
    profile::step_observer* observer_ = nullptr;
    thread_tuner tuner_{options_.host_threads > 0 ? options_.host_threads : host_threads(), options_.host_threads > 0};
};

}  // namespace tenet::train
