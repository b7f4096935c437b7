// layer_profile: where a training step's time goes, layer by layer. A
// step_observer: hand it to trainer.observe(), run some steps, and print
// table() (sorted by time, as PyTorch's key_averages().table()) or json().
//
//   profile::layer_profile p({.warmup_steps = 2, .peak = linalg::measure_peak<Host>()});
//   t.observe(&p);
//   for (...) { { auto wait = p.data_wait(); loader.next(b); } t.step(b.x(), b.labels(), b.valid()); }
//   t.observe(nullptr);
//   std::cout << p.table();
//
// Each row is one section (a layer's forward or backward, the loss, the
// optimizer, a collective, the data wait) summed over the measured steps,
// with its FLOPs and bytes (known at compile time from the layer's shapes)
// over its time: GFLOP/s, GB/s and, against the machine's peak, the
// fraction of the roofline's bound (compute when the section's FLOPs per
// byte exceed the peak's, memory otherwise).
//
// Host sections are timed by the wall clock; device sections by CUDA events
// on the stream, read back once per step (so a profiled device step waits
// for its work at its end). A step replayed from a CUDA Graph is timed as a
// whole: its layers cannot be seen, and the table says so. "unattributed" is
// the step time outside every section (input checks, staging, launch gaps).
//
// With a trace_writer in the options every section also goes to the trace,
// warm-up steps included, as soon as its step ends.
#pragma once

#include "event_marks.hpp"
#include "json_text.hpp"
#include "step_observer.hpp"
#include "trace.hpp"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace tenet::profile {

// What the machine can do at best: FLOP/s of a large GEMM and bytes/s of a
// large copy (linalg::measure_peak measures both), and where they came from.
struct machine_peak {
    double flops_per_second = 0;
    double bytes_per_second = 0;
    std::string source{};
};

struct layer_profile_options {
    std::size_t warmup_steps = 1;  // steps observed but not counted
    machine_peak peak{};           // none: no "% of peak" column
    trace_writer* trace = nullptr;
};

// One row of the profile: a section summed over the measured steps.
struct profile_row {
    std::string name{}, pass{}, shape{};
    section_kind kind = section_kind::layer;
    std::size_t calls = 0;
    double seconds = 0;
    std::uint64_t flops = 0, bytes = 0;  // summed over the calls

    double gflops_per_second() const { return seconds > 0 ? flops / seconds * 1e-9 : 0; }
    double gbytes_per_second() const { return seconds > 0 ? bytes / seconds * 1e-9 : 0; }
    // Against the roofline of `peak`: "compute" or "memory" ("" when the
    // section counts no work or no peak is known).
    const char* bound(const machine_peak& peak) const
    {
        if (bytes == 0 || peak.flops_per_second <= 0 || peak.bytes_per_second <= 0) return "";
        return static_cast<double>(flops) / bytes > peak.flops_per_second / peak.bytes_per_second ? "compute" : "memory";
    }
    // The fraction of the bound's peak reached; negative when unknown.
    double fraction_of_peak(const machine_peak& peak) const
    {
        const std::string_view b = bound(peak);
        if (b.empty() || seconds <= 0) return -1;
        return b == "compute" ? flops / seconds / peak.flops_per_second : bytes / seconds / peak.bytes_per_second;
    }
};

class layer_profile final : public step_observer {
public:
    explicit layer_profile(layer_profile_options options = {}) : options_(std::move(options)) {}

    // A failure while timing (a CUDA error, a trace that cannot be written)
    // is kept, not thrown into the step: the readers throw it, and the
    // profile observes nothing more.
    void begin(const section& s) override
    {
        if (!failure_.empty()) return;
        try {
            if (open_.empty()) start_group(s);
            open_.push_back({s, clock::now(), s.device ? marks_.mark() : no_mark});
        } catch (const std::exception& e) {
            fail(e);
        }
    }

    void end(const section& s) override
    {
        if (!failure_.empty()) return;
        try {
            finish(s);
        } catch (const std::exception& e) {
            fail(e);
        }
    }

    // The data wait as a section: alive while the loop waits for a batch.
    observed_section data_wait() { return observed_section(this, data_section); }

    // The rows, longest first.
    std::vector<profile_row> rows() const
    {
        check();
        std::vector<profile_row> sorted = rows_;
        std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.seconds > b.seconds; });
        return sorted;
    }

    std::size_t steps() const { return steps_; }                  // measured (after the warm-up)
    double step_seconds() const { return step_seconds_; }         // the measured steps' time
    double data_seconds() const { return data_seconds_; }         // the waits before them
    double total_seconds() const { return step_seconds_ + data_seconds_; }
    // Step time outside every section inside the steps.
    double unattributed_seconds() const { return std::max(0.0, step_seconds_ - inside_seconds_); }
    std::size_t captured_steps() const { return captured_; }  // of steps(): replayed graphs, timed whole
    bool device_timed() const { return device_; }
    const machine_peak& peak() const { return options_.peak; }

    // The rows longest first (at most max_rows of them, the rest summed in
    // one line), then the unattributed time.
    std::string table(std::size_t max_rows = SIZE_MAX) const
    {
        check();
        std::string out = heading();
        out += line("%-28s %-8s %6s %10s %9s %7s %9s %8s %7s  %s\n", "name", "pass", "calls", "total ms", "ms/step",
                    "% step", "GFLOP/s", "GB/s", "% peak", "bound");
        const double per = steps_ > 0 ? 1.0 / steps_ : 0;
        const std::vector<profile_row> sorted = rows();
        for (const profile_row& r : sorted) {
            if (&r - sorted.data() == static_cast<std::ptrdiff_t>(std::min(max_rows, sorted.size()))) break;
            const double f = r.fraction_of_peak(options_.peak);
            out += line("%-28s %-8s %6zu %10.3f %9.3f %7.1f %9s %8s %7s  %s\n", r.name.c_str(), r.pass.c_str(), r.calls,
                        r.seconds * 1e3, r.seconds * 1e3 * per, percent_of_total(r.seconds),
                        r.flops ? line("%.1f", r.gflops_per_second()).c_str() : "-",
                        r.bytes ? line("%.1f", r.gbytes_per_second()).c_str() : "-",
                        f >= 0 ? line("%.1f", 100 * f).c_str() : "-", r.bound(options_.peak));
        }
        if (sorted.size() > max_rows) {
            double rest = 0;
            for (std::size_t i = max_rows; i < sorted.size(); ++i) rest += sorted[i].seconds;
            out += line("%-28s %-8s %6s %10.3f %9.3f %7.1f\n", line("(%zu more rows)", sorted.size() - max_rows).c_str(), "",
                        "", rest * 1e3, rest * 1e3 * per, percent_of_total(rest));
        }
        out += line("%-28s %-8s %6s %10.3f %9.3f %7.1f\n", "unattributed", "", "", unattributed_seconds() * 1e3,
                    unattributed_seconds() * 1e3 * per, percent_of_total(unattributed_seconds()));
        return out;
    }

    std::string json() const
    {
        check();
        json_object peak;
        peak.number("flops_per_second", options_.peak.flops_per_second)
            .number("bytes_per_second", options_.peak.bytes_per_second)
            .text("source", options_.peak.source);
        std::string sections = "[";
        for (const profile_row& r : rows()) {
            json_object row;
            row.text("name", r.name).text("pass", r.pass).text("kind", kind_name(r.kind)).text("shape", r.shape);
            row.integer("calls", std::uint64_t{r.calls}).number("ms", r.seconds * 1e3);
            row.number("percent_of_step", percent_of_total(r.seconds));
            row.integer("flops", r.flops).integer("bytes", r.bytes);
            row.number("gflops_per_second", r.gflops_per_second()).number("gbytes_per_second", r.gbytes_per_second());
            row.number("fraction_of_peak", r.fraction_of_peak(options_.peak)).text("bound", r.bound(options_.peak));
            sections += sections.size() > 1 ? ",\n" : "\n";
            sections += row.str();
        }
        sections += "\n]";
        json_object out;
        out.integer("steps", std::uint64_t{steps_}).integer("warmup_steps", std::uint64_t{options_.warmup_steps});
        out.text("timing", timing_name()).integer("captured_steps", std::uint64_t{captured_});
        out.number("step_ms", step_seconds_ * 1e3).number("data_ms", data_seconds_ * 1e3);
        out.number("unattributed_ms", unattributed_seconds() * 1e3);
        out.raw("peak", peak.str()).raw("sections", sections);
        return out.str() + "\n";
    }

private:
    using clock = std::chrono::steady_clock;
    static constexpr std::size_t no_mark = ~std::size_t{0};

    struct open_section {
        section s;
        clock::time_point start;
        std::size_t mark;
    };
    struct finished_section {
        section s;
        double start_seconds, seconds;  // from the group's start
    };

    void fail(const std::exception& e)
    {
        failure_ = e.what();
        open_.clear();
        finished_.clear();
        device_marks_.clear();
        group_mark_ = no_mark;
    }

    // The outermost section (a step, a data wait) starts a group: its
    // sections are resolved and counted together when it ends.
    void start_group(const section& s)
    {
        marks_.clear();
        group_start_ = clock::now();
        group_trace_us_ = options_.trace ? options_.trace->now_us() : 0;
        group_mark_ = s.device ? marks_.mark() : no_mark;
    }

    void finish(const section& s)
    {
        if (open_.empty()) throw error("tenet: layer_profile: a section ended that never began: " + s.name);
        open_section o = std::move(open_.back());
        open_.pop_back();
        const auto now = clock::now();
        const std::size_t end_mark = o.mark != no_mark ? marks_.mark() : no_mark;
        finished_.push_back({std::move(o.s), seconds(group_start_, o.start), seconds(o.start, now)});
        if (end_mark != no_mark) device_marks_.push_back({finished_.size() - 1, o.mark, end_mark});
        if (open_.empty()) end_group();
    }

    void end_group()
    {
        if (!device_marks_.empty()) {  // the device's times replace the host's
            marks_.wait();
            for (const auto& [at, from, to] : device_marks_) {
                finished_[at].seconds = marks_.ms_between(from, to) * 1e-3;
                if (group_mark_ != no_mark) finished_[at].start_seconds = marks_.ms_between(group_mark_, from) * 1e-3;
            }
            device_ = true;
        }
        const section& outer = finished_.back().s;  // (the outermost ends last)
        const bool counted = outer.kind == section_kind::step ? ++seen_steps_ > options_.warmup_steps
                                                              : seen_steps_ >= options_.warmup_steps;
        if (counted) count(outer.kind == section_kind::step);
        if (options_.trace) write_trace(!counted);
        finished_.clear();
        device_marks_.clear();
    }

    void count(bool step)
    {
        for (const finished_section& f : finished_) {
            if (f.s.kind == section_kind::step) {
                ++steps_;
                step_seconds_ += f.seconds;
                captured_ += f.s.captured ? 1 : 0;
                continue;
            }
            if (step) inside_seconds_ += f.seconds;
            else if (f.s.kind == section_kind::data && &f == &finished_.back())
                data_seconds_ += f.seconds;  // (the wait, not its parts again; nor a layer run outside a step)
            profile_row& r = row_of(f.s);
            ++r.calls;
            r.seconds += f.seconds;
            r.flops += f.s.flops;
            r.bytes += f.s.bytes;
        }
    }

    profile_row& row_of(const section& s)
    {
        const auto [at, made] = index_.try_emplace(s.name + '\0' + s.pass, rows_.size());
        if (made) rows_.push_back({s.name, s.pass, s.shape, s.kind});
        return rows_[at->second];
    }

    void write_trace(bool warmup)
    {
        trace_writer& t = *options_.trace;
        for (const finished_section& f : finished_) {
            trace_arguments a;
            if (!f.s.shape.empty()) a.emplace_back("shape", f.s.shape);
            if (f.s.flops) a.emplace_back("flops", std::to_string(f.s.flops));
            if (f.s.bytes) a.emplace_back("bytes", std::to_string(f.s.bytes));
            if (warmup) a.emplace_back("warm-up", "yes");
            if (f.s.captured) a.emplace_back("captured", "a replayed CUDA Graph: its layers are not seen");
            const auto start = group_trace_us_ + static_cast<std::uint64_t>(f.start_seconds * 1e6);
            const auto end = start + static_cast<std::uint64_t>(f.seconds * 1e6);
            const std::string name = f.s.pass.empty() ? f.s.name : f.s.name + " " + f.s.pass;
            const int track = !f.s.track.empty() ? t.track(f.s.track) : f.s.device ? t.track("device stream") : t.thread_track();
            t.complete(name, kind_name(f.s.kind), start, end, a, track);
        }
    }

    std::string heading() const
    {
        std::string h = line("tenet layer profile: %zu steps after %zu warm-up, %s; step %.3f ms", steps_,
                             options_.warmup_steps, timing_name().c_str(), steps_ ? step_seconds_ * 1e3 / steps_ : 0.0);
        if (data_seconds_ > 0) h += line(", data wait %.3f ms", steps_ ? data_seconds_ * 1e3 / steps_ : 0.0);
        h += "\n";
        if (captured_ > 0)
            h += line("  %zu of the steps were CUDA Graph replays, timed as a whole: their layers are not in the rows\n",
                      captured_);
        if (options_.peak.flops_per_second > 0)
            h += line("  peak: %.1f GFLOP/s, %.1f GB/s (%s)\n", options_.peak.flops_per_second * 1e-9,
                      options_.peak.bytes_per_second * 1e-9, options_.peak.source.c_str());
        return h;
    }

    std::string timing_name() const { return device_ ? "CUDA events" : "host wall clock"; }
    double percent_of_total(double s) const { return total_seconds() > 0 ? 100 * s / total_seconds() : 0; }

    void check() const
    {
        if (!failure_.empty()) throw error("tenet: layer_profile: timing failed: " + failure_);
        if (!open_.empty()) throw error("tenet: layer_profile: read while a section is open (" + open_.back().s.name + ")");
    }

    static double seconds(clock::time_point from, clock::time_point to)
    {
        return std::chrono::duration<double>(to - from).count();
    }
    template <class... A>
    static std::string line(const char* format, A... a)
    {
        char text[512];
        std::snprintf(text, sizeof text, format, a...);
        return text;
    }

    layer_profile_options options_;
    event_marks marks_;
    std::vector<open_section> open_;
    std::vector<finished_section> finished_;
    struct device_mark {
        std::size_t at, from, to;
    };
    std::vector<device_mark> device_marks_;
    clock::time_point group_start_{};
    std::uint64_t group_trace_us_ = 0;
    std::size_t group_mark_ = no_mark;

    std::vector<profile_row> rows_;
    std::map<std::string, std::size_t> index_;
    std::size_t seen_steps_ = 0, steps_ = 0, captured_ = 0;
    double step_seconds_ = 0, data_seconds_ = 0, inside_seconds_ = 0;
    bool device_ = false;
    std::string failure_;
};

}  // namespace tenet::profile
