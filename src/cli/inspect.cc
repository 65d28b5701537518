// `strata info`, `strata cat` and `strata convert`.
#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "cli/commands.h"
#include "format/format.h"
#include "cli/live.h"
#include "convert/convert.h"
#include "convert/json_out.h"
#include "importer/detect.h"
#include "strata/command_end.h"
#include "strata/reader.h"

namespace strata::cli {
namespace {
namespace fs = std::filesystem;

struct TraceSummary {
  uint64_t events = 0, dropped = 0, bytes = 0, processes = 0, incomplete_files = 0;
  uint64_t profile_records = 0, profiled_events = 0;  // profile mode
  uint64_t attached = 0;  // processes traced through strata_start (metadata strata.attach)
  int64_t first_ns = INT64_MAX, last_ns = INT64_MIN;
  std::map<std::string, uint64_t> by_category, by_name;
  std::vector<std::string> hosts;
  std::set<std::pair<std::string, int64_t>> pids;  // (host, pid): a process that exec'd has a file per image
  std::vector<int64_t> writing_pids;  // files without footer whose process still runs (here)
  // How each process image ended, to say whether the command was cut short.
  std::vector<reader::ProcessImage> images;
  std::string cut_short;  // "" when the trace does not say so
  std::vector<reader::TraceReader::Skipped> skipped;
  struct Unwritable {
    int64_t pid = 0, err = 0;
    uint64_t lost = 0;
    std::string exe;
  };
  std::vector<Unwritable> unwritable;  // processes that could not create their trace file
  struct Untraced {
    int64_t pid = 0, parent = 0;  // parent: the pid that spawned it (0 for an exec in place)
    std::string program, how;     // how: the call (execve, posix_spawn, vfork, ...)
  };
  std::vector<Untraced> untraced;  // program images started under the runtime that wrote no file
};

// The process starts of a trace that must each have a file of their own:
// the image after a successful exec, and the child of a posix_spawn or vfork
// (which always exec or end). A fork child is the same image and always has
// its file. What has none ran without the runtime: a statically linked or
// setuid program, STRATA_DISABLE, LD_PRELOAD removed. A vfork child whose
// exec failed (Python's subprocess running a missing program) left its errno
// on the vfork event and is no start.
class UntracedFinder {
 public:
  using Key = std::pair<std::string, int64_t>;  // host, pid
  // The exec or spawn events of one file (process image).
  void scan(const reader::FileReader& r, const reader::EventBatch& b) {
    const auto& proc = r.process();
    for (size_t i = 0; i < b.size_events(); ++i) {
      const int kind = kind_of(r, b.name[i]);
      // A vfork whose child's exec failed (its err) started no image.
      if (kind == kSpawn && b.ret[i] > 0 && b.err[i] == 0) {
        spawns_.push_back({proc.hostname, b.ret[i], proc.pid, std::string(r.dict().str(b.path[i])),
                           r.dict().name(b.name[i]).name});
      } else if (kind == kExec && b.ts[i] >= last_exec_ts_) {  // a failed exec records again, later, with -1
        last_exec_ts_ = b.ts[i];
        last_exec_ = {proc.hostname, b.ret[i] == 0 ? proc.pid : -1, 0, std::string(r.dict().str(b.path[i])),
                      r.dict().name(b.name[i]).name};
      }
    }
  }
  // After the last batch of a file.
  void end_file(const reader::FileReader& r) {
    const auto& proc = r.process();
    starts_[{proc.hostname, proc.pid}].push_back(proc.start_mono_ns);
    if (last_exec_.pid > 0) execs_.push_back({last_exec_, proc.start_mono_ns});
    last_exec_ = {};
    last_exec_ts_ = 0;
    kinds_.clear();
  }
  // A process known by other means (a skipped empty file, the unwritable log).
  void also_started(const std::string& host, int64_t pid, uint64_t start) { starts_[{host, pid}].push_back(start); }
  std::vector<TraceSummary::Untraced> result() const {
    std::vector<TraceSummary::Untraced> out;
    for (const auto& [e, image_start] : execs_) {
      auto it = starts_.find({e.host, e.pid});
      const bool next_image = it != starts_.end() && std::any_of(it->second.begin(), it->second.end(),
                                                                 [&](uint64_t s) { return s > image_start; });
      if (!next_image) out.push_back({e.pid, 0, e.program, e.how});
    }
    for (const auto& e : spawns_)
      if (!starts_.contains({e.host, e.pid})) out.push_back({e.pid, e.parent, e.program, e.how});
    return out;
  }

 private:
  enum { kUnknown, kOther, kExec, kSpawn };
  struct Start {
    std::string host;
    int64_t pid = -1, parent = 0;
    std::string program, how;
  };
  int kind_of(const reader::FileReader& r, uint32_t id) {
    if (id >= kinds_.size()) kinds_.resize(id + 1, kUnknown);
    if (kinds_[id] == kUnknown) {
      const auto& nm = r.dict().name(id);
      static const std::set<std::string> execs = {"execve", "execv",  "execvp",  "execvpe", "execl",
                                                  "execlp", "execle", "fexecve", "execveat"};
      const bool proc = nm.category == "PROC";
      kinds_[id] = proc && execs.contains(nm.name) ? kExec
                   : proc && (nm.name == "posix_spawn" || nm.name == "posix_spawnp" || nm.name == "vfork") ? kSpawn
                                                                                                            : kOther;
    }
    return kinds_[id];
  }
  std::vector<uint8_t> kinds_;  // per name id of the current file
  Start last_exec_;
  uint64_t last_exec_ts_ = 0;
  std::vector<std::pair<Start, uint64_t>> execs_;  // successful last exec of an image, the image's start
  std::vector<Start> spawns_;
  std::map<Key, std::vector<uint64_t>> starts_;
};

// The lines processes that could not create their trace file left in the
// trace directory (format/format.h, kUnwritableLog).
std::vector<TraceSummary::Unwritable> read_unwritable(const std::string& dir) {
  std::vector<TraceSummary::Unwritable> out;
  std::ifstream in(dir + "/" + format::kUnwritableLog);
  std::string line;
  while (std::getline(in, line)) {
    TraceSummary::Unwritable u;
    unsigned long long lost = 0;
    long long pid = 0, err = 0;
    int exe_at = -1;
    if (std::sscanf(line.c_str(), "pid=%lld ppid=%*d errno=%lld lost=%llu exe=%n", &pid, &err, &lost, &exe_at) < 3 ||
        exe_at < 0)
      continue;
    u.pid = pid;
    u.err = err;
    u.lost = lost;
    u.exe = line.substr(static_cast<size_t>(exe_at));
    out.push_back(std::move(u));
  }
  return out;
}

// Files cut before their PROCESS block (empty: the disk filled at start) are
// skipped by the reader; say so on stderr.
void report_skipped(const std::vector<reader::TraceReader::Skipped>& skipped) {
  for (const auto& s : skipped) std::fprintf(stderr, "strata: skipped %s: %s\n", s.file.c_str(), s.why.c_str());
}
void report_skipped(const std::string& path) { report_skipped(reader::TraceReader(path).skipped()); }

// The files are read one after another: a large one decodes its blocks on
// the other threads (reader::ReadOptions), ahead of this one.
reader::ReadOptions read_options(unsigned threads) {
  reader::ReadOptions o;
  o.decode_threads = threads > 1 ? threads - 1 : 0;
  return o;
}

TraceSummary summarize(const std::string& path, unsigned threads) {
  reader::TraceReader tr(path);
  TraceSummary s;
  s.skipped = tr.skipped();
  report_skipped(s.skipped);
  UntracedFinder untraced;
  for (const auto& f : tr.files()) {
    reader::FileReader r(f, read_options(threads));
    ++s.processes;
    s.bytes += r.file_size();
    const auto& proc = r.process();
    if (std::find(s.hosts.begin(), s.hosts.end(), proc.hostname) == s.hosts.end()) s.hosts.push_back(proc.hostname);
    s.pids.emplace(proc.hostname, static_cast<int64_t>(proc.pid));
    std::vector<uint64_t> per_name;
    std::vector<int8_t> is_signal;  // per name id: -1 not looked up yet
    reader::ProcessImage image{proc.hostname, static_cast<int64_t>(proc.pid), static_cast<int64_t>(proc.ppid),
                               static_cast<int64_t>(proc.start_mono_ns)};
    reader::EventBatch b;
    while (r.next(b)) {
      size_t n = b.size_events();
      s.events += n;
      untraced.scan(r, b);
      for (size_t i = 0; i < n; ++i) {
        if (b.name[i] >= per_name.size()) per_name.resize(b.name[i] + 1), is_signal.resize(b.name[i] + 1, -1);
        ++per_name[b.name[i]];
        if (is_signal[b.name[i]] < 0) {
          const auto& nm = r.dict().name(b.name[i]);
          is_signal[b.name[i]] = nm.name == "signal" && nm.category == "PROC";
        }
        if (is_signal[b.name[i]]) image.signal = b.ret[i];
      }
      if (n) {
        auto [lo, hi] = std::minmax_element(b.ts.begin(), b.ts.end());
        s.first_ns = std::min(s.first_ns, tr.to_trace_ns(proc, *lo));
        for (size_t i = 0; i < n; ++i) s.last_ns = std::max(s.last_ns, tr.to_trace_ns(proc, b.ts[i] + b.dur[i]));
        (void)hi;
      }
    }
    for (uint32_t id = 0; id < per_name.size(); ++id) {
      if (!per_name[id]) continue;
      const auto& nm = r.dict().name(id);
      s.by_name[nm.name] += per_name[id];
      s.by_category[nm.category] += per_name[id];
    }
    s.dropped += r.stats().events_dropped;
    for (const auto& [key, value] : r.process().metadata) {
      if (key == "strata.attach") {
        ++s.attached;
        break;
      }
    }
    if (r.process().mode == "profile") {
      s.profile_records += r.profile().size();
      s.profiled_events += r.stats().events_written;
    }
    if (!r.has_footer()) {
      if (proc.hostname == this_host() && process_running(proc.pid, proc.start_mono_ns)) s.writing_pids.push_back(proc.pid);
      else ++s.incomplete_files;
    }
    image.footer = r.has_footer();
    s.images.push_back(image);
    untraced.end_file(r);
  }
  if (s.events == 0) s.first_ns = s.last_ns = 0;
  s.cut_short = reader::cut_short(s.images);
  s.unwritable = read_unwritable(path);
  for (const auto& u : s.unwritable) s.dropped += u.lost;
  // Only a whole trace directory holds the images a process exec'd into.
  if (std::error_code ec; fs::is_directory(path, ec)) {
    for (const auto& k : s.skipped)
      if (FileNameParts p; parse_file_name(fs::path(k.file).filename().string(), p))
        untraced.also_started(p.host, p.pid, p.start_mono_ns);
    for (const auto& u : s.unwritable) untraced.also_started(this_host(), u.pid, UINT64_MAX);
    s.untraced = untraced.result();
  }
  return s;
}

// ,"key":[item,item...] with each item written by `write`.
template <class Items, class Write>
void json_array(convert::JsonOut& j, const char* key, const Items& items, Write write) {
  j.raw(",\"");
  j.raw(key);
  j.raw("\":[");
  bool first = true;
  for (const auto& item : items) {
    if (!first) j.ch(',');
    first = false;
    write(item);
  }
  j.ch(']');
}

void print_json(const std::string& path, const TraceSummary& s) {
  convert::FileSink sink(stdout);
  convert::JsonOut j(sink);
  j.raw("{\"trace\":");
  j.str(path);
  j.raw(",\"events\":");
  j.u64(s.events);
  j.raw(",\"processes\":");
  j.u64(s.processes);
  j.raw(",\"pids\":");
  j.u64(s.pids.size());
  j.raw(",\"hosts\":");
  j.u64(s.hosts.size());
  j.raw(",\"bytes\":");
  j.u64(s.bytes);
  j.raw(fmt::format(",\"bytes_per_event\":{:.4f}", s.events ? double(s.bytes) / s.events : 0.0));
  j.raw(",\"dropped\":");
  j.u64(s.dropped);
  j.raw(",\"profile_records\":");
  j.u64(s.profile_records);
  j.raw(",\"profiled_events\":");
  j.u64(s.profiled_events);
  j.raw(",\"cut_short\":");
  if (s.cut_short.empty()) j.raw("null");
  else j.str(s.cut_short);
  j.raw(",\"incomplete_files\":");
  j.u64(s.incomplete_files);
  j.raw(",\"attached\":");
  j.u64(s.attached);
  json_array(j, "writing_pids", s.writing_pids, [&](int64_t pid) { j.i64(pid); });
  json_array(j, "unwritable", s.unwritable, [&](const TraceSummary::Unwritable& u) {
    j.raw("{\"pid\":");
    j.i64(u.pid);
    j.raw(",\"errno\":");
    j.i64(u.err);
    j.raw(",\"lost\":");
    j.u64(u.lost);
    j.raw(",\"exe\":");
    j.str(u.exe);
    j.ch('}');
  });
  json_array(j, "untraced", s.untraced, [&](const TraceSummary::Untraced& u) {
    j.raw("{\"pid\":");
    j.i64(u.pid);
    j.raw(",\"parent\":");
    j.i64(u.parent);
    j.raw(",\"program\":");
    j.str(u.program);
    j.raw(",\"call\":");
    j.str(u.how);
    j.ch('}');
  });
  json_array(j, "skipped", s.skipped, [&](const reader::TraceReader::Skipped& k) {
    j.raw("{\"file\":");
    j.str(k.file);
    j.raw(",\"why\":");
    j.str(k.why);
    j.ch('}');
  });
  j.raw(",\"span_ns\":");
  j.i64(s.last_ns - s.first_ns);
  for (auto [key, map] : {std::pair{"by_category", &s.by_category}, std::pair{"by_name", &s.by_name}}) {
    j.raw(",\"");
    j.raw(key);
    j.raw("\":{");
    bool first = true;
    for (auto& [k, v] : *map) {
      if (!first) j.ch(',');
      first = false;
      j.key(k);
      j.u64(v);
    }
    j.ch('}');
  }
  j.raw("}\n");
}

// The first ten, then how many more (a shell loop over a static tool names
// one per iteration).
void print_untraced(const std::vector<TraceSummary::Untraced>& untraced) {
  if (untraced.empty()) return;
  fmt::print("untraced:       {} program image(s) wrote no trace (statically linked? setuid? runtime disabled or "
             "LD_PRELOAD removed?)\n", untraced.size());
  for (size_t i = 0; i < untraced.size() && i < 10; ++i) {
    const auto& u = untraced[i];
    const std::string what = u.program.empty() ? "" : " " + u.program;
    if (u.parent) fmt::print("                pid {}{} ({} of pid {})\n", u.pid, what, u.how, u.parent);
    else fmt::print("                pid {}{} ({})\n", u.pid, what, u.how);
  }
  if (untraced.size() > 10) fmt::print("                ... {} more (--json lists them)\n", untraced.size() - 10);
}

void print_text(const std::string& path, const TraceSummary& s) {
  fmt::print("trace:          {}\n", path);
  if (s.pids.size() < s.processes)  // exec: one file per program image
    fmt::print("processes:      {} ({} program images: exec) on {} host(s)\n", s.pids.size(), s.processes,
               s.hosts.size());
  else
    fmt::print("processes:      {} on {} host(s)\n", s.processes, s.hosts.size());
  fmt::print("events:         {} ({} dropped)\n", s.events, s.dropped);
  if (s.attached)
    fmt::print("attached:       {} of {} process(es) traced through strata_start (GOT rewriting), the rest preloaded\n",
               s.attached, s.processes);
  fmt::print("bytes on disk:  {} ({:.2f} bytes/event)\n", s.bytes, s.events ? double(s.bytes) / s.events : 0.0);
  fmt::print("time span:      {:.6f} s\n", (s.last_ns - s.first_ns) / 1e9);
  if (s.profile_records)
    fmt::print("profile:        {} file records from {} counted events (strata analyze --darshan)\n",
               s.profile_records, s.profiled_events);
  if (!s.cut_short.empty()) fmt::print("cut short:      {}\n", s.cut_short);
  if (s.incomplete_files) fmt::print("incomplete:     {} file(s) without footer (process killed?)\n", s.incomplete_files);
  for (int64_t pid : s.writing_pids) fmt::print("writing:        a file still being written by pid {}\n", pid);
  for (const auto& k : s.skipped) fmt::print("skipped:        {}: {}\n", k.file, k.why);
  for (const auto& u : s.unwritable)
    fmt::print("unwritable:     pid {} ({}) could not create its trace file ({}): {} events lost\n", u.pid, u.exe,
               std::strerror(static_cast<int>(u.err)), u.lost);
  print_untraced(s.untraced);
  fmt::print("by category:   ");
  for (auto& [k, v] : s.by_category) fmt::print(" {}={}", k, v);
  std::vector<std::pair<uint64_t, std::string>> top;
  for (auto& [k, v] : s.by_name) top.emplace_back(v, k);
  std::sort(top.rbegin(), top.rend());
  fmt::print("\ntop functions: ");
  for (size_t i = 0; i < top.size() && i < 12; ++i) fmt::print(" {}={}", top[i].second, top[i].first);
  fmt::print("\n");
}

// The one input detector (src/importer/detect.h): true for a DFTracer trace,
// false for a strata trace; anything else is an error saying what strata reads.
bool is_dftracer(const std::string& path) {
  importer::Detected d = importer::detect_input(path);
  if (d.kind == importer::InputKind::kDftracer) return true;
  if (d.kind == importer::InputKind::kStrata) return false;
  throw std::runtime_error(d.why);
}

}  // namespace

void add_info(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto threads = std::make_shared<unsigned>(1u);
  auto* cmd = app.add_subcommand("info", "Summary of a trace: processes, events, size, drops");
  cmd->add_option("trace", *path, "Trace directory or file")->required();
  cmd->add_flag("--json", *json, "One JSON object");
  cmd->add_option("-j,--threads", *threads, "threads decoding a large file ahead of the output (default 1)")
      ->check(CLI::Range(1u, 1024u));
  cmd->callback([path, json, threads] {
    if (is_dftracer(*path))
      throw std::runtime_error(*path + ": a DFTracer trace; strata info reads strata traces (use strata cat or strata analyze)");
    TraceSummary s = summarize(*path, *threads);
    if (*json) print_json(*path, s);
    else print_text(*path, s);
  });
}

void add_cat(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  auto threads = std::make_shared<unsigned>(1u);
  auto* cmd = app.add_subcommand("cat", "Print every event as one JSON object per line");
  cmd->add_option("trace", *path, "Trace directory or file")->required();
  cmd->add_option("-j,--threads", *threads, "threads decoding a large file ahead of the output (default 1)")
      ->check(CLI::Range(1u, 1024u));
  cmd->callback([path, threads] {
    if (is_dftracer(*path)) {
      convert::write_json_lines_pfw(*path, stdout);
      return;
    }
    report_skipped(*path);
    convert::write_json_lines(*path, stdout, *threads);
  });
}

void add_convert(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  auto to = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("convert", "Convert a trace to Chrome/Perfetto JSON or DFTracer .pfw");
  cmd->add_option("trace", *path, "Trace directory or file")->required();
  cmd->add_option("--to", *to, "chrome or pfw")->required()->check(CLI::IsMember({"chrome", "pfw"}));
  auto pfw_version = std::make_shared<int>(1);
  cmd->add_option("-o,--output", *out, "Output file (.pfw.gz is gzip-compressed; - for stdout)")->required();
  cmd->add_option("--pfw-version", *pfw_version, "DFTracer format for --to pfw: 1 (1.x, default) or 2 (2.x)")
      ->check(CLI::IsMember({1, 2}));
  cmd->callback([path, to, out, pfw_version] {
    if (is_dftracer(*path)) {
      if (*to != "chrome") throw std::runtime_error(*path + ": already a DFTracer trace (convert it --to chrome)");
      uint64_t n = convert::write_chrome_pfw(*path, *out);
      std::fprintf(stderr, "strata: wrote %llu events to %s\n", static_cast<unsigned long long>(n), out->c_str());
      return;
    }
    report_skipped(*path);
    uint64_t n = *to == "chrome" ? convert::write_chrome(*path, *out) : convert::write_pfw(*path, *out, *pfw_version);
    std::fprintf(stderr, "strata: wrote %llu events to %s\n", static_cast<unsigned long long>(n), out->c_str());
  });
}

}  // namespace strata::cli
