// Context tags set through the C API reach the POSIX events of the same
// thread (and the application events), never another thread's.
#include "harness.h"

using namespace core_test;

namespace {

TEST(ContextTags, ReachPosixEventsOfTheSameThreadOnly) {
  TempDir tmp;
  std::string f = tmp.sub("f"), trace = tmp.sub("trace");
  write_text(f, std::string(8192, 't'));
  RunResult r = strata_run(trace, {TAGS_BIN, f});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "enabled=1\n");
  auto all = cat_trace(trace);
  auto preads = select(all, [&](const Event& e) { return e.name == "pread" && e.path == f; });
  ASSERT_EQ(preads.size(), 5u + 7 + 1 + 1 + 2 + 9);
  int64_t main_tid = preads.front().pid;
  auto main_reads = select(preads, [&](const Event& e) { return e.tid == main_tid; });
  auto other_reads = select(preads, [&](const Event& e) { return e.tid != main_tid; });
  ASSERT_EQ(main_reads.size(), 16u);
  ASSERT_EQ(other_reads.size(), 9u);
  using Tags = std::map<std::string, std::string>;
  const Tags e3 = {{"epoch", "3"}};
  const Tags e4 = {{"epoch", "4"}, {"stage", "\"train\""}};
  const Tags e5 = {{"epoch", "5"}};
  const Tags none;
  std::vector<Tags> want;
  for (int i = 0; i < 5; ++i) want.push_back(e3);
  for (int i = 0; i < 7; ++i) want.push_back(e4);
  want.push_back(e5);    // after save + epoch=5 + unset stage
  want.push_back(e4);    // after restore
  want.push_back(none);  // after clear
  want.push_back(none);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(main_reads[i].tags, want[i]) << "main pread #" << i;
  // The other thread read while the main thread had epoch=4,stage=train set.
  for (auto& e : other_reads) EXPECT_TRUE(e.tags.empty()) << describe(e);
  // Application events carry the tags in force too.
  auto step = select(all, [](const Event& e) { return e.name == "step"; });
  ASSERT_EQ(step.size(), 1u);
  EXPECT_EQ(step[0].cat, "app");
  EXPECT_EQ(step[0].tags, e3);
  auto cp = select(all, [](const Event& e) { return e.name == "checkpoint"; });
  ASSERT_EQ(cp.size(), 1u);
  EXPECT_EQ(cp[0].tags, e4);
  auto counter = select(all, [](const Event& e) { return e.name == "loss_x1000"; });
  ASSERT_EQ(counter.size(), 1u);
  EXPECT_TRUE(counter[0].tags.empty());
  // The region spans the five tagged preads.
  EXPECT_LE(step[0].ts, main_reads[0].ts);
  EXPECT_GE(step[0].ts + step[0].dur, main_reads[4].ts + main_reads[4].dur);
  // Events without tags print no "tags" key at all.
  RunResult raw = run({kStrata, "cat", trace});
  size_t lines = 0, with_tags = 0;
  for (size_t p = 0; (p = raw.out.find('\n', p)) != std::string::npos; ++p) ++lines;
  for (size_t p = 0; (p = raw.out.find("\"tags\":", p)) != std::string::npos; ++p) ++with_tags;
  EXPECT_EQ(with_tags, static_cast<size_t>(count_if(all, [](const Event& e) { return !e.tags.empty(); })));
  EXPECT_EQ(lines, all.size());
  EXPECT_EQ(with_tags, 5u + 7 + 1 + 1 + 2) << "16 tagged events: 14 preads, the region and the instant";
}

// Untraced, the API is a no-op and the program runs the same.
TEST(ContextTags, ApiIsNoOpWithoutStrataRun) {
  TempDir tmp;
  std::string f = tmp.sub("f");
  write_text(f, std::string(8192, 't'));
  RunResult r = run({TAGS_BIN, f}, 30, {"STRATA_DIR="});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "enabled=0\n");
}

}  // namespace

namespace {

// The runtime's per-thread memory of the names and paths it interned last
// (RecentIds in src/runtime/runtime.h) must never return a stale id: one
// buffer reused for other names, paths sharing their last bytes, and one
// relative path under two working directories are each recorded as what
// they are.
TEST(RecentIds, ReusedBuffersAndLookalikePathsAreRecordedAsTheyAre) {
  TempDir tmp;
  std::string dir = tmp.mkdir("d"), trace = tmp.sub("trace");
  RunResult r = strata_run(trace, {RECENT_IDS_BIN, dir});
  ASSERT_EQ(r.code, 0) << r.err;
  auto all = cat_trace(trace);
  auto ops = select(all, [](const Event& e) { return e.cat.starts_with("cat-"); });
  ASSERT_EQ(ops.size(), 24u);
  for (size_t i = 0; i < ops.size(); ++i) {
    EXPECT_EQ(ops[i].name, "op" + std::to_string(i % 6)) << i;
    EXPECT_EQ(ops[i].cat, i % 2 ? "cat-b" : "cat-a") << i;
  }
  auto loads = select(all, [](const Event& e) { return e.name == "load"; });
  std::vector<std::string> paths;
  for (auto& e : loads) paths.push_back(e.path);
  EXPECT_EQ(paths, (std::vector<std::string>{dir + "/a0/data/x.npy", dir + "/a1/data/x.npy", dir + "/a0/data/x.npy",
                                              dir + "/a0/data/y.npy", dir + "/a0/data/x.npy"}));
  auto opens = select(all, [](const Event& e) { return e.name == "open" && e.path.ends_with("/f"); });
  paths.clear();
  for (auto& e : opens) paths.push_back(e.path);
  EXPECT_EQ(paths, (std::vector<std::string>{dir + "/a0/f", dir + "/a1/f"}));
}

}  // namespace
