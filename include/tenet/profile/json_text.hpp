// json_string: text as a JSON string literal, quotes included (RFC 8259's
// escapes: quote, backslash, control characters as \u00XX); json_object: an
// object built member by member, the commas between them included.
// profile/ writes JSON (traces, the per-layer profile) and io/ writes it too
// (safetensors headers); profile/ sits below io/, so they live here.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace tenet::profile {

inline std::string json_string(std::string_view s)
{
    constexpr char hex[] = "0123456789abcdef";
    std::string out = "\"";
    for (const char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (u < 0x20) {
            out += "\\u00";
            out += hex[u >> 4];
            out += hex[u & 0xF];
        } else {
            out += c;
        }
    }
    return out + "\"";
}

// Appends only (no string + string chains: GCC 12's -Wrestrict misfires on
// those in users' builds at -O3).
class json_object {
public:
    // value: JSON text as it is (a number, a nested object or array).
    json_object& raw(std::string_view key, std::string_view value)
    {
        out_ += out_.size() > 1 ? "," : "";
        out_ += json_string(key);
        out_ += ':';
        out_ += value;
        return *this;
    }
    json_object& text(std::string_view key, std::string_view value) { return raw(key, json_string(value)); }
    json_object& integer(std::string_view key, std::uint64_t value) { return raw(key, std::to_string(value)); }
    json_object& integer(std::string_view key, std::int64_t value) { return raw(key, std::to_string(value)); }
    // Nine significant digits (every f32 exactly; doubles to 1e-9).
    json_object& number(std::string_view key, double value)
    {
        char text[32];
        std::snprintf(text, sizeof text, "%.9g", value);
        return raw(key, text);
    }

    std::string str() const { return out_ + "}"; }

private:
    std::string out_ = "{";
};

}  // namespace tenet::profile
