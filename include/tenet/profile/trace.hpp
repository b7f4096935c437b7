// trace_writer: a Chrome trace-event file (opens in Perfetto and
// chrome://tracing) of what ran when:
//
//   profile::trace_writer trace("step.trace.json");
//   {
//       profile::trace_slice s(trace, "forward 0.Linear", "layer", {{"shape", "[256, 784]"}});
//       ...                                   // the slice ends when s goes
//   }
//   trace.complete("all-reduce", "collective", start_us, end_us, {}, trace.track("stream 1"));
//
// Each slice is a complete event ("ph": "X") with its name, category,
// start and duration in whole microseconds since the writer was made, and
// string arguments. Slices go to the track of the thread that ends them
// (one per thread, numbered in order of first use and named "thread N"), or
// to a named track (track(name): a device stream, the data loader).
//
// The file is valid JSON between events, not only at the end: after each
// event the writer writes the closing "]}" and flushes, and the next event
// is written over it. A run that stops early (an exception, an early exit)
// leaves a closed file holding every slice that ended.
#pragma once

#include "../memory/error.hpp"
#include "json_text.hpp"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace tenet::profile {

// A slice's arguments: (key, value) strings shown when the slice is selected.
using trace_arguments = std::vector<std::pair<std::string, std::string>>;

class trace_writer {
public:
    explicit trace_writer(std::string path) : path_(std::move(path)), start_(clock::now())
    {
        file_.reset(std::fopen(path_.c_str(), "wb"));
        if (!file_) throw io_error(path_, "cannot create the trace file");
        write_at_end("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[", false);
        append(metadata("process_name", 0, "tenet"));
    }

    // Microseconds since the writer was made (the clock slices use).
    std::uint64_t now_us() const
    {
        return static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::microseconds>(clock::now() - start_).count());
    }

    // The track named `name` (made, and named in the file, at first use).
    int track(std::string_view name)
    {
        const std::lock_guard lock(mutex_);
        return track_locked(std::string(name));
    }

    // The calling thread's track.
    int thread_track()
    {
        const std::lock_guard lock(mutex_);
        const auto [at, made] = threads_.try_emplace(std::this_thread::get_id(), 0);
        if (made) at->second = track_locked("thread " + std::to_string(threads_.size()));
        return at->second;
    }

    // One slice from start_us to end_us (now_us() values) on `track`
    // (negative: the calling thread's).
    void complete(std::string_view name, std::string_view category, std::uint64_t start_us, std::uint64_t end_us,
                  const trace_arguments& arguments = {}, int track = -1)
    {
        if (track < 0) track = thread_track();
        json_object e;
        e.text("ph", "X").text("name", name).text("cat", category).integer("pid", std::uint64_t{0}).integer("tid", std::int64_t{track});
        e.integer("ts", start_us).integer("dur", end_us > start_us ? end_us - start_us : 0);
        if (!arguments.empty()) {
            json_object args;
            for (const auto& [key, value] : arguments) args.text(key, value);
            e.raw("args", args.str());
        }
        const std::lock_guard lock(mutex_);
        append(e.str());
    }

    const std::string& path() const { return path_; }

private:
    using clock = std::chrono::steady_clock;

    int track_locked(const std::string& name)
    {
        const auto [at, made] = tracks_.try_emplace(name, static_cast<int>(tracks_.size()) + 1);
        if (made) append(metadata("thread_name", at->second, name));
        return at->second;
    }

    static std::string metadata(std::string_view what, int tid, std::string_view name)
    {
        json_object args;
        args.text("name", name);
        json_object m;
        m.text("ph", "M").text("name", what).integer("pid", std::uint64_t{0}).integer("tid", std::int64_t{tid}).raw("args", args.str());
        return m.str();
    }

    // The event over the closing of the last one, then the closing again.
    void append(const std::string& event)
    {
        if (std::fseek(file_.get(), end_, SEEK_SET) != 0) fail();
        write_at_end((events_++ > 0 ? ",\n" : "\n") + event, true);
    }

    void write_at_end(const std::string& text, bool closed_after)
    {
        static constexpr std::string_view closing = "\n]}\n";
        if (std::fwrite(text.data(), 1, text.size(), file_.get()) != text.size()) fail();
        end_ = std::ftell(file_.get());
        if (end_ < 0) fail();
        if (closed_after || events_ == 0)
            if (std::fwrite(closing.data(), 1, closing.size(), file_.get()) != closing.size()) fail();
        if (std::fflush(file_.get()) != 0) fail();
    }

    [[noreturn]] void fail() const { throw io_error(path_, "cannot write to the trace file"); }

    struct closer {
        void operator()(std::FILE* f) const { std::fclose(f); }
    };
    std::string path_;
    clock::time_point start_;
    std::unique_ptr<std::FILE, closer> file_;
    long end_ = 0;  // where the closing starts
    std::size_t events_ = 0;
    std::map<std::string, int> tracks_;
    std::map<std::thread::id, int> threads_;
    std::mutex mutex_;
};

// A slice that starts when it is made and ends when it goes (on the
// thread's track). Null writer: nothing (tracing off).
class trace_slice {
public:
    trace_slice(trace_writer* trace, std::string name, std::string category, trace_arguments arguments = {})
        : trace_(trace), name_(std::move(name)), category_(std::move(category)), arguments_(std::move(arguments)),
          start_(trace_ ? trace_->now_us() : 0)
    {
    }
    trace_slice(const trace_slice&) = delete;
    trace_slice& operator=(const trace_slice&) = delete;
    ~trace_slice()
    {
        if (!trace_) return;
        // (a slice ending in unwinding is recorded too; a write failure then is dropped, not thrown)
        try {
            trace_->complete(name_, category_, start_, trace_->now_us(), arguments_);
        } catch (const io_error&) {
        }
    }

private:
    trace_writer* trace_;
    std::string name_, category_;
    trace_arguments arguments_;
    std::uint64_t start_;
};

}  // namespace tenet::profile
