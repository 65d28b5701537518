// The per-thread event ring (src/runtime/runtime.h) between one producer and
// the consumer, run by real threads: every event arrives once, in order, and a
// full ring drops and counts instead of overwriting. Built into the TSan
// preset, this checks the ring's memory ordering.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <thread>
#include <vector>

#include "runtime/runtime.h"

namespace strata::runtime {
// The ring wakes the writer thread when half full; here the consumer polls.
std::atomic<int> wakes{0};
void wake_writer_if_behind(ThreadState* t, uint64_t head) {
  if (ring_wants_writer(t->ring, head)) wakes.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace strata::runtime

namespace {

using strata::runtime::RawEvent;
using strata::runtime::ThreadState;

RawEvent event_at(int64_t offset) {
  RawEvent e;
  e.offset = offset;
  return e;
}

// A ring of `slots` events, set up as the runtime does: it starts on its
// first kFirstRingBytes (16,384 events) and may grow to all of them.
struct RingFixture {
  explicit RingFixture(uint64_t slots) : slots(slots) {
    t.ring.slots = this->slots.data();
    t.ring.max_capacity = slots;
    strata::runtime::ring_restart(t.ring, 0);
  }
  // Consumer side, as the writer drains: read up to head, then release tail.
  uint64_t drain(std::vector<int64_t>& seen, uint64_t at_most = UINT64_MAX) {
    uint64_t head = t.ring.head.load(std::memory_order_acquire);
    uint64_t tail = t.ring.tail.load(std::memory_order_relaxed);
    if (head - tail > at_most) head = tail + at_most;
    const strata::runtime::RingView v = strata::runtime::ring_view(t.ring);
    for (; tail != head; ++tail) seen.push_back(v.at(tail).offset);
    t.ring.tail.store(tail, std::memory_order_release);
    return head;
  }
  void push(int64_t from, int64_t to) {
    for (int64_t i = from; i < to; ++i) strata::runtime::push_event(&t, event_at(i));
  }
  // A consumer that keeps up: events 0 .. each point pushed, then read.
  void keep_up_until(std::initializer_list<int64_t> points, std::vector<int64_t>& seen) {
    int64_t from = 0;
    for (int64_t to : points) {
      push(from, to);
      drain(seen);
      from = to;
    }
  }
  std::vector<RawEvent> slots;
  ThreadState t;
};

TEST(Ring, EveryEventArrivesOnceInOrderAcrossThreads) {
  constexpr int64_t kEvents = 200000;
  RingFixture f(1024);
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

constexpr uint64_t kFirst = strata::runtime::kFirstRingBytes / 64;  // 16,384 events
constexpr uint64_t kWhole = 4 * kFirst;                               // the default 4 MiB

void expect_in_order(const std::vector<int64_t>& seen, int64_t from, int64_t to) {
  ASSERT_EQ(seen.size(), static_cast<size_t>(to - from));
  for (int64_t i = from; i < to; ++i) ASSERT_EQ(seen[i - from], i) << "at " << i;
}

// A consumer that keeps up: the producer never leaves its first pages.
TEST(Ring, StaysOnItsFirstPagesWhileTheConsumerKeepsUp) {
  RingFixture f(kWhole);
  std::vector<int64_t> seen;
  for (int64_t i = 0; i < 200000; i += 4096) {
    f.push(i, i + 4096);
    f.drain(seen);
  }
  EXPECT_EQ(f.t.ring.capacity, kFirst);
  EXPECT_EQ(f.t.dropped.load(), 0u);
  expect_in_order(seen, 0, 200704);
}

// A consumer that does not run at all (a starved writer thread): the ring
// grows before it is full and holds as many events as before rings grew.
TEST(Ring, GrowsWhenTheConsumerFallsBehindAndKeepsEveryEvent) {
  RingFixture f(kWhole);
  f.push(0, kWhole);
  EXPECT_EQ(f.t.ring.capacity, kWhole);
  EXPECT_EQ(f.t.dropped.load(), 0u);
  f.push(kWhole, kWhole + 10);
  EXPECT_EQ(f.t.dropped.load(), 10u);
  std::vector<int64_t> seen;
  f.drain(seen);
  expect_in_order(seen, 0, kWhole);
}

// The consumer kept up, then stalls with events pending across the first
// pages' end: the ring grows at that end, where none of them wraps.
TEST(Ring, GrowsAtItsEndWhenTheConsumerStallsAfterKeepingUp) {
  RingFixture f(kWhole);
  std::vector<int64_t> seen;
  f.keep_up_until({10000, 20000}, seen);  // last read 3,616 events into the first pages' second lap
  f.push(20000, 80000);
  EXPECT_EQ(f.t.ring.capacity, kWhole);
  EXPECT_EQ(f.t.dropped.load(), 0u);
  f.drain(seen);
  expect_in_order(seen, 0, 80000);
}

// The consumer kept up, then stalls with the events pending wrapping around
// the first pages' end: the ring grows by copying the wrapped ones after the
// old end, and holds up to the event whose slot was the first copied one
// (a consumer may still read that slot by the old layout) without dropping.
TEST(Ring, StallWithEventsWrappingGrowsAndKeepsEveryEvent) {
  RingFixture f(kWhole);
  std::vector<int64_t> seen;
  f.keep_up_until({8000, 16000}, seen);
  // Grown at 12,672 pending (12,288 of them copied): events up to the one
  // before slot 0's next, 49,536 pending, go in.
  f.push(16000, static_cast<int64_t>(kWhole));
  EXPECT_EQ(f.t.ring.capacity, kWhole);
  EXPECT_EQ(f.t.dropped.load(), 0u);
  f.push(static_cast<int64_t>(kWhole), static_cast<int64_t>(kWhole) + 10);
  EXPECT_EQ(f.t.dropped.load(), 10u);  // the 10 events past it wait for the consumer
  f.drain(seen);
  expect_in_order(seen, 0, static_cast<int64_t>(kWhole));
  // Read: the whole ring is the producer's again.
  f.push(100000, 100000 + static_cast<int64_t>(kWhole));
  EXPECT_EQ(f.t.dropped.load(), 10u);
  std::vector<int64_t> more;
  f.drain(more);
  expect_in_order(more, 100000, 100000 + static_cast<int64_t>(kWhole));
}

// A consumer that placed the pending events by the layout before a growth
// that copied them reads them where they were, however far the producer has
// written since.
TEST(Ring, ConsumerWithTheLayoutBeforeACopyingGrowthReadsTheRightEvents) {
  RingFixture f(kWhole);
  std::vector<int64_t> seen;
  f.keep_up_until({8000, 16000}, seen);
  f.push(16000, 26000);  // 10,000 pending, 9,616 of them wrapped to the first slots
  ASSERT_EQ(f.t.ring.capacity, kFirst);
  const uint64_t head = f.t.ring.head.load(std::memory_order_acquire);
  const strata::runtime::RingView before = strata::runtime::ring_view(f.t.ring);
  f.push(26000, static_cast<int64_t>(kWhole));
  ASSERT_EQ(f.t.ring.capacity, kWhole);
  ASSERT_EQ(f.t.dropped.load(), 0u);
  for (uint64_t p = 16000; p < head; ++p) ASSERT_EQ(before.at(p).offset, static_cast<int64_t>(p)) << "at " << p;
  const strata::runtime::RingView after = strata::runtime::ring_view(f.t.ring);
  for (uint64_t p = 16000; p < kWhole; ++p) ASSERT_EQ(after.at(p).offset, static_cast<int64_t>(p)) << "at " << p;
}

// A producer of kEvents events that waits (yields) whenever the ring is
// full, and a consumer that drains as the writer does, pausing once it has
// read `pause_after` events, at a point of the first pages from where the
// events the producer writes meanwhile wrap around their end before the ring
// grows; returns what the consumer read, and how the ring grew.
struct Consumed {
  std::vector<int64_t> seen;
  uint64_t capacity;     // the ring's at the end
  bool copied_wrapped;   // its growth copied events wrapped around the first pages' end
};
Consumed produce_and_consume(int64_t start_after, int64_t pause_after) {
  constexpr int64_t kEvents = 300000;
  RingFixture f(kWhole);
  std::atomic<bool> done{false};
  std::atomic<bool> started{false};
  // Until the consumer pauses, the producer stays within 2,000 events of it.
  std::atomic<bool> paced{pause_after != INT64_MAX};
  std::thread producer([&] {
    for (int64_t i = 0; i < kEvents;) {
      if (i == start_after) started.store(true, std::memory_order_release);
      while (paced.load(std::memory_order_acquire) &&
             f.t.ring.head.load(std::memory_order_relaxed) - f.t.ring.tail.load(std::memory_order_acquire) > 2000)
        std::this_thread::yield();
      strata::runtime::push_event(&f.t, event_at(i));
      if (f.t.dropped.load(std::memory_order_relaxed) == 0) {
        ++i;
      } else {
        f.t.dropped.store(0, std::memory_order_relaxed);
        std::this_thread::yield();
      }
    }
    done.store(true, std::memory_order_release);
  });
  std::vector<int64_t> seen;
  seen.reserve(kEvents);
  while (!started.load(std::memory_order_acquire)) std::this_thread::yield();
  bool paused = false;
  while (!done.load(std::memory_order_acquire) || f.t.ring.head.load() != f.t.ring.tail.load()) {
    f.drain(seen, 1000);
    const int64_t in_first_pages = static_cast<int64_t>(seen.size() % kFirst);
    if (!paused && static_cast<int64_t>(seen.size()) >= pause_after && in_first_pages >= 6000 &&
        in_first_pages <= 12000) {
      paused = true;
      paced.store(false, std::memory_order_release);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  producer.join();
  // A growth that copied sets reuse_at to the head it met, past the old end.
  const bool copied = f.t.ring.reuse_at - f.t.ring.base > kFirst;
  return {std::move(seen), f.t.ring.capacity, copied};
}

// The ring grows while the consumer reads it: every event arrives once, in
// order (and the TSan preset checks the layout's publication).
TEST(Ring, GrowingUnderAConsumerKeepsEveryEventInOrder) {
  // Late, then reading as the producer writes: the ring grows near 3/4 of
  // its first pages, maybe while this thread reads them.
  const Consumed c = produce_and_consume(12000, INT64_MAX);
  EXPECT_EQ(c.capacity, kWhole);
  EXPECT_FALSE(c.copied_wrapped);
  expect_in_order(c.seen, 0, 300000);
}

// The consumer keeps up, then pauses while the producer runs on: the ring
// grows with events wrapped around its first pages' end, copied while the
// consumer sleeps, and read by the new layout as the producer goes on
// (TSan: the copy's publication).
TEST(Ring, GrowingWithWrappedEventsUnderAConsumerKeepsEveryEventInOrder) {
  const Consumed c = produce_and_consume(0, 20000);
  EXPECT_EQ(c.capacity, kWhole);
  EXPECT_TRUE(c.copied_wrapped);
  expect_in_order(c.seen, 0, 300000);
}

}  // namespace
