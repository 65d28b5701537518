// libc calls at their edges (tests/core/programs/edges.c), found by a review
// of the runtime: each program runs plain and under strata and must print the
// same and end the same; the trace must hold what the program did.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include "harness.h"

namespace {

using namespace core_test;

const std::string kEdges = EDGES_BIN;

struct Compared {
  RunResult plain, traced;
  std::string plain_dir, traced_dir, trace;
};

Compared run_both(const TempDir& tmp, const std::string& mode, int timeout_s = 30) {
  Compared c;
  c.plain_dir = tmp.mkdir("plain");
  c.traced_dir = tmp.mkdir("traced");
  c.trace = tmp.sub("trace");
  c.plain = run({kEdges, mode, c.plain_dir}, timeout_s);
  c.traced = strata_run(c.trace, {kEdges, mode, c.traced_dir}, {"-q"}, timeout_s);
  EXPECT_FALSE(c.traced.timed_out) << mode << ": still running after the time limit";
  EXPECT_EQ(c.traced.code, c.plain.code) << c.traced.err;
  EXPECT_EQ(c.traced.out, c.plain.out);
  return c;
}

bool names(const Event& e, const Compared& c, const std::string& file) { return e.path == c.traced_dir + "/" + file; }

// Bad pointers and counts reach the kernel, which answers EFAULT or EINVAL:
// the runtime used to read them first and crash the program (SIGSEGV).
TEST(Edges, BadArgumentsGetTheKernelsErrors) {
  TempDir tmp;
  Compared c = run_both(tmp, "badargs");
  EXPECT_EQ(c.plain.out,
            "readv(NULL, 5): -1 Bad address\n"
            "writev(NULL, 5): -1 Bad address\n"
            "readv(iov, INT_MAX): -1 Invalid argument\n"
            "writev(iov, 1e8): -1 Invalid argument\n"
            "preadv(iov, 2^30): -1 Invalid argument\n"
            "pwritev(iov, -1): -1 Invalid argument\n"
            "sendfile(off 0x8): -1 Bad address\n"
            "copy_file_range(in_off 0x8): -1 Bad address\n"
            "copy_file_range(out_off 0x8): -1 Bad address\n"
            "closedir(NULL): -1 Invalid argument\n"
            "writev(3 + 4): 7 \n"
            "sendfile(from 2): 4 \n"
            "sendfile moved the offset to 6\n"
            "copy_file_range(1 -> 3): 2 \n"
            "copy_file_range moved the offsets to 3, 5\n");
  auto events = cat_trace(c.trace);
  auto writev = select(events, [&](const Event& e) { return e.name == "writev" && names(e, c, "f") && e.ret == 7; });
  ASSERT_EQ(writev.size(), 1u);
  EXPECT_EQ(writev[0].size, 7);
  EXPECT_EQ(writev[0].offset, 0);
  auto sendfile = select(events, [&](const Event& e) { return e.name == "sendfile" && e.ret == 4; });
  ASSERT_EQ(sendfile.size(), 1u);
  EXPECT_TRUE(names(sendfile[0], c, "in"));
  EXPECT_EQ(sendfile[0].offset, 2);  // where the copy started, read after the call
  auto copy = select(events, [&](const Event& e) { return e.name == "copy_file_range" && e.ret == 2; });
  ASSERT_EQ(copy.size(), 1u);
  EXPECT_EQ(copy[0].offset, 1);
  auto copy_out = select(events, [&](const Event& e) { return e.name == "copy_file_range.out"; });
  ASSERT_EQ(copy_out.size(), 1u);
  EXPECT_TRUE(names(copy_out[0], c, "out"));
  EXPECT_EQ(copy_out[0].offset, 3);
}

// A bad path pointer reaches the kernel, which answers EFAULT: strata read
// the path first (stat, rename), or after the failed call (open, fopen), and
// the program died of SIGSEGV on its first call.
TEST(Edges, BadPathPointersGetTheKernelsError) {
  TempDir tmp;
  Compared c = run_both(tmp, "badpaths");
  EXPECT_EQ(c.plain.out,
            "open(bad): -1 Bad address\n"
            "openat(bad): -1 Bad address\n"
            "creat(bad): -1 Bad address\n"
            "stat(bad): -1 Bad address\n"
            "access(bad): -1 Bad address\n"
            "mkdir(bad): -1 Bad address\n"
            "unlink(bad): -1 Bad address\n"
            "rename(bad, ok): -1 Bad address\n"
            "truncate(bad): -1 Bad address\n"
            "fopen(bad): -1 Bad address\n"
            "execve(bad): -1 Bad address\n"
            "execv(bad): -1 Bad address\n"
            "posix_spawn(bad): -1 Bad address\n"
            "open(ok): 0 \n"
            "rename(ok, bad): -1 Bad address\n");
  auto events = cat_trace(c.trace);
  auto opened = select(events, [&](const Event& e) { return e.name == "open" && names(e, c, "ok"); });
  EXPECT_EQ(opened.size(), 1u);
}

// A path of 4096 bytes without a NUL before an unreadable page: the kernel
// reads PATH_MAX bytes and answers ENAMETOOLONG; strata read on to the NUL
// (strlen) and the program died of SIGSEGV on its first call.
TEST(Edges, UnterminatedPathsGetTheKernelsError) {
  TempDir tmp;
  Compared c = run_both(tmp, "longpaths");
  EXPECT_EQ(c.plain.out,
            "open(abs): -1 File name too long\n"
            "openat(abs): -1 File name too long\n"
            "creat(abs): -1 File name too long\n"
            "stat(abs): -1 File name too long\n"
            "access(abs): -1 File name too long\n"
            "mkdir(abs): -1 File name too long\n"
            "unlink(abs): -1 File name too long\n"
            "rename(abs, ok): -1 File name too long\n"
            "truncate(abs): -1 File name too long\n"
            "fopen(abs): -1 File name too long\n"
            "execve(abs): -1 File name too long\n"
            "execv(abs): -1 File name too long\n"
            "posix_spawn(abs): -1 File name too long\n"
            "open(rel): -1 File name too long\n"
            "stat(rel): -1 File name too long\n"
            "fopen(rel): -1 File name too long\n"
            "execve(rel): -1 File name too long\n"
            "open(ok): 0 \n"
            "rename(ok, abs): -1 File name too long\n");
  auto events = cat_trace(c.trace);
  auto opened = select(events, [&](const Event& e) { return e.name == "open" && names(e, c, "ok"); });
  EXPECT_EQ(opened.size(), 1u);
}

// siginterrupt(sig, 1) before signal(): glibc's signal() then leaves
// SA_RESTART out, and the read fails with EINTR (strata's signal() forced
// SA_RESTART, and the read waited for ever).
TEST(Edges, SiginterruptIsHonouredBySignal) {
  TempDir tmp;
  Compared c = run_both(tmp, "siginterrupt");
  EXPECT_EQ(c.plain.out, "read of an empty pipe: -1 Interrupted system call\n");
}

// A handler that leaves an interposed read with siglongjmp: the thread used to
// stay marked as inside strata and record nothing more.
TEST(Edges, LeavingACallWithLongjmpKeepsRecording) {
  TempDir tmp;
  Compared c = run_both(tmp, "longjmp");
  EXPECT_EQ(c.plain.out, "left the read\n");
  auto events = cat_trace(c.trace);
  EXPECT_EQ(count_if(events, [&](const Event& e) { return e.name == "open" && names(e, c, "after"); }), 1);
  EXPECT_EQ(count_if(events, [&](const Event& e) { return e.name == "write" && names(e, c, "after"); }), 5);
  EXPECT_EQ(count_if(events, [&](const Event& e) { return e.name == "close" && names(e, c, "after"); }), 1);
}

// quick_exit ends through glibc's own _exit: the trace used to be cut inside
// its first block (unreadable).
TEST(Edges, QuickExitFinishesTheTrace) {
  TempDir tmp;
  Compared c = run_both(tmp, "quickexit");
  EXPECT_EQ(c.plain.code, 3);
  auto events = cat_trace(c.trace);
  EXPECT_EQ(count_if(events, [&](const Event& e) { return e.name == "write" && names(e, c, "quick"); }), 10);
  EXPECT_EQ(count_if(events, [&](const Event& e) { return e.name == "exit" && e.ret == 3; }), 1);
  RunResult info = run({kStrata, "info", c.trace});
  EXPECT_EQ(info.out.find("incomplete"), std::string::npos) << info.out;
}

// daemon() forks and its parent leaves through glibc's own _exit: the
// parent's events used to be lost.
TEST(Edges, DaemonKeepsTheParentsEvents) {
  TempDir tmp;
  Compared c = run_both(tmp, "daemon");
  ASSERT_TRUE(wait_for([&] { return fs::exists(c.traced_dir + "/child") && fs::exists(c.plain_dir + "/child"); }, 20));
  std::vector<Event> events;
  // The daemon's own file gets its footer when it exits, just after the rename.
  ASSERT_TRUE(wait_for(
      [&] {
        events = cat_trace(c.trace);
        return count_if(events, [&](const Event& e) { return e.name == "write" && names(e, c, "child.tmp"); }) == 5;
      },
      20));
  auto parent = select(events, [&](const Event& e) { return e.name == "write" && names(e, c, "parent"); });
  ASSERT_EQ(parent.size(), 10u);
  auto child = select(events, [&](const Event& e) { return e.name == "write" && names(e, c, "child.tmp"); });
  EXPECT_NE(child[0].pid, parent[0].pid);
}

// A vfork child's dup2 acts on the child's descriptors: the parent's writes
// to its stdout used to be recorded as writes to the file the child dup'ed.
TEST(Edges, AVforkChildLeavesTheParentsDescriptorsAlone) {
  TempDir tmp;
  Compared c = run_both(tmp, "vforkdup");
  EXPECT_EQ(c.plain.out, "parent line\nparent line\nparent line\n");
  auto events = cat_trace(c.trace);
  auto to_a = select(events, [&](const Event& e) { return e.name == "write" && names(e, c, "a"); });
  ASSERT_EQ(to_a.size(), 1u);
  EXPECT_EQ(to_a[0].ret, 1);
  EXPECT_EQ(to_a[0].offset, 0);
  EXPECT_EQ(count_if(events, [&](const Event& e) { return e.name == "dup2"; }), 0);
  // The child's chdir("/") is its own: the parent's relative open names DIR.
  EXPECT_EQ(count_if(events, [&](const Event& e) { return e.name == "open" && names(e, c, "relative"); }), 1);
}

// An "a" stream writes at the end of the file, 10 bytes in.
TEST(Edges, AppendStreamsWriteAtTheEnd) {
  TempDir tmp;
  Compared c = run_both(tmp, "append");
  EXPECT_EQ(c.plain.out, "ftell 18\n");
  auto events = cat_trace(c.trace);
  auto fwrite = select(events, [&](const Event& e) { return e.name == "fwrite" && names(e, c, "log") && e.ret == 5; });
  ASSERT_EQ(fwrite.size(), 1u);
  EXPECT_EQ(fwrite[0].offset, 10);
  auto write = select(events, [&](const Event& e) { return e.name == "write" && names(e, c, "log") && e.ret == 3; });
  ASSERT_EQ(write.size(), 1u);
  EXPECT_EQ(write[0].offset, 15);
  // fdopen "a": glibc sets O_APPEND itself; the stream writes at the end.
  auto fdopen_write = select(events, [&](const Event& e) { return e.name == "fwrite" && names(e, c, "log") && e.ret == 4; });
  ASSERT_EQ(fdopen_write.size(), 1u);
  EXPECT_EQ(fdopen_write[0].offset, 18);
}

// freopen(NULL, mode, f) keeps the stream's file: its reads used to vanish.
TEST(Edges, FreopenWithoutAPathKeepsTheFile) {
  TempDir tmp;
  Compared c = run_both(tmp, "freopen");
  EXPECT_EQ(c.plain.out, "fgets line1\nfgets line2\nfgets (end)\n");
  auto events = cat_trace(c.trace);
  EXPECT_EQ(count_if(events, [&](const Event& e) { return e.name == "freopen" && names(e, c, "lines"); }), 1);
  auto fgets = select(events, [&](const Event& e) { return e.name == "fgets" && names(e, c, "lines"); });
  ASSERT_EQ(fgets.size(), 3u);
  EXPECT_EQ(fgets[1].offset, 6);
}

// MAP_ANONYMOUS with descriptor 0 (stdin, here a file) maps no file.
TEST(Edges, AnAnonymousMappingNamesNoFile) {
  TempDir tmp;
  const std::string input = tmp.sub("input");
  write_text(input, "stdin\n");
  const std::string shell = "exec " + kEdges + " mmapanon < " + input;
  RunResult plain = run({"/bin/sh", "-c", shell});
  RunResult traced = strata_run(tmp.sub("trace"), {"/bin/sh", "-c", shell}, {"-q"});
  EXPECT_EQ(traced.out, plain.out);
  EXPECT_EQ(plain.out, "mapped\n");
  auto events = cat_trace(tmp.sub("trace"));
  EXPECT_EQ(count_if(events, [&](const Event& e) { return e.name.starts_with("mmap") || e.name == "munmap"; }), 0);
}

// A timer's SIGEV_THREAD thread, which glibc starts without pthread_create,
// cancels the main thread blocked in read(): the read used to be a direct
// system call, no cancellation point, and the program hung.
TEST(Edges, ATimersThreadCanCancelTheMainThread) {
  TempDir tmp;
  Compared c = run_both(tmp, "timercancel");
  EXPECT_EQ(c.plain.out, "main cancelled\n");
}

// A storm of longjmps out of interposed opens, some of them while strata
// holds its string table's lock: the program must not hang on that lock (a
// first version cleared the thread's in-the-runtime mark there, and its next
// open waited for ever). The lock it left is released as the jump leaves
// (Edges.ALongjmpOutOfStratasLockDoesNotStopOtherThreads).
TEST(Edges, LongjmpsThatLandInsideStrataDoNotHang) {
  TempDir tmp;
  Compared c = run_both(tmp, "jumpstorm", 60);
  EXPECT_EQ(c.plain.out, "opened 20000\n");
}

// A function's first call, interrupted by a handler that leaves it with
// siglongjmp: strata used to resolve libc's function there (dlsym), and the
// jump left the dynamic linker's lock taken and its error catcher in a dead
// frame. The next dlsym hung, or jumped into garbage (SIGSEGV): about 1 run
// of jumpstorm in 200 under load. Every function is resolved at start-up now.
TEST(Edges, FirstCallsLeftByLongjmpResolveNothing) {
  TempDir tmp;
  Compared c = run_both(tmp, "firstcalls", 120);
  EXPECT_EQ(c.plain.out, "exited 0: 200, hung: 0, died: 0\n");
}

// shm_open's first call, left at times by a handler's siglongjmp, then a
// second thread's dlsym: strata looked libc's shm_open up with dlsym on that
// first call, and a jump out of it left the dynamic linker's lock taken (the
// thread's dlsym waited for ever: 1 process in 100). It is resolved at
// start-up now, as every other function.
TEST(Edges, AJumpOutOfTheFirstShmOpenLeavesDlsymAlone) {
  TempDir tmp;
  Compared c = run_both(tmp, "shmfirst", 300);
  EXPECT_EQ(c.plain.out, "exited 0: 100, hung: 0, died: 0\n");
}

// A handler's _exit while exit flushes the trace on the program's own thread
// (the main thread left through pthread_exit, so the writer thread has
// stopped): the handler's flush waited for the writer's mutex its own
// thread held, for ever.
TEST(Edges, AnExitInAHandlerDuringExitsFlushDoesNotHang) {
  TempDir tmp;
  Compared c = run_both(tmp, "exitflush", 120);
  EXPECT_EQ(c.plain.out, "exited 0: 20, hung: 0, died: 0\n");
}

// A thread that flushes the trace itself (the writer thread stopped when
// main left through pthread_exit), under a descriptor limit too low for the
// flush's own descriptor: the flush's failed system calls showed in the
// errno of the program's failed reads (EINVAL for EBADF, 4 reads in 200,000).
TEST(Edges, AFlushOnTheProgramsThreadLeavesItsErrnoAlone) {
  TempDir tmp;
  Compared c = run_both(tmp, "errnoflush", 60);
  EXPECT_EQ(c.plain.out, "wrong errno: 0\n");
}

// SIGXFSZ sent to the process while the program's own thread flushes the
// trace (no writer thread) with it blocked: the flush took it for the one
// its write raised and threw it away (the program's handler missed some of
// 300). Under a file size limit the trace's failed writes raise their own,
// which must reach neither the handler nor the count.
TEST(Edges, ASigxfszSentToTheProcessDuringAFlushReachesTheProgram) {
  for (const char* mode : {"xfszkill", "xfszlimit"}) {
    TempDir tmp;
    Compared c = run_both(tmp, mode, 120);
    EXPECT_EQ(c.plain.out, "sent 300, handled 300\n") << mode;
  }
}

// Crash handlers run on small alternate stacks (8 KiB). A handler's first
// write to an inherited descriptor, opens by absolute and relative path, a
// stat and an fopen used ~6 KiB of one plain and 4.6 KiB more under strata
// (its 4 KiB path buffers): an 8 KiB stack overflowed (SIGSEGV) only traced.
// strata may add 1 KiB.
TEST(Edges, AHandlerOnAnAlternateStackHasItsStack) {
  TempDir tmp;
  auto used = [](const std::string& out) {
    const std::string lead = "alternate stack used: ";
    EXPECT_EQ(out.rfind(lead, 0), 0u) << out;
    return out.rfind(lead, 0) == 0 ? std::stol(out.substr(lead.size())) : -1L;
  };
  RunResult plain = run({kEdges, "altstack", tmp.mkdir("plain")}, 30);
  RunResult traced = strata_run(tmp.sub("trace"), {kEdges, "altstack", tmp.mkdir("traced")}, {"-q"}, 30);
  ASSERT_EQ(plain.code, 0) << plain.err;
  ASSERT_EQ(traced.code, 0) << traced.err;
  const long plain_bytes = used(plain.out), traced_bytes = used(traced.out);
  EXPECT_GT(plain_bytes, 0);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)  // instrumented frames are larger
  EXPECT_LE(traced_bytes - plain_bytes, 1024) << plain_bytes << " bytes plain, " << traced_bytes << " traced";
#endif
  auto events = cat_trace(tmp.sub("trace"));
  long opens = std::count_if(events.begin(), events.end(), [&](const Event& e) {
    return e.name == "open" && e.path == tmp.sub("traced") + "/a";
  });
  EXPECT_EQ(opens, 2);  // by absolute and by relative path: both recorded, on the small buffers
}

// A process whose only thread leaves through the raw exit system call (the
// one way out of seccomp strict mode) or is killed alone (a call strict mode
// forbids) ends there without strata. strata's writer thread, which blocks
// every signal, kept it alive for ever, and `strata run` with it; in strict
// mode the program's next traced call was killed (a descriptor's lookup).
// Now it ends within a flush interval, with the same status, and the trace
// is complete with what was recorded before strict mode.
TEST(Edges, AProcessWhoseOnlyThreadLeavesRawEndsAsWithoutStrata) {
  struct Case {
    const char* mode;
    const char* file;
    int code, signal;
    const char* content;
  };
  for (const Case& k : {Case{"rawexit", "raw", 3, 0, "before\n"}, Case{"strict", "strict", 0, 0, "before\nin strict mode\n"},
                        Case{"strictkill", "strict", -1, SIGKILL, "before\nin strict mode\n"}}) {
    TempDir tmp;
    RunResult plain = run({kEdges, k.mode, tmp.mkdir("plain")}, 30);
    RunResult traced = strata_run(tmp.sub("trace"), {kEdges, k.mode, tmp.mkdir("traced")}, {"-q"}, 30);
    ASSERT_FALSE(traced.timed_out) << k.mode << ": still running after 30 s";
    if (k.signal) {
      EXPECT_EQ(plain.signal, k.signal) << k.mode;
      EXPECT_EQ(traced.code, 128 + k.signal) << k.mode;  // strata run's status for a command killed by it
    } else {
      EXPECT_EQ(plain.code, k.code) << k.mode;
      EXPECT_EQ(traced.code, k.code) << k.mode << traced.err;
    }
    EXPECT_EQ(read_text(tmp.sub("plain") + "/" + k.file), k.content);
    EXPECT_EQ(read_text(tmp.sub("traced") + "/" + k.file), k.content);
    auto events = cat_trace(tmp.sub("trace"));
    long writes = std::count_if(events.begin(), events.end(), [&](const Event& e) {
      return e.name == "write" && e.path == tmp.sub("traced") + "/" + k.file;
    });
    EXPECT_EQ(writes, 1) << k.mode;  // the one before strict mode (none is recorded in it)
  }
}

// A handler on an alternate stack mapped above the thread's stack jumps
// within itself: that is no jump out of the interrupted open, and strata must
// not take it for one (it recorded the handler's open inside its own, and
// deadlocked on its lock).
TEST(Edges, AJumpWithinAHandlerOnAnAlternateStackLeavesNothing) {
  TempDir tmp;
  Compared c = run_both(tmp, "altjump", 60);
  EXPECT_EQ(c.plain.out, "handled: yes\n");
}

// A handler that chdirs and opens (both async-signal-safe) while the thread
// it interrupted is inside strata's string table, and a handler's open
// interrupting strata following the main thread's chdir: the handler's
// interning waited for ever for the lock its own thread held.
TEST(Edges, AHandlerThatChdirsAndOpensDoesNotWaitForItsOwnThread) {
  TempDir tmp;
  Compared c = run_both(tmp, "handlerchdir", 60);
  EXPECT_EQ(c.plain.out, "opened 20000, chdir failed 0, handler ran: yes\n");
}

// jumpstorm with a second thread that opens files: a jump out of an open
// while strata held its string table's lock left the lock taken, and the
// other thread's next new path waited for it for ever.
TEST(Edges, ALongjmpOutOfStratasLockDoesNotStopOtherThreads) {
  TempDir tmp;
  Compared c = run_both(tmp, "jumpthreads", 60);
  EXPECT_EQ(c.plain.out, "opened 20000, the other thread stopped\n");
}

// The same with strata's API (strata_tag_set_str): a jump out of it while it
// held a string table's lock left the lock taken (the other thread waited
// for ever) and the thread marked as inside strata (its writes went
// unrecorded).
TEST(Edges, ALongjmpOutOfStratasApiDoesNotStopOtherThreads) {
  TempDir tmp;
  Compared c = run_both(tmp, "apijumps", 60);
  EXPECT_EQ(c.plain.out, "tagged 200000, the other thread stopped\n");
  auto events = cat_trace(c.trace);
  EXPECT_EQ(count_if(events, [&](const Event& e) { return e.name == "write" && names(e, c, "after"); }), 5);
}

// siginterrupt() changes SA_RESTART of the action in force: sigaction reports
// it, as without strata, while strata holds the program's handler.
TEST(Edges, SiginterruptShowsInWhatSigactionReports) {
  TempDir tmp;
  Compared c = run_both(tmp, "restartview");
  EXPECT_EQ(c.plain.out, "after siginterrupt(1): SA_RESTART 0\nafter siginterrupt(0): SA_RESTART 1\n");
}

// A thread whose ring cannot be mapped (an address-space limit): its events
// are counted as dropped (they used to vanish with "0 dropped").
TEST(Edges, AThreadWithoutARingCountsItsEventsAsDropped) {
  TempDir tmp;
  Compared c = run_both(tmp, "ringless");
  EXPECT_EQ(c.plain.out, "thread wrote: yes\n");
  Info info = info_trace(c.trace);
  auto events = cat_trace(c.trace);
  const int64_t recorded = count_if(events, [&](const Event& e) { return names(e, c, "t"); });
  EXPECT_EQ(recorded + info.dropped, 102) << "open, 100 writes, close";
}

// A signal handler that makes a call while its thread's first call sets up
// strata's state for the thread (here a seccomp trap of the gettid that setup
// makes; an asynchronous signal can land there too): the handler's call set
// up a second state, whose 4 MiB ring stayed mapped for ever, one per thread,
// until the program's own mapping no longer fit under its address-space limit.
TEST(Edges, AHandlerDuringAThreadsSetupLeavesNoRingBehind) {
  TempDir tmp;
  Compared c = run_both(tmp, "trappedfirst");
  EXPECT_EQ(c.plain.out, "threads: 100, 24 MiB mapping: made\n");
}

// A handler that leaves a thread's first call (inside strata's setup of the
// thread's state) with siglongjmp: the thread's later calls are recorded.
TEST(Edges, ALongjmpOutOfAThreadsSetupLeavesItTraced) {
  TempDir tmp;
  Compared c = run_both(tmp, "trappedjump");
  EXPECT_EQ(c.plain.out, "thread wrote: yes\n");
#if defined(__x86_64__)
  auto events = cat_trace(c.trace);
  EXPECT_EQ(count_if(events, [&](const Event& e) { return e.name == "write" && names(e, c, "j"); }), 3);
#endif
}

// An address-space limit too low for strata's buffers: the program runs,
// untraced (it used to abort in strata's start-up, std::bad_alloc).
TEST(Edges, ALowAddressSpaceLimitCostsTheTraceNotTheProgram) {
  TempDir tmp;
#if !defined(__SANITIZE_ADDRESS__)  // an ASan-built launcher cannot start under 35 MB of address space
  RunResult r = run({"/bin/sh", "-c", "ulimit -v 35000; exec " + kStrata + " run -q -o " + tmp.sub("trace") + " -- /bin/echo ran"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "ran\n");
#endif
  // Lower still (the launcher itself needs more): the runtime preloaded by
  // hand. Even the exception that reported the failure could not be made.
  RunResult low = run({"/bin/sh", "-c", "ulimit -v 6000; exec /bin/echo ran"}, 30,
                      {"STRATA_DIR=" + tmp.sub("trace-low"), "LD_PRELOAD=" + std::string(STRATA_LIB_PATH)});
  EXPECT_EQ(low.code, 0) << low.err;
  EXPECT_EQ(low.out, "ran\n");
}

}  // namespace
