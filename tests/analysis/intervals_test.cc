// IntervalSet (src/analysis/intervals.h) against a brute-force union over a
// small range: in order, in completion order of overlapping threads (tail
// merges), sequential runs from random offsets (pending coalescing), random.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "analysis/intervals.h"

using strata::analysis::IntervalSet;

namespace {

using Intervals = std::vector<std::pair<int64_t, int64_t>>;

// The union of `ivs` as sorted, disjoint, non-adjacent intervals.
Intervals brute_union(const Intervals& ivs, int64_t range) {
  std::vector<bool> covered(static_cast<size_t>(range), false);
  for (auto [s, e] : ivs)
    for (int64_t x = s; x < e; ++x) covered[static_cast<size_t>(x)] = true;
  Intervals out;
  for (int64_t x = 0; x < range; ++x) {
    if (!covered[static_cast<size_t>(x)]) continue;
    if (!out.empty() && out.back().second == x)
      out.back().second = x + 1;
    else
      out.emplace_back(x, x + 1);
  }
  return out;
}

void expect_same(const Intervals& ivs, int64_t range) {
  IntervalSet set;
  for (auto [s, e] : ivs) set.insert(s, e);
  const Intervals want = brute_union(ivs, range);
  int64_t measure = 0;
  for (auto [s, e] : want) measure += e - s;
  EXPECT_EQ(set.measure(), measure);
  EXPECT_EQ(set.intervals(), want);
  EXPECT_EQ(set.clipped(), 0u);
}

TEST(IntervalSet, MatchesBruteForceOnManyShapes) {
  std::mt19937_64 rng(7);
  constexpr int64_t kRange = 4000;
  for (int round = 0; round < 300; ++round) {
    Intervals ivs;
    const int shape = round % 4;
    if (shape == 0) {  // random
      for (int i = 0; i < 600; ++i) {
        const int64_t s = static_cast<int64_t>(rng() % (kRange - 50));
        ivs.emplace_back(s, s + static_cast<int64_t>(rng() % 50));
      }
    } else if (shape == 1) {  // threads' events, handed over in completion order
      std::vector<int64_t> t(4, 0);
      for (int i = 0; i < 400; ++i) {
        const size_t k = rng() % t.size();
        const int64_t s = t[k] + static_cast<int64_t>(rng() % 8), e = s + 1 + static_cast<int64_t>(rng() % 30);
        if (e >= kRange) break;
        ivs.emplace_back(s, e);
        t[k] = e;
      }
      std::stable_sort(ivs.begin(), ivs.end(), [](auto& a, auto& b) { return a.second < b.second; });
    } else if (shape == 2) {  // runs of sequential reads, each from a random offset
      for (int run = 0; run < 60; ++run) {
        int64_t off = static_cast<int64_t>(rng() % (kRange - 200));
        for (int i = 0, n = 1 + static_cast<int>(rng() % 8); i < n; ++i) {
          const int64_t len = 1 + static_cast<int64_t>(rng() % 20);
          ivs.emplace_back(off, off + len);
          off += len - static_cast<int64_t>(rng() % 3);  // contiguous, or overlapping a little
        }
      }
    } else {  // mostly in order, long regions ending late
      int64_t at = 0;
      for (int i = 0; i < 300 && at < kRange - 200; ++i) {
        const int64_t len = 1 + static_cast<int64_t>(rng() % (i % 17 == 0 ? 150 : 10));
        ivs.emplace_back(at, at + len);
        at += static_cast<int64_t>(rng() % 12);
      }
      std::stable_sort(ivs.begin(), ivs.end(), [](auto& a, auto& b) { return a.second < b.second; });
    }
    expect_same(ivs, kRange);
  }
}

TEST(IntervalSet, TailMergeSwallowsEarlierIntervals) {
  // [0,2) [4,6) [8,10), then [1,9): one interval [0,10).
  expect_same({{0, 2}, {4, 6}, {8, 10}, {1, 9}}, 20);
  // Reaches the last one's start exactly, and a gap is kept before it.
  expect_same({{0, 2}, {4, 6}, {8, 10}, {7, 8}, {3, 4}}, 20);
}

}  // namespace
