// safetensors files: round trips of every element type, a file spelled out
// byte by byte as the reference implementation writes it, conversions, and
// every kind of malformed file (plus every truncation and random byte
// corruptions) rejected as format_error with the destination untouched.
// Models: PyTorch's names and layouts (convolution weights transposed
// against a file built element by element here), dtype conversion on
// loading, strict and non-strict loads, and a conv net saved by PyTorch
// itself (tests/fixtures/pytorch) reproducing PyTorch's logits.
#include <doctest/doctest.h>
#include <tenet/io/model_safetensors.hpp>
#include <tenet/io/npy.hpp>
#include <tenet/io/safetensors.hpp>
#include <tenet/nn/nn.hpp>

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <algorithm>
#include <iterator>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

using namespace tenet;
namespace io = tenet::io;

namespace {

std::string temp_file(const std::string& name)
{
    return (std::filesystem::temp_directory_path() / ("tenet_safetensors_" + std::to_string(::getpid()) + "_" + name)).string();
}

void write_bytes(const std::string& path, const std::string& bytes)
{
    std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string read_bytes(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A file: the 8-byte length of `header`, the header, then `data`.
std::string file_of(const std::string& header, const std::string& data)
{
    std::string out(8, '\0');
    for (std::size_t i = 0; i < 8; ++i) out[i] = static_cast<char>(std::uint64_t{header.size()} >> (8 * i));
    return out + header + data;
}

// n elements (a plain array: std::vector<bool> has no data()).
template <class T>
struct array {
    std::unique_ptr<T[]> items;
    std::size_t size;
    explicit array(std::size_t n) : items(std::make_unique<T[]>(n)), size(n) {}
    T* data() const { return items.get(); }
    bool same_bits(const array& other) const
    {
        return size == other.size && std::memcmp(data(), other.data(), size * sizeof(T)) == 0;
    }
};

template <class T>
array<T> random_values(std::size_t n, std::uint64_t seed)
{
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> normal(0.0, 3.0);
    array<T> out(n);
    for (std::size_t i = 0; i < n; ++i) {
        if constexpr (std::is_same_v<T, bool>) out.data()[i] = rng() % 2;
        else if constexpr (is_integer_v<T>) out.data()[i] = static_cast<T>(static_cast<std::int64_t>(rng() % 200) - 100);
        else out.data()[i] = convert<T>(normal(rng));
    }
    return out;
}

template <class T>
void round_trip(std::uint64_t seed)
{
    CAPTURE(element_name<T>);
    const std::string path = temp_file(std::string(element_name<T>) + ".safetensors");
    const auto a = random_values<T>(3 * 5, seed), b = random_values<T>(7, seed + 1);
    io::save_tensors(path, {io::tensor_of("layer.weight", a.data(), {3, 5}), io::tensor_of("layer.bias", b.data(), {7})},
                     {{"format", "pt"}});
    const io::safetensors_file f(path);
    CHECK(f.tensors().size() == 2);
    CHECK(f.metadata().at("format") == "pt");
    CHECK(f.at("layer.weight").dtype == io::detail::dtype_of<T>());
    array<T> got(15);
    std::memset(static_cast<void*>(got.data()), 0x5A, got.size * sizeof(T));  // poisoned
    f.read("layer.weight", got.data(), {3, 5});
    CHECK(got.same_bits(a));
    array<T> bias(7);
    io::load_tensor(path, "layer.bias", bias.data(), std::vector<std::size_t>{7});
    CHECK(bias.same_bits(b));
    std::filesystem::remove(path);
}

// The error a malformed file gives (empty: none).
std::string rejection(const std::string& bytes)
{
    const std::string path = temp_file("malformed.safetensors");
    write_bytes(path, bytes);
    try {
        io::safetensors_file f(path);
        std::filesystem::remove(path);
        return "";
    } catch (const format_error& e) {
        std::filesystem::remove(path);
        return e.what();
    }
}

}  // namespace

TEST_CASE("safetensors: every element type round trips bit for bit, with metadata")
{
    round_trip<f64>(1);
    round_trip<f32>(2);
    round_trip<f16>(3);
    round_trip<bf16>(4);
    round_trip<f8e4m3>(5);
    round_trip<f8e5m2>(6);
    round_trip<i8>(7);
    round_trip<i32>(8);
    round_trip<bool>(9);
}

TEST_CASE("safetensors: the bytes the reference implementation writes, both ways")
{
    // safetensors.torch.save_file({"b": torch.tensor([1., 2.]), "a": torch.tensor([3], dtype=torch.int8),
    //                               "c": torch.tensor([[1.5]], dtype=torch.float16)}, metadata={"k": "v"}):
    // metadata first, data ordered by item size then name, header padded with spaces to 8 bytes.
    const std::string header =
        R"({"__metadata__":{"k":"v"},"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
        R"("c":{"dtype":"F16","shape":[1,1],"data_offsets":[8,10]},"a":{"dtype":"I8","shape":[1],"data_offsets":[10,11]}})";
    const std::string padded = header + std::string((8 - header.size() % 8) % 8, ' ');
    const float b[2] = {1.0f, 2.0f};
    const f16 c = convert<f16>(1.5f);
    const i8 a = 3;
    std::string data(11, '\0');
    std::memcpy(data.data(), b, 8);
    std::memcpy(data.data() + 8, &c, 2);
    std::memcpy(data.data() + 10, &a, 1);
    const std::string expected = file_of(padded, data);

    const std::string path = temp_file("reference.safetensors");
    io::save_tensors(path, {io::tensor_of("b", b, {2}), io::tensor_of("a", &a, {1}), io::tensor_of("c", &c, {1, 1})},
                     {{"k", "v"}});
    CHECK(read_bytes(path) == expected);

    write_bytes(path, expected);
    const io::safetensors_file f(path);
    float got_b[2] = {-1, -1};
    f.read("b", got_b, {2});
    CHECK(got_b[0] == 1.0f);
    CHECK(got_b[1] == 2.0f);
    float got_c = 0;
    f.read("c", &got_c, {1, 1});  // F16 into f32: exact
    CHECK(got_c == 1.5f);
    i32 got_a = 0;
    f.read("a", &got_a, {1});
    CHECK(got_a == 3);
    std::filesystem::remove(path);
}

TEST_CASE("safetensors: loading converts exactly, and refuses what cannot convert")
{
    const std::string path = temp_file("convert.safetensors");
    const auto wide_values = random_values<f64>(64, 11);
    const std::vector<f64> wide(wide_values.data(), wide_values.data() + 64);
    const std::vector<std::int64_t> big = {5, -7, std::int64_t{1} << 40};
    const std::vector<std::uint8_t> bytes = {0, 17, 255};
    io::tensor_to_save tensors[] = {
        io::tensor_of("wide", wide.data(), {8, 8}),
        {"big", "I64", {3}, std::as_bytes(std::span(big))},
        {"small", "I64", {2}, std::as_bytes(std::span(big).first(2))},
        {"bytes", "U8", {3}, std::as_bytes(std::span(bytes))},
    };
    io::save_tensors(path, tensors);
    const io::safetensors_file f(path);
    std::vector<f32> narrow(64);
    f.read("wide", narrow.data(), {8, 8});
    std::vector<bf16> narrower(64);
    f.read("wide", narrower.data(), {8, 8});
    for (std::size_t i = 0; i < 64; ++i) {
        CHECK(narrow[i] == convert<f32>(wide[i]));  // correctly rounded
        CHECK(convert<f32>(narrower[i]) == convert<f32>(convert<bf16>(wide[i])));
    }
    i32 small[2] = {0, 0};
    f.read("small", small, {2});
    CHECK(small[0] == 5);
    CHECK(small[1] == -7);
    i32 untouched[3] = {42, 42, 42};
    CHECK_THROWS_AS(f.read("big", untouched, {3}), format_error);  // 2^40 does not fit i32
    CHECK(untouched[0] == 42);
    i32 from_bytes[3] = {};
    f.read("bytes", from_bytes, {3});
    CHECK(from_bytes[2] == 255);
    i8 too_small[3] = {1, 1, 1};
    CHECK_THROWS_AS(f.read("bytes", too_small, {3}), format_error);  // 255 does not fit i8
    CHECK(too_small[2] == 1);
    i32 from_float[64] = {};
    CHECK_THROWS_AS(f.read("wide", from_float, {8, 8}), format_error);  // floats into integers: refused
    float from_int[2] = {9, 9};
    CHECK_THROWS_AS(f.read("small", from_int, {2}), format_error);
    CHECK(from_int[0] == 9);
    std::vector<f32> wrong_shape(64, 7.0f);
    CHECK_THROWS_AS(f.read("wide", wrong_shape.data(), {64}), format_error);
    CHECK(wrong_shape[0] == 7.0f);
    CHECK_THROWS_AS(f.at("absent"), tenet::error);
    std::filesystem::remove(path);
    // a BOOL byte other than 0 and 1 is refused, not read as some bool
    const std::uint8_t flags[3] = {1, 0, 2};
    io::save_tensors(path, {io::tensor_to_save{"flags", "BOOL", {3}, std::as_bytes(std::span(flags))}});
    bool read_flags[3] = {false, true, false};
    CHECK_THROWS_AS(io::load_tensor(path, "flags", read_flags, std::vector<std::size_t>{3}), format_error);
    CHECK(read_flags[1]);
    std::filesystem::remove(path);
}

TEST_CASE("safetensors: writing refuses what it cannot write faithfully")
{
    const std::string path = temp_file("refused.safetensors");
    const float x[4] = {1, 2, 3, 4};
    CHECK_THROWS_AS(io::save_tensors(path, {io::tensor_of("x", x, {2}), io::tensor_of("x", x, {2})}), tenet::error);
    CHECK_THROWS_AS(io::save_tensors(path, {io::tensor_to_save{"x", "F32", {3}, std::as_bytes(std::span(x))}}), tenet::error);
    CHECK_THROWS_AS(io::save_tensors(path, {io::tensor_to_save{"x", "F31", {4}, std::as_bytes(std::span(x))}}), tenet::error);
    CHECK_THROWS_AS(io::save_tensors(path, {io::tensor_of("__metadata__", x, {4})}), tenet::error);
    CHECK_FALSE(std::filesystem::exists(path));
    // names that need escaping survive
    const std::string odd = "a \"quoted\"\\name\n\xC3\xA9";
    io::save_tensors(path, {io::tensor_of(odd, x, {4})}, {{"note", "tab\there"}});
    const io::safetensors_file f(path);
    CHECK(f.contains(odd));
    CHECK(f.metadata().at("note") == "tab\there");
    std::filesystem::remove(path);
}

TEST_CASE("safetensors: every malformed file is a format_error")
{
    const std::string data8(8, '\x01');
    const auto entry = [](const std::string& name, const std::string& dtype, const std::string& shape, std::uint64_t b,
                          std::uint64_t e) {
        return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":[" +
               std::to_string(b) + "," + std::to_string(e) + "]}";
    };
    CHECK(rejection(file_of("{" + entry("x", "F32", "[2]", 0, 8) + "}", data8)).empty());  // the well-formed one
    CHECK(rejection(file_of("{" + entry("x", "F32", "[2]", 0, 8) + "}   ", data8)).empty());  // padding
    CHECK(rejection(file_of("{}", "")).empty());                                               // no tensors

    struct bad {
        const char* why;
        std::string bytes;
    };
    std::string huge_length = file_of("{}", "");
    huge_length[7] = '\x7F';
    std::string past_end = file_of("{}", "");
    past_end[0] = 100;
    const std::vector<bad> cases = {
        {"empty file", ""},
        {"short length", "\x02\x00\x00"},
        {"header length past the file", past_end},
        {"absurd header length", huge_length},
        {"not JSON", file_of("nonsense", "")},
        {"unterminated object", file_of("{", "")},
        {"trailing text", file_of("{}x", "")},
        {"not an object", file_of("[]", "")},
        {"unknown dtype", file_of("{" + entry("x", "F24", "[2]", 0, 8) + "}", data8)},
        {"missing offsets", file_of(R"({"x":{"dtype":"F32","shape":[2]}})", data8)},
        {"extra key", file_of(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"y":1}})", data8)},
        {"repeated key", file_of(R"({"x":{"dtype":"F32","dtype":"F32","shape":[2],"data_offsets":[0,8]}})", data8)},
        {"negative shape", file_of("{" + entry("x", "F32", "[-2]", 0, 8) + "}", data8)},
        {"fractional shape", file_of("{" + entry("x", "F32", "[2.0]", 0, 8) + "}", data8)},
        {"string shape", file_of("{" + entry("x", "F32", "[\"2\"]", 0, 8) + "}", data8)},
        {"leading zero", file_of("{" + entry("x", "F32", "[02]", 0, 8) + "}", data8)},
        {"shape overflow", file_of("{" + entry("x", "F32", "[4294967296,4294967296]", 0, 8) + "}", data8)},
        {"integer beyond 64 bits", file_of("{" + entry("x", "F32", "[99999999999999999999]", 0, 8) + "}", data8)},
        {"three offsets", file_of(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,4,8]}})", data8)},
        {"offsets backwards", file_of("{" + entry("x", "F32", "[0]", 8, 0) + "}", data8)},
        {"bytes do not match the shape", file_of("{" + entry("x", "F32", "[3]", 0, 8) + "}", data8)},
        {"offsets past the data", file_of("{" + entry("x", "F32", "[4]", 0, 16) + "}", data8)},
        {"a hole", file_of("{" + entry("x", "F32", "[1]", 4, 8) + "}", data8)},
        {"uncovered data", file_of("{" + entry("x", "F32", "[1]", 0, 4) + "}", data8)},
        {"overlap", file_of("{" + entry("x", "F32", "[2]", 0, 8) + "," + entry("y", "F32", "[1]", 4, 8) + "}", data8)},
        {"duplicate tensor", file_of("{" + entry("x", "F32", "[1]", 0, 4) + "," + entry("x", "F32", "[1]", 4, 8) + "}", data8)},
        {"metadata not strings", file_of(R"({"__metadata__":{"k":1}})", "")},
        {"metadata twice", file_of(R"({"__metadata__":{},"__metadata__":{}})", "")},
        {"deep nesting", file_of(R"({"__metadata__":{"a":[[[[[[[[[[1]]]]]]]]]]}})", "")},
        {"control character", file_of("{\"x\n\":{}}", "")},
        {"bad escape", file_of(R"({"x\q":{}})", "")},
        {"lone surrogate", file_of(R"({"\ud800":{}})", "")},
        // RFC 8259 and the format, strictly (the reference implementation's serde_json)
        {"trailing comma in an object", file_of(R"({"__metadata__":{"a":"b",}})", "")},
        {"trailing comma after the last tensor", file_of("{" + entry("x", "F32", "[2]", 0, 8) + ",}", data8)},
        {"trailing comma in an array", file_of("{" + entry("x", "F32", "[2,]", 0, 8) + "}", data8)},
        {"single quotes", file_of("{'__metadata__':{}}", "")},
        {"a leading zero in offsets", file_of(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,08]}})", data8)},
        {"minus zero", file_of("{" + entry("x", "F32", "[-0]", 0, 0) + "}", "")},
        {"an exponent", file_of("{" + entry("x", "F32", "[2e0]", 0, 8) + "}", data8)},
        {"a literal where a string must be", file_of(R"({"__metadata__":{"a":true}})", "")},
        {"null metadata", file_of(R"({"__metadata__":null})", "")},
        {"a duplicate metadata key", file_of(R"({"__metadata__":{"a":"b","a":"c"}})", "")},
        {"a space before the header", file_of(" {}", "")},
        {"a newline after the header", file_of("{}\n", "")},
        {"a tab after the header", file_of("{}\t", "")},
        {"a NUL after the header", file_of(std::string("{}\0", 3), "")},
        {"a second document", file_of("{}{}", "")},
        {"a raw tab in a string", file_of("{\"__metadata__\":{\"a\t\":\"b\"}}", "")},
        {"a lone continuation byte", file_of("{\"__metadata__\":{\"a\x80\":\"b\"}}", "")},
        {"byte 0xFF", file_of("{\"__metadata__\":{\"a\xFF\":\"b\"}}", "")},
        {"an overlong '/'", file_of("{\"__metadata__\":{\"\xC0\xAF\":\"b\"}}", "")},
        {"an overlong 3-byte form", file_of("{\"__metadata__\":{\"\xE0\x80\xAF\":\"b\"}}", "")},
        {"an encoded surrogate", file_of("{\"__metadata__\":{\"\xED\xA0\x80\":\"b\"}}", "")},
        {"beyond U+10FFFF", file_of("{\"__metadata__\":{\"\xF4\x90\x80\x80\":\"b\"}}", "")},
        {"a cut sequence", file_of("{\"__metadata__\":{\"\xE2\x82\":\"b\"}}", "")},
        {"a lone low surrogate escape", file_of(R"({"__metadata__":{"\udc00":"b"}})", "")},
        {"a high surrogate escape before a non-surrogate", file_of(R"({"__metadata__":{"\ud800\u0041":"b"}})", "")},
        {"a short \\u escape", file_of(R"({"__metadata__":{"\u00e":"b"}})", "")},
    };
    for (const bad& c : cases) {
        const std::string what = c.why;
        CAPTURE(what);
        const std::string why = rejection(c.bytes);
        CHECK_FALSE(why.empty());
        CHECK(why.find("tenet: " + temp_file("malformed.safetensors") + ": ") == 0);
    }
}

TEST_CASE("safetensors: the strict header still takes every escape, UTF-8 name, whitespace and space padding")
{
    const std::string path = temp_file("edge.safetensors");
    const std::string data8(8, '\x01');
    // Escapes of every kind (a surrogate pair included), raw UTF-8 of 2, 3
    // and 4 bytes, U+0000 and U+10FFFF, whitespace between every token, the
    // entry's keys in another order, and spaces after the object.
    const std::string header = "{ \"__metadata__\" :\t{\"k\\\"\\\\\\/\\b\\f\\n\\r\\t\\u0001\\u00e9\\ud83d\\ude00\":\"\xC3\xA9\xE6\x97\xA5\xF0\x9F\x98\x80\xF4\x8F\xBF\xBF\"} ,\r\n"
                               " \"w\\u0000\xE6\x97\xA5\" : { \"data_offsets\" : [ 0 , 8 ] , \"shape\" : [ 2 , 1 ] , \"dtype\" : \"F32\" } }    ";
    write_bytes(path, file_of(header, data8));
    const io::safetensors_file f(path);
    const std::string key = "k\"\\/\b\f\n\r\t\x01\xC3\xA9\xF0\x9F\x98\x80";
    CHECK(f.metadata().size() == 1);
    CHECK(f.metadata().count(key) == 1);
    CHECK(f.metadata().at(key) == "\xC3\xA9\xE6\x97\xA5\xF0\x9F\x98\x80\xF4\x8F\xBF\xBF");
    const std::string name = std::string("w\0", 2) + "\xE6\x97\xA5";
    REQUIRE(f.contains(name));
    CHECK(f.at(name).shape == std::vector<std::size_t>{2, 1});
    // Names written by save_tensors (escaped as needed) read back as they were.
    const f32 two[2] = {1.5f, -2.0f};
    const std::string odd = "a\"b\\c\n\x01\xE2\x82\xAC";
    io::save_tensors(path, {io::tensor_of(odd, two, {2})}, {{odd, odd}});
    const io::safetensors_file back(path);
    CHECK(back.contains(odd));
    CHECK(back.metadata().at(odd) == odd);
    std::filesystem::remove(path);
}

TEST_CASE("safetensors: every truncation and random corruption is rejected or read, never over-read")
{
    const std::string path = temp_file("fuzz.safetensors");
    const auto w = random_values<f32>(12, 21);
    const auto t = random_values<i32>(5, 22);
    io::save_tensors(path, {io::tensor_of("w", w.data(), {3, 4}), io::tensor_of("t", t.data(), {5})}, {{"m", "x"}});
    const std::string good = read_bytes(path);
    for (std::size_t n = 0; n < good.size(); ++n) {
        CAPTURE(n);
        CHECK_FALSE(rejection(good.substr(0, n)).empty());
    }
    std::mt19937_64 rng(5);
    std::size_t accepted = 0;
    for (int trial = 0; trial < 2000; ++trial) {
        std::string bytes = good;
        for (int flips = 1 + static_cast<int>(rng() % 3); flips > 0; --flips)
            bytes[rng() % bytes.size()] = static_cast<char>(rng());
        write_bytes(path, bytes);
        try {
            const io::safetensors_file f(path);
            for (const auto& [name, tensor] : f.tensors()) {  // what was accepted lies within the file (ASan: read it)
                const std::vector<std::byte> copy(tensor.bytes.begin(), tensor.bytes.end());
                CHECK(copy.size() == tensor.numel() * io::detail::find_dtype(tensor.dtype)->bytes);
            }
            ++accepted;  // (a flip in the data, or a harmless one in the header)
        } catch (const format_error&) {
        }
    }
    MESSAGE("random corruptions read as valid files: " << accepted << " of 2000 (data bytes flipped)");
    std::filesystem::remove(path);
}

namespace {

namespace nn = tenet::nn;
using cnn = nn::Sequential<nn::Conv2d<3, 4, 3, 1, 1>, nn::BatchNorm2d<4>, nn::ReLU, nn::Flatten, nn::Linear<64, 5>>;
template <class P>
using cnn_model = nn::model<cnn, P, Shape<2, 4, 4, 3>, Host>;

// Every parameter and buffer, widened to double, by name.
template <class M>
std::map<std::string, std::vector<double>> state_of(M& m)
{
    std::map<std::string, std::vector<double>> out;
    const auto take = [&](const std::string& name, auto value) {
        auto& v = out[name];
        for (std::size_t i = 0; i < decltype(value)::shape::numel; ++i) v.push_back(convert<f64>(value.data()[i]));
    };
    m.for_each_parameter([&](const std::string& name, auto value, auto) { take(name, value); });
    m.for_each_buffer(take);
    return out;
}

// Moves the BatchNorm statistics off their initial 0 and 1.
template <class In, class M>
void train_forward_input(M& m)
{
    Tensor<typename M::storage_type, In, Host> x;
    std::mt19937_64 rng(3);
    std::normal_distribution<double> normal(1.0, 2.0);
    for (std::size_t i = 0; i < x.numel; ++i) x.data()[i] = convert<typename M::storage_type>(normal(rng));
    m.train();
    static_cast<void>(m.forward(x));
}

template <class M>
void train_forward(M& m)
{
    train_forward_input<Shape<2, 4, 4, 3>>(m);
}

}  // namespace

TEST_CASE("safetensors models: PyTorch's names and layouts, and a bit-exact round trip")
{
    cnn_model<bf16_mixed> net(7);
    train_forward(net);
    const std::string path = temp_file("cnn.safetensors");
    io::save_safetensors(net, path);
    const io::safetensors_file f(path);
    CHECK(f.metadata().at("format") == "pt");
    CHECK(f.at("0.weight").shape == std::vector<std::size_t>{4, 3, 3, 3});  // [out, in, kh, kw]
    CHECK(f.at("0.weight").dtype == "BF16");
    CHECK(f.at("1.running_mean").dtype == "F32");
    CHECK(f.at("1.num_batches_tracked").dtype == "I64");
    CHECK(f.at("1.num_batches_tracked").shape.empty());
    CHECK(f.at("4.weight").shape == std::vector<std::size_t>{5, 64});  // Linear: [out, in] as in tenet
    CHECK(f.tensors().size() == 9);  // conv w, b; bn w, b, mean, var, count; linear w, b
    // PyTorch's [o, i, h, w] is tenet's [o, h, w, i]
    std::vector<f32> torch(4 * 3 * 3 * 3);
    f.read("0.weight", torch.data(), {4, 3, 3, 3});
    const auto state = state_of(net);
    const auto& tenet_weight = state.at("0.weight");
    for (std::size_t o = 0; o < 4; ++o)
        for (std::size_t i = 0; i < 3; ++i)
            for (std::size_t h = 0; h < 3; ++h)
                for (std::size_t w = 0; w < 3; ++w)
                    CHECK(torch[((o * 3 + i) * 3 + h) * 3 + w] == tenet_weight[((o * 3 + h) * 3 + w) * 3 + i]);

    cnn_model<bf16_mixed> loaded(99);
    CHECK(state_of(loaded) != state);
    CHECK(io::load_safetensors(loaded, path).complete());
    CHECK(state_of(loaded) == state);
    std::filesystem::remove(path);
}

namespace {

// Every kind of layer with parameters or buffers: convolutions (with and
// without bias, grouped), BatchNorm2d, Linear; PatchEmbed, positional and
// token embeddings, attention and the feed-forward inside an encoder layer,
// LayerNorm.
using every_conv = nn::Sequential<nn::Conv2d<2, 4, 3, 1, 1>, nn::BatchNorm2d<4>, nn::ReLU, nn::Conv2dNoBias<4, 4, 3, 1, 1, 1, 2>,
                                  nn::FlattenCHW, nn::Linear<64, 3>>;
using every_vit = nn::Sequential<nn::PatchEmbed<2, 1, 8>, nn::PositionalEmbedding<4, 8>, nn::TransformerEncoderLayer<8, 2, 16>,
                                 nn::MeanPool<1>, nn::LayerNorm<8>, nn::Linear<8, 3>>;
using every_token = nn::Sequential<nn::Embedding<11, 8>, nn::PositionalEmbedding<5, 8>,
                                   nn::TransformerEncoderLayer<8, 2, 16, true>, nn::LastToken, nn::Linear<8, 11>>;

// Saved under policy P, every name holds PyTorch's shape (rank 4:
// transposed), and a model of other weights loads back every bit.
template <class Spec, class P, class In>
void check_round_trip(const std::string& file)
{
    using M = nn::model<Spec, P, In, Host>;
    M net(7);
    const std::string path = temp_file(file);
    io::save_safetensors(net, path);
    const io::safetensors_file f(path);
    std::size_t names = 0;
    net.for_each_parameter([&](const std::string& name, auto value, auto) {
        ++names;
        CHECK(f.at(name).shape == io::detail::torch_shape(io::detail::dims_of(value)));
    });
    net.for_each_buffer([&](const std::string&, auto) { ++names; });
    CHECK(f.tensors().size() >= names);
    M loaded(99);
    const auto state = state_of(net);
    CHECK(state_of(loaded) != state);
    CHECK(io::load_safetensors(loaded, path).complete());
    CHECK(state_of(loaded) == state);
    std::filesystem::remove(path);
}

template <class P>
void check_every_layer_kind(const std::string& policy)
{
    check_round_trip<every_conv, P, Shape<2, 4, 4, 2>>(policy + "_conv.safetensors");
    check_round_trip<every_vit, P, Shape<2, 4, 4, 1>>(policy + "_vit.safetensors");
    check_round_trip<every_token, P, Shape<2, 5>>(policy + "_token.safetensors");
}

}  // namespace

TEST_CASE("safetensors models: every layer kind round trips bit for bit under every policy")
{
    check_every_layer_kind<fp32>("fp32");
    check_every_layer_kind<bf16_mixed>("bf16");
    check_every_layer_kind<fp16_mixed>("fp16");
}

TEST_CASE("safetensors models: a file written element by element in PyTorch's layout loads into tenet's")
{
    cnn_model<fp32> net(1);
    std::map<std::string, std::vector<f64>> values;  // the file's, in PyTorch's layouts, as f64
    std::vector<io::tensor_to_save> tensors;
    std::mt19937_64 rng(9);
    std::normal_distribution<double> normal(0.0, 1.0);
    net.for_each_parameter([&](const std::string& name, auto value, auto) {
        auto& v = values[name];
        for (std::size_t i = 0; i < decltype(value)::shape::numel; ++i) v.push_back(normal(rng));
        auto dims = io::detail::dims_of(value);
        tensors.push_back(io::tensor_of(name, v.data(), io::detail::torch_shape(dims)));  // F64: converted on loading
    });
    std::vector<f32> mean(4, 0.25f), var(4, 2.0f);
    tensors.push_back(io::tensor_of("1.running_mean", mean.data(), {4}));
    tensors.push_back(io::tensor_of("1.running_var", var.data(), {4}));
    const std::int64_t count = 12;
    tensors.push_back({"1.num_batches_tracked", "I64", {}, std::as_bytes(std::span(&count, 1))});
    const std::string path = temp_file("from_torch.safetensors");
    io::save_tensors(path, tensors);
    CHECK(io::load_safetensors(net, path).complete());
    const auto state = state_of(net);
    for (std::size_t o = 0; o < 4; ++o)
        for (std::size_t i = 0; i < 3; ++i)
            for (std::size_t h = 0; h < 3; ++h)
                for (std::size_t w = 0; w < 3; ++w)
                    CHECK(state.at("0.weight")[((o * 3 + h) * 3 + w) * 3 + i] ==
                          convert<f64>(convert<f32>(values["0.weight"][((o * 3 + i) * 3 + h) * 3 + w])));
    CHECK(state.at("4.weight")[17] == convert<f64>(convert<f32>(values["4.weight"][17])));
    CHECK(state.at("1.running_var")[2] == 2.0);
    std::filesystem::remove(path);
}

TEST_CASE("safetensors models: strict loads list every problem and change nothing; non-strict loads what matches")
{
    cnn_model<fp32> source(2);
    const std::string path = temp_file("partial.safetensors");
    std::vector<f32> conv_bias(4, 0.5f), wrong(7, 1.0f), extra(3, 2.0f), linear_bias(5, -1.0f);
    io::save_tensors(path, {io::tensor_of("0.bias", conv_bias.data(), {4}), io::tensor_of("4.weight", wrong.data(), {7}),
                            io::tensor_of("9.extra", extra.data(), {3}), io::tensor_of("4.bias", linear_bias.data(), {5})});
    cnn_model<fp32> net(3);
    const auto before = state_of(net);
    try {
        io::load_safetensors(net, path);
        FAIL("a strict load of a partial file must throw");
    } catch (const format_error& e) {
        const std::string what = e.what();
        CHECK(what.find("0.weight") != std::string::npos);  // missing
        CHECK(what.find("9.extra") != std::string::npos);   // unexpected
        CHECK(what.find("4.weight") != std::string::npos);  // mismatched shape
    }
    CHECK(state_of(net) == before);

    const io::safetensors_report report = io::load_safetensors(net, path, /*strict=*/false);
    CHECK(report.unexpected == std::vector<std::string>{"9.extra"});
    CHECK(report.mismatched.size() == 1);
    CHECK(report.mismatched[0].find("4.weight") == 0);
    CHECK(std::find(report.missing.begin(), report.missing.end(), "0.weight") != report.missing.end());
    const auto after = state_of(net);
    CHECK(after.at("0.bias") == std::vector<double>(4, 0.5));
    CHECK(after.at("4.bias") == std::vector<double>(5, -1.0));
    CHECK(after.at("0.weight") == before.at("0.weight"));
    std::filesystem::remove(path);
}

namespace {

// The net tests/fixtures/pytorch/make_cnn_fixture.py builds in PyTorch.
using fixture_input = Shape<4, 6, 6, 3>;
template <class Flatten = nn::FlattenCHW>
using torch_cnn_model = nn::model<nn::Sequential<nn::Conv2d<3, 4, 3, 1, 1>, nn::BatchNorm2d<4>, nn::ReLU, nn::MaxPool2d<2>,
                                                 Flatten, nn::Linear<36, 8>, nn::ReLU, nn::Linear<8, 5>>,
                                  fp32, fixture_input, Host>;

const std::string fixtures = std::string(TENET_TEST_FIXTURES) + "/pytorch/";

template <class M>
std::vector<f32> eval_logits(M& net, const std::vector<f32>& input)
{
    Tensor<f32, fixture_input, Host> x;
    std::copy(input.begin(), input.end(), x.data());
    net.eval();
    const auto& y = net.forward(x);
    return {y.data(), y.data() + y.numel};
}

double largest_relative_difference(const std::vector<f32>& got, const std::vector<f32>& want)
{
    REQUIRE(got.size() == want.size());
    double worst = 0;
    for (std::size_t i = 0; i < got.size(); ++i)
        worst = std::max(worst, std::abs(static_cast<double>(got[i]) - want[i]) / (1.0 + std::abs(want[i])));
    return worst;
}

}  // namespace

TEST_CASE("safetensors models: a conv net saved by PyTorch gives PyTorch's logits (the PyTorch fixture)")
{
    const auto input = io::load_npy<f32>(fixtures + "input_nhwc.npy");
    const auto logits = io::load_npy<f32>(fixtures + "logits.npy");
    REQUIRE(input.shape == std::vector<std::size_t>{4, 6, 6, 3});
    REQUIRE(logits.shape == std::vector<std::size_t>{4, 5});

    torch_cnn_model<> net(5);
    CHECK(largest_relative_difference(eval_logits(net, input.values), logits.values) > 0.05);  // not by chance
    CHECK(io::load_safetensors(net, fixtures + "cnn.safetensors").complete());
    const double worst = largest_relative_difference(eval_logits(net, input.values), logits.values);
    MESSAGE("largest relative difference to PyTorch's logits: " << worst);
    CHECK(worst < 1e-5);

    // The same file loads into a net with Flatten (same names and shapes),
    // whose Linear reads the features in (h, w, c) order: the logits are
    // wrong, which is why FlattenCHW exists.
    torch_cnn_model<nn::Flatten> hwc(5);
    CHECK(io::load_safetensors(hwc, fixtures + "cnn.safetensors").complete());
    CHECK(largest_relative_difference(eval_logits(hwc, input.values), logits.values) > 1e-2);

    // The reverse direction: with TENET_TORCH_EXPORT=DIR, tenet's own net,
    // an input and tenet's logits are left in DIR for
    // tests/fixtures/pytorch/check_tenet_export.py to load into PyTorch.
    torch_cnn_model<> own(23);
    train_forward_input<fixture_input>(own);
    std::vector<f32> x(fixture_input::numel);
    std::mt19937_64 rng(29);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (auto& v : x) v = normal(rng);
    const std::vector<f32> own_logits = eval_logits(own, x);
    const char* export_dir = std::getenv("TENET_TORCH_EXPORT");
    const std::string folder = export_dir ? std::string(export_dir) : temp_file("export");
    std::filesystem::create_directories(folder);
    io::save_safetensors(own, folder + "/cnn.safetensors");
    const std::vector<std::size_t> input_shape{4, 6, 6, 3}, logits_shape{4, 5};
    io::save_npy(folder + "/input_nhwc.npy", x.data(), input_shape);
    io::save_npy(folder + "/logits.npy", own_logits.data(), logits_shape);
    torch_cnn_model<> reloaded(31);  // what tenet wrote, tenet reads back to the same logits
    CHECK(io::load_safetensors(reloaded, folder + "/cnn.safetensors").complete());
    CHECK(eval_logits(reloaded, x) == own_logits);
    if (!export_dir) std::filesystem::remove_all(folder);
}
