#include "convert/chrome_layout.h"

#include <algorithm>
#include <set>

#include "strata/reader.h"

namespace strata::convert {

bool ThreadTracks::fits(std::vector<Span>& stack, int64_t start, int64_t end) {
  // Events written before this one but lying after it (a stat made after a
  // region's clock stopped, written before the region) stay where they are.
  size_t hi = stack.size();
  while (hi > 0 && stack[hi - 1].start >= end && stack[hi - 1].end > end) --hi;
  // The outermost events overlapping it must lie inside it (its children,
  // written first as they ended first) or hold it whole (a child written
  // after its parent, ended first by a clock that differs by a few ns).
  size_t lo = hi;
  while (lo > 0 && stack[lo - 1].end > start) {
    const Span& t = stack[lo - 1];
    if (t.start >= start && t.end <= end) {
      --lo;
      continue;
    }
    return t.start <= start && t.end >= end && lo == hi;
  }
  stack.erase(stack.begin() + static_cast<std::ptrdiff_t>(lo), stack.begin() + static_cast<std::ptrdiff_t>(hi));
  stack.insert(stack.begin() + static_cast<std::ptrdiff_t>(lo), Span{start, end});
  if (stack.size() > kKeep) stack.erase(stack.begin(), stack.begin() + kKeep / 2);
  return true;
}

int ThreadTracks::place(int64_t start, int64_t end) {
  for (int t = 0; t < kMaxTracks; ++t) {
    if (t == static_cast<int>(tracks_.size())) tracks_.emplace_back();
    if (fits(tracks_[t], start, end)) return t;
  }
  return kMaxTracks - 1;  // eight overlapping layers: the last one takes the rest
}

void BatchFlows::batch(int64_t loader, int64_t epoch, int64_t step, const Slice& s) {
  batches_.push_back({{loader, epoch, step}, s});
}

void BatchFlows::next(int64_t loader, int64_t epoch, int64_t step, const Slice& s) {
  nexts_[{s.pid, loader, epoch, step}].push_back(s);
}

std::vector<BatchFlows::Flow> BatchFlows::flows() const {
  std::set<int64_t> loops;
  for (const auto& [k, v] : nexts_) loops.insert(std::get<0>(k));
  // The training loop a worker feeds: its nearest ancestor that waits for
  // batches (the parent, or the parent of a forkserver).
  auto loop_of = [&](int64_t pid) -> int64_t {
    for (int up = 0; up < 8; ++up) {
      auto it = ppid_.find(pid);
      if (it == ppid_.end()) return -1;
      pid = it->second;
      if (loops.count(pid)) return pid;
    }
    return -1;
  };
  std::map<Key, std::vector<Slice>> produced;
  for (const auto& [k, s] : batches_) {
    const int64_t loop = loop_of(s.pid);
    if (loop >= 0) produced[{loop, std::get<0>(k), std::get<1>(k), std::get<2>(k)}].push_back(s);
  }
  auto by_start = [](const Slice& a, const Slice& b) { return a.start != b.start ? a.start < b.start : a.pid < b.pid; };
  std::vector<Flow> out;
  for (auto& [key, from] : produced) {
    auto it = nexts_.find(key);
    if (it == nexts_.end()) continue;
    std::vector<Slice> to = it->second;
    std::sort(from.begin(), from.end(), by_start);
    std::sort(to.begin(), to.end(), by_start);
    for (size_t i = 0; i < std::min(from.size(), to.size()); ++i) out.push_back({from[i], to[i]});
  }
  std::sort(out.begin(), out.end(), [&](const Flow& a, const Flow& b) { return by_start(a.to, b.to); });
  return out;
}

std::string process_label(const ProcessFacts& p) {
  std::string name;
  std::vector<std::string> detail;
  if (p.worker >= 0) {
    name = "DataLoader worker " + std::to_string(p.worker);
    if (p.loader >= 0) detail.push_back("loader " + std::to_string(p.loader));
    if (p.epoch_min == p.epoch_max) detail.push_back("epoch " + std::to_string(p.epoch_min));
    else if (p.epoch_min < p.epoch_max)
      detail.push_back("epochs " + std::to_string(p.epoch_min) + "-" + std::to_string(p.epoch_max));
  } else if (p.waits_for_batches) {
    name = "training loop";
  } else {
    name = reader::program_label(p.command);
  }
  if (p.rank >= 0) detail.push_back("rank " + std::to_string(p.rank));
  for (size_t i = 0; i < detail.size(); ++i) name += (i ? ", " : " (") + detail[i];
  if (!detail.empty()) name += ")";
  return name;
}

}  // namespace strata::convert
