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

#include "../common/process.h"

namespace e2e {

namespace fs = std::filesystem;

inline const std::string kStrata = STRATA_BIN;
inline const std::string kWorkload = E2E_WORKLOAD;

// The analyzer classifies files by name: a random mkdtemp suffix must not hold
// a word it reacts to ("val" would make every data set a validation set).
class TempDir : public strata_test::TempDir {
 public:
  TempDir()
      : strata_test::TempDir("strata-e2e", {"val", "test", "eval", "ckpt", "checkpoint", "log", "lib", "etc", "share"}) {}
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

inline std::string read_all(const std::string& path) { return strata_test::read_text(path); }
inline void write_all(const std::string& path, const std::string& data) { strata_test::write_text(path, data); }

using strata_test::run;
using strata_test::RunResult;

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
