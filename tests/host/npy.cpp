// NumPy .npy files: the bytes numpy.save writes (headers copied from NumPy
// 2.4's output), round trips of every type save_npy takes, versions 2.0 and
// 3.0, conversions, every malformed kind and every truncation rejected with
// the destination unchanged.
#include "scratch_dir.hpp"

#include <doctest/doctest.h>
#include <tenet/io/npy.hpp>

#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using namespace std::string_literals;
using namespace tenet;
using bytes_t = std::vector<std::byte>;
using shape_t = std::vector<std::size_t>;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

using scratch_dir = testing::scratch_dir;

bytes_t bytes_of(const std::string& text)
{
    bytes_t out(text.size());
    std::memcpy(out.data(), text.data(), text.size());
    return out;
}

// "00 3c ff" -> {0x00, 0x3c, 0xff}
bytes_t hex(const std::string& text)
{
    bytes_t out;
    for (std::size_t i = 0; i + 1 < text.size(); i += 3)
        out.push_back(static_cast<std::byte>(std::stoul(text.substr(i, 2), nullptr, 16)));
    return out;
}

bytes_t operator+(bytes_t a, const bytes_t& b)
{
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

bytes_t read_bytes(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    const std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    bytes_t out(chars.size());
    if (!chars.empty()) std::memcpy(out.data(), chars.data(), chars.size());
    return out;
}

void write_bytes(const std::string& path, const bytes_t& bytes)
{
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// A file with format version major.minor around a header dict, padded with
// spaces and '\n' as NumPy pads (the reader does not depend on it).
bytes_t npy_file(int major, const std::string& dict, const bytes_t& data, int minor = 0)
{
    const std::size_t length_bytes = major == 1 ? 2 : 4;
    std::string header = dict;
    header.append(63 - (8 + length_bytes + header.size()) % 64, ' ');
    header += '\n';
    std::string prefix = "\x93NUMPY"s + static_cast<char>(major) + static_cast<char>(minor);
    for (std::size_t i = 0; i < length_bytes; ++i) prefix += static_cast<char>((header.size() >> (8 * i)) & 0xFF);
    return bytes_of(prefix + header) + data;
}

std::string f32_dict(const std::string& shape)
{
    return "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
}

template <class T>
bytes_t bytes_of_values(std::span<const T> values)
{
    bytes_t out(values.size_bytes());
    if (!values.empty()) std::memcpy(out.data(), values.data(), out.size());
    return out;
}

template <class T>
bytes_t bytes_of_values(const std::vector<T>& values)
{
    return bytes_of_values(std::span<const T>(values));
}

// Contiguous elements of any T, bool included (std::vector<bool> packs bits).
template <class T>
struct buffer {
    explicit buffer(std::size_t n) : size(n), items(std::make_unique<T[]>(n + 1)) {}  // + 1: data() is never null
    std::size_t size;
    std::unique_ptr<T[]> items;
    T* data() const { return items.get(); }
};

// Element by element, bit for bit (NaN payloads included).
template <class A, class B>
bool same_bits(const A& a, const B& b, std::size_t count)
{
    for (std::size_t i = 0; i < count; ++i) {
        const auto x = a[i], y = b[i];
        static_assert(sizeof x == sizeof y);
        if (std::memcmp(&x, &y, sizeof x) != 0) return false;
    }
    return true;
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b)
{
    return a.size() == b.size() && same_bits(a, b, a.size());
}

// Random bit patterns (NaNs and their payloads included), bools 0 or 1.
template <class T>
buffer<T> random_values(std::mt19937_64& rng, std::size_t count)
{
    buffer<T> out(count);
    for (std::size_t i = 0; i <= count; ++i) {  // the spare element too
        const std::uint64_t bits = rng();
        if constexpr (std::is_same_v<T, bool>) out.items[i] = (bits & 1) != 0;
        else std::memcpy(static_cast<void*>(&out.items[i]), &bits, sizeof(T));
    }
    return out;
}

// The format_error message of reading path; fails the test if there is none.
std::string read_error(const std::string& path)
{
    try {
        (void)io::read_npy(path);
    } catch (const format_error& e) {
        CHECK(e.path() == path);
        return e.what();
    }
    FAIL("no format_error");
    return {};
}

// The format_error message of load_npy<T> into a poisoned destination of
// expected's size, which must come back unchanged.
template <class T>
std::string typed_load_error(const std::string& path, const shape_t& expected)
{
    std::size_t count = 1;
    for (std::size_t extent : expected) count *= extent;
    std::mt19937_64 rng(count);
    const buffer<T> out = random_values<T>(rng, count);
    const buffer<T> poison(count);  // and its spare element: nothing is written past the end either
    std::copy(out.data(), out.data() + count + 1, poison.data());
    std::string what;
    try {
        io::load_npy(path, out.data(), expected);
    } catch (const format_error& e) {
        what = e.what();
    }
    CHECK(same_bits(out.items, poison.items, count + 1));
    if (what.empty()) FAIL("no format_error");
    return what;
}

}  // namespace

TEST_CASE("save_npy writes the bytes numpy.save writes")
{
    scratch_dir dir;
    const std::string path = dir.file("a.npy");
    write_bytes(path, hex("de ad be ef"));  // poison: replaced whole
    const std::string v1_118 = "\x93NUMPY\x01\x00\x76\x00"s;  // version 1.0, header 118 bytes: data at 128

    SUBCASE("f32 (2, 3)")
    {
        const std::vector<f32> values{1.5f, -2.0f, 0.1f, 3.0e38f, -0.0f, 1e-45f};
        io::save_npy(path, values.data(), shape_t{2, 3});
        const bytes_t expected = bytes_of(v1_118 + "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }" +
                                          std::string(58, ' ') + "\n") +
                                 hex("00 00 c0 3f 00 00 00 c0 cd cc cc 3d e6 b1 61 7f 00 00 00 80 01 00 00 00");
        CHECK(read_bytes(path) == expected);
    }
    SUBCASE("f64 scalar ()")
    {
        const f64 value = -3.25e-300;
        io::save_npy(path, &value, shape_t{});
        CHECK(read_bytes(path) == bytes_of(v1_118 + "{'descr': '<f8', 'fortran_order': False, 'shape': (), }" +
                                           std::string(62, ' ') + "\n") +
                                      hex("b8 45 6a ce 79 69 c1 81"));
    }
    SUBCASE("f16 (7,)")
    {
        const std::vector<std::uint16_t> bits{0x3c00, 0xc000, 0x3800, 0x7bff, 0x0001, 0x7c00, 0x8000};
        std::vector<f16> values(bits.size());
        std::memcpy(static_cast<void*>(values.data()), bits.data(), bits.size() * 2);  // 1, -2, 0.5, 65504, 2^-24, inf, -0
        io::save_npy(path, values.data(), shape_t{7});
        CHECK(read_bytes(path) == bytes_of(v1_118 + "{'descr': '<f2', 'fortran_order': False, 'shape': (7,), }" +
                                           std::string(60, ' ') + "\n") +
                                      hex("00 3c 00 c0 00 38 ff 7b 01 00 00 7c 00 80"));
    }
    SUBCASE("i8 (2, 2), i8 (0, 3), i32 (3,), bool (3,)")
    {
        const std::vector<i8> small{-128, 127, 5, -7};
        io::save_npy(path, small.data(), shape_t{2, 2});
        CHECK(read_bytes(path) == bytes_of(v1_118 + "{'descr': '|i1', 'fortran_order': False, 'shape': (2, 2), }" +
                                           std::string(58, ' ') + "\n") +
                                      hex("80 7f 05 f9"));
        io::save_npy<i8>(path, nullptr, shape_t{0, 3});
        CHECK(read_bytes(path) == bytes_of(v1_118 + "{'descr': '|i1', 'fortran_order': False, 'shape': (0, 3), }" +
                                           std::string(58, ' ') + "\n"));
        const std::vector<i32> ints{-2147483647 - 1, 2147483647, 123456789};
        io::save_npy(path, ints.data(), shape_t{3});
        CHECK(read_bytes(path) == bytes_of(v1_118 + "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }" +
                                           std::string(60, ' ') + "\n") +
                                      hex("00 00 00 80 ff ff ff 7f 15 cd 5b 07"));
        const bool flags[] = {true, false, true};
        io::save_npy(path, flags, shape_t{3});
        CHECK(read_bytes(path) == bytes_of(v1_118 + "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }" +
                                           std::string(60, ' ') + "\n") +
                                      hex("01 00 01"));
    }
    SUBCASE("a header that ends on a 64-byte boundary gets 64 more bytes, as NumPy pads")
    {
        io::save_npy<f32>(path, nullptr, shape_t{0, 2, 2, 2, 10, 10, 10, 10, 10, 10, 10, 10});
        CHECK(read_bytes(path) ==
              bytes_of("\x93NUMPY\x01\x00\xb6\x00"s +
                       "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 2, 2, 2, 10, 10, 10, 10, 10, 10, 10, 10), }" +
                       std::string(84, ' ') + "\n"));
    }
    SUBCASE("a header over 64 KiB is written as version 2.0, and read back")
    {
        const shape_t ones(22000, 1);
        const f32 value = -7.75f;
        io::save_npy(path, &value, ones);
        const bytes_t file = read_bytes(path);
        REQUIRE(file.size() > 12);
        CHECK(file[6] == std::byte{2});
        CHECK(file[7] == std::byte{0});
        std::uint64_t length = 0;
        for (int i = 0; i < 4; ++i) length |= std::to_integer<std::uint64_t>(file[8 + i]) << (8 * i);
        CHECK(length > 0xFFFF);
        CHECK((12 + length) % 64 == 0);
        CHECK(file.size() == 12 + length + 4);
        const io::npy_array back = io::read_npy(path);
        CHECK(back.shape == ones);
        CHECK(back.data == bytes_of_values(std::vector<f32>{value}));
    }
}

TEST_CASE_TEMPLATE("save_npy then load_npy: random values come back bit for bit", T, f16, f32, f64, i8, i32, bool)
{
    scratch_dir dir;
    const std::string path = dir.file("round.npy");
    std::mt19937_64 rng(20240917 + sizeof(T));
    for (const shape_t& shape : {shape_t{}, shape_t{7}, shape_t{3, 4, 5}, shape_t{4, 0, 3}}) {
        CAPTURE(io::detail::npy_shape_text(shape));
        std::size_t count = 1;
        for (std::size_t extent : shape) count *= extent;
        const buffer<T> values = random_values<T>(rng, count);
        write_bytes(path, bytes_of("not an npy file, about to be replaced"));
        io::save_npy(path, values.data(), shape);

        const io::npy_array raw = io::read_npy(path);
        CHECK(raw.dtype == io::detail::npy_descr<T>);
        CHECK(raw.shape == shape);
        CHECK(raw.data == bytes_of_values(std::span<const T>(values.data(), count)));

        const io::npy_data<T> loaded = io::load_npy<T>(path);
        CHECK(loaded.shape == shape);
        REQUIRE(loaded.values.size() == count);
        CHECK(same_bits(loaded.values, values.items, count));

        const buffer<T> out = random_values<T>(rng, count);
        const T spare = out.items[count];
        io::load_npy(path, out.data(), shape);
        CHECK(same_bits(out.items, values.items, count));
        CHECK(same_bits(&out.items[count], &spare, 1));
    }
    CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator{}) == 1);  // no temporaries left
}

TEST_CASE("read_npy reads versions 2.0 and 3.0, any key order and NumPy's spellings")
{
    scratch_dir dir;
    const std::string path = dir.file("v.npy");
    const bytes_t data = hex("00 00 80 3f 00 00 00 c0");  // 1, -2

    for (int major : {1, 2, 3}) {
        CAPTURE(major);
        write_bytes(path, npy_file(major, "{\"shape\":(2,),\n \"descr\" : \"<f4\",'fortran_order':False}", data));
        const io::npy_array a = io::read_npy(path);
        CHECK(a.dtype == "<f4");
        CHECK(a.shape == shape_t{2});
        CHECK(a.data == data);
        CHECK(io::load_npy<f32>(path).values == std::vector<f32>{1.0f, -2.0f});
    }
    // One-byte types with any byte order are NumPy's "|" spelling.
    for (const char* descr : {"<i1", ">i1", "|i1"}) {
        write_bytes(path, npy_file(1, "{'descr': '" + std::string(descr) + "', 'fortran_order': False, 'shape': (2, 1, ), }",
                                   hex("ff 7f")));
        const io::npy_array a = io::read_npy(path);
        CHECK(a.dtype == "|i1");
        CHECK(a.shape == shape_t{2, 1});
        CHECK(io::load_npy<i8>(path).values == std::vector<i8>{-1, 127});
    }
    // Python's whitespace before, inside and after the dict, and trailing
    // commas in the dict and the tuple, as literal_eval takes them.
    write_bytes(path, npy_file(1, " \t\n{ 'descr' :'<f4' ,\n'fortran_order':False,'shape':( 2 , ) , } \r\n", data));
    CHECK(io::read_npy(path).shape == shape_t{2});
    CHECK(io::load_npy<f32>(path).values == std::vector<f32>{1.0f, -2.0f});
    write_bytes(path, npy_file(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (00, 0,)}", {}));
    CHECK(io::read_npy(path).shape == shape_t{0, 0});
    // The padding is not required to reach 64 bytes.
    const std::string unpadded = "{'descr': '<u2', 'fortran_order': False, 'shape': (2,), }";
    write_bytes(path, bytes_of("\x93NUMPY\x01\x00"s + static_cast<char>(unpadded.size()) + '\0' + unpadded) +
                          hex("34 12 ff ff"));
    CHECK(io::load_npy<i32>(path).values == std::vector<i32>{0x1234, 0xffff});
}

TEST_CASE("load_npy converts: floats by convert, integers exactly or rounded once, and refuses what does not fit")
{
    scratch_dir dir;
    const std::string path = dir.file("c.npy");
    const auto file_of = [&](const std::string& descr, const shape_t& shape, const bytes_t& data) {
        write_bytes(path, npy_file(1, "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " +
                                          io::detail::npy_shape_text(shape) + ", }",
                                   data));
    };

    SUBCASE("f64 file into f32: rounded to nearest, ties to even")
    {
        const std::vector<f64> values{0.1, -1.0 / 3.0, 1.0 + 0x1p-24, 1.0 + 0x1.8p-23, 1e300, -1e-50, 6.5};
        file_of("<f8", {7}, bytes_of_values(values));
        const std::vector<f32> loaded = io::load_npy<f32>(path).values;
        REQUIRE(loaded.size() == values.size());
        for (std::size_t i = 0; i < values.size(); ++i) {
            const f32 expected = static_cast<f32>(values[i]);  // the hardware's rounding
            CHECK(same_bits(&loaded[i], &expected, 1));
        }
        CHECK(loaded[0] == 0.1f);
        CHECK(loaded[2] == 1.0f);                 // the tie goes to the even neighbour
        CHECK(loaded[3] == 1.0f + 0x1p-22f);      // this one too, upward
        CHECK(loaded[4] == INFINITY);
        CHECK(std::signbit(loaded[5]));
    }
    SUBCASE("f16 file into f32: exact")
    {
        file_of("<f2", {2, 3}, hex("00 3c ff 7b 01 00 00 80 00 fc ff 03"));
        const std::vector<f32> loaded = io::load_npy<f32>(path).values;
        const std::vector<f32> expected{1.0f, 65504.0f, 0x1p-24f, -0.0f, -INFINITY, 0x1.ff8p-15f};
        CHECK(same_bits(loaded, expected));
    }
    SUBCASE("i64 file into i32: exact in range, format_error out of range")
    {
        const std::vector<std::int64_t> in_range{-2147483648LL, 2147483647LL, 0, -5, 123456789};
        file_of("<i8", {5}, bytes_of_values(in_range));
        CHECK(io::load_npy<i32>(path).values == std::vector<i32>{-2147483647 - 1, 2147483647, 0, -5, 123456789});

        for (const std::int64_t outside :
             std::vector<std::int64_t>{2147483648LL, -2147483649LL, std::numeric_limits<std::int64_t>::min()}) {
            file_of("<i8", {3}, bytes_of_values(std::vector<std::int64_t>{7, outside, 1}));
            const std::string what = typed_load_error<i32>(path, {3});
            CHECK(contains(what, "element 1 is " + std::to_string(outside) + ", outside i32's range"));
            CHECK_THROWS_AS((void)io::load_npy<i32>(path), format_error);
        }
    }
    SUBCASE("unsigned and narrow integer files")
    {
        file_of("|u1", {3}, hex("00 7f c8"));
        CHECK(io::load_npy<i32>(path).values == std::vector<i32>{0, 127, 200});
        CHECK(contains(typed_load_error<i8>(path, {3}), "element 2 is 200, outside i8's range [-128, 127]"));
        file_of("<i2", {2}, hex("00 80 ff 7f"));
        CHECK(io::load_npy<i32>(path).values == std::vector<i32>{-32768, 32767});
        file_of("<u4", {2}, hex("ff ff ff 7f 00 00 00 80"));
        CHECK(contains(typed_load_error<i32>(path, {2}), "element 1 is 2147483648"));
        file_of("<u8", {1}, hex("ff ff ff ff ff ff ff ff"));
        CHECK(contains(typed_load_error<i32>(path, {1}), "element 0 is 18446744073709551615"));
        file_of("|i1", {2}, hex("01 00"));
        CHECK(io::load_npy<bool>(path).values == std::vector<bool>{true, false});
        file_of("|i1", {2}, hex("01 02"));
        CHECK(contains(typed_load_error<bool>(path, {2}), "element 1 is 2, outside bool's range [0, 1]"));
    }
    SUBCASE("integers into floating types: rounded once, to nearest, ties to even")
    {
        const std::int64_t big = std::int64_t{1} << 53;
        file_of("<i8", {8},
                bytes_of_values(std::vector<std::int64_t>{(1 << 24) + 1, (1 << 24) + 3, -((1 << 24) + 5), big + 1, big + 3,
                                                          std::numeric_limits<std::int64_t>::min(),
                                                          std::numeric_limits<std::int64_t>::max(), -7}));
        CHECK(io::load_npy<f32>(path).values ==
              std::vector<f32>{0x1p24f, 0x1p24f + 4, -(0x1p24f + 4), 0x1p53f, 0x1p53f, -0x1p63f, 0x1p63f, -7.0f});
        CHECK(io::load_npy<f64>(path).values == std::vector<f64>{0x1p24 + 1, 0x1p24 + 3, -(0x1p24 + 5), 0x1p53,
                                                                 0x1p53 + 4, -0x1p63, 0x1p63, -7.0});
        file_of("<u8", {4}, bytes_of_values(std::vector<std::uint64_t>{65519, 65520, 2049, ~std::uint64_t{0}}));
        const std::vector<f16> halves = io::load_npy<f16>(path).values;
        CHECK(convert<f32>(halves[0]) == 65504.0f);
        CHECK(convert<f32>(halves[1]) == INFINITY);  // halfway to 65536, past the largest f16: overflows
        CHECK(convert<f32>(halves[2]) == 2048.0f);
        CHECK(convert<f32>(halves[3]) == INFINITY);
        CHECK(io::load_npy<f32>(path).values.back() == 0x1p64f);
        CHECK(convert<f32>(io::load_npy<bf16>(path).values[2]) == 2048.0f);
    }
    SUBCASE("bool files: 0 and 1 into any type, other bytes refused by load_npy only")
    {
        file_of("|b1", {3}, hex("01 00 01"));
        CHECK(io::load_npy<f32>(path).values == std::vector<f32>{1.0f, 0.0f, 1.0f});
        CHECK(io::load_npy<i32>(path).values == std::vector<i32>{1, 0, 1});
        file_of("|b1", {3}, hex("01 00 02"));
        CHECK(io::read_npy(path).data == hex("01 00 02"));
        CHECK(contains(typed_load_error<bool>(path, {3}), "bool element 2 is 2, not 0 or 1"));
    }
    SUBCASE("a float file is not loaded as an integer or bool type")
    {
        file_of("<f4", {2}, hex("00 00 80 3f 00 00 00 40"));
        CHECK(contains(typed_load_error<i32>(path, {2}), "'<f4' data cannot be loaded as i32"));
        CHECK(contains(typed_load_error<bool>(path, {2}), "'<f4' data cannot be loaded as bool"));
        CHECK_THROWS_AS((void)io::load_npy<i8>(path), format_error);
    }
}

TEST_CASE("every malformed file is a format_error, and load_npy leaves its destination unchanged")
{
    scratch_dir dir;
    const std::string path = dir.file("bad.npy");
    const bytes_t six = bytes_of_values(std::vector<f32>{1, 2, 3, 4, 5, 6});
    const std::string v1 = "\x93NUMPY\x01\x00"s;
    struct bad_file {
        const char* kind;
        bytes_t bytes;
        const char* reason;
    };
    const std::vector<bad_file> cases{
        {"empty", {}, "npy header: offset 0: needs 6 bytes, 0 remain"},
        {"bad magic", bytes_of("\x93NUMPZ\x01\x00"s) + six, "not an npy file"},
        {"not numpy at all", bytes_of("PK\x03\x04 a zip file"), "not an npy file"},
        {"version 4.0", npy_file(4, f32_dict("(2, 3)"), six), "unsupported format version 4.0"},
        {"version 1.1", npy_file(1, f32_dict("(2, 3)"), six, 1), "unsupported format version 1.1"},
        {"version 0.0", npy_file(0, f32_dict("(2, 3)"), six), "unsupported format version 0.0"},
        {"header length past the end (1.0)", bytes_of(v1 + "\xff\xff{'descr'"), "needs 65535 bytes, 8 remain"},
        {"header length past the end (2.0)", bytes_of("\x93NUMPY\x02\x00\xff\xff\xff\xff{}"s),
         "needs 4294967295 bytes, 2 remain"},
        {"a header length cut short", bytes_of(v1 + "\x10"), "needs 2 bytes, 1 remain"},
        {"empty header", bytes_of(v1 + "\x00\x00"s) + six, "expected '{' at character 0"},
        {"a dict after text", npy_file(1, "x" + f32_dict("(2, 3)"), six), "expected '{' at character 0"},
        {"an extent with a leading zero", npy_file(1, f32_dict("(2, 03)"), six), "an extent with a leading zero"},
        {"an extent with a sign", npy_file(1, f32_dict("(2, +3)"), six), "expected an extent"},
        {"two trailing commas in the shape", npy_file(1, f32_dict("(2, 3,,)"), six), "expected an extent"},
        {"two trailing commas in the dict", npy_file(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3),, }", six),
         "expected a quoted string"},
        {"a lower-case false", npy_file(1, "{'descr': '<f4', 'fortran_order': false, 'shape': (2, 3), }", six),
         "expected True or False"},
        {"True glued to a name", npy_file(1, "{'descr': '<f4', 'fortran_order': Falsey, 'shape': (2, 3), }", six),
         "expected '}'"},
        {"a bytes literal", npy_file(1, "{'descr': b'<f4', 'fortran_order': False, 'shape': (2, 3), }", six),
         "expected a quoted string"},
        {"descr not a string", npy_file(1, "{'descr': 4, 'fortran_order': False, 'shape': (2, 3), }", six),
         "expected a quoted string"},
        {"a NUL in the padding", npy_file(1, f32_dict("(2, 3)") + std::string(1, '\0'), six), "unexpected text after the dict"},
        {"not a dict", npy_file(1, "[1, 2]", six), "expected '{'"},
        {"key not quoted", npy_file(1, "{descr: '<f4'}", six), "expected a quoted string at character 1"},
        {"unterminated string", npy_file(1, "{'descr: '<f4', }", six), "expected ':'"},
        {"unterminated last string", bytes_of(v1 + "\x07\x00{'descr"s), "unterminated string"},
        {"escape in a string", npy_file(1, "{'de\\scr': '<f4'}", six), "escapes in strings are not supported"},
        {"missing colon", npy_file(1, "{'descr' '<f4', 'fortran_order': False, 'shape': (2, 3), }", six),
         "expected ':' at character 9"},
        {"missing comma", npy_file(1, "{'descr': '<f4' 'fortran_order': False, 'shape': (2, 3), }", six),
         "expected '}' at character 16"},
        {"unclosed dict", npy_file(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), ", six),
         "expected a quoted string"},
        {"text after the dict", npy_file(1, f32_dict("(2, 3)") + " x", six), "unexpected text after the dict"},
        {"unknown key", npy_file(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1, }", six),
         "unexpected key 'x'"},
        {"duplicate key", npy_file(1, "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", six),
         "key 'descr' appears twice"},
        {"missing descr", npy_file(1, "{'fortran_order': False, 'shape': (2, 3), }", six), "missing key 'descr'"},
        {"missing shape", npy_file(1, "{'descr': '<f4', 'fortran_order': False}", six), "missing key 'shape'"},
        {"missing fortran_order", npy_file(1, "{'descr': '<f4', 'shape': (2, 3), }", six),
         "missing key 'fortran_order'"},
        {"fortran_order not a bool", npy_file(1, "{'descr': '<f4', 'fortran_order': 0, 'shape': (2, 3), }", six),
         "expected True or False"},
        {"shape not a tuple", npy_file(1, f32_dict("[2, 3]"), six), "expected '('"},
        {"shape (n) without its comma", npy_file(1, f32_dict("(6)"), six), "the shape (n) is not a tuple"},
        {"negative extent", npy_file(1, f32_dict("(2, -3)"), six), "expected an extent"},
        {"extent not an integer", npy_file(1, f32_dict("(2, 3.0)"), six), "expected ')'"},
        {"extents without a comma", npy_file(1, f32_dict("(2 3)"), six), "expected ')'"},
        {"an empty extent", npy_file(1, f32_dict("(2, , 3)"), six), "expected an extent"},
        {"extent beyond 2^64", npy_file(1, f32_dict("(18446744073709551616,)"), six), "an extent too large"},
        {"Fortran order", npy_file(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", six),
         "Fortran order is not supported: save C-ordered arrays (np.ascontiguousarray)"},
        {"object dtype", npy_file(1, "{'descr': '|O', 'fortran_order': False, 'shape': (2, 3), }", six),
         "dtype '|O' is not supported (tenet reads <f2, <f4, <f8, |i1, <i2, <i4, <i8, |u1, <u2, <u4, <u8, |b1)"},
        {"structured dtype",
         npy_file(1, "{'descr': [('a', '<f4'), ('b', '<i4')], 'fortran_order': False, 'shape': (3,), }", six),
         "structured dtypes (a list of fields) are not supported"},
        {"big-endian f4", npy_file(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }", six),
         "big-endian data ('>f4') is not supported: save little-endian arrays (a.astype('<f4'))"},
        {"big-endian i8", npy_file(1, "{'descr': '>i8', 'fortran_order': False, 'shape': (3,), }", six),
         "big-endian data ('>i8')"},
        {"complex", npy_file(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }", six), "dtype '<c8'"},
        {"unicode", npy_file(1, "{'descr': '<U2', 'fortran_order': False, 'shape': (3,), }", six), "dtype '<U2'"},
        {"void", npy_file(1, "{'descr': '|V4', 'fortran_order': False, 'shape': (6,), }", six), "dtype '|V4'"},
        {"float128", npy_file(1, "{'descr': '<f16', 'fortran_order': False, 'shape': (1,), }", six), "dtype '<f16'"},
        {"'|' on a multi-byte type", npy_file(1, "{'descr': '|f4', 'fortran_order': False, 'shape': (2, 3), }", six),
         "dtype '|f4'"},
        {"no byte order", npy_file(1, "{'descr': 'f4', 'fortran_order': False, 'shape': (2, 3), }", six), "dtype 'f4'"},
        {"element count overflows", npy_file(1, f32_dict("(4294967296, 4294967296)"), six),
         "shape (4294967296, 4294967296) of '<f4' holds more than 2^64 bytes"},
        {"overflow beside a zero extent", npy_file(1, f32_dict("(4294967296, 0, 4294967296)"), {}),
         "holds more than 2^64 bytes"},
        {"byte count overflows", npy_file(1, f32_dict("(4611686018427387904,)"), six), "holds more than 2^64 bytes"},
        {"data too short", npy_file(1, f32_dict("(2, 3)"), bytes_t(six.begin(), six.end() - 1)),
         "npy data: truncated: shape (2, 3) of '<f4' needs 24 bytes, the file has 23 after the header"},
        {"data for another shape", npy_file(1, f32_dict("(2, 4)"), six), "needs 32 bytes, the file has 24"},
        {"trailing bytes", npy_file(1, f32_dict("(2, 3)"), six + hex("00")),
         "npy data: 1 trailing bytes after the 24 that shape (2, 3) of '<f4' needs"},
        {"data for a 0-size shape", npy_file(1, f32_dict("(0, 3)"), six), "24 trailing bytes"},
    };
    for (const bad_file& c : cases) {
        CAPTURE(c.kind);
        write_bytes(path, c.bytes);
        const std::string what = read_error(path);
        CAPTURE(what);
        CHECK(what.starts_with("tenet: " + path + ": "));
        CHECK(contains(what, c.reason));
        CHECK(contains(typed_load_error<f32>(path, {2, 3}), c.reason));
        CHECK(contains(typed_load_error<i32>(path, {2, 3}), c.reason));
    }
}

TEST_CASE("a valid file cut at every length, or with any byte changed, never crashes")
{
    scratch_dir dir;
    const std::string good = dir.file("good.npy"), bad = dir.file("bad.npy");
    const std::vector<f32> values{0.5f, -1.25f, 3.0f, 1e-3f, -7.0f, 42.0f};
    io::save_npy(good, values.data(), shape_t{2, 3});
    const bytes_t file = read_bytes(good);
    REQUIRE(file.size() == 128 + 24);

    SUBCASE("truncated at every length, 0 included")
    {
        for (std::size_t size = 0; size < file.size(); ++size) {
            CAPTURE(size);
            write_bytes(bad, bytes_t(file.begin(), file.begin() + static_cast<std::ptrdiff_t>(size)));
            const std::string what = read_error(bad);
            CAPTURE(what);
            const char* reason = size < 6 ? "needs 6 bytes" : size < 10 ? "needs" : size < 128 ? "npy header: " : "truncated";
            CHECK(contains(what, reason));
            (void)typed_load_error<f32>(bad, {2, 3});
        }
    }
    SUBCASE("every byte of the header changed: a format_error or a valid array, nothing else")
    {
        std::mt19937_64 rng(5);
        for (std::size_t at = 0; at < 128; ++at) {
            for (int trial = 0; trial < 4; ++trial) {
                bytes_t changed = file;
                changed[at] ^= static_cast<std::byte>(1 + rng() % 255);
                write_bytes(bad, changed);
                try {
                    const io::npy_array a = io::read_npy(bad);
                    CHECK(a.data.size() == 24);  // e.g. a padding space turned into a tab
                } catch (const format_error&) {
                }
            }
        }
    }
}

TEST_CASE("load_npy with an expected shape refuses another, naming both")
{
    scratch_dir dir;
    const std::string path = dir.file("s.npy");
    std::mt19937_64 rng(9);
    const buffer<f32> values = random_values<f32>(rng, 6);
    io::save_npy(path, values.data(), shape_t{2, 3});
    CHECK(contains(typed_load_error<f32>(path, {3, 2}), "npy: the file holds shape (2, 3), expected (3, 2)"));
    CHECK(contains(typed_load_error<f32>(path, {6}), "expected (6,)"));
    CHECK(contains(typed_load_error<f32>(path, {2, 3, 1}), "expected (2, 3, 1)"));
    CHECK(contains(typed_load_error<f64>(path, {}), "expected ()"));
    std::vector<f32> out(6);
    io::load_npy(path, out.data(), std::array<std::size_t, 2>{2, 3});
    CHECK(same_bits(out, values.items, 6));
}

TEST_CASE("npy files that cannot be read or written are io_errors; a failed save changes nothing")
{
    scratch_dir dir;
    const auto is_plain_io_error = [](const std::string& path) {
        try {
            (void)io::read_npy(path);
        } catch (const format_error&) {
            return false;
        } catch (const io_error& e) {
            return e.path() == path && contains(e.what(), "cannot");
        }
        return false;
    };
    CHECK(is_plain_io_error(dir.file("missing.npy")));
    CHECK(is_plain_io_error(dir.path.string()));

    const f32 value = 1.0f;
    CHECK_THROWS_AS(io::save_npy(dir.file("no/such/dir/x.npy"), &value, shape_t{1}), io_error);
    const std::string path = dir.file("kept.npy");
    io::save_npy(path, &value, shape_t{1});
    const bytes_t before = read_bytes(path);
    const std::string too_large = "tenet: " + path + ": save_npy: shape (4611686018427387904, 8) holds more than 2^64 bytes";
    CHECK_THROWS_WITH_AS(io::save_npy<f32>(path, nullptr, shape_t{std::size_t{1} << 62, 8}), too_large.c_str(), tenet::error);
    CHECK(read_bytes(path) == before);
    CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator{}) == 1);
}
