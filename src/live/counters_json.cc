// Darshan records of an analysed job as JSON (GET /api/counters).
#include "live/counters_json.h"

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "analysis/analyze.h"
#include "format/json_escape.h"

namespace strata::live {
namespace {

template <class Record>
void append_records(std::string& o, bool& first, const char* module, const analysis::ProcResult& proc, int64_t rank,
                    const std::vector<std::pair<std::string, Record>>& records, const char* const* names, int count,
                    const char* const* fnames, int fcount, const std::string& prefix) {
  char number[64];
  for (const auto& [path, r] : records) {
    if (path.compare(0, prefix.size(), prefix) != 0) continue;
    o += first ? "\n" : ",\n";
    first = false;
    o += "{\"path\": ";
    json::append_quoted(o, path);
    o += std::string(", \"module\": \"") + module + "\", \"pid\": " + std::to_string(proc.meta.pid) +
         ", \"rank\": " + std::to_string(rank) + ", \"counters\": {";
    for (int c = 0; c < count; ++c)
      o += std::string(c ? ", \"" : "\"") + names[c] + "\": " + std::to_string(r.counters[c]);
    o += "}, \"fcounters\": {";
    for (int c = 0; c < fcount; ++c) {
      const double v = r.fcounters[c];
      std::snprintf(number, sizeof number, "%.9g", std::isfinite(v) ? v : 0.0);
      o += std::string(c ? ", \"" : "\"") + fnames[c] + "\": " + number;
    }
    o += "}}";
  }
}

}  // namespace

std::string counters_json(const analysis::Job& job, const std::string& path_prefix) {
  std::string o = "{\"files\": [";
  bool first = true;
  for (size_t i = 0; i < job.procs.size(); ++i) {
    const auto& p = job.procs[i];
    // Rank as in `strata analyze --darshan`: the MPI rank, else the index.
    const int64_t rank = p.meta.rank >= 0 ? p.meta.rank : static_cast<int64_t>(i);
    append_records(o, first, "POSIX", p, rank, p.posix, counters::kPosixCounterNames, counters::POSIX_NUM_INDICES,
                   counters::kPosixFCounterNames, counters::POSIX_F_NUM_INDICES, path_prefix);
    append_records(o, first, "STDIO", p, rank, p.stdio, counters::kStdioCounterNames, counters::STDIO_NUM_INDICES,
                   counters::kStdioFCounterNames, counters::STDIO_F_NUM_INDICES, path_prefix);
  }
  return o + "\n]}";
}

std::string trace_counters_json(const std::string& trace_dir, const std::string& path_prefix) {
  // A live job whose processes have not written their first block yet has
  // no counters so far; that is no error.
  std::error_code ec;
  bool any = false;
  for (const auto& e : std::filesystem::directory_iterator(trace_dir, ec))
    if (e.path().extension() == ".strata") {
      any = true;
      break;
    }
  if (!ec && !any) return "{\"files\": [\n]}";
  analysis::AnalyzeOptions opts;
  opts.input = trace_dir;
  opts.path = path_prefix;
  return counters_json(analysis::analyze_job(opts), path_prefix);
}

}  // namespace strata::live
