// `--html`: one self-contained page (Chart.js embedded at build time, data
// inline as JSON), readable offline.
#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <map>
#include <sstream>

#include "analysis/analyze.h"
#include "analysis/pass.h"
#include "format/json_escape.h"

namespace strata::analysis {

extern const char kChartJs[];
extern const char kReportJs[];   // web/report.js
extern const char kReportCss[];  // web/report.css

namespace {

// A JSON string (format/json_escape.h) that is also safe inside <script>:
// '<' only ever appears literally in the escaper's output, so it can be
// replaced afterwards.
std::string js_str(const std::string& s) {
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

// Time bins of one process on the job's bin width, as JSON arrays.
void bins_json(const TimeBins& bins, const TimeBins& all, std::ostream& d) {
  TimeBins b = bins;
  b.rebin(all.width);
  auto series = [&](const char* key, auto get) {
    d << ",\"" << key << "\":[";
    for (size_t k = 0; k < all.bins.size(); ++k) d << (k ? "," : "") << (k < b.bins.size() ? get(b.bins[k]) : 0);
    d << "]";
  };
  series("ops", [](const auto& x) { return x.ops; });
  series("rbytes", [](const auto& x) { return x.read_bytes; });
  series("wbytes", [](const auto& x) { return x.write_bytes; });
}

// The page's data: the report's keys the page shows, plus what only the page
// draws (bins of every process, access samples of the data set and checkpoint files).
std::string page_data(const Analysis& a) {
  const Job& job = a.job();
  const AnalyzeOptions& o = a.opts();
  std::ostringstream d;
  d << "{\"input\":" << js_str(o.input) << ",\"sizes_known\":" << (job.sizes_known ? "true" : "false");
  TimeBins all;
  for (auto& p : job.procs) all.merge(p.bins);
  d << ",\"bin_s\":" << static_cast<double>(all.width) * 1e-9 << ",\"bins\":" << all.bins.size();
  // Every process, for the heatmap; the 8 busiest also get lines on the timeline.
  std::vector<const ProcResult*> procs;
  for (auto& p : job.procs) procs.push_back(&p);
  std::sort(procs.begin(), procs.end(), [](auto* x, auto* y) { return x->meta.pid < y->meta.pid; });
  d << ",\"procs\":[";
  for (size_t i = 0; i < procs.size(); ++i) {
    d << (i ? "," : "") << "{\"pid\":" << procs[i]->meta.pid << ",\"ppid\":" << procs[i]->meta.ppid
      << ",\"rank\":" << procs[i]->meta.rank << ",\"events\":" << procs[i]->events
      << ",\"cmd\":" << js_str(procs[i]->meta.cmdline.substr(0, 200));
    bins_json(procs[i]->bins, all, d);
    d << "}";
  }
  d << "]";
  // Spatial and temporal patterns of the 4 data set or checkpoint files that moved the most bytes.
  std::vector<const FileAgg*> files;
  std::map<std::string, int64_t> by_access;
  for (auto& [k, f] : job.files) {
    ++by_access[f.reads > 0 && f.writes > 0 ? "read-write" : f.reads > 0 ? "read-only" : f.writes > 0 ? "write-only" : "metadata-only"];
    if (f.reads + f.writes == 0) continue;
    const Role r = classify_file(f, job).role;
    if (r == Role::kTrainData || r == Role::kValData || r == Role::kCheckpoint) files.push_back(&f);
  }
  std::sort(files.begin(), files.end(), [](auto* x, auto* y) {
    int64_t bx = x->bytes_read + x->bytes_written, by = y->bytes_read + y->bytes_written;
    return bx != by ? bx > by : x->path < y->path;
  });
  if (files.size() > 4) files.resize(4);
  d << ",\"files\":[";
  for (size_t i = 0; i < files.size(); ++i) {
    d << (i ? "," : "") << "{\"path\":" << js_str(files[i]->path) << ",\"points\":[";
    bool first = true;
    for (auto& fp : files[i]->procs)
      for (auto& pt : fp.pf.samples) {
        d << (first ? "" : ",") << "[" << static_cast<double>(pt.ts) * 1e-9 << "," << pt.offset << "," << pt.size << ","
          << pt.pid << "," << (pt.write ? 1 : 0) << "]";
        first = false;
      }
    d << "]}";
  }
  d << "],\"access\":{";
  bool first = true;
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
  for (auto& [k, g] : ep) {
    d << (first ? "" : ",") << "[" << js_str(k) << "," << static_cast<double>(g.io_ns) * 1e-9 << ","
      << static_cast<double>(g.compute_ns) * 1e-9 << "," << static_cast<double>(g.loader_wait_ns) * 1e-9 << ","
      << static_cast<double>(g.first_ts == INT64_MAX ? 0 : g.first_ts) * 1e-9 << ","
      << static_cast<double>(g.last_ts == INT64_MIN ? 0 : g.last_ts) * 1e-9 << "]";
    first = false;
  }
  std::ostringstream report;
  a.write_json_of({"verdict", "modes", "overlap", "functions", "dl_json", "staging"}, report);
  d << "],\"report\":" << report.str() << "}";
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

bool Analysis::write_html(std::ostream& out, std::ostream& err) const {
  if (kChartJs[0] == '\0') {
    err << "strata analyze: --html needs the charting library; run web/build.sh (npm) and rebuild\n";
    return false;
  }
  const std::string title = "strata analyze: " + html_esc(opts().input);
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" << title
      << "</title>\n<style>" << kReportCss << "</style>\n<script>" << kChartJs << "</script>\n</head><body>\n<h1>"
      << title << "</h1>\n"
      << "<section id=\"verdict\"></section>\n"
      << "<h2>Where the time went</h2><div class=\"chart bar\"><canvas id=\"shares\"></canvas></div>\n"
      << "<h2>Every process over time (bytes moved; colour: log scale)</h2><div id=\"heat-host\"><canvas id=\"heat\"></canvas></div>\n"
      << "<h2>I/O timeline of the busiest processes</h2><div class=\"chart\"><canvas id=\"timeline\"></canvas></div>\n"
      << "<h2 id=\"groups-title\"></h2><div class=\"chart\"><canvas id=\"groups\"></canvas></div>\n"
      << "<h2>Operations (top functions by count)</h2><div class=\"chart\"><canvas id=\"ops\"></canvas></div>\n"
      << "<h2>Access sizes (POSIX requests)</h2><div class=\"chart\"><canvas id=\"sizes\"></canvas></div>\n"
      << "<h2>Files by access</h2><div class=\"chart small\"><canvas id=\"access\"></canvas></div>\n"
      << "<section id=\"staging\"></section>\n<div id=\"patterns\"></div>\n";
  out << "<script>\nconst D = " << page_data(*this) << ";\n" << kReportJs << "</script>\n</body></html>\n";
  return true;
}

}  // namespace strata::analysis
