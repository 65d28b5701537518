// Smart collection (STRATA_MODE=smart, src/runtime/smart.h): a real loop
// program (programs/epochs.c) with one epoch that behaves differently, traced
// in mode smart and in mode trace. The smart trace holds the warm-up, N
// iterations of the main loop in full, the changed epoch and N after it, the
// last epoch (the loop's exit is a new edge), one `iteration` event per
// iteration after the warm-up, and counters equal to trace mode's.
#include "harness.h"

namespace core_test {
namespace {

const std::string kEpochs = EPOCHS_BIN;
const std::string kLib = STRATA_LIB_PATH;

constexpr int kEpochCount = 60, kChanged = 30, kKeep = 5;
constexpr int kReadsPerEpoch = 16 + 1;  // 64 KiB in 4 KiB requests, then the read at the end of file

// DIR/train/sample.bin (64 KiB), DIR/extra/x.bin (4 KiB), DIR/out/.
std::string make_data(const TempDir& t) {
  const std::string data = t.mkdir("data");
  fs::create_directories(data + "/train");
  fs::create_directories(data + "/extra");
  fs::create_directories(data + "/out");
  write_text(data + "/train/sample.bin", std::string(64 * 1024, 's'));
  write_text(data + "/extra/x.bin", std::string(4096, 'x'));
  return data;
}

RunResult run_epochs(const std::string& data, const std::string& trace, const char* mode, int epochs = kEpochCount,
                     int changed = kChanged, int files = 1) {
  return run({kEpochs, data, std::to_string(epochs), std::to_string(changed), "0", std::to_string(files)}, 120,
             {"STRATA_DIR=" + trace, std::string("STRATA_MODE=") + mode,
              "STRATA_SMART_ITERATIONS=" + std::to_string(kKeep), "LD_PRELOAD=" + kLib});
}

std::vector<Event> iteration_events(const std::vector<Event>& events) {
  return select(events, [](const Event& e) { return e.cat == "PROC" && e.name == "iteration"; });
}

TEST(Smart, KeepsNIterationsTheChangedOneAndNAfterItAndMarksEveryIteration) {
  TempDir t;
  const std::string data = make_data(t), trace = t.sub("trace");
  RunResult r = run_epochs(data, trace, "smart");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(read_text(data + "/out/epochs.log").size(), 32u * kEpochCount);
  const std::vector<Event> events = cat_trace(trace);
  const std::vector<Event> marks = iteration_events(events);
  ASSERT_FALSE(marks.empty());
  // Warm-up (smart.h): the first epoch grows the graph through its 23rd event
  // (22 events an epoch, the 23rd closes the loop); the graph is stable after
  // max(64, 23) more, at event 87, in epoch 3; iterations 0..3 are in full
  // and the first `iteration` event is iteration 4's.
  const int64_t first = 4;
  EXPECT_EQ(marks.front().offset, first);
  ASSERT_EQ(static_cast<int64_t>(marks.size()), kEpochCount - first);  // one per iteration
  for (size_t i = 0; i < marks.size(); ++i) {
    EXPECT_EQ(marks[i].offset, first + static_cast<int64_t>(i));
    EXPECT_EQ(marks[i].dur, 0);
    EXPECT_EQ(marks[i].ret, 0);  // the first main loop found stays the main loop
    if (i > 0) {
      EXPECT_GE(marks[i].ts, marks[i - 1].ts);
    }
  }
  std::vector<int64_t> full;
  for (const Event& m : marks)
    if (m.size == 1) full.push_back(m.offset);
  std::vector<int64_t> want;
  for (int64_t i = first; i < first + kKeep; ++i) want.push_back(i);        // N after the warm-up
  for (int64_t i = kChanged; i <= kChanged + kKeep; ++i) want.push_back(i);  // the changed one and N after it
  want.push_back(kEpochCount - 1);                                           // the exit is a new edge
  EXPECT_EQ(full, want);
  // Full iterations hold all their events; the others none.
  const int64_t full_epochs = first + static_cast<int64_t>(want.size());
  EXPECT_EQ(count_if(events, [&](const Event& e) { return e.name == "read" && e.path == data + "/train/sample.bin"; }),
            full_epochs * kReadsPerEpoch);
  EXPECT_EQ(count_if(events, [&](const Event& e) { return e.name == "write" && e.path == data + "/out/epochs.log"; }),
            full_epochs);
  EXPECT_EQ(count_if(events, [&](const Event& e) { return e.name == "read" && e.path == data + "/extra/x.bin"; }), 2);
  // The changed epoch is in the trace in full: between its mark and the next.
  int64_t ts30 = 0, ts31 = 0;
  for (const Event& m : marks) {
    if (m.offset == kChanged) ts30 = m.ts;
    if (m.offset == kChanged + 1) ts31 = m.ts;
  }
  EXPECT_EQ(count_if(events, [&](const Event& e) { return e.name == "read" && e.ts >= ts30 && e.ts < ts31; }),
            kReadsPerEpoch + 2);
}

// An epoch reads 8 files of one directory: the per-file loop (open, reads,
// close, back to open: the same header) settles first, at event 84 (the edge
// back to open is new at event 20, then 64 quiet events), in file 4 of epoch
// 0, and is marked as loop 0 from file 5 on (index = files so far). Epoch
// 0's end adds nodes (file 7 is kept, and N = 5 files after it: 8..12, files
// 0..4 of epoch 1); files 5..7 of epoch 1 (13..15) are marks only. The
// epoch loop closed at event 156 (an epoch is 8 x 19 + 3 = 155 events); 156
// quiet events later, at event 312 in epoch 2 (file 16's iteration, kept),
// the search names the epoch loop, the per-file loop nested in it sharing
// its header: loop 1, one mark per epoch from epoch 3 on.
TEST(Smart, AnEpochOfManyFilesBecomesTheMainLoopOnceItsFirstTripEnds) {
  TempDir t;
  const std::string data = make_data(t), trace = t.sub("trace");
  for (int f = 1; f < 8; ++f) write_text(data + "/train/sample" + std::to_string(f) + ".bin", std::string(64 * 1024, 's'));
  const int epochs = 40;
  RunResult r = run_epochs(data, trace, "smart", epochs, -1, 8);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::vector<Event> events = cat_trace(trace);
  std::vector<int64_t> loop0, full0, loop1, full1;
  for (const Event& m : iteration_events(events)) {
    ASSERT_TRUE(m.ret == 0 || m.ret == 1) << m.ret;
    if (m.ret == 0) {
      EXPECT_TRUE(loop1.empty()) << "a loop 0 mark after loop 1's";
    }
    (m.ret == 0 ? loop0 : loop1).push_back(m.offset);
    if (m.size == 1) (m.ret == 0 ? full0 : full1).push_back(m.offset);
  }
  EXPECT_EQ(loop0, (std::vector<int64_t>{5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}));
  EXPECT_EQ(full0, (std::vector<int64_t>{5, 6, 7, 8, 9, 10, 11, 12, 16}));
  std::vector<int64_t> want;
  for (int64_t i = 3; i < epochs; ++i) want.push_back(i);
  EXPECT_EQ(loop1, want);
  EXPECT_EQ(full1, (std::vector<int64_t>{3, 4, 5, 6, 7, epochs - 1}));
  // Files in full: epoch 0 (8), epoch 1's first 5, epoch 2 (8), epochs 3..7 and 39 (6 x 8).
  EXPECT_EQ(count_if(events, [&](const Event& e) { return e.name == "open" && under(e.path, data + "/train"); }),
            8 + 5 + 8 + 6 * 8);
  // The log line of epochs 0, 2, 3..7 and 39 (epoch 1's is in its file 7's iteration, 15).
  EXPECT_EQ(count_if(events, [&](const Event& e) { return e.name == "write" && e.path == data + "/out/epochs.log"; }), 8);
}

TEST(Smart, CountersEqualTraceModes) {
  TempDir t;
  const std::string data = make_data(t), smart = t.sub("smart"), full = t.sub("full");
  ASSERT_EQ(run_epochs(data, smart, "smart").code, 0);
  ASSERT_EQ(run_epochs(data, full, "trace").code, 0);
  for (const std::string& file : {data + "/train/sample.bin", data + "/out/epochs.log", data + "/extra/x.bin"}) {
    auto s = darshan_counters(smart, file), f = darshan_counters(full, file);
    EXPECT_FALSE(f.empty()) << file;
    for (const char* c : {"POSIX_OPENS", "POSIX_READS", "POSIX_WRITES", "POSIX_BYTES_READ", "POSIX_BYTES_WRITTEN"})
      EXPECT_EQ(s[c], f[c]) << file << " " << c;
  }
  EXPECT_EQ(darshan_counters(smart, data + "/train/sample.bin")["POSIX_READS"], kEpochCount * kReadsPerEpoch);
  EXPECT_EQ(darshan_counters(smart, data + "/out/epochs.log")["POSIX_WRITES"], kEpochCount);
}

TEST(Smart, AnalyzeReportsPerIterationTimesAndTheIterationsKeptInFull) {
  TempDir t;
  const std::string data = make_data(t), trace = t.sub("trace");
  ASSERT_EQ(run_epochs(data, trace, "smart").code, 0);
  RunResult a = run({kStrata, "analyze", "--section", "modes", trace}, 60);
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_NE(a.out.find(": 56 iterations (4..59), 55 timed: mean "), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("; kept in full: 4-8, 30-35, 59\n"), std::string::npos) << a.out;
  // What the event figures cover, next to counters that cover every call.
  EXPECT_NE(a.out.find("  events (tables, timelines) cover the iterations kept in full; counters (--darshan) every call\n"),
            std::string::npos)
      << a.out;
}

}  // namespace
}  // namespace core_test
