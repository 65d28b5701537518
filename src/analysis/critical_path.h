// The "critical_path" pass of `strata analyze` (issue 10 §2): the DataLoader
// exists to overlap the workers' I/O with the training loop's compute. Per
// epoch of each training loop (a process that waits in "dataloader.next" of
// the training loader: one per rank) this pass splits the loop's time into waiting for data
// (dataloader.next, and dataloader.iter: starting the iterator and its
// workers), checkpoints and compute (the rest), and reads what the loader
// workers were doing while the loop waited (reading, CPU inside a batch, or
// idle) and how much of their reading was hidden under the loop's compute.
// JSON key "critical_path": the loop that waited longest (per epoch, and per
// step up to kMaxSteps) and "ranks", every loop's path; docs/analysis.md,
// "Critical path".
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "analysis/pass.h"

namespace strata::analysis {

// A time interval [ts, end) in ns since the trace start.
struct Span {
  int64_t ts = 0, end = 0;
  int64_t len() const { return end > ts ? end - ts : 0; }
};

// Summed |a ∩ b| for each span of `segs` (sorted, disjoint) with the spans of
// `list` (sorted, disjoint), added into out[i].
void overlap_into(const std::vector<Span>& segs, const std::vector<Span>& list, std::vector<int64_t>& out);
// Sorts spans and merges those that overlap or touch.
void union_spans(std::vector<Span>& v);

// Adds [ts, end) to a list only ever read through union_spans, kept small:
// a span reaching into the last one merges with it (events come in
// completion order, so a process's overlapping reads on several threads
// become one span). Past a bound (2^18 spans) the list is united, then
// coarsened if it must be (neighbours bridged; `coarse` set: the figures
// become approximate).
void add_span_slow(std::vector<Span>& v, int64_t ts, int64_t end, bool& coarse);
// Inline: most spans start inside the last one (a worker's reads in a row).
inline void add_span(std::vector<Span>& v, int64_t ts, int64_t end, bool& coarse) {
  if (end <= ts) return;
  if (!v.empty() && ts >= v.back().ts && ts <= v.back().end) {
    if (end > v.back().end) v.back().end = end;
    return;
  }
  add_span_slow(v, ts, end, coarse);
}

// What the loop and its workers did in one stretch of the loop (an epoch, or
// one step: a dataloader.next wait and the compute after it).
struct PathFigures {
  int64_t loop_ns = 0;        // the stretch's length
  int64_t wait_ns = 0;        // next_ns + startup_ns + shutdown_ns
  int64_t next_ns = 0;        // in dataloader.next
  int64_t startup_ns = 0;     // in dataloader.iter (worker start-up under spawn/forkserver)
  int64_t shutdown_ns = 0;    // in dataloader.stop (the call that ended the pass: worker shutdown)
  int64_t checkpoint_ns = 0;  // app events of category checkpoint
  int64_t compute_ns = 0;     // loop_ns - wait_ns - checkpoint_ns
  // Worker time (summed over the workers) during the loop's dataloader.next waits:
  int64_t wait_read_ns = 0;  // in read calls
  int64_t wait_cpu_ns = 0;   // producing a batch (dataloader.batch) outside reads: decoding, transforms
  int64_t wait_idle_ns = 0;  // neither (between batches, queues, not started yet)
  // Worker reads during the whole stretch, and the part under the loop's compute:
  int64_t worker_read_ns = 0;
  int64_t hidden_read_ns = 0;
  void add(const PathFigures& o);
};

// At most this many steps are listed in the JSON; the rest are summed in the epochs.
constexpr size_t kMaxSteps = 10000;

struct EpochPath {
  std::string epoch;
  Span span;
  size_t workers = 0;  // loader worker processes alive during the epoch
  uint64_t steps = 0;
  PathFigures f;
};

struct StepPath {
  std::string epoch;
  int64_t step = -1;
  int64_t start = 0;
  PathFigures f;
};

// The critical path of one training loop (one rank's main process) and its
// own loader workers.
struct LoopPath {
  int64_t pid = -1;
  int64_t rank = -1;          // from the launcher's environment, -1 unknown
  bool self_loading = false;  // num_workers=0: the loop loads its own batches
  int64_t next_ns = 0;        // all its dataloader.next time (the longest is the job's loop)
  std::vector<EpochPath> epochs;
  std::vector<StepPath> steps;  // the first kMaxSteps, the job's loop only
  uint64_t steps_total = 0;
  PathFigures total;
  size_t workers() const;  // the most loader workers of one epoch
};

std::unique_ptr<Pass> make_critical_path_pass(const AnalyzeOptions& o);

// pid -> its metadata (pid, ppid, rank), for owner_loop.
using ProcessTree = std::map<int64_t, const ProcessMeta*>;
ProcessTree process_tree(const Job& job);
// The training loop (a pid of `loop_rank`: loop pid -> rank) the DataLoader
// worker process `pid` feeds; -1 when none fits.
int64_t owner_loop(int64_t pid, const ProcessTree& tree, const std::map<int64_t, int64_t>& loop_rank);

// Every training loop's path, by rank then pid (empty without a loop or the pass).
const std::vector<LoopPath>& critical_paths(const Analysis& a);

}  // namespace strata::analysis
