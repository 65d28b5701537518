// Hands one unit's event stream to the state of every event pass.
//
// The passes consume the same events independently of each other, so one
// large unit (a single process file of tens of millions of events) is also
// aggregated on several cores: the passes split into groups, and each group
// takes every batch on its own thread while the others take it on theirs.
// Every pass still sees every event in order, and its state is the same as
// on one thread: only the wall time changes. Events are gathered into
// chunks first so that a chunk's work (thousands of events) dwarfs the
// hand-over between threads.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "analysis/pass.h"

namespace strata::analysis {

class FanOut : public UnitConsumer {
 public:
  // Up to `threads` groups (the calling thread runs the first); the first
  // pass (io, the costliest) has a group of its own.
  FanOut(std::vector<PassState*> states, unsigned threads);
  ~FanOut() override;
  FanOut(const FanOut&) = delete;
  FanOut& operator=(const FanOut&) = delete;

  void begin(const std::string& unit, const Tables* tables, bool sizes_known) override;
  void process(const ProcessMeta& meta) override;
  void event(const IoEvent& e) override;
  void events(std::span<const IoEvent> batch) override;
  void profile(int64_t pid, const std::vector<counters::PosixRecord>& posix,
               const std::vector<counters::StdioRecord>& stdio) override;
  void warning(const std::string& what) override;
  void approximate(const std::string& figure) override;
  void end() override;

  size_t groups() const { return groups_.size(); }

 private:
  static constexpr size_t kChunk = 4096;  // events per hand-over (~320 KB)

  void run_chunk();  // every group consumes pending_; returns when all are done
  void helper_main(size_t group);

  std::vector<PassState*> states_;                // every pass, in pass order
  std::vector<std::vector<PassState*>> groups_;
  std::vector<IoEvent> pending_;
  std::vector<std::thread> helpers_;
  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  uint64_t generation_ = 0;  // bumped per chunk handed over
  size_t busy_ = 0;          // helpers still on the current chunk
  bool stop_ = false;
  std::exception_ptr error_;
};

}  // namespace strata::analysis
