// `strata analyze`: the entry point the CLI calls.
//
//   strata::analysis::AnalyzeOptions o;
//   o.input = "mytrace";            // strata trace dir/file, or .pfw/.pfw.gz file or dir
//   int rc = strata::analysis::run_analyze(o, std::cout, std::cerr);
//
// Options map 1:1 to the command line (see add_analyze_options in
// analyze_cli.h, header-only, for CLI11).
#pragma once

#include <algorithm>
#include <cstdint>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
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
  int top = 3;                     // --top N: rows in the text file/function/staging tables
  bool all = false;                // --all: lift the text report's limits, list environment files
  std::vector<std::string> sections;  // --section NAME (pass name, repeatable): only these texts
  std::string path;                // --path PREFIX: only files whose path starts with it
  // The caller exits right after run_analyze (the CLI): the analysis is left
  // for the process's exit to reclaim, not freed record by record (millions
  // of file records take a tenth of a large run to free).
  bool exiting = false;
};

// Columns of the text report (docs/analysis.md): longer lines are wrapped.
constexpr size_t kTextColumns = 100;

// Runs the analysis and writes the requested outputs. Returns 0 on success,
// 1 on an input error (message naming the file on `err`), 2 on bad options.
int run_analyze(const AnalyzeOptions& opts, std::ostream& out, std::ostream& err);

// Builds the aggregated job (for tests and tools). Throws InputError.
Job analyze_job(const AnalyzeOptions& opts);

// Role, FileVerdict: analysis/file_verdict.h.
FileVerdict classify_file(const FileAgg& f, const Job& job);
// The same into v, reusing its storage (a loop over many files); without
// evidence (v.evidence left empty) where the caller shows none: building its
// strings costs more than the rest of the verdict.
void classify_file(const FileAgg& f, const Job& job, FileVerdict& v, bool with_evidence = true);
// classify_file(f, job).role without building the evidence.
Role file_role(const FileAgg& f, const Job& job);
// Classifies every file of job.data_files once, without evidence, into
// job.data_files.verdicts (after index_data_files): file_role and
// classify_file without evidence then look those files up.
void index_file_verdicts(Job& job);

// Directory part of a path, with its trailing '/': "/d/train/a.png" -> "/d/train/",
// "/d/train/" -> "/d/"; "" for a path without '/'.
std::string parent_dir(std::string_view path);

// Items (path, key) rolled up by directory. An item starts at its own
// directory and climbs while the parent (never "/") holds, among `universe`
// (path, key: every file that moved data), only files of the item's key; so
// data/train/c0/x.png rolls up to data/train/ when data/ also holds
// validation files. Items sharing (top directory, key) form a group when
// there are at least kDirGroupMin of them; the group is named by the deepest
// directory holding all of them. Returns, per item, that name, or "" when the
// item stands alone.
constexpr size_t kDirGroupMin = 4;
using PathKey = std::pair<std::string_view, std::string_view>;  // (path, key)
std::vector<std::string> rollup_dirs(std::span<const PathKey> items, std::span<const PathKey> universe);

// Roll-up of the data set files (roles dataset(train)/dataset(validation))
// by directory (rollup_dirs, key: role).
struct DatasetDir {
  std::string dir;  // with trailing '/'
  Role role = Role::kTrainData;
  size_t files = 0;
  uint64_t opens = 0, reads = 0, stats = 0;
  uint64_t file_opens = 0;  // opens less fdopen of a descriptor already open: passes over the files
  int64_t bytes_read = 0;
  int64_t extent = 0;  // sum of the files' extents (the data set's size as read)
  int64_t read_ns = 0, meta_ns = 0;
  size_t readers = 0;        // distinct processes that read a file of it
  size_t shared_files = 0;   // files read by more than one process
  size_t min_readers = 0, max_readers = 0;  // processes reading one file
  size_t whole_files = 0;    // files whose readers read them whole (FileVerdict::read_extent)
  size_t epochs = 0;         // distinct epoch tag values its reads carried
  double reread = -1;        // bytes_read / extent, -1 unknown
  double per_open = -1;      // reread / (file_opens per file): more than 1 reads more than the file per open
};
std::vector<DatasetDir> dataset_dirs(const Job& job);

struct StageAdvice {
  struct Pick {
    std::string path;
    int64_t size;
    int64_t read_ns;
    double reread;
    int64_t saved_ns;
    int64_t bytes_read = 0;
  };
  // A file not to stage and why.
  struct Warning {
    std::string path;
    std::string reason;  // "read once" or "too large"
    int64_t size = 0;
    int64_t read_ns = 0;
    int64_t bytes_read = 0;
    double reread = 0;
  };
  // Picks (key: the file's role) and warnings (key: reason) rolled up by
  // rollup_dirs: a group is one entry (is_dir, name with trailing '/'), any
  // other file one entry of its own. Picks: by saved time, largest first;
  // warnings: by read time.
  struct Group {
    std::string name;
    bool is_dir = false;
    std::string reason;  // warnings only
    size_t files = 0;
    int64_t size = 0, read_ns = 0, bytes_read = 0, saved_ns = 0;
    double reread = 0;  // bytes_read / size
  };
  std::vector<Pick> picks;            // ranked by saved time per byte
  std::vector<std::string> warnings;  // files too large or read once, one line each
  std::vector<Warning> warning_items; // the same, structured
  std::vector<Group> groups, warning_groups;
  int64_t used = 0;
  int64_t saved_ns = 0;
};
StageAdvice stage_advice(const Job& job, int64_t capacity, double speedup);

// What a deep-learning user asks first (issue 4): time per epoch, how much of
// it the training loop waited on the loader, data set vs checkpoint files,
// and the first epoch's cold reads. Every figure comes from the trace: epoch
// tag values ("epoch" key) and strata's Python layer's app events
// ("dataloader.next" per batch; category "checkpoint" for torch.save/load).
struct DlSummary {
  bool present = false;  // epoch tags or dataloader events exist
  // Figures of events tagged with the epoch, split at the training loop:
  // inside it (the Epoch itself) and outside it (`outside`: other loaders'
  // passes, what the loop's process did after the training loader's pass).
  struct Figures {
    int64_t wall_ns = 0;
    int64_t loader_wait_ns = 0;  // dataloader.next + .iter (worker start-up) + .stop (shutdown)
    int64_t next_ns = 0;         // summed "dataloader.next" durations
    int64_t startup_ns = 0;      // summed "dataloader.iter" durations
    int64_t shutdown_ns = 0;     // summed "dataloader.stop" durations (the call that ended a pass)
    uint64_t batches = 0;        // "dataloader.next" events
    uint64_t starts = 0;         // "dataloader.iter" events
    int64_t compute_ns = 0, io_ns = 0, read_ns = 0;
    int64_t bytes_read = 0, bytes_written = 0;
    uint64_t reads = 0;
    uint64_t events = 0;
  };
  struct Epoch : Figures {
    std::string value;
    // wall_ns: the training loop's span (first dataloader.iter/next to the end
    // of its pass, dataloader.epoch; loop_known) or, without a pass event (a
    // loop left with break, traces without strata's Python layer), last end -
    // first start of the events tagged with it.
    bool loop_known = false;
    int64_t loop_first = 0, loop_last = 0;  // the loop's span (ns since trace start)
    size_t loops = 0;            // processes that waited (one training loop per rank)
    // Share of the epoch each loop waited, on average over the loops (ranks).
    double waited() const {
      return wall_ns > 0 ? static_cast<double>(loader_wait_ns) / (static_cast<double>(wall_ns) * std::max<size_t>(1, loops)) : 0;
    }
    // Outside the loop; wall_ns: from the loop's end to the next epoch's loop
    // start, or to the end of the trace after the last epoch.
    Figures outside;
  };
  std::vector<Epoch> epochs;  // numeric order when every value is an integer
  uint64_t batches = 0;       // all "dataloader.next" events, tagged or not
  int64_t loader_wait_ns = 0; // their durations and those of all "dataloader.iter"/".stop" events
  int64_t startup_ns = 0;     // the "dataloader.iter" part: starting iterators (and workers)
  int64_t shutdown_ns = 0;    // the "dataloader.stop" part: the calls that ended passes
  struct RoleFiles {
    Role role;
    size_t files = 0;
    uint64_t reads = 0, writes = 0;
    int64_t bytes_read = 0, bytes_written = 0, read_ns = 0, write_ns = 0, meta_ns = 0;
  };
  std::vector<RoleFiles> roles;  // roles present, in Role order
  struct AppCall {                // app events of category "checkpoint" (torch.save / torch.load)
    std::string name;
    uint64_t count = 0;
    int64_t ns = 0;
  };
  std::vector<AppCall> checkpoint_calls;
  // First epoch vs the mean of the others (>= 2 epochs). When the first epoch
  // has dataloader.next events, only epochs with as many of them are compared
  // (same work: e.g. a final evaluation pass tagged as one more epoch of the
  // validation loader is left out).
  bool has_first_vs_rest = false;
  std::vector<std::string> compared, left_out;  // epoch values
  int64_t first_io_ns = 0, first_read_ns = 0;
  double rest_io_ns = 0, rest_read_ns = 0;  // means over the other epochs
};
DlSummary dl_summary(const Job& job);

// "8GiB", "512M", "1000" -> bytes; -1 if malformed.
int64_t parse_size(const std::string& s);

void write_text(const Job& job, const AnalyzeOptions& o, std::ostream& out);
void write_json(const Job& job, const AnalyzeOptions& o, std::ostream& out);
// Records of files whose path starts with `path_prefix` only ("" = all).
void write_darshan(const Job& job, std::ostream& out, const std::string& path_prefix = "");

// Libraries, .pyc, /usr, site-packages, /proc, /dev, MPI shared-memory
// segments: files the job's environment touches, not its data.
bool is_environment_file(std::string_view path, Role role);
// Returns false (message in err) if the charting library was not bundled.
bool write_html(const Job& job, const AnalyzeOptions& o, std::ostream& out, std::ostream& err);

}  // namespace strata::analysis
