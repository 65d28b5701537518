#include "analysis/fan_out.h"

#include <algorithm>
#include <utility>

namespace strata::analysis {

FanOut::FanOut(std::vector<PassState*> states, unsigned threads) : states_(std::move(states)) {
  const size_t ngroups = std::max<size_t>(1, std::min<size_t>(threads, states_.size()));
  groups_.resize(ngroups);
  for (size_t i = 0; i < states_.size(); ++i)
    groups_[ngroups == 1 || i == 0 ? 0 : 1 + (i - 1) % (ngroups - 1)].push_back(states_[i]);
  if (ngroups > 1) {
    pending_.reserve(kChunk);
    for (size_t g = 1; g < ngroups; ++g) helpers_.emplace_back(&FanOut::helper_main, this, g);
  }
}

FanOut::~FanOut() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& t : helpers_) t.join();
}

void FanOut::helper_main(size_t group) {
  uint64_t seen = 0;
  while (true) {
    std::unique_lock<std::mutex> lk(mu_);
    work_cv_.wait(lk, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    lk.unlock();
    try {
      const std::span<const IoEvent> chunk(pending_.data(), pending_.size());
      for (PassState* s : groups_[group]) s->events(chunk);
    } catch (...) {
      std::lock_guard<std::mutex> elk(mu_);
      if (!error_) error_ = std::current_exception();
    }
    lk.lock();
    if (--busy_ == 0) done_cv_.notify_one();
  }
}

void FanOut::run_chunk() {
  if (pending_.empty()) return;
  {
    std::lock_guard<std::mutex> lk(mu_);
    busy_ = helpers_.size();
    ++generation_;
  }
  work_cv_.notify_all();
  std::exception_ptr mine;
  try {
    const std::span<const IoEvent> chunk(pending_.data(), pending_.size());
    for (PassState* s : groups_[0]) s->events(chunk);
  } catch (...) {
    mine = std::current_exception();
  }
  std::unique_lock<std::mutex> lk(mu_);
  done_cv_.wait(lk, [&] { return busy_ == 0; });  // the helpers read pending_ until then
  pending_.clear();
  if (!mine) mine = error_;
  error_ = nullptr;
  lk.unlock();
  if (mine) std::rethrow_exception(mine);
}

void FanOut::events(std::span<const IoEvent> batch) {
  if (helpers_.empty()) {
    // Each pass takes the whole batch in turn: one virtual call per pass and
    // batch, and each pass's per-event loop stays in its own code and data.
    for (PassState* s : groups_[0]) s->events(batch);
    return;
  }
  while (!batch.empty()) {
    const size_t n = std::min(batch.size(), kChunk - pending_.size());
    pending_.insert(pending_.end(), batch.begin(), batch.begin() + static_cast<ptrdiff_t>(n));
    batch = batch.subspan(n);
    if (pending_.size() == kChunk) run_chunk();
  }
}

void FanOut::event(const IoEvent& e) { events(std::span<const IoEvent>(&e, 1)); }

// The calls other than events reach every pass on this thread, after the
// events before them: sources deliver every pending batch before any other
// call, and so does this.
void FanOut::begin(const std::string& unit, const Tables* tables, bool sizes_known) {
  run_chunk();
  for (PassState* s : states_) s->begin(unit, tables, sizes_known);
}

void FanOut::process(const ProcessMeta& meta) {
  run_chunk();
  for (PassState* s : states_) s->process(meta);
}

void FanOut::profile(int64_t pid, const std::vector<counters::PosixRecord>& posix,
                     const std::vector<counters::StdioRecord>& stdio) {
  run_chunk();
  for (PassState* s : states_) s->profile(pid, posix, stdio);
}

void FanOut::warning(const std::string& what) {
  run_chunk();
  for (PassState* s : states_) s->warning(what);
}

void FanOut::approximate(const std::string& figure) {
  run_chunk();
  for (PassState* s : states_) s->approximate(figure);
}

void FanOut::end() {
  run_chunk();
  for (PassState* s : states_) s->end();
}

}  // namespace strata::analysis
