// Shapes, broadcasting rules and static layouts: the simplified index
// formula of every layout agrees with the naive multi-index computation.
#include <doctest/doctest.h>
#include <tenet/tenet.hpp>

#include <array>
#include <cstddef>

using namespace tenet;

static_assert(Shape<>::rank == 0 && Shape<>::numel == 1);
static_assert(Shape<2, 3, 4>::numel == 24 && Shape<2, 3, 4>::strides[0] == 12 && Shape<2, 3, 4>::strides[2] == 1);
static_assert(Shape<1, 2, 1, 2, 1, 2, 1, 2>::rank == 8);

static_assert(broadcastable_v<Shape<3, 1>, Shape<4>>);
static_assert(std::is_same_v<broadcast_shape_t<Shape<3, 1>, Shape<4>>, Shape<3, 4>>);
static_assert(std::is_same_v<broadcast_shape_t<Shape<>, Shape<2, 5>>, Shape<2, 5>>);
static_assert(std::is_same_v<broadcast_shape_t<Shape<8, 1, 6, 1>, Shape<7, 1, 5>>, Shape<8, 7, 6, 5>>);
static_assert(!broadcastable_v<Shape<256, 784>, Shape<256, 783>>);
static_assert(!broadcastable_v<Shape<2, 3>, Shape<3, 2>>);
static_assert(broadcasts_to_v<Shape<4>, Shape<3, 4>> && !broadcasts_to_v<Shape<3, 4>, Shape<4>>);

namespace {

// offset(i) from the multi-index of i, dimension by dimension.
template <class L>
std::size_t naive_offset(std::size_t i)
{
    std::size_t offset = L::offset;
    for (std::size_t d = L::rank; d-- > 0;) {
        offset += (i % L::extents[d]) * L::strides[d];
        i /= L::extents[d];
    }
    return offset;
}

template <class L>
void check_layout()
{
    using map = index_map<L>;
    for (std::size_t i = 0; i < L::shape::numel; ++i) {
        REQUIRE(map::offset(i) == naive_offset<L>(i));
        REQUIRE(map::offset(static_cast<unsigned>(i)) == naive_offset<L>(i));
    }
    // the simplified formula never has more terms than dimensions
    CHECK(map::terms.count <= L::rank);
}

}  // namespace

TEST_CASE("index maps agree with naive multi-index arithmetic")
{
    check_layout<contiguous_layout<Shape<3, 5, 7>>>();
    check_layout<Layout<Shape<5, 3>, Strides<1, 5>>>();                   // transposed
    check_layout<Layout<Shape<4, 6>, Strides<0, 1>>>();                   // broadcast rows
    check_layout<Layout<Shape<4, 6>, Strides<1, 0>>>();                   // broadcast columns
    check_layout<Layout<Shape<2, 3, 4>, Strides<0, 4, 1>, 8>>();          // broadcast + offset
    check_layout<Layout<Shape<3, 2, 5>, Strides<20, 5, 2>, 1>>();         // sliced with a step
    check_layout<Layout<Shape<1, 7, 1, 3>, Strides<0, 3, 0, 1>>>();       // unit dimensions
    check_layout<Layout<Shape<6, 1, 4>, Strides<4, 99, 1>>>();            // unit dim with any stride
    check_layout<Layout<Shape<>, Strides<>, 5>>();                        // a scalar at offset 5
}

TEST_CASE("index maps simplify: merged dimensions, no division for contiguous layouts")
{
    using contiguous = index_map<contiguous_layout<Shape<4, 8, 16>>>;
    CHECK(contiguous::contiguous);
    CHECK(contiguous::terms.count == 1);
    CHECK(contiguous::terms.terms[0].divisor == 1);
    CHECK_FALSE(contiguous::terms.terms[0].needs_modulus);

    using bias = index_map<Layout<Shape<1024, 4096>, Strides<0, 1>>>;  // a row vector broadcast down
    CHECK(bias::terms.count == 1);
    CHECK(bias::terms.terms[0].needs_modulus);  // i % 4096, nothing else
    CHECK(bias::terms.terms[0].divisor == 1);
    CHECK_FALSE(bias::contiguous);  // i % 4096 is not the identity: copy must not memcpy it

    using transposed = index_map<Layout<Shape<5, 3>, Strides<1, 5>>>;
    CHECK_FALSE(transposed::contiguous);
    CHECK(transposed::terms.count == 2);
}

TEST_CASE("chunk access is classified from the layout")
{
    CHECK(index_map<contiguous_layout<Shape<64>>>::chunk<4> == chunk_access::vector);
    CHECK(index_map<contiguous_layout<Shape<63>>>::chunk<4> == chunk_access::gather);  // rows cross chunks
    CHECK(index_map<Layout<Shape<8, 16>, Strides<0, 1>>>::chunk<8> == chunk_access::vector);
    CHECK(index_map<Layout<Shape<8, 16>, Strides<1, 0>>>::chunk<8> == chunk_access::uniform);
    CHECK(index_map<Layout<Shape<8, 16>, Strides<16, 1>, 2>>::chunk<4> == chunk_access::gather);  // misaligned offset
    CHECK(index_map<Layout<Shape<16, 8>, Strides<1, 16>>>::chunk<4> == chunk_access::gather);      // transposed
    CHECK(index_map<Layout<Shape<>, Strides<>>>::chunk<4> == chunk_access::uniform);
}

TEST_CASE("32-bit indices are chosen when the sizes allow")
{
    CHECK(std::is_same_v<index_for<1000>, unsigned>);
    CHECK(std::is_same_v<index_for<(std::size_t{1} << 33)>, unsigned long long>);
    CHECK(std::is_same_v<index_for<0xFFFFFFFFull>, unsigned>);
    CHECK(std::is_same_v<index_for<0x100000000ull>, unsigned long long>);
    // a kernel keeps a grid-stride step (under 2^31 threads) of headroom
    CHECK(std::is_same_v<tenet::kernel_index<(std::size_t{1} << 31) - 1>, unsigned>);
    CHECK(std::is_same_v<tenet::kernel_index<(std::size_t{1} << 31)>, unsigned long long>);
}
