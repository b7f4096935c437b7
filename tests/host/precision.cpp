// The predefined precision policies and the concepts that classify them.
// (Nonsense policies are rejected at compile time: see tests/compile_fail.)
#include <doctest/doctest.h>
#include <tenet/numeric/precision.hpp>

#include <type_traits>

using namespace tenet;

static_assert(training_policy<fp32> && training_policy<bf16_mixed> && training_policy<fp16_mixed>);
static_assert(precision_policy<int8_inference> && !training_policy<int8_inference>);
static_assert(!precision_policy<int> && !precision_policy<f32>);

TEST_CASE("predefined policies name their storage, compute, accumulate and master types")
{
    CHECK(std::is_same_v<bf16_mixed::storage, bf16>);
    CHECK(std::is_same_v<bf16_mixed::compute, f32>);
    CHECK(std::is_same_v<bf16_mixed::accumulate, f32>);
    CHECK(std::is_same_v<bf16_mixed::master, f32>);
    CHECK(std::is_same_v<fp16_mixed::storage, f16>);
    CHECK(std::is_same_v<fp32::storage, f32>);
    CHECK(std::is_same_v<int8_inference::storage, i8>);
    CHECK(std::is_same_v<int8_inference::compute, f32>);
    CHECK(std::is_same_v<int8_inference::accumulate, i32>);
}

TEST_CASE("dynamic loss scaling is on for fp16_mixed only")
{
    CHECK(fp16_mixed::dynamic_loss_scaling);
    CHECK_FALSE(bf16_mixed::dynamic_loss_scaling);
    CHECK_FALSE(fp32::dynamic_loss_scaling);
    CHECK_FALSE(int8_inference::dynamic_loss_scaling);
}

TEST_CASE("user-defined policies that make sense are accepted")
{
    using f64_accumulate = training_precision<bf16, f32, f64, f32>;
    using fp8_weights = training_precision<f8e4m3, f32, f32, f32, loss_scaling::dynamic>;
    using f16_inference = inference_precision<f16, f16, f32>;
    CHECK(training_policy<f64_accumulate>);
    CHECK(fp8_weights::dynamic_loss_scaling);
    CHECK(precision_policy<f16_inference>);
    CHECK_FALSE(f16_inference::trainable);
}
