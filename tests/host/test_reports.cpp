// What a borrowed GPU's run leaves to read offline: the reports a failing
// comparison prints (tests/support), which must name the op, the first and
// the worst element, and say nothing when the values agree; and the JSON
// lines of the device benchmarks (bench/support).
#include <doctest/doctest.h>

#include "bitwise_equal.hpp"
#include "relative_error.hpp"
#include "support/json_line.hpp"

#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <vector>

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("relative_error_report: empty within the tolerance, else the op, the first and the worst element")
{
    std::vector<float> want(64), got(64);
    for (std::size_t i = 0; i < want.size(); ++i) want[i] = std::sin(0.7f * static_cast<float>(i)) + 1.5f;
    got = want;
    CHECK(testing::relative_error_report("softmax forward", got.data(), want.data(), want.size(), 0.0).empty());
    got[3] *= 1.0f + 1e-6f;  // within 1e-5
    CHECK(testing::relative_error_report("softmax forward", got.data(), want.data(), want.size(), 1e-5).empty());

    got[10] = want[10] + 0.5f;
    got[40] = want[40] - 2.0f;
    const std::string report = testing::relative_error_report("softmax forward", got.data(), want.data(), want.size(), 1e-5);
    INFO(report);
    CHECK(contains(report, "softmax forward: relative error"));
    CHECK(contains(report, "first off [10] device"));
    CHECK(contains(report, "worst [40] device"));
    CHECK(contains(report, "over 64 elements"));
}

TEST_CASE("relative_error_report: a NaN is off, and first")
{
    std::vector<double> want{1.0, 2.0, 3.0, 4.0};
    std::vector<double> got = want;
    got[2] = std::numeric_limits<double>::quiet_NaN();
    const std::string report = testing::relative_error_report("layernorm backward", got.data(), want.data(), 4, 1e-3);
    INFO(report);
    CHECK(contains(report, "first off [2] device nan"));
    CHECK(contains(report, "worst [2]"));
}

TEST_CASE("json_line: one object per line, strings escaped, non-finite numbers null")
{
    const std::string line = bench::json_line("device_row_ops")
                                 .field("op", "soft\"max\\")
                                 .field("rows", std::size_t{65536})
                                 .field("log2", 26)
                                 .field("gbs", 2861.25)
                                 .field("copy_gbs", std::numeric_limits<double>::quiet_NaN())
                                 .field("ms", -std::numeric_limits<double>::infinity())
                                 .text();
    CHECK(line == "{\"bench\": \"device_row_ops\", \"op\": \"soft\\\"max\\\\\", \"rows\": 65536, \"log2\": 26, "
                  "\"gbs\": 2861.25, \"copy_gbs\": null, \"ms\": null}");
}

TEST_CASE("bitwise_report: empty when every bit agrees, else the count and the first element's bits")
{
    std::vector<float> want{1.5f, -0.0f, 3.25f, 7.0f};
    std::vector<float> got = want;
    CHECK(testing::bitwise_report("scatter_add_rows", got.data(), want.data(), want.size()).empty());
    got[1] = 0.0f;  // equal as numbers, not as bits
    got[3] = 7.5f;
    const std::string report = testing::bitwise_report("scatter_add_rows", got.data(), want.data(), want.size());
    INFO(report);
    CHECK(report == "scatter_add_rows: 2 of 4 elements differ in their bits; first [1] device 0x00000000 (0), host "
                    "0x80000000 (-0)");
    const std::byte a[3]{std::byte{1}, std::byte{2}, std::byte{3}}, b[3]{std::byte{1}, std::byte{2}, std::byte{0xfe}};
    CHECK(testing::bitwise_report("batch bytes", a, b, 3) ==
          "batch bytes: 1 of 3 elements differ in their bits; first [2] device 0x03, host 0xfe");
}
