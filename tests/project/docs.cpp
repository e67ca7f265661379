// Docs that cannot rot: README.md and every docs/*.md are read here and checked against the tree
// they describe (the convention is spelled out in docs/README.md, "Keeping the docs true").
//
//   paths      every repo path in an inline code span or a shell block (`core/ops/matmul.cpp`,
//              `bench/gemm/`) exists (or, like `bench/bench_ddp`, names a program by its source); placeholders such as `core/ops/<op>.cpp` are skipped, and
//              so are paths under a `<!-- new: PATH -->` the page declares (files an exercise
//              asks the reader to create);
//   links      every relative Markdown link points at a file, and every #anchor at a heading;
//   functions  every `name()` / `ns::name()` / `x.name()` span names an identifier that some
//              source file calls, declares or defines (followed by '(' or '<');
//   excerpts   a fenced block right after `<!-- quote: PATH -->` is a verbatim copy of lines of
//              PATH: either one contiguous run, or runs separated by a line holding only `...`,
//              found in that order; a run may be shifted left as a whole (dedented);
//   commands   every `build*/.../PROGRAM` or `scripts/NAME` a doc tells the reader to run exists:
//              a script is an executable file; a program is an executable target of this project,
//              and when this build has it, `PROGRAM --help` exits 0 and lists every --flag the doc
//              passes to it (tests/CMakeLists.txt hands the programs over in EMBER_DOC_PROGRAMS).
//              ember_tests test specs ("[planted]", a test's name) must name tags or tests that
//              exist in tests/.
// The last test case feeds the checker a document with one rot of each kind and expects every
// one to be reported, so the checker itself cannot silently go lenient.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

namespace fs = std::filesystem;

namespace {

const fs::path kRoot = EMBER_SOURCE_DIR;

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::string line;
  std::istringstream in(text);
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

std::string rstrip(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

std::string trim(const std::string& s) {
  size_t b = 0;
  while (b < s.size() && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  return rstrip(s.substr(b));
}

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

std::vector<std::string> words(const std::string& s) {
  std::vector<std::string> w;
  std::istringstream in(s);
  std::string t;
  while (in >> t) w.push_back(t);
  return w;
}

// ---- one Markdown file, cut into what the checks look at --------------------------------------

struct Block {
  int line = 0;          // 1-based line of the opening fence
  std::string lang;      // "sh", "cpp", ...
  std::string quote;     // PATH of a <!-- quote: PATH --> right above it, else ""
  std::vector<std::string> body;
};

struct Span {
  int line = 0;
  std::string text;
  bool pytorch = false;  // in the first column of a table headed "PyTorch": PyTorch's names
};

struct Doc {
  std::string name;  // repo-relative, e.g. "docs/tour.md"
  std::vector<Block> blocks;
  std::vector<Span> spans;  // inline code outside fenced blocks
  std::vector<Span> links;  // relative link targets, e.g. "tour.md#the-tape"
  std::set<std::string> anchors;
  std::vector<std::string> created;   // <!-- new: PATH -->: paths the reader is told to create
  std::vector<std::string> problems;  // malformed markers
};

bool is_created(const Doc& d, const std::string& path) {
  for (const std::string& c : d.created)
    if (path == c || starts_with(path, c + "/")) return true;
  return false;
}

// GitHub's anchor for a heading: lower case; letters, digits, '-', '_' and spaces kept (spaces
// become '-'), everything else dropped.
std::string anchor_of(const std::string& heading) {
  std::string a;
  for (char c : heading) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '-' || c == '_') a += static_cast<char>(std::tolower(u));
    else if (c == ' ') a += '-';
    else if (u >= 0x80) a += c;  // keep UTF-8 letters as GitHub does
  }
  return a;
}

Doc parse(const std::string& name, const std::string& text) {
  Doc d;
  d.name = name;
  const std::vector<std::string> lines = split_lines(text);
  std::string pending_quote;
  int pending_line = 0;
  bool pytorch_table = false;  // inside a table whose first column is headed "PyTorch..."
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string t = trim(lines[i]);
    const int ln = static_cast<int>(i) + 1;
    if (!starts_with(t, "|")) pytorch_table = false;
    else if (starts_with(t, "| PyTorch")) pytorch_table = true;
    // Where the first cell of a table row ends (its second unescaped '|').
    const size_t first_cell_end = starts_with(t, "|") ? lines[i].find('|', lines[i].find('|') + 1)
                                                      : std::string::npos;
    if (starts_with(t, "```")) {
      Block b;
      b.line = ln;
      b.lang = trim(t.substr(3));
      b.quote = pending_quote;
      pending_quote.clear();
      for (++i; i < lines.size() && !starts_with(trim(lines[i]), "```"); ++i) b.body.push_back(lines[i]);
      d.blocks.push_back(b);
      continue;
    }
    if (!pending_quote.empty() && !t.empty()) {
      d.problems.push_back(name + ":" + std::to_string(pending_line) +
                           ": <!-- quote: --> must be followed directly by a fenced code block");
      pending_quote.clear();
    }
    if (starts_with(t, "<!-- new:")) {
      const size_t end = t.find("-->");
      const std::string p = trim(t.substr(9, end == std::string::npos ? std::string::npos : end - 9));
      if (end == std::string::npos || p.empty())
        d.problems.push_back(name + ":" + std::to_string(ln) + ": malformed new-path marker: " + t);
      else d.created.push_back(p);
      continue;
    }
    if (starts_with(t, "<!-- quote:")) {
      const size_t end = t.find("-->");
      pending_quote = trim(t.substr(11, end == std::string::npos ? std::string::npos : end - 11));
      pending_line = ln;
      if (end == std::string::npos || pending_quote.empty()) {
        d.problems.push_back(name + ":" + std::to_string(ln) + ": malformed quote marker: " + t);
        pending_quote.clear();
      }
      continue;
    }
    if (starts_with(t, "#")) {
      size_t h = 0;
      while (h < t.size() && t[h] == '#') ++h;
      d.anchors.insert(anchor_of(trim(t.substr(h))));
    }
    const std::string& s = lines[i];
    // Inline code spans (single backticks; a line's spans never continue onto the next).
    for (size_t p = s.find('`'); p != std::string::npos;) {
      const size_t q = s.find('`', p + 1);
      if (q == std::string::npos) break;
      d.spans.push_back({ln, s.substr(p + 1, q - p - 1), pytorch_table && q < first_cell_end});
      p = s.find('`', q + 1);
    }
    // Links and images: ](target). Outside code spans only.
    std::string no_code;
    bool in_code = false;
    for (char c : s) {
      if (c == '`') in_code = !in_code;
      else if (!in_code) no_code += c;
    }
    for (size_t p = no_code.find("]("); p != std::string::npos; p = no_code.find("](", p + 2)) {
      const size_t q = no_code.find(')', p + 2);
      if (q == std::string::npos) break;
      const std::string target = no_code.substr(p + 2, q - p - 2);
      if (target.find("://") != std::string::npos || starts_with(target, "mailto:")) continue;
      d.links.push_back({ln, target});
    }
  }
  if (!pending_quote.empty())
    d.problems.push_back(name + ":" + std::to_string(pending_line) +
                         ": <!-- quote: --> at the end of the file, with no code block");
  return d;
}

// ---- the source tree ------------------------------------------------------------------------

const std::set<std::string>& repo_top_dirs() {
  static const std::set<std::string> dirs = [] {
    std::set<std::string> s;
    for (const auto& e : fs::directory_iterator(kRoot))
      if (e.is_directory() && e.path().filename().string()[0] != '.') s.insert(e.path().filename().string());
    // Build folders inside the checkout (build/, build-emulate/) are not part of the repo.
    for (auto it = s.begin(); it != s.end();) it = starts_with(*it, "build") ? s.erase(it) : std::next(it);
    return s;
  }();
  return dirs;
}

bool is_source_file(const fs::path& p) {
  static const std::set<std::string> ext = {".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh", ".c"};
  return ext.count(p.extension().string()) > 0;
}

// Every identifier that some source file puts right before '(' or '<' (a call, a declaration,
// a definition, a template).
const std::set<std::string>& called_identifiers() {
  static const std::set<std::string> ids = [] {
    std::set<std::string> s;
    for (const std::string& top : repo_top_dirs()) {
      for (const auto& e : fs::recursive_directory_iterator(kRoot / top)) {
        if (!e.is_regular_file() || !is_source_file(e.path())) continue;
        const std::string t = read_text(e.path());
        for (size_t i = 0; i < t.size();) {
          const unsigned char c = static_cast<unsigned char>(t[i]);
          if (std::isalpha(c) || c == '_') {
            size_t j = i;
            while (j < t.size() && (std::isalnum(static_cast<unsigned char>(t[j])) || t[j] == '_')) ++j;
            size_t k = j;
            while (k < t.size() && (t[k] == ' ')) ++k;
            if (k < t.size() && (t[k] == '(' || t[k] == '<')) s.insert(t.substr(i, j - i));
            i = j;
          } else {
            ++i;
          }
        }
      }
    }
    return s;
  }();
  return ids;
}

// Does a token look like a path inside the repo: top-level folder first, no placeholders?
bool looks_like_repo_path(const std::string& tok) {
  if (tok.find('/') == std::string::npos) return false;
  for (char c : tok)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '/' || c == '.' || c == '_' || c == '-'))
      return false;
  const std::string first = tok.substr(0, tok.find('/'));
  return repo_top_dirs().count(first) > 0;
}

std::string strip_punct(std::string t) {
  while (!t.empty() && std::string("\"'(").find(t.front()) != std::string::npos) t.erase(0, 1);
  while (!t.empty() && std::string("\"'),;:.").find(t.back()) != std::string::npos) t.pop_back();
  return t;
}

bool is_shell(const std::string& lang) {
  return lang == "sh" || lang == "bash" || lang == "console" || lang == "shell";
}

// ---- the checks: each returns "doc:line: what is wrong" lines ------------------------------

bool is_program_target(const std::string& name);

// `bench/bench_ddp` for the program built from bench/bench_ddp.cpp: an executable target of
// that name whose source is the path plus .cpp or .cu.
bool is_program_source(const std::string& path) {
  if (!fs::exists(kRoot / (path + ".cpp")) && !fs::exists(kRoot / (path + ".cu"))) return false;
  return is_program_target(fs::path(path).filename().string());
}

std::vector<std::string> check_paths(const Doc& d) {
  std::vector<std::string> out;
  auto check = [&](int line, const std::string& raw) {
    for (const std::string& w : words(raw)) {
      const std::string tok = strip_punct(w);
      if (!looks_like_repo_path(tok) || is_created(d, tok)) continue;
      if (!fs::exists(kRoot / tok) && !is_program_source(tok))
        out.push_back(d.name + ":" + std::to_string(line) + ": no such file or folder: " + tok);
    }
  };
  for (const Span& s : d.spans) check(s.line, s.text);
  for (const Block& b : d.blocks) {
    if (!is_shell(b.lang)) continue;
    for (size_t i = 0; i < b.body.size(); ++i) {
      const std::string code = b.body[i].substr(0, b.body[i].find('#'));  // comments are prose
      check(b.line + 1 + static_cast<int>(i), code);
    }
  }
  return out;
}

std::vector<std::string> check_links(const Doc& d, const std::map<std::string, Doc>& all) {
  std::vector<std::string> out;
  const fs::path dir = fs::path(d.name).parent_path();
  for (const Span& l : d.links) {
    std::string target = l.text;
    const size_t sp = target.find(' ');  // [x](file "title")
    if (sp != std::string::npos) target = target.substr(0, sp);
    std::string file = target, anchor;
    const size_t h = target.find('#');
    if (h != std::string::npos) file = target.substr(0, h), anchor = target.substr(h + 1);
    const std::string where = d.name + ":" + std::to_string(l.line) + ": link " + l.text;
    std::string rel = d.name;
    if (!file.empty()) {
      rel = (dir / file).lexically_normal().generic_string();
      if (!fs::exists(kRoot / rel)) {
        out.push_back(where + ": no such file " + rel);
        continue;
      }
    }
    if (anchor.empty()) continue;
    const auto it = all.find(rel);
    if (it == all.end()) {
      if (fs::path(rel).extension() == ".md") {
        const Doc other = parse(rel, read_text(kRoot / rel));
        if (!other.anchors.count(anchor)) out.push_back(where + ": no heading #" + anchor + " in " + rel);
      }
    } else if (!it->second.anchors.count(anchor)) {
      out.push_back(where + ": no heading #" + anchor + " in " + rel);
    }
  }
  return out;
}

std::vector<std::string> check_functions(const Doc& d) {
  std::vector<std::string> out;
  for (const Span& s : d.spans) {
    const std::string& t = s.text;
    if (s.pytorch || t.size() < 3 || t.substr(t.size() - 2) != "()") continue;
    const std::string name = t.substr(0, t.size() - 2);
    // C++ names only: `name()` and `ns::name()`. A dotted `x.name()` is as often Python as C++
    // in these pages (the seeds' code), so it is not checked.
    bool ok = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0]));
    for (char c : name)
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':')) ok = false;
    if (!ok) continue;
    size_t cut = name.find_last_of(':');
    const std::string last = cut == std::string::npos ? name : name.substr(cut + 1);
    if (!called_identifiers().count(last))
      out.push_back(d.name + ":" + std::to_string(s.line) + ": no function " + last +
                    " in the sources (from `" + t + "`)");
  }
  return out;
}

// Where the lines of `want` occur in `have`, starting the search at `from`: a run of lines
// equal after removing one common indentation from `have`'s (and trailing spaces). -1: nowhere.
long find_run(const std::vector<std::string>& have, const std::vector<std::string>& want, size_t from) {
  if (want.empty()) return static_cast<long>(from);
  for (size_t i = from; i + want.size() <= have.size(); ++i) {
    const std::string h0 = rstrip(have[i]), w0 = rstrip(want[0]);
    if (h0.size() < w0.size() || h0.compare(h0.size() - w0.size(), w0.size(), w0) != 0) continue;
    const size_t shift = h0.size() - w0.size();
    if (h0.find_first_not_of(' ') < shift) continue;  // only leading spaces may be dropped
    bool match = true;
    for (size_t j = 0; j < want.size() && match; ++j) {
      const std::string h = rstrip(have[i + j]), w = rstrip(want[j]);
      if (w.empty()) match = h.empty();
      else match = h.size() == w.size() + shift && h.compare(0, shift, std::string(shift, ' ')) == 0 &&
                   h.compare(shift, std::string::npos, w) == 0;
    }
    if (match) return static_cast<long>(i);
  }
  return -1;
}

std::vector<std::string> check_excerpts(const Doc& d) {
  std::vector<std::string> out = d.problems;
  for (const Block& b : d.blocks) {
    if (b.quote.empty()) continue;
    const std::string where = d.name + ":" + std::to_string(b.line) + ": excerpt of " + b.quote;
    if (!fs::is_regular_file(kRoot / b.quote)) {
      out.push_back(where + ": no such file");
      continue;
    }
    const std::vector<std::string> src = split_lines(read_text(kRoot / b.quote));
    std::vector<std::vector<std::string>> runs(1);
    for (const std::string& l : b.body) {
      if (trim(l) == "...") runs.emplace_back();
      else runs.back().push_back(l);
    }
    size_t from = 0;
    for (size_t r = 0; r < runs.size(); ++r) {
      if (runs[r].empty()) {
        out.push_back(where + ": part " + std::to_string(r + 1) + " is empty (two '...' in a row?)");
        break;
      }
      const long at = find_run(src, runs[r], from);
      if (at < 0) {
        std::string first = trim(runs[r][0]);
        out.push_back(where + ": part " + std::to_string(r + 1) + " (starting `" + first +
                      "`) is not in the file" + (from > 0 ? " after the previous part" : "") +
                      ": update the excerpt from the source");
        break;
      }
      from = static_cast<size_t>(at) + runs[r].size();
    }
  }
  return out;
}

// ---- commands ---------------------------------------------------------------------------------

struct Command {
  int line;
  std::string program;             // "build/examples/mnist_mlp/mnist_mlp", "scripts/test"
  std::vector<std::string> args;   // what follows it, up to |, &&, ;, >
};

bool is_build_path(const std::string& t) {
  std::string s = starts_with(t, "./") ? t.substr(2) : t;
  if (!starts_with(s, "build")) return false;
  const size_t slash = s.find('/');
  if (slash == std::string::npos) return false;
  for (size_t i = 5; i < slash; ++i)
    if (!(std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '-' || s[i] == '_')) return false;
  return slash + 1 < s.size() && s.back() != '/';
}

void find_commands(int line, const std::string& text, std::vector<Command>* out) {
  const std::vector<std::string> w = words(text.substr(0, text.find(" #")));
  for (size_t i = 0; i < w.size(); ++i) {
    const std::string t = strip_punct(w[i]);
    if (t.find_first_of("<>*") != std::string::npos) continue;  // a placeholder, not a command
    const bool script = starts_with(t, "scripts/") && t.size() > 8 && t.back() != '/';
    if (!script && !is_build_path(t)) continue;
    Command c{line, t, {}};
    for (size_t j = i + 1; j < w.size(); ++j) {
      if (w[j] == "|" || w[j] == "&&" || w[j] == ";" || w[j] == ">" || w[j] == "2>&1") break;
      c.args.push_back(w[j]);
    }
    out->push_back(c);
    return;  // one program per command line
  }
}

std::vector<Command> commands_of(const Doc& d) {
  std::vector<Command> cmds;
  for (const Span& s : d.spans) find_commands(s.line, s.text, &cmds);
  for (const Block& b : d.blocks) {
    if (!is_shell(b.lang)) continue;
    for (size_t i = 0; i < b.body.size(); ++i) {
      std::string l = trim(b.body[i]);
      if (starts_with(l, "$ ")) l = l.substr(2);
      if (starts_with(l, "#")) continue;
      find_commands(b.line + 1 + static_cast<int>(i), l, &cmds);
    }
  }
  return cmds;
}

// name -> built file, from EMBER_DOC_PROGRAMS ("name=path,name=path,...").
std::map<std::string, std::string> built_programs() {
  std::map<std::string, std::string> m;
#ifdef EMBER_DOC_PROGRAMS
  std::istringstream in(EMBER_DOC_PROGRAMS);
  std::string item;
  while (std::getline(in, item, ',')) {
    const size_t eq = item.find('=');
    if (eq != std::string::npos) m[item.substr(0, eq)] = item.substr(eq + 1);
  }
#endif
  return m;
}

// Every executable target of the project, from the CMakeLists (whether this build has it or not).
bool is_program_target(const std::string& name) {
  static const std::string all = [] {
    std::string s = read_text(kRoot / "CMakeLists.txt");
    for (const std::string& top : repo_top_dirs())
      for (const auto& e : fs::recursive_directory_iterator(kRoot / top))
        if (e.path().filename() == "CMakeLists.txt") s += read_text(e.path()) + "\n";
    return s;
  }();
  // add_executable(name ...) or a foreach list of names that add_executable uses.
  for (size_t p = all.find(name); p != std::string::npos; p = all.find(name, p + 1)) {
    const bool left = p == 0 || !(std::isalnum(static_cast<unsigned char>(all[p - 1])) || all[p - 1] == '_');
    const size_t e = p + name.size();
    const bool right = e >= all.size() || !(std::isalnum(static_cast<unsigned char>(all[e])) || all[e] == '_');
    if (left && right) return true;
  }
  return false;
}

std::string test_sources() {
  static const std::string all = [] {
    std::string s;
    for (const auto& e : fs::recursive_directory_iterator(kRoot / "tests"))
      if (e.is_regular_file() && is_source_file(e.path())) s += read_text(e.path());
    return s;
  }();
  return all;
}

struct RunResult {
  int status = -1;
  std::string output;
};

RunResult run(const std::string& command) {
  RunResult r;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.output.append(buf, n);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

std::string self_exe() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : p.string();
}

// `flags` must all appear in a program's --help text as whole options.
std::vector<std::string> missing_flags(const std::string& help, const std::vector<std::string>& args) {
  std::vector<std::string> missing;
  for (std::string a : args) {
    if (!starts_with(a, "--") || a.size() < 3) continue;
    a = a.substr(0, a.find('='));
    a = strip_punct(a);
    bool found = false;
    for (size_t p = help.find(a); p != std::string::npos && !found; p = help.find(a, p + 1)) {
      const size_t e = p + a.size();
      found = e >= help.size() || !(std::isalnum(static_cast<unsigned char>(help[e])) || help[e] == '-' || help[e] == '_');
    }
    if (!found) missing.push_back(a);
  }
  return missing;
}

std::vector<std::string> check_commands(const Doc& d, std::vector<std::string>* not_built) {
  std::vector<std::string> out;
  static std::map<std::string, RunResult> help_cache;
  const auto built = built_programs();
  for (const Command& c : commands_of(d)) {
    const std::string where = d.name + ":" + std::to_string(c.line) + ": `" + c.program + "`";
    const std::string name = fs::path(c.program).filename().string();
    if (is_created(d, c.program.substr(c.program.find('/') + 1))) continue;  // the reader's own
    if (starts_with(c.program, "scripts/")) {
      if (!fs::is_regular_file(kRoot / c.program)) out.push_back(where + ": no such script");
      else if (access((kRoot / c.program).c_str(), X_OK) != 0) out.push_back(where + ": not executable");
      continue;
    }
    if (name == "ember_tests") {
      // Test specs: every [tag] and every quoted test name must exist in tests/.
      for (const std::string& a : c.args) {
        const std::string spec = strip_punct(a);
        if (spec.empty() || spec[0] == '-') continue;
        for (size_t p = spec.find('['); p != std::string::npos; p = spec.find('[', p + 1)) {
          const size_t q = spec.find(']', p);
          if (q == std::string::npos) break;
          std::string tag = spec.substr(p, q - p + 1);
          if (test_sources().find(tag) == std::string::npos)
            out.push_back(where + ": no test has the tag " + tag);
        }
      }
    } else if (!is_program_target(name)) {
      out.push_back(where + ": " + name + " is no executable target of the project");
      continue;
    }
    std::string exe;
    if (name == "ember_tests") {
      exe = self_exe();
    } else {
      const auto it = built.find(name);
      if (it == built.end()) {
        not_built->push_back(where + " (not part of this build)");
        continue;
      }
      exe = it->second;
      // The doc's path below the build folder must be where the build puts the program.
      const std::string rel = c.program.substr(c.program.find('/') + 1);
      if (exe.size() < rel.size() || exe.compare(exe.size() - rel.size(), rel.size(), rel) != 0)
        out.push_back(where + ": the build puts " + name + " at " + exe + ", not at .../" + rel);
    }
    auto h = help_cache.find(exe);
    if (h == help_cache.end()) h = help_cache.emplace(exe, run("'" + exe + "' --help")).first;
    if (h->second.status != 0) {
      out.push_back(where + ": `" + name + " --help` exited with " + std::to_string(h->second.status) +
                    ":\n" + h->second.output);
      continue;
    }
    for (const std::string& f : missing_flags(h->second.output, c.args))
      out.push_back(where + ": " + name + " --help does not list " + f);
  }
  return out;
}

// ---- the documents ------------------------------------------------------------------------------

std::map<std::string, Doc> all_docs() {
  std::map<std::string, Doc> docs;
  docs.emplace("README.md", parse("README.md", read_text(kRoot / "README.md")));
  for (const auto& e : fs::directory_iterator(kRoot / "docs")) {
    if (e.path().extension() != ".md") continue;
    const std::string rel = "docs/" + e.path().filename().string();
    docs.emplace(rel, parse(rel, read_text(e.path())));
  }
  return docs;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += x + "\n";
  return s;
}

}  // namespace

TEST_CASE("docs: every repo path named in README.md and docs/*.md exists", "[docs]") {
  std::vector<std::string> bad;
  for (const auto& [name, d] : all_docs())
    for (const std::string& p : check_paths(d)) bad.push_back(p);
  INFO(joined(bad));
  CHECK(bad.empty());
}

TEST_CASE("docs: every relative link and #anchor resolves", "[docs]") {
  const auto docs = all_docs();
  std::vector<std::string> bad;
  for (const auto& [name, d] : docs)
    for (const std::string& p : check_links(d, docs)) bad.push_back(p);
  INFO(joined(bad));
  CHECK(bad.empty());
}

TEST_CASE("docs: every function named as `name()` exists in the sources", "[docs]") {
  std::vector<std::string> bad;
  for (const auto& [name, d] : all_docs())
    for (const std::string& p : check_functions(d)) bad.push_back(p);
  INFO(joined(bad));
  CHECK(bad.empty());
}

TEST_CASE("docs: every quoted excerpt is the current source", "[docs]") {
  std::vector<std::string> bad;
  int quoted = 0;
  for (const auto& [name, d] : all_docs()) {
    for (const Block& b : d.blocks) quoted += b.quote.empty() ? 0 : 1;
    for (const std::string& p : check_excerpts(d)) bad.push_back(p);
  }
  INFO(joined(bad));
  CHECK(bad.empty());
  CHECK(quoted > 0);  // the tour quotes the code; zero would mean the marker stopped being seen
}

TEST_CASE("docs: every command exists, answers --help and knows the flags the docs pass",
          "[docs]") {
  std::vector<std::string> bad, not_built;
  for (const auto& [name, d] : all_docs())
    for (const std::string& p : check_commands(d, &not_built)) bad.push_back(p);
  INFO(joined(bad));
  CHECK(bad.empty());
  if (!not_built.empty()) {
    // CUDA-only benchmarks in a CPU build, say: their target exists, --help is checked where
    // they are built.
    WARN("programs the docs name that this build does not have (checked as targets only):\n" +
         joined(not_built));
  }
}

TEST_CASE("docs: the checker reports each kind of rot", "[docs]") {
  // One document with one problem of each kind, against the real tree.
  const std::string text =
      "# Title\n"
      "See `core/ops/no_such_op.cpp`, `kernels/cuda/gemm_tiled.cu` and `bench/bench_cpu`.\n"
      "Call `autograd::no_such" + std::string("_function()` and `run_backward()`.\n") +
      "[gone](no_such_page.md) [here](#title) [nowhere](#no-such-heading)\n"
      "<!-- quote: core/autograd/node.h -->\n"
      "```cpp\n"
      "class SavedTensor {\n"
      " public:\n"
      "...\n"
      "  int64_t saved_version_ = 1;\n"  // the source says 0
      "```\n"
      "<!-- quote: core/autograd/node.h -->\n"
      "```cpp\n"
      "  int64_t saved_version_ = 0;\n"
      "...\n"
      "struct Edge {\n"
      "```\n"
      "```sh\n"
      "build/examples/no_such_example/no_such_example --help\n"
      "scripts/no-such-script\n"
      "build/tests/ember_tests \"[no-such" + std::string("-tag]\"\n") +
      "```\n";
  const Doc d = parse("docs/selftest.md", text);
  const auto docs = std::map<std::string, Doc>{{d.name, d}};
  const std::string paths = joined(check_paths(d)), links = joined(check_links(d, docs)),
                    funcs = joined(check_functions(d)), quotes = joined(check_excerpts(d));
  std::vector<std::string> not_built;
  const std::string cmds = joined(check_commands(d, &not_built));
  INFO(paths << links << funcs << quotes << cmds);
  CHECK(paths.find("core/ops/no_such_op.cpp") != std::string::npos);
  CHECK(paths.find("gemm_tiled.cu") == std::string::npos);
  CHECK(paths.find("bench_cpu") == std::string::npos);  // a program, named by its source
  CHECK(links.find("no_such_page.md") != std::string::npos);
  CHECK(links.find("#no-such-heading") != std::string::npos);
  CHECK(links.find("link #title") == std::string::npos);
  CHECK(funcs.find("no function no_such") != std::string::npos);
  CHECK(funcs.find("run_backward") == std::string::npos);
  CHECK(quotes.find("docs/selftest.md:6: excerpt of core/autograd/node.h: part 2") != std::string::npos);
  CHECK(quotes.find("docs/selftest.md:13:") != std::string::npos);  // parts in the wrong order
  CHECK(cmds.find("no_such_example is no executable target") != std::string::npos);
  CHECK(cmds.find("no such script") != std::string::npos);
  CHECK(cmds.find("no test has the tag [no-such") != std::string::npos);
}
