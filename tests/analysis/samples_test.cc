// The access samples behind the HTML page's spatial and temporal plots
// (UnitAgg::next_sample_window): of each (process, file)'s reads and writes,
// between half of AggConfig::samples_per_file and all of it, whatever the
// number of accesses, spread evenly over them, in access order.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/aggregate.h"

namespace strata::analysis {
namespace {

// One process reading one file with `n` preads of 1 byte at offsets 0..n-1
// (in order), batch by batch as a source delivers them.
Job read_in_order(uint64_t n, size_t samples_per_file) {
  Tables tables;
  tables.funcs.resize(2);
  tables.funcs[1] = classify("pread", "POSIX");
  tables.str = [](uint32_t id) { return id == 1 ? std::string_view("/data/file.bin") : std::string_view(); };
  AggConfig cfg;
  cfg.samples_per_file = samples_per_file;
  UnitAgg agg(cfg);
  agg.begin("unit", &tables, true);
  ProcessMeta meta;
  meta.pid = 7;
  agg.process(meta);
  std::vector<IoEvent> batch;
  for (uint64_t i = 0; i < n; ++i) {
    IoEvent e;
    e.pid = 7;
    e.tid = 7;
    e.ts = static_cast<int64_t>(i) * 10;
    e.dur = 5;
    e.func = 1;
    e.path = 1;
    e.fd = 3;
    e.offset = static_cast<int64_t>(i);
    e.size = 1;
    e.ret = 1;
    e.has_ret = true;
    batch.push_back(e);
    if (batch.size() == 4096 || i + 1 == n) {
      agg.events(batch);
      batch.clear();
    }
  }
  agg.end();
  Job job;
  agg.merge_into(job);
  return job;
}

const std::vector<Point>& samples_of(const Job& job) {
  const FileAgg& f = job.files.at("/data/file.bin");
  const FileAccess* acc = f.procs()[0].pf.access.find();
  EXPECT_NE(acc, nullptr);
  return acc->samples;
}

TEST(AccessSamples, FewerAccessesThanSlotsAreAllKept) {
  const Job job = read_in_order(100, 256);
  const auto& s = samples_of(job);
  ASSERT_EQ(s.size(), 100u);
  for (size_t i = 0; i < s.size(); ++i) EXPECT_EQ(s[i].offset, static_cast<int64_t>(i));
}

TEST(AccessSamples, ManyAccessesGiveAnEvenSampleInAccessOrder) {
  constexpr uint64_t kAccesses = 1'000'000;
  constexpr size_t kSlots = 4096;
  const Job job = read_in_order(kAccesses, kSlots);
  const FileAgg& f = job.files.at("/data/file.bin");
  EXPECT_EQ(f.reads, kAccesses);
  const auto& s = samples_of(job);
  // 1 M accesses in windows of 256 (4096 doubled until 1 M / w < 4096):
  // one sample per whole window, and maybe one of the last, partial one.
  EXPECT_GE(s.size(), kAccesses / 256);
  EXPECT_LE(s.size(), kAccesses / 256 + 1);
  // Each sample is a real access (time and offset agree), in access order.
  for (size_t i = 0; i < s.size(); ++i) {
    EXPECT_EQ(s[i].ts, s[i].offset * 10);
    EXPECT_EQ(s[i].size, 1);
    EXPECT_EQ(s[i].pid, 7);
    EXPECT_FALSE(s[i].write);
    if (i > 0) {
      EXPECT_LT(s[i - 1].offset, s[i].offset);
    }
  }
  // Even over the whole run: each tenth of the accesses holds a tenth of the
  // samples, give or take the window a tenth's edge cuts (a sample that kept
  // only the first accesses, or favoured the last ones, fails this).
  std::array<int, 10> tenth{};
  for (const Point& p : s) ++tenth[static_cast<size_t>(p.offset * 10 / static_cast<int64_t>(kAccesses))];
  for (int c : tenth) {
    EXPECT_GE(c, 389);
    EXPECT_LE(c, 393);
  }
  // Random within its window: not always the same place in it (a fixed
  // stride would alias with a periodic access pattern).
  std::array<int, 256> place{};
  for (const Point& p : s) ++place[static_cast<size_t>(p.offset % 256)];
  EXPECT_LT(*std::max_element(place.begin(), place.end()), 60);
}

TEST(AccessSamples, AShortRunKeepsItsAccessesUntilTheRoomFills) {
  const Job job = read_in_order(300, 256);  // 256 kept, then windows of 2: 22 more
  const auto& s = samples_of(job);
  ASSERT_EQ(s.size(), 128u + 22u);
  for (size_t i = 1; i < s.size(); ++i) EXPECT_LT(s[i - 1].offset, s[i].offset);
  EXPECT_GE(s.back().offset, 296);
}

TEST(AccessSamples, OneSlotCountsAsTwo) {
  const Job job = read_in_order(1000, 1);
  const auto& s = samples_of(job);
  EXPECT_GE(s.size(), 1u);
  EXPECT_LE(s.size(), 2u);
}

TEST(AccessSamples, NoSlotsKeepNone) {
  const Job job = read_in_order(10'000, 0);
  const FileAgg& f = job.files.at("/data/file.bin");
  EXPECT_EQ(f.reads, 10'000u);
  const FileAccess* acc = f.procs()[0].pf.access.find();
  ASSERT_NE(acc, nullptr);
  EXPECT_TRUE(acc->samples.empty());
}

}  // namespace
}  // namespace strata::analysis
