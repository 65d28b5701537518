// The "timeline" pass of `strata analyze`: what the HTML report's timeline of
// every process draws (issue 10 §4). Per process, the time it spent in each
// lane (I/O calls, waiting for the loader, producing a batch, compute,
// checkpoints) per time column, and what names it (DataLoader worker id,
// loader, epochs, training loop). Columns widen by doubling as the trace
// grows, so a process costs at most kMaxColumns columns whatever the events:
// the page draws columns, never events (docs/analysis.md, "HTML").
#pragma once

#include <bit>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "analysis/pass.h"

namespace strata::analysis {

enum TimelineLane : int { kLaneIo, kLaneWait, kLaneBatch, kLaneCompute, kLaneCheckpoint, kTimelineLanes };
const char* timeline_lane_key(int lane);  // "io", "wait", ... (the page's keys)

// Busy time per lane in columns of `width` ns from trace time 0; an event
// spanning columns is split across them.
struct LaneColumns {
  static constexpr size_t kMaxColumns = 1024;
  struct Column {
    int64_t ns[kTimelineLanes] = {};
  };
  int64_t width = 1 << 20;
  std::vector<Column> cols;
  void add(int lane, int64_t ts, int64_t dur) {
    // A call inside one existing column (cols.size() <= kMaxColumns).
    if (ts >= 0 && dur >= 0 && (width & (width - 1)) == 0) [[likely]] {
      const int64_t c = ts >> std::countr_zero(static_cast<uint64_t>(width));  // width: a power of two
      if (static_cast<size_t>(c) < cols.size() && ts + dur < (c + 1) * width) {
        cols[static_cast<size_t>(c)].ns[lane] += dur;
        return;
      }
    }
    add_slow(lane, ts, dur);
  }
  void add_slow(int lane, int64_t ts, int64_t dur);
  void widen(int64_t new_width);  // new_width: width times a power of 2
  void merge(const LaneColumns& o);
};

struct TimelineProc {
  LaneColumns lanes;
  int64_t worker = -1;  // `worker` tag: a DataLoader worker process
  int64_t loader = -1;  // `loader` tag of its batches
  int64_t epoch_min = INT64_MAX, epoch_max = INT64_MIN;  // integer `epoch` tags it carried
  uint64_t waits = 0;   // dataloader.next events: a training loop
};

// Names a person reads for every process of the job ("training loop (rank
// 0)", "DataLoader worker 1 (train, epoch 2)", "train.py"), unique per pid.
// `unique` false: without the " [pid N]" that tells apart equal names (where
// the pid is printed beside the name anyway).
std::map<int64_t, std::string> process_names(const Analysis& a, bool unique = true);
// What kind of process each pid is ("DataLoader workers (train)", "training
// loop", "python3 train.py"): the job tree sums the processes it does not list by kind.
std::map<int64_t, std::string> process_kinds(const Analysis& a);

std::unique_ptr<Pass> make_timeline_pass(const AnalyzeOptions& o);

// The timeline pass's merged per-process state (nullptr when absent).
const std::map<int64_t, TimelineProc>* timeline_procs(const Analysis& a);

}  // namespace strata::analysis
