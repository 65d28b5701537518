// Exact union of half-open integer intervals, built incrementally. Inserting
// in (nearly) increasing order is O(1); out-of-order inserts are batched and
// merged (O(log n) amortised). Memory is bounded: past
// `cap` disjoint intervals the oldest half is folded into a sealed measure;
// a later interval reaching back before the sealed frontier is clipped there
// and counted in clipped() (the result is then a lower bound, flagged).
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace strata::analysis {

class IntervalSet {
 public:
  explicit IntervalSet(size_t cap = 1u << 16) : cap_(cap) {}

  // The common cases inline: an interval after the last one, or one
  // reaching into the last one from its start on, below the cap. Forced:
  // GCC kept it out of line, and the call's register saves cost as much as
  // the fast path itself.
  [[gnu::always_inline]] void insert(int64_t s, int64_t e) {
    if (e <= s) return;
    if (e <= sealed_end_) {  // wholly before the sealed frontier: clipped away
      ++clipped_;
      return;
    }
    if (s >= sealed_end_ && v_.size() < cap_) [[likely]] {
      if (v_.empty() || s > v_.back().second) {
        // With room, the store in place: GCC keeps emplace_back out of line
        // (its reallocation), a call with register saves per interval.
        if (v_.size() < v_.capacity()) [[likely]]
          append_in_place(s, e);
        else
          v_.emplace_back(s, e);
        return;
      }
      if (s >= v_.back().first) {
        if (e > v_.back().second) v_.back().second = e;
        return;
      }
    }
    insert_slow(s, e);
  }
  [[gnu::noinline]] void insert_slow(int64_t s, int64_t e) {
    if (s < sealed_end_) {
      ++clipped_;
      s = sealed_end_;
      if (e <= s) return;
    }
    if (v_.empty() || s > v_.back().second) {
      v_.emplace_back(s, e);
    } else if (s >= v_.back().first) {
      if (e > v_.back().second) v_.back().second = e;
    } else if (e >= v_.back().first) {
      // Starts before the last interval and reaches into it (events of
      // several threads in completion order): merged into the tail, each
      // interval it covers popped, so amortised O(1) and nothing pending.
      Interval merged{s, std::max(e, v_.back().second)};
      v_.pop_back();
      while (!v_.empty() && v_.back().second >= merged.first) {
        merged.first = std::min(merged.first, v_.back().first);
        v_.pop_back();
      }
      v_.push_back(merged);
    } else if (!pending_.empty() && s >= pending_.back().first && s <= pending_.back().second) {
      // Continues the last out-of-order interval (sequential reads from a
      // random offset): one pending interval for the whole run.
      if (e > pending_.back().second) pending_.back().second = e;
    } else {
      // Out of order (strided or random offsets, a long region ending
      // late): batched, so each costs a sort step instead of a memmove.
      pending_.emplace_back(s, e);
      if (pending_.size() >= std::max<size_t>(kMinBatch, v_.size() / 4)) flush();
    }
    if (v_.size() > cap_) {
      flush();
      if (v_.size() > cap_) seal();
    }
  }

  int64_t measure() const {
    flush();
    int64_t m = sealed_;
    for (auto& iv : v_) m += iv.second - iv.first;
    return m;
  }
  uint64_t clipped() const { return clipped_; }
  size_t size() const {
    flush();
    return v_.size();
  }
  const std::vector<std::pair<int64_t, int64_t>>& intervals() const {
    flush();
    return v_;
  }
  bool empty() const { return v_.empty() && pending_.empty() && sealed_ == 0; }
  // A set that only answers measure() and clipped(): what a saved and
  // reloaded pass state keeps of it (serial.h). Later inserts are clipped.
  void freeze(int64_t measure, uint64_t clipped) {
    v_.clear();
    v_.shrink_to_fit();
    pending_.clear();
    pending_.shrink_to_fit();
    sealed_ = measure;
    sealed_end_ = INT64_MAX;
    clipped_ = clipped;
  }

  // Measure of the intersection with another set (live intervals only;
  // sealed parts of either set are not intersected).
  int64_t intersect_measure(const IntervalSet& o) const {
    flush();
    o.flush();
    int64_t m = 0;
    size_t i = 0, j = 0;
    while (i < v_.size() && j < o.v_.size()) {
      int64_t s = std::max(v_[i].first, o.v_[j].first);
      int64_t e = std::min(v_[i].second, o.v_[j].second);
      if (e > s) m += e - s;
      if (v_[i].second < o.v_[j].second)
        ++i;
      else
        ++j;
    }
    return m;
  }

 private:
  static constexpr size_t kMinBatch = 256;
  using Interval = std::pair<int64_t, int64_t>;

  [[gnu::always_inline]] void append_in_place(int64_t s, int64_t e) { v_.push_back(Interval{s, e}); }

  // Unites the pending intervals with the sorted disjoint ones: a sort of
  // the batch and one linear merge into a buffer kept for the next flush.
  void flush() const {
    if (pending_.empty()) return;
    std::sort(pending_.begin(), pending_.end());
    merged_.clear();
    merged_.reserve(v_.size() + pending_.size());
    size_t i = 0, j = 0;
    while (i < v_.size() || j < pending_.size()) {
      const Interval& next = (j == pending_.size() || (i < v_.size() && v_[i].first <= pending_[j].first))
                                 ? v_[i++]
                                 : pending_[j++];
      if (!merged_.empty() && next.first <= merged_.back().second)
        merged_.back().second = std::max(merged_.back().second, next.second);
      else
        merged_.push_back(next);
    }
    v_.swap(merged_);
    pending_.clear();
  }
  void seal() {
    size_t half = v_.size() / 2;
    for (size_t i = 0; i < half; ++i) sealed_ += v_[i].second - v_[i].first;
    sealed_end_ = v_[half - 1].second;
    v_.erase(v_.begin(), v_.begin() + static_cast<long>(half));
  }

  // Sorted, disjoint; mutable because reads flush the pending batch first.
  mutable std::vector<Interval> v_;
  mutable std::vector<Interval> pending_;
  mutable std::vector<Interval> merged_;
  size_t cap_;
  int64_t sealed_ = 0;
  int64_t sealed_end_ = INT64_MIN;
  uint64_t clipped_ = 0;
};

}  // namespace strata::analysis
