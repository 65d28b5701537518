// Every intercepted POSIX/STDIO function, called a known number of times by
// programs/workload.c (built -O2 and -O2 -D_FORTIFY_SOURCE=2), run under the
// real `strata run`: the events on the workload's files are exactly the
// expected sequence, with sizes, offsets, return values and errno.
#include <set>

#include "harness.h"

using namespace core_test;

namespace {

constexpr int64_t X = INT64_MIN;  // not checked (or absent)

struct Row {
  const char* name;
  const char* path;  // relative to the work dir; "." = the work dir itself
  int64_t offset, size, ret, err;
  int64_t fd = X;
};

// The expected events on files under the work dir, in program order. Derived
// from programs/workload.c: sizes in bytes requested, ret in bytes (fread and
// fwrite: items x size), offsets tracked per descriptor (POSIX) or per stream
// (STDIO), explicit for the p* calls; lseek/fseek carry the requested offset.
std::vector<Row> expected_rows() {
  return {
      // 1. writing data.bin
      {"creat", "data.bin", X, X, X, 0},
      {"write", "data.bin", 0, 4096, 4096, 0},
      {"write", "data.bin", 4096, 4096, 4096, 0},
      {"write", "data.bin", 8192, 4096, 4096, 0},
      {"write", "data.bin", 12288, 4096, 4096, 0},
      {"pwrite", "data.bin", 16384, 100, 100, 0},
      {"pwrite64", "data.bin", 16484, 200, 200, 0},
      {"writev", "data.bin", 16384, 60, 60, 0},
      {"pwritev", "data.bin", 20000, 30, 30, 0},
      {"pwritev64", "data.bin", 20030, 60, 60, 0},
      {"pwritev2", "data.bin", 20090, 10, 10, 0},
      {"fsync", "data.bin", X, X, 0, 0},
      {"fdatasync", "data.bin", X, X, 0, 0},
      {"fdatasync", "data.bin", X, X, 0, 0},
      {"sync_file_range", "data.bin", 0, 4096, 0, 0},
      {"ftruncate", "data.bin", X, 24576, 0, 0},
      {"ftruncate64", "data.bin", X, 32768, 0, 0},
      {"fallocate", "data.bin", 32768, 4096, 0, 0},
      {"fallocate64", "data.bin", 36864, 4096, 0, 0},
      {"posix_fallocate", "data.bin", 40960, 4096, 0, 0},
      {"posix_fallocate64", "data.bin", 45056, 4096, 0, 0},
      {"fstat", "data.bin", X, X, 0, 0},
      {"close", "data.bin", X, X, 0, 0},
      // 2. reading it back
      {"open", "data.bin", X, X, X, 0},
      {"read", "data.bin", 0, 1000, 1000, 0},
      {"read", "data.bin", 1000, 1000, 1000, 0},
      {"read", "data.bin", 2000, 1000, 1000, 0},
      {"lseek", "data.bin", 10000, X, 10000, 0},
      {"read", "data.bin", 10000, 500, 500, 0},
      {"lseek", "data.bin", 0, X, 49152, 0},
      {"read", "data.bin", 49152, 100, 0, 0},
      {"lseek64", "data.bin", -152, X, 49000, 0},
      {"read", "data.bin", 49000, 1000, 152, 0},
      {"pread", "data.bin", 4096, 4096, 4096, 0},
      {"pread", "data.bin", 8192, 4096, 4096, 0},
      {"pread", "data.bin", 47104, 4096, 2048, 0},
      {"pread64", "data.bin", 0, 8192, 8192, 0},
      {"pread64", "data.bin", 0, 8192, 8192, 0},
      {"lseek", "data.bin", 0, X, 0, 0},
      {"readv", "data.bin", 0, 300, 300, 0},
      {"readv", "data.bin", 300, 300, 300, 0},
      {"preadv", "data.bin", 1000, 300, 300, 0},
      {"preadv64", "data.bin", 2000, 100, 100, 0},
      {"preadv2", "data.bin", 49000, 300, 152, 0},
      {"lseek64", "data.bin", 0, X, 600, 0},
      {"fstat64", "data.bin", X, X, 0, 0},
      {"close", "data.bin", X, X, 0, 0},
      // 3. other opens, failures, duplication
      {"open64", "data.bin", X, X, X, 0},
      {"openat", "data.bin", X, X, X, 0},
      {"open", ".", X, X, X, 0},
      {"openat", "data.bin", X, X, X, 0},
      {"openat64", "data.bin", X, X, X, 0},
      {"creat64", "c64.bin", X, X, X, 0},
      {"open", "missing.bin", X, X, -1, ENOENT, -1},
      {"open", "data.bin", X, X, -1, EEXIST, -1},
      {"dup", "data.bin", X, X, X, 0},
      {"dup2", "data.bin", X, X, 100, 0},
      {"dup3", "data.bin", X, X, 101, 0},
      {"fcntl", "data.bin", X, X, 200, 0},
      {"read", "data.bin", 0, 10, 10, 0, 200},
      {"close", "data.bin", X, X, 0, 0},
      {"close", "data.bin", X, X, 0, 0, 100},
      {"close", "data.bin", X, X, 0, 0, 101},
      {"close", "data.bin", X, X, 0, 0, 200},
      {"close", "data.bin", X, X, 0, 0},
      {"close", "data.bin", X, X, 0, 0},
      {"close", "data.bin", X, X, 0, 0},
      {"close", "c64.bin", X, X, 0, 0},
      {"close", "data.bin", X, X, 0, 0},
      // 4. metadata
      {"stat", "data.bin", X, X, 0, 0},
      {"stat", "missing.bin", X, X, -1, ENOENT},
      {"stat64", "data.bin", X, X, 0, 0},
      {"lstat", "data.bin", X, X, 0, 0},
      {"lstat64", "data.bin", X, X, 0, 0},
      {"fstatat", "data.bin", X, X, 0, 0},
      {"fstatat64", "data.bin", X, X, 0, 0},
      {"statx", "data.bin", X, X, 0, 0},
      {"access", "data.bin", X, X, 0, 0},
      {"access", "missing.bin", X, X, -1, ENOENT},
      {"faccessat", "data.bin", X, X, 0, 0},
      // 5. directories
      {"mkdir", "sub", X, X, 0, 0},
      {"mkdir", "sub", X, X, -1, EEXIST},
      {"mkdirat", "sub2", X, X, 0, 0},
      {"openat", "sub/f1", X, X, X, 0},
      {"close", "sub/f1", X, X, 0, 0},
      {"openat", "sub/f2", X, X, X, 0},
      {"close", "sub/f2", X, X, 0, 0},
      {"openat", "sub/f3", X, X, X, 0},
      {"close", "sub/f3", X, X, 0, 0},
      {"opendir", "sub", X, X, X, 0},
      {"readdir", "sub", X, X, 1, 0},
      {"readdir", "sub", X, X, 1, 0},
      {"readdir", "sub", X, X, 1, 0},
      {"readdir", "sub", X, X, 1, 0},
      {"readdir", "sub", X, X, 1, 0},
      {"readdir", "sub", X, X, 0, 0},
      {"closedir", "sub", X, X, 0, 0},
      {"open", "sub2", X, X, X, 0},
      {"fdopendir", "sub2", X, X, X, 0},
      {"readdir64", "sub2", X, X, 1, 0},
      {"readdir64", "sub2", X, X, 1, 0},
      {"readdir64", "sub2", X, X, 0, 0},
      {"closedir", "sub2", X, X, 0, 0},
      {"opendir", "nodir", X, X, -1, ENOENT, -1},
      // a successful rename is followed by "rename.target" naming the target
      // (offset column: the source's string id)
      {"rename", "sub/f1", X, X, 0, 0},
      {"rename.target", "sub/g1", X, X, 0, 0},
      {"renameat", "sub/f2", X, X, 0, 0},
      {"rename.target", "sub/g2", X, X, 0, 0},
      {"renameat2", "sub/f3", X, X, 0, 0},
      {"rename.target", "sub/g3", X, X, 0, 0},
      {"unlink", "sub/g1", X, X, 0, 0},
      {"unlinkat", "sub/g2", X, X, 0, 0},
      {"unlinkat", "sub/g3", X, X, 0, 0},
      {"unlinkat", "sub2", X, X, 0, 0},
      {"rmdir", "sub", X, X, 0, 0},
      {"rmdir", "sub", X, X, -1, ENOENT},
      {"close", ".", X, X, 0, 0},
      // 6. mappings
      {"open", "data.bin", X, X, X, 0},
      {"mmap", "data.bin", 4096, 8192, 0, 0},
      {"msync", "data.bin", X, 8192, 0, 0},
      {"munmap", "data.bin", X, 8192, 0, 0},
      {"mmap64", "data.bin", 0, 4096, 0, 0},
      {"munmap", "data.bin", X, 4096, 0, 0},
      // 7. copies: a read of the input file, then the bytes written to the
      // output at its offset (which the kernel moves: 0, 3000, 5000)
      {"open", "copy.bin", X, X, X, 0},
      {"sendfile", "data.bin", 1000, 3000, 3000, 0},
      {"sendfile.out", "copy.bin", 0, 3000, 3000, 0},
      {"sendfile64", "data.bin", 0, 2000, 2000, 0},
      {"sendfile.out", "copy.bin", 3000, 2000, 2000, 0},
      {"copy_file_range", "data.bin", 2000, 5000, 5000, 0},
      {"copy_file_range.out", "copy.bin", 5000, 5000, 5000, 0},
      {"close", "copy.bin", X, X, 0, 0},
      {"close", "data.bin", X, X, 0, 0},
      // 8. STDIO writes
      {"fopen", "text.txt", X, X, X, 0},
      {"fputs", "text.txt", 0, 6, 6, 0},
      {"fputs", "text.txt", 6, 5, 5, 0},
      {"fprintf", "text.txt", 11, X, 9, 0},
      {"vfprintf", "text.txt", 20, X, 8, 0},
      {"fwrite", "text.txt", 28, 8, 8, 0},
      {"fwrite", "text.txt", 36, 5, 5, 0},
      {"fflush", "text.txt", X, X, 0, 0},
      {"fprintf", "text.txt", 41, X, 6, 0},
      {"fclose", "text.txt", X, X, 0, 0},
      // 9. STDIO reads and positioning
      {"fopen64", "text.txt", X, X, X, 0},
      {"fgets", "text.txt", 0, 64, 6, 0},
      {"fgets", "text.txt", 6, 64, 5, 0},
      {"fgets", "text.txt", 11, 64, 9, 0},
      {"getline", "text.txt", 20, X, 8, 0},
      {"getline", "text.txt", 28, X, 8, 0},
      {"getdelim", "text.txt", 36, X, 5, 0},
      {"ftell", "text.txt", X, X, 41, 0},
      {"fseek", "text.txt", 6, X, 0, 0},
      {"fread", "text.txt", 6, 5, 5, 0},
      {"ftello", "text.txt", X, X, 11, 0},
      {"fseeko", "text.txt", 41, X, 0, 0},  // SEEK_END -6 of 47 bytes: the position after the call
      {"fread", "text.txt", 41, 20, 6, 0},
      {"rewind", "text.txt", 0, X, 0, 0},
      {"fread", "text.txt", 0, 47, 47, 0},
      {"fgets", "text.txt", 47, 64, 0, 0},
      {"fseeko64", "text.txt", 0, X, 0, 0},
      {"ftello64", "text.txt", X, X, 0, 0},
      {"ftell", "text.txt", X, X, 0, 0},
      {"fclose", "text.txt", X, X, 0, 0},
      // 10. fdopen at a descriptor position, freopen
      {"open", "data.bin", X, X, X, 0},
      {"lseek", "data.bin", 100, X, 100, 0},
      {"fdopen", "data.bin", X, X, X, 0},
      {"fread", "data.bin", 100, 50, 50, 0},
      {"freopen", "text.txt", X, X, X, 0},
      {"fgets", "text.txt", 0, 64, 6, 0},
      {"freopen64", "data.bin", X, X, X, 0},
      {"fclose", "data.bin", X, X, 0, 0},
      {"fopen", "append.txt", X, X, X, 0},
      {"fprintf", "append.txt", 0, X, 4, 0},
      {"fflush", "append.txt", X, X, 0, 0},
      {"fclose", "append.txt", X, X, 0, 0},
  };
}

const std::set<std::string> kStdio = {"fopen", "fopen64", "fdopen", "freopen", "freopen64", "fclose",
                                      "fread", "fwrite", "fgets", "fputs", "getline", "getdelim",
                                      "fseek", "fseeko", "fseeko64", "ftell", "ftello", "ftello64",
                                      "rewind", "fflush", "fprintf", "vfprintf"};

struct WorkloadRun {
  std::unique_ptr<TempDir> tmp;
  std::string work, trace;
  RunResult result;
  std::vector<Event> all;     // every event of the trace
  std::vector<Event> mine;    // events on files under the work dir
  Info info;
};

const WorkloadRun& workload(const std::string& variant) {
  static std::map<std::string, std::unique_ptr<WorkloadRun>> cache;
  auto& slot = cache[variant];
  if (slot) return *slot;
  slot = std::make_unique<WorkloadRun>();
  WorkloadRun& w = *slot;
  w.tmp = std::make_unique<TempDir>();
  w.work = w.tmp->mkdir("work");
  w.trace = w.tmp->sub("trace");
  std::string exe = variant == "fortify" ? WORKLOAD_FORTIFY : WORKLOAD_O2;
  w.result = strata_run(w.trace, {exe, w.work});
  w.all = cat_trace(w.trace);
  w.mine = select(w.all, [&](const Event& e) { return e.has_path && under(e.path, w.work); });
  w.info = info_trace(w.trace);
  return w;
}

class Workload : public ::testing::TestWithParam<std::string> {
 protected:
  const WorkloadRun& w() { return workload(GetParam()); }
  std::string abs(const char* rel) const {
    const auto& r = workload(GetParam());
    return std::string(rel) == "." ? r.work : r.work + "/" + rel;
  }
};

TEST_P(Workload, RunsCleanly) {
  EXPECT_EQ(w().result.code, 0) << w().result.err;
  EXPECT_EQ(w().result.err.find("workload:"), std::string::npos) << w().result.err;
  EXPECT_EQ(w().info.processes, 1);
  EXPECT_EQ(w().info.dropped, 0);
  EXPECT_EQ(w().info.incomplete_files, 0);
  EXPECT_EQ(w().info.events, static_cast<int64_t>(w().all.size())) << "info and cat disagree on the event count";
}

// The events on the work dir's files are exactly the expected sequence. The
// three line reads (getline x2, getdelim) may be named getdelim: glibc's
// bits/stdio.h inlines getline() into __getdelim() at -O1 and above.
TEST_P(Workload, ExactEventSequence) {
  auto rows = expected_rows();
  const auto& got = w().mine;
  auto same_name = [](const Row& r, const Event& e) {
    return e.name == r.name || (std::string(r.name) == "getline" && e.name == "getdelim");
  };
  // Align expected rows and recorded events by name and path (longest common
  // subsequence), so one missing event is reported once, not as a cascade.
  const size_t n = rows.size(), m = got.size();
  std::vector<std::vector<int>> lcs(n + 1, std::vector<int>(m + 1, 0));
  for (size_t i = n; i-- > 0;)
    for (size_t j = m; j-- > 0;)
      lcs[i][j] = same_name(rows[i], got[j]) && got[j].path == abs(rows[i].path)
                      ? lcs[i + 1][j + 1] + 1
                      : std::max(lcs[i + 1][j], lcs[i][j + 1]);
  size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && same_name(rows[i], got[j]) && got[j].path == abs(rows[i].path)) {
      const Row& r = rows[i];
      const Event& e = got[j];
      SCOPED_TRACE("expected #" + std::to_string(i) + " " + r.name + " " + r.path + ", got " + describe(e));
      EXPECT_EQ(e.cat, kStdio.count(r.name) ? "STDIO" : "POSIX");
      EXPECT_EQ(e.pid, e.tid);
      if (r.offset != X) {
        EXPECT_TRUE(e.has_offset);
        EXPECT_EQ(e.offset, r.offset);
      }
      if (r.size != X) {
        EXPECT_TRUE(e.has_size);
        EXPECT_EQ(e.size, r.size);
      }
      if (r.ret != X) {
        EXPECT_TRUE(e.has_ret);
        EXPECT_EQ(e.ret, r.ret);
      }
      EXPECT_EQ(e.err, r.err);
      EXPECT_EQ(e.has_errno, r.err != 0) << "errno is printed only when nonzero";
      if (r.fd != X) { EXPECT_EQ(e.fd, r.fd); }
      std::string nm = r.name;
      if ((nm.rfind("open", 0) == 0 || nm.rfind("creat", 0) == 0 || nm.rfind("fopen", 0) == 0) && r.err == 0) {
        EXPECT_EQ(e.fd, e.ret) << "open-like calls carry the new descriptor as fd and ret";
      }
      EXPECT_GE(e.dur, 0);
      ++i;
      ++j;
    } else if (j < m && (i == n || lcs[i][j + 1] >= lcs[i + 1][j])) {
      ADD_FAILURE() << "unexpected event (after expected #" << i << "): " << describe(got[j]);
      ++j;
    } else {
      ADD_FAILURE() << "missing event: expected #" << i << " " << rows[i].name << " " << rows[i].path
                    << " offset=" << rows[i].offset << " size=" << rows[i].size << " ret=" << rows[i].ret;
      ++i;
    }
  }
  EXPECT_EQ(got.size(), rows.size());
}

// Per-name counts restricted to the work dir, and `info` by_name agreeing
// with `cat` over the whole trace.
TEST_P(Workload, CountsByName) {
  std::map<std::string, int64_t> want;
  for (auto& r : expected_rows()) ++want[r.name];
  auto got = count_by_name(w().mine);
  // getline may be recorded as getdelim (see ExactEventSequence).
  int64_t lines_want = want["getline"] + want["getdelim"];
  int64_t lines_got = got["getline"] + got["getdelim"];
  EXPECT_EQ(lines_got, lines_want) << "getline + getdelim";
  want.erase("getline");
  want.erase("getdelim");
  got.erase("getline");
  got.erase("getdelim");
  EXPECT_EQ(got, want);

  auto all = count_by_name(w().all);
  EXPECT_EQ(w().info.by_name, all) << "info --json by_name must count what cat prints";
  for (auto& [name, n] : want) EXPECT_GE(w().info.by_name.count(name) ? w().info.by_name.at(name) : 0, n) << name;
  int64_t cats = 0;
  for (auto& [c, n] : w().info.by_category) cats += n;
  EXPECT_EQ(cats, w().info.events);
}

// Every function of the brief's list appears at least once.
TEST_P(Workload, EveryInterceptedFunctionSeen) {
  std::set<std::string> names;
  for (auto& e : w().mine) names.insert(e.name);
  for (const char* f :
       {"open", "open64", "openat", "openat64", "creat", "creat64", "close", "read", "write", "pread", "pread64",
        "pwrite", "pwrite64", "readv", "writev", "preadv", "preadv64", "pwritev", "pwritev64", "preadv2",
        "pwritev2", "lseek", "lseek64", "fsync", "fdatasync", "sync_file_range", "ftruncate", "ftruncate64",
        "fallocate", "fallocate64", "posix_fallocate", "posix_fallocate64", "stat", "stat64", "lstat", "lstat64",
        "fstat", "fstat64", "fstatat", "fstatat64", "statx", "access", "faccessat", "mkdir", "mkdirat", "rmdir",
        "unlink", "unlinkat", "rename", "renameat", "renameat2", "opendir", "fdopendir", "readdir", "readdir64",
        "closedir", "mmap", "mmap64", "munmap", "msync", "dup", "dup2", "dup3", "fcntl", "sendfile", "sendfile64",
        "copy_file_range", "fopen", "fopen64", "fdopen", "freopen", "freopen64", "fclose", "fread", "fwrite",
        "fgets", "fputs", "getdelim", "fseek", "fseeko", "fseeko64", "ftell", "ftello", "ftello64", "rewind",
        "fflush", "fprintf", "vfprintf"})
    EXPECT_TRUE(names.count(f)) << f << " never recorded";
}

TEST_P(Workload, FailurePathsCarryErrno) {
  const auto& all = w().all;
  auto failed = [&](const std::string& name, const std::string& rel, int err) {
    return count_if(all, [&](const Event& e) {
      return e.name == name && e.path == abs(rel.c_str()) && e.ret == -1 && e.err == err;
    });
  };
  EXPECT_EQ(failed("open", "missing.bin", ENOENT), 1);
  EXPECT_EQ(failed("open", "data.bin", EEXIST), 1);
  EXPECT_EQ(failed("stat", "missing.bin", ENOENT), 1);
  EXPECT_EQ(failed("access", "missing.bin", ENOENT), 1);
  EXPECT_EQ(failed("mkdir", "sub", EEXIST), 1);
  EXPECT_EQ(failed("rmdir", "sub", ENOENT), 1);
  EXPECT_EQ(failed("opendir", "nodir", ENOENT), 1);
  // No successful event carries an errno.
  for (auto& e : all)
    if (e.has_errno) { EXPECT_EQ(e.ret, -1) << describe(e); }
}

// read(987) on a descriptor that is not open fails with EBADF; the failed
// call is recorded (no path: the descriptor names no file).
TEST_P(Workload, ReadOnBadDescriptorIsRecordedWithEbadf) {
  int64_t pid = w().mine.empty() ? 0 : w().mine.front().pid;
  auto bad = select(w().all, [&](const Event& e) { return e.name == "read" && e.fd == 987; });
  ASSERT_EQ(bad.size(), 1u) << "read(987, ...) -> EBADF was not recorded";
  EXPECT_EQ(bad[0].pid, pid);
  EXPECT_EQ(bad[0].ret, -1);
  EXPECT_EQ(bad[0].err, EBADF);
  EXPECT_EQ(bad[0].size, 10);
}

// The workload ends with exit(0): one PROC event with ret 0, the last of its thread.
TEST_P(Workload, ExitIsRecordedLast) {
  ASSERT_FALSE(w().all.empty());
  int64_t pid = w().mine.empty() ? 0 : w().mine.front().pid;
  auto exits = select(w().all, [&](const Event& e) { return e.name == "exit" && e.pid == pid; });
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].cat, "PROC");
  EXPECT_EQ(exits[0].ret, 0);
  for (auto& e : w().all)
    if (e.pid == pid && e.tid == pid) { EXPECT_LE(e.ts, exits[0].ts) << describe(e); }
}

// No recorded name is a fortified entry point: they are recorded under the
// base name. For the fortified build, check it really calls them.
TEST_P(Workload, FortifiedEntryPointsUseBaseNames) {
  for (auto& e : w().all) {
    EXPECT_EQ(e.name.find("_chk"), std::string::npos) << describe(e);
    EXPECT_NE(e.name.rfind("__", 0), 0u) << describe(e);
  }
  if (GetParam() != "fortify") return;
  RunResult nm = run({"nm", "-D", "--undefined-only", WORKLOAD_FORTIFY});
  if (nm.code != 0) GTEST_SKIP() << "nm not available";
  for (const char* sym : {"__read_chk", "__pread_chk", "__pread64_chk", "__fread_chk", "__fgets_chk",
                          "__fprintf_chk", "__vfprintf_chk", "__open_2", "__openat_2"})
    EXPECT_NE(nm.out.find(std::string(sym) + "@"), std::string::npos) << "fortified build does not call " << sym;
}

// Nothing of the trace dir, /proc, /sys or /dev is recorded.
TEST_P(Workload, DefaultExclusions) {
  for (auto& e : w().all) {
    if (!e.has_path) continue;
    EXPECT_FALSE(under(e.path, w().trace)) << describe(e);
    EXPECT_FALSE(under(e.path, "/proc") || under(e.path, "/sys") || under(e.path, "/dev")) << describe(e);
    EXPECT_EQ(e.path.front(), '/') << describe(e);
    EXPECT_EQ(e.path.find("//"), std::string::npos) << describe(e);
    EXPECT_EQ(e.path.find("/./"), std::string::npos) << describe(e);
  }
}

INSTANTIATE_TEST_SUITE_P(Builds, Workload, ::testing::Values("O2", "fortify"));

}  // namespace
