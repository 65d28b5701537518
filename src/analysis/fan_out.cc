#include "analysis/fan_out.h"

#include <utility>

namespace strata::analysis {

FanOut::FanOut(std::vector<PassState*> states, unsigned threads) : states_(std::move(states)) {
  if (threads < 2 || states_.size() < 2) {
    mine_ = states_;
    return;
  }
  helpers_passes_.push_back(states_[0]);
  mine_.assign(states_.begin() + 1, states_.end());
  for (auto& c : chunks_) c.reserve(kChunk);
  helper_ = std::thread(&FanOut::helper_main, this);
}

FanOut::~FanOut() {
  if (!parallel()) return;
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  helper_.join();
}

void FanOut::helper_main() {
  std::unique_lock<std::mutex> lk(mu_);
  while (true) {
    work_cv_.wait(lk, [&] { return stop_ || done_ < handed_; });
    if (done_ == handed_) return;  // stopped with nothing left
    const std::vector<IoEvent>& chunk = chunks_[done_ % kChunks];
    const bool failed = error_ != nullptr;
    lk.unlock();
    std::exception_ptr error;
    if (!failed) {
      try {
        for (PassState* s : helpers_passes_) s->events(chunk);
      } catch (...) {
        error = std::current_exception();
      }
    }
    lk.lock();
    if (error && !error_) error_ = error;
    ++done_;
    done_cv_.notify_one();
  }
}

void FanOut::rethrow_helper_error() {
  std::exception_ptr e;
  {
    std::lock_guard<std::mutex> lk(mu_);
    e = std::exchange(error_, nullptr);
  }
  if (e) std::rethrow_exception(e);
}

void FanOut::hand_over() {
  std::vector<IoEvent>& chunk = chunks_[handed_ % kChunks];
  if (chunk.empty()) return;
  try {
    for (PassState* s : mine_) s->events(chunk);
  } catch (...) {
    wait_for_helper();  // it reads the chunks handed over until then
    throw;
  }
  std::unique_lock<std::mutex> lk(mu_);
  ++handed_;
  work_cv_.notify_one();
  // The next chunk's buffer last held chunk handed_ - kChunks: reused once
  // the helper is past it.
  done_cv_.wait(lk, [&] { return done_ + kChunks > handed_; });
  lk.unlock();
  chunks_[handed_ % kChunks].clear();
  rethrow_helper_error();
}

void FanOut::wait_for_helper() {
  std::unique_lock<std::mutex> lk(mu_);
  done_cv_.wait(lk, [&] { return done_ == handed_; });
}

void FanOut::drain() {
  if (!parallel()) return;
  hand_over();
  wait_for_helper();
  rethrow_helper_error();
}

void FanOut::events(std::span<const IoEvent> batch) {
  if (!parallel()) {
    // Each pass takes the whole batch in turn: one virtual call per pass and
    // batch, and each pass's per-event loop stays in its own code and data.
    for (PassState* s : mine_) s->events(batch);
    return;
  }
  while (!batch.empty()) {
    std::vector<IoEvent>& chunk = chunks_[handed_ % kChunks];
    const size_t n = std::min(batch.size(), kChunk - chunk.size());
    chunk.insert(chunk.end(), batch.begin(), batch.begin() + static_cast<ptrdiff_t>(n));
    batch = batch.subspan(n);
    if (chunk.size() == kChunk) hand_over();
  }
}

void FanOut::event(const IoEvent& e) { events(std::span<const IoEvent>(&e, 1)); }

// The calls other than events reach every pass on this thread, after all the
// events before them.
void FanOut::begin(const std::string& unit, const Tables* tables, bool sizes_known) {
  drain();
  for (PassState* s : states_) s->begin(unit, tables, sizes_known);
}

void FanOut::process(const ProcessMeta& meta) {
  drain();
  for (PassState* s : states_) s->process(meta);
}

void FanOut::profile(int64_t pid, const std::vector<counters::PosixRecord>& posix,
                     const std::vector<counters::StdioRecord>& stdio) {
  drain();
  for (PassState* s : states_) s->profile(pid, posix, stdio);
}

void FanOut::warning(const std::string& what) {
  drain();
  for (PassState* s : states_) s->warning(what);
}

void FanOut::approximate(const std::string& figure) {
  drain();
  for (PassState* s : states_) s->approximate(figure);
}

void FanOut::end() {
  drain();
  for (PassState* s : states_) s->end();
}

}  // namespace strata::analysis
