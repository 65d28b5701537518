// DFTracer samples: exact counts read from the files by hand (see the
// comments) and the analyzer's view of them.
#include <gtest/gtest.h>

#include <sstream>

#include "analysis/analyze.h"

using namespace strata::analysis;
using namespace strata::counters;

namespace {
const std::string kSamples = STRATA_SAMPLES_DIR;
const std::string kProbe = kSamples + "/probe-probe-4989-preload.pfw";
const std::string kBench = kSamples + "/bench-bench-5032-preload.pfw.gz";
const std::string kData = "/scratch/bench/data/file64m.bin";

Job load(const std::string& path) {
  AnalyzeOptions o;
  o.input = path;
  return analyze_job(o);
}
const ProcResult* proc(const Job& j, int64_t pid) {
  for (auto& p : j.procs)
    if (p.meta.pid == pid) return &p;
  return nullptr;
}
}  // namespace

// probe: 16 events besides metadata: access, open x3, read, lseek, close x3,
// fopen, fread, fclose, pread x2, fork x2. tid 4991 is a forked child (its
// fork returns 0), written by DFTracer under the parent's pid.
TEST(Pfw, ProbeCounts) {
  Job j = load(kProbe);
  EXPECT_TRUE(j.sizes_known);
  EXPECT_EQ(j.events, 16u);
  EXPECT_EQ(j.funcs.at("POSIX/POSIX/open").count, 3u);
  EXPECT_EQ(j.funcs.at("POSIX/POSIX/close").count, 3u);
  EXPECT_EQ(j.funcs.at("POSIX/POSIX/pread").count, 2u);
  EXPECT_EQ(j.funcs.at("POSIX/POSIX/pread").total_ns, 4000);
  EXPECT_EQ(j.funcs.at("POSIX/POSIX/pread").bytes, 128);
  EXPECT_EQ(j.funcs.at("STDIO/STDIO/fread").bytes, 64);
  EXPECT_EQ(j.funcs.at("PROC/POSIX/fork").count, 2u);
  ASSERT_EQ(j.procs.size(), 2u);
  const ProcResult* parent = proc(j, 4989);
  const ProcResult* child = proc(j, 4991);
  ASSERT_TRUE(parent && child);
  EXPECT_EQ(parent->events, 12u);
  EXPECT_EQ(parent->threads, 2u);
  EXPECT_EQ(parent->meta.host, "vm");
  EXPECT_EQ(parent->meta.cmdline, "./probe /scratch/bench/data/file64m.bin");
  EXPECT_EQ(parent->meta.ppid, 4978);
  ASSERT_EQ(parent->children.size(), 1u);
  EXPECT_EQ(parent->children[0], 4991);
  EXPECT_EQ(child->events, 4u);
  EXPECT_EQ(child->meta.ppid, 4989);
  EXPECT_EQ(parent->bytes_read, 192);  // read 64 + fread 64 + pread 64
  EXPECT_EQ(child->bytes_read, 64);

  ASSERT_EQ(parent->posix.size(), 1u);
  EXPECT_EQ(parent->posix[0].first, kData);
  const auto& c = parent->posix[0].second.counters;
  EXPECT_EQ(c[POSIX_OPENS], 2);
  EXPECT_EQ(c[POSIX_READS], 2);
  EXPECT_EQ(c[POSIX_SEEKS], 1);
  EXPECT_EQ(c[POSIX_BYTES_READ], 128);
  EXPECT_EQ(c[POSIX_MAX_BYTE_READ], 63);
  EXPECT_EQ(c[POSIX_SEQ_READS], 0);
  EXPECT_EQ(c[POSIX_CONSEC_READS], 0);
  EXPECT_EQ(c[POSIX_SIZE_READ_0_100], 2);
  EXPECT_EQ(c[POSIX_ACCESS1_ACCESS], 64);
  EXPECT_EQ(c[POSIX_ACCESS1_COUNT], 2);
  ASSERT_EQ(parent->stdio.size(), 1u);
  EXPECT_EQ(parent->stdio[0].second.counters[STDIO_OPENS], 1);
  EXPECT_EQ(parent->stdio[0].second.counters[STDIO_READS], 1);
  EXPECT_EQ(parent->stdio[0].second.counters[STDIO_BYTES_READ], 64);
  ASSERT_EQ(child->posix.size(), 1u);
  EXPECT_EQ(child->posix[0].second.counters[POSIX_OPENS], 1);
  EXPECT_EQ(child->posix[0].second.counters[POSIX_BYTES_READ], 64);

  const FileAgg& f = j.files.at(kData);
  EXPECT_EQ(f.reads, 4u);
  EXPECT_EQ(f.bytes_read, 256);
  EXPECT_EQ(f.extent, 64);
  FileVerdict v = classify_file(f, j);
  EXPECT_TRUE(v.shared);
  EXPECT_EQ(v.nprocs, 2u);
  EXPECT_EQ(v.access, "read-only");
  EXPECT_EQ(v.read_extent, "whole");
  EXPECT_DOUBLE_EQ(v.reread, 4.0);
}

// bench: no arguments at all: 3 opens, 16,404 preads, 3 closes; durations
// sum to 14,760 us for the preads. Sizes unknown, never reported as zeros.
TEST(Pfw, BenchWithoutArgumentsHasNoSizes) {
  Job j = load(kBench);
  EXPECT_FALSE(j.sizes_known);
  EXPECT_EQ(j.events, 16410u);
  EXPECT_EQ(j.funcs.at("POSIX/POSIX/pread").count, 16404u);
  EXPECT_EQ(j.funcs.at("POSIX/POSIX/pread").total_ns, 14760000);
  EXPECT_EQ(j.funcs.at("POSIX/POSIX/open").count, 3u);
  EXPECT_EQ(j.funcs.at("POSIX/POSIX/close").count, 3u);
  ASSERT_EQ(j.procs.size(), 1u);
  EXPECT_EQ(j.procs[0].meta.pid, 5032);
  ASSERT_FALSE(j.warnings.empty());
  EXPECT_NE(j.warnings[0].find("sizes unknown"), std::string::npos);

  AnalyzeOptions o;
  o.input = kBench;
  std::ostringstream out, err;
  ASSERT_EQ(run_analyze(o, out, err), 0) << err.str();
  EXPECT_NE(out.str().find("bytes read/written: unknown"), std::string::npos);
  EXPECT_EQ(out.str().find("bytes read 0"), std::string::npos);
  o.json = true;
  std::ostringstream js;
  ASSERT_EQ(run_analyze(o, js, err), 0);
  EXPECT_NE(js.str().find("\"sizes_known\": false"), std::string::npos);
  EXPECT_NE(js.str().find("\"bytes_read\": -1"), std::string::npos);
}

TEST(Pfw, DirectoryOfFiles) {
  Job j = load(kSamples);
  EXPECT_EQ(j.units.size(), 2u);
  EXPECT_EQ(j.events, 16426u);
  EXPECT_FALSE(j.sizes_known);
  EXPECT_EQ(j.procs.size(), 3u);
}

TEST(Pfw, DarshanLayout) {
  AnalyzeOptions o;
  o.input = kProbe;
  o.darshan = true;
  std::ostringstream out, err;
  ASSERT_EQ(run_analyze(o, out, err), 0);
  const std::string s = out.str();
  EXPECT_NE(s.find("#<module>\t<rank>\t<record id>\t<counter>\t<value>\t<file name>\t<mount pt>\t<fs type>"),
            std::string::npos);
  // The probe and the child it forked both read the file; without MPI ranks
  // their records reduce into one of rank -1, as Darshan reduces shared files.
  EXPECT_NE(s.find("POSIX\t-1\t"), std::string::npos);
  EXPECT_NE(s.find("\tPOSIX_OPENS\t3\t" + kData + "\t"), std::string::npos);
  EXPECT_NE(s.find("\tPOSIX_BYTES_READ\t192\t" + kData + "\t"), std::string::npos);
  EXPECT_NE(s.find("\tSTDIO_BYTES_READ\t64\t" + kData + "\t"), std::string::npos);
  EXPECT_NE(s.find("\tPOSIX_F_READ_TIME\t0.000009\t" + kData), std::string::npos);
}
