// The verdict: what bounds the job, by how much, and what to do about it
// (issue 10 §1). The first section of every report (JSON key "verdict").
//
// With strata's Python layer the verdict reads the training loop (the
// process that waits in "dataloader.next") and the loader processes (those
// tagged `worker`, or the loop itself with num_workers=0); without it, the
// I/O share of each process's wall time and the kind of I/O. Advice comes
// from the rules of docs/analysis.md ("Verdict rules"), each with the
// threshold that fires it and the evidence it saw.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "analysis/critical_path.h"
#include "analysis/pass.h"

namespace strata::analysis {

// What one process did that the verdict needs and the io pass does not keep.
struct VerdictProc {
  int64_t loader_wait_ns = 0;  // "dataloader.next": the loop waiting for a batch
  uint64_t loader_waits = 0;
  int64_t loader_start_ns = 0;  // "dataloader.iter": starting an iterator (and its workers)
  int64_t loader_stop_ns = 0;   // "dataloader.stop": the call that ended a pass (worker shutdown)
  int64_t loop_first = INT64_MAX, loop_last = INT64_MIN;  // dataloader.iter/next/epoch, checkpoint span
  int64_t checkpoint_ns = 0;  // app events of category "checkpoint" (torch.save/load)
  uint64_t checkpoint_calls = 0;
  int64_t batch_ns = 0;  // "dataloader.batch": a worker producing a batch
  uint64_t batches = 0;
  int64_t worker_id = -1;  // `worker` tag (a DataLoader worker process)
  int64_t loader = -1;     // `loader` tag the worker carried (which DataLoader)
  // I/O calls made while a batch was being produced (`step` tag set):
  int64_t step_data_ns = 0, step_meta_ns = 0;
};

struct Verdict {
  std::string bottleneck;  // compute, loader-cpu, io, metadata, checkpoint, none
  std::string summary;
  // name -> value, in the order they were added
  std::vector<std::pair<std::string, double>> evidence;
  struct Advice {
    std::string rule, text;
    std::vector<std::pair<std::string, double>> evidence;
    int64_t at_stake_ns = 0;  // the time the advice concerns: what following it could save at most
  };
  std::vector<Advice> advice;
  // What advice is weighed against: the training loop's time, else the job's wall time.
  int64_t run_ns = 0;
  std::vector<Advice> left_out;  // rules that held, with less than kAtStakeShareMin of run_ns at stake
};

// Thresholds of the rules (docs/analysis.md, "Verdict rules").
constexpr double kWaitShareMin = 0.10;        // loop waiting on the loader
constexpr double kLoaderIoShareMin = 0.50;    // of the loader's busy time spent in I/O
constexpr double kIdleInWaitsMax = 0.50;      // workers idle while the loop waited: not the loader's speed
constexpr double kCheckpointShareMin = 0.10;  // of the loop in checkpoint calls
constexpr size_t kSmallFilesMin = 100;        // files read
constexpr int64_t kSmallFileBytes = 1 << 20;  // mean size below which files are small
constexpr uint64_t kMetaOpsMin = 100;         // metadata calls on data files
constexpr double kColdEpochFactor = 2.0;      // first epoch read time vs the others
constexpr int64_t kColdEpochMinNs = 5'000'000;
constexpr double kIoShareBound = 0.50;        // without a loop: I/O share of a process
constexpr double kLargeWriteBytes = 1 << 20;  // write-bound: smaller writes are advised to grow
constexpr uint64_t kSmallRequestsMin = 1000;  // reads + writes on data files
constexpr int64_t kSmallRequestBytes = 64 << 10;  // mean request below which requests are small
constexpr double kAtStakeShareMin = 0.05;  // advice whose time at stake is less of the run is left out

// `epoch_read_ns`: read time on the job's files (not code, not system files)
// per `epoch` tag value.
// `paths`: the critical path pass's training loops; the main loop's time is
// then its epochs plus the checkpoints between them (else its first to its
// last DataLoader call).
Verdict make_verdict(const Job& job, const std::map<int64_t, VerdictProc>& procs,
                     const std::map<std::string, int64_t>& epoch_read_ns, const AnalyzeOptions& o,
                     const std::vector<LoopPath>& paths = {});

std::unique_ptr<Pass> make_verdict_pass(const AnalyzeOptions& o);

}  // namespace strata::analysis
