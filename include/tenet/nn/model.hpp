// model<Spec, Policy, InputShape, Place>: a layer spec (usually a Sequential)
// instantiated for one precision, one static input shape and one place, with
// everything it needs allocated once, at construction:
//   - all parameters in ONE flat buffer of the storage type, and their
//     gradients in one flat buffer of the master type (what a fused optimizer
//     updates in one launch); parameters start on 256-byte boundaries and the
//     padding between them stays zero;
//   - every activation kept for the backward, and the gradients between layers.
// The byte counts are compile-time constants.
//
//   using mlp = nn::Sequential<nn::Linear<784, 256>, nn::ReLU, nn::Linear<256, 10>>;
//   nn::model<mlp, bf16_mixed, Shape<256, 784>> net(/*seed*/ 42);
//   const auto& logits = net.forward(x);   // x: Tensor<bf16, Shape<256, 784>>
//   net.backward(dlogits);                 // fills net.gradients()
//   net.save("mlp.params");                // the parameters and the step, atomically
//
// save()/load() keep the parameters alone (for hand-written loops, next to
// train::optimizer's save()/load(); train::trainer saves both in one file).
//
// The batch is part of the type, so inference at another batch uses a second
// model over the same parameters (no copy), and predict() runs fewer rows:
//   auto one = nn::at_batch<1>(net);       // shares net's parameters and buffers
//   one.predict(image, label_scores, 1);   // eval mode, padded, first row out
#pragma once

#include "../index/index_range.hpp"
#include "../io/checkpoint_sections.hpp"
#include "../io/model_values.hpp"
#include "../tensor/copy.hpp"
#include "decoding.hpp"
#include "mode_scope.hpp"
#include "valid_samples.hpp"
#include "sequential.hpp"

#include <cstring>
#include <memory>
#include <string>

namespace tenet::nn {

// Tag of the constructor that makes a model share another's parameters.
struct share_parameters_t {
    explicit share_parameters_t() = default;
};
inline constexpr share_parameters_t share_parameters{};

namespace detail {

// S with its first (batch) extent replaced by B.
template <class S, std::size_t B>
struct with_batch;
template <std::size_t N, std::size_t... E, std::size_t B>
struct with_batch<Shape<N, E...>, B> {
    using type = Shape<B, E...>;
};
template <class S, std::size_t B>
using with_batch_t = typename with_batch<S, B>::type;

template <class OutputShape, class DyShape>
struct backward_dy_shape_mismatch {
    static constexpr auto text()
    {
        using tenet::fixed_string, tenet::shape_name;
        return fixed_string("tenet: model::backward: dy must have the output's shape ") +
               shape_name<OutputShape>::text() + fixed_string(", not ") + shape_name<DyShape>::text();
    }
};

}  // namespace detail

template <class Spec, precision_policy P, shape_type In, memory_place Place = Device>
class model {
    static_assert(detail::check_layer_spec<Spec, P, In, Place>());

public:
    using spec = Spec;
    using policy = P;
    using storage_type = typename P::storage;
    using gradient_type = gradient_t<P>;
    using input_shape = In;
    // What forward() takes: the storage type, or i32 tokens for a model
    // that starts with an Embedding (the spec's input_element).
    using input_type = input_element_t<Spec, P>;
    // Integer inputs lie in [0, input_limit) (an Embedding's Vocab); 0: no bound.
    static constexpr std::size_t input_limit = input_limit_of<Spec>();
    using place = Place;
    using output_shape = typename Spec::template output_shape<In>;
    using layer_type = typename Spec::template layer<P, In, Place>;
    using output_tensor = Tensor<storage_type, output_shape, Place>;

    // Parameters (elements and bytes, without padding), their gradients, and
    // what the forward keeps for the backward (the output included).
    static constexpr std::size_t parameter_count = layer_type::parameter_count;
    static constexpr std::size_t parameter_bytes = parameter_count * sizeof(storage_type);
    static constexpr std::size_t gradient_bytes =
        P::trainable ? (parameter_count - frozen_count_v<layer_type>) * sizeof(gradient_type) : 0;
    // (recompute_bytes: the arena Checkpointed segments share, counted in activation_bytes)
    static constexpr std::size_t recompute_bytes = recompute_bytes_v<layer_type>;
    // Host memory Offloaded segments keep their activations in (not counted in activation_bytes).
    static constexpr std::size_t offloaded_bytes = offloaded_bytes_v<layer_type>;
    static constexpr std::size_t activation_bytes = layer_type::activation_bytes + output_tensor::bytes + recompute_bytes;
    static constexpr std::size_t activation_gradient_bytes = layer_type::activation_gradient_bytes;
    // The flat parameter buffer (padding included): the trainable parameters,
    // which gradients and optimizer state shadow, then the frozen ones.
    static constexpr std::size_t trainable_numel = layer_type::parameter_numel;
    static constexpr std::size_t frozen_numel = frozen_numel_v<layer_type>;
    static constexpr std::size_t flat_numel = trainable_numel + frozen_numel;
    // f32 elements of the buffer store (BatchNorm's running statistics;
    // padding included): saved with the parameters, never optimised.
    static constexpr std::size_t buffer_numel = buffer_numel_v<layer_type>;

    explicit model(std::uint64_t seed = 0) : model(seed, current_stream()) {}

    model(std::uint64_t seed, stream_ref s)
        : values_(flat_numel, s),
          gradients_(P::trainable ? trainable_numel : 0, s),  // inference keeps no gradients
          recompute_(recompute_bytes, s),
          buffers_(buffer_numel, s),
          parameters_(values_.data()),
          buffer_store_(buffers_.data()),
          layer_(bind(parameters_, gradients_.data(), recompute_.data(), buffer_store_)),
          seed_(seed),
          alive_(std::make_shared<const char>())
    {
        clear_padding();
        initialize(seed);
        assign(step_counter_.view(), 0);
    }

    // A model over the parameters and buffers (BatchNorm's running
    // statistics) of `owner`, the same spec and storage type at another batch
    // (nn::at_batch<B>(owner)): nothing is copied, so an update of owner's
    // parameters is seen here, and load() or initialize() here writes
    // owner's. It owns its activations and no gradients (backward() is a
    // tenet::error: train the owner), and starts in evaluation mode (a
    // training forward would move the shared running statistics). owner
    // must outlive it: a forward, predict, save or load after owner is gone
    // is a tenet::error.
    template <class Other>
    model(share_parameters_t, Other& owner, stream_ref s = current_stream())
        : values_(shareable_with<Other>(), s),
          gradients_(0, s),
          recompute_(recompute_bytes, s),
          buffers_(0, s),
          parameters_(owner.parameters()),
          buffer_store_(owner.buffers()),
          layer_(bind(parameters_, nullptr, recompute_.data(), buffer_store_)),
          seed_(owner.seed_),
          owner_(owner.storage_token()),
          training_(false)
    {
        assign(step_counter_.view(), 0);
    }

    // True for a model made by share_parameters / at_batch.
    bool shares_parameters() const { return alive_ == nullptr; }

private:
    // (checked first, before the members use other's)
    template <class Other>
    static constexpr std::size_t shareable_with()
    {
        static_assert(std::is_same_v<typename Other::spec, Spec> &&
                          std::is_same_v<typename Other::storage_type, storage_type> &&
                          std::is_same_v<typename Other::place, Place> &&
                          std::is_same_v<detail::with_batch_t<typename Other::input_shape, 1>,
                                         detail::with_batch_t<In, 1>> &&
                          Other::flat_numel == flat_numel && Other::buffer_numel == buffer_numel,
                      "tenet: model(share_parameters, other): other must be an nn::model of the same spec, storage "
                      "type and place, whose input differs in the batch alone");
        return 0;  // (a model sharing parameters allocates none)
    }

public:
    // Draws every parameter again from the seed (the same seed gives the same
    // model), and resets every buffer.
    void initialize(std::uint64_t seed)
    {
        seed_ = seed;
        layer_.initialize(seed);
    }

    // Training mode (the default) uses dropout, batch statistics and counts
    // steps; evaluation does none of these. (nn::mode_scope switches for a
    // scope and restores the mode it found.)
    void train(bool on = true) { training_ = on; }
    void eval() { training_ = false; }
    bool training() const { return training_; }
    std::uint64_t step() const { return step_; }
    // A profiler (profile::layer_profile) told of each top-level layer's
    // forward and backward from now on; null (the default) stops it.
    void observe(profile::step_observer* observer) { observer_ = observer; }
    profile::step_observer* observer() const { return observer_; }
    // Sets the training-forward count (restoring a checkpoint: dropout masks
    // continue where they were), here and in the model's place.
    void set_step(std::uint64_t step)
    {
        step_ = step;
        assign(step_counter_.view(), static_cast<double>(step));
    }

    // Runs the forward on the current stream; the input must stay alive and
    // unchanged until backward().
    template <class X>
    const output_tensor& forward(const X& x)
    {
        lengths_ = nullptr;
        valid_ = nullptr;
        return run_forward(x);
    }

    // The same with padding: valid marks the batch's real samples (see
    // valid_samples); it is copied, so it need not outlive the call.
    template <class X, class V>
    const output_tensor& forward(const X& x, const valid_samples_t<V>& valid)
    {
        lengths_ = nullptr;
        set_valid(valid);
        return run_forward(x);
    }

    // The same, with each sequence's valid length (lengths[b] in [0, Seq]
    // for input [Batch, Seq, ...]): attention layers ignore the keys past it
    // (key padding), in this forward and its backward. lengths must stay
    // alive until backward(). A length outside [0, Seq] is a
    // tenet::index_error, except inside a CUDA Graph capture, which cannot
    // read it back: there it counts as the nearest of 0 and Seq.
    template <class X, class L>
    const output_tensor& forward(const X& x, const L& lengths)
    {
        valid_ = nullptr;
        return forward_with_lengths(x, lengths);
    }

    // Sequence lengths and padding together.
    template <class X, class L, class V>
    const output_tensor& forward(const X& x, const L& lengths, const valid_samples_t<V>& valid)
    {
        set_valid(valid);
        return forward_with_lengths(x, lengths);
    }

    // A decoding model's step (policy nn::decoding<Base, Context>, driven by
    // infer::decoder): x holds each sequence's next token, which sits at
    // position positions[b] (i32 [Batch], in the model's place).
    template <class X, class Positions>
    const output_tensor& forward_at(const X& x, const Positions& positions)
    {
        using V = decltype(tenet::destination_view(positions));
        static_assert(decoding_policy<P>, "tenet: forward_at(x, positions) is a decoding model's step: its policy must "
                                          "be nn::decoding<Base, Context>");
        static_assert(std::is_same_v<typename V::shape, Shape<In::extents[0]>> &&
                          std::is_same_v<std::remove_cv_t<typename V::element_type>, i32> &&
                          std::is_same_v<typename V::place, Place>,
                      "tenet: forward_at(x, positions): positions must be i32 [Batch] in the model's place");
        lengths_ = nullptr;
        valid_ = nullptr;
        positions_ = tenet::destination_view(positions).data();
        run_forward(x);
        positions_ = nullptr;
        return output_;
    }

private:
    template <class X, class L>
    const output_tensor& forward_with_lengths(const X& x, const L& lengths)
    {
        using V = decltype(tenet::destination_view(lengths));
        static_assert(std::is_same_v<typename V::shape, Shape<In::extents[0]>> &&
                          std::is_same_v<std::remove_cv_t<typename V::element_type>, i32> &&
                          std::is_same_v<typename V::place, Place>,
                      "tenet: forward(x, lengths): lengths must be i32 [Batch] in the model's place");
        static_assert(In::rank >= 2, "tenet: forward(x, lengths): the input must be sequences [Batch, Seq, ...]");
        if (can_check_indices<Place>()) check_index_range<In::extents[1] + 1>(lengths, "forward: sequence lengths");
        lengths_ = tenet::destination_view(lengths).data();
        return run_forward(x);
    }

    // valid_mask_ = (mask != 0) as f32, read by the layers through step_info.
    template <class V>
    void set_valid(const valid_samples_t<V>& valid)
    {
        using M = typename V::shape;
        static_assert(std::is_same_v<M, Shape<In::extents[0]>> &&
                          (std::is_same_v<typename V::place, Place> || std::is_same_v<typename V::place, AnyPlace>),
                      "tenet: forward(x, valid_samples(mask)): the mask must be [Batch] (one entry per sample) "
                      "in the model's place");
        valid_mask_ = cast<f32>(valid.mask != 0);
        valid_ = valid_mask_.data();
    }

    template <class X>
    const output_tensor& run_forward(const X& x)
    {
        if constexpr (check_model_input<In, X>() && check_model_input_type<input_type, X>() &&
                      takes_input_kind<input_type, X>) {  // (else one error, and nothing below instantiated)
            check_owner_alive("forward");
            if (training_) {
                ++step_;
                step_counter_ = step_counter_ + 1.0;  // a kernel: a captured step counts on each replay
            }
            layer_.forward(x, output_.view(), step_info_now());
        }
        return output_;
    }

public:
    // Gradients of every parameter, given the gradient of the output (dy has
    // the output's shape). Overwrites the gradient buffer. dy of another
    // element type (an f32 dy for a bf16 model) or an expression is converted
    // once, rounding to the storage type, into a buffer the model keeps.
    template <class DY>
        requires expression<std::decay_t<DY>>
    void backward(const DY& dy)
    {
        static_assert(P::trainable, "tenet: backward() needs a training precision policy");
        if (shares_parameters())
            throw error("tenet: model::backward: this model shares another's parameters (share_parameters, "
                        "at_batch) and keeps no gradients: run backward on the model that owns them");
        using shape = typename std::decay_t<DY>::shape;
        constexpr bool fits = std::is_same_v<shape, output_shape>;
        static_assert(tenet::diagnose<fits, detail::backward_dy_shape_mismatch<output_shape, shape>>::value);
        if constexpr (!fits) {
        } else if constexpr (stored_as<DY, storage_type>) {
            no_previous_layer none;
            layer_.backward(dy, no_input_gradient{}, step_info_now(), none);
        } else {
            if (!staged_dy_) staged_dy_ = std::make_unique<output_tensor>();
            *staged_dy_ = dy;
            backward(*staged_dy_);
        }
    }

    // Predictions for the first `count` rows of x, written to the first
    // `count` rows of y: x and y hold rows of the input's and the output's
    // shape (any number of rows, contiguous, in any place), and count is at
    // most the model's batch and the rows of each (else a tenet::error).
    // The rows run as one batch, the rest of it zero and marked as padding
    // (valid_samples: observers calibrating see the rows alone), in evaluation mode
    // (the mode the model was in is restored on every path), so a row's
    // prediction is what the full batch's forward gives for it. Like
    // tenet::copy, a host y of a device model is read after synchronising.
    template <class X, class Y>
    void predict(const X& x, Y&& y, std::size_t count)
    {
        const auto xv = tenet::destination_view(x);
        const auto yv = tenet::destination_view(y);
        using XV = decltype(xv);
        using YV = decltype(yv);
        constexpr std::size_t batch = In::extents[0];
        static_assert(output_shape::rank >= 1 && output_shape::extents[0] == batch,
                      "tenet: predict: the model's output must have one row per sample");
        static_assert(XV::shape::rank == In::rank &&
                          std::is_same_v<detail::with_batch_t<typename XV::shape, 1>, detail::with_batch_t<In, 1>> &&
                          std::is_same_v<std::remove_const_t<typename XV::element_type>, input_type> &&
                          std::is_same_v<typename XV::layout, contiguous_layout<typename XV::shape>>,
                      "tenet: predict: x must hold contiguous rows of the model's input shape and input type");
        static_assert(YV::shape::rank == output_shape::rank &&
                          std::is_same_v<detail::with_batch_t<typename YV::shape, 1>,
                                         detail::with_batch_t<output_shape, 1>> &&
                          std::is_same_v<typename YV::element_type, storage_type> &&
                          std::is_same_v<typename YV::layout, contiguous_layout<typename YV::shape>>,
                      "tenet: predict: y must hold writable contiguous rows of the model's output shape and "
                      "storage type");
        if (count > batch || count > XV::shape::extents[0] || count > YV::shape::extents[0])
            throw error("tenet: predict: " + std::to_string(count) + " rows, but the model's batch is " +
                        std::to_string(batch) + ", x holds " + std::to_string(XV::shape::extents[0]) +
                        " and y " + std::to_string(YV::shape::extents[0]));
        if (!staged_input_) staged_input_ = std::make_unique<Tensor<input_type, In, Place>>();
        assign(staged_input_->view(), 0);
        copy_rows<Place, typename XV::place>(staged_input_->data(), xv.data(), count * (In::numel / batch));
        if constexpr (host_accessible_v<Place> && !host_accessible_v<typename XV::place>) current_stream().synchronize();
        {
            mode_scope<model> evaluating(*this, mode::evaluation);
            forward(*staged_input_, valid_samples(iota<Shape<batch>>(0, 1) < static_cast<i32>(count)));
        }
        copy_rows<typename YV::place, Place>(yv.data(), output_.data(), count * (output_shape::numel / batch));
    }

    const output_tensor& output() const { return output_; }

    storage_type* parameters() { return parameters_; }
    // Whether a parameter's data lies in the frozen block (nn::Frozen).
    bool is_frozen(const storage_type* p) const { return p >= parameters_ + trainable_numel && p < parameters_ + flat_numel; }
    const storage_type* parameters() const { return parameters_; }
    gradient_type* gradients() { return gradients_.data(); }
    // The flat f32 store of every buffer (buffer_numel elements; null without any).
    f32* buffers() { return buffer_store_; }
    const f32* buffers() const { return buffer_store_; }
    const gradient_type* gradients() const { return gradients_.data(); }

    // f(name, value view, gradient view) for each parameter, in order;
    // names as PyTorch's state_dict gives them ("0.weight", "2.bias").
    template <class F>
    void for_each_parameter(F&& f)
    {
        layer_.for_each_parameter(f, "");
    }

    // f(layer) for every leaf layer (Linear, activation, ...), in order: how
    // quant/ reaches its observers.
    template <class F>
    void for_each_layer(F&& f)
    {
        if constexpr (requires { layer_.for_each_layer(f); }) layer_.for_each_layer(f);
        else f(layer_);
    }

    // f(name, view) for each buffer (f32), in order: "1.running_mean", ...
    template <class F>
    void for_each_buffer(F&& f)
    {
        if constexpr (buffer_numel > 0) layer_.for_each_buffer(f, "");
    }

    layer_type& layers() { return layer_; }

    // The parameters and the step in one checksummed file, written
    // atomically. (With 16-bit storage an optimizer's fp32 master weights
    // are the optimizer's to save.)
    void save(const std::string& path)
    {
        check_owner_alive("save");
        io::checkpoint_contents contents{signature(), step_, {}};
        append_sections(contents);
        io::write_checkpoint_file(path, contents);
    }

    // Restores what save() wrote. The whole file is checked first (format,
    // checksum, this model's signature, the sections' sizes, every parameter
    // and buffer a value a model can hold: io/model_values.hpp): on any error tenet::format_error / io_error is thrown and the
    // model is unchanged. An optimizer with master weights copies of these
    // needs them refreshed (its load(), or load_master_from_parameters()).
    void load(const std::string& path)
    {
        const std::string expected = signature();
        const io::checkpoint_contents contents =
            io::read_checkpoint_file(path, expected, io::checkpoint_size_bound(expected, section_count, payload_bytes));
        restore(checked_sections(path, contents));
        set_step(contents.step);
    }

    // What a file of this model's parameters must match: the storage type
    // and every parameter's and buffer's name and shape.
    std::string signature() { return std::string("tenet-model/") + element_name<storage_type> + ":" + parameter_list(); }

    // Every parameter's name and shape, then every buffer's:
    // " 0.weight[256,784] 0.bias[256] ... buffers: 1.running_mean[32] ..."
    // (a frozen parameter's "[...]frozen": it lies elsewhere in the buffer).
    std::string parameter_list()
    {
        std::string s;
        for_each_parameter([&](const std::string& name, auto value, auto) {
            s += " " + name + shape_text(typename decltype(value)::shape{}) + (is_frozen(value.data()) ? "frozen" : "");
        });
        if constexpr (buffer_numel > 0) {
            s += " buffers:";
            for_each_buffer([&](const std::string& name, auto value) {
                s += " " + name + shape_text(typename decltype(value)::shape{});
            });
        }
        return s;
    }

    // The pieces of save() and load(), for files that hold more than the
    // model (a trainer's checkpoint): the model's sections ("parameters",
    // and "buffers" when it has any), their number and payload bytes; the
    // sections found in contents, checked (sizes, finite); and restoring
    // from them, once everything in the file has passed.
    static constexpr std::size_t section_count = buffer_numel > 0 ? 2 : 1;
    static constexpr std::uint64_t payload_bytes = flat_numel * sizeof(storage_type) + buffer_numel * sizeof(f32);

    void append_sections(io::checkpoint_contents& contents) const
    {
        contents.sections.push_back(io::section_of<Place>("parameters", parameters_, flat_numel, current_stream()));
        if constexpr (buffer_numel > 0)
            contents.sections.push_back(io::section_of<Place>("buffers", buffer_store_, buffer_numel, current_stream()));
    }

    struct checked_state {
        const io::checkpoint_section* parameters;
        const io::checkpoint_section* buffers;  // null without buffers
    };

    checked_state checked_sections(const std::string& path, const io::checkpoint_contents& contents)
    {
        const auto& parameters = io::find_section(path, contents, "parameters", flat_numel * sizeof(storage_type));
        io::check_finite<storage_type>(path, parameters);
        const io::checkpoint_section* buffers = nullptr;
        if constexpr (buffer_numel > 0) {
            buffers = &io::find_section(path, contents, "buffers", buffer_numel * sizeof(f32));
            for_each_buffer([&](const std::string& name, auto value) {  // each named (io/model_values.hpp)
                const auto at = static_cast<std::size_t>(value.data() - buffer_store_);
                for (std::size_t i = 0; i < decltype(value)::shape::numel; ++i) {
                    f32 v;
                    std::memcpy(&v, buffers->bytes.data() + (at + i) * sizeof(f32), sizeof v);
                    if (const char* why = io::implausible_value(name, v); *why)
                        throw format_error(path, "section buffers: " + name + " element " + std::to_string(i) +
                                                     " is " + std::to_string(v) + ": " + why);
                }
            });
            io::check_finite<f32>(path, *buffers);  // the padding between them too
        }
        return {&parameters, buffers};
    }

    void restore(const checked_state& state)
    {
        check_owner_alive("load");
        io::upload<Place>(parameters_, *state.parameters, current_stream());
        if constexpr (buffer_numel > 0) io::upload<Place>(buffer_store_, *state.buffers, current_stream());
    }

private:
    template <class, precision_policy, shape_type, memory_place>
    friend class model;

    // What a model sharing this one's parameters watches: the owner's token.
    std::weak_ptr<const char> storage_token() const
    {
        if (alive_) return alive_;
        return owner_;
    }
    void check_owner_alive(const char* what) const
    {
        if (shares_parameters() && owner_.expired())
            throw error(std::string("tenet: model::") + what +
                        ": the model whose parameters this one shares (share_parameters, at_batch) was destroyed");
    }

    // count elements between places, on the current stream.
    template <class To, class From, class T>
    static void copy_rows(T* to, const T* from, std::size_t count)
    {
        copy_bytes<To, From>(to, from, count * sizeof(T), current_stream());
    }

    template <std::size_t... N>
    static std::string shape_text(Shape<N...>)
    {
        std::string s = "[";
        ((s += std::to_string(N) + ","), ...);
        if (s.size() > 1) s.pop_back();
        return s + "]";
    }

    static layer_type bind(storage_type* values, gradient_type* gradients, std::byte* recompute, f32* buffers)
    {
        parameter_slice<storage_type, gradient_type> slice(values, gradients, 0, recompute, buffers,
                                                           values + trainable_numel);
        return layer_type(slice);
    }

    void clear_padding()
    {
        if constexpr (flat_numel > 0) {
            assign(make_view<Shape<flat_numel>, Place>(values_.data()), 0);
            if constexpr (P::trainable && trainable_numel > 0)
                assign(make_view<Shape<trainable_numel>, Place>(gradients_.data()), 0);
        }
        if constexpr (buffer_numel > 0) assign(make_view<Shape<buffer_numel>, Place>(buffers_.data()), 0);
    }

    step_info step_info_now() const
    {
        return {seed_, step_, training_, step_counter_.data(), false, lengths_, valid_, observer_, {}, positions_};
    }

    // A tensor or view holding elements of T (what the layers read in place).
    template <class D, class T>
    static constexpr bool stored_as = [] {
        using N = std::decay_t<D>;
        if constexpr (is_tensor<N>::value || is_tensor_view<N>::value)
            return std::is_same_v<std::remove_const_t<typename N::element_type>, T>;
        else
            return false;
    }();

    buffer<storage_type, Place> values_;
    buffer<gradient_type, Place> gradients_;
    buffer<std::byte, Place> recompute_;
    buffer<f32, Place> buffers_;
    storage_type* parameters_;  // values_, or the parameters of the model this one shares
    f32* buffer_store_;         // buffers_, or the shared model's
    layer_type layer_;
    output_tensor output_;
    std::unique_ptr<output_tensor> staged_dy_;  // dy converted to the storage type, made on first need
    std::unique_ptr<Tensor<input_type, In, Place>> staged_input_;  // predict's padded batch, made on first need
    Tensor<f64, Shape<>, Place> step_counter_;   // step_ in the model's place (exact to 2^53 steps)
    std::uint64_t seed_;
    const i32* lengths_ = nullptr;  // the last forward's sequence lengths (null: none)
    Tensor<f32, Shape<In::extents[0]>, Place> valid_mask_;  // the last forward's real samples (1) and padding (0)
    const f32* valid_ = nullptr;  // valid_mask_'s data when the last forward had one (null: every sample real)
    const i32* positions_ = nullptr;  // forward_at's positions while it runs
    std::shared_ptr<const char> alive_;  // an owner's token (null in a model sharing another's parameters)
    std::weak_ptr<const char> owner_;    // ... whose owner's token this one watches
    profile::step_observer* observer_ = nullptr;
    std::uint64_t step_ = 0;
    bool training_ = true;
};

// A model at batch B over the parameters of `owner` (see the
// share_parameters constructor: owner must outlive it).
template <std::size_t B, class Owner>
auto at_batch(Owner& owner)
{
    using shared = model<typename Owner::spec, typename Owner::policy,
                         detail::with_batch_t<typename Owner::input_shape, B>, typename Owner::place>;
    return shared(share_parameters, owner);
}

// Copies every parameter and buffer (BatchNorm's running statistics) of
// `from` into `to`: the same spec under policies with one storage type, in
// any two places (a trained model into its QAT twin, or into a fresh model
// to prune and fine-tune).
template <class To, class From>
void copy_parameters(To& to, const From& from)
{
    static_assert(std::is_same_v<typename To::storage_type, typename From::storage_type> &&
                      To::flat_numel == From::flat_numel && To::buffer_numel == From::buffer_numel,
                  "tenet: copy_parameters: the models must hold the same parameters in the same storage "
                  "type (the same spec under policies with one storage type)");
    constexpr std::size_t n = To::flat_numel, b = To::buffer_numel;
    copy(make_view<Shape<n>, typename To::place>(to.parameters()),
         make_view<Shape<n>, typename From::place>(from.parameters()));
    if constexpr (b > 0)
        copy(make_view<Shape<b>, typename To::place>(to.buffers()), make_view<Shape<b>, typename From::place>(from.buffers()));
}

}  // namespace tenet::nn
