// Owning tensors, views over foreign memory, element access, moves, copies
// between places, allocation failure, and the run-time aliasing rules.
#include "tensor_testing.hpp"

#include <memory>
#include <vector>

using namespace tenet;

TEST_CASE("tensors are movable, own their memory, and are never copied implicitly")
{
    static_assert(!std::is_copy_constructible_v<Tensor<f32, Shape<4>, Host>>);
    static_assert(std::is_nothrow_move_constructible_v<Tensor<f32, Shape<4>, Host>>);
    static_assert(Tensor<bf16, Shape<3, 5>, Host>::bytes == 30);
    Tensor<f32, Shape<4>, Host> a;
    a = iota<Shape<4>>(1.0f, 1.0f);
    const f32* memory = a.data();
    CHECK(reinterpret_cast<std::uintptr_t>(memory) % 64 == 0);
    Tensor<f32, Shape<4>, Host> b(std::move(a));
    CHECK(b.data() == memory);
    CHECK(a.data() == nullptr);
    CHECK(b(3) == 4.0f);
    CHECK_THROWS_AS(a = b, error);           // a moved-from tensor has no memory
    CHECK_THROWS_AS(b = a * 2.0f, error);    // nor can it be read
}

TEST_CASE("element access checks every index")
{
    Tensor<i32, Shape<2, 3>, Host> t;
    t = iota<Shape<2, 3>>();
    CHECK(t(1, 2) == 5);
    CHECK_THROWS_AS(t(2, 0), index_error);
    CHECK_THROWS_WITH_AS(t(0, 3), "tenet: index 3 out of range for dimension 1 of Shape<2,3>", index_error);
}

TEST_CASE("views wrap memory owned elsewhere, without a copy")
{
    std::vector<float> foreign(12);
    for (std::size_t i = 0; i < foreign.size(); ++i) foreign[i] = static_cast<float>(i);
    auto view = make_view<Shape<3, 4>, Host>(foreign.data());
    Tensor<f32, Shape<4, 3>, Host> t = transpose(view) * 2.0f;
    CHECK(t(3, 1) == 2.0f * 7);  // element (1, 3) of the original
    view = 0.5f;                 // assignment through the view writes the foreign memory
    CHECK(foreign[11] == 0.5f);
}

TEST_CASE("copy between host tensors and views")
{
    Tensor<bf16, Shape<8, 8>, Host> a, b;
    testing::fill_random(a, 3);
    copy(b, a);
    CHECK(std::memcmp(a.data(), b.data(), a.bytes) == 0);
    Tensor<bf16, Shape<8, 8>, Host> t;
    copy(t, transpose(a));  // layouts differ: copied by assignment
    CHECK(std::memcmp(&t(2, 5), &a(5, 2), 2) == 0);
}

TEST_CASE("an allocation that fails throws out_of_memory_error and leaves other tensors intact")
{
    Tensor<f32, Shape<16>, Host> kept;
    kept = iota<Shape<16>>(0.0f, 1.0f);
    using huge = Shape<std::size_t{1} << 46>;  // 256 TiB
    CHECK_THROWS_AS((Tensor<f32, huge, Host>{}), out_of_memory_error);
    try {
        Tensor<f32, huge, Host> t;
    } catch (const out_of_memory_error& e) {
        CHECK(e.bytes() == (std::size_t{1} << 48));
        CHECK(std::string(e.what()).find("Host") != std::string::npos);
    }
    for (std::size_t i = 0; i < 16; ++i) CHECK(kept(i) == static_cast<float>(i));
}

TEST_CASE("aliasing: in place is fine, a destination read through another layout is rejected")
{
    Tensor<f32, Shape<6, 6>, Host> x;
    x = iota<Shape<6, 6>>(0.0f, 1.0f);
    CHECK_NOTHROW(x = x * 2.0f + x);
    CHECK_NOTHROW(x = transpose(transpose(x)) + 1.0f);  // the same layout again
    CHECK_THROWS_AS(x = transpose(x), aliasing_error);
    CHECK_THROWS_AS((x = broadcast_to<Shape<6, 6>>(slice<0, 0, 1>(x))), aliasing_error);  // row 0 read by every row
    CHECK_THROWS_AS((slice<0, 1, 6>(x) = slice<0, 0, 5>(x)), aliasing_error);              // overlapping slices
    CHECK_NOTHROW((slice<0, 0, 3>(x) = slice<0, 3, 6>(x)));                                // disjoint slices
    CHECK(x(0, 0) == x(3, 0));
    Tensor<f32, Shape<6, 6>, Host> y;
    CHECK_THROWS_AS((tie(x, x) = pack(x * 1.0f, x * 2.0f)), aliasing_error);  // two destinations, one memory
    const float before = x(2, 3);
    CHECK_NOTHROW((tie(x, y) = pack(x * 2.0f, x + 1.0f)));  // y reads x before x is overwritten
    CHECK(y(2, 3) == before + 1.0f);
    CHECK(x(2, 3) == before * 2.0f);
}
