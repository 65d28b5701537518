// Threads, namespaces and exec: a traced program that leaves main through
// pthread_exit, cancels a C11 thread, starts hundreds of short threads under
// an address-space limit, enters new namespaces or execs by descriptor
// behaves as it does without strata (tests/core/programs/threads.c), and its
// events are in the trace.
#include <gtest/gtest.h>

#include "harness.h"

using namespace core_test;

namespace {

const std::string kThreads = THREADS_BIN;
const std::string kThreadNames = THREAD_NAMES_BIN;

struct Compared {
  RunResult plain, traced;
  std::string plain_file, traced_file, trace;
};

Compared run_both(const TempDir& tmp, const std::string& mode, int timeout_s = 30) {
  Compared c;
  c.trace = tmp.sub("trace-" + mode);
  const std::string out0 = tmp.sub(mode + "-plain.out"), out1 = tmp.sub(mode + "-traced.out");
  c.plain = run({kThreads, mode, out0}, timeout_s);
  c.traced = strata_run(c.trace, {kThreads, mode, out1}, {}, timeout_s);
  c.plain_file = fs::exists(out0) ? read_text(out0) : "";
  c.traced_file = fs::exists(out1) ? read_text(out1) : "";
  return c;
}

void expect_same(const Compared& c) {
  EXPECT_FALSE(c.traced.timed_out) << "still running after the time limit";
  EXPECT_EQ(c.plain.code, c.traced.code) << c.traced.err;
  EXPECT_EQ(c.plain.out, c.traced.out);
  EXPECT_EQ(c.plain_file, c.traced_file);
}

// glibc ends the process when its last thread exits; the writer thread is
// one of them and used to keep the process alive for ever.
TEST(Threads, MainLeavingThroughPthreadExitEndsTheProcess) {
  TempDir tmp;
  Compared c = run_both(tmp, "mainexit", 20);
  ASSERT_EQ(c.plain.code, 0) << c.plain.err;
  expect_same(c);
  // exit() ran on the last thread as without strata: stdout flushed, the
  // atexit handler run, the log main left unflushed on descriptor 0 written.
  EXPECT_EQ(c.traced.out, "main leaves\natexit ran\n");
  EXPECT_EQ(c.traced_file, "worker done\n");
  EXPECT_EQ(read_text(tmp.sub("mainexit-traced.out.log")), "log line on descriptor 0\n");
  EXPECT_EQ(read_text(tmp.sub("mainexit-plain.out.log")), "log line on descriptor 0\n");
  // The worker's write, made after main had gone, is in a finished trace.
  auto events = cat_trace(c.trace);
  EXPECT_EQ(count_if(events, [](const Event& e) { return e.name == "write" && e.ret == 12; }), 1);
  Info info = info_trace(c.trace);
  EXPECT_EQ(info.dropped, 0);
}

// setns() from several threads at once (type 0: the kernel says which kind).
TEST(Threads, SetnsFromManyThreads) {
  TempDir tmp;
  RunResult plain = run({kThreads, "setns", "4"}, 30);
  RunResult traced = strata_run(tmp.sub("trace"), {kThreads, "setns", "4"}, {}, 30);
  EXPECT_FALSE(traced.timed_out);
  EXPECT_EQ(plain.code, traced.code) << traced.err;
  EXPECT_EQ(plain.out, traced.out);
  EXPECT_EQ(traced.out, "setns failures 0\n");
}

// A read() in a thread strata never saw created must stay a cancellation point.
TEST(Threads, C11ThreadBlockedInReadIsCancelled) {
  TempDir tmp;
  Compared c = run_both(tmp, "thrdcancel");
  expect_same(c);
  EXPECT_EQ(c.traced.out, "join ok, cancelled 1\n");
}

// Rings of exited threads are reused, so the program keeps its address space;
// mapping them never leaves ENOMEM in the program's errno.
TEST(Threads, ShortThreadsKeepTheAddressSpaceAndErrno) {
  TempDir tmp;
  Compared c = run_both(tmp, "churn", 60);
  ASSERT_EQ(c.plain.code, 0) << c.plain.err;
  expect_same(c);
  EXPECT_EQ(c.traced.out, "threads not created 0, successful writes that changed errno 0, malloc 256 MiB ok\n");
  auto events = cat_trace(c.trace);
  EXPECT_EQ(count_if(events, [](const Event& e) { return e.name == "write" && e.path.ends_with("churn-traced.out"); }),
            400);
  EXPECT_EQ(info_trace(c.trace).dropped, 0);
}

// A new user namespace needs a process of one thread; setns() into a mount
// namespace needs a thread whose working directory and root are its own.
TEST(Threads, UserAndMountNamespacesCanBeEntered) {
  TempDir tmp;
  Compared c = run_both(tmp, "userns");
  ASSERT_EQ(c.plain.code, 0) << c.plain.err;
  expect_same(c);
  auto events = cat_trace(c.trace);
  EXPECT_EQ(count_if(events, [](const Event& e) { return e.name == "fork" && e.ret > 0; }), 1);
}

// execveat: the image it replaces finishes its trace first, as for execve.
TEST(Threads, ExecveatKeepsTheEventsOfTheImageItReplaces) {
  TempDir tmp;
  Compared c = run_both(tmp, "execveat");
  ASSERT_EQ(c.plain.code, 0) << c.plain.err;
  expect_same(c);
  auto events = cat_trace(c.trace);
  EXPECT_EQ(count_if(events, [](const Event& e) { return e.name == "write" && e.path.ends_with("execveat-traced.out"); }),
            1000);
  EXPECT_EQ(count_if(events, [](const Event& e) { return e.name == "execveat"; }), 1);
  EXPECT_EQ(info_trace(c.trace).dropped, 0);
}

// A thread named (strata_thread_name) while the writer thread writes its
// events: the THREAD entry used to name a string interned after the DICT
// block was cut, and then no reader could open the file. Small rings and a
// 1 ms flush make the writer name the threads thousands of times.
TEST(Threads, RenamedWhileTheWriterNamesThem) {
  TempDir tmp;
  const std::string data = tmp.sub("data");
  write_text(data, "x");
  const std::string trace = tmp.sub("trace");
  RunResult r = strata_run(trace, {kThreadNames, data, "20000"}, {"--buffer-size", "4K", "--flush-interval", "1"}, 60);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "40000 preads\n");
  Info info = info_trace(trace);
  auto events = cat_trace(trace);
  EXPECT_EQ(count_if(events, [&](const Event& e) { return e.name == "pread" && e.path == data; }) + info.dropped,
            40000);
}

}  // namespace
