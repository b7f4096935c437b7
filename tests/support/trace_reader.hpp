// A Chrome trace-event file read back with tenet's strict JSON reader (a
// malformed document throws format_error): its events, and its slices by name.
#pragma once

#include <doctest/doctest.h>
#include <tenet/io/json_reader.hpp>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace testing {


struct event {
    std::string ph, name, cat;
    std::uint64_t tid = 0, ts = 0, dur = 0;
    std::map<std::string, std::string> args;
};

// Every event of a trace file, read with the strict reader (a malformed
// document throws format_error).
inline std::vector<event> read_trace(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    tenet::io::detail::json_reader r(path, text, "trace: ");
    r.start();
    std::vector<event> out;
    r.object([&](const std::string& key) {
        if (key == "displayTimeUnit") {
            CHECK(r.string() == "ms");
            return;
        }
        REQUIRE(key == "traceEvents");
        r.array([&] {
            event e;
            r.object([&](const std::string& field) {
                if (field == "ph") e.ph = r.string();
                else if (field == "name") e.name = r.string();
                else if (field == "cat") e.cat = r.string();
                else if (field == "pid") CHECK(r.unsigned_integer() == 0);
                else if (field == "tid") e.tid = r.unsigned_integer();
                else if (field == "ts") e.ts = r.unsigned_integer();
                else if (field == "dur") e.dur = r.unsigned_integer();
                else if (field == "args") r.object([&](const std::string& k) { e.args[k] = r.string(); });
                else FAIL("unexpected field " << field);
            });
            out.push_back(e);
        });
    });
    r.end('\n');
    return out;
}

inline const event& named(const std::vector<event>& events, const std::string& name)
{
    for (const event& e : events)
        if (e.name == name && e.ph == "X") return e;
    throw std::runtime_error("no slice " + name);
}


}  // namespace testing
