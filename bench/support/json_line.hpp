// One benchmark row as a JSON object alone on its line, for scripts (the
// device bundle collects every line that starts with "{"):
//   bench::json_line("device_matmul").field("act", "relu").field("M", 256).print();
// prints {"bench": "device_matmul", "act": "relu", "M": 256}.
#pragma once

#include <cmath>
#include <cstdio>
#include <string>

namespace bench {

class json_line {
public:
    explicit json_line(const char* bench) { field("bench", bench); }

    json_line& field(const char* key, const char* value)
    {
        std::string quoted = "\"";
        for (const char* c = value; *c; ++c) {
            if (*c == '"' || *c == '\\') quoted += '\\';
            quoted += *c;
        }
        return raw(key, quoted + "\"");
    }
    json_line& field(const char* key, const std::string& value) { return field(key, value.c_str()); }
    // Numbers; NaN and infinities are not JSON numbers and become null.
    json_line& field(const char* key, double value)
    {
        if (!std::isfinite(value)) return raw(key, "null");
        char text[32];
        std::snprintf(text, sizeof text, "%.6g", value);
        return raw(key, text);
    }
    json_line& field(const char* key, std::size_t value) { return raw(key, std::to_string(value)); }
    json_line& field(const char* key, int value) { return raw(key, std::to_string(value)); }

    std::string text() const { return "{" + text_ + "}"; }

    void print() const
    {
        std::printf("%s\n", text().c_str());
        std::fflush(stdout);
    }

private:
    json_line& raw(const char* key, const std::string& value)
    {
        if (!text_.empty()) text_ += ", ";
        text_ += std::string("\"") + key + "\": " + value;
        return *this;
    }

    std::string text_;
};

}  // namespace bench
