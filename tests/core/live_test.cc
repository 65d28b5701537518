// The runtime side of `strata run --live` (docs/live.md): a real program
// (programs/live_job.c) runs with STRATA_LIVE=1, and the test steers it
// through its slot in <trace>/.live/ exactly as `strata ctl` does (a request
// in the mapped slot, then FUTEX_WAKE), then checks what each mode recorded
// in the trace and in the counters.
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "format/live.h"
#include "harness.h"

namespace core_test {
namespace {

namespace fmt = strata::format;
using fmt::LiveMode;

const std::string kJob = LIVE_JOB_BIN;
const std::string kLib = STRATA_LIB_PATH;

std::vector<std::string> live_env(const std::string& trace, const char* mode) {
  return {"STRATA_DIR=" + trace, "STRATA_LIVE=1", std::string("STRATA_MODE=") + mode, "LD_PRELOAD=" + kLib};
}

std::vector<std::string> slot_files(const std::string& trace) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(trace + "/.live", ec))
    if (e.path().extension() == ".live") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

// One process's slot, mapped as a controller maps it.
class Slot {
 public:
  explicit Slot(const std::string& path) {
    int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) throw std::runtime_error("cannot open " + path);
    void* p = mmap(nullptr, sizeof(fmt::LiveSlot), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) throw std::runtime_error("cannot map " + path);
    s_ = static_cast<fmt::LiveSlot*>(p);
  }
  ~Slot() { munmap(s_, sizeof(fmt::LiveSlot)); }
  Slot(const Slot&) = delete;
  Slot& operator=(const Slot&) = delete;
  fmt::LiveSlot* operator->() const { return s_; }

  // Asks for `mode` and waits (bounded) until the writer applied it.
  bool request(LiveMode mode, uint64_t for_ns = 0) {
    s_->requested_mode.store(static_cast<uint32_t>(mode));
    s_->revert_after_ns.store(for_ns);
    const uint64_t seq = s_->request_seq.fetch_add(1) + 1;
    wake();
    return wait_for([&] { return s_->applied_seq.load() == seq; }, 10);
  }
  bool snapshot() {
    const uint64_t seq = s_->snapshot_seq.fetch_add(1) + 1;
    wake();
    return wait_for([&] { return s_->snapshot_done.load() == seq; }, 10);
  }
  LiveMode mode() const { return static_cast<LiveMode>(s_->mode.load()); }
  fmt::LiveState state() const { return static_cast<fmt::LiveState>(s_->state.load()); }

 private:
  void wake() {
    s_->wake.fetch_add(1);
    syscall(SYS_futex, &s_->wake, FUTEX_WAKE, 1, nullptr, nullptr, 0);
  }
  fmt::LiveSlot* s_;
};

bool file_has_size(const std::string& path, uintmax_t size) {
  std::error_code ec;
  return fs::file_size(path, ec) == size && !ec;
}

std::vector<int64_t> mode_events(const std::vector<Event>& events) {
  std::vector<int64_t> modes;
  for (const Event& e : events)
    if (e.cat == "PROC" && e.name == "mode") modes.push_back(e.ret);
  return modes;
}

int64_t writes_to(const std::vector<Event>& events, const std::string& path) {
  return count_if(events, [&](const Event& e) { return e.name == "write" && e.path == path; });
}

TEST(Live, EachModeRecordsWhatItSaysAndTheProgramNoticesNothing) {
  TempDir t;
  const std::string data = t.mkdir("data"), trace = t.sub("trace");
  Child job = start({kJob, data, "phases"}, live_env(trace, "trace"));
  ASSERT_TRUE(wait_for([&] { return file_has_size(data + "/phase1.bin", 10000) && slot_files(trace).size() == 1; }));
  Slot slot(slot_files(trace)[0]);
  EXPECT_EQ(slot->pid, job.pid);
  EXPECT_NE(std::string(slot->command).find("live_job"), std::string::npos) << slot->command;
  ASSERT_TRUE(slot.request(LiveMode::kOff));
  EXPECT_EQ(slot.mode(), LiveMode::kOff);
  write_text(data + "/go1", "");
  ASSERT_TRUE(wait_for([&] { return file_has_size(data + "/phase2.bin", 10000); }));
  ASSERT_TRUE(slot.request(LiveMode::kProfile));
  write_text(data + "/go2", "");
  ASSERT_TRUE(wait_for([&] { return file_has_size(data + "/phase3.bin", 10000); }));
  write_text(data + "/go3", "");
  RunResult r = finish(job, 60);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "phase 1 done\nphase 2 done\nphase 3 done\n");
  EXPECT_EQ(slot.state(), fmt::LiveState::kExited);
  EXPECT_EQ(slot->written_bytes.load(), 20000u);  // phases 1 and 3: off recorded nothing
  EXPECT_EQ(slot->write_ops.load(), 200u);

  const std::vector<Event> events = cat_trace(trace);
  EXPECT_EQ(mode_events(events), (std::vector<int64_t>{2, 0, 1, 1}));  // start, two switches, the end
  EXPECT_EQ(writes_to(events, data + "/phase1.bin"), 100);  // trace: every event
  EXPECT_EQ(writes_to(events, data + "/phase2.bin"), 0);    // off
  EXPECT_EQ(writes_to(events, data + "/phase3.bin"), 0);    // profile: counters only
  auto c1 = darshan_counters(trace, data + "/phase1.bin");
  auto c3 = darshan_counters(trace, data + "/phase3.bin");
  EXPECT_EQ(c1["POSIX_WRITES"], 100);
  EXPECT_EQ(c1["POSIX_BYTES_WRITTEN"], 10000);
  EXPECT_EQ(c3["POSIX_WRITES"], 100);
  EXPECT_EQ(c3["POSIX_BYTES_WRITTEN"], 10000);
  EXPECT_TRUE(darshan_counters(trace, data + "/phase2.bin").empty());
  // The analysis knows which intervals were traced in full: trace, off, profile.
  RunResult an = run({kStrata, "analyze", trace, "--json"}, 60);
  ASSERT_EQ(an.code, 0) << an.err;
  simdjson::dom::parser parser;
  simdjson::dom::element modes = parser.parse(an.out)["modes"];
  std::vector<std::string> order;
  for (auto iv : modes["processes"].at(0)["intervals"].get_array()) {
    order.emplace_back(std::string_view(iv["mode"]));
    EXPECT_GT(double(iv["end_s"]), double(iv["start_s"])) << order.back();
  }
  EXPECT_EQ(order, (std::vector<std::string>{"trace", "off", "profile"}));
  EXPECT_GT(double(modes["traced_s"]), 0.0);

  // The same program untraced writes the same bytes and prints the same lines.
  const std::string plain = t.mkdir("plain");
  for (const char* go : {"go1", "go2", "go3"}) write_text(plain + "/" + go, "");
  RunResult u = run({kJob, plain, "phases"}, 60);
  ASSERT_EQ(u.code, 0);
  EXPECT_EQ(u.out, r.out);
  for (const char* f : {"phase1.bin", "phase2.bin", "phase3.bin"})
    EXPECT_EQ(read_text(plain + "/" + f), read_text(data + "/" + f)) << f;
}

TEST(Live, ATimedSwitchRevertsByItself) {
  TempDir t;
  const std::string data = t.mkdir("data"), trace = t.sub("trace");
  Child job = start({kJob, data, "phases"}, live_env(trace, "profile"));
  ASSERT_TRUE(wait_for([&] { return file_has_size(data + "/phase1.bin", 10000) && slot_files(trace).size() == 1; }));
  Slot slot(slot_files(trace)[0]);
  EXPECT_EQ(slot.mode(), LiveMode::kProfile);
  // 2 s: long enough that the mode read right after the request is still
  // the requested one on a loaded machine (300 ms was not, under load 8).
  ASSERT_TRUE(slot.request(LiveMode::kTrace, 2'000'000'000));
  EXPECT_EQ(slot.mode(), LiveMode::kTrace);
  EXPECT_NE(slot->revert_at_mono_ns.load(), 0u);
  EXPECT_TRUE(wait_for([&] { return slot.mode() == LiveMode::kProfile; }, 10));
  EXPECT_EQ(slot->revert_at_mono_ns.load(), 0u);
  for (const char* go : {"go1", "go2", "go3"}) write_text(data + "/" + go, "");
  RunResult r = finish(job, 60);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(mode_events(cat_trace(trace)), (std::vector<int64_t>{1, 2, 1, 1}));  // start, switch, revert, the end
  EXPECT_GE(slot->traced_ns.load(), 2'000'000'000u);
}

TEST(Live, ASnapshotPutsTheCountersSoFarInTheTraceWhileTheJobRuns) {
  TempDir t;
  const std::string data = t.mkdir("data"), trace = t.sub("trace");
  Child job = start({kJob, data, "phases"}, live_env(trace, "profile"));
  ASSERT_TRUE(wait_for([&] { return file_has_size(data + "/phase1.bin", 10000) && slot_files(trace).size() == 1; }));
  Slot slot(slot_files(trace)[0]);
  ASSERT_TRUE(slot.snapshot());
  EXPECT_EQ(slot.state(), fmt::LiveState::kRunning);
  auto c1 = darshan_counters(trace, data + "/phase1.bin");  // the file has no footer yet
  EXPECT_EQ(c1["POSIX_WRITES"], 100);
  EXPECT_EQ(c1["POSIX_BYTES_WRITTEN"], 10000);
  EXPECT_EQ(slot->written_bytes.load(), 10000u);
  for (const char* go : {"go1", "go2", "go3"}) write_text(data + "/" + go, "");
  RunResult r = finish(job, 60);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(darshan_counters(trace, data + "/phase3.bin")["POSIX_WRITES"], 100);
}

// Smart mode under --live (src/runtime/smart.h): every step and checkpoint is
// open, write, close of one directory, so the main loop is that cycle, one
// iteration per write. The graph stops growing at the 4th event (the edge
// back to open); the warm-up ends 64 events later, at event 68, the write of
// iteration 22: iterations 0..22 are in full and marks start at 23. Then
// STRATA_SMART_ITERATIONS=2 iterations in full, and the last one (the exit
// is a new edge).
TEST(Live, SmartModeKeepsTheWarmUpAndNIterationsAndCountsAll) {
  TempDir t;
  const std::string data = t.mkdir("data"), trace = t.sub("trace");
  std::vector<std::string> env = live_env(trace, "smart");
  env.push_back("STRATA_SMART_ITERATIONS=2");
  RunResult r = run({kJob, data, "steps", "20", "4"}, 60, env);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::vector<Event> events = cat_trace(trace);
  std::vector<int64_t> marks, full;
  for (const Event& e : events)
    if (e.cat == "PROC" && e.name == "iteration") {
      marks.push_back(e.offset);
      if (e.size == 1) full.push_back(e.offset);
    }
  ASSERT_EQ(marks.size(), 100u - 23);
  EXPECT_EQ(marks.front(), 23);
  EXPECT_EQ(marks.back(), 99);
  EXPECT_EQ(full, (std::vector<int64_t>{23, 24, 99}));
  // Iterations 0..24 are epochs 0..4 (4 steps and a checkpoint each); 99 is a checkpoint.
  EXPECT_EQ(writes_to(events, data + "/steps.bin"), 5 * 4);
  EXPECT_EQ(writes_to(events, data + "/ckpt.bin"), 5 + 1);
  auto steps = darshan_counters(trace, data + "/steps.bin");
  EXPECT_EQ(steps["POSIX_WRITES"], 80);  // the counters saw every step
  EXPECT_EQ(steps["POSIX_BYTES_WRITTEN"], 80 * 64);
  EXPECT_EQ(darshan_counters(trace, data + "/ckpt.bin")["POSIX_WRITES"], 20);
}

TEST(Live, ForkedChildAndExecutedImageReportInSlotsOfTheirOwn) {
  TempDir t;
  const std::string data = t.mkdir("data"), trace = t.sub("trace");
  RunResult r = run({kJob, data, "fork"}, 60, live_env(trace, "trace"));
  ASSERT_EQ(r.code, 0) << r.err;
  const std::vector<std::string> files = slot_files(trace);
  ASSERT_EQ(files.size(), 3u);
  int parents = 0, children = 0, successors = 0;
  std::vector<std::unique_ptr<Slot>> slots;
  for (const auto& f : files) slots.push_back(std::make_unique<Slot>(f));
  int32_t parent_pid = 0;
  for (auto& s : slots)
    if (std::string((*s)->command).find("fork") != std::string::npos && (*s)->ppid != 0 &&
        s->state() == fmt::LiveState::kReplaced)
      parent_pid = (*s)->pid;
  ASSERT_NE(parent_pid, 0);
  for (auto& s : slots) {
    const std::string cmd = (*s)->command;
    if ((*s)->pid == parent_pid && s->state() == fmt::LiveState::kReplaced) {
      ++parents;
    } else if ((*s)->ppid == parent_pid) {
      ++children;
      EXPECT_EQ(s->state(), fmt::LiveState::kExited);
      EXPECT_EQ((*s)->written_bytes.load(), 100u);
      EXPECT_EQ((*s)->write_ops.load(), 10u);
    } else if ((*s)->pid == parent_pid && cmd == "true") {
      ++successors;
      EXPECT_EQ(s->state(), fmt::LiveState::kExited);
    }
  }
  EXPECT_EQ(parents, 1);
  EXPECT_EQ(children, 1);
  EXPECT_EQ(successors, 1);
}

TEST(Live, NoChannelWithoutStrataLiveAndModeOffRecordsNothing) {
  TempDir t;
  const std::string data = t.mkdir("data"), trace = t.sub("trace");
  RunResult r = run({kJob, data, "steps", "2", "2"}, 60,
                    {"STRATA_DIR=" + trace, "STRATA_MODE=off", "LD_PRELOAD=" + kLib});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(fs::exists(trace + "/.live"));
  EXPECT_EQ(writes_to(cat_trace(trace), data + "/steps.bin"), 0);
  EXPECT_EQ(read_text(data + "/steps.bin").size(), 4u * 64);
}

}  // namespace
}  // namespace core_test
