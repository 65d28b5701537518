// The per-thread event ring (src/runtime/runtime.h) between one producer and
// the consumer, run by real threads: every event arrives once, in order, and a
// full ring drops and counts instead of overwriting. Built into the TSan
// preset, this checks the ring's memory ordering.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "runtime/runtime.h"

namespace strata::runtime {
// The ring wakes the writer thread when half full; here the consumer polls.
std::atomic<int> wakes{0};
void writer_wake() { wakes.fetch_add(1, std::memory_order_relaxed); }
}  // namespace strata::runtime

namespace {

using strata::runtime::RawEvent;
using strata::runtime::ThreadState;

RawEvent event_at(int64_t offset) {
  RawEvent e;
  e.offset = offset;
  return e;
}

struct RingFixture {
  // A ring of `capacity` slots that starts using `start` of them.
  explicit RingFixture(uint64_t capacity, uint64_t start = 0) : slots(capacity) {
    t.ring.init(slots.data(), capacity, start ? start : capacity);
  }
  // Consumer side, as the writer drains: read up to head, then release tail.
  uint64_t drain(std::vector<int64_t>& seen) {
    uint64_t head = t.ring.head.load(std::memory_order_acquire);
    uint64_t tail = t.ring.tail.load(std::memory_order_relaxed);
    const uint64_t mask = t.ring.mask();
    for (; tail != head; ++tail) seen.push_back(t.ring.slots[tail & mask].offset);
    t.ring.tail.store(tail, std::memory_order_release);
    return head;
  }
  std::vector<RawEvent> slots;
  ThreadState t;
};

// Pushes kEvents events, retrying each dropped one, while this thread drains;
// every event must arrive once and in order.
void expect_every_event_in_order(RingFixture& f) {
  constexpr int64_t kEvents = 200000;
  std::atomic<bool> done{false};
  std::thread producer([&] {
    for (int64_t i = 0; i < kEvents;) {
      strata::runtime::push_event(&f.t, event_at(i));
      if (f.t.dropped.load(std::memory_order_relaxed) == 0) {
        ++i;
      } else {
        f.t.dropped.store(0, std::memory_order_relaxed);  // retry: this test wants no loss
        std::this_thread::yield();
      }
    }
    done.store(true, std::memory_order_release);
  });
  std::vector<int64_t> seen;
  seen.reserve(kEvents);
  while (!done.load(std::memory_order_acquire) || f.t.ring.head.load() != f.t.ring.tail.load()) f.drain(seen);
  producer.join();
  ASSERT_EQ(seen.size(), static_cast<size_t>(kEvents));
  for (int64_t i = 0; i < kEvents; ++i) ASSERT_EQ(seen[i], i) << "at " << i;
}

TEST(Ring, EveryEventArrivesOnceInOrderAcrossThreads) {
  RingFixture f(1024);
  expect_every_event_in_order(f);
}

// The producer grows the ring while the consumer drains it concurrently (the
// TSan preset checks the capacity's publication): no event is lost, doubled
// or reordered across the growth.
TEST(Ring, EveryEventArrivesInOrderAcrossAGrowth) {
  RingFixture f(4096, 64);
  expect_every_event_in_order(f);
  EXPECT_EQ(f.t.ring.mask(), 4095u) << "200,000 events through 64 slots outran the consumer at least once";
}

TEST(Ring, StartsSmallAndGrowsOnlyOnceEmptyAfterFillingUp) {
  RingFixture f(256, 64);
  std::vector<int64_t> seen;
  for (int i = 0; i < 48; ++i) strata::runtime::push_event(&f.t, event_at(i));
  EXPECT_EQ(f.t.ring.mask(), 63u) << "48 of 64 slots pending: the ring cannot grow yet";
  for (int i = 48; i < 60; ++i) strata::runtime::push_event(&f.t, event_at(i));
  EXPECT_EQ(f.t.ring.mask(), 63u);
  f.drain(seen);
  strata::runtime::push_event(&f.t, event_at(60));  // finds the ring empty after 3/4 full
  EXPECT_EQ(f.t.ring.mask(), 255u);
  for (int i = 61; i < 256; ++i) strata::runtime::push_event(&f.t, event_at(i));
  EXPECT_EQ(f.t.dropped.load(), 0u) << "196 events pending fit the grown ring";
  f.drain(seen);
  ASSERT_EQ(seen.size(), 256u);
  for (int i = 0; i < 256; ++i) ASSERT_EQ(seen[i], i);
}

TEST(Ring, ARingThatNeverFillsUpStaysSmall) {
  RingFixture f(256, 64);
  std::vector<int64_t> seen;
  for (int round = 0; round < 100; ++round) {
    for (int i = 0; i < 40; ++i) strata::runtime::push_event(&f.t, event_at(i));
    f.drain(seen);
  }
  EXPECT_EQ(f.t.ring.mask(), 63u);
  EXPECT_EQ(seen.size(), 4000u);
}

TEST(Ring, FullRingDropsAndCountsWithoutOverwriting) {
  RingFixture f(64);
  for (int i = 0; i < 100; ++i) strata::runtime::push_event(&f.t, event_at(i));
  EXPECT_EQ(f.t.dropped.load(), 36u);
  std::vector<int64_t> seen;
  f.drain(seen);
  ASSERT_EQ(seen.size(), 64u);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(seen[i], i);
  // After the consumer catches up the producer writes again.
  strata::runtime::push_event(&f.t, event_at(100));
  EXPECT_EQ(f.t.dropped.load(), 36u);
  EXPECT_EQ(f.t.ring.head.load(), 65u);
}

}  // namespace
