// Docs that cannot rot: README.md, every docs/*.md and every folder's README.md (bench/gemm/,
// fuzz/, tests/fixtures/, ...) are read here and checked against the tree they describe (the
// convention is spelled out in docs/README.md, "Keeping the docs true").
//
//   paths      every repo path a page names, in prose, inline code or any fenced block
//              (`core/ops/matmul.cpp`, `bench/gemm/`, `targets/idx.cpp` beside fuzz/README.md,
//              a bare `engine.cpp`) exists (or, like `bench/bench_ddp`, names a program by its
//              source), with "did you mean" when a file of that name lives elsewhere; a line
//              (`path:123`, `file.cpp:120-140`) exists, and a name next to it (`path:123`,
//              `name()`; `path name()`; `name` in `path`; an emulator report's launch site;
//              gdb's echo of the line) is there; a "| kernel |" table names kernels of the
//              files its section names. What counts as a path, the allow-list and the forms:
//              "every repository path a doc names" below. Placeholders such as
//              `core/ops/<op>.cpp` are skipped, and so are paths under a `<!-- new: PATH -->` the
//              page declares (files an exercise asks the reader to create) and the exact paths of
//              an `<!-- old: PATH -->` (a path as it was before a move, named on purpose);
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
//   bare lines a line number nothing names is an error: in prose, quote the line or name it; in
//              a sample output, "Line N is `code`" after the sample anchors it;
//   op cards   each op card's Kernels field names the kernel files of its registry rows;
//   counts     the SGEMM ladder's "N CUDA kernels", its table and bench/gemm/NN_*.cuh agree, and
//              no page names a rung the ladder does not have;
//   pictures   docs/images/tape_*.dot is what the programs print with --dot now, and its labels
//              are the texts of the .svg beside it.
// The self-test cases feed the checkers documents with one rot of each kind and expect every
// one to be reported, so the checker itself cannot silently go lenient.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
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
  std::vector<std::string> former;    // <!-- old: PATH -->: paths named as they were before a move
  std::vector<std::string> problems;  // malformed markers
  std::vector<std::string> lines;     // the text, line by line
  std::vector<bool> in_block;         // lines[i] is a fence or inside a fenced block
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
  d.lines = lines;
  d.in_block.assign(lines.size(), false);
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
      d.in_block[i] = true;
      for (++i; i < lines.size() && !starts_with(trim(lines[i]), "```"); ++i) {
        b.body.push_back(lines[i]);
        d.in_block[i] = true;
      }
      if (i < lines.size()) d.in_block[i] = true;
      d.blocks.push_back(b);
      continue;
    }
    if (!pending_quote.empty() && !t.empty()) {
      d.problems.push_back(name + ":" + std::to_string(pending_line) +
                           ": <!-- quote: --> must be followed directly by a fenced code block");
      pending_quote.clear();
    }
    if (starts_with(t, "<!-- new:") || starts_with(t, "<!-- old:")) {
      const size_t end = t.find("-->");
      const std::string p = trim(t.substr(9, end == std::string::npos ? std::string::npos : end - 9));
      if (end == std::string::npos || p.empty())
        d.problems.push_back(name + ":" + std::to_string(ln) + ": malformed " + t.substr(5, 3) +
                             "-path marker: " + t);
      else (t[5] == 'n' ? d.created : d.former).push_back(p);
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

// Every identifier that some source file (C++, or one of the repo's Python scripts) puts right
// before '(' or '<' (a call, a declaration, a definition, a template).
const std::set<std::string>& called_identifiers() {
  static const std::set<std::string> ids = [] {
    std::set<std::string> s;
    for (const std::string& top : repo_top_dirs()) {
      for (const auto& e : fs::recursive_directory_iterator(kRoot / top)) {
        if (!e.is_regular_file() || !(is_source_file(e.path()) || e.path().extension() == ".py"))
          continue;
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

// ---- every repository path a doc names --------------------------------------------------------
//
// A reference is a word of a page (prose, inline code, or any fenced block: commands, C++, pasted
// output) that names a file or folder of the repository:
//   - a path whose first folder is a top-level folder of the repo (`core/tensor.h`, `bench/gemm/`),
//     or, in a page below the top, a folder beside the page (`targets/idx.cpp` in fuzz/README.md);
//   - a bare file name with a source, script or text extension (`engine.cpp`, `ops.txt`), which
//     some file of the repo must carry (the page's own folder first);
// either with a line or a range after it: `path:123`, `file.cpp:120-140`, `file.h line 123`.
// In prose a path also needs a file extension or a final '/' (there `nn/optim` is a word).
// Not references, by this rule: placeholders (`core/ops/<op>.cpp`, `kernels/cuda/*.cu`), build
// outputs and the reader's own files (`build/...`, `DIR/loss.png`, `/usr/local/cuda`,
// `../shared/seeds/`: their first folder is none of the repo's), URLs, and not_in_repo() below.
//
// A name attached to a reference must be in the file:
//   `path:N name()` / `path:N`, `name`          name within kNear lines of N (or of the range)
//   `path name()` / `path`, `name` / `name()` in `path` / `name` (`path`) / path name(...)
//                                              name somewhere in the file
//   NAME (launched at path:N)                  (emulator reports) NAME within kNear lines of N
//   ... at path:N, then "N<TAB>source"         (gdb) line N of the file is that source
// A line number with none of these is "bare": reported as a warning, since it drifts unseen.

constexpr long kNear = 5;

// Names that look like repo files but are not, each with the reason.
const std::map<std::string, std::string>& not_in_repo() {
  static const std::map<std::string, std::string> m = {
      {"main.py", "the reader's own PyTorch script (from_pytorch.md, CUDA_VISIBLE_DEVICES)"},
      {"stb_image.h", "Debian's libstb-dev header <stb/stb_image.h> (data/stb_impl.cpp), not ours"},
      {"summary.md", "what scripts/gpu-check writes into its --run folder (gpu.md)"},
  };
  return m;
}

bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The name in `name`, `ns::name`, `name()`, `name(a, b)` (and `name<T>` with `templ`: in inline
// code `fuzz_<target>` is a placeholder); "" for anything else.
std::string identifier_of(const std::string& s, bool templ = false) {
  size_t e = 0;
  while (e < s.size() && (is_ident_char(s[e]) || s[e] == ':')) ++e;
  if (e == 0 || std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == ':' || s[e - 1] == ':')
    return "";
  const std::string rest = s.substr(e);
  if (!rest.empty() && !(rest.front() == '(' && rest.back() == ')') &&
      !(templ && rest.front() == '<' && rest.back() == '>'))
    return "";
  const std::string name = s.substr(0, e);
  const size_t c = name.rfind(':');
  return c == std::string::npos ? name : name.substr(c + 1);
}

// A call as written in a comment: `name(...)`, punctuation after it allowed.
std::string call_of(std::string w) {
  while (!w.empty() && std::string(",;:.").find(w.back()) != std::string::npos) w.pop_back();
  if (w.find('(') == std::string::npos || w.back() != ')') return "";
  return identifier_of(w);
}

bool has_word(const std::string& line, const std::string& w) {
  for (size_t p = line.find(w); p != std::string::npos; p = line.find(w, p + 1)) {
    const size_t e = p + w.size();
    if ((p == 0 || !is_ident_char(line[p - 1])) && (e >= line.size() || !is_ident_char(line[e])))
      return true;
  }
  return false;
}

// Every file and folder of the repo by name (the top-level files, then the top-level folders'
// trees; hidden folders and __pycache__ left out).
struct RepoNames {
  std::map<std::string, std::vector<std::string>> files, dirs;
};

const RepoNames& repo_names() {
  static const RepoNames r = [] {
    RepoNames r;
    for (const auto& e : fs::directory_iterator(kRoot)) {
      const std::string n = e.path().filename().string();
      if (e.is_regular_file() && n[0] != '.') r.files[n].push_back(n);
    }
    for (const std::string& top : repo_top_dirs()) {
      r.dirs[top].push_back(top);
      for (auto it = fs::recursive_directory_iterator(kRoot / top);
           it != fs::recursive_directory_iterator(); ++it) {
        const std::string n = it->path().filename().string();
        const std::string rel = it->path().lexically_relative(kRoot).generic_string();
        if (it->is_directory()) {
          if (n[0] == '.' || n == "__pycache__") it.disable_recursion_pending();
          else r.dirs[n].push_back(rel);
        } else if (it->is_regular_file()) {
          r.files[n].push_back(rel);
        }
      }
    }
    return r;
  }();
  return r;
}

const std::vector<std::string>& lines_of(const std::string& rel) {
  static std::map<std::string, std::vector<std::string>> cache;
  auto it = cache.find(rel);
  if (it == cache.end()) it = cache.emplace(rel, split_lines(read_text(kRoot / rel))).first;
  return it->second;
}

// " (did you mean X?)" for a path that is not there: a file or folder of the same name elsewhere,
// or of the same name less a `test_` prefix (the tests lost theirs when they moved into rooms);
// of several, those sharing the most folder names with the missing path.
std::string suggestion(std::string missing) {
  const bool slash = !missing.empty() && missing.back() == '/';
  while (!missing.empty() && missing.back() == '/') missing.pop_back();
  const fs::path mp(missing);
  const std::string name = mp.filename().string();
  std::vector<std::string> cands;
  auto add = [&](const std::map<std::string, std::vector<std::string>>& m, const std::string& n) {
    const auto it = m.find(n);
    if (it != m.end())
      for (const std::string& c : it->second)
        if (c != missing) cands.push_back(c);
  };
  for (const std::string& n : {name, starts_with(name, "test_") ? name.substr(5) : std::string()}) {
    if (n.empty()) continue;
    add(repo_names().files, n);
    add(repo_names().dirs, n);
  }
  if (cands.empty()) return "";
  std::set<std::string> folders;
  for (const auto& c : mp.parent_path()) folders.insert(c.string());
  std::map<int, std::vector<std::string>> by_score;
  for (const std::string& c : cands) {
    int score = 0;
    for (const auto& f : fs::path(c).parent_path()) score += folders.count(f.string()) ? 1 : 0;
    by_score[-score].push_back(c + (slash && fs::is_directory(kRoot / c) ? "/" : ""));
  }
  const std::vector<std::string>& best = by_score.begin()->second;
  std::string s = " (did you mean ";
  for (size_t i = 0; i < best.size() && i < 3; ++i) s += (i ? " or " : "") + best[i];
  return s + "?)";
}

struct Ref {
  int line = 0;              // in the doc
  std::string text;          // as written, punctuation dropped: "kernels/cpu/conv.cpp:123"
  std::string path;          // repo-relative ("kernels/cpu/conv.cpp"), or a bare file name
  bool bare = false;         // a file name without its folder
  long first = 0, last = 0;  // the lines named; 0: none
  std::string name;          // an identifier attached to it
  std::string echo;          // gdb's copy of line `first`, or the code of "Line N is `code`"
  bool sample = false;       // in a fenced block (pasted output, code), not in prose
  bool called_from = false;  // an emulator report's "called from PATH:N"
};

bool is_number(const std::string& x) {
  return !x.empty() && x.size() < 8 && std::all_of(x.begin(), x.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c));
  });
}

// One word as a reference; false when it is none.
bool parse_ref(const Doc& d, const std::string& word, int line, Ref* r) {
  std::string t = word;
  while (!t.empty() && std::string("\"'([").find(t.front()) != std::string::npos) t.erase(0, 1);
  while (!t.empty() && std::string("\"'),;:.]!?").find(t.back()) != std::string::npos) t.pop_back();
  if (starts_with(t, ".../")) t = t.substr(4);  // an abbreviated absolute path in pasted output
  if (t.find("://") != std::string::npos) return false;
  long first = 0, last = 0;
  const size_t colon = t.find(':');
  if (colon != std::string::npos) {
    const std::string num = t.substr(colon + 1);
    const size_t dash = num.find('-');
    const std::string a = num.substr(0, dash),
                      b = dash == std::string::npos ? a : num.substr(dash + 1);
    if (!is_number(a) || !is_number(b)) return false;
    first = std::stol(a), last = std::stol(b);
    t = t.substr(0, colon);
  }
  if (t.empty()) return false;
  for (char c : t)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '/' || c == '.' || c == '_' ||
          c == '-'))
      return false;
  r->line = line;
  r->text =
      t + (first ? ":" + std::to_string(first) + (last != first ? "-" + std::to_string(last) : "")
                 : "");
  r->first = first, r->last = last;
  if (t.find('/') != std::string::npos) {
    const std::string top = t.substr(0, t.find('/'));
    const fs::path dir = fs::path(d.name).parent_path();
    const bool at_top = repo_top_dirs().count(top) > 0;
    const bool beside =
        !dir.empty() && !top.empty() && top != "." && top != ".." && fs::exists(kRoot / dir / top);
    if (!at_top && !beside) return false;
    // In a page below the top a folder beside it wins when the path is there (optim/ in
    // tests/fixtures/README.md is tests/fixtures/optim/).
    r->path = beside && (!at_top || (!fs::exists(kRoot / t) && fs::exists(kRoot / dir / t)))
                  ? (dir / t).generic_string()
                  : t;
    return true;
  }
  static const std::set<std::string> ext = {".h",   ".hpp", ".cpp",   ".cc", ".c",  ".cu",
                                            ".cuh", ".py",  ".cmake", ".sh", ".md", ".txt"};
  const fs::path p(t);
  if (!ext.count(p.extension().string()) || p.stem().empty() || p.stem().string()[0] == '.')
    return false;
  r->path = t;
  r->bare = true;
  return true;
}

// "[x](target)" -> "[x]": link targets are check_links's, relative to the page.
std::string drop_link_targets(std::string s) {
  for (size_t p = s.find("]("); p != std::string::npos; p = s.find("](", p + 1)) {
    const size_t q = s.find(')', p);
    if (q == std::string::npos) break;
    s.erase(p + 1, q - p);
  }
  return s;
}

// Prose or a line of a fenced block. In prose a path needs a file extension or a final '/'
// (`nn/optim` and `examples/s` are words there).
void scan_text(const Doc& d, int line, const std::string& text, const std::string& next, bool prose,
               std::vector<Ref>* out) {
  const std::vector<std::string> w = words(text);
  for (size_t j = 0; j < w.size(); ++j) {
    Ref r;
    if (!parse_ref(d, w[j], line, &r)) continue;
    if (prose && !r.bare && r.path.back() != '/' && fs::path(r.path).extension().empty()) continue;
    // FILE line N
    if (r.first == 0 && j + 2 < w.size() && w[j + 1] == "line") {
      const std::string n = strip_punct(w[j + 2]);
      if (is_number(n)) {
        r.first = r.last = std::stol(n);
        r.text += " line " + n;
      }
    }
    // NAME (launched at PATH:N): the emulator's report of a launch site.
    if (r.first > 0 && j >= 3 && w[j - 1] == "at" && w[j - 2] == "(launched")
      r.name = identifier_of(w[j - 3], true);
    // launch of NAME failed at PATH:N: the emulator's (and ember's) report of a failed launch.
    if (r.first > 0 && r.name.empty() && j >= 4 && w[j - 1] == "at" && w[j - 2] == "failed" &&
        w[j - 4] == "of" && (j < 5 || w[j - 5] == "launch"))
      r.name = identifier_of(w[j - 3], true);
    // FRAME at PATH:N, then gdb's "N<TAB>source" on the next line.
    if (r.first > 0 && j >= 1 && w[j - 1] == "at" &&
        starts_with(next, std::to_string(r.first) + "\t"))
      r.echo = next.substr(std::to_string(r.first).size() + 1);
    // PATH name(...): a comment that names a function of the file.
    if (r.name.empty() && j + 1 < w.size()) r.name = call_of(w[j + 1]);
    r.sample = !prose;
    r.called_from = j >= 2 && w[j - 1] == "from" && strip_punct(w[j - 2]) == "called";
    out->push_back(r);
  }
}

std::vector<Ref> references(const Doc& d) {
  std::vector<Ref> refs;
  bool open = false;  // a code span runs on from the line before (it may, within a paragraph)
  for (size_t i = 0; i < d.lines.size(); ++i) {
    const std::string& s = d.lines[i];
    const int ln = static_cast<int>(i) + 1;
    if (d.in_block[i]) {
      open = false;
      if (starts_with(trim(s), "```")) continue;
      const bool more = i + 1 < d.lines.size() && d.in_block[i + 1];
      scan_text(d, ln, s, more ? d.lines[i + 1] : "", false, &refs);
      continue;
    }
    if (trim(s).empty()) open = false;
    if (starts_with(trim(s), "<!-- "))
      continue;  // a marker: its path is the excerpt's, or declared
    // The line as prose and code spans, alternating: segs[k] is a span when k is odd.
    std::vector<std::string> segs;
    if (open) segs.push_back("");
    open = open != (std::count(s.begin(), s.end(), '`') % 2 == 1);
    for (size_t p = 0;;) {
      const size_t a = s.find('`', p);
      if (a == std::string::npos) {
        segs.push_back(s.substr(p));
        break;
      }
      segs.push_back(s.substr(p, a - p));
      const size_t b = s.find('`', a + 1);
      segs.push_back(
          s.substr(a + 1, b == std::string::npos ? b : b - a - 1));  // to the end: it runs on
      if (b == std::string::npos) break;
      p = b + 1;
    }
    for (size_t k = 0; k < segs.size(); ++k) {
      if (k % 2 == 0) {
        scan_text(d, ln, drop_link_targets(segs[k]), "", true, &refs);
        continue;
      }
      const std::vector<std::string> w = words(segs[k]);
      for (size_t j = 0; j < w.size(); ++j) {
        Ref r;
        if (!parse_ref(d, w[j], ln, &r)) continue;
        if (w.size() == 2 && j == 0) r.name = call_of(w[1]);  // `path name()`
        if (w.size() == 1) {
          // `path`, `name` / [`path`](link), `name`
          const std::string after = k + 2 < segs.size() ? drop_link_targets(segs[k + 1]) : "";
          if (k + 2 < segs.size() && after.find_first_not_of(" ,]") == std::string::npos)
            r.name = identifier_of(segs[k + 2]);
          // `name` in `path` / `name` of `path` / `name` (`path`)
          const std::string before = k >= 2 ? trim(segs[k - 1]) : "";
          if (r.name.empty() && k >= 2 &&
              (before == "in" || before == "of" || before == "(" || before == "in [" ||
               before == "of [" || before == "(["))
            r.name = identifier_of(segs[k - 2]);
        }
        refs.push_back(r);
      }
    }
  }
  // A line number in a sample (an emulator report, a gdb session) that nothing on its line
  // names is anchored by the prose after the sample, in the same section: "Line N is `code`"
  // (checked like gdb's echo). The emulator's "called from PATH:N" is anchored by the same
  // PATH:N named within 3 lines (the launch site, "launched at PATH:N"). Else a report's access
  // line is anchored by the kernel the report names below it ("in kernel NAME (launched at
  // ...)"): NAME within kNear lines.
  const std::vector<Ref> named = refs;  // the names the lines themselves attach
  for (Ref& r : refs) {
    if (!r.sample || r.first == 0 || !r.name.empty() || !r.echo.empty()) continue;
    int nearest = 4;
    for (const Ref& o : named)
      if (r.called_from && std::abs(o.line - r.line) < nearest && o.path == r.path &&
          o.first == r.first && (!o.name.empty() || !o.echo.empty()))
        r.name = o.name, r.echo = o.echo, nearest = std::abs(o.line - r.line);
    if (!r.name.empty() || !r.echo.empty()) continue;
    const std::string key = "Line " + std::to_string(r.first) + " is `";
    for (size_t i = static_cast<size_t>(r.line); i < d.lines.size(); ++i) {
      if (!d.in_block[i] && starts_with(d.lines[i], "#")) break;
      const size_t p = d.in_block[i] ? std::string::npos : d.lines[i].find(key);
      if (p == std::string::npos) continue;
      const size_t a = p + key.size(), b = d.lines[i].find('`', a);
      if (b != std::string::npos) r.echo = d.lines[i].substr(a, b - a);
      break;
    }
    if (!r.echo.empty()) continue;
    const size_t below = static_cast<size_t>(r.line);  // the index of the line below it
    for (size_t i = below; i < d.lines.size() && i < below + 3 && d.in_block[i]; ++i) {
      const std::vector<std::string> w = words(d.lines[i]);
      for (size_t j = 0; j + 1 < w.size() && r.name.empty(); ++j)
        if (w[j] == "in" && w[j + 1] == "kernel" && j + 2 < w.size())
          r.name = identifier_of(w[j + 2], true);
    }
  }
  return refs;
}

// A table whose first column is headed "kernel" (docs/kernels.md) lists kernels of the files its
// section names (in code or a link, from the heading above to the next): each must be in one of
// them. When a file is split, the section must name the new file.
std::vector<std::string> check_kernel_tables(const Doc& d) {
  std::vector<std::string> out;
  const fs::path dir = fs::path(d.name).parent_path();
  std::vector<Ref> refs = references(d);
  for (const Span& l : d.links) {  // links too: [`kernels/cuda/conv.cu`](../kernels/cuda/conv.cu)
    Ref r;
    r.line = l.line;
    r.path =
        (dir / l.text.substr(0, l.text.find_first_of("# "))).lexically_normal().generic_string();
    refs.push_back(r);
  }
  auto heading = [&](size_t i) { return !d.in_block[i] && starts_with(d.lines[i], "#"); };
  for (size_t i = 0; i < d.lines.size(); ++i) {
    const std::string t = trim(d.lines[i]);
    if (d.in_block[i] || !(starts_with(t, "| kernel |") || starts_with(t, "| kernels |"))) continue;
    size_t top = i, end = i;
    while (top > 0 && !heading(top)) --top;
    while (end < d.lines.size() && !heading(end)) ++end;
    std::vector<std::string> files;
    for (const Ref& r : refs)
      if (!r.bare && r.line > static_cast<int>(top) && r.line <= static_cast<int>(end) &&
          fs::is_regular_file(kRoot / r.path) &&
          std::find(files.begin(), files.end(), r.path) == files.end())
        files.push_back(r.path);
    for (size_t row = i + 2; row < d.lines.size() && starts_with(trim(d.lines[row]), "|"); ++row) {
      const std::string& s = d.lines[row];
      const size_t a = s.find('|'), b = s.find('|', a + 1);
      const std::string cell = s.substr(a + 1, b == std::string::npos ? b : b - a - 1);
      for (size_t p = cell.find('`'); p != std::string::npos;) {
        const size_t q = cell.find('`', p + 1);
        if (q == std::string::npos) break;
        const std::string name = identifier_of(cell.substr(p + 1, q - p - 1), true);
        p = cell.find('`', q + 1);
        if (name.empty()) continue;
        bool found = false;
        for (const std::string& f : files)
          for (const std::string& l : lines_of(f)) found = found || has_word(l, name);
        if (found) continue;
        std::string named, in;
        for (const std::string& f : files) named += (named.empty() ? "" : ", ") + f;
        for (const auto& [fname, paths] : repo_names().files)
          for (const std::string& f : paths) {
            if (!is_source_file(f) || !starts_with(f, "kernels/")) continue;
            for (const std::string& l : lines_of(f))
              if (has_word(l, name)) {
                in += (in.empty() ? "" : ", ") + f;
                break;
              }
          }
        out.push_back(d.name + ":" + std::to_string(row + 1) + ": kernel `" + name +
                      "` is in none of the files its section names (" + named + ")" +
                      (in.empty() ? "" : ": it is in " + in));
      }
    }
  }
  return out;
}

// Failures as "doc:line: what is wrong"; line numbers that nothing anchors go to *bare, and
// *count counts the references seen.
std::vector<std::string> check_paths(const Doc& d, std::vector<std::string>* bare = nullptr,
                                     int* count = nullptr) {
  std::vector<std::string> out;
  for (const Ref& r : references(d)) {
    if (count) ++*count;
    const std::string where = d.name + ":" + std::to_string(r.line) + ": ";
    if (not_in_repo().count(r.path) || is_created(d, r.path)) continue;
    if (std::find(d.former.begin(), d.former.end(), r.path) != d.former.end()) continue;
    if (r.bare && std::any_of(d.created.begin(), d.created.end(), [&](const std::string& c) {
          return fs::path(c).filename() == r.path;
        }))
      continue;
    std::vector<std::string> found;
    if (!r.bare) {
      if (fs::exists(kRoot / r.path) || is_program_source(r.path)) found.push_back(r.path);
    } else {
      const fs::path dir = fs::path(d.name).parent_path();
      const auto it = repo_names().files.find(r.path);
      if (!dir.empty() && fs::is_regular_file(kRoot / dir / r.path))
        found.push_back((dir / r.path).generic_string());
      else if (it != repo_names().files.end()) found = it->second;
    }
    if (found.empty()) {
      out.push_back(where + "no such file or folder: " + r.path + suggestion(r.path));
      continue;
    }
    if (r.first == 0 && r.name.empty()) continue;
    if (found.size() > 1) {
      // A bare name with a line: the file of that name the page names with its folder.
      std::vector<std::string> named;
      for (const std::string& f : found)
        for (const std::string& l : d.lines)
          if (l.find(f) != std::string::npos) {
            named.push_back(f);
            break;
          }
      if (named.size() == 1) found = named;
    }
    if (found.size() > 1) {
      if (r.first == 0) continue;  // a name in one of several files of that name: not checked
      std::string all;
      for (const std::string& f : found) all += (all.empty() ? "" : ", ") + f;
      out.push_back(where + r.text + ": which " + r.path + "? (" + all + "): give its folder");
      continue;
    }
    const std::string file = found[0];
    if (!fs::is_regular_file(kRoot / file)) continue;  // a folder or a program
    const std::vector<std::string>& src = lines_of(file);
    const long n = static_cast<long>(src.size());
    if (r.first > 0 && (r.first > r.last || r.last > n)) {
      out.push_back(where + r.text + ": " + file + " has " + std::to_string(n) + " lines");
      continue;
    }
    if (!r.echo.empty() && trim(src[r.first - 1]) != trim(r.echo))
      out.push_back(where + r.text + ": line " + std::to_string(r.first) + " of " + file + " is `" +
                    trim(src[r.first - 1]) + "`, not `" + trim(r.echo) + "`");
    if (!r.name.empty()) {
      const long lo = r.first > 0 ? std::max(1L, r.first - kNear) : 1;
      const long hi = r.first > 0 ? std::min(n, r.last + kNear) : n;
      bool near = false;
      std::string at;
      int shown = 0;
      for (long l = 1; l <= n; ++l) {
        if (!has_word(src[l - 1], r.name)) continue;
        if (l >= lo && l <= hi) near = true;
        if (shown++ < 3) at += (at.empty() ? "" : ", ") + std::to_string(l);
      }
      if (!near && r.first > 0)
        out.push_back(where + "`" + r.name + "` is not within " + std::to_string(kNear) +
                      " lines of " + r.text +
                      (at.empty() ? ", nor anywhere in " + file
                                  : " (" + file + " has it at line " + at + ")"));
      else if (!near)
        out.push_back(where + "`" + r.name + "` (named with " + r.text + ") is not in " + file);
    }
    if (r.first > 0 && r.name.empty() && r.echo.empty()) {
      // A bare line number drifts unseen when the file changes: an error.
      const std::string what =
          where + r.text +
          (r.sample ? ": a line number in a sample with nothing that says what is there: "
                      "regenerate the sample, or say `Line " +
                          std::to_string(r.first) + " is` and quote it after the sample"
                    : ": a bare line reference: quote the line (<!-- quote: PATH -->) or name "
                      "what is there (`PATH:N`, `name`)");
      out.push_back(what);
      if (bare) bare->push_back(what);
    }
  }
  for (const std::string& p : check_kernel_tables(d)) out.push_back(p);
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
        out.push_back(where + ": no such file " + rel + suggestion(rel));
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

// README.md, docs/*.md and every folder's README.md (bench/gemm/, fuzz/, tests/fixtures/, ...).
std::map<std::string, Doc> all_docs() {
  std::map<std::string, Doc> docs;
  docs.emplace("README.md", parse("README.md", read_text(kRoot / "README.md")));
  for (const auto& e : fs::directory_iterator(kRoot / "docs")) {
    if (e.path().extension() != ".md") continue;
    const std::string rel = "docs/" + e.path().filename().string();
    docs.emplace(rel, parse(rel, read_text(e.path())));
  }
  for (const auto& [name, paths] : repo_names().files) {
    if (name != "README.md") continue;
    for (const std::string& rel : paths)
      if (!docs.count(rel)) docs.emplace(rel, parse(rel, read_text(kRoot / rel)));
  }
  return docs;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += x + "\n";
  return s;
}

// ---- op cards against the registry ------------------------------------------------------------
//
// Every op card (the comment at the top of core/ops/<op>.cpp) has a `Kernels` field naming the
// kernel files the op calls; core/registry.cpp lists the same per op (cpu_kernel, cuda_kernel).
// The kernel files (kernels/cpu/*.cpp, kernels/cuda/*.cu) named by the rows of one card must be
// the ones its Kernels field names, in both directions.

std::set<std::string> kernel_files_in(const std::string& text) {
  std::set<std::string> files;
  for (const std::string& w : words(text)) {
    for (const char* dir : {"kernels/cpu/", "kernels/cuda/"}) {
      const size_t p = w.find(dir);
      if (p == std::string::npos) continue;
      size_t e = p + std::string(dir).size();
      while (e < w.size() && (is_ident_char(w[e]) || w[e] == '.')) ++e;
      std::string f = w.substr(p, e - p);
      while (!f.empty() && f.back() == '.') f.pop_back();
      if (fs::path(f).extension() == ".cpp" || fs::path(f).extension() == ".cu") files.insert(f);
    }
  }
  return files;
}

// The Kernels field of an op card: from "// Kernels" to the next field ("// Name   ...") or the
// end of the comment.
std::string card_kernels_field(const std::string& card_text) {
  std::string field;
  bool in = false;
  for (const std::string& l : split_lines(card_text)) {
    if (!starts_with(l, "//")) break;
    const std::string body = l.substr(2);
    const bool new_field =
        body.size() > 2 && body[0] == ' ' && std::isupper(static_cast<unsigned char>(body[1])) &&
        body.find("  ") != std::string::npos && body.find("  ") == body.find_first_of(' ', 1);
    if (starts_with(body, " Kernels ")) in = true;
    else if (in && (new_field || trim(body).empty())) break;
    if (in) field += body + "\n";
  }
  return field;
}

struct RegistryRow {
  std::string op, card;
  std::set<std::string> kernels;
};

// The rows of core/registry.cpp: {"name", "card", differentiable, "backward", CPU, CUDA}, with
// the file's #define'd kernel pairs expanded.
std::vector<RegistryRow> registry_rows(const std::string& text) {
  std::map<std::string, std::string> macros;
  const std::vector<std::string> lines = split_lines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    if (!starts_with(lines[i], "#define ")) continue;
    std::string l = rstrip(lines[i]);
    while (!l.empty() && l.back() == '\\' && i + 1 < lines.size())  // continued
      l = l.substr(0, l.size() - 1) + " " + rstrip(lines[++i]);
    const std::vector<std::string> w = words(l);
    if (w.size() >= 3) macros[w[1]] = l.substr(l.find(w[1]) + w[1].size());
  }
  std::vector<RegistryRow> rows;
  const size_t body = text.find("op_registry()");
  for (size_t p = text.find("{\"", body); body != std::string::npos && p != std::string::npos;
       p = text.find("{\"", p + 1)) {
    const size_t e = text.find('}', p);
    if (e == std::string::npos) break;
    std::string row = text.substr(p + 1, e - p - 1);
    for (const auto& [name, value] : macros)
      for (size_t m = row.find(name); m != std::string::npos; m = row.find(name, m + 1))
        if ((m == 0 || !is_ident_char(row[m - 1])) &&
            (m + name.size() >= row.size() || !is_ident_char(row[m + name.size()])))
          row.replace(m, name.size(), value);
    std::vector<std::string> strings;
    for (size_t a = row.find('"'); a != std::string::npos; a = row.find('"', a + 1)) {
      const size_t b = row.find('"', a + 1);
      if (b == std::string::npos) break;
      strings.push_back(row.substr(a + 1, b - a - 1));
      a = b;
    }
    if (strings.size() < 3) continue;
    RegistryRow r{strings[0], strings[1], {}};
    for (size_t i = 3; i < strings.size(); ++i)
      for (const std::string& f : kernel_files_in(strings[i])) r.kernels.insert(f);
    rows.push_back(r);
  }
  return rows;
}

std::vector<std::string> check_op_cards(
    const std::string& registry_text, const std::function<std::string(const std::string&)>& card) {
  std::vector<std::string> out;
  std::map<std::string, std::vector<const RegistryRow*>> by_card;
  const std::vector<RegistryRow> rows = registry_rows(registry_text);
  for (const RegistryRow& r : rows) by_card[r.card].push_back(&r);
  auto list = [](const std::set<std::string>& s) {
    std::string t;
    for (const std::string& x : s) t += (t.empty() ? "" : ", ") + x;
    return t.empty() ? std::string("none") : t;
  };
  for (const auto& [path, ops] : by_card) {
    const std::string field = card_kernels_field(card(path));
    std::string names;
    std::set<std::string> listed;
    for (const RegistryRow* r : ops) {
      names += (names.empty() ? "" : ", ") + r->op;
      listed.insert(r->kernels.begin(), r->kernels.end());
    }
    if (field.empty()) {
      out.push_back(path + ": the op card has no Kernels field (the registry's rows for " + names +
                    " name " + list(listed) + ")");
      continue;
    }
    const std::set<std::string> named = kernel_files_in(field);
    std::set<std::string> only_card, only_registry;
    for (const std::string& f : named)
      if (!listed.count(f)) only_card.insert(f);
    for (const std::string& f : listed)
      if (!named.count(f)) only_registry.insert(f);
    if (!only_card.empty())
      out.push_back(path + ": the op card's Kernels field names " + list(only_card) +
                    ", which core/registry.cpp's rows for " + names + " do not (they name " +
                    list(listed) + ")");
    if (!only_registry.empty())
      out.push_back(path + ": core/registry.cpp's rows for " + names + " name " +
                    list(only_registry) +
                    ", which the op card's Kernels field does not (it names " + list(named) + ")");
  }
  return out;
}

// ---- counts stated in prose -------------------------------------------------------------------
//
// The GEMM ladder (bench/gemm/): its README's "N CUDA kernels" is the number of rungs its table
// lists after cuBLAS's rung 0; every bench/gemm/NN_*.cuh is a rung of that table; and "rungs 1
// to N" in any page, and "rung N", stay within the rungs there are.

int number_word(std::string w) {
  static const std::vector<std::string> n = {"zero", "one",    "two",    "three",    "four",
                                             "five", "six",    "seven",  "eight",    "nine",
                                             "ten",  "eleven", "twelve", "thirteen", "fourteen"};
  std::transform(w.begin(), w.end(), w.begin(), [](char c) { return std::tolower(c); });
  for (size_t i = 0; i < n.size(); ++i)
    if (w == n[i]) return static_cast<int>(i);
  return is_number(w) ? std::stoi(w) : -1;
}

// `ladder` is bench/gemm/README.md; `rung_files` the bench/gemm/NN_*.cuh names.
std::vector<std::string> check_counts(const std::map<std::string, Doc>& docs, const Doc& ladder,
                                      const std::vector<std::string>& rung_files) {
  std::vector<std::string> out;
  std::map<int, std::string> rungs;  // rung number -> its row
  for (const std::string& l : ladder.lines) {
    const std::string t = trim(l);
    if (!starts_with(t, "| ")) continue;
    const std::string cell = trim(t.substr(1, t.find('|', 1) - 1));
    if (is_number(cell)) rungs[std::stoi(cell)] = t;
  }
  const int kernels = static_cast<int>(
      std::count_if(rungs.begin(), rungs.end(), [](const auto& r) { return r.first > 0; }));
  for (size_t i = 0; i < ladder.lines.size(); ++i) {
    const std::vector<std::string> w = words(ladder.lines[i]);
    for (size_t j = 0; j + 2 < w.size(); ++j)
      if (w[j + 1] == "CUDA" && strip_punct(w[j + 2]) == "kernels" && number_word(w[j]) >= 0 &&
          number_word(w[j]) != kernels)
        out.push_back(ladder.name + ":" + std::to_string(i + 1) + ": says " + w[j] +
                      " CUDA kernels, but its table lists " + std::to_string(kernels) +
                      " rungs after cuBLAS");
  }
  for (const std::string& f : rung_files) {
    const int n = std::stoi(f.substr(0, 2));
    if (!rungs.count(n) || rungs[n].find(f) == std::string::npos)
      out.push_back(ladder.name + ": bench/gemm/" + f + " is not rung " + std::to_string(n) +
                    " of the table");
  }
  const int max_rung = rungs.empty() ? 0 : rungs.rbegin()->first;
  const int files = static_cast<int>(rung_files.size());
  for (const auto& [name, d] : docs) {
    for (size_t i = 0; i < d.lines.size(); ++i) {
      const std::vector<std::string> w = words(d.lines[i]);
      for (size_t j = 0; j + 1 < w.size(); ++j) {
        const std::string where = name + ":" + std::to_string(i + 1) + ": ";
        const std::string a = w[j], b = strip_punct(w[j + 1]);
        // "rungs 1 to 8", "rungs 1-8": the rungs of this folder's files.
        if (a == "rungs" && j + 3 < w.size() && w[j + 1] == "1" && w[j + 2] == "to" &&
            is_number(strip_punct(w[j + 3])) && std::stoi(strip_punct(w[j + 3])) != files)
          out.push_back(where + "rungs 1 to " + strip_punct(w[j + 3]) + ", but bench/gemm/ holds " +
                        std::to_string(files) + " rung files");
        if (a == "rungs" && starts_with(b, "1-") && is_number(b.substr(2)) &&
            std::stoi(b.substr(2)) != files)
          out.push_back(where + "rungs " + b + ", but bench/gemm/ holds " + std::to_string(files) +
                        " rung files");
        if ((a == "rung" || a == "Rung") && is_number(b) && std::stoi(b) > max_rung)
          out.push_back(where + "rung " + b + ", but the ladder's table ends at rung " +
                        std::to_string(max_rung));
      }
    }
  }
  return out;
}

// kernels/cuda/: the name of every __global__ function, and the .cu file it is in.
std::map<std::string, std::string> cuda_kernels() {
  std::map<std::string, std::string> k;
  for (const auto& e : fs::directory_iterator(kRoot / "kernels/cuda")) {
    if (e.path().extension() != ".cu") continue;
    const std::string t = read_text(e.path());
    for (size_t p = t.find("__global__"); p != std::string::npos; p = t.find("__global__", p + 1)) {
      if (p > 0 && is_ident_char(t[p - 1])) continue;
      const size_t paren = t.find('(', p);
      if (paren == std::string::npos) break;
      // The last identifier before the parameter list (after `void`, `__launch_bounds__(...)`).
      std::string head = t.substr(p, paren - p);
      size_t e2 = head.size();
      while (e2 > 0 && std::isspace(static_cast<unsigned char>(head[e2 - 1]))) --e2;
      size_t b = e2;
      while (b > 0 && is_ident_char(head[b - 1])) --b;
      const std::string name = head.substr(b, e2 - b);
      if (name == "__launch_bounds__") {  // the name follows the bounds
        const size_t close = t.find(')', paren), next = t.find('(', close);
        std::string h2 = t.substr(close + 1, next - close - 1);
        size_t f = h2.find_last_not_of(" \n\t");
        size_t g = f;
        while (g != std::string::npos && g > 0 && is_ident_char(h2[g - 1])) --g;
        if (f != std::string::npos)
          k[h2.substr(g, f - g + 1)] = "kernels/cuda/" + e.path().filename().string();
        continue;
      }
      if (!name.empty()) k[name] = "kernels/cuda/" + e.path().filename().string();
    }
  }
  return k;
}

// docs/kernels.md says "N `__global__` functions in M `.cu` files" and is the index of them all.
std::vector<std::string> check_kernel_index(const Doc& d,
                                            const std::map<std::string, std::string>& kernels) {
  std::vector<std::string> out;
  std::set<std::string> files;
  for (const auto& [name, file] : kernels) files.insert(file);
  bool stated = false;
  for (size_t i = 0; i < d.lines.size(); ++i) {
    const std::vector<std::string> w = words(d.lines[i]);
    for (size_t j = 0; j + 4 < w.size(); ++j) {
      if (w[j + 1] != "`__global__`" || strip_punct(w[j + 2]) != "functions" || w[j + 3] != "in")
        continue;
      stated = true;
      const int n = number_word(w[j]), m = j + 4 < w.size() ? number_word(w[j + 4]) : -1;
      if (n != static_cast<int>(kernels.size()) || m != static_cast<int>(files.size()))
        out.push_back(d.name + ":" + std::to_string(i + 1) + ": says " + w[j] +
                      " `__global__` functions in " + (j + 4 < w.size() ? w[j + 4] : "?") +
                      " files, but kernels/cuda/ has " + std::to_string(kernels.size()) + " in " +
                      std::to_string(files.size()));
    }
  }
  if (!stated) out.push_back(d.name + ": no longer says how many `__global__` functions there are");
  std::string text;
  for (const std::string& l : d.lines) text += l + "\n";
  for (const auto& [name, file] : kernels)
    if (!has_word(text, name))
      out.push_back(d.name + ": names no `" + name + "` (a kernel of " + file + ")");
  return out;
}

std::vector<std::string> gemm_rung_files() {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(kRoot / "bench/gemm")) {
    const std::string n = e.path().filename().string();
    if (e.path().extension() == ".cuh" && n.size() > 3 &&
        std::isdigit(static_cast<unsigned char>(n[0])) &&
        std::isdigit(static_cast<unsigned char>(n[1])) && n[2] == '_')
      files.push_back(n);
  }
  std::sort(files.begin(), files.end());
  return files;
}
}  // namespace

TEST_CASE("docs: every repo path the docs name exists and its lines and names match", "[docs]") {
  std::vector<std::string> bad, bare;
  int refs = 0;
  for (const auto& [name, d] : all_docs())
    for (const std::string& p : check_paths(d, &bare, &refs)) bad.push_back(p);
  INFO(joined(bad));
  CHECK(bad.empty());
  CHECK(refs > 300);  // about 470 today; far fewer would mean the scanner stopped seeing them
  CHECK(bare.empty());  // reported in `bad` too; listed again here for the count
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

TEST_CASE("docs: the path check reports moved files and lines and names that drifted", "[docs]") {
  // Line numbers into core/autograd/node.h, found here so that an edit there cannot break this.
  const std::vector<std::string>& node_h = lines_of("core/autograd/node.h");
  long edge = 0, far = 0;  // the line of `struct Edge {`; a line with no SavedTensor near it
  for (long l = 1; l <= static_cast<long>(node_h.size()); ++l) {
    if (starts_with(node_h[l - 1], "struct Edge {")) edge = l;
    bool near = false;
    for (long k = std::max(1L, l - kNear); k <= std::min<long>(node_h.size(), l + kNear); ++k)
      near = near || has_word(node_h[k - 1], "SavedTensor");
    if (!near && far == 0) far = l;
  }
  REQUIRE(edge > 0);
  REQUIRE(far > 0);
  const std::string E = std::to_string(edge), F = std::to_string(far),
                    past = std::to_string(node_h.size() + 1);
  const std::string text =
      "# Title\n"
      "`tests/test_gradcheck.cpp` and [the tape](../tests/test_autograd.cpp) moved; "
      "`no_such_file.cpp`\n"
      "`core/autograd/node.h:" +
      past + "` is past the end; `core/autograd/node.h:" + E +
      "`, `Edge` is right;\n"
      "`core/autograd/node.h:" +
      F +
      "`, `SavedTensor` drifted; `core/autograd/node.h`, `no_such_name` is not there;\n"
      "`no_such_other_name()` in `core/autograd/node.h`. In prose: core/ops/no_such_prose.cpp but "
      "nn/optim is a word.\n"
      "Not the repo's: `build/core/x.cpp`, `DIR/loss.png`, `core/ops/<op>.cpp`, stb_image.h line "
      "1663, `core/dtype.h`.\n"
      "```\n"
      "Breakpoint 1, f() at core/autograd/node.h:" +
      E + "\n" + E +
      "\tstruct Nope {\n"
      "  in kernel no_such_kernel (launched at core/autograd/node.h:" +
      E +
      ") on cuda:0\n"
      "  the access: .../core/autograd/node.h:" +
      E +
      "\n"
      "```\n"
      "## A section on [`core/autograd/node.h`](../core/autograd/node.h)\n"
      "| kernel | what |\n"
      "|---|---|\n"
      "| `Edge` | is there |\n"
      "| `no_such_kernel<T>` | moved out |\n";
  const Doc d = parse("docs/selftest.md", text + "<!-- old: core/dtype.h -->\n");
  std::vector<std::string> bare;
  int count = 0;
  const std::string paths = joined(check_paths(d, &bare, &count)),
                    links = joined(check_links(d, {{d.name, d}}));
  INFO(paths << links << joined(bare));
  CHECK(paths.find(
            "docs/selftest.md:2: no such file or folder: tests/test_gradcheck.cpp (did you mean "
            "tests/core/gradcheck.cpp?)") != std::string::npos);
  CHECK(links.find("tests/test_autograd.cpp (did you mean tests/core/autograd.cpp?)") !=
        std::string::npos);
  CHECK(paths.find("no such file or folder: no_such_file.cpp") != std::string::npos);
  CHECK(paths.find("node.h:" + past + ": core/autograd/node.h has " +
                   std::to_string(node_h.size()) + " lines") != std::string::npos);
  CHECK(paths.find("`Edge` is not") == std::string::npos);
  CHECK(paths.find(
            "docs/selftest.md:4: `SavedTensor` is not within 5 lines of core/autograd/node.h:" +
            F) != std::string::npos);
  CHECK(paths.find("`no_such_name` (named with core/autograd/node.h) is not in") !=
        std::string::npos);
  CHECK(paths.find("`no_such_other_name`") != std::string::npos);
  CHECK(paths.find("core/ops/no_such_prose.cpp") != std::string::npos);
  CHECK(paths.find("nn/optim") == std::string::npos);
  for (const char* skipped : {"build/core", "DIR/", "<op>", "stb_image", "dtype.h"})
    CHECK(paths.find(skipped) == std::string::npos);
  CHECK(paths.find("docs/selftest.md:8: core/autograd/node.h:" + E + ": line " + E +
                   " of core/autograd/node.h is `struct Edge {`, not `struct Nope {`") !=
        std::string::npos);
  CHECK(paths.find("`no_such_kernel` is not within 5 lines") != std::string::npos);
  REQUIRE(bare.size() == 1);  // the access: a line number with nothing to say what is there
  CHECK(bare[0].find("docs/selftest.md:11: core/autograd/node.h:" + E) != std::string::npos);
  CHECK(
      paths.find(
          "docs/selftest.md:17: kernel `no_such_kernel` is in none of the files its section names "
          "(core/autograd/node.h)") != std::string::npos);
  CHECK(paths.find("kernel `Edge`") == std::string::npos);
  CHECK(count == 14);  // the references above; build/, DIR/, <op> and nn/optim are none
}

TEST_CASE("docs: every op card's Kernels field names the registry's kernels", "[docs]") {
  const std::string registry = read_text(kRoot / "core/registry.cpp");
  REQUIRE(registry_rows(registry).size() > 40);  // the parser still sees the rows
  const std::vector<std::string> bad =
      check_op_cards(registry, [](const std::string& card) { return read_text(kRoot / card); });
  INFO(joined(bad));
  CHECK(bad.empty());
}

TEST_CASE("docs: counts stated in prose match the tree", "[docs]") {
  const auto docs = all_docs();
  REQUIRE(docs.count("bench/gemm/README.md"));
  const std::vector<std::string> files = gemm_rung_files();
  REQUIRE(files.size() >= 8);
  std::vector<std::string> bad = check_counts(docs, docs.at("bench/gemm/README.md"), files);
  const auto kernels = cuda_kernels();
  REQUIRE(kernels.size() > 30);  // the scanner still finds them
  CHECK(kernels.count("ce_reduce_kernel"));
  CHECK(kernels.count("reduce_rows_kernel"));  // `__global__ void` on the line before its name
  for (const std::string& p : check_kernel_index(docs.at("docs/kernels.md"), kernels))
    bad.push_back(p);
  INFO(joined(bad));
  CHECK(bad.empty());
}

TEST_CASE("docs: the op-card and count checks report drift", "[docs]") {
  const std::string registry =
      "#define PAIR \"kernels/cpu/a.cpp\", \\\n  \"kernels/cuda/a.cu\"\n"
      "const std::vector<OpInfo>& op_registry() {\n"
      "  {\"one\", \"core/ops/one.cpp\", true, \"OneBackward\", PAIR},\n"
      "  {\"two\", \"core/ops/two.cpp\", true, \"TwoBackward\",\n"
      "   \"kernels/cpu/b.cpp (or kernels/cpu/b_fast.cpp)\", \"kernels/cuda/b.cu\"},\n"
      "};\n";
  const std::map<std::string, std::string> cards = {
      {"core/ops/one.cpp",
       "// Op card: one\n//\n// Math      x\n// Kernels   CPU: kernels/cpu/a.cpp f().\n"
       "//           CUDA: the same in kernels/cuda/a.cu.\n#include <x>\n"},
      {"core/ops/two.cpp",
       "// Op card: two\n// Kernels   CPU: kernels/cpu/b.cpp and kernels/cpu/c.cpp.\n"
       "//           CUDA: kernels/cuda/b.cu\n// Saved     kernels/cpu/not_kernels.cpp\n"}};
  const std::string bad =
      joined(check_op_cards(registry, [&](const std::string& c) { return cards.at(c); }));
  INFO(bad);
  CHECK(bad.find("core/ops/one.cpp") == std::string::npos);
  CHECK(bad.find("core/ops/two.cpp: the op card's Kernels field names kernels/cpu/c.cpp") !=
        std::string::npos);
  CHECK(
      bad.find("core/ops/two.cpp: core/registry.cpp's rows for two name kernels/cpu/b_fast.cpp") !=
      std::string::npos);
  CHECK(bad.find("not_kernels") == std::string::npos);  // the Saved field is not Kernels

  const Doc ladder =
      parse("bench/gemm/README.md",
            "Eight CUDA kernels for the same product.\n\n| rung | file |\n|---|---|\n"
            "| 0 | cuBLAS |\n| 1 | [01_a.cuh](01_a.cuh) |\n| 2 | [02_b.cuh](02_b.cuh) |\n");
  const Doc page = parse("docs/page.md", "The README walks rungs 1 to 3; rung 4 is fast.\n");
  const std::string counts = joined(check_counts({{ladder.name, ladder}, {page.name, page}}, ladder,
                                                 {"01_a.cuh", "02_b.cuh", "03_c.cuh"}));
  INFO(counts);
  CHECK(counts.find("says Eight CUDA kernels, but its table lists 2 rungs") != std::string::npos);
  CHECK(counts.find("bench/gemm/03_c.cuh is not rung 3") != std::string::npos);
  CHECK(counts.find("docs/page.md:1: rung 4, but the ladder's table ends at rung 2") !=
        std::string::npos);
  CHECK(counts.find("docs/page.md:1: rungs 1 to 3") == std::string::npos);  // three files

  const Doc index = parse("docs/kernels.md", "Here: 2 `__global__` functions in 1 `.cu` files.\n"
                                             "`a_kernel` does a.\n");
  const std::string idx = joined(check_kernel_index(index, {{"a_kernel", "kernels/cuda/x.cu"},
                                                            {"b_kernel", "kernels/cuda/y.cu"}}));
  INFO(idx);
  CHECK(idx.find("says 2 `__global__` functions in 1 files, but kernels/cuda/ has 2 in 2") !=
        std::string::npos);
  CHECK(idx.find("names no `b_kernel` (a kernel of kernels/cuda/y.cu)") != std::string::npos);
  CHECK(idx.find("a_kernel") == std::string::npos);
}

TEST_CASE("docs: bare line references fail, and sample lines are anchored", "[docs]") {
  const std::vector<std::string>& node_h = lines_of("core/autograd/node.h");
  long edge = 0;
  for (long l = 1; l <= static_cast<long>(node_h.size()); ++l)
    if (starts_with(node_h[l - 1], "struct Edge {")) edge = l;
  REQUIRE(edge > 2);
  const std::string E = std::to_string(edge), B = std::to_string(edge - 1);
  const std::string text = "# Title\n"
                           "In prose, core/autograd/node.h:" +
                           E +
                           " says nothing about what is there.\n"
                           "## A report\n"
                           "```\n"
                           "  the access: .../core/autograd/node.h:" +
                           E + ", called from .../core/autograd/node.h:" + B +
                           "\n"
                           "  launch of Edge failed at core/autograd/node.h:" +
                           E +
                           ":\n"
                           "```\n"
                           "Line " +
                           E + " is `struct Edge {`, and nothing names line " + B +
                           ".\n"
                           "## Another report\n"
                           "```\n"
                           "  the access: .../core/autograd/node.h:" +
                           E +
                           "\n"
                           "```\n"
                           "Line " +
                           E + " is `struct Nope {`.\n";
  const Doc d = parse("docs/selftest.md", text);
  std::vector<std::string> bare;
  const std::string paths = joined(check_paths(d, &bare));
  INFO(paths);
  CHECK(paths.find("docs/selftest.md:2: core/autograd/node.h:" + E + ": a bare line reference") !=
        std::string::npos);
  CHECK(paths.find("docs/selftest.md:5: core/autograd/node.h:" + E + ":") == std::string::npos);
  CHECK(paths.find("docs/selftest.md:5: core/autograd/node.h:" + B +
                   ": a line number in a sample with nothing that says what is there") !=
        std::string::npos);
  CHECK(paths.find("docs/selftest.md:6:") == std::string::npos);  // launch of Edge failed at
  CHECK(paths.find("docs/selftest.md:11: core/autograd/node.h:" + E + ": line " + E +
                   " of core/autograd/node.h is `struct Edge {`, not `struct Nope {`") !=
        std::string::npos);
  CHECK(bare.size() == 2);

  // An access line anchored by the kernel its report names, and a call site by its twin below.
  const std::string report = "```\n"
                             "  the access: .../core/autograd/node.h:" +
                             E + ", called from core/autograd/node.h:" + B +
                             "\n"
                             "  in kernel Edge (launched at core/autograd/node.h:" +
                             B +
                             ") on cuda:0\n"
                             "  the access: .../core/autograd/node.h:" +
                             E +
                             "\n"
                             "  in kernel SavedTensor (launched at core/autograd/node.h:" +
                             B +
                             ") on cuda:0\n"
                             "```\n";
  const std::string anchored = joined(check_paths(parse("docs/selftest.md", report)));
  INFO(anchored);
  CHECK(anchored.find("docs/selftest.md:2:") == std::string::npos);
  CHECK(anchored.find("docs/selftest.md:4: `SavedTensor` is not within 5 lines") !=
        std::string::npos);
}

// docs/images/tape_*.dot are what the programs print with --dot (ember::autograd::to_dot), and
// the .svg next to each was drawn from it by scripts/draw-tape: every line of every label of the
// .dot is a text of the picture. No Graphviz is needed to check that.
TEST_CASE("docs: the pictures of the tape are the graphs the code builds now", "[docs]") {
  struct Picture {
    std::string name, program, args;
  };
  const std::vector<Picture> pictures = {{"tanh", "start", "--dot tanh"},
                                         {"spiral", "spiral", "--dot"},
                                         {"mnist_mlp", "start", "--dot mnist_mlp"}};
  const auto built = built_programs();
  for (const Picture& p : pictures) {
    const std::string dot_file = "docs/images/tape_" + p.name + ".dot";
    const std::string svg_file = "docs/images/tape_" + p.name + ".svg";
    INFO(dot_file << " (scripts/draw-tape redraws it)");
    REQUIRE(fs::is_regular_file(kRoot / dot_file));
    REQUIRE(fs::is_regular_file(kRoot / svg_file));
    const std::string dot = read_text(kRoot / dot_file), svg = read_text(kRoot / svg_file);
    // The picture shows every label of the graph.
    int labels = 0;
    for (size_t a = dot.find("label=\""); a != std::string::npos; a = dot.find("label=\"", a + 1)) {
      const size_t b = dot.find('"', a + 7);
      REQUIRE(b != std::string::npos);
      std::string label = dot.substr(a + 7, b - a - 7);
      for (size_t n = label.find("\\n"); n != std::string::npos; n = label.find("\\n"))
        label.replace(n, 2, "\n");
      for (const std::string& part : split_lines(label)) {
        std::string text;
        for (char c : part)
          text += c == '&' ? "&amp;" : c == '<' ? "&lt;" : c == '>' ? "&gt;" : std::string(1, c);
        INFO("label text `" << part << "`");
        CHECK(svg.find(">" + text + "</text>") != std::string::npos);
        ++labels;
      }
    }
    CHECK(labels > 5);
    const auto it = built.find(p.program);
    if (it == built.end()) {
      WARN("this build has no " + p.program + ": " + dot_file + " not compared with it");
      continue;
    }
    const RunResult r = run("'" + it->second + "' " + p.args);
    REQUIRE(r.status == 0);
    CHECK(r.output == dot);  // else run scripts/draw-tape and commit docs/images/
  }

  // docs/exercises.md prints the same tape of mnist_mlp node by node and counts it: "30 nodes",
  // "20 op nodes, 10 `AccumulateGrad`s". The picture's graph must have as many.
  const std::string mlp = read_text(kRoot / "docs/images/tape_mnist_mlp.dot");
  int nodes = 0, leaves = 0;
  for (const std::string& l : split_lines(mlp)) {
    const std::string t = trim(l);
    const std::string id = t.substr(0, t.find(' '));  // n7; not n7_in0, an input with no grad
    if (id.size() > 1 && id[0] == 'n' && id.find('_') == std::string::npos &&
        std::isdigit(static_cast<unsigned char>(id[1])) &&
        t.find(" [label=") != std::string::npos && t.find("->") == std::string::npos) {
      ++nodes;
      leaves += t.find("requires_grad") != std::string::npos ? 1 : 0;
    }
  }
  const std::string ex = read_text(kRoot / "docs/exercises.md");
  INFO("docs/images/tape_mnist_mlp.dot: " << nodes << " nodes, " << leaves << " leaves");
  CHECK(ex.find("\n" + std::to_string(nodes) + " nodes\n") != std::string::npos);
  CHECK(ex.find(std::to_string(nodes - leaves) + " op nodes, " + std::to_string(leaves) +
                " `AccumulateGrad`s") != std::string::npos);
}
