// Every file reader on damaged or hostile files: the reported checkpoint
// corruption, every truncation and random overwrites of small valid files
// (checkpoint, sparse file, IDX raw and gzip'd), headers claiming huge sizes,
// 1 TiB files, saving past planted symlinks, FIFOs, devices and directories
// in place of files, errors that name the file (and section), and values no
// model holds (a negative running variance). Each must be rejected with a
// tenet::error and change nothing -- never a crash, never bad_alloc.
#include "scratch_dir.hpp"
#include "tensor_testing.hpp"

#include <tenet/data/array_dataset.hpp>
#include <tenet/data/idx.hpp>
#include <tenet/io/atomic_file.hpp>
#include <tenet/io/byte_reader.hpp>
#include <tenet/io/model_safetensors.hpp>
#include <tenet/io/npy.hpp>
#include <tenet/nn/nn.hpp>
#include <tenet/prune/sparse_file.hpp>
#include <tenet/train/trainer.hpp>

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace tenet;

namespace {

namespace fs = std::filesystem;
using bytes_t = std::vector<std::byte>;

using spec = nn::Sequential<nn::Linear<6, 8>, nn::ReLU, nn::Linear<8, 4>>;
using net_t = nn::model<spec, fp32, Shape<4, 6>, Host>;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

struct scratch : testing::scratch_dir {
    scratch() : scratch_dir("tenet-file-faults") {}
};

bytes_t read_bytes(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    std::vector<char> chars((std::istreambuf_iterator<char>(in)), {});
    bytes_t out(chars.size());
    if (!chars.empty()) std::memcpy(out.data(), chars.data(), chars.size());
    return out;
}

void write_bytes(const std::string& path, const bytes_t& bytes)
{
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    REQUIRE(out.good());
}

void write_gz(const std::string& path, const bytes_t& bytes)
{
    gzFile f = gzopen(path.c_str(), "wb");
    REQUIRE(f != nullptr);
    if (!bytes.empty()) REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) == int(bytes.size()));
    REQUIRE(gzclose(f) == Z_OK);
}

// The file with its checkpoint CRC (the last four bytes) made right again.
bytes_t with_crc(bytes_t file)
{
    const std::size_t body = file.size() - 4;
    const auto crc = static_cast<std::uint32_t>(::crc32_z(0, reinterpret_cast<const Bytef*>(file.data()), body));
    for (int i = 0; i < 4; ++i) file[body + i] = static_cast<std::byte>(crc >> (8 * i));
    return file;
}

// The reported corruption: header length (bytes 12-19) 0, signature length
// (bytes 20-23) FFFFFFFF.
bytes_t reported_corruption(bytes_t file)
{
    REQUIRE(file.size() >= 24);
    std::fill(file.begin() + 12, file.begin() + 20, std::byte{0});
    std::fill(file.begin() + 20, file.begin() + 24, std::byte{0xFF});
    return file;
}

// What `read` throws for a damaged file: must be a tenet::error (a crash,
// bad_alloc or any other exception fails the test).
template <class Read>
std::string rejection(Read read)
{
    try {
        read();
    } catch (const error& e) {
        return e.what();
    }
    return "";
}

template <class Read>
void check_damage_rejected(const bytes_t& good, const std::string& path, bool gzip, bool checksummed, Read read)
{
    const auto store = [&](const bytes_t& b) { gzip ? write_gz(path, b) : write_bytes(path, b); };
    for (std::size_t size = 0; size < good.size(); ++size) {
        CAPTURE(size);
        store(bytes_t(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(size)));
        CHECK(rejection(read) != "");
    }
    std::mt19937_64 rng(gzip ? 11 : 12);
    for (int trial = 0; trial < 200; ++trial) {
        bytes_t damaged = good;
        const std::size_t at = rng() % damaged.size();
        damaged[at] ^= static_cast<std::byte>(1 + rng() % 255);
        CAPTURE(at);
        store(damaged);
        const std::string what = rejection(read);  // IDX has no checksum: a changed pixel is accepted
        if (checksummed) CHECK(what != "");
    }
}

std::vector<std::uint32_t> parameter_bits(net_t& net)
{
    std::vector<std::uint32_t> out(net_t::flat_numel);
    std::memcpy(out.data(), net.parameters(), out.size() * sizeof(float));
    return out;
}

// A sparse file of a terabyte: ftruncate makes it a hole, nothing is written.
std::string terabyte_file(const scratch& s, const bytes_t& start)
{
    const std::string path = s.file("huge.bin");
    write_bytes(path, start);
    REQUIRE(::truncate(path.c_str(), off_t{1} << 40) == 0);
    return path;
}

bytes_t idx_bytes(std::vector<std::uint32_t> dims, std::size_t payload)
{
    bytes_t out{std::byte{0}, std::byte{0}, std::byte{8}, static_cast<std::byte>(dims.size())};
    for (std::uint32_t d : dims)
        for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<std::byte>(d >> shift));
    std::mt19937 rng(5);
    for (std::size_t i = 0; i < payload; ++i) out.push_back(static_cast<std::byte>(rng()));
    return out;
}

}  // namespace

TEST_CASE("byte_reader: every take is bounds-checked and says where it ran out")
{
    const bytes_t data{std::byte{1}, std::byte{2}, std::byte{3}, std::byte{4}, std::byte{5}};
    io::byte_reader r("f.bin", data, "the table: ");
    CHECK(r.take<std::uint16_t>() == 0x0201);
    CHECK(r.take_big_endian<std::uint16_t>() == 0x0304);
    CHECK_THROWS_WITH_AS(r.take<std::uint32_t>(), "tenet: f.bin: the table: offset 4: needs 4 bytes, 1 remain",
                         format_error);
    CHECK_THROWS_WITH_AS(r.take_bytes(~std::uint64_t{0}),
                         "tenet: f.bin: the table: offset 4: needs 18446744073709551615 bytes, 1 remain", format_error);
    CHECK(r.take_text(1) == "\x05");
    CHECK(r.remaining() == 0);
}

TEST_CASE("checkpoint: the reported corruption, truncations and overwrites are format_errors, the trainer unchanged")
{
    scratch s;
    net_t net(3);
    train::trainer t(net, train::adamw{}, train::constant_lr{1e-3f});
    const std::string good_path = s.file("good.ckpt"), bad = s.file("bad.ckpt");
    t.save(good_path);
    const bytes_t good = read_bytes(good_path);
    const auto before = parameter_bits(net);

    for (const bytes_t& damaged : {reported_corruption(good), with_crc(reported_corruption(good))}) {
        write_bytes(bad, damaged);
        CHECK_THROWS_AS(t.load(bad), format_error);
        CHECK(parameter_bits(net) == before);
        CHECK(net.step() == 0);
    }
    write_bytes(bad, with_crc(reported_corruption(good)));
    CHECK(contains(rejection([&] { t.load(bad); }), "runs past the header's 0 bytes: offset 0: needs 20 bytes"));

    check_damage_rejected(good, bad, false, true, [&] { t.load(bad); });
    CHECK(parameter_bits(net) == before);
    CHECK_NOTHROW(t.load(good_path));
    CHECK(parameter_bits(net) == before);
}

TEST_CASE("sparse file: truncations and overwrites are rejected before parsing, the model unchanged")
{
    scratch s;
    net_t net(4);
    prune::masks<net_t> m(net);
    const std::string good_path = s.file("good.sparse"), bad = s.file("bad.sparse");
    prune::save_sparse(good_path, m, prune::sparse_format::csr);
    const bytes_t good = read_bytes(good_path);
    const auto before = parameter_bits(net);

    write_bytes(bad, reported_corruption(good));
    CHECK(contains(rejection([&] { prune::load_sparse(bad, m); }), "checksum mismatch"));
    write_bytes(bad, with_crc(reported_corruption(good)));
    CHECK(contains(rejection([&] { prune::load_sparse(bad, m); }), "runs past the header's 0 bytes"));
    check_damage_rejected(good, bad, false, true, [&] { prune::load_sparse(bad, m); });
    CHECK(parameter_bits(net) == before);
}

TEST_CASE("a terabyte file is refused from its size, before anything is read")
{
    scratch s;
    net_t net(5);
    train::trainer t(net, train::adamw{}, train::constant_lr{1e-3f});
    prune::masks<net_t> m(net);
    t.save(s.file("good.ckpt"));
    const std::string huge = terabyte_file(s, read_bytes(s.file("good.ckpt")));
    const auto start = std::chrono::steady_clock::now();
    const std::string trainer_error = rejection([&] { t.load(huge); });
    const std::string sparse_error = rejection([&] { prune::load_sparse(huge, m); });
    const std::string plain_error = rejection([&] { (void)io::read_checkpoint_file(huge, t.signature()); });
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
    for (const std::string& what : {trainer_error, sparse_error, plain_error}) {
        CAPTURE(what);
        CHECK(contains(what, "the file has 1099511627776 bytes, more than the"));
    }
    // The trainer's bound is exact to within the section names' allowance
    // (and room for a weight average's section, 4 bytes an element).
    CHECK(contains(trainer_error, "more than the " +
                                      std::to_string(io::checkpoint_size_bound(t.signature(), 6, 0) +
                                                     net_t::flat_numel * 17 + sizeof(train::step_state))));
}

TEST_CASE("IDX: truncations and overwrites, raw and gzip'd, are rejected; huge claims allocate nothing")
{
    scratch s;
    const bytes_t good = idx_bytes({3, 2, 5}, 30);
    const std::string path = s.file("t.idx");
    for (bool gzip : {false, true}) {
        CAPTURE(gzip);
        check_damage_rejected(good, path, gzip, false, [&] { (void)data::read_idx(path); });
    }
    // 17 bytes claiming 1024 x 1024 x 1024: the raw file's size says no before
    // any allocation; gzip'd, the payload grows only as it arrives. Both are
    // run in a child whose address space cannot hold 1 GiB more.
    const bytes_t claim = idx_bytes({1024, 1024, 1024}, 1);
    write_bytes(path, claim);
    CHECK(contains(rejection([&] { (void)data::read_idx(path); }),
                   "need 1073741824 bytes of data, found 1 (the file's size, checked before allocating)"));
    const std::string gz_path = s.file("t.idx.gz");
    write_gz(gz_path, claim);
    CHECK(contains(rejection([&] { (void)data::read_idx(gz_path); }), "need 1073741824 bytes of data, found 1"));
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
    std::fflush(nullptr);
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        long pages = 0;
        std::FILE* statm = std::fopen("/proc/self/statm", "r");
        if (!statm || std::fscanf(statm, "%ld", &pages) != 1) ::_exit(3);
        std::fclose(statm);
        const rlim_t limit = static_cast<rlim_t>(pages) * static_cast<rlim_t>(::sysconf(_SC_PAGESIZE)) + (256 << 20);
        const rlimit tight{limit, limit};
        if (::setrlimit(RLIMIT_AS, &tight) != 0) ::_exit(4);
        for (const std::string& p : {path, gz_path}) {
            try {
                (void)data::read_idx(p);
                ::_exit(5);
            } catch (const format_error&) {
            } catch (...) {
                ::_exit(6);
            }
        }
        ::_exit(0);
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
#endif
}

TEST_CASE("atomic_file: exclusive temporaries, planted links not followed, stale ones removed")
{
    scratch s;
    const std::string dest = s.file("out.ckpt"), target = s.file("victim");
    const bytes_t victim{std::byte{'v'}, std::byte{'!'}};
    write_bytes(target, victim);
    write_bytes(dest, {std::byte{'o'}, std::byte{'l'}, std::byte{'d'}});
    // The name the old writer used, and one of a dead writer's.
    fs::create_symlink(target, dest + ".tmp." + std::to_string(::getpid()));
    const pid_t dead = ::fork();
    if (dead == 0) ::_exit(0);
    REQUIRE(::waitpid(dead, nullptr, 0) == dead);
    const std::string stale_link = dest + ".tmp." + std::to_string(dead) + ".0badf00d";
    const std::string stale_file = dest + ".tmp." + std::to_string(dead) + ".12345678";
    const std::string live = dest + ".tmp." + std::to_string(::getpid()) + ".00000001";
    const std::string unrelated = dest + ".tmp.notapid";
    fs::create_symlink(target, stale_link);
    write_bytes(stale_file, victim);
    write_bytes(live, victim);
    write_bytes(unrelated, victim);

    const mode_t mask = ::umask(022);
    io::write_checkpoint_file(dest, {"sig", 7, {{"a", bytes_t(100, std::byte{42})}}});
    ::umask(mask);
    CHECK(read_bytes(target) == victim);
    CHECK(io::read_checkpoint_file(dest, "sig").step == 7);
    CHECK((fs::status(dest).permissions() & fs::perms::all) ==
          (fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read));
    CHECK(!fs::exists(fs::symlink_status(stale_link)));
    CHECK(!fs::exists(stale_file));
    CHECK(fs::exists(live));  // its writer (this process) is alive
    CHECK(fs::exists(unrelated));
    CHECK(fs::is_symlink(dest + ".tmp." + std::to_string(::getpid())));  // not a temporary of this scheme
    CHECK(fs::exists(target));
    std::size_t entries = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(s.path)) ++entries;
    CHECK(entries == 5);  // dest, victim, the planted link, live, unrelated: no temporary left
}

namespace {

// Runs body() in a child process that an alarm ends after `seconds` (a read
// that blocks fails the test instead of hanging it), its address space
// limited to what it has plus `slack` bytes when slack is nonzero: body's
// return value, 98 for an unexpected exception, minus the signal when killed.
template <class Body>
int in_child(unsigned seconds, std::size_t slack, Body body)
{
    std::fflush(nullptr);
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        ::alarm(seconds);
        if (slack != 0) {
            long pages = 0;
            std::FILE* statm = std::fopen("/proc/self/statm", "r");
            if (!statm || std::fscanf(statm, "%ld", &pages) != 1) ::_exit(96);
            std::fclose(statm);
            const rlim_t limit = static_cast<rlim_t>(pages) * static_cast<rlim_t>(::sysconf(_SC_PAGESIZE)) + slack;
            const rlimit tight{limit, limit};
            if (::setrlimit(RLIMIT_AS, &tight) != 0) ::_exit(97);
        }
        int code = 98;
        try {
            code = body();
        } catch (...) {
        }
        ::_exit(code);
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

using bn_net = nn::model<nn::Sequential<nn::Conv2d<2, 3, 3, 1, 1>, nn::BatchNorm2d<3>>, fp32, Shape<2, 4, 4, 2>, Host>;

std::vector<float> all_values(bn_net& net)
{
    std::vector<float> out;
    net.for_each_parameter([&](const std::string&, auto value, auto) {
        out.insert(out.end(), value.data(), value.data() + decltype(value)::shape::numel);
    });
    net.for_each_buffer([&](const std::string&, auto value) {
        out.insert(out.end(), value.data(), value.data() + decltype(value)::shape::numel);
    });
    return out;
}

// Sets element i of the parameter or buffer `name` of a host model.
void set_value(bn_net& net, const std::string& name, std::size_t i, float v)
{
    bool found = false;
    const auto set = [&](const std::string& n, auto value) {
        if (n == name) value.data()[i] = v, found = true;
    };
    net.for_each_parameter([&](const std::string& n, auto value, auto) { set(n, value); });
    net.for_each_buffer(set);
    REQUIRE(found);
}

}  // namespace

TEST_CASE("every reader refuses a FIFO, a device and a directory at once, with io_error naming it")
{
    scratch s;
    const std::string fifo = s.file("fifo");
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    net_t net(6);
    train::trainer t(net, train::adamw{}, train::constant_lr{1e-3f});
    prune::masks<net_t> m(net);
    using dataset = data::array_dataset<f32, i32, Shape<2>>;
    const std::vector<std::function<void(const std::string&)>> readers = {
        [](const std::string& p) { (void)io::read_npy(p); },
        [](const std::string& p) { (void)io::safetensors_file(p); },
        [&](const std::string& p) { (void)io::load_safetensors(net, p); },
        [](const std::string& p) { (void)io::read_checkpoint_file(p, ""); },
        [&](const std::string& p) { net.load(p); },
        [&](const std::string& p) { t.load(p); },
        [&](const std::string& p) { prune::load_sparse(p, m); },
        [](const std::string& p) { (void)data::read_idx(p); },
        [](const std::string& p) { (void)dataset::from_npy(p, p); },
    };
    for (const std::string& path : {fifo, std::string("/dev/null"), std::string("/dev/zero"), s.path.string()}) {
        CAPTURE(path);
        // A blocking open (a FIFO without a writer) would wait forever: the
        // child's alarm turns that into a failure.
        const int code = in_child(20, 0, [&] {
            for (std::size_t i = 0; i < readers.size(); ++i) {
                try {
                    readers[i](path);
                    return 10 + static_cast<int>(i);  // accepted
                } catch (const format_error&) {
                    return 30 + static_cast<int>(i);  // read, not refused
                } catch (const io_error& e) {
                    if (e.path() != path || !contains(e.what(), "not a regular file")) return 50 + static_cast<int>(i);
                }
            }
            return 0;
        });
        CHECK(code == 0);
    }
}

TEST_CASE("every load error names the file, checkpoint sections included")
{
    scratch s;
    net_t net(7);
    train::trainer t(net, train::adamw{}, train::constant_lr{1e-3f});
    prune::masks<net_t> m(net);
    const auto before = parameter_bits(net);
    const std::string bad = s.file("bad.file");
    struct kind {
        const char* what;
        std::string good;
        std::string signature;
        std::function<void()> load;
    };
    const std::vector<kind> kinds = {
        {"trainer", s.file("t.ckpt"), t.signature(), [&] { t.load(bad); }},
        {"model", s.file("m.ckpt"), net.signature(), [&] { net.load(bad); }},
        {"optimizer", s.file("o.ckpt"), t.optimizer().signature(), [&] { t.optimizer().load(bad); }},
        {"sparse", s.file("s.sparse"), "", [&] { prune::load_sparse(bad, m); }},
    };
    t.save(kinds[0].good);
    net.save(kinds[1].good);
    t.optimizer().save(kinds[2].good);
    prune::save_sparse(kinds[3].good, m, prune::sparse_format::csr);
    for (const kind& k : kinds) {
        CAPTURE(k.what);
        const io::checkpoint_contents good = io::read_checkpoint_contents(k.good, std::uint64_t{1} << 30);
        REQUIRE(!good.sections.empty());
        for (std::size_t i = 0; i < good.sections.size(); ++i)
            for (const bool rename : {true, false}) {
                io::checkpoint_contents c = good;
                if (rename) c.sections[i].name += "~";
                else c.sections[i].bytes.push_back(std::byte{0});
                io::write_checkpoint_file(bad, c);
                const std::string what = rejection(k.load);
                CAPTURE(what);
                CHECK(what.starts_with("tenet: " + bad + ": "));
                CHECK(contains(what, "\"" + good.sections[i].name + "\""));
                CHECK(parameter_bits(net) == before);
            }
        write_bytes(bad, {});  // and a file too short to be one
        CHECK(rejection(k.load).starts_with("tenet: " + bad + ": "));
    }
}

TEST_CASE("values no model holds are refused on load, naming file and tensor, the model unchanged")
{
    scratch s;
    bn_net good(8);
    train::trainer t(good, train::adamw{}, train::constant_lr{1e-3f});
    const std::vector<float> before = all_values(good);
    const std::string ckpt = s.file("bn.ckpt"), trainer_ckpt = s.file("bn-trainer.ckpt"), st = s.file("bn.safetensors");
    struct value_case {
        const char* name;
        std::size_t index;
        float value;
        const char* why;
    };
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    for (const value_case& c : {value_case{"1.running_var", 1, -0.25f, "a negative running variance"},
                                value_case{"1.running_var", 2, nan, "not finite"},
                                value_case{"1.running_mean", 0, inf, "not finite"},
                                value_case{"0.weight", 5, nan, "not finite"}}) {
        CAPTURE(c.name);
        CAPTURE(c.value);
        bn_net bad(9);
        train::trainer bad_trainer(bad, train::adamw{}, train::constant_lr{1e-3f});
        set_value(bad, c.name, c.index, c.value);
        bad.save(ckpt);
        bad_trainer.save(trainer_ckpt);
        io::save_safetensors(bad, st);
        const bool parameter = std::string(c.name) == "0.weight";  // (checkpoints check all parameters as one section)
        for (const auto& [path, load] : std::vector<std::pair<std::string, std::function<void()>>>{
                 {ckpt, [&] { good.load(ckpt); }},
                 {trainer_ckpt, [&] { t.load(trainer_ckpt); }},
                 {st, [&] { (void)io::load_safetensors(good, st); }},
                 {st, [&] { (void)io::load_safetensors(good, st, false); }}}) {
            CAPTURE(path);
            std::string what;
            try {
                load();
            } catch (const format_error& e) {
                what = e.what();
            }
            CAPTURE(what);
            CHECK(what.starts_with("tenet: " + path + ": "));
            CHECK(contains(what, parameter && path != st ? "section parameters holds inf/NaN" : c.name));
            if (!parameter || path == st) CHECK(contains(what, c.why));
            CHECK(all_values(good) == before);
        }
    }
    // A negative running mean is a value a model can have.
    bn_net other(10);
    set_value(other, "1.running_mean", 0, -3.0f);
    other.save(ckpt);
    io::save_safetensors(other, st);
    CHECK_NOTHROW(good.load(ckpt));
    CHECK(all_values(good) == all_values(other));
    bn_net third(11);
    CHECK_NOTHROW(io::load_safetensors(third, st));
    CHECK(all_values(third) == all_values(other));
}

TEST_CASE("a header claiming 2^60 elements is refused from the file's size, allocating nothing")
{
    scratch s;
    constexpr std::uint64_t huge = std::uint64_t{1} << 60;
    const std::string npy = s.file("huge.npy"), st = s.file("huge.safetensors"), ckpt = s.file("huge.ckpt");
    // npy: (2^60,) bytes, 4 present.
    bytes_t npy_bytes = io::detail::npy_header_bytes("|u1", std::vector<std::size_t>{huge});
    npy_bytes.resize(npy_bytes.size() + 4);
    write_bytes(npy, npy_bytes);
    // safetensors: a U8 tensor of 2^60 elements over 8 data bytes.
    std::string header = "{\"x\":{\"dtype\":\"U8\",\"shape\":[" + std::to_string(huge) + "],\"data_offsets\":[0," +
                         std::to_string(huge) + "]}}";
    header.append((8 - header.size() % 8) % 8, ' ');
    bytes_t st_bytes;
    for (int i = 0; i < 8; ++i) st_bytes.push_back(static_cast<std::byte>(std::uint64_t{header.size()} >> (8 * i)));
    for (const char c : header) st_bytes.push_back(static_cast<std::byte>(c));
    st_bytes.resize(st_bytes.size() + 8);
    write_bytes(st, st_bytes);
    // checkpoint: one section "a" whose length (bytes 42-49) says 2^60, the CRC right.
    io::write_checkpoint_file(ckpt, {"s", 0, {{"a", bytes_t(4)}}});
    bytes_t ckpt_bytes = read_bytes(ckpt);
    REQUIRE(ckpt_bytes[42] == std::byte{4});
    for (int i = 0; i < 8; ++i) ckpt_bytes[42 + i] = static_cast<std::byte>(huge >> (8 * i));
    write_bytes(ckpt, with_crc(ckpt_bytes));

    const std::vector<std::pair<std::function<void()>, std::string>> readers = {
        {[&] { (void)io::read_npy(npy); }, "needs 1152921504606846976 bytes, the file has 4 after the header"},
        {[&] { (void)io::safetensors_file(st); }, "past the 8 data bytes"},
        {[&] { (void)io::read_checkpoint_file(ckpt, "s"); }, "needs 1152921504606846976 bytes, 4 remain"},
    };
    const auto start = std::chrono::steady_clock::now();
    for (const auto& [read, why] : readers) {
        const std::string what = rejection(read);
        CAPTURE(what);
        CHECK(contains(what, why));
    }
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
    // Again where the address space cannot grow by 256 MiB: only format_errors.
    CHECK(in_child(60, std::size_t{256} << 20, [&] {
              for (const auto& [read, why] : readers) {
                  try {
                      read();
                      return 1;
                  } catch (const format_error&) {
                  }
              }
              return 0;
          }) == 0);
#endif
}
