// dist::mpi_communicator's collectives against the same arithmetic done by
// hand: every rank computes every rank's data, so the expected sums (taken
// in rank order, in f32) are known bit for bit on each rank.
#include "world.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <vector>

using tenet::dist::mpi_communicator;

namespace {

// Rank r's i-th value: spread over magnitudes and signs, so that a different
// summation order would change the bits.
float value(int rank, std::size_t i)
{
    std::uint64_t h = (static_cast<std::uint64_t>(rank) + 1) * 0x9E3779B97F4A7C15ull ^ (i * 0xBF58476D1CE4E5B9ull);
    h ^= h >> 29;
    h *= 0x94D049BB133111EBull;
    h ^= h >> 32;
    const float mantissa = static_cast<float>(h % 20001) / 1000.0f - 10.0f;
    const float scale[] = {1e-3f, 1.0f, 1e3f};
    return mantissa * scale[h % 3];
}

std::vector<float> values(int rank, std::size_t n, std::size_t first = 0)
{
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = value(rank, first + i);
    return v;
}

// The sum over ranks in rank order, as f32.
float rank_order_sum(int ranks, std::size_t i)
{
    float s = value(0, i);
    for (int r = 1; r < ranks; ++r) s += value(r, i);
    return s;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

}  // namespace

TEST_CASE("mpi_communicator: allreduce_sum gives every rank the rank-order sum, bit for bit")
{
    mpi_communicator& world = dist_testing::world();
    const int ranks = world.size();
    const std::size_t p = static_cast<std::size_t>(ranks);
    // empty, shorter than the ranks, not a multiple of them, and past one
    // internal piece (2^24 elements)
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, p - 1, p + 1, std::size_t{1000}, (std::size_t{1} << 24) + 5}) {
        CAPTURE(n);
        std::vector<float> data = values(world.rank(), n);
        world.allreduce_sum(data.data(), n, {});
        std::size_t wrong = 0;
        for (std::size_t i = 0; i < n; ++i) wrong += !same_bits(data[i], rank_order_sum(ranks, i));
        CHECK(wrong == 0);
    }
}

TEST_CASE("mpi_communicator: reduce_scatter_sum, all_gather and broadcast")
{
    mpi_communicator& world = dist_testing::world();
    const int ranks = world.size(), me = world.rank();
    const std::size_t p = static_cast<std::size_t>(ranks);

    // reduce-scatter: rank r's out is the sum of every rank's piece r
    for (std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{4099}}) {
        CAPTURE(n);
        const std::vector<float> in = values(me, n * p);
        std::vector<float> out(n, -1.0f);
        world.reduce_scatter_sum(in.data(), out.data(), n, {});
        std::size_t wrong = 0;
        for (std::size_t i = 0; i < n; ++i)
            wrong += !same_bits(out[i], rank_order_sum(ranks, static_cast<std::size_t>(me) * n + i));
        CHECK(wrong == 0);
    }

    // all-gather of an odd number of bytes: rank r's bytes at r * 13
    constexpr std::size_t bytes = 13;
    std::vector<std::uint8_t> mine(bytes), all(bytes * p, 0xEE);
    for (std::size_t i = 0; i < bytes; ++i) mine[i] = static_cast<std::uint8_t>(31 * me + i);
    world.all_gather(mine.data(), all.data(), bytes, {});
    for (int r = 0; r < ranks; ++r)
        for (std::size_t i = 0; i < bytes; ++i) CHECK(all[static_cast<std::size_t>(r) * bytes + i] == std::uint8_t(31 * r + i));

    // broadcast from the last rank, more than a megabyte
    const int root = ranks - 1;
    std::vector<float> data = values(me, (std::size_t{1} << 18) + 3);
    world.broadcast(data.data(), data.size() * sizeof(float), root, {});
    CHECK(data == values(root, data.size()));

    // a root outside the ranks is refused on every rank before anything is sent
    CHECK_THROWS_AS(world.broadcast(data.data(), 4, ranks, {}), tenet::error);
    CHECK_THROWS_AS(world.broadcast(data.data(), 4, -1, {}), tenet::error);
    CHECK(world.rank() == me);
}

TEST_CASE("mpi_communicator: misuse is a clear error")
{
    CHECK_THROWS_AS(tenet::dist::mpi_communicator(MPI_COMM_WORLD, tenet::dist::mpi_options{std::chrono::milliseconds(0)}),
                    tenet::error);
    // the communicator protocol: host memory, and the world's ranks
    mpi_communicator& world = dist_testing::world();
    CHECK(world.host_memory());
    int size = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(world.size() == size);
}
