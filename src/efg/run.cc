#include "efg/run.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "analysis/open_source.h"
#include "efg/report.h"

extern char** environ;

namespace strata::efg {

namespace {

// One unit's builder plus the warnings its source reported, printed when the
// unit is merged (in unit order, so output does not depend on thread timing).
class UnitBuilder : public Builder {
 public:
  explicit UnitBuilder(BuilderOptions o) : Builder(o) {}
  void warning(const std::string& what) override { warnings.push_back(what); }
  std::vector<std::string> warnings;
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

Builder build_input(const std::string& input, const BuilderOptions& opts, std::ostream& warnings, int threads) {
  auto source = analysis::open_source(input);
  const size_t nunits = source->units().size();
  unsigned nthreads = threads > 0 ? static_cast<unsigned>(threads)
                                  : std::max(1u, std::min(2u, std::thread::hardware_concurrency()));
  nthreads = static_cast<unsigned>(std::min<size_t>(nthreads, nunits));
  Builder total(opts);
  std::atomic<size_t> next{0};
  std::mutex mu;
  std::string first_error;
  std::vector<std::unique_ptr<UnitBuilder>> done(nunits);
  size_t merged = 0;
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1)) < nunits;) {
      auto unit = std::make_unique<UnitBuilder>(opts);
      try {
        source->read_unit(i, *unit);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lk(mu);
        if (first_error.empty()) first_error = e.what();
        return;
      }
      std::lock_guard<std::mutex> lk(mu);
      done[i] = std::move(unit);
      for (; merged < nunits && done[merged]; ++merged) {
        for (const std::string& w : done[merged]->warnings) warnings << "strata efg: warning: " << w << "\n";
        total.merge(*done[merged]);
        done[merged].reset();
      }
    }
  };
  if (nthreads <= 1) {
    worker();
  } else {
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < nthreads; ++t) pool.emplace_back(worker);
    for (auto& t : pool) t.join();
  }
  if (!first_error.empty()) throw analysis::InputError(first_error);
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
    b = build_input(o.input, bo, err, o.threads);
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
