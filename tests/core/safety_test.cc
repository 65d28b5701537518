// The traced program never notices strata: the same program run with and
// without `strata run` prints the same, writes byte-identical files and ends
// the same way, whatever it does to its descriptors, signals, limits and
// credentials; and what it did is in the trace.
#include <gtest/gtest.h>
#include <algorithm>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

using namespace core_test;

namespace {

const std::string kHostile = HOSTILE_BIN;
// A flush every 20 ms: the writer writes while the program closes, dups and
// reopens descriptors.
const std::vector<std::string> kFastFlush = {"--flush-interval", "20"};

struct Outcome {
  RunResult run;
  std::string file;  // the program's output file
};

// Runs `hostile MODE OUT` plain and under strata; OUT is a fresh file per run.
struct Compared {
  Outcome plain, traced;
  std::string trace;
};

Compared run_both(const TempDir& tmp, const std::string& mode) {
  Compared c;
  c.trace = tmp.sub("trace-" + mode);
  std::string out0 = tmp.sub(mode + "-plain.out"), out1 = tmp.sub(mode + "-traced.out");
  c.plain.run = run({kHostile, mode, out0});
  c.traced.run = strata_run(c.trace, {kHostile, mode, out1}, kFastFlush);
  c.plain.file = fs::exists(out0) ? read_text(out0) : "";
  c.traced.file = fs::exists(out1) ? read_text(out1) : "";
  return c;
}

void expect_same(const Compared& c) {
  EXPECT_EQ(c.plain.run.code, c.traced.run.code) << c.traced.run.err;
  EXPECT_EQ(c.plain.run.out, c.traced.run.out);
  EXPECT_EQ(c.plain.file, c.traced.file);
}


class DescriptorSafety : public ::testing::TestWithParam<std::string> {};

// close loops, close_range, closefrom, raw close system calls and dup2/dup3
// onto every low number: the program's file holds exactly what it wrote, the
// first open returns 3 as without strata, and the trace holds the write.
TEST_P(DescriptorSafety, ProgramFilesAndTraceIntact) {
  TempDir tmp;
  Compared c = run_both(tmp, GetParam());
  ASSERT_EQ(c.plain.run.code, 0) << c.plain.run.err;
  expect_same(c);
  EXPECT_NE(c.traced.file.find("\n"), std::string::npos);
  EXPECT_EQ(c.traced.file.find("STBK"), std::string::npos);
  auto events = cat_trace(c.trace);
  Info info = info_trace(c.trace);
  EXPECT_EQ(info.dropped, 0);
  // 400 open/read/close rounds of busy_io before and after the write, at least.
  EXPECT_GE(count_if(events, [](const Event& e) { return e.name == "open" && e.path == "/etc/hostname"; }), 400);
  const std::string out = GetParam() + "-traced.out";
  auto writes = select(events, [&](const Event& e) { return e.name == "write" && e.path.ends_with(out); });
  ASSERT_EQ(writes.size(), 1u);
  EXPECT_EQ(writes[0].ret, static_cast<int64_t>(c.traced.file.size()));
  EXPECT_EQ(writes[0].offset, 0);
}

INSTANTIATE_TEST_SUITE_P(Modes, DescriptorSafety, ::testing::Values("closeall", "rawclose", "dup2onto"));

// A crash (abort, a null store, a write to a closed pipe, SIGSEGV sent with
// kill) or a signal whose default action ends the process (SIGUSR1, which
// `strata run` forwards, and an alarm): the program dies of the same signal as without strata, and what it
// did before is in a complete trace, the signal recorded.
class CrashSafety : public ::testing::TestWithParam<std::pair<std::string, int>> {};

TEST_P(CrashSafety, EventsBeforeTheCrashAreInTheTrace) {
  const auto& [how, sig] = GetParam();
  TempDir tmp;
  Compared c = run_both(tmp, "crash-" + how);
  EXPECT_EQ(c.plain.run.signal, sig) << c.plain.run.err;
  expect_same(c);
  EXPECT_EQ(c.traced.run.code, 128 + sig);  // strata run's status for a command killed by sig
  EXPECT_EQ(c.traced.file.size(), 1000u);
  auto events = cat_trace(c.trace);
  const std::string out = "crash-" + how + "-traced.out";
  EXPECT_EQ(count_if(events, [&](const Event& e) { return e.name == "write" && e.path.ends_with(out) && e.ret == 5; }),
            200);
  // SIGPIPE comes inside the traced write that broke the pipe: a signal
  // arriving while its thread is inside a traced call is not recorded.
  EXPECT_EQ(count_if(events, [&](const Event& e) { return e.name == "signal" && e.ret == sig; }),
            sig == SIGPIPE ? 0 : 1);
  Info info = info_trace(c.trace);
  EXPECT_EQ(info.dropped, 0);
  RunResult text = run({kStrata, "info", c.trace});
  EXPECT_EQ(text.out.find("incomplete"), std::string::npos) << text.out;
}

INSTANTIATE_TEST_SUITE_P(Crashes, CrashSafety,
                         ::testing::Values(std::pair<std::string, int>{"abort", SIGABRT},
                                           std::pair<std::string, int>{"segv", SIGSEGV},
                                           std::pair<std::string, int>{"pipe", SIGPIPE},
                                           std::pair<std::string, int>{"kill-segv", SIGSEGV},
                                           std::pair<std::string, int>{"queued-segv", SIGSEGV},
                                           std::pair<std::string, int>{"usr1", SIGUSR1},
                                           std::pair<std::string, int>{"alarm", SIGALRM}),
                         [](const auto& info) {
                           std::string n = info.param.first;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

// fork() from a signal handler that interrupted an open inside the runtime
// (interning its path): the fork handler used to wait for the lock its own
// thread held, at 100% CPU, for ever.
TEST(Safety, ForkInASignalHandlerDuringAnOpen) {
  TempDir tmp;
  Compared c;
  c.trace = tmp.sub("trace-sigfork");
  c.plain.run = run({kHostile, "sigfork", tmp.path()}, 60);
  c.traced.run = strata_run(c.trace, {kHostile, "sigfork", tmp.path()}, {}, 60);
  ASSERT_EQ(c.plain.run.code, 0) << c.plain.run.err;
  EXPECT_FALSE(c.traced.run.timed_out);
  expect_same(c);
  EXPECT_EQ(c.traced.run.out, "forks in the handler >= 200: 1, opened 0\n");
}

// A library of the program defines `is_null`, a name the runtime also uses
// inside itself: the program's calls reach its own function under strata too
// (they reached the runtime's, exported by mistake, and printed garbage).
TEST(Safety, ProgramsOwnFunctionsKeepTheirNames) {
  TempDir tmp;
  RunResult plain = run({OWN_NAMES_BIN});
  RunResult traced = strata_run(tmp.sub("trace"), {OWN_NAMES_BIN});
  ASSERT_EQ(plain.code, 0) << plain.err;
  EXPECT_EQ(plain.out, "is_null(NULL) = 42, is_null(&x) = 0\n");
  EXPECT_EQ(traced.code, 0) << traced.err;
  EXPECT_EQ(traced.out, plain.out);
}

TEST(Safety, DescriptorLimitIsTheProgramsAlone) {
  TempDir tmp;
  Compared c = run_both(tmp, "fdlimit");
  expect_same(c);
  int opened = -1, err = -1;
  ASSERT_EQ(std::sscanf(c.traced.run.out.c_str(), "opened %d, then errno %d", &opened, &err), 2) << c.traced.run.out;
  EXPECT_EQ(err, EMFILE);
  EXPECT_GE(opened, 50);  // 64 less what the test runner left open
  auto events = cat_trace(c.trace);
  EXPECT_EQ(count_if(events, [](const Event& e) { return e.name == "open" && e.ret >= 0; }), opened);
  EXPECT_EQ(count_if(events, [](const Event& e) { return e.name == "open" && e.ret < 0 && e.err == EMFILE; }), 1);
}

TEST(Safety, SignalHandlerWithoutRestartGetsEintr) {
  TempDir tmp;
  Compared c = run_both(tmp, "eintr");
  expect_same(c);
  EXPECT_NE(c.traced.run.out.find("read returned -1 errno Interrupted system call handled 1"), std::string::npos)
      << c.traced.run.out;
}

TEST(Safety, ResetHandRunsTheHandlerOnce) {
  TempDir tmp;
  Compared c = run_both(tmp, "resethand");
  expect_same(c);
  EXPECT_EQ(c.traced.run.code, 128 + SIGTERM);
  EXPECT_EQ(c.traced.run.out, "handled 1\n");
}

// A handler strata run's command installs for a signal strata run forwards
// is called through strata's wrapper, which once copied the program's whole
// sigaction in the handler: another thread's sigaction could pair one call's
// handler with the other's flags. Flipping between a one-argument and an
// SA_SIGINFO handler under a storm of the signal, every call gets its own
// arguments, as without strata.
TEST(Safety, HandlersFlippedUnderASignalStormGetTheirOwnArguments) {
  TempDir tmp;
  Compared c = run_both(tmp, "flipsig");
  expect_same(c);
  EXPECT_EQ(c.traced.run.code, 0);
  EXPECT_EQ(c.traced.run.out, "wrong argument 0, handled yes\n");
}

TEST(Safety, SigactionReportsWhatTheProgramInstalled) {
  TempDir tmp;
  Compared c = run_both(tmp, "oldaction");
  expect_same(c);
  EXPECT_NE(c.traced.run.out.find("survived an ignored SIGINT"), std::string::npos) << c.traced.run.out;
}

// SIGINT ignored behind strata's sigaction (glibc's sigset, sysv_signal,
// bsd_signal and sigignore call its internal __sigaction): sigaction reports
// it ignored, and a save, replace and restore leaves it ignored.
class ForeignDisposition : public ::testing::TestWithParam<std::string> {};

TEST_P(ForeignDisposition, SaveAndRestoreKeepSignalIgnored) {
  TempDir tmp;
  Compared c = run_both(tmp, "ignored-" + GetParam());
  expect_same(c);
  const std::string& how = GetParam();
  EXPECT_EQ(c.traced.run.code, 0);
  EXPECT_EQ(c.traced.run.out, how + ": sigaction reports ignored\n" + how + ": replaced ignored\n" + how +
                                  ": survived SIGINT\n");
}

INSTANTIATE_TEST_SUITE_P(Calls, ForeignDisposition, ::testing::Values("sigset", "sysv", "bsd", "sigignore"));

// A vfork child shares the parent's memory, not its dispositions: what it
// installs is not what the parent's sigaction reports.
TEST(Safety, VforkChildDispositionsStayTheChilds) {
  TempDir tmp;
  Compared c = run_both(tmp, "vforksig");
  expect_same(c);
  EXPECT_EQ(c.traced.run.code, 128 + SIGINT);
  EXPECT_EQ(c.traced.run.out,
            "ignored, child set default: sigaction reports ignored\n"
            "ignored, child set default: replaced ignored\n"
            "ignored, child set default: survived SIGINT\n"
            "child saw default: 1\n"
            "default, child ignored: sigaction reports default\n");
  // The parent's SIGINT was still strata's flush handler when it was raised.
  auto events = cat_trace(c.trace);
  EXPECT_EQ(count_if(events, [](const Event& e) { return e.name == "signal" && e.ret == SIGINT; }), 1);
}

// An ignored SIGTERM is kept across exec: `sleep` must not die of it.
TEST(Safety, IgnoredSignalSurvivesExec) {
  TempDir tmp;
  Child child = start({kStrata, "run", "-q", "-o", tmp.sub("t"), "--", "/bin/sh", "-c",
                       "trap '' TERM; exec /bin/sleep 1.5"});
  // The sleep is the shell exec'd in place: its pid is the shell's, a child of strata.
  std::string children_file = "/proc/" + std::to_string(child.pid) + "/task/" + std::to_string(child.pid) + "/children";
  pid_t sleeper = 0;
  ASSERT_TRUE(wait_for([&] {
    std::string text = fs::exists(children_file) ? read_text(children_file) : "";
    sleeper = text.empty() ? 0 : std::stoi(text);
    if (sleeper <= 0) return false;
    std::string comm = read_text("/proc/" + std::to_string(sleeper) + "/comm");
    return comm == "sleep\n";
  }, 10));
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(kill(sleeper, SIGTERM), 0);
  RunResult r = finish(child, 30);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_GT(s, 0.5);  // sleep ran to its end (1.5 s after its start)
}

// RLIMIT_FSIZE below the trace's size: the program exits 7 as without strata
// instead of dying of SIGXFSZ raised by strata's own writes.
TEST(Safety, FileSizeLimitNeverKillsTheProgram) {
  TempDir tmp;
  Compared c = run_both(tmp, "fsize");
  expect_same(c);
  EXPECT_EQ(c.traced.run.code, 7);
  EXPECT_EQ(c.traced.file, std::string(1000, 'x'));
}

// O_APPEND, dup and fork share one offset: the trace records the real one.
TEST(Safety, SharedAndAppendOffsetsAreReal) {
  TempDir tmp;
  Compared c = run_both(tmp, "offsets");
  expect_same(c);
  ASSERT_EQ(c.traced.run.code, 0);
  auto events = cat_trace(c.trace);
  std::vector<std::pair<int64_t, int64_t>> writes;  // (offset, size)
  for (auto& e : events)
    if (e.name == "write" && e.path.ends_with("offsets-traced.out")) writes.emplace_back(e.offset, e.size);
  std::sort(writes.begin(), writes.end());
  std::vector<std::pair<int64_t, int64_t>> expected = {{0, 4}, {0, 500}, {4, 2}, {6, 1}, {7, 1}, {500, 7}, {507, 3}};
  EXPECT_EQ(writes, expected);
}

// Descriptors a process never saw opened (inherited across exec): a file is
// recorded at its real offset under its path, a socket is not recorded (nor
// counted as dropped: it is left out on purpose, like DataLoader workers'
// sockets), and both still work.
TEST(Safety, InheritedDescriptorsAreResolvedOrLeftAlone) {
  TempDir tmp;
  Compared c = run_both(tmp, "inherited");
  expect_same(c);
  EXPECT_EQ(c.traced.run.out, "child 0, socket gave 4 bytes: ping\n");
  EXPECT_EQ(c.traced.file, "head:abcping");
  auto events = cat_trace(c.trace);
  std::vector<Event> writes;
  for (auto& e : events)
    if (e.name == "write") writes.push_back(e);
  EXPECT_EQ(writes.size(), 3u);  // head: and ping (parent), abc (child, fd 7); not the socket's
  auto child = std::find_if(writes.begin(), writes.end(), [](const Event& e) { return e.fd == 7; });
  ASSERT_NE(child, writes.end());
  EXPECT_TRUE(child->path.ends_with("inherited-traced.out")) << child->path;
  EXPECT_EQ(child->offset, 5);
  EXPECT_EQ(child->size, 3);
  for (auto& e : events) EXPECT_EQ(e.path.find("socket:"), std::string::npos) << e.name;
  EXPECT_EQ(info_trace(c.trace).dropped, 0);
}

// shm_open opens its object inside glibc. Under the default exclusions its
// calls are left out (it is under /dev) with nothing dropped; with none, they
// are recorded under /dev/shm/NAME, the name the program gave, although it
// unlinked it first (/proc would name it "... (deleted)").
TEST(Safety, SharedMemoryObjectsAreNamedByShmOpen) {
  TempDir tmp;
  Compared c = run_both(tmp, "shm");
  expect_same(c);
  EXPECT_EQ(c.traced.run.out, "shm gave shared\n");
  EXPECT_EQ(c.traced.file, "shared");
  for (auto& e : cat_trace(c.trace)) EXPECT_FALSE(e.path.starts_with("/dev/")) << e.name << " " << e.path;
  EXPECT_EQ(info_trace(c.trace).dropped, 0);

  const std::string all = tmp.sub("trace-shm-all");
  RunResult r = strata_run(all, {kHostile, "shm", tmp.sub("shm-all.out")}, {"--exclude", "none"});
  ASSERT_EQ(r.code, 0) << r.err;
  std::vector<std::string> shm_calls;
  for (auto& e : cat_trace(all))
    if (e.path.starts_with("/dev/shm/")) {
      EXPECT_TRUE(e.path.starts_with("/dev/shm/strata-hostile-")) << e.path;
      EXPECT_EQ(e.path.find("deleted"), std::string::npos) << e.path;
      shm_calls.push_back(e.name);
    }
  std::sort(shm_calls.begin(), shm_calls.end());
  EXPECT_EQ(shm_calls, (std::vector<std::string>{"close", "ftruncate", "mmap", "munmap", "pwrite"}));
}

// A path longer than PATH_MAX cannot be recorded: its calls count as drops.
TEST(Safety, UnrecordablePathsCountAsDrops) {
  TempDir tmp;
  std::string dir = tmp.mkdir("deep");
  RunResult r = strata_run(tmp.sub("t"), {kHostile, "longpath", dir});
  ASSERT_EQ(r.code, 0) << r.err;
  Info info = info_trace(tmp.sub("t"));
  EXPECT_GE(info.dropped, 42);  // 21 opens, 20 reads, 1 write at least
  auto events = cat_trace(tmp.sub("t"));
  EXPECT_EQ(count_if(events, [](const Event& e) { return e.name == "open"; }), 0);
}

// setpriv keeps capabilities across setresuid only in its own thread
// (prctl/capset are per thread) and then calls setgroups, which glibc runs on
// every thread and aborts if they disagree.
// Capabilities dropped with the raw system call, then set*id: glibc applies
// those to every thread and aborts when one thread succeeds where another
// fails; the writer thread used to keep its capabilities and succeed.
TEST(Safety, RawCapsetThenSetuidFailsAsWithoutStrata) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to hold capabilities";
  TempDir tmp;
  Compared c = run_both(tmp, "rawcap");
  expect_same(c);
  EXPECT_EQ(c.traced.run.code, 0) << c.traced.run.err;
  EXPECT_EQ(c.traced.run.out, "raw capset 0\nsetgroups -1 Operation not permitted\nsetuid -1 Operation not permitted\n");
}

TEST(Safety, CredentialChangesKeepThreadsInAgreement) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to change credentials";
  if (!fs::exists("/usr/bin/setpriv")) GTEST_SKIP() << "no setpriv";
  TempDir tmp;
  RunResult plain = run({"/usr/bin/setpriv", "--reuid", "65534", "--clear-groups", "/bin/true"});
  ASSERT_EQ(plain.code, 0) << plain.err;
  chmod(tmp.path().c_str(), 0777);  // the exec'd /bin/true (uid 65534) writes its trace too
  RunResult traced = strata_run(tmp.sub("t"), {"/usr/bin/setpriv", "--reuid", "65534", "--clear-groups", "/bin/true"});
  EXPECT_EQ(traced.code, 0) << traced.err;
  EXPECT_EQ(traced.signal, 0);
}

// prctl/capset are repeated on the writer thread only for the process that
// owns it: a vfork child's changes stay the child's (the parent's setuid
// then succeeds), and a clone() child without CLONE_VM does not wait for a
// writer thread it does not have.
TEST(Safety, CredentialCallsOfChildrenStayTheChildrens) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root";
  TempDir tmp;
  Compared c = run_both(tmp, "vforkcaps");
  expect_same(c);
  EXPECT_EQ(c.traced.run.out, "setuid 0\nno_new_privs 0\n");
  Compared k = run_both(tmp, "clonekeep");
  expect_same(k);
  EXPECT_EQ(k.traced.run.out, "prctl in clone child under a second: 1\n");
}

// multiprocessing.Pool.terminate() SIGTERMs its workers: what they read
// before is in the trace, for each start method.
TEST(Safety, PoolTerminateKeepsWorkerEvents) {
  TempDir tmp;
  std::string data = tmp.mkdir("data");
  for (int i = 0; i < 40; ++i) write_text(data + "/f" + std::to_string(i), std::string(100 + i, 'a'));
  for (int round = 0; round < 2; ++round) {
    std::string trace = tmp.sub("t" + std::to_string(round));
    RunResult r = strata_run(trace, {PYTHON3, POOL_SCRIPT, data}, {}, 120);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out, "fork 4780\nforkserver 4780\nspawn 4780\n");
    auto events = cat_trace(trace);
    EXPECT_EQ(count_if(events, [&](const Event& e) { return e.name == "open64" && under(e.path, data); }), 120)
        << "round " << round;
  }
}

}  // namespace

namespace {

// A process that changed to a user who cannot write the trace directory
// loses its events, and `strata info` says which process and how many.
TEST(Safety, ProcessThatCannotCreateItsTraceIsReported) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to change user";
  if (!fs::exists("/usr/bin/setpriv")) GTEST_SKIP() << "no setpriv";
  TempDir tmp;
  chmod(tmp.path().c_str(), 0755);  // as a user's directory: others may enter, not write
  std::string trace = tmp.sub("t");
  RunResult r = strata_run(trace, {"/usr/bin/setpriv", "--reuid", "65534", "--clear-groups", "/bin/cat", "/etc/hostname"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, read_text("/etc/hostname"));
  RunResult info = run({kStrata, "info", trace});
  EXPECT_NE(info.out.find("(/usr/bin/cat) could not create its trace file (Permission denied)"), std::string::npos)
      << info.out;
  EXPECT_GE(info_trace(trace).dropped, 3);  // cat's open, read and close of /etc/hostname at least
}

}  // namespace
