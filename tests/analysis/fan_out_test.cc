// FanOut: with one thread or several, every pass state sees the same calls
// in the same order (the report cannot depend on -j); with several, the
// the first pass really runs on another thread; an exception thrown
// by a pass on a helper thread reaches the caller.
#include "analysis/fan_out.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace strata::analysis {
namespace {

class RecordingState : public PassState {
 public:
  explicit RecordingState(int64_t throw_at_ts = -1) : throw_at_ts_(throw_at_ts) {}
  void begin(const std::string& unit, const Tables*, bool) override { log.push_back("begin " + unit); }
  void process(const ProcessMeta& m) override { log.push_back("process " + std::to_string(m.pid)); }
  void event(const IoEvent& e) override {
    if (e.ts == throw_at_ts_) throw std::runtime_error("pass failed at " + std::to_string(e.ts));
    log.push_back("event " + std::to_string(e.ts) + " " + std::to_string(e.offset));
  }
  void events(std::span<const IoEvent> batch) override {
    threads.push_back(std::this_thread::get_id());
    for (const IoEvent& e : batch) event(e);
  }
  void warning(const std::string& w) override { log.push_back("warning " + w); }
  void end() override { log.push_back("end"); }
  void merge(PassState&) override {}
  std::string save() const override { return {}; }
  void load(std::string_view) override {}

  std::vector<std::string> log;
  std::vector<std::thread::id> threads;

 private:
  int64_t throw_at_ts_;
};

std::vector<IoEvent> numbered(int64_t first, size_t n) {
  std::vector<IoEvent> v(n);
  for (size_t i = 0; i < n; ++i) {
    v[i].ts = first + static_cast<int64_t>(i);
    v[i].offset = static_cast<int64_t>(i * 7);
  }
  return v;
}

// A unit's stream in batches of uneven sizes, with calls between them.
void feed(UnitConsumer& c) {
  c.begin("unit", nullptr, true);
  ProcessMeta meta;
  meta.pid = 42;
  c.process(meta);
  int64_t ts = 0;
  for (size_t size : {1u, 7u, 256u, 5000u, 4096u, 3u, 9000u}) {
    const std::vector<IoEvent> b = numbered(ts, size);
    c.events(b);
    ts += static_cast<int64_t>(size);
    if (size == 256) c.warning("between batches");
  }
  IoEvent one;
  one.ts = ts;
  c.event(one);
  c.end();
}

TEST(FanOut, EveryPassSeesTheSameCallsWhateverTheThreads) {
  std::vector<std::string> expected;
  {
    RecordingState alone;
    feed(alone);
    expected = alone.log;
  }
  ASSERT_EQ(expected.size(), 2u + 18363u + 1u + 1u + 1u);
  for (unsigned threads : {1u, 2u, 3u, 8u}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    std::vector<RecordingState> states(4);
    std::vector<PassState*> to;
    for (auto& s : states) to.push_back(&s);
    FanOut f(to, threads);
    EXPECT_EQ(f.parallel(), threads >= 2);
    feed(f);
    for (auto& s : states) EXPECT_EQ(s.log, expected);
  }
}

// The first pass (io, the costliest) runs on a helper of its own, the
// others on the calling thread, which also runs the source.
TEST(FanOut, TheFirstPassRunsOnAThreadOfItsOwn) {
  std::vector<RecordingState> states(3);
  FanOut f({&states[0], &states[1], &states[2]}, 2);
  feed(f);
  const auto caller = std::this_thread::get_id();
  for (auto& s : states) ASSERT_FALSE(s.threads.empty());
  for (auto id : states[0].threads) EXPECT_NE(id, caller);
  for (auto id : states[1].threads) EXPECT_EQ(id, caller);
  for (auto id : states[2].threads) EXPECT_EQ(id, caller);
}

// Thrown by the helper's pass (first) or by the caller's (second): the
// caller gets it, and nothing hangs.
TEST(FanOut, AnExceptionOfAPassOnEitherThreadReachesTheCaller) {
  for (int failing_first : {1, 0}) {
    SCOPED_TRACE(failing_first ? "helper's pass" : "caller's pass");
    RecordingState ok, failing(5000);
    FanOut f(failing_first ? std::vector<PassState*>{&failing, &ok} : std::vector<PassState*>{&ok, &failing}, 2);
    try {
      feed(f);
      FAIL() << "no exception";
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()), "pass failed at 5000");
    }
  }
}

// sync_point returns only when the helper has every event handed so far.
TEST(FanOut, SyncPointWaitsForTheHelper) {
  RecordingState helper_side, caller_side;
  FanOut f({&helper_side, &caller_side}, 2);
  f.begin("unit", nullptr, true);
  const std::vector<IoEvent> b = numbered(0, 3 * 4096 + 5);
  f.events(b);
  f.sync_point();
  EXPECT_EQ(helper_side.log.size(), 1u + b.size());
  EXPECT_EQ(caller_side.log.size(), 1u + b.size());
  f.end();
}

}  // namespace
}  // namespace strata::analysis
