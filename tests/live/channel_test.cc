// The live channel's tool side (src/live/channel.*) against slot files with
// the real layout: reading, gone detection, bad files, mode and snapshot
// requests answered by a real second process through the shared futex.
#include <gtest/gtest.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "../common/process.h"
#include "live/channel.h"
#include "slot_files.h"

namespace {

namespace fs = std::filesystem;
using strata::format::LiveJob;
using strata::format::LiveMode;
using strata::format::LiveSlot;
using strata::format::LiveState;
using strata::live::Channel;
using strata::live::ChannelError;
using strata_test::SlotFile;

struct LiveDir {
  strata_test::TempDir tmp{"strata-live"};
  std::vector<std::string> warnings;
  LiveDir() { strata::live::create_channel(tmp.path(), static_cast<uint32_t>(LiveMode::kProfile)); }
  std::string path() const { return tmp.path(); }
  Channel channel() {
    return Channel(path(), [this](const std::string& w) { warnings.push_back(w); });
  }
};

TEST(LiveChannel, NoLiveDirectoryNamesTheTrace) {
  strata_test::TempDir tmp{"strata-live"};
  try {
    Channel c(tmp.path());
    FAIL() << "no error";
  } catch (const ChannelError& e) {
    EXPECT_NE(std::string(e.what()).find(tmp.path() + ": not a live trace"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("strata run --live"), std::string::npos) << e.what();
  }
}

TEST(LiveChannel, CreatesThePrivateDirectoryAndJobFile) {
  LiveDir d;
  EXPECT_EQ(fs::status(d.path() + "/.live").permissions() & fs::perms::all, fs::perms::owner_all);
  EXPECT_EQ(fs::file_size(d.path() + "/.live/job"), sizeof(LiveJob));
  EXPECT_EQ(fs::status(d.path() + "/.live/job").permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  auto c = d.channel();
  EXPECT_EQ(c.job().mode, "profile");
  EXPECT_EQ(c.job().revert_at_wall_ns, 0u);
}

TEST(LiveChannel, ReadsEveryFieldOfARunningSlot) {
  LiveDir d;
  SlotFile s(d.path(), getpid(), "python3 train.py --epochs 2");
  s->mode.store(static_cast<uint32_t>(LiveMode::kTrace));
  s->events.store(12345);
  s->events_per_s.store(678);
  s->read_bytes.store(4096);
  s->written_bytes.store(8192);
  s->read_bytes_per_s.store(100);
  s->written_bytes_per_s.store(200);
  s->dropped.store(3);
  s->open_files.store(2);
  std::strcpy(s->tags, R"({"epoch": 3, "stage": "train"})");
  std::strcpy(s->files, "/data/a.bin\n/data/b.bin\n");
  auto c = d.channel();
  auto procs = c.processes();
  ASSERT_EQ(procs.size(), 1u);
  const auto& p = procs[0];
  EXPECT_EQ(p.pid, getpid());
  EXPECT_EQ(p.ppid, getpid());
  EXPECT_EQ(p.command, "python3 train.py --epochs 2");
  EXPECT_EQ(p.state, "running");
  EXPECT_EQ(p.mode, "trace");
  EXPECT_EQ(p.events, 12345u);
  EXPECT_EQ(p.events_per_s, 678u);
  EXPECT_EQ(p.read_bytes, 4096u);
  EXPECT_EQ(p.written_bytes, 8192u);
  EXPECT_EQ(p.dropped, 3u);
  EXPECT_EQ(p.tags_json, R"({"epoch": 3, "stage": "train"})");
  EXPECT_EQ(p.open_files, (std::vector<std::string>{"/data/a.bin", "/data/b.bin"}));
  const std::string json = c.status_json();
  EXPECT_NE(json.find(R"("job": {"mode": "profile"})"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("command": "python3 train.py --epochs 2")"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("tags": {"epoch": 3, "stage": "train"})"), std::string::npos) << json;
  EXPECT_TRUE(d.warnings.empty());
}

TEST(LiveChannel, MalformedTagsBecomeAnEmptyObject) {
  LiveDir d;
  SlotFile s(d.path(), getpid(), "x");
  std::strcpy(s->tags, R"({"epoch": )");
  auto c = d.channel();
  EXPECT_EQ(c.processes().at(0).tags_json, "{}");
}

TEST(LiveChannel, ExitedReplacedAndGoneProcesses) {
  LiveDir d;
  pid_t dead = fork();
  if (dead == 0) _exit(0);
  waitpid(dead, nullptr, 0);
  SlotFile vanished(d.path(), dead, "vanished", strata_test::mono_now_ns() - 1);
  SlotFile silent(d.path(), getpid(), "silent", strata_test::mono_now_ns() - 2);
  silent->heartbeat_mono_ns.store(strata_test::mono_now_ns() - 6'000'000'000ull);
  SlotFile exited(d.path(), getpid(), "exited", strata_test::mono_now_ns() - 3);
  exited->state.store(static_cast<uint32_t>(LiveState::kExited));
  exited->exit_status.store(7);
  SlotFile replaced(d.path(), getpid(), "replaced", strata_test::mono_now_ns() - 4);
  replaced->state.store(static_cast<uint32_t>(LiveState::kReplaced));
  auto c = d.channel();
  std::map<std::string, std::string> state;
  for (auto& p : c.processes()) state[p.command] = p.state;
  EXPECT_EQ(state, (std::map<std::string, std::string>{
                       {"vanished", "gone"}, {"silent", "gone"}, {"exited", "exited"}, {"replaced", "replaced"}}));
  EXPECT_NE(c.status_json().find(R"("state": "exited", "mode": "profile", "exit_status": 7)"), std::string::npos);
}

TEST(LiveChannel, SkipsFilesThatAreNoSlotWithAWarningNamingThem) {
  LiveDir d;
  SlotFile good(d.path(), getpid(), "good");
  const std::string short_file = d.path() + "/.live/h-1-1.live";
  std::ofstream(short_file) << "short";
  const std::string wrong_magic = d.path() + "/.live/h-2-2.live";
  {
    std::string bytes(sizeof(LiveSlot), 'x');
    std::ofstream(wrong_magic) << bytes;
  }
  const std::string starting = d.path() + "/.live/h-3-3.live";
  std::ofstream{starting};  // created, not sized yet: no warning
  auto c = d.channel();
  auto procs = c.processes();
  ASSERT_EQ(procs.size(), 1u);
  EXPECT_EQ(procs[0].command, "good");
  c.processes();  // warned once only
  ASSERT_EQ(d.warnings.size(), 2u);
  std::sort(d.warnings.begin(), d.warnings.end());
  EXPECT_EQ(d.warnings[0], short_file + ": skipped, not a live slot (size 5 bytes, a slot has " +
                               std::to_string(sizeof(LiveSlot)) + ")");
  EXPECT_EQ(d.warnings[1], wrong_magic + ": skipped, not a live slot (wrong magic, version or slot size)");
}

TEST(LiveChannel, NewSlotsAppearOnTheNextRead) {
  LiveDir d;
  auto c = d.channel();
  EXPECT_TRUE(c.processes().empty());
  SlotFile s(d.path(), getpid(), "late");
  ASSERT_EQ(c.processes().size(), 1u);
}

TEST(LiveChannel, PerPidSwitchIsAcknowledgedAndCarriesTheRevert) {
  LiveDir d;
  // A second process answers the way the runtime's writer does, but only
  // when the shared futex wakes it (a wait that times out does not count): a
  // controller using the private futex op never gets an answer. Its slot is
  // created after the fork, so the process started before it.
  const std::string dir = d.path();
  pid_t child = -1;
  std::string slot_path;
  {
    int ready[2], mapped[2];
    ASSERT_EQ(pipe(ready), 0);
    ASSERT_EQ(pipe(mapped), 0);
    child = fork();
    if (child == 0) {
      char path[4096] = {};
      close(ready[1]);
      ssize_t n = read(ready[0], path, sizeof path - 1);
      if (n <= 0) _exit(2);
      int fd = open(path, O_RDWR);
      if (fd < 0) _exit(3);
      auto* s = static_cast<LiveSlot*>(mmap(nullptr, sizeof(LiveSlot), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
      uint32_t seen = s->wake.load();
      if (write(mapped[1], "m", 1) != 1) _exit(4);  // the parent requests only now
      for (int round = 0; round < 100; ++round) {
        timespec timeout{5, 0};
        long rc = syscall(SYS_futex, reinterpret_cast<uint32_t*>(&s->wake), FUTEX_WAIT, seen, &timeout, nullptr, 0);
        const bool timed_out = rc != 0 && errno == ETIMEDOUT;
        const uint32_t now = s->wake.load();
        if (now == seen) continue;
        seen = now;
        if (timed_out) continue;  // only a real wake-up counts
        if (s->request_seq.load() > s->applied_seq.load()) {
          s->mode.store(s->requested_mode.load());
          s->applied_seq.store(s->request_seq.load());
        }
        s->snapshot_done.store(s->snapshot_seq.load());
      }
      _exit(0);
    }
    close(ready[0]);
    SlotFile s(dir, child, "responder");
    slot_path = s.path();
    ASSERT_EQ(write(ready[1], slot_path.c_str(), slot_path.size()), static_cast<ssize_t>(slot_path.size()));
    close(ready[1]);
    close(mapped[1]);
    char byte = 0;
    ASSERT_EQ(read(mapped[0], &byte, 1), 1) << "the responder did not start";
    close(mapped[0]);
    SlotFile other(dir, getpid(), "bystander");

    auto c = d.channel();
    auto result = c.request_mode(static_cast<uint32_t>(LiveMode::kTrace), child, 2'000'000'000);
    EXPECT_EQ(result.switched, std::vector<int64_t>{child});
    EXPECT_TRUE(result.pending.empty());
    EXPECT_EQ(s->mode.load(), static_cast<uint32_t>(LiveMode::kTrace));
    EXPECT_EQ(s->revert_after_ns.load(), 2'000'000'000u);
    EXPECT_EQ(s->request_seq.load(), 1u);
    EXPECT_EQ(other->request_seq.load(), 0u) << "the bystander was not asked";
    EXPECT_EQ(c.job().mode, "profile") << "a per-pid switch leaves the job file alone";

    // The responder answers; the bystander (nobody behind it) does not.
    EXPECT_EQ(c.request_snapshot(500), std::vector<int64_t>{getpid()});
    EXPECT_EQ(s->snapshot_done.load(), 1u);
    EXPECT_EQ(other->snapshot_seq.load(), 1u);
  }
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
}

TEST(LiveChannel, JobWideSwitchWritesTheJobFileAndItsRevert) {
  LiveDir d;
  SlotFile a(d.path(), getpid(), "a");
  auto c = d.channel();
  // Nobody answers here: the requests stay in the slot, the pid is pending.
  auto result = c.request_mode(static_cast<uint32_t>(LiveMode::kOff), 0, 30'000'000'000, 50);
  EXPECT_TRUE(result.switched.empty());
  EXPECT_EQ(result.pending, std::vector<int64_t>{getpid()});
  EXPECT_EQ(a->requested_mode.load(), static_cast<uint32_t>(LiveMode::kOff));
  EXPECT_EQ(a->request_seq.load(), 1u);
  EXPECT_EQ(a->wake.load(), 1u);
  const auto job = c.job();
  EXPECT_EQ(job.mode, "off");
  EXPECT_EQ(job.revert_mode, "profile");
  const uint64_t now_wall = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
  EXPECT_GT(job.revert_at_wall_ns, now_wall + 29'000'000'000ull);
  EXPECT_LE(job.revert_at_wall_ns, now_wall + 30'000'000'000ull);
  c.request_mode(static_cast<uint32_t>(LiveMode::kTrace), 0, 0, 0);
  EXPECT_EQ(c.job().mode, "trace");
  EXPECT_EQ(c.job().revert_at_wall_ns, 0u);
  EXPECT_EQ(a->request_seq.load(), 2u);
  // A timed switch that has ended reads as the mode it went back to.
  c.request_mode(static_cast<uint32_t>(LiveMode::kSmart), 0, 1, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_EQ(c.job().mode, "trace");
  EXPECT_EQ(c.job().revert_at_wall_ns, 0u);
}

TEST(LiveChannel, SwitchOfAnUnknownPidIsAnError) {
  LiveDir d;
  SlotFile a(d.path(), getpid(), "a");
  auto c = d.channel();
  EXPECT_THROW(c.request_mode(static_cast<uint32_t>(LiveMode::kTrace), 999999999, 0), ChannelError);
  EXPECT_EQ(a->request_seq.load(), 0u);
}

TEST(LiveChannel, SnapshotWaitIsBounded) {
  LiveDir d;
  SlotFile a(d.path(), getpid(), "silent");
  auto c = d.channel();
  EXPECT_EQ(c.request_snapshot(100), std::vector<int64_t>{getpid()});
  EXPECT_EQ(a->snapshot_seq.load(), 1u);
}

TEST(LiveChannel, Durations) {
  using strata::live::parse_duration_ns;
  EXPECT_EQ(parse_duration_ns("30s"), 30'000'000'000);
  EXPECT_EQ(parse_duration_ns("30"), 30'000'000'000);
  EXPECT_EQ(parse_duration_ns("500ms"), 500'000'000);
  EXPECT_EQ(parse_duration_ns("2m"), 120'000'000'000);
  EXPECT_EQ(parse_duration_ns("1.5s"), 1'500'000'000);
  EXPECT_EQ(parse_duration_ns("1h"), 3'600'000'000'000);
  EXPECT_EQ(parse_duration_ns("-1s"), -1);
  EXPECT_EQ(parse_duration_ns("3 weeks"), -1);
  EXPECT_EQ(parse_duration_ns(""), -1);
}

}  // namespace
