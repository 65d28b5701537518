// Stage 2 of a file's blocks (block.h) on worker threads, ahead of the
// thread that reads the file (internal to src/reader). The consumer queues
// blocks in file order as it scans them and takes them back in the same
// order; at most `depth` blocks are in flight, so memory stays bounded
// whatever the file's size. The consumer never waits idle for a block no
// worker has started: it loads that block itself.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "reader/block.h"

struct ZSTD_DCtx_s;

namespace strata::reader {

class BlockPipeline {
 public:
  // Stage 2 of one block; `dctx` is the calling thread's zstd context. It
  // must not throw: it records a failure in the job.
  using Load = std::function<void(BlockJob& job, ZSTD_DCtx_s* dctx)>;

  BlockPipeline(unsigned workers, size_t depth, Load load);
  ~BlockPipeline();  // waits for the blocks being loaded, then stops the workers
  BlockPipeline(const BlockPipeline&) = delete;
  BlockPipeline& operator=(const BlockPipeline&) = delete;

  bool has_room() const;  // fewer than `depth` blocks in flight
  bool empty() const;
  // A job to fill in stage 1 (its buffers kept from an earlier block).
  BlockJob& spare();
  // Queues the spare job: for stage 2 when `load`, else as it is (an end of
  // file, or a stage 1 failure).
  void push(bool load);
  // The oldest block, stage 2 done. Loads it on this thread with `own_dctx`
  // if no worker has taken it yet.
  BlockJob& head(ZSTD_DCtx_s* own_dctx);
  // Recycles the oldest block (after head()).
  void pop();

 private:
  enum class State { kQueued, kLoading, kDone };
  struct Entry {
    BlockJob job;
    State state = State::kDone;
  };
  void work();
  Entry* first_queued();
  void run_load(BlockJob& job, ZSTD_DCtx_s* dctx);

  const size_t depth_;
  const Load load_;
  mutable std::mutex mu_;
  std::condition_variable work_ready_, load_done_;
  std::deque<std::unique_ptr<Entry>> queue_;  // file order; stable addresses for the workers
  std::vector<std::unique_ptr<Entry>> free_;
  std::unique_ptr<Entry> spare_;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace strata::reader
