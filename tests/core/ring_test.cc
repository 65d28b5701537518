// The per-thread event ring (src/runtime/runtime.h) between one producer and
// the consumer, run by real threads: every event arrives once, in order, and a
// full ring drops and counts instead of overwriting. Built into the TSan
// preset, this checks the ring's memory ordering.
#include <gtest/gtest.h>

#include <atomic>
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
  uint64_t drain(std::vector<int64_t>& seen) {
    uint64_t head = t.ring.head.load(std::memory_order_acquire);
    uint64_t tail = t.ring.tail.load(std::memory_order_relaxed);
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
// the first pages' end: the ring cannot grow without moving them, so it
// drops (and counts) at 16,384 pending, overwrites nothing, and records again
// once the consumer has read.
TEST(Ring, StallWithEventsWrappingDropsAtTheFirstPagesAndOverwritesNothing) {
  RingFixture f(kWhole);
  std::vector<int64_t> seen;
  f.keep_up_until({8000, 16000}, seen);
  f.push(16000, 16000 + kFirst + 100);
  EXPECT_EQ(f.t.ring.capacity, kFirst);
  EXPECT_EQ(f.t.dropped.load(), 100u);
  f.drain(seen);
  expect_in_order(seen, 0, 16000 + kFirst);
  f.push(50000, 50001);
  EXPECT_EQ(f.t.dropped.load(), 100u);
  EXPECT_EQ(f.t.ring.head.load(), 16000 + kFirst + 1);
}

// The ring grows while the consumer reads it: every event arrives once, in
// order (and the TSan preset checks the layout's publication).
TEST(Ring, GrowingUnderAConsumerKeepsEveryEventInOrder) {
  constexpr int64_t kEvents = 300000;
  RingFixture f(kWhole);
  std::atomic<bool> done{false};
  std::atomic<bool> started{false};
  std::thread producer([&] {
    for (int64_t i = 0; i < kEvents;) {
      if (i == 12000) started.store(true, std::memory_order_release);
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
  // Late, then reading as the producer writes: the ring grows near 3/4 of
  // its first pages, maybe while this thread reads them.
  while (!started.load(std::memory_order_acquire)) std::this_thread::yield();
  while (!done.load(std::memory_order_acquire) || f.t.ring.head.load() != f.t.ring.tail.load()) f.drain(seen);
  producer.join();
  expect_in_order(seen, 0, kEvents);
}

}  // namespace
