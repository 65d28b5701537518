// STDIO character, word, scanf and printf calls (Darshan 3.5's STDIO list and
// glibc's fortified and alias entry points), called a known number of times
// by programs/stdio_chars.c (built -O2 and -O2 -D_FORTIFY_SOURCE=2) under the
// real `strata run`: the events are exactly the expected sequence (bytes,
// tracked stream offsets, returns, errno), the program's files are the same
// as without strata, and `strata analyze --darshan` gives the same integer
// STDIO counters in trace and profile mode.
#include <algorithm>
#include <iterator>

#include "harness.h"
#include "../analysis/e2e_harness.h"

using namespace core_test;

namespace {

constexpr int64_t X = INT64_MIN;  // not checked

struct Row {
  const char* name;
  const char* file;
  int64_t offset, size, ret, err;
  int64_t fd = X;
};

// Derived from programs/stdio_chars.c, in program order. Offsets are the
// stream position strata tracks before the call; sizes the bytes asked (not
// recorded when not known up front: printf and scanf families); ret the bytes moved
// (0 at end of file, -1 on error). Fortified and alias entry points are
// recorded under their base names (__printf_chk -> printf, _IO_getc -> getc,
// __isoc99_vfscanf -> vfscanf); bits/stdio.h turns getchar()/putchar() into
// getc(stdin)/putc(c, stdout) at -O2.
std::vector<Row> expected_rows() {
  return {
      // 1. writes: 34 bytes
      {"fopen", "chars.txt", X, X, X, 0},
      {"fputc", "chars.txt", 0, 1, 1, 0},
      {"putc", "chars.txt", 1, 1, 1, 0},
      {"putw", "chars.txt", 2, 4, 4, 0},
      {"fputs", "chars.txt", 6, 6, 6, 0},
      {"fprintf", "chars.txt", 12, X, 7, 0},
      {"vfprintf", "chars.txt", 19, X, 4, 0},
      {"fwrite", "chars.txt", 23, 10, 10, 0},
      {"putc", "chars.txt", 33, 1, 1, 0},  // _IO_putc
      {"rewind", "chars.txt", 0, X, 0, 0},
      // 2. reads, pushed-back characters, scans
      {"fgetc", "chars.txt", 0, 1, 1, 0},
      {"getc", "chars.txt", 1, 1, 1, 0},
      {"getw", "chars.txt", 2, 4, 4, 0},
      {"fgets", "chars.txt", 6, 7, 6, 0},
      {"fscanf", "chars.txt", 12, X, 2, 0},  // fscanf (GNU)
      {"fscanf", "chars.txt", 14, X, 4, 0},  // __isoc99_fscanf
      {"fgetc", "chars.txt", 18, 1, 1, 0},
      {"ungetc", "chars.txt", 19, X, 18, 0},
      {"getc", "chars.txt", 18, 1, 1, 0},  // _IO_getc
      {"vfscanf", "chars.txt", 19, X, 3, 0},
      {"getc", "chars.txt", 22, 1, 1, 0},
      {"ungetc", "chars.txt", 23, X, 22, 0},
      {"fread", "chars.txt", 22, 4, 4, 0},
      {"ftell", "chars.txt", X, X, 26, 0},
      // 3. writing at the read position
      {"fsetpos", "chars.txt", 26, X, 0, 0},
      {"fwrite", "chars.txt", 26, 2, 2, 0},
      {"fflush", "chars.txt", X, X, 0, 0},
      {"fseek", "chars.txt", 28, X, 0, 0},
      {"vfscanf", "chars.txt", 28, X, 5, 0},  // __isoc99_vfscanf
      {"fsetpos64", "chars.txt", 28, X, 0, 0},
      {"fgetc", "chars.txt", 28, 1, 1, 0},
      // 4. the end of the file
      {"fseek", "chars.txt", 32, X, 0, 0},
      {"getw", "chars.txt", 32, 4, 2, 0},  // a cut word: 2 bytes consumed
      {"fgetc", "chars.txt", 34, 1, 0, 0},
      {"getc", "chars.txt", 34, 1, 0, 0},
      {"fclose", "chars.txt", X, X, 0, 0},
      {"fopen", "chars.txt", X, X, X, 0},
      {"fputc", "chars.txt", 0, 1, -1, EBADF},
      {"fclose", "chars.txt", X, X, 0, 0},
      // 5. streams on a shared description: a stream fdopen'ed on a dup
      // starts where the kernel is at its first use
      {"open", "chars.txt", X, X, X, 0},
      {"read", "chars.txt", 0, 5, 5, 0},
      {"dup", "chars.txt", X, X, X, 0},
      {"fdopen", "chars.txt", X, X, X, 0},
      {"read", "chars.txt", 5, 3, 3, 0},
      {"fread", "chars.txt", 8, 4, 4, 0},
      {"fgetc", "chars.txt", 12, 1, 1, 0},
      {"fclose", "chars.txt", X, X, 0, 0},
      {"dup", "chars.txt", X, X, X, 0},
      {"fdopen", "chars.txt", X, X, X, 0},
      {"ftell", "chars.txt", X, X, 34, 0},
      {"fseek", "chars.txt", 2, X, 0, 0},
      {"getc", "chars.txt", 2, 1, 1, 0},
      {"fclose", "chars.txt", X, X, 0, 0},
      {"close", "chars.txt", X, X, 0, 0},
      // 6. stdin and stdout on files
      {"fopen", "in.txt", X, X, X, 0},
      {"fputs", "in.txt", 0, 3, 3, 0},
      {"fclose", "in.txt", X, X, 0, 0},
      {"freopen", "in.txt", X, X, 0, 0, 0},
      {"getchar", "in.txt", 0, 1, 1, 0, 0},
      {"getc", "in.txt", 1, 1, 1, 0, 0},  // getchar() at -O2
      {"freopen", "out.txt", X, X, 1, 0, 1},
      {"printf", "out.txt", 0, X, 4, 0, 1},
      {"vprintf", "out.txt", 4, X, 4, 0, 1},
      {"putchar", "out.txt", 8, 1, 1, 0, 1},
      {"putc", "out.txt", 9, 1, 1, 0, 1},  // putchar() at -O2
      {"puts", "out.txt", 10, 5, 5, 0, 1},
      {"fputs", "out.txt", 15, 5, 5, 0, 1},
      {"fflush", "out.txt", X, X, 0, 0, 1},
  };
}

const char* const kCharsTxt = "ABABCDhello\n12 345\nx:7\n012XY56789!";
const char* const kOutTxt = "p=1\nv-2\ncdline\ntail\n";

struct StdioRun {
  std::unique_ptr<TempDir> tmp;
  std::string work, trace;
  RunResult result;
  std::vector<Event> all, mine;
  Info info;
};

const StdioRun& stdio_run(const std::string& variant) {
  static std::map<std::string, std::unique_ptr<StdioRun>> cache;
  auto& slot = cache[variant];
  if (slot) return *slot;
  slot = std::make_unique<StdioRun>();
  StdioRun& w = *slot;
  w.tmp = std::make_unique<TempDir>();
  w.work = w.tmp->mkdir("work");
  w.trace = w.tmp->sub("trace");
  w.result = strata_run(w.trace, {variant == "fortify" ? STDIO_FORTIFY : STDIO_O2, w.work});
  w.all = cat_trace(w.trace);
  w.mine = select(w.all, [&](const Event& e) { return e.has_path && under(e.path, w.work); });
  w.info = info_trace(w.trace);
  return w;
}

class StdioChars : public ::testing::TestWithParam<std::string> {
 protected:
  const StdioRun& w() { return stdio_run(GetParam()); }
};

TEST_P(StdioChars, RunsCleanly) {
  EXPECT_EQ(w().result.code, 0) << w().result.err;
  EXPECT_EQ(w().result.err.find("stdio_chars:"), std::string::npos) << w().result.err;
  EXPECT_EQ(w().info.processes, 1);
  EXPECT_EQ(w().info.dropped, 0);
}

// The events on the work dir's files are exactly the expected sequence.
TEST_P(StdioChars, ExactEvents) {
  const auto rows = expected_rows();
  const auto& got = w().mine;
  std::string listing;
  for (auto& e : got) listing += "  " + describe(e) + "\n";
  ASSERT_EQ(got.size(), rows.size()) << "recorded:\n" << listing;
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    const Event& e = got[i];
    SCOPED_TRACE("expected #" + std::to_string(i) + " " + r.name + " " + r.file + ", got " + describe(e));
    EXPECT_EQ(e.name, r.name);
    const std::string name = r.name;
    const bool posix = name == "open" || name == "read" || name == "dup" || name == "close";
    EXPECT_EQ(e.cat, posix ? "POSIX" : "STDIO");
    EXPECT_EQ(e.path, w().work + "/" + r.file);
    if (r.offset != X) {
      EXPECT_TRUE(e.has_offset);
      EXPECT_EQ(e.offset, r.offset);
    }
    if (r.size != X) {
      EXPECT_EQ(e.size, r.size);
    }
    if (r.ret != X) {
      EXPECT_TRUE(e.has_ret);
      EXPECT_EQ(e.ret, r.ret);
    }
    EXPECT_EQ(e.err, r.err);
    if (r.fd != X) { EXPECT_EQ(e.fd, r.fd); }
  }
}

// Per function: calls and bytes moved (positive returns).
TEST_P(StdioChars, CountsAndBytesPerFunction) {
  std::map<std::string, std::pair<int64_t, int64_t>> want, got;
  for (auto& r : expected_rows()) {
    auto& [n, bytes] = want[r.name];
    ++n;
    if (r.ret > 0 && std::string(r.name).find("seek") == std::string::npos &&
        std::string(r.name) != "ftell" && std::string(r.name) != "ungetc" &&
        std::string(r.name).find("open") == std::string::npos && std::string(r.name) != "dup")
      bytes += r.ret;
  }
  for (auto& e : w().mine) {
    auto& [n, bytes] = got[e.name];
    ++n;
    if (e.ret > 0 && e.name.find("seek") == std::string::npos && e.name != "ftell" && e.name != "ungetc" &&
        e.name.find("open") == std::string::npos && e.name != "dup")
      bytes += e.ret;
  }
  EXPECT_EQ(got, want);
  EXPECT_EQ(got["getc"], std::make_pair(int64_t{6}, int64_t{5}));   // getc (twice), _IO_getc, getchar() at -O2, EOF
  EXPECT_EQ(got["putc"], std::make_pair(int64_t{3}, int64_t{3}));   // putc, _IO_putc, putchar() at -O2
  EXPECT_EQ(got["fscanf"], std::make_pair(int64_t{2}, int64_t{6}));
  EXPECT_EQ(got["vfscanf"], std::make_pair(int64_t{2}, int64_t{8}));
}

// After fputc/putw/ungetc/fscanf, the later fread and fwrite are recorded at
// the offsets the program itself observes (ftell 26 after the fread).
TEST_P(StdioChars, LaterOffsetsAreExact) {
  auto at = [&](const std::string& name, const std::string& file) {
    return select(w().mine, [&](const Event& e) { return e.name == name && e.path == w().work + "/" + file; });
  };
  auto freads = at("fread", "chars.txt");
  ASSERT_EQ(freads.size(), 2u);
  EXPECT_EQ(freads[0].offset, 22);
  EXPECT_EQ(freads[1].offset, 8);  // a stream on a dup: where the kernel was at its first use
  auto fwrites = at("fwrite", "chars.txt");
  ASSERT_EQ(fwrites.size(), 2u);
  EXPECT_EQ(fwrites[0].offset, 23);
  EXPECT_EQ(fwrites[1].offset, 26);
  auto ftells = at("ftell", "chars.txt");
  ASSERT_EQ(ftells.size(), 2u);
  EXPECT_EQ(ftells[0].ret, freads[0].offset + freads[0].ret);
  EXPECT_EQ(ftells[1].ret, 34);
}

// The program's files are the same with and without strata.
TEST_P(StdioChars, FilesUnchangedByTracing) {
  ASSERT_EQ(w().result.code, 0) << w().result.err;
  TempDir t;
  const std::string plain = t.mkdir("plain");
  RunResult r = run({GetParam() == "fortify" ? STDIO_FORTIFY : STDIO_O2, plain}, 60);
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* f : {"chars.txt", "in.txt", "out.txt"}) {
    EXPECT_EQ(read_text(w().work + "/" + f), read_text(plain + "/" + f)) << f;
  }
  EXPECT_EQ(read_text(plain + "/chars.txt"), kCharsTxt);
  EXPECT_EQ(read_text(plain + "/out.txt"), kOutTxt);
}

// The fortified build really calls the checked and alias entry points.
TEST_P(StdioChars, BuildCallsTheEntryPoints) {
  const bool fortify = GetParam() == "fortify";
  RunResult nm = run({"nm", "-D", "--undefined-only", fortify ? STDIO_FORTIFY : STDIO_O2});
  if (nm.code != 0) GTEST_SKIP() << "nm not available";
  std::vector<std::string> syms = {"fputc", "putc", "_IO_putc", "putchar", "puts", "putw", "fgetc", "getc",
                                   "_IO_getc", "getchar", "getw", "fscanf", "__isoc99_fscanf", "vfscanf",
                                   "__isoc99_vfscanf", "ungetc", "fsetpos", "fsetpos64", "vprintf"};
  for (const char* s : fortify ? std::vector<const char*>{"__printf_chk", "__fprintf_chk", "__vfprintf_chk",
                                                          "__fgets_chk", "__fread_chk"}
                               : std::vector<const char*>{"printf", "fprintf", "vfprintf", "fgets", "fread"})
    syms.push_back(s);
  for (auto& s : syms) EXPECT_NE(nm.out.find(" " + s + "@"), std::string::npos) << "does not call " << s;
}

INSTANTIATE_TEST_SUITE_P(Builds, StdioChars, ::testing::Values("o2", "fortify"));

// Trace mode (counters computed by `strata analyze` from the events) and
// profile mode (the runtime's counters): the same integer STDIO counters for
// the program's three files, with the known values. Timing counters and the
// *_TIME_SIZE counters (outcomes of timing) are not compared.
TEST(StdioProfile, TraceAndProfileSameIntegerCounters) {
  TempDir t;
  std::map<std::string, std::map<std::string, int64_t>> by_mode[2];
  int i = 0;
  for (const char* mode : {"trace", "profile"}) {
    const std::string work = t.mkdir(std::string("work-") + mode);
    const std::string trace = t.sub(std::string("trace-") + mode);
    RunResult rr = strata_run(trace, {STDIO_O2, work}, {"-q", "-m", mode});
    ASSERT_EQ(rr.code, 0) << mode << ": " << rr.err;
    e2e::Darshan d = e2e::analyze_darshan(trace);
    for (const char* f : {"chars.txt", "in.txt", "out.txt"}) {
      auto recs = d.of("STDIO", work + "/" + f);
      ASSERT_EQ(recs.size(), 1u) << mode << " " << f;
      for (auto& [k, v] : recs[0]->c)
        if (k.find("_TIME_SIZE") == std::string::npos) by_mode[i][f][k] = v;
    }
    auto& c = by_mode[i]["chars.txt"];
    EXPECT_EQ(c["STDIO_OPENS"], 4) << mode;
    EXPECT_EQ(c["STDIO_WRITES"], 9) << mode;
    EXPECT_EQ(c["STDIO_BYTES_WRITTEN"], 36) << mode;
    EXPECT_EQ(c["STDIO_READS"], 17) << mode;
    EXPECT_EQ(c["STDIO_BYTES_READ"], 42) << mode;
    EXPECT_EQ(c["STDIO_SEEKS"], 6) << mode;
    EXPECT_EQ(c["STDIO_FLUSHES"], 1) << mode;
    auto& in = by_mode[i]["in.txt"];
    EXPECT_EQ(in["STDIO_OPENS"], 2) << mode;
    EXPECT_EQ(in["STDIO_WRITES"], 1) << mode;
    EXPECT_EQ(in["STDIO_BYTES_WRITTEN"], 3) << mode;
    EXPECT_EQ(in["STDIO_READS"], 2) << mode;
    EXPECT_EQ(in["STDIO_BYTES_READ"], 2) << mode;
    auto& out = by_mode[i]["out.txt"];
    EXPECT_EQ(out["STDIO_OPENS"], 1) << mode;
    EXPECT_EQ(out["STDIO_WRITES"], 6) << mode;
    EXPECT_EQ(out["STDIO_BYTES_WRITTEN"], 20) << mode;
    EXPECT_EQ(out["STDIO_READS"], 0) << mode;
    EXPECT_EQ(out["STDIO_FLUSHES"], 1) << mode;
    EXPECT_EQ(read_text(work + "/chars.txt"), kCharsTxt) << mode;
    ++i;
  }
  for (const char* f : {"chars.txt", "in.txt", "out.txt"}) EXPECT_EQ(by_mode[0][f], by_mode[1][f]) << f;
}

}  // namespace

namespace {

// programs/posix_forms.c under `strata run` in trace and profile mode: every
// dup form (dup, dup2, dup3, fcntl F_DUPFD/F_DUPFD_CLOEXEC), every stat form
// (stat, lstat, fstat, fstatat with a path and with AT_EMPTY_PATH, statx),
// mmap, fileno, fdopen and rename give these integer POSIX counters, the same
// in both modes (both read the one table of runtime/functions.h).
TEST(PosixForms, TraceAndProfileSameExactCounters) {
  TempDir t;
  std::map<std::string, std::map<std::string, int64_t>> by_mode[2];
  int i = 0;
  for (const char* mode : {"trace", "profile"}) {
    const std::string work = t.mkdir(std::string("work-") + mode);
    const std::string trace = t.sub(std::string("trace-") + mode);
    RunResult rr = strata_run(trace, {POSIX_FORMS, work}, {"-q", "-m", mode});
    ASSERT_EQ(rr.code, 0) << mode << ": " << rr.err;
    e2e::Darshan d = e2e::analyze_darshan(trace);
    std::map<std::string, std::string> ids;
    for (const auto& r : d.records) {
      if (r.module != "POSIX" || r.file.rfind(work + "/", 0) != 0) continue;
      const std::string f = r.file.substr(work.size() + 1);
      ids[f] = r.id;
      for (auto& [k, v] : r.c)
        if (k.find("_TIME_SIZE") == std::string::npos && k.find("RANK") == std::string::npos) by_mode[i][f][k] = v;
    }
    auto& a = by_mode[i]["a.dat"];
    EXPECT_EQ(a["POSIX_OPENS"], 6) << mode;
    EXPECT_EQ(a["POSIX_DUPS"], 5) << mode;
    EXPECT_EQ(a["POSIX_FILENOS"], 0) << mode;
    EXPECT_EQ(a["POSIX_WRITES"], 1) << mode;
    EXPECT_EQ(a["POSIX_READS"], 1) << mode;
    EXPECT_EQ(a["POSIX_BYTES_WRITTEN"], 100) << mode;
    EXPECT_EQ(a["POSIX_BYTES_READ"], 10) << mode;
    EXPECT_EQ(a["POSIX_STATS"], 6) << mode;
    EXPECT_EQ(a["POSIX_MMAPS"], 1) << mode;
    EXPECT_EQ(a["POSIX_SEEKS"], 0) << mode;
    EXPECT_EQ(a["POSIX_MODE"], 0640) << mode;
    EXPECT_EQ(a["POSIX_MAX_BYTE_WRITTEN"], 99) << mode;
    EXPECT_EQ(a["POSIX_MAX_BYTE_READ"], 9) << mode;
    EXPECT_EQ(a["POSIX_MEM_ALIGNMENT"], 8) << mode;
    auto& b = by_mode[i]["b.txt"];
    EXPECT_EQ(b["POSIX_OPENS"], 1) << mode;
    EXPECT_EQ(b["POSIX_FILENOS"], 1) << mode;
    EXPECT_EQ(b["POSIX_DUPS"], 0) << mode;
    auto& c = by_mode[i]["c.dat"];
    EXPECT_EQ(c["POSIX_OPENS"], 1) << mode;
    EXPECT_EQ(c["POSIX_MODE"], 0600) << mode;
    EXPECT_EQ(c["POSIX_RENAME_SOURCES"], 1) << mode;
    EXPECT_EQ(c["POSIX_RENAME_TARGETS"], 0) << mode;
    auto& dd = by_mode[i]["d.dat"];
    EXPECT_EQ(dd["POSIX_OPENS"], 0) << mode;
    EXPECT_EQ(dd["POSIX_RENAME_TARGETS"], 1) << mode;
    EXPECT_EQ(dd["POSIX_RENAME_SOURCES"], 0) << mode;
    // The source's record id (printed signed, like darshan-parser); it
    // depends on the work directory, so it is left out of the comparison.
    EXPECT_EQ(dd["POSIX_RENAMED_FROM"], static_cast<int64_t>(std::stoull(ids["c.dat"]))) << mode;
    dd.erase("POSIX_RENAMED_FROM");
    ++i;
  }
  EXPECT_EQ(by_mode[0], by_mode[1]);
}

}  // namespace
