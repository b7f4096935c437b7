// detail::data_parallel<Model>: what a trainer (trainer.hpp) does across
// ranks when trainer_options::communicator is set. Every call is a
// collective: every rank makes the same calls in the same order.
//   - start_from_rank0: rank 0's parameters and buffers everywhere;
//   - share: per micro-batch, one two-number allreduce of (real rows,
//     rows x loss): the global batch's mean loss, and this rank's weight
//     rows_r / rows_total, by which its loss gradient is scaled, so the plain
//     sum of the ranks' gradients is the global batch's gradient even when
//     ranks hold different numbers of real rows (the last, padded batch);
//   - sum_gradients: the flat gradients summed in buckets, from the end of
//     the buffer (the last layers', which the backward produces first);
//   - share_buffers: BatchNorm's running statistics, rank 0's after each
//     step (as PyTorch's DistributedDataParallel keeps them);
//   - ZeRO stage 1 (trainer_options::zero): sharded_update sums the
//     gradients into each rank's parameter_shard in place, steps the shard
//     with the ranks' norm totals and gathers the parameters; gathered
//     builds a checkpoint's contents with the optimizer's shards gathered;
//   - total, save_on_rank0: metrics summed over ranks, checkpoints written by
//     rank 0 and acknowledged.
#pragma once

#include "../dist/communicator.hpp"
#include "../memory/buffer.hpp"
#include "../memory/error.hpp"
#include "../reduce/reduce.hpp"
#include "../tensor/copy.hpp"
#include "parameter_shard.hpp"

#include <cstddef>
#include <string>

namespace tenet::train::detail {

template <class Model>
class data_parallel {
    using place = typename Model::place;
    using scalar = Tensor<f32, Shape<>, place>;

public:
    data_parallel(dist::communicator& comm, std::size_t bucket_bytes) : comm_(comm), bucket_(bucket_bytes / sizeof(f32)) {}

    // Every rank starts from rank 0's parameters and buffers (the caller
    // reloads master weights from the parameters).
    void start_from_rank0(Model& model, stream_ref s)
    {
        comm_.broadcast(model.parameters(), Model::flat_numel * sizeof(typename Model::storage_type), 0, s);
        share_buffers(model, s);
    }

    void share_buffers(Model& model, stream_ref s)
    {
        if constexpr (Model::buffer_numel > 0) comm_.broadcast(model.buffers(), Model::buffer_numel * sizeof(f32), 0, s);
    }

    // Adds the global batch's mean loss to loss_sum; keeps this rank's weight.
    template <class Valid>
    void share(const Valid& valid, const scalar& batch_loss, scalar& loss_sum, stream_ref s)
    {
        auto rows = make_view<Shape<>, place>(shares_.data());
        auto weighted_loss = make_view<Shape<>, place>(shares_.data() + 1);
        own_rows_ = tenet::sum(cast<f32>(valid != 0));
        rows = own_rows_;
        weighted_loss = where(own_rows_ > 0, batch_loss * own_rows_, 0);
        comm_.allreduce_sum(shares_.data(), 2, s);
        loss_sum = loss_sum + where(rows > 0, weighted_loss / rows, 0);
        weight_ = where(rows > 0, own_rows_ / rows, 0);
    }

    // The loss gradient's scale: this rank's weight times `loss_scale`.
    template <class LossScale>
    auto loss_gradient_scale(const LossScale& loss_scale)
    {
        weight_ = weight_ * loss_scale;
        return weight_.view();
    }

    void sum_gradients(f32* gradients, stream_ref s)
    {
        for (std::size_t end = Model::trainable_numel; end > 0;) {
            const std::size_t begin = end > bucket_ ? end - bucket_ : 0;
            comm_.allreduce_sum(gradients + begin, end - begin, s);
            end = begin;
        }
    }

    // This rank's parameter_shard under ZeRO-1.
    static parameter_shard shard_of(const dist::communicator& comm)
    {
        return parameter_shard::of(Model::trainable_numel, static_cast<std::size_t>(comm.rank()),
                                   static_cast<std::size_t>(comm.size()));
    }

    // A ZeRO-1 update from `gradients` (summing `divisor` micro-batches): the
    // gradients summed into this rank's shard, the shard stepped with the
    // ranks' summed norm totals (optimizer::measure, step), the parameters
    // gathered in place.
    template <class Optimizer>
    void sharded_update(Model& model, Optimizer& optimizer, f32* gradients, float divisor, stream_ref s)
    {
        scatter_gradients(gradients, s);
        optimizer.measure(gradients, divisor, totals_.data());
        comm_.allreduce_sum(totals_.data(), 2, s);
        optimizer.step(gradients, divisor, totals_.data());
        gather_shards(model.parameters() + optimizer.shard().begin, model.parameters(), s);
    }

    // A checkpoint's contents under ZeRO-1: contents(whole) builds them
    // (see optimizer::append_sections), each optimizer buffer gathered into
    // one scratch on every rank; only rank 0's hold the optimizer's sections.
    template <class Contents>
    auto gathered(Contents&& contents, stream_ref s)
    {
        buffer<f32, place> whole(Model::trainable_numel, s);
        return contents([&](const f32* shard) -> const f32* {
            gather_shards(shard, whole.data(), s);
            comm_.wait(s);
            return comm_.rank() == 0 ? whole.data() : nullptr;
        });
    }

    // whole[0, numel) = every rank's shard, from `mine` (this rank's shard
    // of T, shard-long), on every rank. In place when mine is whole's shard.
    template <class T>
    void gather_shards(const T* mine, T* whole, stream_ref s)
    {
        if (piece() > 0) comm_.all_gather(mine, whole, piece() * sizeof(T), s);
        if (rest() == 0) return;
        T* tail = whole + ranks() * piece();
        if (rank() + 1 == ranks() && mine + piece() != tail) copy_bytes<place, place>(tail, mine + piece(), rest() * sizeof(T), s);
        comm_.broadcast(tail, rest() * sizeof(T), comm_.size() - 1, s);
    }

    // A metric's sum over ranks, in place.
    void total(scalar& metric, stream_ref s) { comm_.allreduce_sum(metric.data(), 1, s); }

    // write() on rank 0; save_on_rank0 returns on every rank once it
    // succeeded, or throws on every rank (io_error elsewhere) when it failed.
    template <class Write>
    void save_on_rank0(const std::string& path, Write&& write, stream_ref s)
    {
        if (comm_.rank() != 0) {
            if (!rank0_says(true, s)) throw io_error(path, "rank 0 could not write this checkpoint");
            return;
        }
        try {
            write();
        } catch (...) {
            rank0_says(false, s);
            throw;
        }
        rank0_says(true, s);
    }

private:
    // The gradients summed over ranks, at least in this rank's shard
    // (parameter_shard::of): equal pieces reduce-scattered in place, the
    // numel mod P left over (the last shard's tail) allreduced.
    void scatter_gradients(f32* gradients, stream_ref s)
    {
        if (piece() > 0) comm_.reduce_scatter_sum(gradients, gradients + rank() * piece(), piece(), s);
        if (rest() > 0) comm_.allreduce_sum(gradients + ranks() * piece(), rest(), s);
    }

    std::size_t rank() const { return static_cast<std::size_t>(comm_.rank()); }
    std::size_t ranks() const { return static_cast<std::size_t>(comm_.size()); }
    std::size_t piece() const { return Model::trainable_numel / ranks(); }  // every shard's first part
    std::size_t rest() const { return Model::trainable_numel % ranks(); }   // the last shard's tail

    // Rank 0's word, broadcast in the model's place and read back.
    bool rank0_says(bool ok, stream_ref s)
    {
        assign(own_rows_.view(), ok ? 1 : 0);
        comm_.broadcast(own_rows_.data(), sizeof(f32), 0, s);
        Tensor<f32, Shape<>, Host> word;
        copy(word, own_rows_, s);
        comm_.wait(s);
        s.synchronize();
        return word.data()[0] != 0;
    }

    dist::communicator& comm_;
    std::size_t bucket_;  // gradients per bucket
    Tensor<f32, Shape<2>, place> shares_;  // real rows and their loss, summed over ranks
    scalar own_rows_;  // this rank's real rows
    scalar weight_;    // its share of the global batch (times the loss scale, for the backward)
    Tensor<f32, Shape<2>, place> totals_;  // ZeRO-1: the shards' [sum of squares, inf/NaN]
};

}  // namespace tenet::train::detail
