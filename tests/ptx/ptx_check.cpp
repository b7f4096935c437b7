// ptx_check: asserts what the compiler made of a .cu file.
//
//   ptx_check --source f.cu --ptx f.ptx --ptxas-log f.txt [--expect "LINE"]...
//
// Expectations come from the source's "// PTX-CHECK: " lines and --expect:
//   kernels=N                       number of .entry kernels in the PTX, not
//                                   counting those named in "// PTX-IGNORE: "
//                                   lines (e.g. CUB's never-launched EmptyKernel)
//   kernel=NAME key<op>N ...        the one kernel whose name contains NAME
// with op one of = <= >= and key one of
//   ld.global  ld.global.nc  ld.global.v1 .v2 .v4 .v8   (loads; v1 = scalar)
//   st.global  st.global.v1 .v2 .v4 .v8                 (stores)
//   spills (bytes of spill stores + loads)  stack (bytes)  registers
// It prints every kernel's counts, then each expectation's verdict.
#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct kernel_report {
    std::string name;
    std::map<std::string, long> counts;
};

std::string read_file(const std::string& path)
{
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot read " + path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

std::string vector_width(const std::string& opcode)
{
    for (const char* width : {".v2", ".v4", ".v8"})
        if (opcode.find(width) != std::string::npos) return width;
    return ".v1";
}

void count_instruction(const std::string& line, std::map<std::string, long>& counts)
{
    std::istringstream words(line);
    std::string opcode;
    words >> opcode;
    if (!opcode.empty() && opcode[0] == '@') words >> opcode;  // predicated: @%p1 ld.global...
    for (const char* kind : {"ld.global", "st.global"}) {
        if (opcode.rfind(kind, 0) != 0) continue;
        ++counts[kind];
        ++counts[kind + vector_width(opcode)];
        if (opcode.rfind("ld.global.nc", 0) == 0) ++counts["ld.global.nc"];
    }
}

std::vector<kernel_report> parse_ptx(const std::string& ptx)
{
    std::vector<kernel_report> kernels;
    std::istringstream lines(ptx);
    std::string line;
    const std::regex entry(R"(\.entry\s+([A-Za-z0-9_$]+))");
    int depth = 0;
    bool in_kernel = false;
    while (std::getline(lines, line)) {
        std::smatch match;
        if (!in_kernel && std::regex_search(line, match, entry)) {
            kernels.push_back({match[1].str(), {}});
            in_kernel = true;
            depth = 0;
            continue;
        }
        if (!in_kernel) continue;
        for (char c : line) {
            if (c == '{') ++depth;
            if (c == '}') --depth;
        }
        count_instruction(line, kernels.back().counts);
        if (depth == 0 && line.find('}') != std::string::npos) in_kernel = false;
    }
    return kernels;
}

void parse_ptxas_log(const std::string& log, std::vector<kernel_report>& kernels)
{
    const std::regex properties(R"(Function properties for ([A-Za-z0-9_$]+))");
    const std::regex frame(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
    const std::regex used(R"(Compiling entry function '([A-Za-z0-9_$]+)'|Used (\d+) registers)");
    std::istringstream lines(log);
    std::string line, current, compiling;
    while (std::getline(lines, line)) {
        std::smatch match;
        if (std::regex_search(line, match, properties)) current = match[1].str();
        if (std::regex_search(line, match, frame)) {
            for (auto& k : kernels)
                if (k.name == current) {
                    k.counts["stack"] = std::stol(match[1].str());
                    k.counts["spills"] = std::stol(match[2].str()) + std::stol(match[3].str());
                }
        }
        if (std::regex_search(line, match, used)) {
            if (match[1].matched) compiling = match[1].str();
            else
                for (auto& k : kernels)
                    if (k.name == compiling) k.counts["registers"] = std::stol(match[2].str());
        }
    }
}

bool compare(long actual, const std::string& op, long expected)
{
    if (op == "<=") return actual <= expected;
    if (op == ">=") return actual >= expected;
    return actual == expected;
}

// Checks one expectation line; prints its verdict.
bool check(const std::string& expectation, const std::vector<kernel_report>& kernels)
{
    const std::regex term(R"(([a-z0-9.]+)(<=|>=|=)([A-Za-z0-9_$]+))");
    std::vector<std::smatch> terms;
    for (std::sregex_iterator it(expectation.begin(), expectation.end(), term), end; it != end; ++it)
        terms.push_back(*it);
    if (terms.empty()) {
        std::printf("FAIL  %s: not an expectation\n", expectation.c_str());
        return false;
    }
    if (terms[0][1] == "kernels") {
        const bool ok = compare(static_cast<long>(kernels.size()), terms[0][2], std::stol(terms[0][3]));
        std::printf("%s  kernels: %zu (expected %s%s)\n", ok ? "ok  " : "FAIL", kernels.size(),
                    terms[0][2].str().c_str(), terms[0][3].str().c_str());
        return ok;
    }
    if (terms[0][1] != "kernel") {
        std::printf("FAIL  %s: must start with kernels= or kernel=\n", expectation.c_str());
        return false;
    }
    const kernel_report* found = nullptr;
    int matches = 0;
    for (const auto& k : kernels)
        if (k.name.find(terms[0][3].str()) != std::string::npos) {
            found = &k;
            ++matches;
        }
    if (matches != 1) {
        std::printf("FAIL  kernel %s: %d kernels match (expected one)\n", terms[0][3].str().c_str(), matches);
        return false;
    }
    bool all_ok = true;
    for (std::size_t i = 1; i < terms.size(); ++i) {
        const std::string key = terms[i][1];
        const auto it = found->counts.find(key);
        const long actual = it == found->counts.end() ? 0 : it->second;
        const bool ok = compare(actual, terms[i][2], std::stol(terms[i][3]));
        std::printf("%s  kernel %s: %s = %ld (expected %s%s)\n", ok ? "ok  " : "FAIL", terms[0][3].str().c_str(),
                    key.c_str(), actual, terms[i][2].str().c_str(), terms[i][3].str().c_str());
        all_ok = all_ok && ok;
    }
    return all_ok;
}

}  // namespace

int main(int argc, char** argv)
{
    std::string source, ptx, log;
    std::vector<std::string> expectations;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string flag = argv[i], value = argv[i + 1];
        if (flag == "--source") source = value;
        else if (flag == "--ptx") ptx = value;
        else if (flag == "--ptxas-log") log = value;
        else if (flag == "--expect") expectations.push_back(value);
        else {
            std::fprintf(stderr, "ptx_check: unknown flag %s\n", flag.c_str());
            return 2;
        }
    }
    try {
        std::istringstream source_lines(read_file(source));
        std::string line;
        const std::string marker = "// PTX-CHECK: ", ignore_marker = "// PTX-IGNORE: ";
        std::vector<std::string> ignored;
        while (std::getline(source_lines, line)) {
            if (line.rfind(marker, 0) == 0) expectations.push_back(line.substr(marker.size()));
            if (line.rfind(ignore_marker, 0) == 0) ignored.push_back(line.substr(ignore_marker.size()));
        }
        if (expectations.empty()) throw std::runtime_error(source + " has no PTX-CHECK lines");

        auto kernels = parse_ptx(read_file(ptx));
        std::erase_if(kernels, [&](const kernel_report& k) {
            for (const auto& name : ignored)
                if (k.name.find(name) != std::string::npos) {
                    std::printf("ignored kernel %s\n", k.name.c_str());
                    return true;
                }
            return false;
        });
        parse_ptxas_log(read_file(log), kernels);
        for (const auto& k : kernels) {
            std::printf("kernel %s:", k.name.c_str());
            for (const auto& [key, value] : k.counts) std::printf(" %s=%ld", key.c_str(), value);
            std::printf("\n");
        }
        bool ok = true;
        for (const auto& e : expectations) ok = check(e, kernels) && ok;
        return ok ? 0 : 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "ptx_check: %s\n", e.what());
        return 2;
    }
}
