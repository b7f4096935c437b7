// The checkpoint file format: exact bytes against an encoder and a bitwise
// CRC-32 written here, round trips, every rejection, and atomic replacement.
#include <doctest/doctest.h>
#include <tenet/io/checkpoint_file.hpp>

#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using tenet::io::checkpoint_contents;
using tenet::io::checkpoint_section;
using bytes_t = std::vector<std::byte>;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A fresh directory for one test case, removed afterwards.
struct scratch_dir {
    fs::path path;
    scratch_dir()
        : path(fs::temp_directory_path() / ("tenet_ckpt_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++)))
    {
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~scratch_dir()
    {
        std::error_code ignored;
        fs::permissions(path, fs::perms::owner_all, ignored);
        fs::remove_all(path, ignored);
    }
    std::string file(const std::string& name) const { return (path / name).string(); }
    static int& counter()
    {
        static int n = 0;
        return n;
    }
    // Names in the directory other than the ones expected: leftover temp files.
    std::vector<std::string> names() const
    {
        std::vector<std::string> out;
        for (const auto& entry : fs::directory_iterator(path)) out.push_back(entry.path().filename().string());
        return out;
    }
};

bytes_t read_bytes(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    const std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    bytes_t out(chars.size());
    for (std::size_t i = 0; i < chars.size(); ++i) out[i] = static_cast<std::byte>(chars[i]);
    return out;
}

void write_bytes(const std::string& path, const bytes_t& bytes)
{
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// CRC-32 (IEEE, reflected, polynomial 0xEDB88320) bit by bit, independent of zlib.
std::uint32_t reference_crc32(const bytes_t& bytes, std::size_t count)
{
    std::uint32_t crc = 0xFFFFFFFFu;
    for (std::size_t i = 0; i < count; ++i) {
        crc ^= std::to_integer<std::uint32_t>(bytes[i]);
        for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    }
    return ~crc;
}

// Little-endian byte image, written out field by field as the format states.
struct image {
    bytes_t bytes;
    image& u(std::uint64_t value, int width)
    {
        for (int i = 0; i < width; ++i) bytes.push_back(static_cast<std::byte>((value >> (8 * i)) & 0xFF));
        return *this;
    }
    image& text(const std::string& s)
    {
        u(s.size(), 4);
        for (char c : s) bytes.push_back(static_cast<std::byte>(c));
        return *this;
    }
    image& raw(const bytes_t& b)
    {
        bytes.insert(bytes.end(), b.begin(), b.end());
        return *this;
    }
    image& crc()
    {
        const std::size_t n = bytes.size();
        return u(reference_crc32(bytes, n), 4);
    }
};

// The expected file for contents, from the layout in the header's comment.
bytes_t expected_file(const checkpoint_contents& c, std::uint32_t version = 1)
{
    std::size_t header = 8 + 4 + 8 + 4 + c.signature.size() + 8 + 4;
    for (const auto& s : c.sections) header += 4 + s.name.size() + 8;
    image out;
    for (char ch : std::string("TENETCKP")) out.bytes.push_back(static_cast<std::byte>(ch));
    out.u(version, 4).u(header, 8).text(c.signature).u(c.step, 8).u(c.sections.size(), 4);
    for (const auto& s : c.sections) out.text(s.name).u(s.bytes.size(), 8);
    for (const auto& s : c.sections) out.raw(s.bytes);
    return out.crc().bytes;
}

bytes_t random_bytes(std::mt19937_64& rng, std::size_t n)
{
    bytes_t out(n);
    for (auto& b : out) b = static_cast<std::byte>(rng() & 0xFF);
    return out;
}

checkpoint_contents small_contents(std::mt19937_64& rng)
{
    return {"mlp 784-256-10 bf16_mixed batch 256",
            0x0123456789ABCDEFull,
            {{"params", random_bytes(rng, 37)}, {"empty", {}}, {"adam.m", random_bytes(rng, 11)}}};
}

// The message of the format_error reading path throws; fails the test if none.
std::string read_error(const std::string& path, const std::string& signature)
{
    try {
        (void)tenet::io::read_checkpoint_file(path, signature);
    } catch (const tenet::format_error& e) {
        CHECK(e.path() == path);
        return e.what();
    }
    FAIL("no format_error");
    return {};
}

// Replaces bytes [at, at + patch.size()) and recomputes the CRC: a file whose
// checksum is right but whose structure is not.
bytes_t patched(const bytes_t& file, std::size_t at, const bytes_t& patch)
{
    image out{bytes_t(file.begin(), file.end() - 4)};
    std::copy(patch.begin(), patch.end(), out.bytes.begin() + static_cast<std::ptrdiff_t>(at));
    return out.crc().bytes;
}

bytes_t le(std::uint64_t value, int width) { return image{}.u(value, width).bytes; }

}  // namespace

TEST_CASE("checkpoint file: exact bytes, and a round trip of random sections")
{
    scratch_dir dir;
    std::mt19937_64 rng(20240605);
    const std::string path = dir.file("model.ckpt");
    write_bytes(path, random_bytes(rng, 999));  // poison: replaced whole

    SUBCASE("the bytes are the documented layout, CRC included")
    {
        const checkpoint_contents c = small_contents(rng);
        tenet::io::write_checkpoint_file(path, c);
        const bytes_t file = read_bytes(path);
        const bytes_t expected = expected_file(c);
        REQUIRE(file.size() == expected.size());
        CHECK(file == expected);
        CHECK(tenet::io::read_checkpoint_file(path, c.signature).step == c.step);
    }
    SUBCASE("random sections, an empty one and a large one come back equal")
    {
        checkpoint_contents c{"sig " + std::to_string(rng()), rng(), {}};
        c.sections.push_back({"large", random_bytes(rng, (3u << 20) + 5)});
        for (int i = 0; i < 12; ++i) c.sections.push_back({"s" + std::to_string(i), random_bytes(rng, rng() % 300)});
        c.sections.push_back({"", {}});
        tenet::io::write_checkpoint_file(path, c);
        const checkpoint_contents back = tenet::io::read_checkpoint_file(path, c.signature);
        CHECK(back.signature == c.signature);
        CHECK(back.step == c.step);
        REQUIRE(back.sections.size() == c.sections.size());
        for (std::size_t i = 0; i < c.sections.size(); ++i) {
            CHECK(back.sections[i].name == c.sections[i].name);
            CHECK(back.sections[i].bytes == c.sections[i].bytes);
        }
        CHECK(read_bytes(path) == expected_file(c));
        CHECK(dir.names() == std::vector<std::string>{"model.ckpt"});
    }
    SUBCASE("no sections and an empty signature: the smallest file")
    {
        tenet::io::write_checkpoint_file(path, {"", 7, {}});
        CHECK(read_bytes(path).size() == 40);
        const checkpoint_contents back = tenet::io::read_checkpoint_file(path, "");
        CHECK(back.step == 7);
        CHECK(back.sections.empty());
    }
}

TEST_CASE("find_section returns a section of the expected size, else format_error naming the file and section")
{
    std::mt19937_64 rng(3);
    const checkpoint_contents c = small_contents(rng);
    const std::string path = "/some/dir/run.ckpt";
    const checkpoint_section& m = tenet::io::find_section(path, c, "adam.m", 11);
    CHECK(&m == &c.sections[2]);
    CHECK(tenet::io::find_section(path, c, "empty", 0).bytes.empty());
    const std::string prefix = "tenet: " + path + ": checkpoint at step " + std::to_string(c.step) + ": ";
    try {
        (void)tenet::io::find_section(path, c, "adam.v", 11);
        FAIL("no error");
    } catch (const tenet::format_error& e) {
        CHECK(std::string(e.what()) == prefix + "no section \"adam.v\" (it has \"params\", \"empty\", \"adam.m\")");
        CHECK(e.path() == path);
    }
    try {
        (void)tenet::io::find_section(path, c, "params", 36);
        FAIL("no error");
    } catch (const tenet::format_error& e) {
        CHECK(std::string(e.what()) == prefix + "section \"params\" has 37 bytes, expected 36");
    }
}

TEST_CASE("every damaged checkpoint is rejected with the reason")
{
    scratch_dir dir;
    std::mt19937_64 rng(77);
    const checkpoint_contents c = small_contents(rng);
    const std::string good = dir.file("good.ckpt");
    const std::string bad = dir.file("bad.ckpt");
    tenet::io::write_checkpoint_file(good, c);
    const bytes_t file = read_bytes(good);
    REQUIRE(file == expected_file(c));

    SUBCASE("one flipped byte anywhere: magic, version or checksum")
    {
        for (std::size_t at = 0; at < file.size(); ++at) {
            bytes_t damaged = file;
            damaged[at] ^= static_cast<std::byte>(1 + rng() % 255);
            write_bytes(bad, damaged);
            const std::string what = read_error(bad, c.signature);
            CAPTURE(at);
            CAPTURE(what);
            if (at < 8)
                CHECK(contains(what, "not a tenet checkpoint"));
            else if (at < 12)
                CHECK(contains(what, "unsupported checkpoint format version"));
            else
                CHECK(contains(what, "checksum mismatch"));
        }
    }
    SUBCASE("truncated at every length, 0 included")
    {
        for (std::size_t size = 0; size < file.size(); ++size) {
            write_bytes(bad, bytes_t(file.begin(), file.begin() + static_cast<std::ptrdiff_t>(size)));
            const std::string what = read_error(bad, c.signature);
            CAPTURE(size);
            CAPTURE(what);
            CHECK(contains(what, "truncated"));
        }
    }
    SUBCASE("bytes appended")
    {
        for (std::size_t extra : {1u, 2u, 9u}) {
            bytes_t longer = file;
            const bytes_t tail = random_bytes(rng, extra);
            longer.insert(longer.end(), tail.begin(), tail.end());
            write_bytes(bad, longer);
            const std::string what = read_error(bad, c.signature);
            CHECK(contains(what, "checksum mismatch"));
        }
    }
    SUBCASE("another format version, checksum right")
    {
        write_bytes(bad, expected_file(c, 2));
        CHECK(contains(read_error(bad, c.signature), "unsupported checkpoint format version 2 (this tenet reads version 1)"));
    }
    SUBCASE("not a checkpoint at all")
    {
        write_bytes(bad, random_bytes(rng, 100));
        CHECK(contains(read_error(bad, c.signature), "not a tenet checkpoint"));
    }
    SUBCASE("a section table that disagrees with the length, checksum right")
    {
        // Offsets: header length at 12; signature at 20 (4 + 35 bytes); step at 59;
        // count at 67; the first entry ("params") at 71: name 4 + 6, length at 81.
        REQUIRE(c.signature.size() == 35);
        const std::size_t header = 71 + (4 + 6 + 8) + (4 + 5 + 8) + (4 + 6 + 8);
        write_bytes(bad, patched(file, 12, le(header + 1, 8)));
        CHECK(contains(read_error(bad, c.signature), "section table ends at byte " + std::to_string(header)));
        write_bytes(bad, patched(file, 12, le(header - 1, 8)));
        CHECK(contains(read_error(bad, c.signature), "runs past the header's"));
        write_bytes(bad, patched(file, 12, le(file.size(), 8)));
        CHECK(contains(read_error(bad, c.signature), "truncated"));
        write_bytes(bad, patched(file, 81, le(38, 8)));
        CHECK(contains(read_error(bad, c.signature), "need more bytes"));
        write_bytes(bad, patched(file, 81, le(36, 8)));
        CHECK(contains(read_error(bad, c.signature), "1 trailing bytes"));
        write_bytes(bad, patched(file, 67, le(0xFFFFFFFFu, 4)));
        CHECK(contains(read_error(bad, c.signature), "runs past"));
        write_bytes(bad, patched(file, 71 + 4, {std::byte{'a'}, std::byte{'d'}, std::byte{'a'}, std::byte{'m'},
                                                std::byte{'.'}, std::byte{'m'}}));
        CHECK(contains(read_error(bad, c.signature), "section \"adam.m\" appears twice"));
    }
    SUBCASE("a different signature: both shown, long ones shortened")
    {
        const std::string what = read_error(good, "mlp 784-256-10 f32 batch 256");
        CHECK(contains(what, "signature mismatch: the file was written for \"mlp 784-256-10 bf16_mixed batch 256\" but "
                             "\"mlp 784-256-10 f32 batch 256\" was expected (they differ from character 15)"));
        const std::string common(100, 'x');
        checkpoint_contents long_sig = c;
        long_sig.signature = common + "A" + std::string(100, 'y');
        tenet::io::write_checkpoint_file(good, long_sig);
        const std::string shortened = read_error(good, common + "B" + std::string(100, 'y'));
        CHECK(contains(shortened, "...\"" + std::string(24, 'x') + "A" + std::string(39, 'y') + "\"..."));
        CHECK(contains(shortened, "...\"" + std::string(24, 'x') + "B" + std::string(39, 'y') + "\"..."));
        CHECK(contains(shortened, "character 100"));
        CHECK(shortened.size() < 300);
    }
}

TEST_CASE("reading what is not a readable file is an io_error")
{
    scratch_dir dir;
    const auto is_plain_io_error = [](const std::string& path) {
        try {
            (void)tenet::io::read_checkpoint_file(path, "x");
        } catch (const tenet::format_error&) {
            return false;
        } catch (const tenet::io_error& e) {
            return e.path() == path && contains(e.what(), "cannot");
        }
        return false;
    };
    CHECK(is_plain_io_error(dir.file("missing.ckpt")));
    CHECK(is_plain_io_error(dir.path.string()));
}

TEST_CASE("a failed write leaves the old file intact and no temporary file")
{
    scratch_dir dir;
    std::mt19937_64 rng(11);
    const std::string path = dir.file("model.ckpt");
    const checkpoint_contents old = small_contents(rng);
    tenet::io::write_checkpoint_file(path, old);
    const bytes_t old_bytes = read_bytes(path);

    SUBCASE("the file system refuses the data (file size limit)")
    {
        checkpoint_contents big = old;
        big.sections.push_back({"big", random_bytes(rng, 1 << 20)});
        rlimit saved{};
        REQUIRE(::getrlimit(RLIMIT_FSIZE, &saved) == 0);
        const auto previous_handler = std::signal(SIGXFSZ, SIG_IGN);
        rlimit limited = saved;
        limited.rlim_cur = 64 * 1024;
        REQUIRE(::setrlimit(RLIMIT_FSIZE, &limited) == 0);
        std::string what;
        try {
            tenet::io::write_checkpoint_file(path, big);
        } catch (const tenet::io_error& e) {
            what = e.what();
        }
        ::setrlimit(RLIMIT_FSIZE, &saved);
        std::signal(SIGXFSZ, previous_handler);
        CHECK(contains(what, "cannot write " + path + ".tmp." + std::to_string(::getpid())));
        CHECK(contains(what, "File too large"));
    }
    SUBCASE("the destination is a directory")
    {
        const std::string target = dir.file("a_directory");
        fs::create_directory(target);
        CHECK_THROWS_AS(tenet::io::write_checkpoint_file(target, old), tenet::io_error);
        CHECK(fs::is_directory(target));
        fs::remove(target);
    }
    SUBCASE("the directory does not exist")
    {
        CHECK_THROWS_AS(tenet::io::write_checkpoint_file(dir.file("no/such/dir/x.ckpt"), old), tenet::io_error);
    }
    SUBCASE("the directory is not writable")
    {
        if (::geteuid() == 0) {  // permissions do not bind root; /proc refuses new files even to root
            CHECK_THROWS_AS(tenet::io::write_checkpoint_file("/proc/tenet_test.ckpt", old), tenet::io_error);
        } else {
            fs::permissions(dir.path, fs::perms::owner_read | fs::perms::owner_exec);
            CHECK_THROWS_AS(tenet::io::write_checkpoint_file(path, small_contents(rng)), tenet::io_error);
            fs::permissions(dir.path, fs::perms::owner_all);
        }
    }
    SUBCASE("duplicate section names are refused before anything is written")
    {
        checkpoint_contents twice = old;
        twice.sections.push_back(twice.sections.front());
        CHECK_THROWS_WITH_AS(tenet::io::write_checkpoint_file(path, twice),
                             "tenet: checkpoint section \"params\" appears twice", tenet::error);
    }
    CHECK(read_bytes(path) == old_bytes);
    CHECK(dir.names() == std::vector<std::string>{"model.ckpt"});
}
