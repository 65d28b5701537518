// DFTracer 2.x input (issue 9 section 4): the hand-written sample
// tests/data/dftracer/v2/sample.pfw (ph 1/2/3/4, hex hashes, an unknown type,
// aggregated records with dft_cnt and _min/_max/_sum or plain fields, the
// end record) through the real `strata analyze --json` and `strata cat`, and
// a round trip strata trace -> pfw 1.x/2.x -> analyze.
#include <gtest/gtest.h>
#include <simdjson.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <utility>

namespace {
const std::string kBin = STRATA_BIN;
const std::string kSamples = STRATA_SAMPLES_DIR;
const std::string kV2 = kSamples + "/v2/sample.pfw";

std::string sh(const std::string& cmd, int* rc = nullptr) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  std::array<char, 65536> b;
  size_t n;
  while ((n = std::fread(b.data(), 1, b.size(), p)) > 0) out.append(b.data(), n);
  int st = pclose(p);
  if (rc) *rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return out;
}
size_t lines(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

struct Tmp {
  std::string dir;
  Tmp() {
    char t[] = "/tmp/strata-pfwv2-XXXXXX";
    dir = mkdtemp(t);
  }
  ~Tmp() { std::system(("rm -rf '" + dir + "'").c_str()); }
};

// Counters of the Darshan POSIX module for one file, from analyze --json.
struct Posix {
  int64_t opens = -1, reads = -1, writes = -1, bytes_read = -1, bytes_written = -1;
  bool approximate = false;
  uint64_t events = 0;
};
Posix analyze(const std::string& trace, const std::string& file) {
  int rc = -1;
  std::string js = sh("'" + kBin + "' analyze --json '" + trace + "'", &rc);
  EXPECT_EQ(rc, 0) << js;
  Posix p;
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(js).get(root)) {
    ADD_FAILURE() << "bad JSON: " << js.substr(0, 200);
    return p;
  }
  p.approximate = bool(root["approximate"]);
  p.events = uint64_t(root["events"]);
  for (auto f : root["files"].get_array()) {
    std::string_view path = f["path"];
    if (path != file) continue;
    p.opens = int64_t(f["opens"]);
    p.reads = int64_t(f["reads"]);
    p.writes = int64_t(f["writes"]);
    p.bytes_read = int64_t(f["bytes_read"]);
    p.bytes_written = int64_t(f["bytes_written"]);
  }
  return p;
}
}  // namespace

// 6 call records (open, read, aggregated read x4, aggregated write x3, an
// event of unknown type 99, close, plus one counter sample for cat).
TEST(PfwV2, AnalyzeCountsAggregatedCalls) {
  Posix p = analyze(kV2, "/data/in.dat");
  EXPECT_EQ(p.events, 11u);  // 1 + 1 + 4 + 3 + 1 + 1
  EXPECT_EQ(p.opens, 1);
  EXPECT_EQ(p.reads, 5);
  EXPECT_EQ(p.writes, 3);
  EXPECT_EQ(p.bytes_read, 100 + 1510);
  EXPECT_EQ(p.bytes_written, 3 * 4096);
  EXPECT_TRUE(p.approximate);
}

TEST(PfwV2, CatOneLinePerRecord) {
  int rc = -1;
  std::string out = sh("'" + kBin + "' cat '" + kV2 + "'", &rc);
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(lines(out), 7u) << out;  // 6 call records + 1 counter sample
  EXPECT_NE(out.find("\"calls\":4"), std::string::npos);
  EXPECT_NE(out.find("\"layer\":\"UNKNOWN\""), std::string::npos);
  EXPECT_NE(out.find("\"path\":\"/data/in.dat\""), std::string::npos);
  EXPECT_NE(out.find("\"count_min\":10,\"count_max\":1000,\"count_sum\":1510"), std::string::npos) << out;
}

// An aggregated field given by its _min and _max only: cat writes what the
// record holds, not a made-up _sum of 0.
TEST(PfwV2, CatWritesTheRangeAsGiven) {
  Tmp t;
  const std::string pfw = t.dir + "/agg.pfw";
  std::ofstream(pfw) << R"({"id":3,"name":"read","cat":"POSIX","type":3,"pid":9,"tid":9,"ts":2000010,"ph":3,)"
                     << R"("args":{"fd":3,"count":4096,"ret":4096,"dft_cnt":10,"dur_sum":100,"dur_min":5,)"
                     << R"("dur_max":20,"offset_min":0,"offset_max":36864}})" << "\n";
  int rc = -1;
  std::string out = sh("'" + kBin + "' cat '" + pfw + "'", &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("\"offset_min\":0,\"offset_max\":36864"), std::string::npos) << out;
  EXPECT_EQ(out.find("offset_sum"), std::string::npos) << out;
}

TEST(PfwV2, CatAndConvertOneXSamples) {
  Tmp t;
  int rc = -1;
  std::string out = sh("'" + kBin + "' cat '" + kSamples + "/probe-probe-4989-preload.pfw'", &rc);
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(lines(out), 16u);
  out = sh("'" + kBin + "' cat '" + kSamples + "/bench-bench-5032-preload.pfw.gz' | wc -l", &rc);
  EXPECT_EQ(std::atoi(out.c_str()), 16410);
  sh("'" + kBin + "' convert '" + kSamples + "/bench-bench-5032-preload.pfw.gz' --to chrome -o '" + t.dir +
         "/c.json' 2>/dev/null",
     &rc);
  EXPECT_EQ(rc, 0);
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  ASSERT_FALSE(parser.load(t.dir + "/c.json").get(root));
  EXPECT_EQ(root["traceEvents"].get_array().size(), 16410u + 1);  // and the process's name
  // A Chrome trace is recognised and refused with a clear message.
  out = sh("'" + kBin + "' cat '" + t.dir + "/c.json' 2>&1", &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("this is a Chrome trace"), std::string::npos) << out;
}

// convert --to chrome of a DFTracer trace names its processes (Perfetto
// shows a bare pid otherwise), as strata's own traces are: from the start
// record's command line (SH of cmd_hash), else its executable (exec_hash),
// else the pid; one process_name record per pid with events.
TEST(PfwV2, ChromeNamesProcesses) {
  Tmp t;
  const std::string exe_only = t.dir + "/exe-only.pfw";
  std::ofstream(exe_only)
      << R"({"name":"SH","cat":"dftracer","pid":7,"tid":7,"ph":"M","args":{"name":"/usr/bin/python3.11","value":5}})" "\n"
      << R"({"name":"start","cat":"dftracer","pid":7,"tid":7,"ts":10,"dur":0,"ph":"X","args":{"exec_hash":5}})" "\n"
      << R"({"name":"read","cat":"POSIX","pid":7,"tid":7,"ts":11,"dur":1,"ph":"X","args":{"fd":3,"count":1,"ret":1}})" "\n";
  const std::pair<std::string, std::map<int64_t, std::string>> cases[] = {
      {kSamples + "/probe-probe-4989-preload.pfw", {{4989, "probe"}}},           // cmd "./probe;/scratch/..."
      {kV2, {{100, "app"}}},                                                      // 2.x, cmd "./app;in.dat"
      {kSamples + "/bench-bench-5032-preload.pfw.gz", {{5032, "pid 5032"}}},     // a start without args
      {exe_only, {{7, "python3.11"}}}};
  for (const auto& [input, want] : cases) {
    SCOPED_TRACE(input);
    int rc = -1;
    sh("'" + kBin + "' convert '" + input + "' --to chrome -o '" + t.dir + "/c.json' 2>/dev/null", &rc);
    ASSERT_EQ(rc, 0);
    simdjson::dom::parser parser;
    simdjson::dom::element root;
    ASSERT_FALSE(parser.load(t.dir + "/c.json").get(root));
    std::map<int64_t, std::string> got;
    for (simdjson::dom::element e : root["traceEvents"].get_array()) {
      std::string_view ph, name;
      if (e["ph"].get(ph) || ph != "M" || e["name"].get(name) || name != "process_name") continue;
      const int64_t pid = e["pid"];
      EXPECT_FALSE(got.count(pid)) << "two names for pid " << pid;
      got[pid] = std::string(std::string_view(e["args"]["name"]));
    }
    EXPECT_EQ(got, want);
  }
}

TEST(PfwV2, RoundTripStrataToPfw1And2) {
  Tmp t;
  const std::string data = t.dir + "/input.txt";
  std::ofstream(data) << std::string(5000, 'x');
  int rc = -1;
  sh("'" + kBin + "' run -o '" + t.dir + "/tr' -- /bin/cat '" + data + "' >/dev/null 2>&1", &rc);
  ASSERT_EQ(rc, 0);
  Posix direct = analyze(t.dir + "/tr", data);
  EXPECT_GE(direct.reads, 1);
  EXPECT_EQ(direct.bytes_read, 5000);
  for (const char* v : {"1", "2"}) {
    const std::string out = t.dir + "/v" + v + ".pfw.gz";
    sh("'" + kBin + "' convert '" + t.dir + "/tr' --to pfw --pfw-version " + v + " -o '" + out + "' 2>/dev/null", &rc);
    ASSERT_EQ(rc, 0);
    Posix back = analyze(out, data);
    EXPECT_EQ(back.opens, direct.opens) << v;
    EXPECT_EQ(back.reads, direct.reads) << v;
    EXPECT_EQ(back.writes, direct.writes) << v;
    EXPECT_EQ(back.bytes_read, direct.bytes_read) << v;
    EXPECT_EQ(back.bytes_written, direct.bytes_written) << v;
    EXPECT_FALSE(back.approximate);
  }
}
