// NCCL on one lent GPU: a one-rank nccl_communicator's collectives on device
// memory, and a data-parallel device trainer over it against the same
// trainer without one -- eager and replayed as a CUDA Graph with the
// collectives captured, with and without ZeRO-1's sharded optimizer state.
// One rank's weight in its global batch is exactly 1, so the parameters
// must be the same bits. (More GPUs: the mpirun tests'
// data-parallel cases apply as they are, with nccl_communicator.)
#include "device_testing.hpp"

#include <tenet/dist/local_communicator.hpp>
#include <tenet/dist/nccl_communicator.hpp>
#include <tenet/train/train.hpp>

#include <algorithm>
#include <vector>

using namespace tenet;
namespace nn = tenet::nn;
namespace train = tenet::train;

#if defined(TENET_WITH_NCCL)

namespace {

using spec = nn::Sequential<nn::Linear<40, 64>, nn::ReLU, nn::Linear<64, 10>>;
template <class P>
using model_t = nn::model<spec, P, Shape<32, 40>, Device>;

template <class M>
std::vector<f32> parameters_of(const M& m)
{
    std::vector<typename M::storage_type> raw(M::flat_numel);
    TENET_CUDA_CHECK(cudaMemcpy(raw.data(), m.parameters(), raw.size() * sizeof(raw[0]), cudaMemcpyDefault));
    std::vector<f32> out(raw.size());
    for (std::size_t i = 0; i < raw.size(); ++i) out[i] = convert<f32>(raw[i]);
    return out;
}

}  // namespace

TEST_CASE("nccl_communicator: one rank's collectives on device memory")
{
    dist::local_communicator boot;
    dist::nccl_communicator nccl(boot);
    CHECK(nccl.size() == 1);
    CHECK_FALSE(nccl.host_memory());
    Tensor<f32, Shape<1000>, Host> h;
    testing::fill_random(h, 5);
    const auto holds_h = [&](const Tensor<f32, Shape<1000>, Device>& d) {
        const auto back = testing::to_host(d);
        return std::equal(back.data(), back.data() + 1000, h.data());
    };
    auto a = testing::to_device(h);
    Tensor<f32, Shape<1000>, Device> b;
    testing::poison(b);
    nccl.allreduce_sum(a.data(), 1000, current_stream());
    nccl.reduce_scatter_sum(a.data(), b.data(), 1000, current_stream());
    nccl.wait(current_stream());
    CHECK(holds_h(a));
    CHECK(holds_h(b));
    testing::poison(b);
    nccl.all_gather(a.data(), b.data(), 1000 * sizeof(f32), current_stream());
    nccl.broadcast(b.data(), 1000 * sizeof(f32), 0, current_stream());
    nccl.wait(current_stream());
    CHECK(holds_h(b));
    CHECK_THROWS_AS(nccl.broadcast(b.data(), 4, 1, current_stream()), tenet::error);
    dist::communicator& device_memory = nccl;
    CHECK_THROWS_AS(dist::nccl_communicator(device_memory, {}), tenet::error);  // a device-memory bootstrap
}

TEST_CASE("data parallel on one NCCL rank: the same bits as without a communicator, eager and captured")
{
    using P = bf16_mixed;
    dist::local_communicator boot;
    dist::nccl_communicator nccl(boot);
    model_t<P> plain_net(5), parallel_net(5), zero_net(5);
    train::trainer plain(plain_net, train::adamw{}, train::constant_lr{1e-3f});
    train::trainer parallel(parallel_net, train::adamw{}, train::constant_lr{1e-3f}, {.communicator = &nccl});
    train::trainer zero(zero_net, train::adamw{}, train::constant_lr{1e-3f}, {.communicator = &nccl, .zero = true});
    Tensor<bf16, Shape<32, 40>, Device> x;
    Tensor<std::int32_t, Shape<32>, Device> labels, valid;
    for (int step = 0; step < 8; ++step) {
        if (step == 3) plain.capture(), parallel.capture(), zero.capture();
        {
            stream_scope on(parallel.stream());
            x = random_normal<Shape<32, 40>>(100 + step);
            labels = cast<std::int32_t>(random_uniform<Shape<32>>(200 + step, 0, 0.0f, 9.99f));
            valid = cast<std::int32_t>(random_uniform<Shape<32>>(300 + step, 0, 0.0f, 1.0f) < 0.9f);
            parallel.stream().synchronize();
        }
        plain.step(x, labels, valid);
        parallel.step(x, labels, valid);
        zero.step(x, labels, valid);
        plain.stream().synchronize();
        nccl.wait(parallel.stream());
        nccl.wait(zero.stream());
        CHECK(parameters_of(parallel_net) == parameters_of(plain_net));
        CHECK(parameters_of(zero_net) == parameters_of(plain_net));
    }
    CHECK(zero.state().applied == plain.state().applied);
    CHECK(parallel.mean_loss() == doctest::Approx(plain.mean_loss()).epsilon(1e-6));
    CHECK(parallel.state().applied == plain.state().applied);
}

#else

TEST_CASE("nccl_communicator: not built (CMake found no NCCL)") { MESSAGE("NCCL not found: nccl_communicator not built"); }

#endif
