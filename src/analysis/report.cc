// Terminal, JSON and darshan-parser outputs.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <type_traits>

#include "analysis/analyze.h"
#include "analysis/report_sections.h"
#include "format/json_escape.h"
#include "strata/command_end.h"

namespace strata::analysis {

namespace {

size_t columns(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;  // UTF-8: count lead bytes only
  return n;
}

// Byte offset of column `col` in `s`.
size_t byte_at(std::string_view s, size_t col) {
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++i)
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 && n++ == col) return i;
  return s.size();
}

// Bytes a person reads: B, or 3 significant digits in KiB, MiB, ... (exact
// values stay in the JSON).
std::string fmt_bytes(int64_t b) {
  if (b < 0) return "unknown";
  const char* u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int i = 0;
  while (v >= 1024 && i < 4) {
    v /= 1024;
    ++i;
  }
  char buf[32];
  const char* f = i == 0 || v >= 99.95 ? "%.0f %s" : v >= 9.995 ? "%.1f %s" : "%.2f %s";
  std::snprintf(buf, sizeof buf, f, v, u[i]);
  return buf;
}

// A duration a person reads: 3 significant digits in s, ms, µs or ns
// (exact nanoseconds stay in the JSON).
std::string fmt_s(int64_t ns) {
  if (ns == 0) return "0 s";
  static const char* const units[] = {"ns", "\u00b5s", "ms", "s"};
  double v = static_cast<double>(ns < 0 ? -ns : ns);
  int u = 0;
  while (u < 3 && v >= 999.5) {
    v /= 1000;
    ++u;
  }
  char buf[48];
  const char* f = v >= 99.95 ? "%s%.0f %s" : v >= 9.995 ? "%s%.1f %s" : "%s%.2f %s";
  if (u == 0) f = "%s%.0f %s";
  std::snprintf(buf, sizeof buf, f, ns < 0 ? "-" : "", v, units[u]);
  return buf;
}

std::string fmt_bw(int64_t bytes, int64_t ns) {
  if (bytes < 0 || ns <= 0) return "n/a";
  return fmt_bytes(static_cast<int64_t>(static_cast<double>(bytes) / (static_cast<double>(ns) * 1e-9))) + "/s";
}

std::string fmt_x(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

std::string fmt_pct(int64_t part, int64_t whole) {
  if (whole <= 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
  return buf;
}

std::string plural(uint64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// Rows of a text list: --top N, every row with --all (--json has all).
size_t text_rows(const AnalyzeOptions& o) {
  return o.all ? SIZE_MAX : static_cast<size_t>(std::max(0, o.top));
}

// Processes listed one per line in the job tree without --all.
constexpr size_t kTreeRows = 1;  // the job's root; --all draws the tree

// Shortens `s` to `cols` columns, keeping its start (a command line).
// A command line on one line of text: `python3 -c '<script>'` holds
// newlines, which would break the text report's layout and a Darshan
// header's `#` comments. Control characters print as C escapes.
std::string one_line(std::string_view s) {
  std::string r;
  r.reserve(s.size());
  for (char c : s) {
    if (c == '\n') r += "\\n";
    else if (c == '\r') r += "\\r";
    else if (c == '\t') r += "\\t";
    else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) r += '?';
    else r += c;
  }
  return r;
}

std::string clip_back(const std::string& s, size_t cols) {
  if (s.size() <= cols) return s;
  return s.substr(0, cols > 3 ? cols - 3 : 0) + "...";
}

bool path_selected(const AnalyzeOptions& o, std::string_view path) {
  return o.path.empty() || path.compare(0, o.path.size(), o.path) == 0;
}


// Quoted and escaped by the one escaper of every JSON writer (lossless for
// non-UTF-8 bytes: format/json_escape.h).
std::string json_str(const std::string& s) { return json::quoted(s); }

struct Totals {
  int64_t wall = 0, io = 0, compute = 0, unov_io = 0, unov_compute = 0, app = 0;
  int64_t posix = 0, stdio = 0, meta = 0, data = 0, br = 0, bw = 0;
  size_t threads = 0;
  std::set<std::string> hosts;
  std::set<int64_t> ranks;
};

}  // namespace

bool compute_measured(const Job& job) {
  return std::any_of(job.procs.begin(), job.procs.end(), [](const ProcResult& p) { return p.compute_union > 0; });
}

namespace {

Totals totals(const Job& job) {
  Totals t;
  for (auto& p : job.procs) {
    t.io += p.io_union;
    t.compute += p.compute_union;
    t.unov_io += p.unoverlapped_io();
    t.unov_compute += p.unoverlapped_compute();
    t.app += p.app_union;
    t.posix += p.posix_ns;
    t.stdio += p.stdio_ns;
    t.meta += p.meta_ns;
    t.data += p.data_ns;
    t.br += p.bytes_read;
    t.bw += p.bytes_written;
    if (p.bytes_read == 0 && p.bytes_written == 0) {  // a profile-mode process: its bytes are in its counters
      for (const auto& r : p.posix) {
        t.br += r.second.counters[counters::POSIX_BYTES_READ];
        t.bw += r.second.counters[counters::POSIX_BYTES_WRITTEN];
      }
      for (const auto& r : p.stdio) {
        t.br += r.second.counters[counters::STDIO_BYTES_READ];
        t.bw += r.second.counters[counters::STDIO_BYTES_WRITTEN];
      }
    }
    t.threads += p.threads;
    if (!p.meta.host.empty()) t.hosts.insert(p.meta.host);
    if (p.meta.rank >= 0) t.ranks.insert(p.meta.rank);
  }
  if (job.last_ts > job.first_ts) t.wall = job.last_ts - job.first_ts;
  return t;
}

// How an image ended, as the job tree shows it: "exit 0", "killed by
// SIGTERM", or "" (it exec'd, or died of a signal no handler could see:
// SIGKILL, the out-of-memory killer; its file then has no footer).
std::string end_text(const ProcResult& p) {
  if (p.exit_signal > 0) {
    const char* abbrev = sigabbrev_np(p.exit_signal);
    return "killed by " + (abbrev ? "SIG" + std::string(abbrev) : "signal " + std::to_string(p.exit_signal));
  }
  return p.exit_status >= 0 ? "exit " + std::to_string(p.exit_status) : std::string();
}

bool failed(const ProcResult& p) { return p.exit_signal > 0 || p.exit_status > 0; }

// The analysis's processes as the images strata::reader::cut_short reads:
// a file without footer is one the reader warned about.
std::string cut_short(const Job& job) {
  std::set<std::string> unfinished;
  for (const auto& w : job.warnings)
    for (const char* why : {": no footer", ": truncated"})
      if (size_t at = w.find(why); at != std::string::npos) unfinished.insert(w.substr(0, at));
  std::vector<reader::ProcessImage> images;
  for (const auto& p : job.procs) {
    const std::string file = std::filesystem::path(p.meta.source_file).filename().string();
    images.push_back({p.meta.host, p.meta.pid, p.meta.ppid, p.meta.start_ns >= 0 ? p.meta.start_ns : p.first_ts,
                      p.exit_signal, file.empty() || !unfinished.count(file)});
  }
  return reader::cut_short(images);
}

// The process tree: one row per process image. An image that replaced
// another by exec (same pid, started later) is drawn under it as "exec";
// a forked child under the image of its parent that was running when it started.
void print_tree(const Job& job, const ProcessNaming& naming, size_t max_rows, std::ostream& out) {
  const size_t n = job.procs.size();
  auto start_of = [&](size_t i) {
    const ProcResult& p = job.procs[i];
    return p.meta.start_ns >= 0 ? p.meta.start_ns : p.first_ts;
  };
  std::map<int64_t, std::vector<size_t>> images;  // pid -> images in start order
  for (size_t i = 0; i < n; ++i) images[job.procs[i].meta.pid].push_back(i);
  for (auto& [pid, v] : images)
    std::stable_sort(v.begin(), v.end(), [&](size_t a, size_t b) { return start_of(a) < start_of(b); });
  std::vector<std::vector<size_t>> kids(n);
  std::vector<bool> is_exec(n, false);
  std::vector<size_t> roots;
  for (auto& [pid, v] : images)
    for (size_t k = 0; k < v.size(); ++k) {
      const size_t i = v[k];
      if (k > 0) {
        kids[v[k - 1]].push_back(i);
        is_exec[i] = true;
        continue;
      }
      auto parent = images.find(job.procs[i].meta.ppid);
      if (parent == images.end() || job.procs[i].meta.ppid == pid) {
        roots.push_back(i);
        continue;
      }
      size_t host = parent->second.front();
      for (size_t c : parent->second)
        if (start_of(c) <= start_of(i)) host = c;
      kids[host].push_back(i);
    }
  for (auto& k : kids)
    std::stable_sort(k.begin(), k.end(), [&](size_t a, size_t b) { return start_of(a) < start_of(b); });
  size_t rows = 0;
  std::vector<size_t> unlisted;
  std::vector<bool> seen(n, false);
  std::function<void(size_t, int)> rec = [&](size_t i, int depth) {
    if (seen[i]) return;
    seen[i] = true;
    if (rows++ < max_rows) {
      const ProcResult& p = job.procs[i];
      std::ostringstream line;
      line << "  " << std::string(static_cast<size_t>(depth) * 2, ' ') << (depth ? "\u2514\u2500 " : "")
           << (is_exec[i] ? "exec " : "") << "pid " << p.meta.pid;
      // Names are per pid: an image replaced by exec (or replacing one) shows its command only.
      auto name = naming.names.find(p.meta.pid);
      if (name != naming.names.end() && images[p.meta.pid].size() == 1) line << " " << name->second;
      else if (p.meta.rank >= 0) line << " rank " << p.meta.rank;
      if (!p.meta.host.empty()) line << " @" << p.meta.host;
      line << ", " << plural(p.threads, "thread", "threads") << ", " << p.events << " events";
      if (const std::string end = end_text(p); !end.empty()) line << ", " << end;
      std::string text = line.str();
      // The command fills the rest of the line (the tree drawing is 2 bytes wider than it shows).
      const size_t used = text.size() + 4 - (depth ? 4 : 0);
      if (!p.meta.cmdline.empty() && used + 10 < kTextColumns)
        text += "  $ " + clip_back(one_line(p.meta.cmdline), kTextColumns - used);
      out << text << "\n";
    }
    else
      unlisted.push_back(i);
    for (size_t k : kids[i]) rec(k, depth + 1);
  };
  for (size_t r : roots) rec(r, 0);
  // The processes not listed, summed by kind: "6 DataLoader workers (train), ...".
  // Counted by pid: a fork child's image before its exec and the program it
  // became are one process (a shell loop of 300 `cat` is 300 cat, not 600),
  // and a listed process's other images are not "more processes".
  std::vector<bool> is_unlisted(n, false);
  for (size_t i : unlisted) is_unlisted[i] = true;
  std::set<int64_t> listed, more;
  for (size_t i = 0; i < n; ++i)
    if (seen[i] && !is_unlisted[i]) listed.insert(job.procs[i].meta.pid);
  for (size_t i : unlisted)
    if (!listed.count(job.procs[i].meta.pid)) more.insert(job.procs[i].meta.pid);
  if (more.empty()) return;
  std::map<std::string, size_t> kinds;
  for (int64_t pid : more) {
    auto k = naming.kinds.find(pid);
    ++kinds[k == naming.kinds.end() ? std::string("other") : k->second];
  }
  std::vector<std::pair<std::string, size_t>> by_count(kinds.begin(), kinds.end());
  std::stable_sort(by_count.begin(), by_count.end(), [](auto& a, auto& b) { return a.second > b.second; });
  std::string line = "  ... " + plural(more.size(), "more process", "more processes") + ":";
  for (size_t i = 0; i < by_count.size(); ++i) line += (i ? ", " : " ") + std::to_string(by_count[i].second) + " " + by_count[i].first;
  const std::string hint = " (--all lists them)";
  out << (columns(line + hint) <= kTextColumns ? line + hint : clip_words(line, kTextColumns)) << "\n";
  // A failure among them is worth its line: the job's result may hang on it.
  std::vector<size_t> failures;
  for (size_t i : unlisted)
    if (more.count(job.procs[i].meta.pid) && failed(job.procs[i])) failures.push_back(i);
  if (failures.empty()) return;
  std::string failed_line = "      " + std::to_string(failures.size()) + " of them failed:";
  for (size_t k = 0; k < failures.size() && k < 3; ++k) {
    const ProcResult& p = job.procs[failures[k]];
    auto name = naming.names.find(p.meta.pid);
    failed_line += std::string(k ? ", " : " ") + "pid " + std::to_string(p.meta.pid) +
                   (name != naming.names.end() ? " " + name->second : std::string()) + " " + end_text(p);
  }
  if (failures.size() > 3) failed_line += " and " + std::to_string(failures.size() - 3) + " more";
  out << failed_line << "\n";
}

// Every event tagged with each epoch, inside its loop or not: the --by epoch
// breakdown (Job::by_epoch keeps the inside of the loops only).
std::map<std::string, TagAgg> every_epoch_event(const Job& job) {
  std::map<std::string, TagAgg> all = job.by_epoch;
  for (const auto& [value, agg] : job.by_epoch_outside) all[value].merge(agg);
  return all;
}

void print_dl_summary(const Job& job, const AnalyzeOptions& o, std::ostream& out) {
  DlSummary s = dl_summary(job);
  if (!s.present) return;
  char line[512];
  out << "== Deep learning == ";
  out << (s.epochs.empty() ? std::string("no epoch tags") : plural(s.epochs.size(), "epoch", "epochs") + " (tag \"epoch\")");
  if (s.batches) {
    out << ", " << plural(s.batches, "batch", "batches") << "; all loops waited " << fmt_s(s.loader_wait_ns)
        << " for data";
  } else {
    out << "; no dataloader.next events (loader wait unknown)";
  }
  out << "\n";
  if (!s.epochs.empty()) {
    std::snprintf(line, sizeof line, "  %-8s %10s %11s %7s %8s %10s %10s %11s\n", "epoch", "wall time", "loader wait",
                  "waited", "batches", "compute", "I/O (sum)", "read");
    out << line;
    const bool measured = compute_measured(job);  // else "-": not a 0
    auto row = [&](const std::string& label, const DlSummary::Figures& e, const std::string& waited) {
      std::snprintf(line, sizeof line, "  %-8s %10s %11s %7s %8" PRIu64 " %10s %10s %11s\n", label.substr(0, 8).c_str(),
                    fmt_s(e.wall_ns).c_str(), fmt_s(e.loader_wait_ns).c_str(), waited.c_str(), e.batches,
                    measured ? fmt_s(e.compute_ns).c_str() : "-", fmt_s(e.io_ns).c_str(),
                    job.sizes_known ? fmt_bytes(e.bytes_read).c_str() : "?");
      out << line;
    };
    for (auto& e : s.epochs) row(e.value, e, fmt_pct(static_cast<int64_t>(e.waited() * 1e6), 1000000));
    // Outside the training loops: validation passes and checkpoints between
    // epochs, and what came after the last one (a final evaluation, exit).
    DlSummary::Figures between, after;
    bool loops_known = false;
    for (size_t i = 0; i < s.epochs.size(); ++i) {
      const DlSummary::Figures& x = s.epochs[i].outside;
      loops_known = loops_known || s.epochs[i].loop_known;
      DlSummary::Figures& to = i + 1 == s.epochs.size() ? after : between;
      to.wall_ns += x.wall_ns;
      to.loader_wait_ns += x.loader_wait_ns;
      to.batches += x.batches;
      to.compute_ns += x.compute_ns;
      to.io_ns += x.io_ns;
      to.bytes_read += x.bytes_read;
      to.events += x.events;
    }
    if (o.all && loops_known && (between.events || between.wall_ns > 0)) row("between", between, "");
    if (loops_known && (after.events || after.wall_ns > 0)) row("after", after, "");
    size_t loops = 0;
    for (auto& e : s.epochs) loops = std::max(loops, e.loops);
    if (loops > 1) out << "  (waited: the mean over the " << loops << " training loops, one per rank)\n";
    // The header's total counts every loader's waits ("all loops"), the rows
    // the training loops' only; --all gives the split (one line more than a
    // screen holds by default).
    int64_t in_loops = 0;
    for (auto& e : s.epochs) in_loops += e.loader_wait_ns;
    if (o.all && s.batches && s.loader_wait_ns > in_loops)
      out << "  (waited for data: " << fmt_s(in_loops) << " in the epochs' training loops + "
          << fmt_s(s.loader_wait_ns - in_loops) << " in other loaders' passes)\n";
    // --by epoch asked: this table is its answer (the tagged events of the
    // training loop); said, so that the option is not taken as ignored.
    if (o.by == "epoch" && !o.all) out << "  (--by epoch: the rows above; --all adds every event tagged with an epoch)\n";
  }
  if (s.has_first_vs_rest) {
    auto ratio = [](int64_t a, double b) { return b > 0 ? " (x" + fmt_x(static_cast<double>(a) / b) + ")" : std::string(); };
    std::snprintf(line, sizeof line, "%s vs %s", fmt_s(s.first_io_ns).c_str(),
                  fmt_s(static_cast<int64_t>(s.rest_io_ns)).c_str());
    auto list = [](const std::vector<std::string>& v) {
      std::string r;
      for (auto& x : v) r += (r.empty() ? "" : ", ") + x;
      return r;
    };
    out << "first epoch " << s.epochs[0].value << " vs mean of " << list(s.compared) << ": I/O " << line
        << ratio(s.first_io_ns, s.rest_io_ns);
    std::snprintf(line, sizeof line, "%s vs %s", fmt_s(s.first_read_ns).c_str(),
                  fmt_s(static_cast<int64_t>(s.rest_read_ns)).c_str());
    out << ", read " << line << ratio(s.first_read_ns, s.rest_read_ns) << "\n";
    if (!s.left_out.empty())
      out << "  (left out: " << (s.left_out.size() == 1 ? "epoch " : "epochs ") << list(s.left_out)
          << ", not as many loader batches as the first)\n";
  }
  if (!o.all) {
    // One line; --all draws the table.
    out << "files by role:";
    for (size_t i = 0; i < s.roles.size(); ++i) {
      const Role r = s.roles[i].role;
      out << (i ? ", " : " ") << (r == Role::kTrainData ? "train" : r == Role::kValData ? "validation" : role_name(r))
          << " " << s.roles[i].files;
    }
    out << "\n";
  } else {
  std::snprintf(line, sizeof line, "  %-20s %7s %9s %12s %9s %12s %16s\n", "files by role", "files", "reads", "read",
                "writes", "written", "I/O time (sum)");
  out << line;
  for (auto& r : s.roles) {
    std::snprintf(line, sizeof line, "  %-20s %7zu %9" PRIu64 " %12s %9" PRIu64 " %12s %16s\n", role_name(r.role), r.files,
                  r.reads, fmt_bytes(r.bytes_read).c_str(), r.writes, fmt_bytes(r.bytes_written).c_str(),
                  fmt_s(r.read_ns + r.write_ns + r.meta_ns).c_str());
    out << line;
  }
  }
  if (!s.checkpoint_calls.empty()) {
    out << "checkpoint calls (app events, category checkpoint):";
    for (size_t i = 0; i < s.checkpoint_calls.size(); ++i)
      out << (i ? "," : "") << " " << s.checkpoint_calls[i].name << " " << s.checkpoint_calls[i].count << "x "
          << fmt_s(s.checkpoint_calls[i].ns);
    out << "\n";
  }
}

}  // namespace

namespace {

}  // namespace

std::string fit_width(const std::string& text, size_t cols) {
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    std::string_view line(text.data() + start, (nl == std::string::npos ? text.size() : nl) - start);
    const size_t indent = line.find_first_not_of(' ') == std::string_view::npos ? 0 : line.find_first_not_of(' ');
    const std::string cont(std::min<size_t>(indent + 5, cols / 2), ' ');
    bool first = true;
    while (columns(line) > (first ? cols : cols - cont.size())) {
      const size_t room = first ? cols : cols - cont.size();
      const size_t limit = byte_at(line, room);
      size_t cut = line.rfind(' ', limit);
      const size_t floor = first ? indent : 0;
      if (cut == std::string_view::npos || cut <= floor) cut = limit;  // no space: break the word
      out.append(first ? "" : cont).append(line.substr(0, cut)).append("\n");
      line.remove_prefix(cut);
      while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
      first = false;
    }
    out.append(first ? "" : cont).append(line);
    if (nl == std::string::npos) break;
    out += '\n';
    start = nl + 1;
  }
  return out;
}

std::string clip_words(const std::string& text, size_t cols) {
  if (columns(text) <= cols) return text;
  const std::string_view head(text.data(), byte_at(text, cols > 4 ? cols - 4 : 0));
  const size_t space = head.rfind(' ');
  return std::string(head.substr(0, space == std::string_view::npos || space == 0 ? head.size() : space)) + " ...";
}

void text_header([[maybe_unused]] const Job& job, [[maybe_unused]] const AnalyzeOptions& o, std::ostream& out) {

  out << "strata analyze: " << o.input << " (" << job.source_kind << ", " << job.units.size() << " file(s), "
      << job.events << " events)\n";
  if (const std::string c = cut_short(job); !c.empty()) out << "cut short: " << c << "\n";
  for (auto& w : job.warnings) out << "warning: " << w << "\n";
  if (!job.approximate.empty()) {
    out << "approximate: ";
    size_t i = 0;
    for (auto& f : job.approximate) out << (i++ ? ", " : "") << f;
    out << " (DFTracer aggregated records: counts and bytes exact, per-call values from min/max/sum)\n";
  }
}

void text_dl([[maybe_unused]] const Job& job, [[maybe_unused]] const AnalyzeOptions& o, std::ostream& out) {
  print_dl_summary(job, o, out);
}

void text_summary(const Job& job, const AnalyzeOptions& o, const ProcessNaming& naming, std::ostream& out) {
  Totals t = totals(job);
  if (o.all) out << "== Job summary (times summed over processes; unions exact per process) ==\n";
  std::set<std::pair<std::string, int64_t>> pids;  // a process that exec'd has one entry per program image
  for (const auto& p : job.procs) pids.emplace(p.meta.host, p.meta.pid);
  out << (o.all ? "" : "== Job == ") << plural(pids.size(), "process", "processes");
  if (pids.size() < job.procs.size()) out << " (" << job.procs.size() << " program images: exec)";
  out << ", "
      << plural(t.threads, "thread", "threads") << ", " << plural(std::max<size_t>(1, t.hosts.size()), "host", "hosts");
  if (!t.ranks.empty()) out << ", " << plural(t.ranks.size(), "rank", "ranks");
  out << ", wall time " << fmt_s(t.wall);
  if (job.sizes_known)
    out << "; read " << fmt_bytes(t.br) << ", written " << fmt_bytes(t.bw) << "\n";
  else
    out << "; bytes read/written: unknown (no sizes in the trace)\n";
  print_tree(job, naming, o.all ? SIZE_MAX : kTreeRows, out);
  // Unions are per process; several processes' are summed (and may exceed the wall time).
  out << (job.procs.size() > 1 ? "I/O (sum of unions) " : "I/O (union) ") << fmt_s(t.io)
      << "; calls: POSIX " << fmt_s(t.posix) << ", STDIO " << fmt_s(t.stdio) << "; metadata " << fmt_s(t.meta)
      << ", data " << fmt_s(t.data) << "\n";
  if (compute_measured(job))
    out << "compute (union) " << fmt_s(t.compute) << "; app regions " << fmt_s(t.app) << "; unoverlapped: I/O "
        << fmt_s(t.unov_io) << ", compute " << fmt_s(t.unov_compute) << "\n";
  else if (t.app > 0)  // DataLoader events, no model: the loop's work was not marked
    out << "compute: not measured (no compute regions; app regions " << fmt_s(t.app) << ")\n";
  else  // a plain program: strata sees its calls, not its CPU time
    out << "compute: not measured (no app regions: strata's Python layer or the strata API marks them)\n";
  if (o.all && job.sizes_known)
    out << "bytes read " << fmt_bytes(t.br) << " (" << t.br << " B), written " << fmt_bytes(t.bw) << " (" << t.bw
        << " B); bandwidth over I/O time " << fmt_bw(t.br + t.bw, t.io) << "\n";
}

void text_functions([[maybe_unused]] const Job& job, [[maybe_unused]] const AnalyzeOptions& o, std::ostream& out) {
  // I/O calls first: app regions (dataloader.worker, an epoch) are nested
  // spans whose times dwarf the calls' and that the other sections explain.
  std::vector<const FuncStats*> fsv;
  for (auto& [k, f] : job.funcs) fsv.push_back(&f);
  std::sort(fsv.begin(), fsv.end(), [](auto* a, auto* b) {
    const bool a_app = a->layer == Layer::kApp, b_app = b->layer == Layer::kApp;
    return a_app != b_app ? b_app : a->total_ns > b->total_ns;
  });
  const size_t rows = std::min(fsv.size(), text_rows(o));
  out << "== Functions";
  if (fsv.size() > rows) out << " (top " << rows << " of " << fsv.size() << ": I/O by time, then app regions; --top N, --all)";
  out << " ==\n";
  char line[512];
  std::snprintf(line, sizeof line, "  %-6s %-20s %8s %5s %9s %8s %8s %8s %8s %8s\n", "layer", "function", "count",
                "errs", "time", "min B", "p25 B", "median B", "p75 B", "max B");
  out << line;
  for (size_t i = 0; i < rows; ++i) {
    const FuncStats* f = fsv[i];
    auto q = [&](double x) -> std::string {
      if (!job.sizes_known || f->sizes.n == 0) return f->layer <= Layer::kStdio && !job.sizes_known ? "?" : "-";
      return std::to_string(x < 0 ? (x < -1.5 ? f->sizes.max : f->sizes.min) : f->sizes.quantile(x));
    };
    std::snprintf(line, sizeof line, "  %-6s %-20s %8" PRIu64 " %5" PRIu64 " %9s %8s %8s %8s %8s %8s\n",
                  layer_name(f->layer), f->name.substr(0, 20).c_str(), f->count, f->errors, fmt_s(f->total_ns).c_str(),
                  q(-1).c_str(), q(0.25).c_str(), q(0.5).c_str(), q(0.75).c_str(), q(-2).c_str());
    out << line;
  }
  std::string regions;
  for (size_t i = rows; i < fsv.size(); ++i)
    if (fsv[i]->layer == Layer::kApp)
      regions += (regions.empty() ? "" : ", ") + fsv[i]->name + " " + fmt_s(fsv[i]->total_ns);
  if (!regions.empty()) out << clip_words("  app regions: " + regions, kTextColumns) << "\n";
}

namespace {

// "x3.00 = 3.00 opens/file x 1.00/open": how often the files were opened
// (epochs) apart from how much of a file one open reads.
std::string reread_split(double reread, double opens, double per_open) {
  std::string s = "x" + fmt_x(reread);
  if (per_open >= 0) s += " = " + fmt_x(opens) + " opens/file x " + fmt_x(per_open) + "/open";
  return s;
}

// One file of the text file list: two lines, four with --all (evidence, pattern).
void print_file(const FileAgg& f, const Job& job, const AnalyzeOptions& o, std::ostream& out) {
  FileVerdict v = classify_file(f, job);
  out << "  " << f.path << "  (" << role_name(v.role) << ", ";
  if (job.sizes_known) out << fmt_bytes(f.extent) << ", ";
  out << v.access << ", "
      << (v.shared ? "shared by " + std::to_string(v.nprocs) + " processes" : "one process") << ")\n";
  // Compact, so that one file takes two lines of a 100-column screen.
  out << "     r/w/open/stat " << f.reads << "/" << f.writes << "/" << f.opens << "/" << f.stats;
  if (job.sizes_known) out << "; bytes r/w " << fmt_bytes(f.bytes_read) << "/" << fmt_bytes(f.bytes_written);
  out << "; time r/w/meta " << fmt_s(f.read_ns) << "/" << fmt_s(f.write_ns) << "/" << fmt_s(f.meta_ns) << "\n";
  if (!o.all) return;
  out << "     role evidence [";
  for (size_t i = 0; i < v.evidence.size(); ++i) out << (i ? "; " : "") << v.evidence[i];
  out << "]\n     pattern " << v.pattern << ", reads " << v.read_extent;
  if (v.reread >= 0) out << ", re-read " << reread_split(v.reread, static_cast<double>(f.opens - f.fdopens), v.per_open);
  out << (v.metadata_bound ? ", metadata-bound" : ", data-bound") << "\n";
}

void print_dataset_dir(const DatasetDir& d, const Job& job, std::ostream& out) {
  out << "  " << role_name(d.role) << " " << d.dir << ": " << plural(d.files, "file", "files");
  if (job.sizes_known) out << ", " << fmt_bytes(d.extent);
  if (d.epochs) out << ", " << plural(d.epochs, "epoch", "epochs");
  out << ", " << plural(d.readers, "reader", "readers") << " (";
  if (d.min_readers == d.max_readers)
    out << d.max_readers;
  else
    out << d.min_readers << "-" << d.max_readers;
  out << "/file)\n     ";
  if (job.sizes_known) {
    out << "read " << fmt_bytes(d.bytes_read);
    if (d.reread >= 0)
      out << " (" << reread_split(d.reread, static_cast<double>(d.file_opens) / static_cast<double>(d.files), d.per_open) << ")";
    out << ", ";
  }
  out << d.whole_files << "/" << d.files << " whole; read/meta " << fmt_s(d.read_ns) << "/" << fmt_s(d.meta_ns) << "\n";
}

// Checkpoint files of one directory: totals, then each file's name, access and I/O time.
void print_checkpoint_dir(const std::string& dir, const std::vector<const FileAgg*>& files, const Job& job,
                          std::ostream& out) {
  int64_t extent = 0, written = 0, read = 0;
  std::set<int64_t> pids;
  std::string names;
  for (const FileAgg* f : files) {
    extent += f->extent;
    written += f->bytes_written;
    read += f->bytes_read;
    for (const FileProcRef fp : f->procs())
      if (fp.pf.reads + fp.pf.writes) pids.insert(fp.pid);
    names += (names.empty() ? "" : "; ") + std::string(f->path.substr(dir.size())) + " " + std::string(classify_file(*f, job).access) + " " +
             fmt_s(f->read_ns + f->write_ns + f->meta_ns);
  }
  out << "  checkpoint " << dir << ": " << plural(files.size(), "file", "files");
  if (job.sizes_known) out << ", " << fmt_bytes(extent);
  out << ", " << plural(pids.size(), "process", "processes") << "\n";
  const std::string bytes = job.sizes_known ? "wrote " + fmt_bytes(written) + ", read " + fmt_bytes(read) + ": " : "";
  out << clip_words("     " + bytes + names, kTextColumns) << "\n";
}

// The environment's files summed in one line.
struct FileTotals {
  size_t files = 0;
  uint64_t opens = 0, reads = 0, writes = 0, stats = 0, mmaps = 0;
  int64_t bytes_read = 0, bytes_written = 0, ns = 0;
  size_t by_role[static_cast<size_t>(Role::kOther) + 1] = {};
  // Files per role name, in the names' order.
  std::map<std::string, size_t> roles() const {
    std::map<std::string, size_t> m;
    for (size_t r = 0; r < std::size(by_role); ++r)
      if (by_role[r]) m[role_name(static_cast<Role>(r))] = by_role[r];
    return m;
  }
  void add(const FileAgg& f, Role role) {
    ++files;
    ++by_role[static_cast<size_t>(role)];
    opens += f.opens;
    reads += f.reads;
    writes += f.writes;
    stats += f.stats;
    mmaps += f.mmaps;
    bytes_read += f.bytes_read;
    bytes_written += f.bytes_written;
    ns += f.read_ns + f.write_ns + f.meta_ns;
  }
};

// The files the text lists one by one without --all: data set and checkpoint files.

}  // namespace

void text_files([[maybe_unused]] const Job& job, [[maybe_unused]] const AnalyzeOptions& o, std::ostream& out) {
  out << "== Files (by I/O time) ==\n";
  if (!o.path.empty()) out << "  only paths starting with " << o.path << " (--path)\n";
  std::vector<DatasetDir> dirs = dataset_dirs(job);
  std::erase_if(dirs, [&](const DatasetDir& d) { return !path_selected(o, d.dir); });
  std::set<std::pair<std::string, Role>> rolled;
  for (auto& d : dirs) rolled.insert({d.dir, d.role});
  // Environment files are summed unless listed (--all) or asked for (--path).
  const bool list_env = o.all || !o.path.empty();
  std::vector<const FileAgg*> fv;
  size_t hidden = 0;
  FileTotals env, rest;
  const bool list_all = o.all || !o.path.empty();
  FileVerdict v;  // reused: one per file of the job
  PathsAhead ahead(job.files);
  for (const FileAgg& f : job.files) {
    ahead.next();
    if (!path_selected(o, f.path)) continue;
    classify_file(f, job, v, /*with_evidence=*/false);
    bool in_dir = false;
    for (auto& [dir, role] : rolled)
      in_dir = in_dir || (role == v.role && f.path.compare(0, dir.size(), dir) == 0);
    if (in_dir) {
      ++hidden;
      continue;
    }
    if (!list_env && is_environment_file(f.path, v.role)) {
      env.add(f, v.role);
      continue;
    }
    if (!list_all && !listed_role(v.role)) {
      rest.add(f, v.role);
      continue;
    }
    fv.push_back(&f);
  }
  std::sort(fv.begin(), fv.end(), [](auto* a, auto* b) {
    int64_t ta = a->read_ns + a->write_ns + a->meta_ns, tb = b->read_ns + b->write_ns + b->meta_ns;
    return ta != tb ? ta > tb : a->path < b->path;
  });
  // One header for the directories: the files they roll up are not listed again.
  if (!dirs.empty()) {
    out << "  data set directories (" << hidden << " file(s) rolled up, not listed below; --json \"dataset_dirs\"):\n";
    for (auto& d : dirs) print_dataset_dir(d, job, out);
  }
  // Checkpoints that share a directory take two lines together (each file its own with --all).
  if (!o.all) {
    std::map<std::string, std::vector<const FileAgg*>> ckpt_dirs;
    for (const FileAgg* f : fv)
      if (file_role(*f, job) == Role::kCheckpoint) ckpt_dirs[parent_dir(f->path)].push_back(f);
    std::erase_if(ckpt_dirs, [](const auto& d) { return d.second.size() < 2; });
    for (const auto& [dir, files] : ckpt_dirs) print_checkpoint_dir(dir, files, job, out);
    std::erase_if(fv, [&](const FileAgg* f) { return ckpt_dirs.count(parent_dir(f->path)) && file_role(*f, job) == Role::kCheckpoint; });
  }
  const size_t shown = std::min(fv.size(), text_rows(o));
  for (size_t i = 0; i < shown; ++i) print_file(*fv[i], job, o, out);
  if (fv.size() > shown) out << "  ... " << fv.size() - shown << " more (--top N, --all)\n";
  if (rest.files) {
    out << "  other: " << plural(rest.files, "file", "files") << " (";
    size_t i = 0;
    for (auto& [role, n] : rest.roles()) out << (i++ ? ", " : "") << role << " " << n;
    out << "; --all lists them), I/O time " << fmt_s(rest.ns) << "\n";
  }
  if (env.files) {
    // One line (--all lists them): what the Python or MPI environment costs.
    out << "  environment (libraries, .pyc, /usr, /dev): " << plural(env.files, "file", "files") << ", "
        << plural(env.stats, "stat", "stats");
    if (job.sizes_known) out << ", read " << fmt_bytes(env.bytes_read);
    out << ", I/O " << fmt_s(env.ns) << "\n";
  }

  // file-per-process vs shared, as the files' verdicts count sharing processes
  size_t fpp = 0, shared = 0;
  for (const FileAgg& f : files_with_data(job)) {
    if (f.reads + f.writes == 0 || !path_selected(o, f.path)) continue;
    classify_file(f, job, v, false);
    // The job's own files, as listed above: the configuration every MPI
    // process reads would make an N-to-N job look like it shared files.
    if (!list_env && is_environment_file(f.path, v.role)) continue;
    (v.shared ? shared : fpp)++;
  }
  out << "I/O strategy: " << fpp << " file(s) accessed by one process, " << shared << " shared file(s)\n";
}

void text_tags([[maybe_unused]] const Job& job, [[maybe_unused]] const AnalyzeOptions& o, std::ostream& out) {
  char line[512];
  const bool measured = compute_measured(job);  // else "-": not a 0
  auto print_tags = [&](const char* title, const std::map<std::string, TagAgg>& m) {
    out << "== " << title << " ==\n";
    std::snprintf(line, sizeof line, "  %-12s %10s %10s %10s %11s %11s %11s %11s\n", "value", "reads", "writes", "meta",
                  "I/O time", "compute", "read", "written");
    out << line;
    // Integer tag values (epochs, steps) in numeric order.
    std::vector<const std::pair<const std::string, TagAgg>*> rows;
    bool numeric = true;
    for (auto& kv : m) {
      rows.push_back(&kv);
      char* endp = nullptr;
      std::strtoll(kv.first.c_str(), &endp, 10);
      numeric = numeric && (kv.first == "(none)" || (!kv.first.empty() && *endp == '\0'));
    }
    if (numeric)  // "(none)" (untagged) first
      std::stable_sort(rows.begin(), rows.end(), [](auto* x, auto* y) {
        const bool nx = x->first == "(none)", ny = y->first == "(none)";
        if (nx || ny) return nx && !ny;
        return std::strtoll(x->first.c_str(), nullptr, 10) < std::strtoll(y->first.c_str(), nullptr, 10);
      });
    for (auto* kv : rows) {
      const std::string& k = kv->first;
      const TagAgg& a = kv->second;
      std::snprintf(line, sizeof line, "  %-12s %10" PRIu64 " %10" PRIu64 " %10" PRIu64 " %11s %11s %11s %11s\n",
                    k.substr(0, 12).c_str(), a.reads, a.writes, a.meta_ops, fmt_s(a.io_ns).c_str(),
                    measured ? fmt_s(a.compute_ns).c_str() : "-", job.sizes_known ? fmt_bytes(a.bytes_read).c_str() : "?",
                    job.sizes_known ? fmt_bytes(a.bytes_written).c_str() : "?");
      out << line;
    }
  };
  // The deep-learning summary's epoch table has these rows already.
  const bool epochs_shown = dl_summary(job).present;
  // --by epoch: the summary's table is that breakdown (--all adds this one).
  if (!o.by.empty() && !(o.by == "epoch" && epochs_shown && !o.all))
    print_tags(("by " + o.by).c_str(), job.by_tag);
  if (!job.by_epoch.empty() && o.by != "epoch" && (o.all || !epochs_shown)) print_tags("by epoch", every_epoch_event(job));
  // The first epoch against the others: in the deep-learning summary above.
}

void text_sizes([[maybe_unused]] const Job& job, [[maybe_unused]] const AnalyzeOptions& o, std::ostream& out) {
  char line[512];
  // Access size histogram (POSIX, Darshan buckets) as text bars.
  if (job.sizes_known) {
    int64_t hist[10] = {};
    for (auto& p : job.procs)
      for (auto& [path, r] : p.posix)
        for (int i = 0; i < 10; ++i) hist[i] += r.counters[counters::POSIX_SIZE_READ_0_100 + i];
    int64_t mx = *std::max_element(hist, hist + 10);
    if (mx > 0 && !o.all) {
      // One line: the buckets that hold reads (--all draws the histogram).
      const char* names[] = {"0-100", "100-1K", "1K-10K", "10K-100K", "100K-1M", "1M-4M", "4M-10M", "10M-100M", "100M-1G", "1G+"};
      out << "POSIX read sizes (bytes: reads):";
      for (int i = 0; i < 10; ++i)
        if (hist[i]) out << " " << names[i] << ": " << hist[i];
      out << "\n";
    } else if (mx > 0) {
      out << "== POSIX read sizes ==\n";
      const char* names[] = {"0-100", "100-1K", "1K-10K", "10K-100K", "100K-1M", "1M-4M", "4M-10M", "10M-100M", "100M-1G", "1G+"};
      for (int i = 0; i < 10; ++i) {
        std::snprintf(line, sizeof line, "  %-9s %10" PRId64 " %s\n", names[i], hist[i],
                      std::string(static_cast<size_t>(40 * hist[i] / mx), '#').c_str());
        out << line;
      }
    }
  }
}

void text_staging([[maybe_unused]] const Job& job, [[maybe_unused]] const AnalyzeOptions& o, std::ostream& out) {
  if (o.stage_capacity >= 0) {
    StageAdvice a = stage_advice(job, o.stage_capacity, o.stage_speedup);
    out << "== Staging advice (capacity " << fmt_bytes(o.stage_capacity) << ", fast tier x" << o.stage_speedup << ") ==\n";
    auto more = [&](const std::vector<StageAdvice::Group>& g, size_t shown) {
      if (g.size() <= shown) return;
      size_t files = 0;
      for (size_t i = shown; i < g.size(); ++i) files += g[i].files;
      out << "  ... " << g.size() - shown << " more (" << plural(files, "file", "files") << "; --json for all)\n";
    };
    size_t shown = 0;
    for (auto& g : a.groups) {
      if (shown == text_rows(o)) break;
      ++shown;
      out << "  stage " << g.name << ": ";
      if (g.is_dir) out << plural(g.files, "file", "files") << ", ";
      out << fmt_bytes(g.size) << ", read " << fmt_x(g.reread) << "x, saves ~" << fmt_s(g.saved_ns) << "\n";
    }
    more(a.groups, shown);
    if (a.picks.empty()) out << "  nothing worth staging\n";
    out << "  total " << plural(a.picks.size(), "file", "files") << ", " << fmt_bytes(a.used)
        << ", expected I/O time saved " << fmt_s(a.saved_ns);
    // Files not worth staging only with --all: the screen goes to what to do.
    if (!o.all && !a.warning_groups.empty())
      out << " (not worth staging: " << plural(a.warning_groups.size(), "item", "items") << ", --all)";
    out << "\n";
    if (!o.all) return;
    shown = 0;
    for (auto& g : a.warning_groups) {
      if (shown == text_rows(o)) break;
      ++shown;
      out << "  do not stage " << g.name << ": ";
      if (g.is_dir) out << plural(g.files, "file", "files") << ", ";
      out << fmt_bytes(g.size) << ", ";
      if (g.reason == "read once")
        out << "read once: staging costs a full read\n";
      else
        out << (g.is_dir ? "each larger than" : "larger than") << " the capacity\n";
    }
    more(a.warning_groups, shown);
  }
}

void json_header([[maybe_unused]] const Job& job, [[maybe_unused]] const AnalyzeOptions& o, std::ostream& out) {
  out << "{\n \"input\": " << json_str(o.input) << ",\n \"source\": " << json_str(job.source_kind)
      << ",\n \"events\": " << job.events << ",\n \"sizes_known\": " << (job.sizes_known ? "true" : "false")
      << ",\n \"cut_short\": ";
  if (const std::string c = cut_short(job); !c.empty()) out << json_str(c);
  else out << "null";
  out << ",\n \"warnings\": [";
  for (size_t i = 0; i < job.warnings.size(); ++i) out << (i ? "," : "") << json_str(job.warnings[i]);
  out << "],\n \"approximate\": " << (job.approximate.empty() ? "false" : "true") << ", \"approximate_figures\": [";
  {
    size_t i = 0;
    for (auto& f : job.approximate) out << (i++ ? "," : "") << json_str(f);
  }
  out << "]";
}

void json_summary([[maybe_unused]] const Job& job, [[maybe_unused]] const AnalyzeOptions& o, std::ostream& out) {
  Totals t = totals(job);
  // Compute without compute regions is unknown: null, not 0.
  const bool measured = compute_measured(job);
  auto ns_or_null = [measured](int64_t ns) { return measured ? std::to_string(ns) : std::string("null"); };
  out << ",\n \"summary\": {\"processes\": " << job.procs.size() << ", \"threads\": " << t.threads
      << ", \"hosts\": " << std::max<size_t>(1, t.hosts.size()) << ", \"ranks\": " << t.ranks.size()
      << ", \"wall_ns\": " << t.wall << ", \"io_ns\": " << t.io << ", \"posix_ns\": " << t.posix
      << ", \"stdio_ns\": " << t.stdio << ", \"meta_ns\": " << t.meta << ", \"data_ns\": " << t.data
      << ", \"app_ns\": " << t.app << ", \"compute_measured\": " << (measured ? "true" : "false")
      << ", \"compute_ns\": " << ns_or_null(t.compute) << ", \"unoverlapped_io_ns\": " << t.unov_io
      << ", \"unoverlapped_compute_ns\": " << ns_or_null(t.unov_compute) << ", \"bytes_read\": " << (job.sizes_known ? t.br : -1)
      << ", \"bytes_written\": " << (job.sizes_known ? t.bw : -1) << "},\n \"processes\": [";
  for (size_t i = 0; i < job.procs.size(); ++i) {
    auto& p = job.procs[i];
    out << (i ? ",\n  " : "\n  ") << "{\"pid\": " << p.meta.pid << ", \"ppid\": " << p.meta.ppid
        << ", \"rank\": " << p.meta.rank << ", \"host\": " << json_str(p.meta.host)
        << ", \"cmdline\": " << json_str(p.meta.cmdline) << ", \"threads\": " << p.threads
        << ", \"events\": " << p.events << ", \"first_ns\": " << p.first_ts << ", \"last_ns\": " << p.last_ts
        << ", \"io_ns\": " << p.io_union << ", \"compute_ns\": " << ns_or_null(p.compute_union)
        << ", \"unoverlapped_io_ns\": " << p.unoverlapped_io()
        << ", \"unoverlapped_compute_ns\": " << ns_or_null(p.unoverlapped_compute()) << ", \"bytes_read\": " << p.bytes_read
        << ", \"bytes_written\": " << p.bytes_written << ", \"exit_status\": " << p.exit_status
        << ", \"exit_signal\": " << p.exit_signal << ", \"children\": [";
    for (size_t k = 0; k < p.children.size(); ++k) out << (k ? "," : "") << p.children[k];
    out << "]}";
  }
  out << "]";
}

void json_functions([[maybe_unused]] const Job& job, [[maybe_unused]] const AnalyzeOptions& o, std::ostream& out) {
  out << ",\n \"functions\": [";
  bool first = true;
  for (auto& [k, f] : job.funcs) {
    out << (first ? "\n  " : ",\n  ") << "{\"name\": " << json_str(f.name) << ", \"category\": " << json_str(f.category)
        << ", \"layer\": " << json_str(layer_name(f.layer)) << ", \"count\": " << f.count << ", \"errors\": " << f.errors
        << ", \"time_ns\": " << f.total_ns;
    if (job.sizes_known && f.sizes.n)
      out << ", \"bytes\": " << f.bytes << ", \"size\": {\"min\": " << f.sizes.min << ", \"p25\": " << f.sizes.quantile(0.25)
          << ", \"median\": " << f.sizes.quantile(0.5) << ", \"p75\": " << f.sizes.quantile(0.75)
          << ", \"max\": " << f.sizes.max << "}";
    else
      out << ", \"size\": null";
    out << "}";
    first = false;
  }
  out << "]";
}

namespace {

// One JSON object per file written straight into a buffer: json_files
// writes one per file of the job (millions on some jobs), where an ostream
// call, or even a std::string append, per field costs more than everything
// else the analysis does per file. The caller reserves room for the object
// (room()); every write is then a memcpy or to_chars at a pointer.
// Numbers as the ostream would print them (integers; doubles as %g with 6
// digits).
class JsonObject {
 public:
  explicit JsonObject(char* at) : p_(at) {}
  char* end() const { return p_; }
  template <size_t N>
  JsonObject& raw(const char (&s)[N]) {  // a literal: its length is known here
    std::memcpy(p_, s, N - 1);
    p_ += N - 1;
    return *this;
  }
  JsonObject& raw(std::string_view s) {
    std::memcpy(p_, s.data(), s.size());
    p_ += s.size();
    return *this;
  }
  // At most 6 bytes per byte of s and 2 quotes (json::append_quoted's worst case).
  static size_t room(std::string_view s) { return 6 * s.size() + 2; }
  JsonObject& str(std::string_view s) {
    *p_++ = '"';
    if (plain(s)) {  // plain ASCII (nearly every path): one copy
      std::memcpy(p_, s.data(), s.size());
      p_ += s.size();
    } else {
      thread_local std::string esc;
      esc.clear();
      json::append_escaped(esc, s);
      std::memcpy(p_, esc.data(), esc.size());
      p_ += esc.size();
    }
    *p_++ = '"';
    return *this;
  }
  // A string known to need no escapes: one of the verdict's literals (role,
  // access, extent, pattern), written for every file of the job.
  JsonObject& literal_str(std::string_view s) {
    *p_++ = '"';
    std::memcpy(p_, s.data(), s.size());
    p_ += s.size();
    *p_++ = '"';
    return *this;
  }
  // Every byte of s is copied as it is by json::append_escaped: printable
  // ASCII but '"' and '\\'. 8 bytes at a time.
  static bool plain(std::string_view s) {
    size_t i = 0;
    constexpr uint64_t k01 = 0x0101010101010101ull, k80 = 0x8080808080808080ull;
    auto has_zero = [](uint64_t v) { return (v - k01) & ~v & k80; };
    for (; i + 8 <= s.size(); i += 8) {
      uint64_t x;
      std::memcpy(&x, s.data() + i, 8);
      // bytes >= 0x80; bytes < 0x20 (x - 0x20 borrows where the byte is below,
      // exact for bytes < 0x80, which the first test covers); '"'; '\\'.
      if ((x & k80) | ((x - 0x20 * k01) & ~x & k80) | has_zero(x ^ ('"' * k01)) | has_zero(x ^ ('\\' * k01)))
        return false;
    }
    for (; i < s.size(); ++i)
      if (!json::detail::kPlain.v[static_cast<unsigned char>(s[i])]) return false;
    return true;
  }
  JsonObject& num(int64_t v) {
    p_ = std::to_chars(p_, p_ + 24, v).ptr;
    return *this;
  }
  JsonObject& num(uint64_t v) {
    p_ = std::to_chars(p_, p_ + 24, v).ptr;
    return *this;
  }
  JsonObject& num(double v) {  // as printf's %g (to_chars guarantees it)
    // Whole numbers below 1e6 print as integers under %g; most of a file's
    // doubles are -1 (unknown), and to_chars(double) costs ~20x more.
    if (v > -1e6 && v < 1e6 && v == static_cast<double>(static_cast<int64_t>(v)) && (v != 0 || !std::signbit(v)))
      return num(static_cast<int64_t>(v));
    p_ = std::to_chars(p_, p_ + 40, v, std::chars_format::general, 6).ptr;
    return *this;
  }
  JsonObject& boolean(bool v) {
    if (v) return raw("true");
    return raw("false");
  }

 private:
  char* p_;
};

}  // namespace

namespace {

// a and b print the same (json_files): doubles compared bit for bit.
bool same_verdict(const FileVerdict& a, const FileVerdict& b) {
  return a.role == b.role && a.nprocs == b.nprocs && a.shared == b.shared && a.access == b.access &&
         a.read_extent == b.read_extent && a.pattern == b.pattern && a.metadata_bound == b.metadata_bound &&
         std::memcmp(&a.reread, &b.reread, sizeof a.reread) == 0 &&
         std::memcmp(&a.per_open, &b.per_open, sizeof a.per_open) == 0 && a.evidence == b.evidence;
}

}  // namespace

void json_files([[maybe_unused]] const Job& job, [[maybe_unused]] const AnalyzeOptions& o, std::ostream& out) {
  out << ",\n \"files\": [";
  bool first = true;
  std::string buf;
  buf.resize(1u << 17);
  size_t used = 0;
  FileVerdict v;
  // Neighbouring files often share their verdict (in a metadata-only job,
  // nearly all do): its part of the object, "role" to "metadata_bound", is
  // written once and copied while it repeats.
  FileVerdict last;
  std::string last_text;
  bool have_last = false;
  PathsAhead ahead(job.files);
  for (const FileAgg& f : job.files) {
    ahead.next();
    if (!path_selected(o, f.path)) continue;
    classify_file(f, job, v);
    // The fixed text and the numbers of one object take under 1 KiB.
    size_t room = 1024 + JsonObject::room(f.path) + JsonObject::room(v.access) + JsonObject::room(v.read_extent) +
                  JsonObject::room(v.pattern);
    for (const std::string& e : v.evidence) room += JsonObject::room(e) + 1;
    if (buf.size() - used < room) {
      out.write(buf.data(), static_cast<std::streamsize>(used));
      used = 0;
      if (buf.size() < room) buf.resize(room);
    }
    {
      JsonObject j(buf.data() + used);
      j.raw(first ? std::string_view("\n  ") : std::string_view(",\n  ")).raw("{\"path\": ").str(f.path);
      if (have_last && same_verdict(v, last)) {
        j.raw(last_text);
      } else {
        const char* const from = j.end();
        j.raw(", \"role\": ").literal_str(role_name(v.role));
        j.raw(", \"evidence\": [");
        for (size_t i = 0; i < v.evidence.size(); ++i) {
          if (i) j.raw(",");
          j.str(v.evidence[i]);
        }
        j.raw("], \"processes\": ").num(v.nprocs).raw(", \"shared\": ").boolean(v.shared);
        j.raw(", \"access\": ").literal_str(v.access).raw(", \"read_extent\": ").literal_str(v.read_extent);
        j.raw(", \"pattern\": ").literal_str(v.pattern).raw(", \"reread\": ").num(v.reread).raw(", \"reread_per_open\": ").num(v.per_open);
        j.raw(", \"metadata_bound\": ").boolean(v.metadata_bound);
        last_text.assign(from, static_cast<size_t>(j.end() - from));
        last = v;
        have_last = true;
      }
      j.raw(", \"opens\": ").num(f.opens);
      j.raw(", \"fdopens\": ").num(f.fdopens);
      j.raw(", \"reads\": ").num(f.reads).raw(", \"writes\": ").num(f.writes).raw(", \"stats\": ").num(f.stats);
      j.raw(", \"seeks\": ").num(f.seeks).raw(", \"mmaps\": ").num(f.mmaps);
      j.raw(", \"bytes_read\": ").num(job.sizes_known ? f.bytes_read : int64_t{-1});
      j.raw(", \"bytes_written\": ").num(job.sizes_known ? f.bytes_written : int64_t{-1});
      j.raw(", \"extent\": ").num(job.sizes_known ? f.extent : int64_t{-1}).raw(", \"read_ns\": ").num(f.read_ns);
      j.raw(", \"write_ns\": ").num(f.write_ns).raw(", \"meta_ns\": ").num(f.meta_ns).raw("}");
      used = static_cast<size_t>(j.end() - buf.data());
    }
    first = false;
    if (used >= (1u << 16)) {
      out.write(buf.data(), static_cast<std::streamsize>(used));
      used = 0;
    }
  }
  out.write(buf.data(), static_cast<std::streamsize>(used));
  out << "]";
}

void json_tags([[maybe_unused]] const Job& job, [[maybe_unused]] const AnalyzeOptions& o, std::ostream& out) {
  const bool measured = compute_measured(job);  // else null, as in the summary: not a 0
  auto tags = [&](const char* name, const std::map<std::string, TagAgg>& m) {
    out << ",\n \"" << name << "\": {";
    bool f1 = true;
    for (auto& [k, a] : m) {
      out << (f1 ? "\n  " : ",\n  ") << json_str(k) << ": {\"events\": " << a.events << ", \"reads\": " << a.reads
          << ", \"writes\": " << a.writes << ", \"meta_ops\": " << a.meta_ops << ", \"io_ns\": " << a.io_ns
          << ", \"read_ns\": " << a.read_ns << ", \"write_ns\": " << a.write_ns << ", \"meta_ns\": " << a.meta_ns
          << ", \"compute_ns\": " << (measured ? std::to_string(a.compute_ns) : std::string("null"))
          << ", \"bytes_read\": " << (job.sizes_known ? a.bytes_read : -1)
          << ", \"bytes_written\": " << (job.sizes_known ? a.bytes_written : -1)
          << ", \"first_ns\": " << (a.events ? a.first_ts : -1) << ", \"last_ns\": " << (a.events ? a.last_ts : -1)
          << ", \"loader_waits\": " << a.loader_waits << ", \"loader_wait_ns\": " << a.loader_wait_ns << "}";
      f1 = false;
    }
    out << "}";
  };
  if (!o.by.empty()) tags("by", job.by_tag);
  tags("by_epoch", every_epoch_event(job));
}

void json_dataset_dirs([[maybe_unused]] const Job& job, [[maybe_unused]] const AnalyzeOptions& o, std::ostream& out) {
  {
    std::vector<DatasetDir> dirs = dataset_dirs(job);
    out << ",\n \"dataset_dirs\": [";
    for (size_t i = 0; i < dirs.size(); ++i) {
      auto& d = dirs[i];
      out << (i ? ",\n  " : "\n  ") << "{\"dir\": " << json_str(d.dir) << ", \"role\": " << json_str(role_name(d.role))
          << ", \"files\": " << d.files << ", \"opens\": " << d.opens << ", \"file_opens\": " << d.file_opens
          << ", \"reads\": " << d.reads
          << ", \"stats\": " << d.stats << ", \"bytes_read\": " << (job.sizes_known ? d.bytes_read : -1)
          << ", \"extent\": " << (job.sizes_known ? d.extent : -1) << ", \"reread\": " << d.reread << ", \"reread_per_open\": " << d.per_open
          << ", \"read_ns\": " << d.read_ns << ", \"meta_ns\": " << d.meta_ns << ", \"readers\": " << d.readers
          << ", \"shared_files\": " << d.shared_files << ", \"min_readers\": " << d.min_readers
          << ", \"max_readers\": " << d.max_readers << ", \"whole_files\": " << d.whole_files
          << ", \"epochs\": " << d.epochs << "}";
    }
    out << "]";
  }
}

void json_dl([[maybe_unused]] const Job& job, [[maybe_unused]] const AnalyzeOptions& o, std::ostream& out) {
  {
    DlSummary s = dl_summary(job);
    out << ",\n \"dl_summary\": ";
    if (!s.present) {
      out << "null";
    } else {
      out << "{\"batches\": " << s.batches << ", \"loader_wait_ns\": " << s.loader_wait_ns
          << ", \"startup_ns\": " << s.startup_ns << ", \"shutdown_ns\": " << s.shutdown_ns << ", \"epochs\": [";
      const bool measured = compute_measured(job);  // else null, as in the summary: not a 0
      auto figures = [&](const DlSummary::Figures& f) {
        out << "\"wall_ns\": " << f.wall_ns << ", \"loader_wait_ns\": " << f.loader_wait_ns
            << ", \"next_ns\": " << f.next_ns << ", \"startup_ns\": " << f.startup_ns
            << ", \"shutdown_ns\": " << f.shutdown_ns
            << ", \"batches\": " << f.batches << ", \"starts\": " << f.starts
            << ", \"compute_ns\": " << (measured ? std::to_string(f.compute_ns) : std::string("null"))
            << ", \"io_ns\": " << f.io_ns << ", \"read_ns\": " << f.read_ns << ", \"reads\": " << f.reads
            << ", \"bytes_read\": " << f.bytes_read << ", \"bytes_written\": " << f.bytes_written
            << ", \"events\": " << f.events;
      };
      for (size_t i = 0; i < s.epochs.size(); ++i) {
        auto& e = s.epochs[i];
        out << (i ? "," : "") << "\n   {\"epoch\": " << json_str(e.value) << ", ";
        figures(e);
        out << ", \"loops\": " << e.loops << ", \"waited\": " << e.waited()
            << ", \"loop_known\": " << (e.loop_known ? "true" : "false");
        if (e.loop_known) out << ", \"loop_start_ns\": " << e.loop_first << ", \"loop_end_ns\": " << e.loop_last;
        out << ", \"outside\": {";
        figures(e.outside);
        out << "}}";
      }
      out << "], \"first_epoch\": ";
      if (s.has_first_vs_rest) {
        out << "{\"epoch\": " << json_str(s.epochs[0].value) << ", \"io_ns\": " << s.first_io_ns
            << ", \"read_ns\": " << s.first_read_ns << ", \"others_mean_io_ns\": " << s.rest_io_ns
            << ", \"others_mean_read_ns\": " << s.rest_read_ns << ", \"compared\": [";
        for (size_t i = 0; i < s.compared.size(); ++i) out << (i ? "," : "") << json_str(s.compared[i]);
        out << "], \"left_out\": [";
        for (size_t i = 0; i < s.left_out.size(); ++i) out << (i ? "," : "") << json_str(s.left_out[i]);
        out << "]}";
      } else {
        out << "null";
      }
      out << ", \"roles\": [";
      for (size_t i = 0; i < s.roles.size(); ++i) {
        auto& r = s.roles[i];
        out << (i ? "," : "") << "\n   {\"role\": " << json_str(role_name(r.role)) << ", \"files\": " << r.files
            << ", \"reads\": " << r.reads << ", \"writes\": " << r.writes << ", \"bytes_read\": " << r.bytes_read
            << ", \"bytes_written\": " << r.bytes_written << ", \"read_ns\": " << r.read_ns
            << ", \"write_ns\": " << r.write_ns << ", \"meta_ns\": " << r.meta_ns << "}";
      }
      out << "], \"checkpoint_calls\": [";
      for (size_t i = 0; i < s.checkpoint_calls.size(); ++i)
        out << (i ? "," : "") << "{\"name\": " << json_str(s.checkpoint_calls[i].name)
            << ", \"count\": " << s.checkpoint_calls[i].count << ", \"time_ns\": " << s.checkpoint_calls[i].ns << "}";
      out << "]}";
    }
  }
}

void json_staging([[maybe_unused]] const Job& job, [[maybe_unused]] const AnalyzeOptions& o, std::ostream& out) {
  if (o.stage_capacity >= 0) {
    StageAdvice a = stage_advice(job, o.stage_capacity, o.stage_speedup);
    out << ",\n \"staging\": {\"capacity\": " << o.stage_capacity << ", \"used\": " << a.used
        << ", \"saved_ns\": " << a.saved_ns << ", \"files\": [";
    for (size_t i = 0; i < a.picks.size(); ++i)
      out << (i ? "," : "") << "{\"path\": " << json_str(a.picks[i].path) << ", \"size\": " << a.picks[i].size
          << ", \"read_ns\": " << a.picks[i].read_ns << ", \"bytes_read\": " << a.picks[i].bytes_read
          << ", \"saved_ns\": " << a.picks[i].saved_ns << "}";
    auto groups = [&](const std::vector<StageAdvice::Group>& v) {
      for (size_t i = 0; i < v.size(); ++i) {
        auto& g = v[i];
        out << (i ? "," : "") << "{\"" << (g.is_dir ? "dir" : "path") << "\": " << json_str(g.name)
            << ", \"files\": " << g.files << ", \"size\": " << g.size << ", \"read_ns\": " << g.read_ns
            << ", \"bytes_read\": " << g.bytes_read << ", \"reread\": " << g.reread;
        if (g.reason.empty())
          out << ", \"saved_ns\": " << g.saved_ns << "}";
        else
          out << ", \"reason\": " << json_str(g.reason) << "}";
      }
    };
    out << "], \"groups\": [";
    groups(a.groups);
    out << "], \"warnings\": [";
    for (size_t i = 0; i < a.warnings.size(); ++i) out << (i ? "," : "") << json_str(a.warnings[i]);
    out << "], \"warning_groups\": [";
    groups(a.warning_groups);
    out << "]}";
  }
}

namespace {

// One module's records in darshan-parser's layout: a line per counter, integer
// counters then floating ones, for every record of every process.
template <class Record>
const auto& records_of(const counters::CounterEngine& e) {
  if constexpr (std::is_same_v<Record, counters::PosixRecord>) return e.posix();
  else return e.stdio();
}

// Darshan's records are one per (rank, file): processes without a rank
// (-1, Darshan's "shared by all ranks") and processes sharing one (forked
// DataLoader workers inherit their rank) are reduced into one record the way
// Darshan reduces shared files (sums, minimum start, maximum end).
template <class Record>
void write_darshan_module(std::ostream& out, const char* module, const Job& job,
                          std::vector<std::pair<std::string, Record>> ProcResult::*records, const char* const* names,
                          int count, const char* const* fnames, int fcount, const std::string& prefix) {
  out << "\n#<module>\t<rank>\t<record id>\t<counter>\t<value>\t<file name>\t<mount pt>\t<fs type>\n";
  std::map<std::string, uint32_t> ids;
  std::vector<std::string> paths{""};
  std::map<int64_t, counters::CounterEngine> by_rank;
  for (const ProcResult& p : job.procs) {
    counters::CounterEngine one;
    for (auto& [path, r] : p.*records) {
      if (path.compare(0, prefix.size(), prefix) != 0) continue;
      auto [it, fresh] = ids.emplace(path, static_cast<uint32_t>(paths.size()));
      if (fresh) paths.push_back(path);
      Record copy = r;
      copy.file = it->second;
      one.adopt(copy);
    }
    by_rank[p.meta.rank >= 0 ? p.meta.rank : -1].merge(one);
  }
  char line[1024];
  for (auto& [rank, engine] : by_rank) {
    engine.finalize();
    std::vector<const Record*> sorted;
    for (const Record& r : records_of<Record>(engine)) sorted.push_back(&r);
    std::sort(sorted.begin(), sorted.end(), [&](auto* x, auto* y) { return paths[x->file] < paths[y->file]; });
    for (const Record* r : sorted) {
      const std::string& path = paths[r->file];
      const uint64_t id = counters::record_id(path);
      for (int c = 0; c < count; ++c) {
        std::snprintf(line, sizeof line, "%s\t%" PRId64 "\t%" PRIu64 "\t%s\t%" PRId64 "\t%s\tUNKNOWN\tUNKNOWN\n", module,
                      rank, id, names[c], r->counters[c], path.c_str());
        out << line;
      }
      for (int c = 0; c < fcount; ++c) {
        std::snprintf(line, sizeof line, "%s\t%" PRId64 "\t%" PRIu64 "\t%s\t%f\t%s\tUNKNOWN\tUNKNOWN\n", module, rank,
                      id, fnames[c], r->fcounters[c], path.c_str());
        out << line;
      }
    }
  }
}

}  // namespace

void write_darshan(const Job& job, std::ostream& out, const std::string& path_prefix) {
  Totals t = totals(job);
  std::string exe = job.procs.empty() ? "" : one_line(job.procs.front().meta.cmdline);
  out << "# darshan log version: 3.41\n# compression method: NONE\n# exe: " << exe << "\n# uid: 0\n# jobid: 0\n"
      << "# start_time: 0\n# end_time: " << (t.wall / 1000000000) << "\n# nprocs: " << job.procs.size()
      << "\n# run time: " << static_cast<double>(t.wall) * 1e-9 << "\n# metadata: producer = strata analyze\n"
      << "# metadata: note = counters computed by strata from a trace; see docs/analysis.md\n";
  if (!path_prefix.empty()) out << "# metadata: paths = only those starting with " << path_prefix << "\n";
  if (!job.sizes_known) out << "# metadata: sizes = unknown (trace without sizes): size counters are -1\n";
  // Dropped events, a process killed before its footer: the counters below
  // are lower bounds, said where a darshan-parser reader looks.
  for (const std::string& w : job.warnings) out << "# warning: " << one_line(w) << "\n";
  out << "\n# mounted file systems (mount point and fs type)\n# -------------------------------------------------------\n";
  out << "\n# *******************************************************\n# POSIX module data\n"
         "# *******************************************************\n\n# description of POSIX counters: see "
         "darshan-parser --show-incomplete; strata follows Darshan 3.5 semantics\n";
  write_darshan_module(out, "POSIX", job, &ProcResult::posix, counters::kPosixCounterNames, counters::POSIX_NUM_INDICES,
                       counters::kPosixFCounterNames, counters::POSIX_F_NUM_INDICES, path_prefix);
  out << "\n# *******************************************************\n# STDIO module data\n"
         "# *******************************************************\n";
  write_darshan_module(out, "STDIO", job, &ProcResult::stdio, counters::kStdioCounterNames, counters::STDIO_NUM_INDICES,
                       counters::kStdioFCounterNames, counters::STDIO_F_NUM_INDICES, path_prefix);
}

}  // namespace strata::analysis
