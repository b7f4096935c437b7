// trainer<Model, Rule, Schedule>: one training step of a classifier -- the
// forward, softmax cross-entropy over the valid rows, the backward and the
// fused optimizer update -- on the model's place.
//
//   nn::model<mlp, bf16_mixed, Shape<256, 784>> net(42);
//   train::trainer t(net, train::adamw{}, train::warmup_cosine_lr{1e-3f, 200, 4000});
//   t.capture();                        // device: record the step as a CUDA Graph
//   while (loader.next(b)) t.step(b.x(), b.labels(), b.valid());
//   double loss = t.mean_loss();        // reads back (waits); resets the sum
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
//   valid row's label is out of range (index_error) or a valid entry is
//   neither 0 nor 1 (tenet::error). The device cannot throw without waiting
//   for the batch: there such a step's gradient is NaN, which
//   nonfinite_steps() counts and skip_nonfinite skips (the loss turns NaN);
//   trainer_options{.check_batches = true} waits and throws as the host does.
// - Padding rows (valid 0) contribute nothing, whatever x holds there (NaN,
//   inf): the step zeroes them in its own copy of x (one fused pass), since
//   the weight gradient's 0 * NaN would otherwise be NaN.
// - Non-finite gradients: nonfinite_steps() counts the steps that had one
//   (waits when asked, not per step). Loss scaling, clipping, LAMB or
//   trainer_options{.optimizer{.skip_nonfinite = true}} skip such a step;
//   otherwise it is applied and the weights become NaN.
// - Pruning: with trainer_options{.optimizer{.masked = true}} the optimizer
//   keeps prune::masks (optimizer().masks()); pruned weights stay zero in
//   every step, pruning between steps works with captured graphs, and
//   checkpoints carry the masks (prune/pruner.hpp drives a schedule).
#pragma once

#include "../io/checkpoint_file.hpp"
#include "../nn/row_ops.hpp"
#include "../profile/nvtx.hpp"
#include "../reduce/reduce.hpp"
#include "../tensor/copy.hpp"
#include "graph.hpp"
#include "optimizer.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tenet::train {

struct trainer_options {
    std::size_t accumulation_steps = 1;  // micro-batches per update
    optimizer_options optimizer{};
    // Device models: read each batch's labels and mask back and check them
    // before anything changes, throwing as the host does. Costs one wait for
    // the batch per step; off, a bad batch shows as a non-finite step.
    // (Host models always check.)
    bool check_batches = false;
};

template <class Model, class Rule, lr_schedule Schedule = constant_lr>
class trainer {
public:
    using model_type = Model;
    using optimizer_type = tenet::train::optimizer<Model, Rule, Schedule>;
    using policy = typename Model::policy;
    using place = typename Model::place;
    using storage_type = typename policy::storage;
    using master_type = nn::gradient_t<policy>;
    using output_shape = typename Model::output_shape;
    using input_shape = typename Model::input_shape;
    static constexpr bool on_host = host_accessible_v<place>;
    // Softmax cross-entropy over one class is 0 whatever the model does.
    static_assert(output_shape::rank >= 1 && output_shape::extents[output_shape::rank - 1] >= 2,
                  "tenet: trainer: softmax cross-entropy needs a model with at least 2 outputs (classes) per row; "
                  "train a one-output model with nn::model forward/backward and train::optimizer");

    trainer(Model& model, Rule rule = {}, Schedule schedule = default_schedule<Rule, Schedule>(),
            trainer_options options = {})
        : model_(model), options_(checked(options)), optimizer_(model, rule, schedule, options.optimizer),
          accumulated_(options.accumulation_steps > 1 ? Model::flat_numel : 0, current_stream())
    {
        current_stream().synchronize();  // the model and the optimizer are ready for stream_
        stream_scope on(stream_);
        assign(loss_sum_.view(), 0);
        clear_metrics();
    }

    // The buffers are freed on the stream that allocated them: finish this one's work first.
    ~trainer() { stream_.synchronize(); }

    trainer(const trainer&) = delete;
    trainer& operator=(const trainer&) = delete;

    // One micro-batch: x of the model's input shape (storage type), labels i32
    // and valid (nonzero: a real row) of the output's row shape.
    template <class X, class Labels, class Valid>
    void step(const X& x, const Labels& labels, const Valid& valid)
    {
        stream_scope on(stream_);
        if constexpr (on_host) check_cross_entropy_batch<output_shape>(labels, valid);  // before anything changes
        else if (options_.check_batches) check_on_host(labels, valid);
        model_.train();
        const std::size_t k = options_.accumulation_steps;
        const auto phase = k == 1 ? phase_kind::only
                         : micro_ == 0 ? phase_kind::first
                         : micro_ + 1 == k ? phase_kind::last : phase_kind::middle;
        micro_ = (micro_ + 1) % k;
        ++losses_;
        const std::uint64_t before = model_.step();
        run(graph_key{pointer(x), pointer(labels), pointer(valid), phase}, [&] { eager_step(x, labels, valid, phase); });
        if (model_.step() == before) model_.set_step(before + 1);  // a replay: no forward ran on the host
    }

    // Graph mode on (device models); off returns to eager launches.
    void capture(bool on = true) { graphs_on_ = on && !on_host; }
    bool capturing() const { return graphs_on_; }

    // Counts correct predictions (argmax of the logits == label) on valid rows.
    template <class X, class Labels, class Valid>
    void evaluate(const X& x, const Labels& labels, const Valid& valid)
    {
        stream_scope on(stream_);
        model_.eval();
        const auto& logits = model_.forward(x);
        const auto counted = cast<f32>(valid != 0);
        correct_ = correct_ + sum(cast<f32>(argmax<-1>(logits) == labels) * counted);
        rows_ = rows_ + sum(counted);
        model_.train();
    }

    // The mean micro-batch loss since the last call (waits for the stream).
    double mean_loss()
    {
        const double total = read(loss_sum_);
        const double mean = losses_ ? total / static_cast<double>(losses_) : 0.0;
        stream_scope on(stream_);
        assign(loss_sum_.view(), 0);
        losses_ = 0;
        return mean;
    }

    // Accuracy over what evaluate() saw since the last call (waits).
    double accuracy()
    {
        const double correct = read(correct_), rows = read(rows_);
        clear_metrics();
        return rows > 0 ? correct / rows : 0.0;
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
    // written atomically.
    void save(const std::string& path)
    {
        stream_scope on(stream_);
        io::checkpoint_contents contents{signature(), model_.step(), {}};
        contents.sections.push_back(section("parameters", model_.parameters(), Model::flat_numel));
        if constexpr (optimizer_type::separate_master)
            contents.sections.push_back(section("master", optimizer_.master(), Model::flat_numel));
        for (std::size_t j = 0; j < Rule::slots; ++j)
            contents.sections.push_back(section("state" + std::to_string(j), optimizer_.slot(j), Model::flat_numel));
        if (optimizer_.masked()) contents.sections.push_back(section("masks", optimizer_.masks().data(), Model::flat_numel));
        const step_state s = optimizer_.state();
        contents.sections.push_back({"step_state", bytes_of(&s, sizeof s)});
        io::write_checkpoint_file(path, contents);
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
        constexpr std::size_t n = Model::flat_numel;
        // What save() can write at most: a larger file is refused unread.
        constexpr std::size_t sections = 3 + optimizer_type::separate_master + Rule::slots;
        constexpr std::uint64_t payload = std::uint64_t{n} * (sizeof(storage_type) + sizeof(bool)) +
                                          std::uint64_t{n} * sizeof(master_type) * (optimizer_type::separate_master + Rule::slots) +
                                          sizeof(step_state);
        const std::string expected = signature();
        const io::checkpoint_contents contents =
            io::read_checkpoint_file(path, expected, io::checkpoint_size_bound(expected, sections, payload));
        const auto& parameters = io::find_section(contents, "parameters", n * sizeof(storage_type));
        const io::checkpoint_section* master = nullptr;
        if constexpr (optimizer_type::separate_master) master = &io::find_section(contents, "master", n * sizeof(master_type));
        std::array<const io::checkpoint_section*, Rule::slots> slots{};
        for (std::size_t j = 0; j < Rule::slots; ++j)
            slots[j] = &io::find_section(contents, "state" + std::to_string(j), n * sizeof(master_type));
        const auto& state = io::find_section(contents, "step_state", sizeof(step_state));
        step_state s;
        std::memcpy(&s, state.bytes.data(), sizeof s);
        if (const char* why = implausible(s, policy::dynamic_loss_scaling, optimizer_.options().scaler); *why)
            throw format_error(path, std::string("step_state: ") + why);
        check_finite<storage_type>(path, parameters);
        if (master) check_finite<master_type>(path, *master);
        for (const io::checkpoint_section* slot : slots) check_finite<master_type>(path, *slot);
        std::vector<char> keep;
        if (optimizer_.masked()) {
            const auto& masks = io::find_section(contents, "masks", n * sizeof(bool));
            keep.resize(n);
            std::memcpy(keep.data(), masks.bytes.data(), n);
            optimizer_.masks().check_bytes(keep, path);
        }

        upload(model_.parameters(), parameters);
        if (master) upload(optimizer_.master(), *master);
        for (std::size_t j = 0; j < Rule::slots; ++j) upload(optimizer_.slot(j), *slots[j]);
        optimizer_.set_state(s);
        if (optimizer_.masked()) {
            optimizer_.masks().from_host(keep, path);
            optimizer_.apply_masks();  // the file's pruned weights may not be zero
        }
        model_.set_step(contents.step);
        micro_ = 0;
    }

    // What a checkpoint must match: the policy's types, the rule, whether it
    // is pruned (masked), and every parameter's name and shape.
    std::string signature()
    {
        std::string s = std::string("tenet-trainer/") + tenet::detail::element_name<storage_type> + "/" + tenet::detail::element_name<master_type> +
                        "/" + Rule::name + (policy::dynamic_loss_scaling ? "/dynamic-scaling" : "") +
                        (optimizer_.masked() ? "/masked" : "") + ":";
        model_.for_each_parameter([&](const std::string& name, auto value, auto) {
            s += " " + name + shape_text(typename decltype(value)::shape{});
        });
        return s;
    }

    Model& model() { return model_; }
    optimizer_type& optimizer() { return optimizer_; }
    stream_ref stream() const { return stream_; }
    const auto& probabilities() const { return probs_; }

private:
    enum class phase_kind { only, first, middle, last };

    // The rows of the output (valid's shape) with axes of extent 1 up to the
    // input's rank: a row's mask broadcast over its features.
    template <class Rows, class Ones>
    struct append_ones;
    template <std::size_t... R, std::size_t... K>
    struct append_ones<Shape<R...>, std::index_sequence<K...>> {
        using type = Shape<R..., (K * 0 + 1)...>;
    };
    using rows_shape = tenet::detail::rowwise::rows_shape_t<output_shape>;
    static_assert(rows_shape::rank <= input_shape::rank &&
                      std::equal(rows_shape::extents.begin(), rows_shape::extents.end(), input_shape::extents.begin()),
                  "tenet: trainer: the model's input shape must begin with its output's rows (a mask entry per row)");
    using row_mask_shape =
        typename append_ones<rows_shape, std::make_index_sequence<input_shape::rank - rows_shape::rank>>::type;

    struct graph_key {
        const void* x;
        const void* labels;
        const void* valid;
        phase_kind phase;
        bool operator==(const graph_key&) const = default;
    };
    struct graph_entry {
        graph_key key;
        cuda_graph graph;
    };

    static trainer_options checked(trainer_options o)
    {
        if (o.accumulation_steps == 0) throw error("tenet: trainer: accumulation_steps must be at least 1");
        return o;
    }

    template <class T>
    static const void* pointer(const T& t)
    {
        return tenet::detail::destination_view(t).data();
    }

    // Eager until a graph is wanted: first sight of a key runs eagerly (warm-up),
    // the second captures, later ones replay.
    template <class F>
    void run(const graph_key& key, F&& eager)
    {
        if (!graphs_on_) {
            eager();
            return;
        }
        for (auto& entry : graphs_)
            if (entry.key == key) {
                if (!entry.graph) entry.graph.capture(stream_, eager);
                entry.graph.launch(stream_);
                return;
            }
        eager();
        graphs_.push_back({key, cuda_graph{}});
    }

    template <class X, class Labels, class Valid>
    void eager_step(const X& x, const Labels& labels, const Valid& valid, phase_kind phase)
    {
        {
            profile::scoped_range range("forward");
            stage(x, valid);
            const auto& logits = model_.forward(staged_);
            cross_entropy_forward(loss_, probs_, logits, labels, valid);
            loss_sum_ = loss_sum_ + loss_;
        }
        {
            profile::scoped_range range("backward");
            if constexpr (policy::dynamic_loss_scaling)
                cross_entropy_backward(dlogits_, probs_, labels, valid, optimizer_.loss_scale());
            else
                cross_entropy_backward(dlogits_, probs_, labels, valid, 1.0f);
            model_.backward(dlogits_);
        }
        profile::scoped_range range("optimizer");
        constexpr std::size_t n = Model::flat_numel;
        if (phase == phase_kind::only) {
            optimizer_.step();
            return;
        }
        auto sum_view = make_view<Shape<n>, place>(accumulated_.data());
        const auto gradients = make_view<Shape<n>, place>(static_cast<const master_type*>(model_.gradients()));
        if (phase == phase_kind::first) sum_view = gradients;
        else sum_view = sum_view + gradients;
        if (phase == phase_kind::last)
            optimizer_.step(accumulated_.data(), static_cast<float>(options_.accumulation_steps));
    }

    // check_batches on a device model: one wait for the batch, then the
    // host's checks on copies of its labels and mask.
    template <class Labels, class Valid>
    void check_on_host(const Labels& labels, const Valid& valid)
    {
        auto host_labels = host_copy(labels);
        auto host_valid = host_copy(valid);
        stream_.synchronize();
        check_cross_entropy_batch<output_shape>(host_labels, host_valid);
    }

    template <class T>
    auto host_copy(const T& tensor)
    {
        Tensor<std::remove_const_t<typename T::element_type>, typename T::shape, Host> copied;
        copy(copied, tensor, stream_);
        return copied;
    }

    // staged_ = x with padding rows 0. A mask entry other than 0 and 1 (only
    // the device gets here with one) makes its row NaN: the step shows as
    // non-finite rather than silently weighting the row.
    template <class X, class Valid>
    void stage(const X& x, const Valid& valid)
    {
        const auto row = broadcast_to<input_shape>(reshape<row_mask_shape>(valid));
        staged_ = where(row == 0, 0, where(row == 1, x, std::numeric_limits<float>::quiet_NaN()));
    }

    template <class T>
    static void check_finite(const std::string& path, const io::checkpoint_section& section)
    {
        for (std::size_t i = 0; i < section.bytes.size() / sizeof(T); ++i) {
            T v;
            std::memcpy(&v, section.bytes.data() + i * sizeof(T), sizeof v);
            if (!std::isfinite(static_cast<double>(convert<f64>(v))))
                throw format_error(path, "section " + section.name + " holds inf/NaN at element " + std::to_string(i));
        }
    }

    double read(const Tensor<f32, Shape<>, place>& t) const
    {
        Tensor<f32, Shape<>, Host> host;
        copy(host, t, stream_);
        stream_.synchronize();
        return host.data()[0];
    }

    void clear_metrics()
    {
        stream_scope on(stream_);
        assign(correct_.view(), 0);
        assign(rows_.view(), 0);
    }

    static std::vector<std::byte> bytes_of(const void* p, std::size_t n)
    {
        std::vector<std::byte> out(n);
        std::memcpy(out.data(), p, n);
        return out;
    }

    template <class T>
    io::checkpoint_section section(std::string name, const T* data, std::size_t count) const
    {
        std::vector<std::byte> out(count * sizeof(T));
        tenet::detail::copy_bytes<Host, place>(out.data(), data, out.size(), stream_);
        stream_.synchronize();
        return {std::move(name), std::move(out)};
    }

    template <class T>
    void upload(T* to, const io::checkpoint_section& from) const
    {
        tenet::detail::copy_bytes<place, Host>(to, from.bytes.data(), from.bytes.size(), stream_);
        stream_.synchronize();  // from is the caller's
    }

    template <std::size_t... N>
    static std::string shape_text(Shape<N...>)
    {
        std::string s = "[";
        ((s += std::to_string(N) + ","), ...);
        if (s.size() > 1) s.pop_back();
        return s + "]";
    }

    Model& model_;
    trainer_options options_;
    std::optional<tenet::stream> own_stream_ = on_host ? std::nullopt : std::optional<tenet::stream>(std::in_place);
    stream_ref stream_ = own_stream_ ? stream_ref(*own_stream_) : current_stream();  // host: never used by a device
    optimizer_type optimizer_;
    buffer<master_type, place> accumulated_;
    Tensor<typename policy::accumulate, output_shape, place> probs_;  // f32 for 16-bit policies
    Tensor<storage_type, output_shape, place> dlogits_;
    Tensor<storage_type, input_shape, place> staged_;  // x with padding rows 0
    Tensor<f32, Shape<>, place> loss_;
    Tensor<f32, Shape<>, place> loss_sum_;
    Tensor<f32, Shape<>, place> correct_;
    Tensor<f32, Shape<>, place> rows_;
    std::size_t micro_ = 0;
    std::size_t losses_ = 0;
    bool graphs_on_ = false;
    std::vector<graph_entry> graphs_;
};

}  // namespace tenet::train
