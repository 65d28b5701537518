// The runtime's string tables (src/runtime/intern.cc) in isolation, by real
// threads and a real signal: every string gets one id, whoever asks, and a
// signal handler's siglongjmp out of an insertion (which strata's longjmp
// interposers follow with leave_spin_lock) leaves the table whole: no string
// lost, none twice, every published entry its own. Built into the TSan preset
// too.
#include <gtest/gtest.h>
#include <setjmp.h>
#include <stdio.h>
#include <signal.h>
#include <sys/time.h>

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "runtime/intern.h"

namespace {

using strata::runtime::Interner;

std::string entry_of(const Interner& t, uint32_t id) {
  const Interner::Entry& e = t.get(id);
  return std::string(e.data, e.len);
}

TEST(Interner, EveryStringGetsOneIdWhoeverAsks) {
  static Interner table;
  constexpr int kThreads = 4, kStrings = 20000;
  std::vector<std::vector<uint32_t>> ids(kThreads, std::vector<uint32_t>(kStrings));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kStrings; ++i) {
        const int k = (i * 7 + t * 5003) % kStrings;  // each thread in its own order
        ids[t][k] = table.intern("/data/set/file-" + std::to_string(k));
      }
    });
  for (auto& th : threads) th.join();
  std::set<uint32_t> distinct;
  for (int k = 0; k < kStrings; ++k) {
    for (int t = 1; t < kThreads; ++t) ASSERT_EQ(ids[t][k], ids[0][k]) << k;
    ASSERT_NE(ids[0][k], 0u);
    EXPECT_EQ(entry_of(table, ids[0][k]), "/data/set/file-" + std::to_string(k));
    distinct.insert(ids[0][k]);
  }
  EXPECT_EQ(distinct.size(), static_cast<size_t>(kStrings));
  EXPECT_EQ(table.published(), static_cast<uint32_t>(kStrings));
}

sigjmp_buf g_jump;
volatile sig_atomic_t g_jumps = 0;
void jump_out(int) {
  g_jumps = g_jumps + 1;
  siglongjmp(g_jump, 1);
}

TEST(Interner, AJumpOutOfAnInsertionLeavesTheTableWhole) {
  static Interner table;
  constexpr int kStrings = 200000;
  struct sigaction sa {};
  sa.sa_handler = jump_out;
  sigemptyset(&sa.sa_mask);
  struct sigaction old {};
  ASSERT_EQ(sigaction(SIGALRM, &sa, &old), 0);
  const itimerval every_50us{{0, 50}, {0, 50}}, off{};
  // Nothing in the loop allocates: a jump out of malloc would hang the test.
  static char path[64];
  volatile int i = 0;
  if (sigsetjmp(g_jump, 1) != 0) {
    // What strata's siglongjmp does on the way out of an interposer.
    ASSERT_TRUE(strata::runtime::leave_spin_lock());
  } else {
    setitimer(ITIMER_REAL, &every_50us, nullptr);
  }
  while (i < kStrings) {
    const int n = snprintf(path, sizeof path, "/data/set/sample-%d", static_cast<int>(i));
    table.intern(std::string_view(path, static_cast<size_t>(n)));
    i = i + 1;
  }
  setitimer(ITIMER_REAL, &off, nullptr);
  sigaction(SIGALRM, &old, nullptr);
  EXPECT_GT(g_jumps, 100) << "the timer never interrupted the insertions";
  // Every string once, in the order interned (a retried insertion takes the
  // abandoned one's id), each entry its own string, found again by lookup.
  ASSERT_EQ(table.published(), static_cast<uint32_t>(kStrings));
  for (int k = 0; k < kStrings; ++k) {
    const std::string s = "/data/set/sample-" + std::to_string(k);
    ASSERT_EQ(entry_of(table, static_cast<uint32_t>(k + 1)), s) << "id " << k + 1;
    ASSERT_EQ(table.intern(s), static_cast<uint32_t>(k + 1)) << s;
  }
  EXPECT_EQ(table.published(), static_cast<uint32_t>(kStrings));
}

}  // namespace
