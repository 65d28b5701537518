// Shared helpers of the core tests: run real programs (bounded in time),
// temporary directories, and the trace as `strata cat` / `strata info --json`
// print it, parsed with simdjson.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <simdjson.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "strata/reader.h"

#include "../common/process.h"

namespace core_test {

namespace fs = std::filesystem;

inline const std::string kStrata = STRATA_BIN;

using strata_test::Child;
using strata_test::finish;
using strata_test::read_text;
using strata_test::run;
using strata_test::RunResult;
using strata_test::start;
using strata_test::wait_for;
using strata_test::write_text;

class TempDir : public strata_test::TempDir {
 public:
  TempDir() : strata_test::TempDir("strata-core") {}
};

// `strata run -o trace [opts] -- cmd...`
inline RunResult strata_run(const std::string& trace, const std::vector<std::string>& cmd,
                            const std::vector<std::string>& opts = {}, int timeout_s = 90) {
  std::vector<std::string> argv = {kStrata, "run", "-o", trace};
  argv.insert(argv.end(), opts.begin(), opts.end());
  argv.push_back("--");
  argv.insert(argv.end(), cmd.begin(), cmd.end());
  return run(argv, timeout_s);
}

// ---- Events as `strata cat` prints them --------------------------------------
struct Event {
  std::string name, cat, path;
  int64_t pid = 0, tid = 0, ts = 0, dur = 0;
  int64_t fd = INT64_MIN, offset = INT64_MIN, size = INT64_MIN, ret = INT64_MIN, err = 0;
  bool has_path = false, has_fd = false, has_offset = false, has_size = false, has_ret = false, has_errno = false;
  std::map<std::string, std::string> tags;  // values as JSON text (ints bare, strings quoted)
};

inline std::string json_value_text(simdjson::dom::element v) {
  switch (v.type()) {
    case simdjson::dom::element_type::INT64: return std::to_string(int64_t(v));
    case simdjson::dom::element_type::UINT64: return std::to_string(uint64_t(v));
    case simdjson::dom::element_type::STRING: return "\"" + std::string(std::string_view(v)) + "\"";
    default: return simdjson::minify(v);
  }
}

inline int64_t as_i64(simdjson::dom::element v) {
  if (v.type() == simdjson::dom::element_type::UINT64) return static_cast<int64_t>(uint64_t(v));
  return int64_t(v);
}

inline Event parse_event(simdjson::dom::object o) {
  Event e;
  for (auto [k, v] : o) {
    if (k == "name") e.name = std::string(std::string_view(v));
    else if (k == "cat") e.cat = std::string(std::string_view(v));
    else if (k == "pid") e.pid = as_i64(v);
    else if (k == "tid") e.tid = as_i64(v);
    else if (k == "ts") e.ts = as_i64(v);
    else if (k == "dur") e.dur = as_i64(v);
    else if (k == "path") { e.path = std::string(std::string_view(v)); e.has_path = true; }
    else if (k == "fd") { e.fd = as_i64(v); e.has_fd = true; }
    else if (k == "offset") { e.offset = as_i64(v); e.has_offset = true; }
    else if (k == "size") { e.size = as_i64(v); e.has_size = true; }
    else if (k == "ret") { e.ret = as_i64(v); e.has_ret = true; }
    else if (k == "errno") { e.err = as_i64(v); e.has_errno = true; }
    else if (k == "tags") {
      for (auto [tk, tv] : simdjson::dom::object(v)) e.tags[std::string(tk)] = json_value_text(tv);
    }
  }
  return e;
}

// Parses JSON lines; every line must be one JSON object.
inline std::vector<Event> parse_events(const std::string& text) {
  std::vector<Event> events;
  simdjson::dom::parser parser;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) {
      simdjson::padded_string line(text.data() + start, end - start);
      simdjson::dom::object o;
      auto error = parser.parse(line).get(o);
      if (error) throw std::runtime_error("bad JSON line: " + text.substr(start, end - start));
      events.push_back(parse_event(o));
    }
    start = end + 1;
  }
  return events;
}

inline std::vector<Event> cat_trace(const std::string& trace) {
  RunResult r = run({kStrata, "cat", trace}, 120);
  EXPECT_EQ(r.code, 0) << r.err;
  return parse_events(r.out);
}

struct Info {
  int64_t events = -1, processes = -1, pids = -1, bytes = -1, dropped = -1, incomplete_files = -1, span_ns = -1;
  double bytes_per_event = -1;
  std::map<std::string, int64_t> by_category, by_name;
};

inline Info parse_info(const std::string& json) {
  Info info;
  simdjson::dom::parser parser;
  simdjson::padded_string s(json);
  simdjson::dom::object o;
  if (parser.parse(s).get(o)) throw std::runtime_error("strata info printed bad JSON: " + json);
  for (auto [k, v] : o) {
    if (k == "events") info.events = as_i64(v);
    else if (k == "processes") info.processes = as_i64(v);
    else if (k == "pids") info.pids = as_i64(v);
    else if (k == "bytes") info.bytes = as_i64(v);
    else if (k == "dropped") info.dropped = as_i64(v);
    else if (k == "incomplete_files") info.incomplete_files = as_i64(v);
    else if (k == "span_ns") info.span_ns = as_i64(v);
    else if (k == "bytes_per_event") info.bytes_per_event = double(v);
    else if (k == "by_category" || k == "by_name") {
      auto& m = k == "by_name" ? info.by_name : info.by_category;
      for (auto [nk, nv] : simdjson::dom::object(v)) m[std::string(nk)] = as_i64(nv);
    }
  }
  return info;
}

inline Info info_trace(const std::string& trace) {
  RunResult r = run({kStrata, "info", trace, "--json"}, 120);
  EXPECT_EQ(r.code, 0) << r.err;
  if (r.code != 0) return Info{};
  return parse_info(r.out);
}

// ---- Selections ----------------------------------------------------------------
inline bool under(const std::string& path, const std::string& dir) {
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/');
}

inline std::vector<Event> select(const std::vector<Event>& events, const std::function<bool(const Event&)>& keep) {
  std::vector<Event> out;
  for (auto& e : events)
    if (keep(e)) out.push_back(e);
  return out;
}

inline std::map<std::string, int64_t> count_by_name(const std::vector<Event>& events) {
  std::map<std::string, int64_t> m;
  for (auto& e : events) ++m[e.name];
  return m;
}

inline int64_t count_if(const std::vector<Event>& events, const std::function<bool(const Event&)>& keep) {
  int64_t n = 0;
  for (auto& e : events) n += keep(e) ? 1 : 0;
  return n;
}

// ---- Process files (via the reader library: pid, ppid, argv) -------------------
struct ProcFile {
  std::string file;
  int64_t pid = 0, ppid = 0;
  std::string exe;
  std::vector<std::string> argv;
  bool footer = false;
  uint64_t events = 0, dropped = 0;
};

inline std::vector<ProcFile> process_files(const std::string& trace) {
  std::vector<ProcFile> out;
  for (auto& f : strata::reader::list_trace_files(trace)) {
    strata::reader::FileReader r(f);
    ProcFile p;
    p.file = f;
    p.pid = r.process().pid;
    p.ppid = r.process().ppid;
    p.exe = r.process().exe;
    p.argv = r.process().argv;
    strata::reader::EventBatch b;
    while (r.next(b)) p.events += b.size_events();
    p.footer = r.has_footer();
    p.dropped = r.stats().events_dropped;
    out.push_back(std::move(p));
  }
  return out;
}

// counter name -> value for `file`, from `strata analyze --darshan` (POSIX module).
inline std::map<std::string, int64_t> darshan_counters(const std::string& trace, const std::string& file) {
  RunResult r = run({kStrata, "analyze", "--darshan", trace}, 60);
  std::map<std::string, int64_t> out;
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> col;
    std::istringstream cols(line);
    for (std::string c; std::getline(cols, c, '\t');) col.push_back(c);
    if (col.size() >= 6 && col[0] == "POSIX" && col[5] == file) out[col[3]] = std::strtoll(col[4].c_str(), nullptr, 10);
  }
  return out;
}

inline std::string join(const std::vector<std::string>& v, const char* sep = " ") {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

inline std::string describe(const Event& e) {
  std::ostringstream o;
  o << e.name << " pid=" << e.pid << " tid=" << e.tid << " path=" << e.path;
  if (e.has_fd) o << " fd=" << e.fd;
  if (e.has_offset) o << " offset=" << e.offset;
  if (e.has_size) o << " size=" << e.size;
  if (e.has_ret) o << " ret=" << e.ret;
  if (e.has_errno) o << " errno=" << e.err;
  return o.str();
}

}  // namespace core_test
