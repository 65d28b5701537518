// The t-EFG order: iteration partitions per node rebuild the exact event
// sequence (thousands of random and loop-shaped sequences), compactly for
// regular loops, and malformed partitions are refused.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "format/temporal_order.h"

namespace {

using strata::format::decode_order;
using strata::format::encode_order;
using strata::format::Partition;
using strata::format::TemporalOrder;

// 5 epochs x 40 x {open(1) read(2) x3 close(3)} + {open(4) write(5) close(6)}.
std::vector<uint32_t> epochs(int n_epochs, int steps) {
  std::vector<uint32_t> seq;
  for (int e = 0; e < n_epochs; ++e) {
    for (int s = 0; s < steps; ++s) seq.insert(seq.end(), {1, 2, 2, 2, 3});
    seq.insert(seq.end(), {4, 5, 6});
  }
  return seq;
}

TEST(EfgTemporal, RegularLoopsNeedFewPartitions) {
  const std::vector<uint32_t> seq = epochs(5, 40);
  const TemporalOrder t = encode_order(seq, 7);
  EXPECT_EQ(t.partition_count(), 8u);
  // close(3) -> open(1) for 39 of every 40 visits, -> open(4) on the 40th.
  ASSERT_EQ(t.partitions[3].size(), 2u);
  EXPECT_EQ(t.partitions[3][0], (Partition{1, 0, 160, 40, 39}));
  EXPECT_EQ(t.partitions[3][1], (Partition{4, 39, 199, 40, 1}));
  EXPECT_EQ(decode_order(t), seq);
  // The same count at 50 x 400: the order costs nothing per event.
  EXPECT_EQ(encode_order(epochs(50, 400), 7).partition_count(), 8u);
}

TEST(EfgTemporal, RandomSequencesRoundTrip) {
  std::mt19937 rng(11);
  for (int c = 0; c < 5000; ++c) {
    const uint32_t nodes = 1 + rng() % 9;
    std::vector<uint32_t> seq(rng() % 200);
    if (c % 2 == 0) {
      for (auto& v : seq) v = rng() % nodes;
    } else {  // loop-shaped with random breaks: long runs of a short pattern
      const uint32_t period = 1 + rng() % 5;
      for (size_t i = 0; i < seq.size(); ++i) seq[i] = (rng() % 23 == 0) ? rng() % nodes : (i % period) % nodes;
    }
    const TemporalOrder t = encode_order(seq, nodes);
    ASSERT_EQ(decode_order(t), seq) << "case " << c;
  }
}

TEST(EfgTemporal, MalformedPartitionsAreRefused) {
  TemporalOrder t = encode_order(epochs(2, 3), 7);
  TemporalOrder overlap = t;
  overlap.partitions[2].push_back({3, 0, 0, 0, 1});
  EXPECT_THROW(decode_order(overlap), std::runtime_error);
  TemporalOrder missing = t;
  missing.partitions[3].clear();
  EXPECT_THROW(decode_order(missing), std::runtime_error);
  TemporalOrder beyond = t;
  beyond.partitions[1][0].last = 1000;
  EXPECT_THROW(decode_order(beyond), std::runtime_error);
  // Values whose sums wrap past 2^64 (found by fuzz_efg): refused, never used as indices.
  const uint64_t max = UINT64_MAX;
  for (const Partition& wraps : {Partition{3, max, max, 0, 1}, Partition{3, 1, max, max, 1}, Partition{3, 1, 1, 0, max},
                                 Partition{3, 2, max - 1, max - 2, 1}}) {
    TemporalOrder bad = t;
    bad.partitions[2] = {wraps};
    EXPECT_THROW(decode_order(bad), std::runtime_error) << wraps.first << " " << wraps.last << " " << wraps.stride;
  }
}

}  // namespace
