// An MPI job under `strata run -- mpirun ...` (Open MPI; programs/mpi_io.c):
// it runs as without strata (exit status, output, files byte for byte), and
// `strata info` / `strata analyze` get its processes, the file-per-process /
// shared split and the bytes of every file and rank right. Skipped when the
// tests were built without MPI or mpirun is missing (scripts/install-deps.sh
// installs openmpi-bin and libopenmpi-dev).
#include "e2e_harness.h"

namespace {

using namespace e2e;

const std::string kMpiProgram = MPI_IO_PROGRAM;  // empty: built without MPI
const std::string kMpirun = MPIEXEC;

constexpr int kRanks = 4;
constexpr int64_t kChunk = 65536, kWrites = 4, kShared = 1 << 20;

#define SKIP_WITHOUT_MPI()                                                                          \
  do {                                                                                              \
    if (kMpiProgram.empty()) GTEST_SKIP() << "built without MPI (CMake found no MPI): not checked"; \
    if (access(kMpirun.c_str(), X_OK) != 0)                                                         \
      GTEST_SKIP() << "mpirun (" << kMpirun << ") is not installed: install openmpi-bin";          \
  } while (0)

std::vector<std::string> mpirun(const std::string& dir, const std::string& mode = "ok") {
  return {kMpirun, "--allow-run-as-root", "--oversubscribe", "-np", std::to_string(kRanks), kMpiProgram, dir, mode};
}

std::vector<std::string> traced(const std::string& trace, const std::vector<std::string>& cmd) {
  std::vector<std::string> argv = {kStrata, "run", "-o", trace, "--"};
  argv.insert(argv.end(), cmd.begin(), cmd.end());
  return argv;
}

// Open MPI writes its session files under TMPDIR: one of each test's own.
std::vector<std::string> env_for(const TempDir& t) { return {"TMPDIR=" + t.path()}; }

TEST(MpiE2E, FilePerProcessAndSharedFileBytes) {
  SKIP_WITHOUT_MPI();
  TempDir t;
  const std::string plain = t.mkdir("plain"), out = t.mkdir("out"), trace = t.sub("trace");
  RunResult p = run(mpirun(plain), 120, env_for(t));
  ASSERT_EQ(p.code, 0) << describe(p);
  RunResult r = run(traced(trace, mpirun(out)), 120, env_for(t));
  ASSERT_FALSE(r.timed_out) << describe(r);
  // As without strata: exit status, output, files.
  EXPECT_EQ(r.code, p.code) << describe(r);
  EXPECT_EQ(r.out, p.out);
  EXPECT_EQ(r.err.find("still running"), std::string::npos) << r.err;
  for (const char* f : {"rank0.dat", "rank1.dat", "rank2.dat", "rank3.dat", "shared.dat"})
    EXPECT_EQ(read_all(out + "/" + f), read_all(plain + "/" + f)) << f;

  // mpirun and the ranks (each rank is a fork of mpirun's that exec'd the
  // program: two images); nothing cut short, dropped or left running.
  RunResult info = run({kStrata, "info", trace, "--json"});
  ASSERT_EQ(info.code, 0) << describe(info);
  auto ij = parse_json(info.out);
  EXPECT_EQ(I(ij->root, "pids"), 1 + kRanks) << info.out;
  EXPECT_EQ(I(ij->root, "dropped"), 0);
  EXPECT_EQ(I(ij->root, "incomplete_files"), 0);
  EXPECT_TRUE(ij->root["cut_short"].is_null()) << info.out;
  EXPECT_EQ(ij->root["writing_pids"].get_array().size(), 0u) << info.out;

  auto j = analyze_json(trace);
  for (const std::string& w : strings(j->root, "warnings")) ADD_FAILURE() << "warning: " << w;
  EXPECT_EQ(I(j->root["summary"], "ranks"), kRanks);
  for (int rank = 0; rank < kRanks; ++rank) {
    auto fe = file_entry(*j, out + "/rank" + std::to_string(rank) + ".dat");
    const int64_t bytes = (rank + 1) * kChunk * kWrites;
    EXPECT_EQ(I(fe, "processes"), 1) << rank;
    EXPECT_FALSE(B(fe, "shared")) << rank;
    EXPECT_EQ(I(fe, "bytes_written"), bytes) << rank;
    EXPECT_EQ(I(fe, "bytes_read"), bytes) << rank;
    EXPECT_EQ(I(fe, "writes"), kWrites) << rank;
  }
  // Every rank opened the shared file (MPI_File_open is collective), though
  // collective buffering may leave the bytes to a few aggregator ranks.
  auto sh = file_entry(*j, out + "/shared.dat");
  EXPECT_TRUE(B(sh, "shared")) << j->text.substr(0, 2000);
  EXPECT_EQ(I(sh, "processes"), kRanks);
  EXPECT_EQ(I(sh, "opens"), kRanks);
  EXPECT_EQ(I(sh, "bytes_written"), kRanks * kShared);
  EXPECT_EQ(I(sh, "bytes_read"), kRanks * kShared);

  // Per rank (Darshan's records): each rank wrote and read its own file.
  Darshan d = analyze_darshan(trace);
  for (int rank = 0; rank < kRanks; ++rank) {
    auto recs = d.of("POSIX", out + "/rank" + std::to_string(rank) + ".dat");
    ASSERT_EQ(recs.size(), 1u) << rank;
    EXPECT_EQ(recs[0]->rank, rank);
    EXPECT_EQ(recs[0]->c.at("POSIX_BYTES_WRITTEN"), (rank + 1) * kChunk * kWrites);
    EXPECT_EQ(recs[0]->c.at("POSIX_OPENS"), 2);
  }

  RunResult txt = run({kStrata, "analyze", trace, "--path", out + "/"});
  ASSERT_EQ(txt.code, 0) << describe(txt);
  EXPECT_NE(txt.out.find("I/O strategy: 4 file(s) accessed by one process, 1 shared file(s)"), std::string::npos)
      << txt.out;
  // The whole job: Open MPI's configuration (read by every process) and
  // session files are environment files, not the job's file-per-process or
  // shared files.
  RunResult all = run({kStrata, "analyze", trace});
  ASSERT_EQ(all.code, 0) << describe(all);
  EXPECT_NE(all.out.find("I/O strategy: 4 file(s) accessed by one process, 1 shared file(s)"), std::string::npos)
      << all.out;
}

// A rank that calls MPI_Abort: strata returns mpirun's status, and the trace
// names the failed ranks without calling the run incomplete.
TEST(MpiE2E, AbortingRankEndsTheJobAsWithoutStrata) {
  SKIP_WITHOUT_MPI();
  TempDir t;
  const std::string plain = t.mkdir("plain"), out = t.mkdir("out"), trace = t.sub("trace");
  RunResult p = run(mpirun(plain, "abort"), 120, env_for(t));
  RunResult r = run(traced(trace, mpirun(out, "abort")), 120, env_for(t));
  ASSERT_FALSE(r.timed_out) << describe(r);
  EXPECT_EQ(p.code, 7) << describe(p);
  EXPECT_EQ(r.code, p.code) << describe(r);
  RunResult info = run({kStrata, "info", trace, "--json"});
  ASSERT_EQ(info.code, 0) << describe(info);
  auto ij = parse_json(info.out);
  EXPECT_EQ(I(ij->root, "dropped"), 0);
  EXPECT_EQ(ij->root["writing_pids"].get_array().size(), 0u) << info.out;
  auto j = analyze_json(trace);
  bool aborted = false;
  for (auto pr : j->root["processes"].get_array())
    if (I(pr, "rank") == 1 && I(pr, "exit_status") == 7) aborted = true;
  EXPECT_TRUE(aborted) << j->text.substr(0, 4000);
}

}  // namespace
