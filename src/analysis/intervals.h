// Exact union of half-open integer intervals, built incrementally. Inserting
// in (nearly) increasing order is O(1) amortised. Memory is bounded: past
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
  explicit IntervalSet(size_t cap = 1u << 20) : cap_(cap) {}

  void insert(int64_t s, int64_t e) {
    if (e <= s) return;
    if (s < sealed_end_) {
      ++clipped_;
      s = sealed_end_;
      if (e <= s) return;
    }
    if (v_.empty() || s > v_.back().second) {
      v_.emplace_back(s, e);
    } else if (s >= v_.back().first) {
      if (e > v_.back().second) v_.back().second = e;
    } else {
      insert_slow(s, e);
    }
    if (v_.size() > cap_) seal();
  }

  int64_t measure() const {
    int64_t m = sealed_;
    for (auto& iv : v_) m += iv.second - iv.first;
    return m;
  }
  uint64_t clipped() const { return clipped_; }
  size_t size() const { return v_.size(); }
  const std::vector<std::pair<int64_t, int64_t>>& intervals() const { return v_; }
  bool empty() const { return v_.empty() && sealed_ == 0; }
  // A set that only answers measure() and clipped(): what a saved and
  // reloaded pass state keeps of it (serial.h). Later inserts are clipped.
  void freeze(int64_t measure, uint64_t clipped) {
    v_.clear();
    v_.shrink_to_fit();
    sealed_ = measure;
    sealed_end_ = INT64_MAX;
    clipped_ = clipped;
  }

  // Measure of the intersection with another set (live intervals only;
  // sealed parts of either set are not intersected).
  int64_t intersect_measure(const IntervalSet& o) const {
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
  void insert_slow(int64_t s, int64_t e) {
    // first interval whose end >= s
    auto it = std::lower_bound(v_.begin(), v_.end(), s,
                               [](const std::pair<int64_t, int64_t>& iv, int64_t x) { return iv.second < x; });
    auto jt = it;
    int64_t ns = s, ne = e;
    while (jt != v_.end() && jt->first <= e) {
      ns = std::min(ns, jt->first);
      ne = std::max(ne, jt->second);
      ++jt;
    }
    if (it == jt) {
      v_.insert(it, {ns, ne});
    } else {
      *it = {ns, ne};
      v_.erase(it + 1, jt);
    }
  }
  void seal() {
    size_t half = v_.size() / 2;
    for (size_t i = 0; i < half; ++i) sealed_ += v_[i].second - v_[i].first;
    sealed_end_ = v_[half - 1].second;
    v_.erase(v_.begin(), v_.begin() + static_cast<long>(half));
  }

  std::vector<std::pair<int64_t, int64_t>> v_;
  size_t cap_;
  int64_t sealed_ = 0;
  int64_t sealed_end_ = INT64_MIN;
  uint64_t clipped_ = 0;
};

}  // namespace strata::analysis
