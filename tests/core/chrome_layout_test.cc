// The Chrome export's layout pieces (src/convert/chrome_layout.h): which
// track a complete event goes on, which batch feeds which wait, and the
// names of processes. The export of a real PyTorch job is checked end to end
// by tests/python/test_chrome_export.py.
#include <gtest/gtest.h>

#include "convert/chrome_layout.h"

namespace strata::convert {
namespace {

TEST(ThreadTracks, ChildrenWrittenFirstNestUnderTheirParent) {
  ThreadTracks t;
  EXPECT_EQ(t.place(10, 20), 0);   // a read
  EXPECT_EQ(t.place(30, 40), 0);   // another
  EXPECT_EQ(t.place(5, 50), 0);    // the region around both, written when it ends
  EXPECT_EQ(t.place(60, 70), 0);   // the next, after it
  EXPECT_EQ(t.place(0, 100), 0);   // the outermost
  EXPECT_EQ(t.tracks_used(), 1);
}

TEST(ThreadTracks, AnEventCrossingAnEdgeGoesToAnExtraTrack) {
  ThreadTracks t;
  EXPECT_EQ(t.place(10, 30), 0);
  EXPECT_EQ(t.place(20, 40), 1);  // starts inside [10, 30], ends after it
  EXPECT_EQ(t.place(25, 45), 2);  // crosses both
  EXPECT_EQ(t.place(50, 60), 0);  // after all of them: back on the thread
  EXPECT_EQ(t.place(0, 100), 0);  // around [10, 30] and [50, 60]: fine on track 0
  EXPECT_EQ(t.tracks_used(), 3);
  EXPECT_EQ(track_tid(1234, 0), 1234);
  EXPECT_EQ(track_tid(1234, 2), 20001234);
}

TEST(ThreadTracks, AChildWrittenAfterItsParentStillNests) {
  ThreadTracks t;
  EXPECT_EQ(t.place(0, 100), 0);
  EXPECT_EQ(t.place(40, 99), 0);  // ended 1 ns earlier by another clock, written later
  EXPECT_EQ(t.tracks_used(), 1);
}

TEST(ThreadTracks, AnEventWrittenBeforeAnEarlierSiblingLeavesRoomForIt) {
  ThreadTracks t;
  EXPECT_EQ(t.place(100, 110), 0);  // a stat after the region's clock stopped, written first
  EXPECT_EQ(t.place(10, 90), 0);    // the region
  EXPECT_EQ(t.place(20, 30), 0);    // late child of the region
  EXPECT_EQ(t.place(105, 120), 1);  // crosses the stat
  EXPECT_EQ(t.place(0, 200), 0);    // around everything on track 0
  EXPECT_EQ(t.tracks_used(), 2);
}

TEST(BatchFlows, PairsEachBatchWithTheWaitOfItsLoopThatGotIt) {
  BatchFlows f;
  f.parent(200, 100);  // worker of the loop 100
  f.parent(201, 100);
  f.parent(300, 150);  // forkserver 150 under the loop 100
  f.parent(150, 100);
  f.parent(400, 999);  // another job's worker: no loop above it
  // loader 0, epoch 0: steps 0 and 1 from workers 200 and 201.
  f.batch(0, 0, 0, {200, 200, 10, 20});
  f.batch(0, 0, 1, {201, 201, 12, 25});
  f.next(0, 0, 0, {100, 100, 15, 21});
  f.next(0, 0, 1, {100, 100, 21, 26});
  // loader 1 run twice in epoch 0: the k-th batch goes to the k-th wait.
  f.batch(1, 0, 0, {300, 300, 100, 110});
  f.batch(1, 0, 0, {300, 300, 200, 210});
  f.next(1, 0, 0, {100, 100, 205, 211});
  f.next(1, 0, 0, {100, 100, 105, 111});
  f.batch(0, 0, 0, {400, 400, 10, 20});  // nobody waited for it
  f.next(0, 0, 2, {100, 100, 30, 40});     // a wait without a batch (num_workers=0)
  const auto flows = f.flows();
  ASSERT_EQ(flows.size(), 4u);
  auto at = [&](size_t i) { return std::make_pair(flows[i].from.start, flows[i].to.start); };
  EXPECT_EQ(at(0), std::make_pair(int64_t{10}, int64_t{15}));
  EXPECT_EQ(at(1), std::make_pair(int64_t{12}, int64_t{21}));
  EXPECT_EQ(at(2), std::make_pair(int64_t{100}, int64_t{105}));
  EXPECT_EQ(at(3), std::make_pair(int64_t{200}, int64_t{205}));
  EXPECT_EQ(flows[0].from.pid, 200);
}

TEST(ProcessLabel, NamesFromWhatStrataKnows) {
  ProcessFacts w;
  w.worker = 1, w.loader = 0, w.epoch_min = w.epoch_max = 2;
  EXPECT_EQ(process_label(w), "DataLoader worker 1 (loader 0, epoch 2)");
  w.epoch_min = 0, w.rank = 3;
  EXPECT_EQ(process_label(w), "DataLoader worker 1 (loader 0, epochs 0-2, rank 3)");
  ProcessFacts loop;
  loop.waits_for_batches = true, loop.rank = 0;
  EXPECT_EQ(process_label(loop), "training loop (rank 0)");
  ProcessFacts plain;
  plain.command = "/usr/bin/python3 /home/u/train.py --epochs 3";
  EXPECT_EQ(process_label(plain), "python3 train.py");
  plain.command = "/usr/bin/mpirun -np 2 ./app";
  EXPECT_EQ(process_label(plain), "mpirun");
}

}  // namespace
}  // namespace strata::convert
