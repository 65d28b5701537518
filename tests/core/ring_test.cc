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
void wake_writer_if_behind(ThreadState*, uint64_t) { wakes.fetch_add(1, std::memory_order_relaxed); }
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
  explicit RingFixture(uint64_t capacity) : slots(capacity) {
    t.ring.capacity = capacity;
    t.ring.slots = slots.data();
    t.ring.quarter_mask = capacity / 4 - 1;
  }
  // Consumer side, as the writer drains: read up to head, then release tail.
  uint64_t drain(std::vector<int64_t>& seen) {
    uint64_t head = t.ring.head.load(std::memory_order_acquire);
    uint64_t tail = t.ring.tail.load(std::memory_order_relaxed);
    for (; tail != head; ++tail) seen.push_back(t.ring.slots[tail & (t.ring.capacity - 1)].offset);
    t.ring.tail.store(tail, std::memory_order_release);
    return head;
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

}  // namespace
