// The API reference check: every public name tenet's headers declare must
// appear in docs/API.md (as `name`, in a table row or a heading).
//
//   tenet_public_names ROOT                 lists the public names, one per line, with their header
//   tenet_public_names ROOT docs/API.md     fails naming each one the reference misses
//
// A public name is one declared at namespace scope in tenet or a namespace
// inside it other than `detail` and `internal` (classes, structs, enums, concepts, aliases,
// variables, functions; operators and specialisations count under their
// name). The scan reads the headers as text: comments, string and character
// literals and preprocessor lines are dropped, braces are tracked, and
// namespace scopes are told from class and function bodies.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

std::string read_text(const fs::path& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + path.string());
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// The code without comments, literals, attributes and preprocessor lines
// (each replaced by a space, so tokens stay apart).
std::string code_only(const std::string& text)
{
    std::string out;
    out.reserve(text.size());
    bool line_start = true;
    for (std::size_t i = 0; i < text.size();) {
        const char c = text[i];
        if (line_start && c == '#') {  // a directive, with its continuation lines
            while (i < text.size() && !(text[i] == '\n' && text[i - 1] != '\\')) ++i;
            continue;
        }
        if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
            while (i < text.size() && text[i] != '\n') ++i;
            continue;
        }
        if (c == '/' && i + 1 < text.size() && text[i + 1] == '*') {
            const std::size_t end = text.find("*/", i + 2);
            i = end == std::string::npos ? text.size() : end + 2;
            out += ' ';
            continue;
        }
        if (c == '"' || (c == '\'' && !(i > 0 && std::isxdigit(static_cast<unsigned char>(text[i - 1]))))) {
            // a literal (a ' between digits is a digit separator)
            for (++i; i < text.size() && text[i] != c; ++i)
                if (text[i] == '\\') ++i;
            ++i;
            out += ' ';
            continue;
        }
        if (c == '[' && text.compare(i, 2, "[[") == 0) {  // an attribute: [[nodiscard]] f() declares f
            const std::size_t end = text.find("]]", i + 2);
            i = end == std::string::npos ? text.size() : end + 2;
            out += ' ';
            continue;
        }
        if (c == '\n') line_start = true;
        else if (!std::isspace(static_cast<unsigned char>(c))) line_start = false;
        out += c;
        ++i;
    }
    return out;
}

bool identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

std::vector<std::string> tokens(const std::string& s)
{
    std::vector<std::string> out;
    for (std::size_t i = 0; i < s.size();) {
        if (std::isspace(static_cast<unsigned char>(s[i]))) {
            ++i;
        } else if (identifier_char(s[i])) {
            std::size_t j = i;
            while (j < s.size() && identifier_char(s[j])) ++j;
            out.push_back(s.substr(i, j - i));
            i = j;
        } else if (s.compare(i, 2, "::") == 0 || s.compare(i, 2, "->") == 0) {
            out.push_back(s.substr(i, 2));
            i += 2;
        } else {
            out.push_back(std::string(1, s[i]));
            ++i;
        }
    }
    return out;
}

const std::set<std::string> not_names = {"requires", "decltype", "sizeof", "noexcept", "alignof", "static_assert",
                                         "operator", "explicit", "alignas", "typename", "template", "return"};

// The first token after any template <...> headers (nested angles;
// parentheses hide comparisons); open says whether the last header is still
// unclosed at the end of t.
std::size_t after_template_headers(const std::vector<std::string>& t, bool* open = nullptr)
{
    std::size_t i = 0;
    if (open) *open = false;
    while (i < t.size() && t[i] == "template") {
        ++i;
        int angle = 0, paren = 0;
        for (; i < t.size(); ++i) {
            if (t[i] == "(") ++paren;
            else if (t[i] == ")") --paren;
            else if (paren == 0 && t[i] == "<") ++angle;
            else if (paren == 0 && t[i] == ">" && --angle == 0) {
                ++i;
                break;
            }
        }
        if (open && angle > 0) *open = true;
    }
    return i;
}

// The name a namespace-scope declaration (its text up to `{`, `;` or `=`)
// declares, or "" (a static_assert, an operator, a using-directive).
std::string declared_name(const std::vector<std::string>& t)
{
    std::size_t i = after_template_headers(t);
    if (i >= t.size()) return "";
    if (t[i] == "static_assert" || t[i] == "extern" || t[i] == "namespace") return "";
    if (t[i] == "using") {
        if (i + 1 < t.size() && t[i + 1] == "namespace") return "";
        if (i + 2 < t.size() && t[i + 2] == "=") return t[i + 1];
        return t.back() == ";" ? t[t.size() - 2] : t.back();  // using a::b;
    }
    if (t[i] == "concept" && i + 1 < t.size()) return t[i + 1];
    for (std::size_t k = i; k < t.size(); ++k)
        if ((t[k] == "struct" || t[k] == "class" || t[k] == "union" || t[k] == "enum") && k == i) {
            std::size_t n = k + 1;
            if (n < t.size() && (t[n] == "class" || t[n] == "struct")) ++n;  // enum class
            while (n < t.size() && (t[n] == "alignas" || t[n] == "[")) ++n;
            return n < t.size() && identifier_char(t[n][0]) ? t[n] : "";
        }
    // A function or a variable: the identifier before the first ( or = or {
    // outside parentheses and template arguments.
    int angle = 0, paren = 0;
    std::string last;
    for (std::size_t k = i; k < t.size(); ++k) {
        const std::string& x = t[k];
        if (x == "operator" && paren == 0) return "";
        if (x == "(") {
            if (paren == 0 && angle == 0 && !last.empty() && !not_names.count(last)) return last;
            ++paren;
        } else if (x == ")") {
            --paren;
        } else if (paren == 0 && x == "<") {
            ++angle;
        } else if (paren == 0 && x == ">" && angle > 0) {
            --angle;
        } else if (paren == 0 && angle == 0 && (x == "=" || x == "{" || x == ";" || x == "[")) {
            return not_names.count(last) ? "" : last;
        } else if (paren == 0 && angle == 0 && identifier_char(x[0]) && !std::isdigit(static_cast<unsigned char>(x[0]))) {
            last = x;
        }
    }
    return not_names.count(last) ? "" : last;
}

// Whether the text before a `{` declares a function (its body ends the
// declaration) rather than a class, enum, initializer or requires-expression.
bool opens_function_body(const std::vector<std::string>& t)
{
    std::size_t i = after_template_headers(t);
    if (i < t.size() && (t[i] == "struct" || t[i] == "class" || t[i] == "union" || t[i] == "enum")) return false;
    int paren = 0;
    bool parameters = false;
    for (; i < t.size(); ++i) {
        if (t[i] == "operator") return true;  // operator<=, operator= ... are functions
        if (t[i] == "=" && paren == 0) return false;  // an initializer, a concept's requires-expression
        if (t[i] == "(") ++paren;
        if (t[i] == ")" && --paren == 0) parameters = true;
    }
    return parameters;
}

// Whether a `{` after this text is inside the declaration rather than a
// body: in an unclosed template header (`template <options O = options{}>`)
// or parameter list (`f(options o = options{})`).
bool brace_inside_declaration(const std::vector<std::string>& t)
{
    int paren = 0;
    for (const std::string& x : t) {
        if (x == "(") ++paren;
        else if (x == ")") --paren;
    }
    bool open_header = false;
    after_template_headers(t, &open_header);
    return paren > 0 || open_header;
}

struct scope {
    bool is_namespace;
    bool is_detail;
    bool in_tenet;  // tenet or a namespace inside it
};

// A table of generator-macro uses at namespace scope (`TENET_UNARY_FUNCTION(
// abs, absolute)` on its own line) declares its first argument: each use
// becomes `int name;` (nothing for an operator).
std::string expand_generators(const std::string& code)
{
    static const std::regex use(R"((^|\n)[ \t]*TENET_[A-Z0-9_]+\([ \t]*([^,()]*?)[ \t]*(,[^()]*)?\))");
    std::string out;
    std::size_t last = 0;
    for (auto m = std::sregex_iterator(code.begin(), code.end(), use); m != std::sregex_iterator(); ++m) {
        out.append(code, last, static_cast<std::size_t>(m->position()) - last);
        const std::string name = (*m)[2];
        out += (*m)[1].str() + (!name.empty() && identifier_char(name[0]) && name.find(' ') == std::string::npos &&
                                        name.rfind("operator", 0) != 0
                                    ? " int " + name + "; "
                                    : " ");
        last = static_cast<std::size_t>(m->position() + m->length());
    }
    out.append(code, last);
    return out;
}

// Public names declared in one header.
std::set<std::string> public_names(const std::string& text)
{
    const std::string code = expand_generators(code_only(text));
    std::set<std::string> names;
    std::vector<scope> scopes;
    std::string statement;  // text since the last { } ; at this level
    bool continuing = false;  // after a class, initializer or requires body: until its `;`
    const auto public_here = [&] {
        for (const scope& s : scopes)
            if (!s.is_namespace || s.is_detail) return false;
        return !scopes.empty() && scopes.back().in_tenet;
    };
    for (std::size_t i = 0; i < code.size(); ++i) {
        const char c = code[i];
        if (c != '{' && c != '}' && c != ';') {
            statement += c;
            continue;
        }
        const std::vector<std::string> t = tokens(statement + c);
        if (c == '{' && brace_inside_declaration(tokens(statement))) {
            // a braced initializer within the declaration: keep it as text
            int depth = 0;
            for (; i < code.size(); ++i) {
                statement += code[i];
                if (code[i] == '{') ++depth;
                else if (code[i] == '}' && --depth == 0) break;
            }
            continue;
        }
        if (c == '{') {
            const bool ns = !t.empty() && (t[0] == "namespace" || (t.size() > 1 && t[0] == "inline" && t[1] == "namespace"));
            bool detail = false;
            for (const std::string& x : t)
                if (x == "detail" || x == "internal") detail = true;  // neither is user API
            if (!ns) {
                // A body: a class, an enum, a function, an initializer or a
                // requires-expression. Name its declaration, skip the body;
                // all but a function's go on to a `;` that ends them.
                if (public_here() && !continuing) {
                    const std::string name = declared_name(t);
                    if (!name.empty()) names.insert(name);
                }
                int depth = 1;
                for (++i; i < code.size() && depth > 0; ++i) {
                    if (code[i] == '{') ++depth;
                    else if (code[i] == '}') --depth;
                }
                --i;  // at the closing brace
                continuing = continuing || !opens_function_body(t);
                statement.clear();
                continue;
            }
            const std::size_t first = t[0] == "inline" ? 2 : 1;  // the first name after `namespace`
            const bool tenet = (!scopes.empty() && scopes.back().in_tenet) ||
                               (scopes.empty() && first < t.size() && t[first] == "tenet");  // not foo::tenet
            scopes.push_back({ns, detail, tenet});
        } else if (c == '}') {
            if (!scopes.empty()) scopes.pop_back();
        } else if (continuing) {  // the `;` that ends a declaration with a body
            continuing = false;
        } else if (public_here()) {
            const std::string name = declared_name(t);
            if (!name.empty()) names.insert(name);
        }
        statement.clear();
    }
    return names;
}

}  // namespace

int main(int argc, char** argv)
{
    if (argc < 2) {
        std::cerr << "usage: tenet_public_names ROOT [API.md]\n";
        return 2;
    }
    const fs::path root = argv[1];
    std::map<std::string, std::string> where;  // name -> first header declaring it
    std::vector<fs::path> headers;
    for (const auto& entry : fs::recursive_directory_iterator(root / "include" / "tenet"))
        if (entry.path().extension() == ".hpp") headers.push_back(entry.path());
    std::sort(headers.begin(), headers.end());
    for (const fs::path& h : headers)
        for (const std::string& name : public_names(read_text(h)))
            where.emplace(name, fs::relative(h, root / "include").string());
    if (argc == 2) {
        for (const auto& [name, header] : where) std::cout << name << " " << header << "\n";
        return 0;
    }
    const std::string reference = read_text(argv[2]);
    std::size_t missing = 0;
    for (const auto& [name, header] : where)
        if (reference.find("`" + name + "`") == std::string::npos && reference.find("`" + name + "<") == std::string::npos &&
            reference.find("`" + name + "(") == std::string::npos) {
            std::cerr << "tenet: " << argv[2] << " does not document " << name << " (" << header << ")\n";
            ++missing;
        }
    std::cout << where.size() << " public names, " << missing << " missing from " << argv[2] << "\n";
    return missing == 0 ? 0 : 1;
}
