// Programs of every workflow that move bytes without the calls a C program
// usually makes: cp copies inside the kernel (copy_file_range), Python's
// shutil.copyfile with sendfile, sha256sum reads with fread_unlocked and sort
// writes with fwrite_unlocked (gnulib's unlocked-io.h). Under `strata run`
// every byte they read and write is in the trace and in the Darshan counters,
// and what they write is the same as without strata.
#include "harness.h"
#include "../analysis/e2e_harness.h"

using namespace core_test;

namespace {

// 300,000 bytes that are not all alike (a run of one byte could be copied
// sparsely by cp).
std::string sample_bytes() {
  std::string s(300000, '\0');
  uint32_t x = 12345;
  for (char& c : s) {
    x = x * 1103515245u + 12345u;
    c = static_cast<char>(x >> 24);
  }
  return s;
}

struct Bytes {
  int64_t read = 0, written = 0, calls = 0;
};

// Bytes moved on `path` by the events of `layer` (POSIX, STDIO), from the
// functions' table: a copy's input event reads, its ".out" event writes.
Bytes bytes_on(const std::vector<Event>& events, const std::string& path, const std::string& layer) {
  static const std::set<std::string> reads = {"read", "pread64", "copy_file_range", "sendfile", "sendfile64", "fread"};
  static const std::set<std::string> writes = {"write", "pwrite64", "copy_file_range.out", "sendfile.out", "fwrite",
                                               "fputs", "fputc", "putc"};
  Bytes b;
  for (auto& e : events) {
    if (e.path != path || e.cat != layer || e.ret <= 0) continue;
    if (reads.count(e.name)) b.read += e.ret, ++b.calls;
    else if (writes.count(e.name)) b.written += e.ret, ++b.calls;
  }
  return b;
}

struct ToolRun {
  TempDir tmp;
  std::string work, trace;
  RunResult result;
  std::vector<Event> events;
};

// Runs `cmd` (in a shell, in a fresh work directory holding in.bin) under
// strata, and again plain in `plain`.
void run_tool(ToolRun& w, const std::string& cmd, const std::string& plain_dir = "") {
  w.work = w.tmp.mkdir("work");
  w.trace = w.tmp.sub("trace");
  write_text(w.work + "/in.bin", sample_bytes());
  w.result = strata_run(w.trace, {"/bin/sh", "-c", "cd '" + w.work + "' && " + cmd}, {"-q"});
  w.events = cat_trace(w.trace);
  if (!plain_dir.empty()) {
    write_text(plain_dir + "/in.bin", sample_bytes());
    RunResult plain = run({"/bin/sh", "-c", "cd '" + plain_dir + "' && " + cmd}, 60);
    EXPECT_EQ(plain.code, 0) << plain.err;
  }
}

TEST(Tools, CpCopyFileRangeBytesAreReadAndWritten) {
  ToolRun w;
  run_tool(w, "cp in.bin out.bin");
  ASSERT_EQ(w.result.code, 0) << w.result.err;
  EXPECT_EQ(read_text(w.work + "/out.bin"), sample_bytes());
  const int64_t copies = count_if(w.events, [](const Event& e) { return e.name == "copy_file_range"; });
  const int64_t reads =
      count_if(w.events, [&](const Event& e) { return e.name == "read" && e.path == w.work + "/in.bin"; });
  if (copies == 0 && reads == 0) GTEST_SKIP() << "cp cloned the file (a reflink): no bytes moved";
  const Bytes in = bytes_on(w.events, w.work + "/in.bin", "POSIX");
  const Bytes out = bytes_on(w.events, w.work + "/out.bin", "POSIX");
  EXPECT_EQ(in.read, 300000);
  EXPECT_EQ(in.written, 0);
  EXPECT_EQ(out.written, 300000);
  EXPECT_EQ(out.read, 0);
  // The output's offsets follow the kernel's: consecutive from 0.
  int64_t next = 0;
  for (auto& e : w.events)
    if (e.path == w.work + "/out.bin" && e.name == "copy_file_range.out") {
      EXPECT_EQ(e.offset, next);
      next += e.ret;
    }
  auto c_in = darshan_counters(w.trace, w.work + "/in.bin");
  auto c_out = darshan_counters(w.trace, w.work + "/out.bin");
  EXPECT_EQ(c_in["POSIX_BYTES_READ"], 300000);
  EXPECT_EQ(c_in["POSIX_MAX_BYTE_READ"], 299999);
  EXPECT_EQ(c_out["POSIX_BYTES_WRITTEN"], 300000);
  EXPECT_EQ(c_out["POSIX_MAX_BYTE_WRITTEN"], 299999);
  EXPECT_EQ(c_out["POSIX_WRITES"], count_if(w.events, [&](const Event& e) {
              return e.name == "copy_file_range.out" && e.path == w.work + "/out.bin";
            }));
  // cp asks for SSIZE_MAX bytes ("all there is"): the functions table's sizes
  // are the bytes each call moved, not that.
  auto j = e2e::analyze_json(w.trace);
  bool seen = false;
  for (auto f : j->root["functions"].get_array()) {
    if (e2e::S(f, "name") != "copy_file_range") continue;
    seen = true;
    EXPECT_EQ(e2e::I(f, "bytes"), 300000);
    EXPECT_EQ(e2e::I(f["size"], "max"), 300000) << j->text;
  }
  EXPECT_TRUE(seen) << j->text;
}

TEST(Tools, PythonShutilSendfileBytesAreReadAndWritten) {
  ToolRun w;
  run_tool(w, "/usr/bin/python3 -c 'import shutil; shutil.copyfile(\"in.bin\", \"out.bin\")'");
  ASSERT_EQ(w.result.code, 0) << w.result.err;
  EXPECT_EQ(read_text(w.work + "/out.bin"), sample_bytes());
  ASSERT_GT(count_if(w.events, [](const Event& e) { return e.name == "sendfile64" || e.name == "sendfile"; }), 0)
      << "shutil.copyfile did not use sendfile";
  EXPECT_EQ(bytes_on(w.events, w.work + "/in.bin", "POSIX").read, 300000);
  EXPECT_EQ(bytes_on(w.events, w.work + "/out.bin", "POSIX").written, 300000);
  EXPECT_EQ(darshan_counters(w.trace, w.work + "/out.bin")["POSIX_BYTES_WRITTEN"], 300000);
}

// Copies at explicit offsets (sendfile's *offset, copy_file_range's
// off_in/off_out) are recorded and counted at those offsets; they do not move
// the descriptors' own offsets, which the reads after them show.
TEST(Tools, CopiesAtExplicitOffsets) {
  ToolRun w;
  run_tool(w, "/usr/bin/python3 -c '"
              "import os\n"
              "i = os.open(\"in.bin\", os.O_RDONLY)\n"
              "o = os.open(\"out.bin\", os.O_WRONLY | os.O_CREAT, 0o644)\n"
              "os.read(i, 4096)\n"
              "assert os.sendfile(o, i, 100000, 4096) == 4096\n"
              "os.read(i, 4096)\n"
              "assert os.copy_file_range(i, o, 4096, 50000, 150000) == 4096\n"
              "os.write(o, b\"end\")\n'");
  ASSERT_EQ(w.result.code, 0) << w.result.err;
  auto at = [&](const std::string& name, const std::string& file) {
    std::vector<int64_t> offsets;
    for (auto& e : w.events)
      if (e.name == name && e.path == w.work + "/" + file) offsets.push_back(e.offset);
    return offsets;
  };
  EXPECT_EQ(at("read", "in.bin"), (std::vector<int64_t>{0, 4096}));
  EXPECT_EQ(at("sendfile64", "in.bin").size() + at("sendfile", "in.bin").size(), 1u);
  EXPECT_EQ(at("sendfile.out", "out.bin"), (std::vector<int64_t>{0}));  // no off_out: the descriptor's offset
  EXPECT_EQ(at("copy_file_range", "in.bin"), (std::vector<int64_t>{50000}));
  EXPECT_EQ(at("copy_file_range.out", "out.bin"), (std::vector<int64_t>{150000}));
  EXPECT_EQ(at("write", "out.bin"), (std::vector<int64_t>{4096}));  // after sendfile's 4096, not after 150000
  // A traced input's event holds the call's time; the ".out" event follows it,
  // so the copy's time is not counted twice.
  for (size_t i = 1; i < w.events.size(); ++i) {
    const Event &in = w.events[i - 1], &out = w.events[i];
    if (!out.name.ends_with(".out")) continue;
    EXPECT_TRUE(in.name == "copy_file_range" || in.name.starts_with("sendfile")) << in.name;
    EXPECT_EQ(in.tid, out.tid);
    EXPECT_GE(out.ts, in.ts + in.dur) << out.name;
  }
  // The counters take a copy at its offset, as Darshan takes a pread: the
  // copy at 100000 reaches byte 104095; and as after a pread, Darshan's record
  // offset then stands past it, so the next read counts from 104096 (to
  // 108191). Counted at the tracked offsets instead: 16383 and 8194.
  EXPECT_EQ(darshan_counters(w.trace, w.work + "/in.bin")["POSIX_MAX_BYTE_READ"], 108191);
  EXPECT_EQ(darshan_counters(w.trace, w.work + "/out.bin")["POSIX_MAX_BYTE_WRITTEN"], 154098);
}

// A copy whose input is not traced (here excluded) has no input event to
// hold the call's time: its ".out" event spans the call instead. 64 MiB make
// the call take milliseconds, which the program measures around it; before,
// the event lasted the microsecond of its own bookkeeping.
TEST(Tools, CopyFromUntracedInputKeepsTheCallsTime) {
  TempDir tmp;
  const std::string in_dir = tmp.mkdir("excluded"), work = tmp.mkdir("work"), trace = tmp.sub("trace");
  write_text(in_dir + "/in.bin", std::string(64 << 20, 'x'));
  RunResult r = strata_run(trace,
                           {"/usr/bin/python3", "-c",
                            "import os, sys, time\n"
                            "i = os.open(sys.argv[1], os.O_RDONLY)\n"
                            "o = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT, 0o644)\n"
                            "t = time.perf_counter_ns()\n"
                            "n = os.copy_file_range(i, o, 64 << 20)\n"
                            "print(time.perf_counter_ns() - t, n)\n",
                            in_dir + "/in.bin", work + "/out.bin"},
                           {"-q", "--exclude", in_dir});
  ASSERT_EQ(r.code, 0) << r.err;
  int64_t call_ns = 0, moved = 0;
  ASSERT_EQ(sscanf(r.out.c_str(), "%" SCNd64 " %" SCNd64, &call_ns, &moved), 2) << r.out;
  ASSERT_GT(moved, 0);
  std::vector<Event> events = cat_trace(trace);
  EXPECT_EQ(count_if(events, [&](const Event& e) { return e.path == in_dir + "/in.bin"; }), 0);
  std::vector<Event> outs;
  for (auto& e : events)
    if (e.name == "copy_file_range.out" && e.path == work + "/out.bin") outs.push_back(e);
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_EQ(outs[0].ret, moved);
  // Both in ns; the program's clock also holds Python's own call overhead,
  // and strata's ticks are converted to ns by a calibrated rate (1% margin).
  EXPECT_GE(outs[0].dur * 2, call_ns) << "call took " << call_ns << " ns";
  EXPECT_LE(outs[0].dur, call_ns + call_ns / 100) << "call took " << call_ns << " ns";
}

TEST(Tools, Sha256sumFreadUnlockedBytesAreRead) {
  ToolRun w;
  TempDir plain_tmp;
  const std::string plain = plain_tmp.mkdir("plain");
  run_tool(w, "sha256sum in.bin > sum.txt", plain);
  ASSERT_EQ(w.result.code, 0) << w.result.err;
  EXPECT_EQ(read_text(w.work + "/sum.txt"), read_text(plain + "/sum.txt"));
  const Bytes in = bytes_on(w.events, w.work + "/in.bin", "STDIO");
  EXPECT_EQ(in.read, 300000);
  EXPECT_GE(in.calls, 2);
  const e2e::Darshan d = e2e::analyze_darshan(w.trace);
  auto recs = d.of("STDIO", w.work + "/in.bin");
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0]->c.at("STDIO_BYTES_READ"), 300000);
  EXPECT_EQ(recs[0]->c.at("STDIO_READS"), in.calls + count_if(w.events, [&](const Event& e) {
                                            return e.name == "fread" && e.ret == 0 && e.path == w.work + "/in.bin";
                                          }));
}

TEST(Tools, SortFwriteUnlockedBytesAreWritten) {
  ToolRun w;
  TempDir plain_tmp;
  const std::string plain = plain_tmp.mkdir("plain");
  const std::string cmd = "od -An -tx1 -w4 -v in.bin | head -n 20000 > lines.txt && sort lines.txt -o sorted.txt";
  run_tool(w, cmd, plain);
  ASSERT_EQ(w.result.code, 0) << w.result.err;
  const std::string sorted = read_text(w.work + "/sorted.txt");
  EXPECT_EQ(sorted, read_text(plain + "/sorted.txt"));
  ASSERT_EQ(sorted.size(), 20000u * 13);  // " xx xx xx xx\n"
  EXPECT_EQ(bytes_on(w.events, w.work + "/sorted.txt", "STDIO").written, static_cast<int64_t>(sorted.size()));
  EXPECT_EQ(bytes_on(w.events, w.work + "/lines.txt", "STDIO").read, static_cast<int64_t>(sorted.size()));
  const e2e::Darshan d = e2e::analyze_darshan(w.trace);
  auto recs = d.of("STDIO", w.work + "/sorted.txt");
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0]->c.at("STDIO_BYTES_WRITTEN"), static_cast<int64_t>(sorted.size()));
}

}  // namespace
