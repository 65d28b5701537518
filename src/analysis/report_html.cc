// `--html`: one self-contained page (its scripts, web/report*.js, embedded at
// build time; the data inline as JSON), readable offline. It draws its own
// charts on canvases: no charting library (web/report_plots.js says why).
#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <sstream>

#include "analysis/analyze.h"
#include "analysis/critical_path.h"
#include "analysis/pass.h"
#include "analysis/report_sections.h"
#include "analysis/timeline_pass.h"
#include "format/json_escape.h"

namespace strata::analysis {

extern const char kReportJs[];   // web/report.js
extern const char kReportTimelineJs[];  // web/report_timeline.js
extern const char kReportPlotsJs[];  // web/report_plots.js
extern const char kReportCss[];  // web/report.css

namespace {

// A JSON string (format/json_escape.h) that is also safe inside <script>:
// '<' only ever appears literally in the escaper's output, so it can be
// replaced afterwards.
std::string js_str(std::string_view s) {
  std::string j = json::quoted(s), o;
  o.reserve(j.size());
  for (char c : j) {
    if (c == '<') o += "\\u003c";
    else o += c;
  }
  return o;
}

std::string html_esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<') o += "&lt;";
    else if (c == '>') o += "&gt;";
    else if (c == '&') o += "&amp;";
    else o += c;
  }
  return o;
}

}  // namespace

namespace {

// Levels 0..61 as one character each: a row of columns as a short string.
constexpr char kLevels[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
constexpr int kTopLevel = 61;
constexpr size_t kPointsPerFile = 2048;  // spatial/temporal points drawn per file

// A row of levels as [first column, "levels"], idle columns at both ends cut
// off (a worker that lives one epoch costs that epoch's columns only).
template <class Level>
void levels_json(size_t n, Level level, std::ostream& d) {
  std::string row(n, '0');
  for (size_t k = 0; k < n; ++k) row[k] = kLevels[level(k)];
  const size_t a = row.find_first_not_of('0');
  if (a == std::string::npos) {
    d << "[0,\"\"]";
    return;
  }
  const size_t b = row.find_last_not_of('0');
  d << "[" << a << ",\"" << row.substr(a, b - a + 1) << "\"]";
}

// Any activity gets at least level 1: one short call in a long column stays visible.
int level_of(double share) {
  if (share <= 0) return 0;
  return std::clamp(static_cast<int>(share * kTopLevel + 0.5), 1, kTopLevel);
}

// Processes parent first, then its children by start time (a DataLoader's
// workers under the training loop, epoch after epoch).
std::vector<const ProcResult*> tree_order(const Job& job) {
  std::map<int64_t, const ProcResult*> by_pid;
  for (auto& p : job.procs) by_pid.emplace(p.meta.pid, &p);
  std::map<int64_t, std::vector<const ProcResult*>> children;
  std::vector<const ProcResult*> roots;
  for (auto& [pid, p] : by_pid) {
    if (p->meta.ppid != pid && by_pid.count(p->meta.ppid)) children[p->meta.ppid].push_back(p);
    else roots.push_back(p);
  }
  auto by_start = [](const ProcResult* x, const ProcResult* y) {
    return x->first_ts != y->first_ts ? x->first_ts < y->first_ts : x->meta.pid < y->meta.pid;
  };
  std::sort(roots.begin(), roots.end(), by_start);
  std::vector<const ProcResult*> out;
  std::vector<const ProcResult*> stack(roots.rbegin(), roots.rend());
  std::set<int64_t> seen;
  while (!stack.empty()) {
    const ProcResult* p = stack.back();
    stack.pop_back();
    if (!seen.insert(p->meta.pid).second) continue;
    out.push_back(p);
    auto& kids = children[p->meta.pid];
    std::sort(kids.begin(), kids.end(), by_start);
    for (auto it = kids.rbegin(); it != kids.rend(); ++it) stack.push_back(*it);
  }
  return out;
}

// The critical path of every training loop (one per rank), what the page's
// per-rank view draws: totals only, not the steps (--json has those).
void paths_json(const Analysis& a, const std::map<int64_t, std::string>& names, std::ostream& d) {
  d << ",\"paths\":[";
  const auto& loops = critical_paths(a);
  for (size_t i = 0; i < loops.size(); ++i) {
    const LoopPath& l = loops[i];
    const PathFigures& f = l.total;
    const int64_t worker_time = f.next_ns * static_cast<int64_t>(std::max<size_t>(1, l.workers()));
    auto share = [](int64_t part, int64_t whole) { return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 0.0; };
    auto name = names.find(l.pid);
    const std::string label = (l.rank >= 0 ? "rank " + std::to_string(l.rank) : std::string("loop")) + " (pid " +
                              std::to_string(l.pid) + ")";
    d << (i ? "," : "") << "{\"rank\":" << l.rank << ",\"pid\":" << l.pid << ",\"label\":" << js_str(label)
      << ",\"name\":" << js_str(name == names.end() ? label : name->second) << ",\"loaders\":\""
      << (l.self_loading ? "loop" : "workers") << "\",\"workers\":" << l.workers() << ",\"epochs\":" << l.epochs.size()
      << ",\"loop_ns\":" << f.loop_ns << ",\"wait_ns\":" << f.wait_ns << ",\"next_ns\":" << f.next_ns
      << ",\"startup_ns\":" << f.startup_ns << ",\"shutdown_ns\":" << f.shutdown_ns
      << ",\"checkpoint_ns\":" << f.checkpoint_ns << ",\"compute_ns\":" << f.compute_ns
      << ",\"read_share\":" << share(f.wait_read_ns, worker_time) << ",\"cpu_share\":" << share(f.wait_cpu_ns, worker_time)
      << ",\"idle_share\":" << share(f.wait_idle_ns, worker_time) << ",\"worker_read_ns\":" << f.worker_read_ns
      << ",\"hidden_share\":" << share(f.hidden_read_ns, f.worker_read_ns) << "}";
  }
  d << "]";
}

// The page's data: the report's keys the page shows, plus what only the page
// draws (per process: heatmap levels, timeline lanes; access samples of the
// data set and checkpoint files). Nothing in it grows with the events.
std::string page_data(const Analysis& a) {
  const Job& job = a.job();
  const AnalyzeOptions& o = a.opts();
  std::ostringstream d;
  d << "{\"input\":" << js_str(o.input) << ",\"sizes_known\":" << (job.sizes_known ? "true" : "false");
  TimeBins all;
  for (auto& p : job.procs) all.merge(p.bins);
  // Heatmap: bytes moved (operations without sizes) per bin, log scale to the job's maximum.
  auto heat_value = [&](const Bin& b) { return job.sizes_known ? b.read_bytes + b.write_bytes : b.ops; };
  std::vector<TimeBins> bins;
  int64_t heat_max = 0;
  for (auto& p : job.procs) {
    bins.push_back(p.bins);
    bins.back().rebin(all.width);
    for (auto& b : bins.back().bins) heat_max = std::max(heat_max, heat_value(b));
  }
  d << ",\"bin_s\":" << static_cast<double>(all.width) * 1e-9 << ",\"bins\":" << all.bins.size()
    << ",\"heat_max\":" << heat_max;
  const auto* lanes = timeline_procs(a);
  int64_t col_width = 1;
  size_t columns = 0;
  if (lanes)
    for (auto& [pid, p] : *lanes) col_width = std::max(col_width, p.lanes.width), columns = std::max(columns, p.lanes.cols.size());
  d << ",\"col_s\":" << static_cast<double>(col_width) * 1e-9 << ",\"cols\":" << columns << ",\"lanes\":[";
  for (int l = 0; l < kTimelineLanes; ++l) d << (l ? ",\"" : "\"") << timeline_lane_key(l) << "\"";
  d << "],\"epochs\":[";
  bool first = true;
  for (auto& [k, g] : job.by_epoch) {
    if (g.first_ts == INT64_MAX || g.last_ts <= g.first_ts) continue;
    d << (first ? "" : ",") << "[" << js_str(k) << "," << static_cast<double>(g.first_ts) * 1e-9 << ","
      << static_cast<double>(g.last_ts) * 1e-9 << "]";
    first = false;
  }
  d << "]";
  // Every process, in tree order: its name, heatmap row and timeline lanes.
  const auto names = process_names(a);
  const std::vector<const ProcResult*> procs = tree_order(job);
  std::map<int64_t, size_t> index;
  for (size_t i = 0; i < job.procs.size(); ++i) index[job.procs[i].meta.pid] = i;
  const double heat_log = std::log1p(static_cast<double>(heat_max));
  d << ",\"procs\":[";
  for (size_t i = 0; i < procs.size(); ++i) {
    const ProcResult& p = *procs[i];
    d << (i ? "," : "") << "{\"pid\":" << p.meta.pid << ",\"ppid\":" << p.meta.ppid << ",\"rank\":" << p.meta.rank
      << ",\"events\":" << p.events << ",\"name\":" << js_str(names.at(p.meta.pid))
      << ",\"cmd\":" << js_str(p.meta.cmdline.substr(0, 200)) << ",\"heat\":";
    const auto& hb = bins[index[p.meta.pid]].bins;
    levels_json(hb.size(), [&](size_t k) {
      const int64_t v = heat_value(hb[k]);
      return v > 0 && heat_log > 0 ? level_of(std::log1p(static_cast<double>(v)) / heat_log) : 0;
    }, d);
    d << ",\"lanes\":{";
    auto it = lanes ? lanes->find(p.meta.pid) : decltype(lanes->end()){};
    bool first_lane = true;
    for (int l = 0; lanes && it != lanes->end() && l < kTimelineLanes; ++l) {
      const auto& cols = it->second.lanes.cols;
      if (std::none_of(cols.begin(), cols.end(), [&](auto& c) { return c.ns[l] > 0; })) continue;
      d << (first_lane ? "\"" : ",\"") << timeline_lane_key(l) << "\":";
      levels_json(cols.size(), [&](size_t k) {
        return level_of(static_cast<double>(cols[k].ns[l]) / static_cast<double>(col_width));
      }, d);
      first_lane = false;
    }
    d << "}}";
  }
  d << "]";
  // Spatial and temporal patterns of the 4 data set or checkpoint files that moved the most bytes.
  std::vector<const FileAgg*> files;
  std::map<std::string, int64_t> by_access;
  for (const FileAgg& f : job.files) {
    ++by_access[f.reads > 0 && f.writes > 0 ? "read-write" : f.reads > 0 ? "read-only" : f.writes > 0 ? "write-only" : "metadata-only"];
    if (f.reads + f.writes == 0) continue;
    const Role r = file_role(f, job);
    if (listed_role(r)) files.push_back(&f);
  }
  std::sort(files.begin(), files.end(), [](auto* x, auto* y) {
    int64_t bx = x->bytes_read + x->bytes_written, by = y->bytes_read + y->bytes_written;
    return bx != by ? bx > by : x->path < y->path;
  });
  if (files.size() > 4) files.resize(4);
  d << ",\"files\":[";
  for (size_t i = 0; i < files.size(); ++i) {
    // Hundreds of readers keep 256 samples each: an even stride keeps the
    // page small and says how many samples it stands for.
    size_t samples = 0;
    for (const FileProcRef fp : files[i]->procs())
      if (const FileAccess* acc = fp.pf.access.find()) samples += acc->samples.size();
    const size_t stride = (samples + kPointsPerFile - 1) / kPointsPerFile;
    d << (i ? "," : "") << "{\"path\":" << js_str(files[i]->path) << ",\"samples\":" << samples << ",\"points\":[";
    bool first = true;
    size_t n = 0;
    for (const FileProcRef fp : files[i]->procs()) {
      if (!fp.pf.access.find()) continue;
      for (auto& pt : fp.pf.access.find()->samples) {
        if (n++ % stride) continue;
        d << (first ? "" : ",") << "[" << static_cast<double>(pt.ts) * 1e-9 << "," << pt.offset << "," << pt.size << ","
          << pt.pid << "," << (pt.write ? 1 : 0) << "]";
        first = false;
      }
    }
    d << "]}";
  }
  d << "],\"access\":{";
  first = true;
  for (auto& [k, n] : by_access) {
    d << (first ? "" : ",") << js_str(k) << ":" << n;
    first = false;
  }
  // Access sizes (Darshan buckets).
  int64_t rh[10] = {}, wh[10] = {};
  for (auto& p : job.procs)
    for (auto& [path, r] : p.posix)
      for (int i = 0; i < 10; ++i) {
        rh[i] += std::max<int64_t>(0, r.counters[counters::POSIX_SIZE_READ_0_100 + i]);
        wh[i] += std::max<int64_t>(0, r.counters[counters::POSIX_SIZE_WRITE_0_100 + i]);
      }
  d << "},\"sizes_r\":[";
  for (int i = 0; i < 10; ++i) d << (i ? "," : "") << rh[i];
  d << "],\"sizes_w\":[";
  for (int i = 0; i < 10; ++i) d << (i ? "," : "") << wh[i];
  d << "],\"by\":" << js_str(o.by.empty() ? "epoch" : o.by) << ",\"groups\":[";
  first = true;
  const auto& ep = o.by.empty() ? job.by_epoch : job.by_tag;
  const bool measured = compute_measured(job);  // else null, as in the report's summary: not a 0
  for (auto& [k, g] : ep) {
    d << (first ? "" : ",") << "[" << js_str(k) << "," << static_cast<double>(g.io_ns) * 1e-9 << ",";
    if (measured)
      d << static_cast<double>(g.compute_ns) * 1e-9;
    else
      d << "null";
    d << "," << static_cast<double>(g.loader_wait_ns) * 1e-9 << ","
      << static_cast<double>(g.first_ts == INT64_MAX ? 0 : g.first_ts) * 1e-9 << ","
      << static_cast<double>(g.last_ts == INT64_MIN ? 0 : g.last_ts) * 1e-9 << "]";
    first = false;
  }
  d << "]";
  paths_json(a, names, d);
  std::ostringstream report;
  a.write_json_of({"verdict", "modes", "overlap", "functions", "dl_json", "staging"}, report);
  d << ",\"report\":" << report.str() << "}";
  // '<' only appears inside strings, where js_str already escaped it; the
  // report JSON's strings come from the same escaper without the <script> rule.
  std::string text = d.str(), safe;
  safe.reserve(text.size());
  for (char c : text) {
    if (c == '<') safe += "\\u003c";
    else safe += c;
  }
  return safe;
}

}  // namespace

// Never fails now that the page draws its own charts; the error stream stays for callers.
bool Analysis::write_html(std::ostream& out, std::ostream& /*err*/) const {
  const std::string title = "strata analyze: " + html_esc(opts().input);
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" << title
      << "</title>\n<style>" << kReportCss << "</style>\n</head><body>\n<h1>"
      << title << "</h1>\n"
      << "<section id=\"verdict\"></section>\n"
      << "<h2>Where the time went</h2><div class=\"chart bar\"><canvas id=\"shares\"></canvas></div>\n"
      << "<h2>Every process over time (bytes moved; colour: log scale)</h2><div id=\"heat-host\"><canvas id=\"heat\"></canvas></div>\n"
      << "<h2>Every process over time: what it was doing</h2>\n"
      << "<div id=\"timeline-tools\"><button id=\"tl-in\">zoom in</button><button id=\"tl-out\">zoom out</button>"
      << "<button id=\"tl-reset\">whole run</button> <span id=\"tl-range\"></span>"
      << " <span class=\"hint\">wheel: zoom, drag: pan, double-click: whole run</span></div>\n"
      << "<div id=\"timeline-legend\"></div><div id=\"timeline-host\"><canvas id=\"timeline\"></canvas></div>"
      << "<div id=\"timeline-tip\"></div>\n<div id=\"paths\"></div>\n"
      << "<h2 id=\"groups-title\"></h2><div class=\"chart\"><canvas id=\"groups\"></canvas></div>\n"
      << "<h2>Operations (top functions by count)</h2><div class=\"chart\"><canvas id=\"ops\"></canvas></div>\n"
      << "<h2>Access sizes (POSIX requests)</h2><div class=\"chart\"><canvas id=\"sizes\"></canvas></div>\n"
      << "<h2>Files by access</h2><div class=\"chart small\"><canvas id=\"access\"></canvas></div>\n"
      << "<section id=\"staging\"></section>\n<div id=\"patterns\"></div>\n";
  // Everything the text report says, for what the views do not draw.
  std::ostringstream text;
  write_text(text);
  out << "<h2>The text report</h2>\n<pre id=\"text-report\">" << html_esc(text.str()) << "</pre>\n";
  // The data as JSON in a script the browser does not run: JSON.parse reads
  // it faster than the JavaScript parser reads the same object literal.
  out << "<script id=\"report-data\" type=\"application/json\">" << page_data(*this)
      << "</script>\n<script>\nconst D = JSON.parse(document.getElementById('report-data').textContent);\n" << kReportTimelineJs << kReportPlotsJs << kReportJs
      << "</script>\n</body></html>\n";
  return true;
}

}  // namespace strata::analysis
