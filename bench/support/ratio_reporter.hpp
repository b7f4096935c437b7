// A Google Benchmark reporter that prints the usual table, then each
// benchmark's bandwidth (in the order they ran) as a fraction of a reference
// benchmark run in the same process (a plain memory copy), and named ratios
// between benchmarks.
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
            const std::string name = name_of(run);
            seconds_[name] = run.GetAdjustedRealTime() / benchmark::GetTimeUnitMultiplier(run.time_unit);
            if (bytes != run.counters.end()) bandwidth_.emplace_back(name, bytes->second.value);
        }
    }

    // Prints "numerator vs denominator: x.xx times as fast" for each pair.
    void print_summary(const std::vector<std::pair<std::string, std::string>>& ratios) const
    {
        std::printf("\n%-44s %10s %12s\n", "benchmark", "GB/s", "of copy BW");
        double copy = 0;
        for (const auto& [name, bw] : bandwidth_)
            if (name == copy_) copy = bw;
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
    // The benchmark's name without "/real_time": UseRealTime() does not rename it here.
    static std::string name_of(const Run& run)
    {
        benchmark::BenchmarkName name = run.run_name;
        name.time_type.clear();
        return name.str();
    }

    std::string copy_;
    std::map<std::string, double> seconds_;
    std::vector<std::pair<std::string, double>> bandwidth_;
};
