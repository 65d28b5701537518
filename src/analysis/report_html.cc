// `--html`: one self-contained page (Chart.js embedded at build time, data
// inline as JSON), readable offline.
#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <sstream>

#include "analysis/analyze.h"
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

bool write_html(const Job& job, const AnalyzeOptions& o, std::ostream& out, std::ostream& err) {
  if (kChartJs[0] == '\0') {
    err << "strata analyze: --html needs the charting library; run web/build.sh (npm) and rebuild\n";
    return false;
  }
  std::ostringstream d;
  d << "{\"input\":" << js_str(o.input) << ",\"sizes_known\":" << (job.sizes_known ? "true" : "false");
  // Timeline: per process (up to 8 busiest) ops and bandwidth.
  std::vector<const ProcResult*> procs;
  for (auto& p : job.procs) procs.push_back(&p);
  std::sort(procs.begin(), procs.end(), [](auto* a, auto* b) { return a->events > b->events; });
  if (procs.size() > 8) procs.resize(8);
  TimeBins all;
  for (auto& p : job.procs) all.merge(p.bins);
  d << ",\"bin_s\":" << static_cast<double>(all.width) * 1e-9 << ",\"timeline\":[";
  for (size_t i = 0; i < procs.size(); ++i) {
    TimeBins b = procs[i]->bins;
    b.rebin(all.width);
    d << (i ? "," : "") << "{\"pid\":" << procs[i]->meta.pid << ",\"ops\":[";
    for (size_t k = 0; k < all.bins.size(); ++k) d << (k ? "," : "") << (k < b.bins.size() ? b.bins[k].ops : 0);
    d << "],\"rbytes\":[";
    for (size_t k = 0; k < all.bins.size(); ++k) d << (k ? "," : "") << (k < b.bins.size() ? b.bins[k].read_bytes : 0);
    d << "],\"wbytes\":[";
    for (size_t k = 0; k < all.bins.size(); ++k) d << (k ? "," : "") << (k < b.bins.size() ? b.bins[k].write_bytes : 0);
    d << "]}";
  }
  d << "]";
  // Spatial/temporal patterns of the top 4 files by bytes moved.
  std::vector<const FileAgg*> files;
  for (auto& [k, f] : job.files)
    if (f.reads + f.writes > 0) files.push_back(&f);
  std::sort(files.begin(), files.end(), [](auto* a, auto* b) {
    int64_t x = a->bytes_read + a->bytes_written, y = b->bytes_read + b->bytes_written;
    return x != y ? x > y : a->path < b->path;
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
  d << "]";
  // Access sizes (Darshan buckets).
  int64_t rh[10] = {}, wh[10] = {};
  for (auto& p : job.procs)
    for (auto& [path, r] : p.posix)
      for (int i = 0; i < 10; ++i) {
        rh[i] += std::max<int64_t>(0, r.counters[counters::POSIX_SIZE_READ_0_100 + i]);
        wh[i] += std::max<int64_t>(0, r.counters[counters::POSIX_SIZE_WRITE_0_100 + i]);
      }
  d << ",\"sizes_r\":[";
  for (int i = 0; i < 10; ++i) d << (i ? "," : "") << rh[i];
  d << "],\"sizes_w\":[";
  for (int i = 0; i < 10; ++i) d << (i ? "," : "") << wh[i];
  d << "],\"epochs\":[";
  bool first = true;
  const auto& ep = o.by.empty() ? job.by_epoch : job.by_tag;
  for (auto& [k, a] : ep) {
    d << (first ? "" : ",") << "[" << js_str(k) << "," << static_cast<double>(a.io_ns) * 1e-9 << ","
      << static_cast<double>(a.compute_ns) * 1e-9 << "]";
    first = false;
  }
  d << "],\"by\":" << js_str(o.by.empty() ? "epoch" : o.by) << "}";

  // Summary table rows.
  int64_t io = 0, comp = 0, unov = 0, br = 0, bw = 0;
  for (auto& p : job.procs) {
    io += p.io_union;
    comp += p.compute_union;
    unov += p.unoverlapped_io();
    br += p.bytes_read;
    bw += p.bytes_written;
  }
  char buf[256];
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>strata analyze: "
      << html_esc(o.input)
      << "</title>\n<style>" << kReportCss << "</style>\n<script>"
      << kChartJs << "</script>\n</head><body>\n<h1>strata analyze: " << html_esc(o.input) << "</h1>\n<table>";
  std::snprintf(buf, sizeof buf, "<tr><td>events</td><td>%" PRIu64 "</td></tr><tr><td>processes</td><td>%zu</td></tr>",
                job.events, job.procs.size());
  out << buf;
  std::snprintf(buf, sizeof buf,
                "<tr><td>I/O time (union)</td><td>%.6f s</td></tr><tr><td>compute</td><td>%.6f s</td></tr>"
                "<tr><td>unoverlapped I/O</td><td>%.6f s</td></tr>",
                static_cast<double>(io) * 1e-9, static_cast<double>(comp) * 1e-9, static_cast<double>(unov) * 1e-9);
  out << buf;
  if (job.sizes_known)
    out << "<tr><td>bytes read</td><td>" << br << "</td></tr><tr><td>bytes written</td><td>" << bw << "</td></tr>";
  else
    out << "<tr><td>bytes</td><td>unknown (trace without sizes)</td></tr>";
  out << "</table>\n";
  // Deep-learning summary (the text report's first section), when the trace
  // has epoch tags or DataLoader events.
  DlSummary dl = dl_summary(job);
  if (dl.present) {
    auto sec = [](int64_t ns) {
      char b[32];
      std::snprintf(b, sizeof b, "%.6f s", static_cast<double>(ns) * 1e-9);
      return std::string(b);
    };
    out << "<h2>Deep-learning summary</h2>\n";
    if (!dl.epochs.empty()) {
      out << "<table id=\"dl-epochs\"><tr><th>epoch</th><th>wall time</th><th>loader wait</th><th>waited</th>"
             "<th>batches</th><th>compute</th><th>I/O (sum)</th><th>bytes read</th></tr>";
      for (auto& e : dl.epochs) {
        std::snprintf(buf, sizeof buf, "%.1f%%",
                      e.wall_ns > 0 ? 100.0 * static_cast<double>(e.loader_wait_ns) / static_cast<double>(e.wall_ns) : 0.0);
        out << "<tr><td>" << html_esc(e.value) << "</td><td>" << sec(e.wall_ns) << "</td><td>" << sec(e.loader_wait_ns)
            << "</td><td>" << buf << "</td><td>" << e.batches << "</td><td>" << sec(e.compute_ns) << "</td><td>"
            << sec(e.io_ns) << "</td><td>" << e.bytes_read << "</td></tr>";
      }
      out << "</table>\n";
    }
    if (dl.has_first_vs_rest) {
      std::string others;
      for (auto& v : dl.compared) others += (others.empty() ? "" : ", ") + v;
      std::snprintf(buf, sizeof buf, "I/O time %.6f s vs %.6f s; read time %.6f s vs %.6f s</p>\n",
                    static_cast<double>(dl.first_io_ns) * 1e-9, dl.rest_io_ns * 1e-9,
                    static_cast<double>(dl.first_read_ns) * 1e-9, dl.rest_read_ns * 1e-9);
      out << "<p>first epoch (" << html_esc(dl.epochs[0].value) << ") vs the mean of epoch(s) " << html_esc(others) << ": "
          << buf;
    }
    out << "<table id=\"dl-roles\"><tr><th>files by role</th><th>files</th><th>reads</th><th>bytes read</th>"
           "<th>writes</th><th>bytes written</th></tr>";
    for (auto& r : dl.roles)
      out << "<tr><td>" << role_name(r.role) << "</td><td>" << r.files << "</td><td>" << r.reads << "</td><td>"
          << r.bytes_read << "</td><td>" << r.writes << "</td><td>" << r.bytes_written << "</td></tr>";
    out << "</table>\n";
  }
  out << "<h2>I/O timeline</h2><div class=\"chart\"><canvas id=\"timeline\"></canvas></div>\n"
         "<h2>Access sizes (POSIX)</h2><div class=\"chart\"><canvas id=\"sizes\"></canvas></div>\n"
         "<h2>I/O time per "
      << html_esc(o.by.empty() ? "epoch" : o.by)
      << "</h2><div class=\"chart\"><canvas id=\"epochs\"></canvas></div>\n<div id=\"patterns\"></div>\n";
  out << "<script>\nconst D = " << d.str() << ";\n";
  out << kReportJs << "</script>\n</body></html>\n";
  return true;
}

}  // namespace strata::analysis
