// What the Chrome export needs beyond one event at a time: complete events
// that nest on each thread, names for processes, and flow arrows from a
// DataLoader worker's batch to the `dataloader.next` that received it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace strata::convert {

// Chrome draws the complete ("X") events of one thread as a stack: each must
// lie inside the one below it. Events arrive in completion order (a thread
// writes an event when it ends); one that would cross an earlier event's
// edge (clocks of the Python layer and the runtime, or regions that really
// overlap, such as two loaders zipped) goes to the first extra track of its
// thread where it nests.
class ThreadTracks {
 public:
  static constexpr int kMaxTracks = 8;
  // The track (0: the thread itself) the event [start, end] goes on.
  int place(int64_t start, int64_t end);
  int tracks_used() const { return static_cast<int>(tracks_.size()); }

 private:
  struct Span {
    int64_t start, end;
  };
  // Per track: the outermost events so far, disjoint, by start time. Past
  // kKeep spans the oldest are forgotten (a flat run of millions of calls).
  static constexpr size_t kKeep = 1 << 16;
  static bool fits(std::vector<Span>& stack, int64_t start, int64_t end);
  std::vector<std::vector<Span>> tracks_;
};

// The Chrome tid of extra track k of thread tid: above any Linux tid
// (pid_max <= 2^22) and within 32 bits.
inline int64_t track_tid(int64_t tid, int track) { return track == 0 ? tid : tid + 10'000'000LL * track; }

// Pairs each worker's `dataloader.batch` with the `dataloader.next` of its
// training loop that received it: same loader, epoch and step (batch index)
// tags, the k-th such batch with the k-th such wait in time (a loader passed
// over twice in one epoch, as a final evaluation is).
class BatchFlows {
 public:
  struct Slice {
    int64_t pid, tid;  // tid as written (track_tid)
    int64_t start, end;
  };
  void batch(int64_t loader, int64_t epoch, int64_t step, const Slice& s);
  void next(int64_t loader, int64_t epoch, int64_t step, const Slice& s);
  void parent(int64_t pid, int64_t ppid) { ppid_[pid] = ppid; }
  struct Flow {
    Slice from, to;
  };
  // Every received batch whose worker descends from the receiving process.
  std::vector<Flow> flows() const;

 private:
  using Key = std::tuple<int64_t, int64_t, int64_t, int64_t>;  // loop pid, loader, epoch, step
  std::vector<std::pair<std::tuple<int64_t, int64_t, int64_t>, Slice>> batches_;
  std::map<Key, std::vector<Slice>> nexts_;
  std::map<int64_t, int64_t> ppid_;
};

// What names a process: strata's metadata and the tags its events carried.
struct ProcessFacts {
  int64_t pid = 0, rank = -1;
  std::string command;        // argv joined, or the executable
  int64_t worker = -1;        // DataLoader worker id
  int64_t loader = -1;
  int64_t epoch_min = INT64_MAX, epoch_max = INT64_MIN;
  bool waits_for_batches = false;  // has dataloader.next events: a training loop
};
// "training loop (rank 0)", "DataLoader worker 1 (loader 0, epoch 2)", "train.py (rank 3)".
std::string process_label(const ProcessFacts& p);

}  // namespace strata::convert
