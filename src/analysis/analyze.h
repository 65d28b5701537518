// `strata analyze`: the entry point the CLI calls.
//
//   strata::analysis::AnalyzeOptions o;
//   o.input = "mytrace";            // strata trace dir/file, or .pfw/.pfw.gz file or dir
//   int rc = strata::analysis::run_analyze(o, std::cout, std::cerr);
//
// Options map 1:1 to the command line (see add_analyze_options in
// analyze_cli.h, header-only, for CLI11).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "analysis/aggregate.h"

namespace strata::analysis {

struct AnalyzeOptions {
  std::string input;               // trace directory or file
  bool json = false;               // --json: every figure as JSON on `out`
  std::string html;                // --html FILE: self-contained report page
  bool darshan = false;            // --darshan: darshan-parser text layout
  std::string by;                  // --by KEY: breakdown per tag value
  int64_t stage_capacity = -1;     // --stage-capacity BYTES (parse with parse_size)
  double stage_speedup = 4.0;      // --stage-speedup: fast tier vs observed speed
  int threads = 0;                 // --threads: 0 = hardware concurrency (max 2 used by default)
  int top = 20;                    // --top N: rows in file/function tables
};

// Runs the analysis and writes the requested outputs. Returns 0 on success,
// 1 on an input error (message naming the file on `err`), 2 on bad options.
int run_analyze(const AnalyzeOptions& opts, std::ostream& out, std::ostream& err);

// Builds the aggregated job (for tests and tools). Throws InputError.
Job analyze_job(const AnalyzeOptions& opts);

// File roles (deep-learning I/O patterns).
enum class Role { kTrainData, kValData, kCheckpoint, kConfig, kLibrary, kLog, kOther };
const char* role_name(Role r);

struct FileVerdict {
  std::string path;
  Role role = Role::kOther;
  std::vector<std::string> evidence;
  size_t nprocs = 0;
  bool shared = false;          // accessed by more than one process
  std::string access;           // "read-only", "write-only", "read-write", "metadata-only"
  std::string read_extent;      // "whole", "partial", "unknown" (per reader, majority)
  std::string pattern;          // "sequential", "random", "mixed", "unknown"
  double reread = -1;           // bytes read / file extent (-1 unknown)
  bool metadata_bound = false;  // metadata time > data time
};
FileVerdict classify_file(const FileAgg& f, const Job& job);

struct StageAdvice {
  struct Pick {
    std::string path;
    int64_t size;
    int64_t read_ns;
    double reread;
    int64_t saved_ns;
  };
  std::vector<Pick> picks;
  std::vector<std::string> warnings;  // files too large or read once
  int64_t used = 0;
  int64_t saved_ns = 0;
};
StageAdvice stage_advice(const Job& job, int64_t capacity, double speedup);

// "8GiB", "512M", "1000" -> bytes; -1 if malformed.
int64_t parse_size(const std::string& s);

void write_text(const Job& job, const AnalyzeOptions& o, std::ostream& out);
void write_json(const Job& job, const AnalyzeOptions& o, std::ostream& out);
void write_darshan(const Job& job, std::ostream& out);
// Returns false (message in err) if the charting library was not bundled.
bool write_html(const Job& job, const AnalyzeOptions& o, std::ostream& out, std::ostream& err);

}  // namespace strata::analysis
