#include "efg/run.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <vector>

#include "analysis/open_source.h"
#include "efg/report.h"

extern char** environ;

namespace strata::efg {

namespace {

class WarningSink : public Builder {
 public:
  WarningSink(BuilderOptions o, std::ostream& w) : Builder(o), w_(w) {}
  void warning(const std::string& what) override { w_ << "strata efg: warning: " << what << "\n"; }

 private:
  std::ostream& w_;
};

bool write_file(const std::string& path, const std::string& text, std::ostream& err) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  f.flush();
  if (!f) {
    err << "strata efg: error: cannot write " << path << ": " << std::strerror(errno) << "\n";
    return false;
  }
  return true;
}

// The directory of PATH holding an executable `dot`, or "".
std::string find_dot() {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t colon = dirs.find(':', start);
    if (colon == std::string::npos) colon = dirs.size();
    std::string candidate = dirs.substr(start, colon - start);
    candidate = (candidate.empty() ? "." : candidate) + "/dot";
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    start = colon + 1;
  }
  return "";
}

bool draw_svg(const std::string& dot_text, const std::string& svg, std::ostream& err) {
  const std::string dot = find_dot();
  if (dot.empty()) {
    err << "strata efg: error: --svg needs graphviz's `dot` program, which is not on PATH "
           "(install the graphviz package, or write the graph with --dot FILE)\n";
    return false;
  }
  const std::string tmp = svg + ".dot.tmp";
  if (!write_file(tmp, dot_text, err)) return false;
  std::vector<std::string> args = {dot, "-Tsvg", "-o", svg, tmp};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, dot.c_str(), nullptr, nullptr, argv.data(), environ);
  int status = 0;
  if (rc == 0)
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  unlink(tmp.c_str());
  if (rc != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    err << "strata efg: error: " << dot << " failed to draw " << svg << "\n";
    return false;
  }
  return true;
}

int dot_group(const Report& r, int64_t pid, std::ostream& err) {
  if (pid < 0) return r.groups.size() == 1 ? 0 : -1;
  for (size_t i = 0; i < r.groups.size(); ++i)
    for (int64_t p : r.groups[i].pids)
      if (p == pid) return static_cast<int>(i);
  err << "strata efg: error: --pid " << pid << ": no such process with events in the trace\n";
  return -2;
}

}  // namespace

Builder build_input(const std::string& input, const BuilderOptions& opts, std::ostream& warnings) {
  auto source = analysis::open_source(input);
  Builder total(opts);
  for (size_t i = 0; i < source->units().size(); ++i) {
    WarningSink unit(opts, warnings);
    source->read_unit(i, unit);
    total.merge(unit);
  }
  return total;
}

int run_efg(const EfgOptions& o, std::ostream& out, std::ostream& err) {
  BuilderOptions bo;
  if (!parse_file_class(o.file_class, &bo.file_class)) {
    err << "strata efg: error: --file-class " << o.file_class << ": expected dir, path or any\n";
    return 2;
  }
  bo.size_classes = !o.no_size_classes;
  Builder b(bo);
  try {
    b = build_input(o.input, bo, err);
  } catch (const analysis::InputError& e) {
    err << "strata efg: error: " << e.what() << "\n";
    return 1;
  }
  const Report r = make_report(b);
  if (!o.dot_file.empty() || !o.svg_file.empty()) {
    const int g = dot_group(r, o.pid, err);
    if (g == -2) return 2;
    const std::string dot = render_dot(r, g);
    if (!o.dot_file.empty() && !write_file(o.dot_file, dot, err)) return 2;
    if (!o.svg_file.empty() && !draw_svg(dot, o.svg_file, err)) return 2;
  }
  out << (o.json ? render_json(r) : render_text(r));
  return 0;
}

}  // namespace strata::efg
