// Per-epoch figures split at the training loop (dl_summary) and the interval
// arithmetic of the critical_path pass, on hand-built inputs with exact values.
// The real-job tests are tests/python/test_epochs.py.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include <sstream>

#include "analysis/analyze.h"
#include "analysis/critical_path.h"

using namespace strata::analysis;

namespace {

constexpr int64_t kMs = 1000000;

TEST(CriticalPathSpans, OverlapOfSortedDisjointLists) {
  const std::vector<Span> segs = {{0, 10}, {10, 20}, {30, 40}};
  const std::vector<Span> list = {{5, 15}, {18, 35}, {39, 50}};
  std::vector<int64_t> out(segs.size(), 0);
  overlap_into(segs, list, out);
  EXPECT_EQ(out, (std::vector<int64_t>{5, 5 + 2, 5 + 1}));
}

TEST(CriticalPathSpans, OverlapWithNothing) {
  std::vector<int64_t> out(2, 0);
  overlap_into({{0, 10}, {20, 30}}, {}, out);
  overlap_into({{0, 10}, {20, 30}}, {{10, 20}, {30, 40}}, out);  // touching is not overlapping
  EXPECT_EQ(out, (std::vector<int64_t>{0, 0}));
}

TEST(CriticalPathSpans, UnionMergesOverlapsAndTouches) {
  std::vector<Span> v = {{20, 30}, {0, 5}, {5, 8}, {25, 40}, {50, 50}, {3, 4}};
  union_spans(v);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].ts, 0);
  EXPECT_EQ(v[0].end, 8);
  EXPECT_EQ(v[1].ts, 20);
  EXPECT_EQ(v[1].end, 40);
}

// Spans added in completion order (add_span) unite to the union of them
// all: here four threads each reading (1..1000 ns) and pausing (0..400 ns)
// in turn, their reads seen in order of their ends. A long read of one
// thread ends after shorter ones of the others that started later: it
// merges with them instead of adding one more span out of order.
TEST(CriticalPathSpans, AddedSpansKeepTheirUnionAndStaySmall) {
  std::mt19937_64 rng(11);
  std::vector<Span> all;
  int64_t clock[4] = {0, 0, 0, 0};
  for (int i = 0; i < 100000; ++i) {
    const size_t t = rng() % 4;
    const int64_t ts = clock[t] + static_cast<int64_t>(rng() % 400);
    const int64_t end = ts + 1 + static_cast<int64_t>(rng() % 1000);
    clock[t] = end;
    all.push_back({ts, end});
  }
  std::stable_sort(all.begin(), all.end(), [](const Span& a, const Span& b) { return a.end < b.end; });
  std::vector<Span> kept;
  bool coarse = false;
  for (const Span& s : all) add_span(kept, s.ts, s.end, coarse);
  EXPECT_FALSE(coarse);
  // In end order, what is kept is the union itself: sorted, disjoint, not
  // touching (38,259 spans for 2,651 without the merge).
  std::vector<Span> want = all;
  union_spans(want);
  ASSERT_EQ(kept.size(), want.size()) << "of " << all.size() << " spans";
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(kept[i].ts, want[i].ts);
    EXPECT_EQ(kept[i].end, want[i].end);
  }
}

// Three epochs whose loops are known (dataloader.epoch events), events
// outside them (validation, a final evaluation), start-up in the wait.
TEST(DlSummaryLoops, WallIsTheLoopAndOutsideIsApart) {
  Job job;
  job.sizes_known = true;
  job.first_ts = 0;
  job.last_ts = 4000 * kMs;  // the trace ends 1 s after the last loop
  for (int e = 0; e < 3; ++e) {
    TagAgg& in = job.by_epoch[std::to_string(e)];
    in.events = 20;
    in.first_ts = e * 1000 * kMs;
    in.last_ts = in.first_ts + 900 * kMs;
    in.loop_first = in.first_ts;
    in.loop_last = in.first_ts + 800 * kMs;
    in.loader_waits = 4;
    in.loader_wait_ns = 200 * kMs;
    in.loader_starts = 1;
    in.loader_start_ns = 100 * kMs;
    in.bytes_read = 4096;
    TagAgg& out = job.by_epoch_outside[std::to_string(e)];
    out.events = 5;
    out.loader_waits = 2;
    out.loader_wait_ns = 10 * kMs;
    out.io_ns = 3 * kMs;
    out.bytes_read = 1024;
  }
  DlSummary s = dl_summary(job);
  ASSERT_EQ(s.epochs.size(), 3u);
  for (int e = 0; e < 3; ++e) {
    const DlSummary::Epoch& x = s.epochs[e];
    EXPECT_TRUE(x.loop_known);
    EXPECT_EQ(x.wall_ns, 800 * kMs);
    EXPECT_EQ(x.next_ns, 200 * kMs);
    EXPECT_EQ(x.startup_ns, 100 * kMs);
    EXPECT_EQ(x.loader_wait_ns, 300 * kMs);
    EXPECT_EQ(x.batches, 4u);
    EXPECT_DOUBLE_EQ(x.waited(), 300.0 / 800.0);
    EXPECT_EQ(x.outside.batches, 2u);
    EXPECT_EQ(x.outside.bytes_read, 1024);
    // To the next loop's start; after the last one, to the end of the trace.
    EXPECT_EQ(x.outside.wall_ns, e < 2 ? 200 * kMs : 1200 * kMs);
  }
  // The same batches in every loop: all compared with the first.
  EXPECT_EQ(s.compared, (std::vector<std::string>{"1", "2"}));

  AnalyzeOptions o;
  o.input = "synthetic";
  std::ostringstream text;
  write_text(job, o, text);
  const std::string t = text.str();
  EXPECT_NE(t.find("  2            800 ms      300 ms   37.5%        4          -        0 s    4.00 KiB\n"),
            std::string::npos)
      << t;
  EXPECT_EQ(t.find("  between "), std::string::npos) << t;  // --all only
  EXPECT_NE(t.find("  after        1.20 s     10.0 ms                2          -    3.00 ms    1.00 KiB\n"),
            std::string::npos)
      << t;
  o.all = true;
  std::ostringstream all;
  write_text(job, o, all);
  EXPECT_NE(all.str().find("  between      400 ms     20.0 ms                4          -    6.00 ms    2.00 KiB\n"),
            std::string::npos)
      << all.str();
}

// Without dataloader.epoch events (a loop left with break, no Python layer)
// the wall time stays last end - first start and nothing is outside.
TEST(DlSummaryLoops, WithoutPassEventsTheTaggedSpanStays) {
  Job job;
  TagAgg& in = job.by_epoch["0"];
  in.events = 3;
  in.first_ts = 10 * kMs;
  in.last_ts = 110 * kMs;
  in.loop_first = 20 * kMs;  // a dataloader.next, but no pass event
  in.loader_waits = 1;
  in.loader_wait_ns = 60 * kMs;
  DlSummary s = dl_summary(job);
  ASSERT_EQ(s.epochs.size(), 1u);
  EXPECT_FALSE(s.epochs[0].loop_known);
  EXPECT_EQ(s.epochs[0].wall_ns, 100 * kMs);
  EXPECT_EQ(s.epochs[0].outside.wall_ns, 0);
  AnalyzeOptions o;
  o.input = "synthetic";
  std::ostringstream text;
  write_text(job, o, text);
  EXPECT_EQ(text.str().find("  after "), std::string::npos) << text.str();
}

TEST(DlSummaryLoops, IterAndEpochEventsAreClassified) {
  EXPECT_TRUE(classify("dataloader.iter", "dataloader").is_loader_start);
  EXPECT_TRUE(classify("dataloader.epoch", "dataloader").is_loader_pass);
  EXPECT_FALSE(classify("dataloader.iter", "dataloader").is_loader_wait);
  EXPECT_FALSE(classify("dataloader.next", "dataloader").is_loader_pass);
  EXPECT_FALSE(classify("dataloader.iter", "POSIX").is_loader_start);
  EXPECT_TRUE(classify("dataloader.stop", "dataloader").is_loader_stop);
  EXPECT_FALSE(classify("dataloader.stop", "dataloader").is_loader_wait);
}

}  // namespace

// The loop a DataLoader worker feeds (critical_path.h, owner_loop): its
// nearest ancestor that is a loop, else the only loop of its rank, else the
// only loop of the job.
TEST(CriticalPath, WorkerFeedsItsOwnLoop) {
  std::vector<ProcessMeta> m(8);
  auto set = [&](size_t i, int64_t pid, int64_t ppid, int64_t rank) { m[i].pid = pid, m[i].ppid = ppid, m[i].rank = rank; };
  set(0, 10, 1, 0);   // rank 0's loop
  set(1, 20, 1, 1);   // rank 1's loop
  set(2, 11, 10, 0);  // a forked worker of rank 0
  set(3, 30, 10, 0);  // rank 0's forkserver
  set(4, 31, 30, 0);  // a worker it started
  set(5, 41, 99, 1);  // a worker of rank 1 whose parent is not in the trace
  set(6, 51, 99, -1);  // neither: no known ancestor, no rank
  set(7, 21, 20, 1);  // a forked worker of rank 1
  ProcessTree tree;
  for (auto& p : m) tree[p.pid] = &p;
  const std::map<int64_t, int64_t> loops = {{10, 0}, {20, 1}};
  EXPECT_EQ(owner_loop(11, tree, loops), 10);
  EXPECT_EQ(owner_loop(31, tree, loops), 10);
  EXPECT_EQ(owner_loop(21, tree, loops), 20);
  EXPECT_EQ(owner_loop(41, tree, loops), 20);
  EXPECT_EQ(owner_loop(51, tree, loops), -1);
  // With one loop every worker is its own.
  EXPECT_EQ(owner_loop(51, tree, {{10, 0}}), 10);
  // Two loops of one rank (no ancestor known): undecided.
  EXPECT_EQ(owner_loop(41, tree, {{10, 1}, {20, 1}}), -1);
}
