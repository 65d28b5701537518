// Darshan counter rules on synthetic event sequences; every expected value is
// derived by hand from darshan-runtime's rules (see docs/analysis.md).
#include <gtest/gtest.h>

#include "analysis/counters.h"

using namespace strata::counters;

namespace {

struct Feed {
  CounterEngine eng;
  double t = 1.0;
  CounterEvent ev(Op op, int32_t fd, int64_t bytes = 0, int64_t offset = -1, bool positional = false) {
    CounterEvent e;
    e.op = op;
    e.fd = fd;
    e.file = 0;
    e.bytes = bytes;
    e.offset = offset;
    e.positional = positional;
    e.t1 = t;
    e.t2 = t + 0.5;
    t += 1.0;
    return e;
  }
  void open(int32_t fd) { eng.on_event(ev(Op::kOpen, fd)); }
  void read(int32_t fd, int64_t n) { eng.on_event(ev(Op::kRead, fd, n)); }
  void write(int32_t fd, int64_t n) { eng.on_event(ev(Op::kWrite, fd, n)); }
  void pread(int32_t fd, int64_t n, int64_t off) { eng.on_event(ev(Op::kRead, fd, n, off, true)); }
  void close(int32_t fd) { eng.on_event(ev(Op::kClose, fd)); }
  const PosixRecord& rec() {
    eng.finalize();
    return *eng.find_posix(0);
  }
};

}  // namespace

TEST(Counters, SequentialReads4KiB) {
  Feed f;
  f.open(3);
  for (int i = 0; i < 4; ++i) f.read(3, 4096);
  f.close(3);
  const auto& r = f.rec();
  EXPECT_EQ(r.counters[POSIX_OPENS], 1);
  EXPECT_EQ(r.counters[POSIX_READS], 4);
  EXPECT_EQ(r.counters[POSIX_BYTES_READ], 16384);
  EXPECT_EQ(r.counters[POSIX_MAX_BYTE_READ], 16383);
  // The first read at offset 0 after open is neither sequential nor consecutive.
  EXPECT_EQ(r.counters[POSIX_SEQ_READS], 3);
  EXPECT_EQ(r.counters[POSIX_CONSEC_READS], 3);
  EXPECT_EQ(r.counters[POSIX_SIZE_READ_1K_10K], 4);
  EXPECT_EQ(r.counters[POSIX_ACCESS1_ACCESS], 4096);
  EXPECT_EQ(r.counters[POSIX_ACCESS1_COUNT], 4);
  EXPECT_EQ(r.counters[POSIX_ACCESS2_ACCESS], 0);
  // Zero strides are tracked but never reported.
  EXPECT_EQ(r.counters[POSIX_STRIDE1_STRIDE], 0);
  EXPECT_EQ(r.counters[POSIX_STRIDE1_COUNT], 0);
  EXPECT_EQ(r.counters[POSIX_FILE_NOT_ALIGNED], 0);
  EXPECT_EQ(r.counters[POSIX_RW_SWITCHES], 0);
  EXPECT_EQ(r.counters[POSIX_MEM_ALIGNMENT], 8);
  EXPECT_EQ(r.counters[POSIX_FILE_ALIGNMENT], 4096);
  // opens at t=1, reads at 2..5, close at 6; each call lasts 0.5 s
  EXPECT_DOUBLE_EQ(r.fcounters[POSIX_F_OPEN_START_TIMESTAMP], 1.0);
  EXPECT_DOUBLE_EQ(r.fcounters[POSIX_F_READ_START_TIMESTAMP], 2.0);
  EXPECT_DOUBLE_EQ(r.fcounters[POSIX_F_READ_END_TIMESTAMP], 5.5);
  EXPECT_DOUBLE_EQ(r.fcounters[POSIX_F_CLOSE_END_TIMESTAMP], 6.5);
  EXPECT_DOUBLE_EQ(r.fcounters[POSIX_F_READ_TIME], 2.0);
  EXPECT_DOUBLE_EQ(r.fcounters[POSIX_F_META_TIME], 1.0);
  EXPECT_DOUBLE_EQ(r.fcounters[POSIX_F_MAX_READ_TIME], 0.5);
  EXPECT_EQ(r.counters[POSIX_MAX_READ_TIME_SIZE], 4096);
}

TEST(Counters, StridedSmallUnalignedPreads) {
  Feed f;
  f.open(3);
  for (int64_t off : {0, 1000, 2000, 3000}) f.pread(3, 100, off);
  const auto& r = f.rec();
  EXPECT_EQ(r.counters[POSIX_READS], 4);
  EXPECT_EQ(r.counters[POSIX_SEQ_READS], 3);
  EXPECT_EQ(r.counters[POSIX_CONSEC_READS], 0);
  EXPECT_EQ(r.counters[POSIX_STRIDE1_STRIDE], 900);  // 1000 - 99 - 1
  EXPECT_EQ(r.counters[POSIX_STRIDE1_COUNT], 3);
  EXPECT_EQ(r.counters[POSIX_ACCESS1_ACCESS], 100);
  EXPECT_EQ(r.counters[POSIX_ACCESS1_COUNT], 4);
  EXPECT_EQ(r.counters[POSIX_SIZE_READ_0_100], 4);
  EXPECT_EQ(r.counters[POSIX_FILE_NOT_ALIGNED], 3);
  EXPECT_EQ(r.counters[POSIX_MAX_BYTE_READ], 3099);
}

// The buffer alignment arrives as format::Column::kMemAlign values (1 + the
// address's trailing zero bits, 0 unknown); Darshan counts a call when its
// buffer is not a multiple of the configured alignment (8 by default).
TEST(Counters, MemNotAlignedAgainstConfiguredAlignment) {
  for (int64_t alignment : {8, 16}) {
    EngineConfig cfg;
    cfg.mem_alignment = alignment;
    CounterEngine eng(cfg);
    Feed f;
    CounterEvent open = f.ev(Op::kOpen, 3);
    eng.on_event(open);
    // Buffers aligned to: unknown, 1, 4, 8, 16, 4096 (or more).
    for (uint8_t code : {0, 1, 3, 4, 5, 13}) {
      CounterEvent e = f.ev(code % 2 ? Op::kRead : Op::kWrite, 3, 100);
      e.mem_align = code;
      eng.on_event(e);
    }
    CounterEvent failed = f.ev(Op::kRead, 3, 100);  // failed calls count nothing
    failed.ok = false;
    failed.mem_align = 1;
    eng.on_event(failed);
    eng.finalize();
    const PosixRecord& r = *eng.find_posix(0);
    EXPECT_EQ(r.counters[POSIX_MEM_ALIGNMENT], alignment);
    EXPECT_EQ(r.counters[POSIX_MEM_NOT_ALIGNED], alignment == 8 ? 2 : 3) << alignment;
    EXPECT_EQ(r.counters[POSIX_READS] + r.counters[POSIX_WRITES], 6);
  }
}

TEST(Counters, RandomPreads) {
  Feed f;
  f.open(3);
  f.pread(3, 4096, 8192);  // > last_byte_read (0): sequential, not consecutive, stride 0
  f.pread(3, 4096, 0);     // backwards
  f.pread(3, 4096, 4096);  // right after the previous one
  const auto& r = f.rec();
  EXPECT_EQ(r.counters[POSIX_SEQ_READS], 2);
  EXPECT_EQ(r.counters[POSIX_CONSEC_READS], 1);
  EXPECT_EQ(r.counters[POSIX_MAX_BYTE_READ], 12287);
  EXPECT_EQ(r.counters[POSIX_STRIDE1_COUNT], 0);
}

TEST(Counters, ReadWriteSwitchAndSharedOffset) {
  Feed f;
  f.open(3);
  f.write(3, 10);  // offset 0 -> 10
  f.read(3, 10);   // at offset 10: sequential (10 > 0), not consecutive
  f.write(3, 10);  // at 20: last_byte_written 9 -> consecutive? 20 != 10, sequential
  const auto& r = f.rec();
  EXPECT_EQ(r.counters[POSIX_WRITES], 2);
  EXPECT_EQ(r.counters[POSIX_READS], 1);
  EXPECT_EQ(r.counters[POSIX_RW_SWITCHES], 2);
  EXPECT_EQ(r.counters[POSIX_SEQ_READS], 1);
  EXPECT_EQ(r.counters[POSIX_CONSEC_READS], 0);
  EXPECT_EQ(r.counters[POSIX_SEQ_WRITES], 1);
  EXPECT_EQ(r.counters[POSIX_CONSEC_WRITES], 0);
  EXPECT_EQ(r.counters[POSIX_BYTES_WRITTEN], 20);
  EXPECT_EQ(r.counters[POSIX_MAX_BYTE_WRITTEN], 29);
  EXPECT_EQ(r.counters[POSIX_SIZE_WRITE_0_100], 2);
  // the 10-byte accesses of both directions share the access table
  EXPECT_EQ(r.counters[POSIX_ACCESS1_ACCESS], 10);
  EXPECT_EQ(r.counters[POSIX_ACCESS1_COUNT], 3);
}

TEST(Counters, SizeBucketBoundariesAndZeroByteRead) {
  Feed f;
  f.open(3);
  for (int64_t n : {100, 101, 1024, 1025, 0, 1 << 20, (1 << 20) + 1, 1073741824, 1073741825}) f.read(3, n);
  const auto& r = f.rec();
  EXPECT_EQ(r.counters[POSIX_SIZE_READ_0_100], 2);  // 100 and the 0-byte read at EOF
  EXPECT_EQ(r.counters[POSIX_SIZE_READ_100_1K], 2);
  EXPECT_EQ(r.counters[POSIX_SIZE_READ_1K_10K], 1);
  EXPECT_EQ(r.counters[POSIX_SIZE_READ_100K_1M], 1);
  EXPECT_EQ(r.counters[POSIX_SIZE_READ_1M_4M], 1);
  EXPECT_EQ(r.counters[POSIX_SIZE_READ_100M_1G], 1);
  EXPECT_EQ(r.counters[POSIX_SIZE_READ_1G_PLUS], 1);
  EXPECT_EQ(r.counters[POSIX_READS], 9);
  // all sizes seen once: the four largest values win ties
  EXPECT_EQ(r.counters[POSIX_ACCESS1_ACCESS], 1073741825);
  EXPECT_EQ(r.counters[POSIX_ACCESS2_ACCESS], 1073741824);
  EXPECT_EQ(r.counters[POSIX_ACCESS3_ACCESS], (1 << 20) + 1);
  EXPECT_EQ(r.counters[POSIX_ACCESS4_ACCESS], 1 << 20);
  EXPECT_EQ(r.counters[POSIX_ACCESS4_COUNT], 1);
}

TEST(Counters, OnlyFirst32DistinctSizesTracked) {
  Feed f;
  f.open(3);
  for (int i = 1; i <= 40; ++i) f.read(3, i);
  for (int k = 0; k < 5; ++k) f.read(3, 40);  // 40 was never tracked
  for (int k = 0; k < 2; ++k) f.read(3, 7);
  const auto& r = f.rec();
  EXPECT_EQ(r.counters[POSIX_ACCESS1_ACCESS], 7);
  EXPECT_EQ(r.counters[POSIX_ACCESS1_COUNT], 3);
  EXPECT_EQ(r.counters[POSIX_ACCESS2_ACCESS], 32);
  EXPECT_EQ(r.counters[POSIX_ACCESS2_COUNT], 1);
  EXPECT_EQ(r.counters[POSIX_ACCESS3_ACCESS], 31);
  EXPECT_EQ(r.counters[POSIX_ACCESS4_ACCESS], 30);
}

TEST(Counters, SeekDupStatFsyncMmap) {
  Feed f;
  f.open(3);
  CounterEvent seek = f.ev(Op::kSeek, 3, 0, 500);
  f.eng.on_event(seek);
  f.read(3, 10);  // at 500
  CounterEvent dup = f.ev(Op::kDup, 4);
  dup.old_fd = 3;
  f.eng.on_event(dup);
  f.read(4, 10);  // shares the record's offset: at 510, consecutive
  f.eng.on_event(f.ev(Op::kStat, -1));
  f.eng.on_event(f.ev(Op::kFsync, 4));
  f.eng.on_event(f.ev(Op::kMmap, 4));
  const auto& r = f.rec();
  EXPECT_EQ(r.counters[POSIX_SEEKS], 1);
  EXPECT_EQ(r.counters[POSIX_OPENS], 2);
  EXPECT_EQ(r.counters[POSIX_DUPS], 1);
  EXPECT_EQ(r.counters[POSIX_READS], 2);
  EXPECT_EQ(r.counters[POSIX_SEQ_READS], 2);
  EXPECT_EQ(r.counters[POSIX_CONSEC_READS], 1);
  EXPECT_EQ(r.counters[POSIX_STRIDE1_STRIDE], 0);
  EXPECT_EQ(r.counters[POSIX_MAX_BYTE_READ], 519);
  EXPECT_EQ(r.counters[POSIX_STATS], 1);
  EXPECT_EQ(r.counters[POSIX_FSYNCS], 1);
  EXPECT_EQ(r.counters[POSIX_MMAPS], 1);
  // fsync time goes to write time
  EXPECT_DOUBLE_EQ(r.fcounters[POSIX_F_WRITE_TIME], 0.5);
  // open, seek, dup, stat: 4 x 0.5 s of metadata
  EXPECT_DOUBLE_EQ(r.fcounters[POSIX_F_META_TIME], 2.0);
}

TEST(Counters, CloseResetsLastByteNotOffsetSemantics) {
  Feed f;
  f.open(3);
  f.read(3, 4096);
  f.close(3);
  f.open(5);
  f.read(5, 4096);  // offset reset to 0 at open: neither sequential nor consecutive
  const auto& r = f.rec();
  EXPECT_EQ(r.counters[POSIX_OPENS], 2);
  EXPECT_EQ(r.counters[POSIX_SEQ_READS], 0);
  EXPECT_EQ(r.counters[POSIX_CONSEC_READS], 0);
}

TEST(Counters, FailedCallsAreNotCounted) {
  Feed f;
  CounterEvent bad_open = f.ev(Op::kOpen, -1);
  bad_open.ok = false;
  f.eng.on_event(bad_open);
  EXPECT_EQ(f.eng.posix().size(), 0u);
  f.open(3);
  CounterEvent bad_read = f.ev(Op::kRead, 3, 0);
  bad_read.ok = false;
  f.eng.on_event(bad_read);
  EXPECT_EQ(f.rec().counters[POSIX_READS], 0);
}

TEST(Counters, ReadTimeDoesNotCountOverlapTwice) {
  CounterEngine eng;
  CounterEvent o;
  o.op = Op::kOpen;
  o.fd = 3;
  o.file = 0;
  o.t1 = 0.5;
  o.t2 = 0.6;
  eng.on_event(o);
  CounterEvent a;
  a.op = Op::kRead;
  a.fd = 3;
  a.file = 0;
  a.bytes = 1;
  a.t1 = 1;
  a.t2 = 3;
  eng.on_event(a);
  a.t1 = 2;
  a.t2 = 4;
  eng.on_event(a);
  EXPECT_DOUBLE_EQ(eng.find_posix(0)->fcounters[POSIX_F_READ_TIME], 3.0);
}

TEST(Counters, StdioStreams) {
  CounterEngine eng;
  double t = 1;
  auto ev = [&](Op op, int64_t bytes, int64_t off = -1) {
    CounterEvent e;
    e.module = Module::kStdio;
    e.op = op;
    e.fd = 7;
    e.file = 2;
    e.bytes = bytes;
    e.offset = off;
    e.t1 = t;
    e.t2 = t + 0.25;
    t += 1;
    eng.on_event(e);
  };
  ev(Op::kOpen, 0);
  ev(Op::kRead, 64);
  ev(Op::kRead, 64);
  ev(Op::kSeek, 0, 0);
  ev(Op::kRead, 10);
  ev(Op::kWrite, 5);  // at offset 10
  ev(Op::kFlush, 0);
  ev(Op::kClose, 0);
  const StdioRecord& r = *eng.find_stdio(2);
  EXPECT_EQ(r.counters[STDIO_OPENS], 1);
  EXPECT_EQ(r.counters[STDIO_READS], 3);
  EXPECT_EQ(r.counters[STDIO_BYTES_READ], 138);
  EXPECT_EQ(r.counters[STDIO_MAX_BYTE_READ], 127);
  EXPECT_EQ(r.counters[STDIO_SEEKS], 1);
  EXPECT_EQ(r.counters[STDIO_WRITES], 1);
  EXPECT_EQ(r.counters[STDIO_FLUSHES], 1);
  EXPECT_EQ(r.counters[STDIO_BYTES_WRITTEN], 5);
  EXPECT_EQ(r.counters[STDIO_MAX_BYTE_WRITTEN], 14);
  EXPECT_DOUBLE_EQ(r.fcounters[STDIO_F_READ_TIME], 0.75);
  EXPECT_DOUBLE_EQ(r.fcounters[STDIO_F_WRITE_TIME], 0.5);
  EXPECT_DOUBLE_EQ(r.fcounters[STDIO_F_META_TIME], 0.75);
  EXPECT_DOUBLE_EQ(r.fcounters[STDIO_F_OPEN_START_TIMESTAMP], 1.0);
  EXPECT_DOUBLE_EQ(r.fcounters[STDIO_F_CLOSE_END_TIMESTAMP], 8.25);
}

TEST(Counters, MergeAcrossProcesses) {
  Feed a, b;
  a.open(3);
  a.pread(3, 4096, 0);
  a.pread(3, 4096, 4096);
  b.t = 0.25;
  b.open(9);
  b.pread(9, 100, 100000);
  a.eng.merge(b.eng);
  const auto& r = a.rec();
  EXPECT_EQ(r.counters[POSIX_OPENS], 2);
  EXPECT_EQ(r.counters[POSIX_READS], 3);
  EXPECT_EQ(r.counters[POSIX_BYTES_READ], 8292);
  EXPECT_EQ(r.counters[POSIX_MAX_BYTE_READ], 100099);
  EXPECT_EQ(r.counters[POSIX_SEQ_READS], 2);  // a: 1, b: 1 (100000 > 0)
  EXPECT_EQ(r.counters[POSIX_ACCESS1_ACCESS], 4096);
  EXPECT_EQ(r.counters[POSIX_ACCESS1_COUNT], 2);
  EXPECT_EQ(r.counters[POSIX_ACCESS2_ACCESS], 100);
  EXPECT_DOUBLE_EQ(r.fcounters[POSIX_F_OPEN_START_TIMESTAMP], 0.25);
  EXPECT_DOUBLE_EQ(r.fcounters[POSIX_F_READ_END_TIMESTAMP], 3.5);
}

// A start before the time origin (negative: a DFTracer trace whose first
// record is not its earliest call) survives the merge.
TEST(Counters, MergeKeepsAnEarlierNegativeStart) {
  Feed a, b;
  a.open(3);
  a.pread(3, 4096, 0);
  b.t = -0.5;
  b.open(9);
  a.eng.merge(b.eng);
  EXPECT_DOUBLE_EQ(a.rec().fcounters[POSIX_F_OPEN_START_TIMESTAMP], -0.5);
}

// Tables past their first four values (kept outside the record) merge exactly.
TEST(Counters, MergeCountsValuesBeyondTheFourth) {
  Feed a, b;
  a.open(3);
  for (int size = 1; size <= 6; ++size) a.read(3, size);
  b.open(9);
  for (int size = 5; size <= 10; ++size) b.read(9, size);
  a.eng.merge(b.eng);
  const auto& r = a.rec();
  EXPECT_EQ(r.counters[POSIX_READS], 12);
  EXPECT_EQ(r.counters[POSIX_ACCESS1_ACCESS], 6);  // 5 and 6 twice: ties by value, descending
  EXPECT_EQ(r.counters[POSIX_ACCESS1_COUNT], 2);
  EXPECT_EQ(r.counters[POSIX_ACCESS2_ACCESS], 5);
  EXPECT_EQ(r.counters[POSIX_ACCESS2_COUNT], 2);
  EXPECT_EQ(r.counters[POSIX_ACCESS3_ACCESS], 10);
  EXPECT_EQ(r.counters[POSIX_ACCESS3_COUNT], 1);
  EXPECT_EQ(r.counters[POSIX_ACCESS4_ACCESS], 9);
}

// adopt() replaces the record and its running state: the next read on the
// still-open descriptor starts from offset 0 again, as on a fresh record.
TEST(Counters, AdoptStartsTheRecordOver) {
  Feed f;
  f.open(3);
  f.read(3, 4096);
  PosixRecord r;
  r.file = 0;
  f.eng.adopt(r);
  f.read(3, 4096);
  const auto& rec = f.rec();
  EXPECT_EQ(rec.counters[POSIX_READS], 1);
  EXPECT_EQ(rec.counters[POSIX_SEQ_READS], 0);
  EXPECT_EQ(rec.counters[POSIX_MAX_BYTE_READ], 4095);
  EXPECT_EQ(rec.counters[POSIX_ACCESS1_ACCESS], 4096);
  EXPECT_EQ(rec.counters[POSIX_ACCESS1_COUNT], 1);
}

TEST(Counters, NamesMatchDarshan) {
  EXPECT_STREQ(kPosixCounterNames[POSIX_OPENS], "POSIX_OPENS");
  EXPECT_STREQ(kPosixCounterNames[POSIX_SLOWEST_RANK_BYTES], "POSIX_SLOWEST_RANK_BYTES");
  EXPECT_STREQ(kPosixFCounterNames[POSIX_F_VARIANCE_RANK_BYTES], "POSIX_F_VARIANCE_RANK_BYTES");
  EXPECT_STREQ(kStdioCounterNames[STDIO_SLOWEST_RANK_BYTES], "STDIO_SLOWEST_RANK_BYTES");
  EXPECT_EQ(POSIX_NUM_INDICES, 69);
  EXPECT_EQ(POSIX_F_NUM_INDICES, 17);
  EXPECT_EQ(STDIO_NUM_INDICES, 14);
  EXPECT_EQ(STDIO_F_NUM_INDICES, 15);
}

// ---- the one function table (runtime/functions.h) ------------------------------

#include "analysis/model.h"
#include "runtime/functions.h"

namespace {

namespace rt = strata::runtime;
namespace an = strata::analysis;

// The analyzer classifies every function of the table, and every alias, as
// the table says (the runtime's profile mode reads the same rows).
TEST(FunctionTable, ClassifyFollowsTheTable) {
  for (uint32_t i = 1; i < rt::kNumFns; ++i) {
    const rt::FnInfo& f = rt::kFnInfo[i];
    an::FuncInfo c = an::classify(f.name, rt::layer_name(f.layer));
    EXPECT_EQ(static_cast<uint32_t>(c.layer), static_cast<uint32_t>(f.layer)) << f.name;
    EXPECT_EQ(c.op, f.op) << f.name;
    EXPECT_EQ(c.positional, f.positional) << f.name;
    EXPECT_EQ(c.data, f.data) << f.name;
  }
  for (const auto& a : rt::kFnAliases) {
    const rt::FnInfo& f = rt::kFnInfo[static_cast<uint32_t>(a.fn)];
    an::FuncInfo c = an::classify(a.name, f.layer == rt::Layer::PROC ? "POSIX" : rt::layer_name(f.layer));
    EXPECT_EQ(c.op, f.op) << a.name;
    EXPECT_EQ(c.positional, f.positional) << a.name;
  }
  // The cases the copies used to disagree on, and DFTracer's spellings.
  EXPECT_EQ(an::classify("fcntl", "POSIX").op, strata::counters::Op::kDup);
  EXPECT_EQ(an::classify("fileno", "POSIX").op, strata::counters::Op::kFileno);
  EXPECT_EQ(an::classify("rename.target", "POSIX").op, strata::counters::Op::kRenameDst);
  EXPECT_EQ(an::classify("__xstat64", "POSIX").op, strata::counters::Op::kStat);
  EXPECT_EQ(an::classify("__pread64_chk", "sys").op, strata::counters::Op::kRead);
  EXPECT_TRUE(an::classify("__pread64_chk", "sys").positional);
  EXPECT_EQ(an::classify("fread_unlocked", "STDIO").op, strata::counters::Op::kRead);
  EXPECT_TRUE(an::classify("clone", "POSIX").is_fork);
  EXPECT_EQ(an::classify("clone", "POSIX").layer, an::Layer::kProc);
  EXPECT_EQ(an::classify("fopen", "POSIX").op, strata::counters::Op::kNone);  // not a POSIX call
  EXPECT_EQ(an::classify("read", "dataloader").layer, an::Layer::kApp);
}

}  // namespace
