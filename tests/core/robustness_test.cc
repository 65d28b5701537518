// Failure never reaches the application, and a killed process leaves a
// readable trace: SIGKILL and SIGTERM mid-run, an unwritable trace directory,
// a buffer far too small for the event rate.
#include "harness.h"

using namespace core_test;

namespace {

// Waits (bounded) for the program's DIR/ready file and returns the pid in it.
pid_t wait_ready(const std::string& work) {
  std::string ready = work + "/ready";
  if (!wait_for([&] { return fs::exists(ready); }, 30)) return -1;
  return static_cast<pid_t>(std::stol(read_text(ready)));
}

// A process writing continuously, flushed every 100 ms, SIGKILLed after about
// a second: the trace opens (one file without footer), holds events, and cat
// prints them.
TEST(Crash, SigkillMidRunLeavesReadableTrace) {
  TempDir tmp;
  std::string work = tmp.mkdir("work"), trace = tmp.sub("trace");
  Child c = start({kStrata, "run", "-o", trace, "--flush-interval", "100", "--", PROCS_BIN, "loop", work});
  pid_t pid = wait_ready(work);
  ASSERT_GT(pid, 0) << "the program never became ready";
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  RunResult r = finish(c, 30);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.code, 128 + SIGKILL);

  RunResult ir = run({kStrata, "info", trace, "--json"});
  ASSERT_EQ(ir.code, 0) << ir.err;
  Info info = parse_info(ir.out);
  EXPECT_EQ(info.processes, 1);
  EXPECT_EQ(info.incomplete_files, 1);
  EXPECT_GT(info.events, 1000) << "at least the writes before 'ready' were flushed within the second";
  auto events = cat_trace(trace);
  EXPECT_EQ(static_cast<int64_t>(events.size()), info.events);
  std::string data = work + "/data";
  auto writes = select(events, [&](const Event& e) { return e.name == "pwrite" && e.path == data; });
  EXPECT_GT(writes.size(), 1000u);
  // Without drops the pwrites are exactly the program's sequence; with drops
  // (a loaded machine) each is still one of its calls.
  for (size_t i = 0; i < writes.size(); ++i) {
    bool ok = writes[i].ret == 4096 && writes[i].size == 4096 && writes[i].offset % 4096 == 0 &&
              writes[i].offset < 256 * 4096;
    if (info.dropped == 0) ok = ok && writes[i].offset == static_cast<int64_t>((i % 256) * 4096);
    if (!ok) {
      ADD_FAILURE() << "pwrite #" << i << " out of sequence (dropped " << info.dropped << "): " << describe(writes[i]);
      break;
    }
  }
}

// SIGTERM while the events are still buffered (default 1 s flush interval):
// the handler flushes, the process dies of the signal (exit code 143), and the
// trace holds every write made before it plus the "signal" event.
TEST(Crash, SigtermFlushesEverything) {
  TempDir tmp;
  std::string work = tmp.mkdir("work"), trace = tmp.sub("trace");
  const int kWrites = 5000;
  Child c = start({kStrata, "run", "-o", trace, "--", PROCS_BIN, "term", work, std::to_string(kWrites)});
  pid_t pid = wait_ready(work);
  ASSERT_GT(pid, 0) << "the program never became ready";
  ASSERT_EQ(kill(pid, SIGTERM), 0);
  RunResult r = finish(c, 30);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.code, 143);
  Info info = info_trace(trace);
  EXPECT_EQ(info.processes, 1);
  EXPECT_EQ(info.dropped, 0);
  auto events = cat_trace(trace);
  std::string data = work + "/data";
  EXPECT_EQ(count_if(events, [&](const Event& e) { return e.name == "write" && e.path == data && e.ret == 64; }),
            kWrites);
  // The ready file: open, write, close, rename.
  EXPECT_EQ(count_if(events, [&](const Event& e) { return e.name == "rename" && e.path == work + "/ready.tmp"; }), 1);
  auto sig = select(events, [](const Event& e) { return e.name == "signal"; });
  ASSERT_EQ(sig.size(), 1u);
  EXPECT_EQ(sig[0].ret, SIGTERM);
  EXPECT_EQ(sig[0].cat, "PROC");
  EXPECT_EQ(sig[0].pid, pid);
}


// The trace directory cannot be created (its parent is a regular file): the
// program's stdout, exit code and errno are exactly those of an untraced run.
TEST(Failure, UnwritableTraceDirChangesNothing) {
  TempDir tmp;
  std::string work = tmp.mkdir("work");
  write_text(tmp.sub("file.txt"), "not a directory\n");
  std::string trace = tmp.sub("file.txt/trace");
  const std::string n = "20000";
  RunResult plain = run({PROCS_BIN, "writes", work, n});
  ASSERT_EQ(plain.code, 3) << plain.err;
  RunResult traced = strata_run(trace, {PROCS_BIN, "writes", work, n});
  EXPECT_FALSE(traced.timed_out);
  EXPECT_EQ(traced.code, plain.code);
  EXPECT_EQ(traced.out, plain.out);
  EXPECT_NE(plain.out.find("missing_open=-1 errno=2"), std::string::npos) << plain.out;
  EXPECT_EQ(fs::file_size(work + "/data"), 20000u * 16);
  EXPECT_FALSE(fs::exists(trace));
  EXPECT_NE(traced.err.find(trace), std::string::npos) << "strata run warns about the directory: " << traced.err;
}

// A 1 KiB buffer (16 events per thread) against 100,000 back-to-back writes:
// output and exit code unchanged, drops counted, and every call is either in
// the trace or counted as dropped.
TEST(Failure, TinyBufferCountsDrops) {
  TempDir tmp;
  std::string work = tmp.mkdir("work"), trace = tmp.sub("trace");
  const int64_t kWrites = 100000;
  RunResult plain = run({PROCS_BIN, "writes", work, std::to_string(kWrites)});
  ASSERT_EQ(plain.code, 3);
  RunResult traced = strata_run(trace, {PROCS_BIN, "writes", work, std::to_string(kWrites)}, {"--buffer-size", "1024"});
  EXPECT_EQ(traced.code, 3);
  EXPECT_EQ(traced.out, plain.out);
  Info info = info_trace(trace);
  EXPECT_GT(info.dropped, 0);
  // open + writes + close of data, the failed open of missing, the exit of
  // main's return; stdout is a pipe.
  const int64_t calls = 1 + kWrites + 1 + 1 + 1;
  EXPECT_EQ(info.events + info.dropped, calls) << "events " << info.events << " dropped " << info.dropped;
  // analyze says its figures for that process are lower bounds, in text and JSON.
  RunResult text = run({kStrata, "analyze", trace});
  // Lines wider than 100 columns are continued 5 columns deeper: joined back.
  for (size_t k; (k = text.out.find("\n     ")) != std::string::npos;) text.out.replace(k, 6, " ");
  EXPECT_NE(text.out.find(" " + std::to_string(info.dropped) + " events dropped (the tracer's buffer was full"),
            std::string::npos)
      << text.out;
  RunResult json = run({kStrata, "analyze", "--json", trace});
  EXPECT_NE(json.out.find("events dropped (the tracer's buffer was full; the program ran on): this process's counts"),
            std::string::npos);
  auto events = cat_trace(trace);
  EXPECT_EQ(static_cast<int64_t>(events.size()), info.events);
  for (auto& e : events) {
    if (e.cat == "PROC") {  // the exit of main's return, unless it was dropped
      EXPECT_EQ(e.name, "exit");
      EXPECT_EQ(e.ret, 3);
    } else {
      EXPECT_TRUE(under(e.path, work)) << describe(e);
    }
  }
}

// Returning 3 from main is exit(3): one `exit` event with ret 3, the last
// event of the process, as an explicit exit(3) records.
TEST(Exit, ReturnFromMainRecordsExit) {
  TempDir tmp;
  std::string work = tmp.mkdir("work"), trace = tmp.sub("trace");
  RunResult r = strata_run(trace, {PROCS_BIN, "writes", work, "10"});
  EXPECT_EQ(r.code, 3);
  auto events = cat_trace(trace);
  auto exits = select(events, [](const Event& e) { return e.cat == "PROC"; });
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].name, "exit");
  EXPECT_EQ(exits[0].ret, 3);
  EXPECT_EQ(events.back().name, "exit");
}

}  // namespace
