// Streaming aggregation: one UnitAgg per input unit (a strata file / .pfw
// file) consumes events and keeps only bounded per-process / per-file state;
// finished units are merged into a Job keyed by strings (paths, names).
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "analysis/counters.h"
#include "analysis/file_table.h"
#include "analysis/file_verdict.h"
#include "analysis/intervals.h"
#include "analysis/model.h"

namespace strata::analysis {

struct AggConfig {
  std::string by_key;            // --by: tag key to break figures down by
  std::string epoch_key = "epoch";
  // Spatial/temporal points kept per (process, file): between half of it and
  // all of it once there are that many accesses (rounded down to even, 1 to
  // 2; 0 keeps none).
  size_t samples_per_file = 256;
};

// Exact distribution of integer values (sizes) up to 65,536 distinct values;
// beyond that new values go to log2 buckets and quantiles become approximate.
struct ValueDist {
  std::unordered_map<int64_t, uint64_t> exact;
  uint64_t log2[64] = {};
  uint64_t n = 0;
  int64_t min = INT64_MAX, max = INT64_MIN;
  bool approx = false;
  void add(int64_t v, uint64_t k = 1) {
    if (v == hot_.value && hot_.count) {  // runs of one size: no hash lookup
      n += k;
      *hot_.count += k;
      return;
    }
    add_slow(v, k);
  }
  void add_slow(int64_t v, uint64_t k);
  void merge(const ValueDist& o);
  int64_t quantile(double q) const;  // nearest-rank

 private:
  // The last value's counter in `exact` (nodes never move); a copy starts
  // without it, so it never points into another object's map.
  struct Hot {
    int64_t value = INT64_MIN;
    uint64_t* count = nullptr;
    Hot() = default;
    Hot(const Hot&) {}
    Hot& operator=(const Hot&) {
      value = INT64_MIN;
      count = nullptr;
      return *this;
    }
  } hot_;
};

struct FuncStats {
  std::string name, category;
  Layer layer = Layer::kApp;
  uint64_t count = 0, errors = 0;
  int64_t total_ns = 0;
  int64_t bytes = 0;
  ValueDist sizes;  // requested sizes, when known
};

struct Bin {
  int64_t read_bytes = 0, write_bytes = 0, ops = 0, io_ns = 0;
};

// Time histogram whose bin width doubles as the trace grows (bounded bins).
struct TimeBins {
  static constexpr size_t kMaxBins = 512;
  int64_t width = 1 << 20;  // ns
  std::vector<Bin> bins;
  Bin& at(int64_t ts) {
    // width is a power of two (it starts at one and only doubles): a shift,
    // where a 64-bit division per event cost ~15 cycles.
    if (ts >= 0 && (width & (width - 1)) == 0) [[likely]] {  // no popcnt in baseline x86-64
      const size_t i = static_cast<size_t>(ts) >> std::countr_zero(static_cast<uint64_t>(width));
      if (i < bins.size()) return bins[i];  // bins.size() <= kMaxBins
    }
    return at_slow(ts);
  }
  Bin& at_slow(int64_t ts);
  void rebin(int64_t new_width);
  void merge(const TimeBins& o);
};

struct TagAgg {
  uint64_t events = 0, reads = 0, writes = 0, meta_ops = 0;
  int64_t io_ns = 0, read_ns = 0, write_ns = 0, meta_ns = 0, compute_ns = 0;
  int64_t bytes_read = 0, bytes_written = 0;
  int64_t first_ts = INT64_MAX, last_ts = INT64_MIN;  // any event carrying the tag value
  uint64_t loader_waits = 0;  // "dataloader.next" events (batches asked for)
  int64_t loader_wait_ns = 0; // their summed duration: the training loop waiting on the loader
  std::vector<int64_t> waiters;  // pids that waited (sorted): one per rank's training loop
  uint64_t loader_starts = 0;    // "dataloader.iter" events: starting an iterator (and its workers)
  int64_t loader_start_ns = 0;   // their summed duration: waiting on worker start-up
  int64_t loader_stop_ns = 0;    // "dataloader.stop": the call that ended a pass (worker shutdown)
  // The training loop: first start of the training loader's iter/next/epoch
  // events to the end of its pass ("dataloader.epoch", at StopIteration).
  int64_t loop_first = INT64_MAX, loop_last = INT64_MIN;
  void merge(const TagAgg& o);
};

struct ProcResult {
  ProcessMeta meta;
  bool meta_known = false;
  size_t threads = 0;
  uint64_t events = 0;
  int64_t first_ts = INT64_MAX, last_ts = INT64_MIN;
  int64_t io_union = 0, compute_union = 0, both_union = 0, app_union = 0;
  int64_t posix_ns = 0, stdio_ns = 0, meta_ns = 0, data_ns = 0;
  int64_t bytes_read = 0, bytes_written = 0;
  uint64_t clipped = 0;
  std::vector<int64_t> children;  // from fork events
  // How the image ended, when it recorded it: exit status (-1: no exit event:
  // it exec'd, was killed by a signal strata could not see, or the input
  // does not say), and the fatal signal strata's handler saw (0: none).
  int64_t exit_status = -1;
  int32_t exit_signal = 0;
  TimeBins bins;
  // Darshan records, finalized, with their paths.
  std::vector<std::pair<std::string, counters::PosixRecord>> posix;
  std::vector<std::pair<std::string, counters::StdioRecord>> stdio;
  int64_t unoverlapped_io() const { return both_union - compute_union; }
  int64_t unoverlapped_compute() const { return both_union - io_union; }
};

// The files of a job that moved data, in path order (files_with_data):
// pointers into its FileTable. A copy of the job has other records, so a
// copy of the index is empty and unknown (index_data_files again); a move
// keeps it (the table's records stay where they are).
struct DataFileIndex {
  std::vector<const FileAgg*> files;
  // Each of those files' verdict without evidence (index_file_verdicts):
  // the reports ask for a file's role and figures several times, and
  // deciding them again was a fifth of analyze on a DataLoader trace.
  std::unordered_map<const FileAgg*, FileVerdict> verdicts;
  // Whether the job is a training (epochs, DataLoader or checkpoint events),
  // which the roles depend on: worked out with the verdicts.
  std::optional<bool> training;
  // The job's MPI ranks: (pid, rank), by pid. A rank shares a file it only
  // opened (classify in analyze.cc).
  std::vector<std::pair<int64_t, int64_t>> rank_of_pid;
  bool known = false;
  DataFileIndex() = default;
  DataFileIndex(const DataFileIndex&) {}
  DataFileIndex& operator=(const DataFileIndex&) {
    files.clear();
    verdicts.clear();
    training.reset();
    rank_of_pid.clear();
    known = false;
    return *this;
  }
  DataFileIndex(DataFileIndex&&) noexcept = default;
  DataFileIndex& operator=(DataFileIndex&&) noexcept = default;
};

// The whole job after all units are merged.
struct Job {
  std::vector<ProcResult> procs;
  std::map<std::string, FuncStats> funcs;  // key: category/name
  FileTable files;
  std::map<std::string, TagAgg> by_tag;    // value of --by key ("(none)" for untagged)
  std::map<std::string, TagAgg> by_epoch;  // value of the epoch key, inside its training loop
  // Events tagged with an epoch but outside its training loop: the passes of
  // other loaders (validation, a final evaluation) and what the loop's process
  // did after the training loader's pass ended (checkpoints, evaluation).
  std::map<std::string, TagAgg> by_epoch_outside;
  std::vector<std::string> units;
  std::vector<std::string> warnings;
  std::set<std::string> approximate;  // figures known only approximately
  bool sizes_known = true;
  uint64_t events = 0;
  int64_t first_ts = INT64_MAX, last_ts = INT64_MIN;
  std::string source_kind;
  bool finished = false;  // job-wide notes added (the io pass's finish)
  DataFileIndex data_files;  // built when the job is finished, cleared by a merge; not saved
};

// Appends `later` (the units after a's) to a; later is left empty.
void merge_jobs(Job& a, Job& later);

// The job's files that read, wrote or have bytes counted, in path order:
// every other file only stat()ed or opened (millions in a job that searches
// many paths), which most report walks skip. Walked as `for (const FileAgg&
// f : files_with_data(job))`: the finished job's index, or, for a job never
// finished (tests), a list built on the spot.
class FilesWithData {
 public:
  class iterator {
   public:
    explicit iterator(const FileAgg* const* p) : p_(p) {}
    const FileAgg& operator*() const { return **p_; }
    iterator& operator++() {
      ++p_;
      return *this;
    }
    bool operator==(const iterator& o) const { return p_ == o.p_; }

   private:
    const FileAgg* const* p_;
  };
  explicit FilesWithData(const Job& job);
  FilesWithData(const FilesWithData&) = delete;  // view_ may point into own_
  FilesWithData& operator=(const FilesWithData&) = delete;
  iterator begin() const { return iterator(view_.data()); }
  iterator end() const { return iterator(view_.data() + view_.size()); }

 private:
  std::vector<const FileAgg*> own_;  // when the job has no index
  std::span<const FileAgg* const> view_;
};
inline FilesWithData files_with_data(const Job& job) { return FilesWithData(job); }
void index_data_files(Job& job);  // fills job.data_files (finish_job)
// A Job as bytes and back (serial.h; interval sets keep only their measure).
std::string save_job(const Job& job);
void load_job(std::string_view bytes, Job& job);  // throws std::runtime_error

class UnitAgg : public UnitConsumer {
 public:
  explicit UnitAgg(const AggConfig& cfg);
  ~UnitAgg() override;
  void begin(const std::string& unit, const Tables* tables, bool sizes_known) override;
  void process(const ProcessMeta& meta) override;
  void event(const IoEvent& e) override;
  void events(std::span<const IoEvent> batch) override;
  void profile(int64_t pid, const std::vector<counters::PosixRecord>& posix,
               const std::vector<counters::StdioRecord>& stdio) override;
  void warning(const std::string& what) override { warnings_.push_back(what); }
  void approximate(const std::string& figure) override { approximate_.insert(figure); }
  void end() override;
  // Moves the finished unit's results into job (single-threaded merge).
  void merge_into(Job& job);

 private:
  struct Proc;
  struct Facts;
  Proc& proc(int64_t pid);
  Proc& proc_slow(int64_t pid);
  void count_event(const IoEvent& e);
  Facts facts(const IoEvent& e, const FuncInfo& f) const;
  void count_process(Proc& p, const IoEvent& e, const Facts& x);
  void count_function(const IoEvent& e, const Facts& x);
  void count_tags(const IoEvent& e, Facts& x);
  void tag_update(TagAgg& t, const IoEvent& e, const Facts& x, bool training_loader);
  int64_t count_darshan(Proc& p, const IoEvent& e, const Facts& x);
  void count_file(Proc& p, const IoEvent& e, const Facts& x, int64_t off);
  void next_sample_window(Proc& p, FileAccess& acc);
  void merge_files(Job& job, const std::vector<int64_t>& pids);
  std::span<const CtxTag> tags(uint32_t ctx) const;
  // Slots a per-context cache grows to for `ctx`: the whole table, so that
  // a trace with a context per few events does not grow it one by one.
  size_t ctx_slots(uint32_t ctx) const { return analysis::ctx_slots(tables_, ctx); }
  int32_t tag_group(uint32_t ctx, const std::string& key, std::vector<int32_t>& cache,
                    std::vector<std::string>& names);
  // What count_tags needs of a context, looked up once per context id.
  static constexpr int32_t kUnknownGroup = -2;
  struct CtxGroups {
    int32_t epoch = kUnknownGroup;  // index into epoch_names_, -1 untagged, kUnknownGroup not looked up
    bool training = true;           // its `loader` tag is the training loader's (0, or none)
  };
  const CtxGroups& ctx_groups(uint32_t ctx) {
    if (ctx < ctx_groups_.size() && ctx_groups_[ctx].epoch != kUnknownGroup) [[likely]] return ctx_groups_[ctx];
    return ctx_groups_slow(ctx);
  }
  const CtxGroups& ctx_groups_slow(uint32_t ctx);

  AggConfig cfg_;
  std::string unit_;
  const Tables* tables_ = nullptr;
  bool sizes_known_ = true;
  std::unordered_map<int64_t, std::unique_ptr<Proc>> procs_;
  Proc* last_ = nullptr;
  int64_t last_pid_ = INT64_MIN;
  std::vector<FuncStats> funcs_;  // by func id
  std::vector<int32_t> by_cache_;
  std::vector<CtxGroups> ctx_groups_;  // per ctx id
  std::vector<std::string> by_names_, epoch_names_;
  std::vector<TagAgg> by_aggs_, epoch_aggs_, outside_aggs_;
  PathPool paths_;                       // the unit's paths (end()), moved to the Job's files
  std::unordered_map<uint32_t, std::string_view> record_names_;  // Darshan records' paths without a file (in paths_)
  std::vector<FuncInfo> func_infos_;
  std::set<std::string> approximate_;
  uint64_t events_ = 0;
  std::vector<std::string> warnings_;
  bool ended_ = false;
};

}  // namespace strata::analysis
