// A strict reader for the small JSON documents file headers hold
// (safetensors, profiles, traces): objects, arrays, strings, non-negative
// integers exactly and any number as a double, as RFC 8259
// spells them -- no trailing commas, single quotes, leading zeros, raw
// control characters, invalid UTF-8 (overlong forms, encoded surrogates,
// beyond U+10FFFF) or lone surrogate escapes. Every malformed byte is a
// format_error naming its offset; nothing reads past the text, and nesting
// is bounded so a hostile header cannot exhaust the stack.
#pragma once

#include "../memory/error.hpp"

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

namespace tenet::io::detail {

class json_reader {
public:
    json_reader(std::string path, std::string_view text, std::string context)
        : path_(std::move(path)), context_(std::move(context)), text_(text)
    {
    }

    // The members of an object: member(key) is called with the reader at
    // each value, which it must consume.
    template <class Member>
    void object(Member&& member)
    {
        nested([&] {
            expect('{');
            if (peek() == '}') return void(++at_);
            for (;;) {
                std::string key = string();
                expect(':');
                member(key);
                if (peek() == '}') return void(++at_);
                expect(',');
            }
        });
    }

    // The elements of an array: element() consumes each one.
    template <class Element>
    void array(Element&& element)
    {
        nested([&] {
            expect('[');
            if (peek() == ']') return void(++at_);
            for (;;) {
                element();
                if (peek() == ']') return void(++at_);
                expect(',');
            }
        });
    }

    std::string string()
    {
        expect('"');
        std::string out;
        for (;;) {
            const char c = next("an unterminated string");
            if (c == '"') return out;
            if (static_cast<unsigned char>(c) < 0x20) fail("a control character in a string");
            if (static_cast<unsigned char>(c) >= 0x80) {
                utf8_sequence(out, static_cast<unsigned char>(c));
                continue;
            }
            if (c != '\\') {
                out += c;
                continue;
            }
            const char e = next("an unterminated escape");
            switch (e) {
            case '"': case '\\': case '/': out += e; break;
            case 'b': out += '\b'; break;
            case 'f': out += '\f'; break;
            case 'n': out += '\n'; break;
            case 'r': out += '\r'; break;
            case 't': out += '\t'; break;
            case 'u': append_utf8(out, code_point()); break;
            default: fail(std::string("an unknown escape \\") + e);
            }
        }
    }

    // A non-negative integer that fits 64 bits.
    std::uint64_t unsigned_integer()
    {
        skip_space();
        if (at_ >= text_.size() || text_[at_] < '0' || text_[at_] > '9') fail("expected a non-negative integer");
        if (text_[at_] == '0' && at_ + 1 < text_.size() && text_[at_ + 1] >= '0' && text_[at_ + 1] <= '9')
            fail("a number with a leading zero");
        std::uint64_t value = 0;
        while (at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9') {
            const auto digit = static_cast<std::uint64_t>(text_[at_++] - '0');
            if (value > (UINT64_MAX - digit) / 10) fail("an integer beyond 64 bits");
            value = value * 10 + digit;
        }
        if (at_ < text_.size() && (text_[at_] == '.' || text_[at_] == 'e' || text_[at_] == 'E'))
            fail("expected an integer, found a fraction or exponent");
        return value;
    }

    // A number in RFC 8259's grammar: -? int frac? exp?, read as a double.
    double number()
    {
        skip_space();
        const std::size_t first = at_;
        const auto digits = [&] {
            const std::size_t from = at_;
            while (at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9') ++at_;
            if (at_ == from) fail("expected a digit in a number");
        };
        if (at_ < text_.size() && text_[at_] == '-') ++at_;
        if (at_ < text_.size() && text_[at_] == '0') {
            ++at_;
        } else {
            digits();
        }
        if (at_ < text_.size() && text_[at_] == '.') ++at_, digits();
        if (at_ < text_.size() && (text_[at_] == 'e' || text_[at_] == 'E')) {
            ++at_;
            if (at_ < text_.size() && (text_[at_] == '+' || text_[at_] == '-')) ++at_;
            digits();
        }
        double value = 0;
        const auto [end, ec] = std::from_chars(text_.data() + first, text_.data() + at_, value);
        if (ec != std::errc{} || end != text_.data() + at_) fail("a number out of range");
        return value;
    }

    // Any value, read and dropped (its strings and nesting checked as ever).
    void skip_value()
    {
        switch (peek()) {
        case '{': return object([&](const std::string&) { skip_value(); });
        case '[': return array([&] { skip_value(); });
        case '"': return void(string());
        case 't': return literal("true");
        case 'f': return literal("false");
        case 'n': return literal("null");
        default: return void(number());
        }
    }

    // The document must start at the first byte; only `padding` may follow it.
    void start()
    {
        if (text_.empty() || text_[0] != '{') fail("the header must start with '{'");
    }
    void end(char padding)
    {
        while (at_ < text_.size() && text_[at_] == padding) ++at_;
        if (at_ != text_.size()) fail("text after the end of the header");
    }

    [[noreturn]] void fail(const std::string& what) const
    {
        throw format_error(path_, context_ + "offset " + std::to_string(at_) + ": " + what);
    }

private:
    static constexpr int max_depth = 8;

    template <class F>
    void nested(F&& f)
    {
        if (++depth_ > max_depth) fail("nesting deeper than " + std::to_string(max_depth));
        f();
        --depth_;
    }

    void literal(std::string_view word)
    {
        if (text_.substr(at_, word.size()) != word) fail("expected " + std::string(word));
        at_ += word.size();
    }

    void skip_space()
    {
        while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\t' || text_[at_] == '\n' || text_[at_] == '\r'))
            ++at_;
    }

    char peek()
    {
        skip_space();
        if (at_ >= text_.size()) fail("the header ends too soon");
        return text_[at_];
    }

    char next(const char* what)
    {
        if (at_ >= text_.size()) fail(what);
        return text_[at_++];
    }

    void expect(char c)
    {
        if (peek() != c) fail(std::string("expected '") + c + "', found '" + text_[at_] + "'");
        ++at_;
    }

    unsigned hex4()
    {
        unsigned value = 0;
        for (int i = 0; i < 4; ++i) {
            const char c = next("an unterminated \\u escape");
            const int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
            if (digit < 0) fail("a bad hex digit in a \\u escape");
            value = value * 16 + static_cast<unsigned>(digit);
        }
        return value;
    }

    // The rest of a UTF-8 sequence led by `lead` (>= 0x80), checked as RFC
    // 3629 does: the shortest form, no surrogates, at most U+10FFFF.
    void utf8_sequence(std::string& out, unsigned char lead)
    {
        int more;
        unsigned char low = 0x80, high = 0xBF;  // the second byte's range
        if (lead >= 0xC2 && lead <= 0xDF) more = 1;
        else if (lead >= 0xE0 && lead <= 0xEF) more = 2, low = lead == 0xE0 ? 0xA0 : 0x80, high = lead == 0xED ? 0x9F : 0xBF;
        else if (lead >= 0xF0 && lead <= 0xF4) more = 3, low = lead == 0xF0 ? 0x90 : 0x80, high = lead == 0xF4 ? 0x8F : 0xBF;
        else fail("invalid UTF-8 in a string");
        out += static_cast<char>(lead);
        for (int i = 0; i < more; ++i) {
            const auto b = static_cast<unsigned char>(next("invalid UTF-8 in a string"));
            if (b < (i == 0 ? low : 0x80) || b > (i == 0 ? high : 0xBF)) {
                --at_;
                fail("invalid UTF-8 in a string");
            }
            out += static_cast<char>(b);
        }
    }

    // A \u escape's code point (a surrogate pair read whole).
    unsigned code_point()
    {
        const unsigned high = hex4();
        if (high >= 0xDC00 && high <= 0xDFFF) fail("a lone low surrogate");
        if (high < 0xD800 || high > 0xDBFF) return high;
        if (next("a lone high surrogate") != '\\' || next("a lone high surrogate") != 'u') fail("a lone high surrogate");
        const unsigned low = hex4();
        if (low < 0xDC00 || low > 0xDFFF) fail("a high surrogate without its low half");
        return 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
    }

    static void append_utf8(std::string& out, unsigned cp)
    {
        const auto byte = [&](unsigned b) { out += static_cast<char>(b); };
        if (cp < 0x80) {
            byte(cp);
        } else if (cp < 0x800) {
            byte(0xC0 | cp >> 6), byte(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            byte(0xE0 | cp >> 12), byte(0x80 | (cp >> 6 & 0x3F)), byte(0x80 | (cp & 0x3F));
        } else {
            byte(0xF0 | cp >> 18), byte(0x80 | (cp >> 12 & 0x3F)), byte(0x80 | (cp >> 6 & 0x3F)), byte(0x80 | (cp & 0x3F));
        }
    }

    std::string path_;
    std::string context_;
    std::string_view text_;
    std::size_t at_ = 0;
    int depth_ = 0;
};

}  // namespace tenet::io::detail
