// profile::trace_writer: the file is a Chrome trace-event document, valid
// JSON after every event (read back with tenet's strict JSON reader while
// the writer is still open, and after a scope left by an exception); slices
// land on their thread's track or a named one, nest in time as they ran,
// and carry their arguments with JSON escapes.
#include "scratch_dir.hpp"
#include "trace_reader.hpp"

#include <doctest/doctest.h>
#include <tenet/profile/trace.hpp>

#include <fstream>
#include <iterator>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace tenet;


TEST_CASE("trace: slices on thread and named tracks, nested in time, valid JSON after every event")
{
    testing::scratch_dir dir("trace");
    const std::string path = dir.file("step.trace.json");
    profile::trace_writer trace(path);
    CHECK(testing::read_trace(path).size() == 1);  // the process name alone: already a closed document
    {
        profile::trace_slice step(&trace, "step", "train");
        {
            profile::trace_slice forward(&trace, "forward 0.Linear", "layer", {{"shape", "[256, 784]"}});
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
        const auto mid = testing::read_trace(path);  // the writer is open: still valid
        CHECK(testing::named(mid, "forward 0.Linear").args.at("shape") == "[256, 784]");
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::thread loader([&] { profile::trace_slice load(&trace, "load batch", "data"); });
    loader.join();
    const int stream = trace.track("device stream");
    CHECK(trace.track("device stream") == stream);
    trace.complete("all-reduce", "collective", 10, 25, {{"bytes", "4096"}}, stream);
    trace.complete("quote \" backslash \\ newline \n tab \t", "odd", 5, 5, {{"key \"k\"", "caf\xc3\xa9"}});
    try {
        profile::trace_slice failing(&trace, "throws", "train");
        throw std::runtime_error("early end");
    } catch (const std::runtime_error&) {
    }

    const auto events = testing::read_trace(path);
    const testing::event& step = testing::named(events, "step");
    const testing::event& forward = testing::named(events, "forward 0.Linear");
    CHECK(forward.cat == "layer");
    CHECK(forward.tid == step.tid);
    CHECK(forward.ts >= step.ts);
    CHECK(forward.ts + forward.dur <= step.ts + step.dur);
    CHECK(forward.dur >= 2000);
    CHECK(testing::named(events, "load batch").tid != step.tid);  // another thread, another track
    const testing::event& reduce = testing::named(events, "all-reduce");
    CHECK(reduce.tid == static_cast<std::uint64_t>(stream));
    CHECK(reduce.ts == 10);
    CHECK(reduce.dur == 15);
    CHECK(reduce.args.at("bytes") == "4096");
    const testing::event& odd = testing::named(events, "quote \" backslash \\ newline \n tab \t");
    CHECK(odd.args.at("key \"k\"") == "caf\xc3\xa9");
    CHECK(testing::named(events, "throws").cat == "train");  // recorded while unwinding
    std::map<std::uint64_t, std::string> track_names;
    for (const testing::event& e : events)
        if (e.ph == "M" && e.name == "thread_name") track_names[e.tid] = e.args.at("name");
    CHECK(track_names.at(step.tid) == "thread 1");
    CHECK(track_names.at(testing::named(events, "load batch").tid) == "thread 2");
    CHECK(track_names.at(reduce.tid) == "device stream");

    // Tracing off: a slice with no writer does nothing.
    { profile::trace_slice off(nullptr, "nothing", "none"); }
    CHECK(testing::read_trace(path).size() == events.size());

    CHECK_THROWS_AS(profile::trace_writer(dir.file("missing/dir/trace.json")), io_error);
}
