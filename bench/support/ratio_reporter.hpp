// A Google Benchmark reporter that prints the usual table, then each
// benchmark's bandwidth as a fraction of a reference benchmark run in the
// same process (a plain memory copy), and named ratios between benchmarks.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

class ratio_reporter : public benchmark::ConsoleReporter {
public:
    // copy_benchmark: the name of the benchmark that measures copy bandwidth.
    explicit ratio_reporter(std::string copy_benchmark) : copy_(std::move(copy_benchmark)) {}

    void ReportRuns(const std::vector<Run>& runs) override
    {
        ConsoleReporter::ReportRuns(runs);
        for (const Run& run : runs) {
            if (run.run_type != Run::RT_Iteration || run.error_occurred) continue;
            const auto bytes = run.counters.find("bytes_per_second");
            seconds_[run.benchmark_name()] = run.GetAdjustedRealTime() / 1e9;  // time unit: ns
            if (bytes != run.counters.end()) bandwidth_[run.benchmark_name()] = bytes->second.value;
        }
    }

    // Prints "numerator vs denominator: x.xx times as fast" for each pair.
    void print_summary(const std::vector<std::pair<std::string, std::string>>& ratios) const
    {
        std::printf("\n%-44s %10s %12s\n", "benchmark", "GB/s", "of copy BW");
        const double copy = bandwidth_.count(copy_) ? bandwidth_.at(copy_) : 0;
        for (const auto& [name, bw] : bandwidth_)
            std::printf("%-44s %10.2f %11.0f%%\n", name.c_str(), bw / 1e9, copy > 0 ? 100 * bw / copy : 0.0);
        std::printf("\n");
        for (const auto& [fast, slow] : ratios) {
            if (!seconds_.count(fast) || !seconds_.count(slow)) continue;
            std::printf("%-30s vs %-30s %6.2fx as fast\n", fast.c_str(), slow.c_str(),
                        seconds_.at(slow) / seconds_.at(fast));
        }
    }

private:
    std::string copy_;
    std::map<std::string, double> seconds_;
    std::map<std::string, double> bandwidth_;
};
