// The terminal report fits a screen, its filters, and the CLI's messages
// (issue 10 §3, §5), on real traces of the e2e workload under `strata run`.
#include "e2e_harness.h"

#include <regex>
#include <set>

namespace {

using namespace e2e;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> v;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) v.push_back(l);
  return v;
}

// `strata run -q -o DIR/trace -- cmd...`: the trace of a real command.
RunResult trace_command(const TempDir& t, const std::vector<std::string>& cmd) {
  std::vector<std::string> argv = {kStrata, "run", "-q", "-o", t.sub("trace"), "--"};
  argv.insert(argv.end(), cmd.begin(), cmd.end());
  return run(argv, 120);
}

// Columns a terminal shows: UTF-8 lead bytes (the report draws "└─", "µs").
size_t columns(const std::string& line) {
  size_t n = 0;
  for (unsigned char c : line) n += (c & 0xC0) != 0x80;
  return n;
}

size_t count_lines_starting(const std::string& text, const std::string& prefix) {
  size_t n = 0;
  for (auto& l : lines_of(text)) n += l.rfind(prefix, 0) == 0;
  return n;
}

// Issue 10: at most ~50 lines, verdict and structure included.
constexpr size_t kMaxLines = 50;
constexpr size_t kMaxColumns = 100;

void expect_fits_a_screen(const RunResult& r, size_t max_lines = kMaxLines) {
  ASSERT_EQ(r.code, 0) << describe(r);
  const auto lines = lines_of(r.out);
  EXPECT_LE(lines.size(), max_lines) << r.out;
  for (auto& l : lines) EXPECT_LE(columns(l), kMaxColumns) << l;
}

// The dl workload with E epochs: 1 main process + 2 forked workers per epoch.
class DlJob : public ::testing::Test {
 protected:
  static constexpr int kEpochs = 3;
  static void SetUpTestSuite() {
    t_ = new TempDir();
    const std::string dir = t_->mkdir("job");
    for (int w = 0; w < 2; ++w) {
      t_->mkdir("job/data/train/c" + std::to_string(w));
      for (int i = 0; i < 3; ++i)
        make_file(dir + "/data/train/c" + std::to_string(w) + "/s_" + std::to_string(i) + ".png", 2048, 3 * w + i);
    }
    t_->mkdir("job/data/val");
    for (int i = 0; i < 4; ++i) make_file(dir + "/data/val/v_" + std::to_string(i) + ".png", 1024, 10 + i);
    t_->mkdir("job/data/ckpt");
    for (int k = 0; k < 4; ++k) {
      t_->mkdir("job/once");
      make_file(dir + "/once/o_" + std::to_string(k) + ".dat", 4096, 20 + k);
    }
    RunResult rr = trace_workload(t_->sub("trace"), {"dl", dir, std::to_string(kEpochs)});
    ASSERT_EQ(rr.code, 0) << describe(rr);
  }
  static void TearDownTestSuite() {
    delete t_;
    t_ = nullptr;
  }
  static std::string trace() { return t_->sub("trace"); }
  static std::string dir() { return t_->sub("job"); }
  static RunResult analyze(std::vector<std::string> extra) {
    std::vector<std::string> argv = {kStrata, "analyze", trace()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return run(argv, 60);
  }
  static inline TempDir* t_ = nullptr;
};

TEST_F(DlJob, DefaultReportFitsAScreen) {
  RunResult r = analyze({});
  expect_fits_a_screen(r);
  // 7 processes: the root in the tree, the rest counted.
  EXPECT_EQ(count_lines_starting(r.out, "  pid ") + count_lines_starting(r.out, "    \u2514\u2500 pid "), 1u) << r.out;
  // The processes not listed, summed by what they are.
  EXPECT_NE(r.out.find("  ... 6 more processes: 6 DataLoader workers (--all lists them)\n"), std::string::npos) << r.out;
  // Durations a person reads: no six-decimal seconds.
  EXPECT_EQ(r.out.find("000 s"), std::string::npos) << r.out;
  // The epoch table once (the deep-learning summary), not again as "by epoch".
  EXPECT_EQ(r.out.find("== by epoch =="), std::string::npos);
}

TEST_F(DlJob, DemoOptionsFitAScreen) {
  // The demo's command adds the staging section the user asked for: within the issue's 50.
  RunResult r = analyze({"--by", "epoch", "--stage-capacity", "64MiB"});
  expect_fits_a_screen(r, 50);
  // --by epoch is answered by the deep-learning summary's table, and says so.
  EXPECT_NE(r.out.find("  (--by epoch: the rows above; --all adds every event tagged with an epoch)\n"),
            std::string::npos)
      << r.out;
}

TEST_F(DlJob, AllLiftsTheLimits) {
  RunResult r = analyze({"--all"});
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(count_lines_starting(r.out, "  pid ") + count_lines_starting(r.out, "    \u2514\u2500 pid "),
            1u + 2 * kEpochs);
  EXPECT_EQ(r.out.find("more processes"), std::string::npos);
  EXPECT_NE(r.out.find("== by epoch =="), std::string::npos);
  EXPECT_NE(r.out.find("== POSIX read sizes =="), std::string::npos);
  EXPECT_NE(r.out.find("     role evidence ["), std::string::npos);
  for (auto& l : lines_of(r.out)) EXPECT_LE(columns(l), kMaxColumns) << l;
}

TEST_F(DlJob, TopSetsTheRowsOfTheTables) {
  auto j = analyze_json(trace());
  const size_t funcs = j->root["functions"].get_array().size();
  ASSERT_GT(funcs, 3u);
  RunResult r = analyze({"--top", "3", "--section", "functions"});
  ASSERT_EQ(r.code, 0) << describe(r);
  const auto lines = lines_of(r.out);
  auto title = std::find(lines.begin(), lines.end(),
                         "== Functions (top 3 of " + std::to_string(funcs) +
                             ": I/O by time, then app regions; --top N, --all) ==");
  ASSERT_NE(title, lines.end()) << r.out;
  ASSERT_EQ(lines.end() - title, 6) << r.out;  // the title, the column names, 3 rows, the app regions
  EXPECT_EQ(title[1].rfind("  layer  function", 0), 0u) << title[1];
  // Rows, the busiest I/O calls first (the job has more than 3): each names
  // its layer, then the function. The app regions (the DataLoader's nested
  // spans, longer than any call) follow on one line.
  for (int i = 2; i < 5; ++i) {
    const std::string layer = title[i].substr(2, title[i].find(' ', 2) - 2);
    EXPECT_TRUE(layer == "POSIX" || layer == "PROC" || layer == "STDIO") << title[i];
  }
  EXPECT_EQ(title[5].rfind("  app regions: dataloader.", 0), 0u) << title[5];
  RunResult zero = analyze({"--top", "0", "--section", "functions"});
  EXPECT_NE(zero.out.find("== Functions (top 0 of " + std::to_string(funcs) +
                          ": I/O by time, then app regions; --top N, --all) ==\n"),
            std::string::npos)
      << zero.out;
}

TEST_F(DlJob, SectionPrintsTheHeaderAndThatSectionOnly) {
  RunResult r = analyze({"--section", "files"});
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.out.rfind("strata analyze: " + trace() + " (strata, ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("== Files (by I/O time) =="), std::string::npos);
  EXPECT_EQ(r.out.find("== Job summary"), std::string::npos);
  EXPECT_EQ(r.out.find("== Deep learning =="), std::string::npos);
  EXPECT_EQ(r.out.find("== Functions"), std::string::npos);
  RunResult two = analyze({"--section", "overlap", "--section", "dl"});
  ASSERT_EQ(two.code, 0) << describe(two);
  EXPECT_NE(two.out.find("== Job == 7 processes, "), std::string::npos) << two.out;
  EXPECT_NE(two.out.find("== Deep learning == 3 epochs"), std::string::npos) << two.out;
  EXPECT_EQ(two.out.find("== Files"), std::string::npos);
  RunResult bad = analyze({"--section", "nosuch"});
  EXPECT_EQ(bad.code, 2) << describe(bad);
  EXPECT_EQ(bad.out, "");
  EXPECT_NE(bad.err.find("--section nosuch: no such section; the sections (passes) are: io, verdict, modes, dl, critical_path, overlap, "),
            std::string::npos)
      << bad.err;
}

TEST_F(DlJob, PathFiltersTextJsonAndDarshan) {
  const std::string val = dir() + "/data/val/";
  RunResult r = analyze({"--path", val});
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("  only paths starting with " + val + " (--path)\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  dataset(validation) " + val + ": 4 files"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("  dataset(train) "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(dir() + "/once/"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("I/O strategy: 4 file(s) accessed by one process, 0 shared file(s)\n"), std::string::npos)
      << r.out;

  auto j = analyze_json(trace(), {"--path", val});
  size_t files = 0;
  for (auto f : j->root["files"].get_array()) {
    ++files;
    EXPECT_EQ(S(f, "path").rfind(val, 0), 0u) << S(f, "path");
  }
  EXPECT_EQ(files, 4u);

  RunResult d = analyze({"--darshan", "--path", val});
  ASSERT_EQ(d.code, 0) << describe(d);
  Darshan parsed = parse_darshan(d.out);
  std::set<std::string> paths;
  for (auto& rec : parsed.records) paths.insert(rec.file);
  ASSERT_EQ(paths.size(), 4u) << d.out.substr(0, 2000);
  for (auto& p : paths) EXPECT_EQ(p.rfind(val, 0), 0u) << p;
  EXPECT_NE(d.out.find("# metadata: paths = only those starting with " + val + "\n"), std::string::npos);
}

// ---- CLI messages -----------------------------------------------------------------

TEST_F(DlJob, MistypedCommandGetsASuggestion) {
  RunResult r = run({kStrata, "analyse", trace()}, 30);
  EXPECT_EQ(r.code, 2) << describe(r);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.rfind("strata: unknown command 'analyse'; did you mean `analyze`?\n", 0), 0u) << r.err;
  RunResult far = run({kStrata, "frobnicate"}, 30);
  EXPECT_EQ(far.code, 2) << describe(far);
  EXPECT_EQ(far.err.find("did you mean"), std::string::npos) << far.err;
  EXPECT_NE(far.err.find("the commands: run, info, cat, convert, analyze, efg"), std::string::npos) << far.err;
}

TEST_F(DlJob, UnknownFlagIsNamedAlone) {
  RunResult r = analyze({"--frobnicate", "extra"});
  EXPECT_EQ(r.code, 2) << describe(r);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "strata analyze: unknown option --frobnicate (strata analyze --help lists the options)\n");
  RunResult eq = analyze({"--colour=never"});
  EXPECT_EQ(eq.code, 2) << describe(eq);
  EXPECT_EQ(eq.err, "strata analyze: unknown option --colour (strata analyze --help lists the options)\n");
}

TEST_F(DlJob, ChromeJsonIsNamedForWhatItIs) {
  const std::string chrome = t_->sub("trace.json");
  RunResult cv = run({kStrata, "convert", trace(), "--to", "chrome", "-o", chrome}, 60);
  ASSERT_EQ(cv.code, 0) << describe(cv);
  RunResult r = run({kStrata, "analyze", chrome}, 30);
  EXPECT_EQ(r.code, 1) << describe(r);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find(chrome + ": a Chrome trace-event JSON file"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("give strata analyze the strata trace directory or .strata file, or a DFTracer .pfw"),
            std::string::npos)
      << r.err;
}

// A .json file holding a bare array of events is a Chrome trace when its
// events share a line, and DFTracer's when each has its own (DFTracer 1.x
// writes "[" alone on the first line): the first is refused by name, the
// second analyzed.
TEST_F(DlJob, BareArrayJsonIsChromeOrDftracerByItsLayout) {
  const std::string chrome = t_->sub("events.json");
  {
    std::ofstream f(chrome);
    f << "[{\"name\": \"read\", \"ph\": \"X\", \"ts\": 1, \"dur\": 2, \"pid\": 1, \"tid\": 1}]\n";
  }
  RunResult r = run({kStrata, "analyze", chrome}, 30);
  EXPECT_EQ(r.code, 1) << describe(r);
  EXPECT_NE(r.err.find(chrome + ": this is a Chrome trace"), std::string::npos) << r.err;

  const std::string dftracer = t_->sub("dftracer.json");
  {
    std::ofstream f(dftracer);
    f << "[\n"
         "{\"id\":1,\"name\":\"read\",\"cat\":\"POSIX\",\"pid\":7,\"tid\":7,\"ts\":10,\"dur\":5,\"ph\":\"X\","
         "\"args\":{\"fname\":\"/data/a.bin\",\"size\":100,\"ret\":100}}\n";
  }
  r = run({kStrata, "analyze", dftracer}, 30);
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("(dftracer, 1 file(s), 1 events)"), std::string::npos) << r.out;
}

TEST_F(DlJob, ByAMissingKeyListsTheKeys) {
  RunResult r = analyze({"--by", "nosuchkey"});
  EXPECT_EQ(r.code, 2) << describe(r);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("strata analyze: --by nosuchkey: no event of " + trace() +
                       " carries the tag \"nosuchkey\"; the tag keys it has: epoch"),
            std::string::npos)
      << r.err;
  RunResult ok = analyze({"--by", "epoch", "--all"});
  EXPECT_EQ(ok.code, 0) << describe(ok);
  EXPECT_NE(ok.out.find("== by epoch =="), std::string::npos);
}

TEST_F(DlJob, HtmlSaysWhereItWrote) {
  const std::string html = t_->sub("report.html");
  RunResult r = analyze({"--html", html});
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.out, "");
  const auto kib = (fs::file_size(html) + 1023) / 1024;
  EXPECT_EQ(r.err, "strata analyze: wrote the HTML report to " + html + " (" + std::to_string(kib) + " KiB)\n");
}

TEST_F(DlJob, NegativeTopIsABadOption) {
  RunResult r = analyze({"--top", "-1"});
  EXPECT_EQ(r.code, 2) << describe(r);
  EXPECT_NE(r.err.find("--top -1: the number of rows must be 0 or more"), std::string::npos) << r.err;
}

// A job touching its environment (/etc, /dev) beside its data: summed in
// one line by default, listed with --all and with --path.
TEST(ReportEnvironment, EnvironmentFilesSummedListedWithAll) {
  TempDir t;
  const std::string data = t.sub("input.dat");
  make_file(data, 8192);
  const std::string script =
      "cat /etc/passwd /etc/hostname > /dev/null; cat '" + data + "' > '" + t.sub("copy.dat") + "'";
  RunResult rr = trace_command(t, {"/bin/sh", "-c", script});
  ASSERT_EQ(rr.code, 0) << describe(rr);
  auto j = analyze_json(t.sub("trace"));
  size_t env = 0;
  for (auto f : j->root["files"].get_array()) {
    const std::string p = S(f, "path");
    env += p.rfind("/etc/", 0) == 0 || p.rfind("/usr/", 0) == 0 || p.rfind("/lib", 0) == 0 ||
           p.rfind("/dev/", 0) == 0 || p.rfind("/proc/", 0) == 0 || S(f, "role") == "library";
  }
  ASSERT_GE(env, 3u);  // /etc/passwd, /etc/hostname, /dev/null at least
  RunResult def = run({kStrata, "analyze", t.sub("trace")}, 60);
  expect_fits_a_screen(def);
  EXPECT_NE(def.out.find("  environment (libraries, .pyc, /usr, /dev): " + std::to_string(env) + " files, "),
            std::string::npos)
      << def.out;
  EXPECT_EQ(def.out.find("  /etc/passwd  ("), std::string::npos) << def.out;
  // cat copies with copy_file_range: a read of the data file, listed with its bytes.
  EXPECT_NE(def.out.find("  " + data + "  ("), std::string::npos) << def.out;
  EXPECT_NE(def.out.find("bytes r/w 8.00 KiB/0 B"), std::string::npos) << def.out;
  EXPECT_NE(def.out.find("  other: "), std::string::npos) << def.out;
  RunResult all = run({kStrata, "analyze", t.sub("trace"), "--all"}, 60);
  ASSERT_EQ(all.code, 0) << describe(all);
  EXPECT_NE(all.out.find("  /etc/passwd  ("), std::string::npos) << all.out;
  EXPECT_NE(all.out.find("  " + data + "  ("), std::string::npos) << all.out;
  EXPECT_EQ(all.out.find("  other: "), std::string::npos);
  EXPECT_EQ(all.out.find("  environment ("), std::string::npos);
  RunResult etc = run({kStrata, "analyze", t.sub("trace"), "--path", "/etc/"}, 60);
  ASSERT_EQ(etc.code, 0) << describe(etc);
  EXPECT_NE(etc.out.find("  /etc/passwd  ("), std::string::npos) << etc.out;
  EXPECT_EQ(etc.out.find(data), std::string::npos) << etc.out;
}

// A command line holding newlines (`sh -c` or `python3 -c` with a script):
// the text report keeps one line per process and the Darshan header keeps
// every line a `#` comment or a record.
// A bash loop of 5 `cat`: each is a fork child's image (bash's child opens
// the redirection) and the image its exec made, one process: "5 more
// processes: 5 cat", not 10.
TEST(ReportEnvironment, ForkThenExecIsOneProcessInTheJobTree) {
  TempDir t;
  RunResult rr = trace_command(t, {"/bin/bash", "-c",
                                   "for i in 1 2 3 4 5; do cat /etc/hostname > /dev/null; done"});
  ASSERT_EQ(rr.code, 0) << describe(rr);
  RunResult text = run({kStrata, "analyze", t.sub("trace"), "--section", "overlap"}, 60);
  ASSERT_EQ(text.code, 0) << describe(text);
  EXPECT_NE(text.out.find("== Job == 6 processes (11 program images: exec)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("\n  ... 5 more processes: 5 cat (--all lists them)\n"), std::string::npos) << text.out;
}

// How each process ended: the root's status on its line of the job tree,
// the processes the tree does not list that failed named below their count,
// and every process's exit status and fatal signal in the JSON.
TEST(ReportEnvironment, FailedProcessesAreNamed) {
  TempDir t;
  // The status is what the parent sees: os._exit(256) is 0, sys.exit(-1) 255.
  RunResult rr = trace_command(t, {"/bin/sh", "-c",
                                   "/bin/sh -c 'exit 3'; /bin/sh -c 'kill -TERM $$'; "
                                   "/usr/bin/python3 -c 'import os; os._exit(256)'; "
                                   "/usr/bin/python3 -c 'import sys; sys.exit(-1)'; exit 5"});
  ASSERT_EQ(rr.code, 5) << describe(rr);
  auto j = analyze_json(t.sub("trace"));
  std::map<int64_t, std::pair<int64_t, int64_t>> ends;  // pid -> (exit status, signal)
  for (auto p : j->root["processes"].get_array())
    ends[I(p, "pid")] = {I(p, "exit_status"), I(p, "exit_signal")};
  ASSERT_EQ(ends.size(), 5u);
  std::map<std::pair<int64_t, int64_t>, int64_t> pid_of;  // (exit status, signal) -> pid
  for (auto& [pid, end] : ends) pid_of[end] = pid;
  const int64_t root = pid_of[{5, 0}], exited = pid_of[{3, 0}], killed = pid_of[{-1, SIGTERM}],
                python_255 = pid_of[{255, 0}], python_0 = pid_of[{0, 0}];
  ASSERT_TRUE(root && exited && killed && python_255 && python_0) << j->text;
  RunResult text = run({kStrata, "analyze", t.sub("trace")}, 60);
  ASSERT_EQ(text.code, 0) << describe(text);
  // A line longer than the screen continues on the next, indented further
  // (where it breaks depends on the pids' widths): joined here.
  text.out = std::regex_replace(text.out, std::regex("\n {7,}"), " ");
  EXPECT_NE(text.out.find("  pid " + std::to_string(root) + " sh @"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(" events, exit 5  $ /bin/sh -c"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("\n  ... 4 more processes: 2 python3, 2 sh (--all lists them)\n      3 of them failed: pid " +
                          std::to_string(exited) + " sh exit 3, pid " + std::to_string(killed) +
                          " sh killed by SIGTERM, pid " + std::to_string(python_255) + " python3 exit 255\n"),
            std::string::npos)
      << text.out;
}

// A file read forward with gaps (the first 64 bytes of each 4 KiB record,
// as a rank reads its records of a shared file) is strided; one read in
// order, sequential.
TEST(ReportEnvironment, ForwardReadsWithGapsAreStrided) {
  TempDir t;
  const std::string records = t.sub("records.bin"), stream = t.sub("stream.bin");
  make_file(records, 100 * 4096);
  make_file(stream, 100 * 4096);
  RunResult rr = trace_command(t, {"/usr/bin/python3", "-c",
                                   "import os, sys\n"
                                   "fd = os.open(sys.argv[1], os.O_RDONLY)\n"
                                   "for i in range(100): os.pread(fd, 64, i * 4096)\n"
                                   "fd = os.open(sys.argv[2], os.O_RDONLY)\n"
                                   "for i in range(100): os.read(fd, 4096)\n",
                                   records, stream});
  ASSERT_EQ(rr.code, 0) << describe(rr);
  auto j = analyze_json(t.sub("trace"));
  auto r = file_entry(*j, records);
  EXPECT_EQ(I(r, "reads"), 100);
  EXPECT_EQ(S(r, "pattern"), "strided");
  auto s = file_entry(*j, stream);
  EXPECT_EQ(I(s, "reads"), 100);
  EXPECT_EQ(S(s, "pattern"), "sequential");
}

// A job that is not a training (no epoch tags, no DataLoader events) gets
// roles that do not claim one: the file it reads is a "dataset" (no train or
// validation split: "test" in its name means nothing here), the large file it
// writes an "output", not a checkpoint.
TEST(ReportEnvironment, RolesOfAJobThatIsNotATraining) {
  TempDir t;
  const std::string in = t.sub("test-input.dat"), out = t.sub("result.bin");
  make_file(in, 3 << 20);
  RunResult rr = trace_command(t, {"/bin/dd", "if=" + in, "of=" + out, "bs=64k"});
  ASSERT_EQ(rr.code, 0) << describe(rr);
  auto j = analyze_json(t.sub("trace"));
  EXPECT_EQ(S(file_entry(*j, in), "role"), "dataset");
  auto o = file_entry(*j, out);
  EXPECT_EQ(S(o, "role"), "output");
  EXPECT_EQ(I(o, "bytes_written"), 3 << 20);
  RunResult text = run({kStrata, "analyze", t.sub("trace")}, 60);
  ASSERT_EQ(text.code, 0) << describe(text);
  EXPECT_NE(text.out.find("  " + out + "  (output, 3.00 MiB, write-only, one process)"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("  " + in + "  (dataset, 3.00 MiB, read-only, one process)"), std::string::npos)
      << text.out;
  EXPECT_TRUE(j->root["dl_summary"].is_null()) << j->text;  // nor a deep-learning summary
  EXPECT_EQ(text.out.find("Deep learning"), std::string::npos) << text.out;
}

TEST(ReportEnvironment, MultiLineCommandStaysOnOneLine) {
  TempDir t;
  RunResult rr = trace_command(t, {"/bin/sh", "-c",
                                   "cat /etc/hostname > /dev/null\ntrue\n"});
  ASSERT_EQ(rr.code, 0) << describe(rr);
  RunResult text = run({kStrata, "analyze", t.sub("trace")}, 60);
  ASSERT_EQ(text.code, 0) << describe(text);
  EXPECT_NE(text.out.find("$ /bin/sh -c cat /etc/hostname > /dev/null\\ntrue\\n"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("\ntrue"), std::string::npos) << text.out;
  RunResult darshan = run({kStrata, "analyze", t.sub("trace"), "--darshan"}, 60);
  ASSERT_EQ(darshan.code, 0) << describe(darshan);
  EXPECT_NE(darshan.out.find("# exe: /bin/sh -c cat /etc/hostname > /dev/null\\ntrue\\n\n"), std::string::npos)
      << darshan.out;
  for (const std::string& l : lines_of(darshan.out))
    EXPECT_TRUE(l.empty() || l[0] == '#' || l.rfind("POSIX\t", 0) == 0 || l.rfind("STDIO\t", 0) == 0) << l;
}

}  // namespace
