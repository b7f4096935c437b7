// profile/: NVTX ranges seen by a stand-in tool, the host timer, and the
// progress bar's exact text.
//
// NVTX looks for a statically linked tool through InitializeInjectionNvtx2_fnptr;
// defining it here attaches the recorder below to the whole test binary (ranges
// other tests open are recorded too: each test looks only at its own).
#include <cstdint>
#define NVTX_STATIC_INJECTION_IMPL
extern "C" int (*InitializeInjectionNvtx2_fnptr)(const void* (*)(std::uint32_t));  // NVTX's own type, spelled out
#include <nvtx3/nvToolsExt.h>

#include <doctest/doctest.h>
#include <tenet/profile/profile.hpp>

#include <chrono>
#include <cctype>
#include <cmath>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

// ---- the stand-in NVTX tool

struct nvtx_record {
    std::vector<std::string> domains_created;
    std::vector<std::string> events;  // "push <domain> <name>" / "pop <domain>"
    int depth = 0;
};
nvtx_record recorded;
std::vector<nvtxDomainHandle_t> domain_handles;

std::string domain_name(nvtxDomainHandle_t handle)
{
    for (std::size_t i = 0; i < domain_handles.size(); ++i)
        if (domain_handles[i] == handle) return recorded.domains_created[i];
    return "<unknown domain>";
}

nvtxDomainHandle_t record_domain_create(const char* name)
{
    recorded.domains_created.push_back(name);
    // Distinct non-null handles; the tool owns their meaning.
    domain_handles.push_back(reinterpret_cast<nvtxDomainHandle_t>(domain_handles.size() + 1));
    return domain_handles.back();
}

int record_push(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attributes)
{
    const bool ascii = attributes->messageType == NVTX_MESSAGE_TYPE_ASCII;
    recorded.events.push_back("push " + domain_name(domain) + " " + (ascii ? attributes->message.ascii : "<not ascii>"));
    return recorded.depth++;
}

int record_pop(nvtxDomainHandle_t domain)
{
    recorded.events.push_back("pop " + domain_name(domain));
    return --recorded.depth;
}

int attach_recorder(NvtxGetExportTableFunc_t get_export_table)
{
    const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
    NvtxFunctionTable table = nullptr;
    unsigned int size = 0;
    if (!callbacks || !callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size)) return 0;
    *table[NVTX_CBID_CORE2_DomainCreateA] = reinterpret_cast<NvtxFunctionPointer>(&record_domain_create);
    *table[NVTX_CBID_CORE2_DomainRangePushEx] = reinterpret_cast<NvtxFunctionPointer>(&record_push);
    *table[NVTX_CBID_CORE2_DomainRangePop] = reinterpret_cast<NvtxFunctionPointer>(&record_pop);
    return 1;
}

// ---- progress text helpers

// The clock-dependent times after "ETA " and " in " become "?".
std::string mask_times(std::string text)
{
    for (const std::string key : {"ETA ", " in "}) {
        for (std::size_t at = text.find(key); at != std::string::npos; at = text.find(key, at + 1)) {
            const std::size_t from = at + key.size();
            std::size_t to = from;
            while (to < text.size() && (std::isdigit(static_cast<unsigned char>(text[to])) || text[to] == ':')) ++to;
            if (to > from) text.replace(from, to - from, "?");
        }
    }
    return text;
}

std::vector<std::string> split_lines(const std::string& text)
{
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

// m:ss or h:mm:ss from the float64 value, rounded half away from zero.
std::string reference_duration(double seconds)
{
    const double total = std::floor(seconds + 0.5);
    const auto h = static_cast<long long>(std::floor(total / 3600));
    const auto m = static_cast<long long>(std::floor((total - 3600.0 * h) / 60));
    const auto s = static_cast<long long>(total - 3600.0 * h - 60.0 * m);
    const auto two = [](long long v) { return (v < 10 ? "0" : "") + std::to_string(v); };
    return h > 0 ? std::to_string(h) + ":" + two(m) + ":" + two(s) : std::to_string(m) + ":" + two(s);
}

}  // namespace

extern "C" {
NvtxInitializeInjectionNvtxFunc_t InitializeInjectionNvtx2_fnptr = &attach_recorder;
}

TEST_CASE("scoped_range pushes and pops nested ranges in the tenet domain")
{
    recorded.events.clear();
    {
        tenet::profile::scoped_range epoch("epoch");
        {
            tenet::profile::scoped_range forward("forward");
            tenet::profile::scoped_range matmul("matmul");
        }
        tenet::profile::scoped_range backward("backward");
    }
    CHECK(recorded.domains_created == std::vector<std::string>{"tenet"});
    CHECK(recorded.events == std::vector<std::string>{"push tenet epoch", "push tenet forward", "push tenet matmul",
                                                      "pop tenet", "pop tenet", "push tenet backward", "pop tenet",
                                                      "pop tenet"});
    CHECK(recorded.depth == 0);
}

TEST_CASE("host_timer measures wall-clock seconds from construction or restart")
{
    tenet::profile::host_timer timer;
    const double first = timer.seconds();
    CHECK(first >= 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    const double later = timer.seconds();
    CHECK(later >= 0.03);
    CHECK(later < 5);
    timer.restart();
    CHECK(timer.seconds() < later);
}

TEST_CASE("format_duration: m:ss under an hour, h:mm:ss above, rounded to the second")
{
    using tenet::profile::format_duration;
    CHECK(format_duration(0) == "0:00");
    CHECK(format_duration(0.49) == "0:00");
    CHECK(format_duration(0.5) == "0:01");
    CHECK(format_duration(12) == "0:12");
    CHECK(format_duration(59.6) == "1:00");
    CHECK(format_duration(754) == "12:34");
    CHECK(format_duration(3599.4) == "59:59");
    CHECK(format_duration(3599.5) == "1:00:00");
    CHECK(format_duration(3723) == "1:02:03");
    CHECK(format_duration(36000 * 10 + 61) == "100:01:01");
    CHECK(format_duration(-1) == "-:--");
    CHECK(format_duration(std::nan("")) == "-:--");
    CHECK(format_duration(INFINITY) == "-:--");
    std::mt19937_64 rng(5);
    std::uniform_real_distribution<double> seconds(0, 400000);
    for (int i = 0; i < 2000; ++i) {
        const double t = seconds(rng);
        CAPTURE(t);
        CHECK(format_duration(t) == reference_duration(t));
    }
}

TEST_CASE("eta_seconds: the remaining steps at the pace so far")
{
    using tenet::profile::eta_seconds;
    CHECK(eta_seconds(10.0, 5, 20) == 30.0);
    CHECK(eta_seconds(3.0, 1, 235) == 702.0);
    CHECK(eta_seconds(7.5, 235, 235) == 0.0);
    CHECK(eta_seconds(7.5, 300, 235) == 0.0);
    CHECK(std::isnan(eta_seconds(1.0, 0, 235)));
}

TEST_CASE("format_progress and format_progress_final: exact lines")
{
    using tenet::profile::format_progress;
    using tenet::profile::format_progress_final;
    CHECK(format_progress("epoch 1", 123, 235, 0.43214, 12345.4, 12) ==
          "epoch 1 [==========>         ] 123/235 loss 0.4321 12345 samples/s ETA 0:12");
    CHECK(format_progress("epoch 1", 0, 235, 2.302585, 0, std::nan("")) ==
          "epoch 1 [>                   ]   0/235 loss 2.3026 0 samples/s ETA -:--");
    CHECK(format_progress("e", 7, 9, 1.0, 99.5, 3725) ==
          "e [===============>    ] 7/9 loss 1.0000 100 samples/s ETA 1:02:05");
    CHECK(format_progress("e", 235, 235, 0.1, 1, 0) ==
          "e [====================] 235/235 loss 0.1000 1 samples/s ETA 0:00");
    CHECK(format_progress("e", 500, 235, 0.1, 1, 0) ==
          "e [====================] 235/235 loss 0.1000 1 samples/s ETA 0:00");
    CHECK(format_progress("e", 0, 0, 0.1, 1, 0) == "e [====================] 0/0 loss 0.1000 1 samples/s ETA 0:00");
    CHECK(format_progress_final("epoch 2", 235, 0.25, 9000.2, 65) ==
          "epoch 2 [====================] 235/235 loss 0.2500 9000 samples/s in 1:05");

    std::mt19937_64 rng(9);
    for (int i = 0; i < 500; ++i) {
        const std::size_t total = 1 + rng() % 100000, done = rng() % (total + 1);
        const std::string line = format_progress("x", done, total, 0.5, 1, 1);
        const std::size_t filled = static_cast<std::size_t>(std::floor(20.0 * static_cast<double>(done) / total));
        std::string bar = std::string(filled, '=') + (filled < 20 ? ">" : "");
        bar += std::string(20 - std::min<std::size_t>(bar.size(), 20), ' ');
        std::string done_text = std::to_string(done);
        done_text = std::string(std::to_string(total).size() - done_text.size(), ' ') + done_text;
        CAPTURE(done);
        CAPTURE(total);
        CHECK(line.rfind("x [" + bar + "] " + done_text + "/" + std::to_string(total) + " loss", 0) == 0);
    }
}

TEST_CASE("progress_bar without a terminal: a line per tenth, then the final line")
{
    std::mt19937_64 rng(21);
    std::uniform_real_distribution<double> loss(0.1, 2.0);
    for (std::size_t total : {235u, 3u, 10u}) {
        std::ostringstream out;
        tenet::profile::progress_bar bar(out, "epoch 4", total);  // a string stream is no terminal
        std::vector<std::string> expected;
        std::size_t next_tenth = 1;
        for (std::size_t done = 1; done <= total; ++done) {
            const double l = loss(rng), rate = 1000 + done;
            bar.update(done, l, rate);
            // The first step that reaches tenth k is ceil(k * total / 10).
            if (done < total && done * 10 >= next_tenth * total) {
                expected.push_back(mask_times(tenet::profile::format_progress("epoch 4", done, total, l, rate, 0)));
                next_tenth = done * 10 / total + 1;
            }
        }
        bar.finish(0.125, 4321);
        expected.push_back(mask_times(tenet::profile::format_progress_final("epoch 4", total, 0.125, 4321, 0)));
        CAPTURE(total);
        CHECK(out.str().find('\r') == std::string::npos);
        CHECK(split_lines(mask_times(out.str())) == expected);
        CHECK(expected.size() <= 10);
    }
}

TEST_CASE("progress_bar on a terminal redraws one line with carriage returns")
{
    std::ostringstream out;
    tenet::profile::progress_bar bar(out, "ep", 5, /*redraw*/ true);
    bar.update(1, 0.5, 123456);
    bar.update(2, 0.25, 7);  // five characters shorter: spaces cover the rest
    bar.update(3, 0.125, 70);
    bar.finish(0.0625, 80);
    const std::string line1 = tenet::profile::format_progress("ep", 1, 5, 0.5, 123456, 0);
    const std::string line2 = tenet::profile::format_progress("ep", 2, 5, 0.25, 7, 0);
    const std::string line3 = tenet::profile::format_progress("ep", 3, 5, 0.125, 70, 0);
    const std::string last = tenet::profile::format_progress_final("ep", 5, 0.0625, 80, 0);
    REQUIRE(last.size() + 1 == line3.size());  // "in" is one character shorter than "ETA"
    CHECK(mask_times(out.str()) == mask_times("\r" + line1 + "\r" + line2 + std::string(5, ' ') + "\r" + line3 + "\r" +
                                              last + " " + "\n"));
}

TEST_CASE("optimization_notice: the exact line once, only for unoptimized code, from any number of threads")
{
    const std::string line = "tenet: compiled without optimization: host loops run about 20x slower\n";
    tenet::profile::optimization_notice notice;
    std::ostringstream out;
    CHECK_FALSE(notice.report(out, false));  // optimized code: nothing, and the notice stays unwritten
    CHECK(out.str().empty());
    CHECK(notice.report(out, true));
    CHECK_FALSE(notice.report(out, true));
    CHECK(out.str() == line);

    tenet::profile::optimization_notice shared;
    std::vector<std::ostringstream> outs(8);
    std::vector<int> wrote(outs.size());
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < outs.size(); ++i)
        threads.emplace_back([&, i] { wrote[i] = shared.report(outs[i], true); });
    for (auto& t : threads) t.join();
    int writers = 0;
    for (std::size_t i = 0; i < outs.size(); ++i) {
        writers += wrote[i];
        CHECK(outs[i].str() == (wrote[i] ? line : ""));
    }
    CHECK(writers == 1);
}
