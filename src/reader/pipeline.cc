#include "reader/pipeline.h"

#include <zstd.h>

#include <exception>
#include <utility>

namespace strata::reader {

BlockPipeline::BlockPipeline(unsigned workers, size_t depth, Load load) : depth_(depth), load_(std::move(load)) {
  workers_.reserve(workers);
  for (unsigned i = 0; i < workers; ++i) workers_.emplace_back([this] { work(); });
}

BlockPipeline::~BlockPipeline() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  work_ready_.notify_all();
  for (auto& t : workers_) t.join();
}

bool BlockPipeline::has_room() const {
  std::lock_guard<std::mutex> lk(mu_);
  return queue_.size() < depth_;
}

bool BlockPipeline::empty() const {
  std::lock_guard<std::mutex> lk(mu_);
  return queue_.empty();
}

BlockJob& BlockPipeline::spare() {
  if (!spare_) {
    std::lock_guard<std::mutex> lk(mu_);
    if (free_.empty()) {
      spare_ = std::make_unique<Entry>();
    } else {
      spare_ = std::move(free_.back());
      free_.pop_back();
    }
  }
  spare_->job.error = nullptr;
  return spare_->job;
}

void BlockPipeline::push(bool load) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    spare_->state = load ? State::kQueued : State::kDone;
    queue_.push_back(std::move(spare_));
  }
  if (load) work_ready_.notify_one();
}

BlockPipeline::Entry* BlockPipeline::first_queued() {
  for (auto& e : queue_)
    if (e->state == State::kQueued) return e.get();
  return nullptr;
}

void BlockPipeline::run_load(BlockJob& job, ZSTD_DCtx_s* dctx) {
  try {
    load_(job, dctx);
  } catch (...) {
    job.error = std::current_exception();
  }
}

BlockJob& BlockPipeline::head(ZSTD_DCtx_s* own_dctx) {
  std::unique_lock<std::mutex> lk(mu_);
  Entry& head = *queue_.front();
  // While the head is not ready, load the oldest block nobody has taken.
  while (head.state != State::kDone) {
    Entry* e = first_queued();
    if (!e) {
      load_done_.wait(lk);
      continue;
    }
    e->state = State::kLoading;
    lk.unlock();
    run_load(e->job, own_dctx);
    lk.lock();
    e->state = State::kDone;
  }
  return head.job;
}

void BlockPipeline::pop() {
  std::lock_guard<std::mutex> lk(mu_);
  free_.push_back(std::move(queue_.front()));
  queue_.pop_front();
}

void BlockPipeline::work() {
  ZSTD_DCtx* dctx = ZSTD_createDCtx();
  std::unique_lock<std::mutex> lk(mu_);
  while (true) {
    Entry* e = nullptr;
    work_ready_.wait(lk, [&] { return stop_ || (e = first_queued()) != nullptr; });
    if (stop_) break;
    e->state = State::kLoading;
    lk.unlock();
    run_load(e->job, dctx);
    lk.lock();
    e->state = State::kDone;
    load_done_.notify_all();
  }
  lk.unlock();
  ZSTD_freeDCtx(dctx);
}

}  // namespace strata::reader
