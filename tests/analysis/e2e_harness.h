// Helpers of the end-to-end tests of `strata analyze` (e2e_test.cc): temporary
// directories, bounded runs of real programs, `--json` parsed with simdjson
// and `--darshan` parsed from darshan-parser's text layout.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace e2e {

namespace fs = std::filesystem;

inline const std::string kStrata = STRATA_BIN;
inline const std::string kWorkload = E2E_WORKLOAD;

// ---- temporary directories -----------------------------------------------------
// The analyzer classifies files by name: a random mkdtemp suffix must not hold
// a word it reacts to ("val" would make every data set a validation set).
class TempDir {
 public:
  TempDir() {
    static const char* kWords[] = {"val", "test", "eval", "ckpt", "checkpoint", "log", "lib", "etc", "share"};
    for (int attempt = 0; attempt < 100 && path_.empty(); ++attempt) {
      char tmpl[] = "/tmp/strata-e2e-XXXXXX";
      char* d = mkdtemp(tmpl);
      if (!d) throw std::runtime_error("mkdtemp failed");
      std::string p = d, low = p;
      for (char& c : low) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      bool bad = false;
      for (const char* w : kWords) bad = bad || low.find(w, 5) != std::string::npos;
      if (bad) {
        rmdir(d);
        continue;
      }
      path_ = p;
    }
    if (path_.empty()) throw std::runtime_error("no usable temporary directory");
  }
  ~TempDir() {
    if (std::getenv("STRATA_TEST_KEEP")) return;
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string sub(const std::string& name) const { return path_ + "/" + name; }
  std::string mkdir(const std::string& name) const {
    fs::create_directories(sub(name));
    return sub(name);
  }

 private:
  std::string path_;
};

// A file of `size` deterministic bytes.
inline void make_file(const std::string& path, size_t size, unsigned seed = 1) {
  std::string data(size, '\0');
  uint32_t x = 2463534242u + seed;
  for (size_t i = 0; i < size; ++i) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    data[i] = static_cast<char>(x);
  }
  std::ofstream(path, std::ios::binary).write(data.data(), static_cast<std::streamsize>(data.size()));
}

inline std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline void write_all(const std::string& path, const std::string& data) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(data.data(), static_cast<std::streamsize>(data.size()));
}

// ---- running programs -----------------------------------------------------------
struct RunResult {
  int code = -1;    // exit status, or 128 + signal
  int signal = 0;   // the signal that ended it, 0 if it exited
  bool timed_out = false;
  std::string out, err;
};

// Runs argv in its own process group (so that a timeout can end everything
// it started, e.g. Chromium's helpers, and nothing else), stdout/stderr on
// pipes, stdin /dev/null, without the caller's STRATA_* / LD_PRELOAD.
inline RunResult run(const std::vector<std::string>& argv, int timeout_s = 60) {
  RunResult r;
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    setpgid(0, 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    std::vector<std::string> drop;
    for (char** e = environ; *e; ++e)
      if (std::strncmp(*e, "STRATA_", 7) == 0 || std::strncmp(*e, "LD_PRELOAD=", 11) == 0)
        drop.emplace_back(*e, std::strchr(*e, '=') - *e);
    for (auto& k : drop) unsetenv(k.c_str());
    execvp(args[0], args.data());
    dprintf(2, "cannot exec %s: %s\n", args[0], strerror(errno));
    _exit(127);
  }
  setpgid(pid, pid);  // also from the parent: no race with the kill below
  close(out[1]);
  close(err[1]);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  bool open_[2] = {true, true};
  int fds[2] = {out[0], err[0]};
  char buf[65536];
  while (open_[0] || open_[1]) {
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      r.timed_out = true;
      kill(-pid, SIGKILL);
      break;
    }
    pollfd p[2] = {{open_[0] ? fds[0] : -1, POLLIN, 0}, {open_[1] ? fds[1] : -1, POLLIN, 0}};
    int n = poll(p, 2, static_cast<int>(std::min<long>(left, 500)));
    if (n < 0 && errno == EINTR) continue;
    for (int i = 0; i < 2; ++i) {
      if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t k = read(fds[i], buf, sizeof buf);
      if (k > 0)
        (i ? r.err : r.out).append(buf, static_cast<size_t>(k));
      else
        open_[i] = false;
    }
  }
  close(out[0]);
  close(err[0]);
  int status = 0;
  // Bounded too: after a timeout the SIGKILL above ends it promptly.
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) {
    r.code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r.signal = WTERMSIG(status);
    r.code = 128 + r.signal;
  }
  return r;
}

inline std::string describe(const RunResult& r) {
  return "exit " + std::to_string(r.code) + (r.timed_out ? " (timed out)" : "") + "\nstdout:\n" +
         r.out.substr(0, 4000) + "\nstderr:\n" + r.err.substr(0, 4000);
}

// `strata run -q -o trace [-m profile] -- workload args...`
inline RunResult trace_workload(const std::string& trace, const std::vector<std::string>& args,
                                const std::string& mode = "trace") {
  std::vector<std::string> argv = {kStrata, "run", "-q", "-o", trace};
  if (mode != "trace") {
    argv.push_back("-m");
    argv.push_back(mode);
  }
  argv.push_back("--");
  argv.push_back(kWorkload);
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv, 60);
}

// ---- `strata analyze --json` ---------------------------------------------------
struct Json {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  std::string text;
};

inline std::unique_ptr<Json> parse_json(const std::string& text) {
  auto j = std::make_unique<Json>();
  j->text = text;
  auto res = j->parser.parse(j->text);
  if (res.error()) throw std::runtime_error(std::string("bad JSON: ") + simdjson::error_message(res.error()));
  j->root = res.value();
  return j;
}

// Runs `strata analyze trace --json extra...`; fails the test on a non-zero exit.
inline std::unique_ptr<Json> analyze_json(const std::string& trace, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> argv = {kStrata, "analyze", trace, "--json"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  RunResult r = run(argv, 60);
  EXPECT_EQ(r.code, 0) << describe(r);
  return parse_json(r.out);
}

inline int64_t I(simdjson::dom::element e, const char* key) {
  int64_t v = 0;
  auto err = e[key].get(v);
  EXPECT_FALSE(err) << "missing integer key " << key;
  return v;
}

inline double D(simdjson::dom::element e, const char* key) {
  double v = 0;
  auto err = e[key].get(v);
  EXPECT_FALSE(err) << "missing number key " << key;
  return v;
}

inline std::string S(simdjson::dom::element e, const char* key) {
  std::string_view v;
  auto err = e[key].get(v);
  EXPECT_FALSE(err) << "missing string key " << key;
  return std::string(v);
}

inline bool B(simdjson::dom::element e, const char* key) {
  bool v = false;
  auto err = e[key].get(v);
  EXPECT_FALSE(err) << "missing bool key " << key;
  return v;
}

inline std::vector<std::string> strings(simdjson::dom::element e, const char* key) {
  std::vector<std::string> out;
  simdjson::dom::array a;
  if (e[key].get(a)) return out;
  for (auto x : a) {
    std::string_view s;
    if (!x.get(s)) out.emplace_back(s);
  }
  return out;
}

// The "files" entry of `path`; fails (and returns the root) if absent.
inline simdjson::dom::element file_entry(const Json& j, const std::string& path) {
  for (auto f : j.root["files"].get_array()) {
    std::string_view p;
    if (!f["path"].get(p) && p == path) return f;
  }
  ADD_FAILURE() << "no file entry for " << path;
  return j.root;
}

// Sum of the counts of functions named `names` (one of) in layer `layer`.
inline int64_t func_count(const Json& j, const std::string& layer, std::initializer_list<const char*> names) {
  int64_t n = 0;
  for (auto f : j.root["functions"].get_array()) {
    std::string_view l, nm;
    if (f["layer"].get(l) || f["name"].get(nm) || l != layer) continue;
    for (const char* x : names)
      if (nm == x) n += I(f, "count");
  }
  return n;
}

// ---- `strata analyze --darshan` ------------------------------------------------
struct DarshanRecord {
  std::string module;
  int64_t rank = -1;
  std::string id;
  std::string file;
  std::map<std::string, int64_t> c;  // integer counters
  std::map<std::string, double> f;   // _F_ counters
};

struct Darshan {
  std::map<std::string, std::string> header;  // "# key: value" lines
  std::vector<DarshanRecord> records;         // in output order
  std::vector<const DarshanRecord*> of(const std::string& module, const std::string& file) const {
    std::vector<const DarshanRecord*> v;
    for (auto& r : records)
      if (r.module == module && r.file == file) v.push_back(&r);
    return v;
  }
};

// Parses darshan-parser's text layout; checks every data line has the 8
// tab-separated columns <module> <rank> <record id> <counter> <value> <file>
// <mount pt> <fs type>.
inline Darshan parse_darshan(const std::string& text) {
  Darshan d;
  std::istringstream in(text);
  std::string line;
  std::map<std::string, size_t> index;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line[0] == '#') {
      size_t c = line.find(": ");
      if (c != std::string::npos && line.size() > 2) d.header[line.substr(2, c - 2)] = line.substr(c + 2);
      continue;
    }
    std::vector<std::string> col;
    size_t s = 0;
    while (true) {
      size_t t = line.find('\t', s);
      col.push_back(line.substr(s, t == std::string::npos ? std::string::npos : t - s));
      if (t == std::string::npos) break;
      s = t + 1;
    }
    EXPECT_EQ(col.size(), 8u) << "darshan line: " << line;
    if (col.size() != 8) continue;
    std::string key = col[0] + "\t" + col[1] + "\t" + col[2];
    auto it = index.find(key);
    if (it == index.end()) {
      it = index.emplace(key, d.records.size()).first;
      DarshanRecord r;
      r.module = col[0];
      r.rank = std::stoll(col[1]);
      r.id = col[2];
      r.file = col[5];
      d.records.push_back(r);
    }
    DarshanRecord& r = d.records[it->second];
    EXPECT_EQ(r.file, col[5]);
    if (col[3].find("_F_") != std::string::npos)
      r.f[col[3]] = std::stod(col[4]);
    else
      r.c[col[3]] = std::stoll(col[4]);
  }
  return d;
}

inline Darshan analyze_darshan(const std::string& trace) {
  RunResult r = run({kStrata, "analyze", trace, "--darshan"}, 60);
  EXPECT_EQ(r.code, 0) << describe(r);
  return parse_darshan(r.out);
}

}  // namespace e2e
