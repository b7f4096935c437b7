// Counts failures of a bulk comparison and keeps the first few, so a test
// over millions of values reports one readable line instead of a flood.
#pragma once

#include <cstdio>
#include <string>

struct mismatch_log {
    std::size_t count = 0;
    std::string first;

    template <class... Args>
    void add(const char* format, Args... args)
    {
        if (count++ < 8) {
            char line[256];
            std::snprintf(line, sizeof line, format, args...);
            first += line;
            first += '\n';
        }
    }

    std::string report() const { return std::to_string(count) + " mismatches; first:\n" + first; }
};

#define CHECK_NO_MISMATCH(log) CHECK_MESSAGE((log).count == 0, (log).report())
