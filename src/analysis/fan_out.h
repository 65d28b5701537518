// Hands one unit's event stream to the state of every event pass.
//
// The passes consume the same events independently of each other, so one
// large unit (a single process file of tens of millions of events) is also
// aggregated on two cores: the first pass (io, the costliest) runs on a
// helper thread while the calling thread runs the source and the other
// passes. Events are gathered into chunks of a few thousand; the caller
// runs its passes on a chunk and hands it over without waiting, so the
// helper works behind it, at most kChunks chunks behind. Every pass still
// sees every event in order, and its state is the same as on one thread:
// only the wall time changes. The caller waits for the helper (drains) only
// before the other calls (process, warning, end...) and at the source's
// sync points, where the tables the passes read may change.
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
  // With threads >= 2 and more than one pass, the first pass runs on a
  // helper thread; otherwise every pass runs on the calling thread.
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
  void sync_point() override { drain(); }
  void end() override;

  bool parallel() const { return helper_.joinable(); }

 private:
  static constexpr size_t kChunk = 16384;  // events per hand-over (~1.3 MB)
  static constexpr size_t kChunks = 4;    // chunks the helper may be behind

  void hand_over();  // the chunk being filled: the caller's passes, then the helper's
  void drain();      // hands over a partial chunk and waits until the helper is done
  void wait_for_helper();
  void helper_main();
  void rethrow_helper_error();

  std::vector<PassState*> states_;  // every pass, in pass order
  std::vector<PassState*> mine_;    // the calling thread's passes
  std::vector<PassState*> helpers_passes_;
  std::vector<IoEvent> chunks_[kChunks];
  std::thread helper_;
  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  uint64_t handed_ = 0;  // chunks handed over; chunk c lives in chunks_[c % kChunks]
  uint64_t done_ = 0;    // chunks the helper has finished
  bool stop_ = false;
  std::exception_ptr error_;
};

}  // namespace strata::analysis
