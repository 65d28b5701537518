// The options of `strata run` a user reaches for first: which layers record,
// which paths, where the trace goes without -o, and a SIGTERM the application
// handles itself (strata flushes, the application's handler still runs).
#include "harness.h"

using namespace core_test;

namespace {

// A shell that forks and execs cat on one file: POSIX and PROC events.
std::vector<std::string> cat_in_shell(const std::string& file) { return {"/bin/sh", "-c", "cat " + file + " > /dev/null"}; }

TEST(Options, LayersRecordOnlyTheListedLayers) {
  TempDir tmp;
  std::string f = tmp.sub("f");
  write_text(f, "hello\n");
  for (const std::string layer : {"posix", "proc"}) {
    std::string trace = tmp.sub("trace-" + layer);
    RunResult r = strata_run(trace, cat_in_shell(f), {"--layers", layer});
    ASSERT_EQ(r.code, 0) << r.err;
    Info info = info_trace(trace);
    ASSERT_GT(info.events, 0);
    std::string expected = layer == "posix" ? "POSIX" : "PROC";
    EXPECT_EQ(info.by_category.size(), 1u) << layer;
    EXPECT_EQ(info.by_category.count(expected), 1u) << layer;
  }
}

TEST(Options, IncludeKeepsOnlyPathsUnderThePrefix) {
  TempDir tmp;
  std::string dir = tmp.mkdir("in"), f = dir + "/f";
  write_text(f, "hello\n");
  std::string trace = tmp.sub("trace");
  ASSERT_EQ(strata_run(trace, {"cat", f, "/etc/hostname"}, {"--include", dir}).code, 0);
  auto events = cat_trace(trace);
  int64_t on_f = 0;
  for (const auto& e : events) {
    if (!e.has_path) continue;
    EXPECT_TRUE(under(e.path, dir)) << describe(e);
    on_f += e.path == f;
  }
  EXPECT_EQ(on_f, 5) << "open, fstat, 2 reads, close of " << f;
}

TEST(Options, ExcludeDropsPathsUnderThePrefix) {
  TempDir tmp;
  std::string kept = tmp.sub("kept"), skip = tmp.mkdir("skip");
  write_text(kept, "a\n");
  write_text(skip + "/g", "b\n");
  std::string trace = tmp.sub("trace");
  ASSERT_EQ(strata_run(trace, {"cat", kept, skip + "/g"}, {"--exclude", skip}).code, 0);
  int64_t on_kept = 0;
  for (const auto& e : cat_trace(trace)) {
    EXPECT_FALSE(e.has_path && under(e.path, skip)) << describe(e);
    on_kept += e.has_path && e.path == kept;
  }
  EXPECT_EQ(on_kept, 5);
}

// Every spelling of a file is recorded as its one absolute, normal path
// ("//", "/./", "/../" collapsed, relative paths against the directory the
// shell changed to), and names that only start with dots stay as they are.
TEST(Options, PathsAreRecordedAbsoluteAndNormal) {
  TempDir tmp;
  const std::string dir = tmp.mkdir("in");
  tmp.mkdir("in/d");
  tmp.mkdir("in/x");
  for (const char* name : {"f", "..f", ".f"}) write_text(dir + "/d/" + name, "hello\n");
  const std::string trace = tmp.sub("trace");
  const std::string cmd = "cd " + dir + " && cat " + dir + "/d/f " + dir + "//d/f " + dir + "/./d/f " + dir +
                          "/x/../d/f d/../d/f d//f ./d/.f " + dir + "/d/..f > /dev/null";
  ASSERT_EQ(strata_run(trace, {"/bin/sh", "-c", cmd}).code, 0);
  std::vector<std::string> opened;
  for (const auto& e : cat_trace(trace))
    if (e.has_path && e.name.find("open") != std::string::npos && under(e.path, dir)) opened.push_back(e.path);
  const std::string f = dir + "/d/f";
  EXPECT_EQ(opened, (std::vector<std::string>{f, f, f, f, f, f, dir + "/d/.f", dir + "/d/..f"}));
}

TEST(Options, WithoutOutputTheTraceGoesToANewDirectoryNamedAfterTheCommand) {
  TempDir tmp;
  RunResult r = run({"/bin/sh", "-c", "cd " + tmp.path() + " && " + kStrata + " run -- true"});
  ASSERT_EQ(r.code, 0) << r.err;
  std::vector<std::string> dirs;
  for (auto& e : fs::directory_iterator(tmp.path()))
    if (e.path().filename().string().rfind("strata-true-", 0) == 0) dirs.push_back(e.path().string());
  ASSERT_EQ(dirs.size(), 1u);
  EXPECT_NE(r.err.find("trace written to " + dirs[0]), std::string::npos) << r.err;
  EXPECT_EQ(info_trace(dirs[0]).processes, 1);
}

// The application's own SIGTERM handler runs (the process lives on and does
// more I/O), and the trace has the signal marker and the I/O after it.
// A handler the application installs goes to the kernel untouched (strata's
// flush handler stands in only for SIG_DFL): it runs, the program goes on,
// and its later calls are recorded.
TEST(Options, SigtermWithAnApplicationHandlerIsTheApplicationsOwn) {
  TempDir tmp;
  std::string f = tmp.sub("f"), trace = tmp.sub("trace");
  std::string script =
      "import os, signal, time\n"
      "got = []\n"
      "signal.signal(signal.SIGTERM, lambda s, fr: got.append(s))\n"
      "fd = os.open('" + f + "', os.O_CREAT | os.O_WRONLY, 0o644)\n"
      "os.kill(os.getpid(), signal.SIGTERM)\n"
      "time.sleep(0.05)\n"
      "os.write(fd, b'after\\n'); os.close(fd)\n"
      "print('handled', got)\n";
  RunResult r = strata_run(trace, {PYTHON3, "-c", script});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "handled [15]\n");
  auto events = cat_trace(trace);
  EXPECT_EQ(count_if(events, [](const Event& e) { return e.name == "signal"; }), 0);
  EXPECT_EQ(count_if(events, [&](const Event& e) { return e.name == "write" && e.path == f && e.ret == 6; }), 1);
}

// docs/configuration.md: a usage error (a bad value, a missing option) exits
// 2 with a message naming it, for every command; --help still exits 0.
TEST(Options, UsageErrorsExitTwo) {
  TempDir tmp;
  const std::string trace = tmp.sub("trace");
  ASSERT_EQ(strata_run(trace, {"/bin/true"}).code, 0);
  struct Case {
    std::vector<std::string> argv;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{kStrata, "analyze", "--top", "abc", trace}, "--top"},
      {{kStrata, "analyze", "--stage-capacity", "8XB", trace}, "8XB"},
      {{kStrata, "convert", trace, "--to", "chrome"}, "-o"},
      {{kStrata, "run", "-m", "bogus", "--", "/bin/true"}, "bogus"},
      // values that used to be taken silently: abc as 4M, 1T as 1 byte, bogus as nothing
      {{kStrata, "run", "--buffer-size", "abc", "--", "/bin/true"}, "bad size 'abc'"},
      {{kStrata, "run", "--buffer-size", "1T", "--", "/bin/true"}, "bad size '1T'"},
      {{kStrata, "run", "--layers", "posix,bogus", "--", "/bin/true"}, "unknown layer 'bogus'"},
  };
  for (const Case& c : cases) {
    RunResult r = run(c.argv);
    EXPECT_EQ(r.code, 2) << c.argv[1] << " " << c.argv[2] << ": " << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
  }
  EXPECT_EQ(run({kStrata, "analyze", "--help"}).code, 0);
  EXPECT_EQ(run({kStrata, "--version"}).code, 0);
}

}  // namespace
