// A job where nearly every event names a new file (issue 9 §5, the
// "newfile" shape of bench/analyze_shapes.sh): per-file state stays small
// (stat-only files allocate no access record), the event flow graph keys
// nodes by directory (one node per directory, not per path), and the report
// survives the save/merge/load trip of strata.dask byte for byte.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "analysis/analyze.h"
#include "analysis/open_source.h"
#include "analysis/pass.h"
#include "efg/builder.h"

using namespace strata::analysis;
namespace fs = std::filesystem;

namespace {

constexpr int kStatFiles = 2000;  // d0..d3/f<i>: stat only
constexpr int kDirs = 4;
constexpr int kReads = 20;  // 4 KiB preads of one data file, every offset new

class TraceDir {
 public:
  TraceDir() {
    char tmpl[] = "/tmp/strata-many-files-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TraceDir() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string event(int id, const char* name, int64_t ts, const std::string& args) {
  return "{\"id\":" + std::to_string(id) + ",\"name\":\"" + name +
         "\",\"cat\":\"POSIX\",\"pid\":77,\"tid\":77,\"ts\":" + std::to_string(ts) +
         ",\"dur\":2,\"ph\":\"X\",\"args\":{" + args + "}}\n";
}

// One DFTracer 1.x process file: kStatFiles stats of distinct paths, then
// open, kReads preads and close of /data/train.bin.
std::string write_trace(const TraceDir& dir) {
  const std::string file = dir.path() + "/many-files-77.pfw";
  std::ofstream out(file);
  out << "[\n";
  int id = 1;
  int64_t ts = 1000;
  for (int i = 0; i < kStatFiles; ++i, ts += 10)
    out << event(id++, "stat", ts,
                 "\"fname\":\"/data/meta/d" + std::to_string(i % kDirs) + "/f" + std::to_string(i) + "\",\"ret\":0");
  out << event(id++, "open64", ts += 10, "\"fname\":\"/data/train.bin\",\"ret\":5");
  for (int i = 0; i < kReads; ++i)
    out << event(id++, "pread64", ts += 10,
                 "\"fname\":\"/data/train.bin\",\"fd\":5,\"size\":4096,\"offset\":" + std::to_string(i * 8192) +
                     ",\"ret\":4096");
  out << event(id++, "close", ts += 10, "\"fname\":\"/data/train.bin\",\"fd\":5,\"ret\":0");
  out << "]\n";
  return file;
}

AnalyzeOptions options(const std::string& input) {
  AnalyzeOptions o;
  o.input = input;
  o.threads = 1;
  return o;
}

}  // namespace

TEST(ManyFiles, EveryPathIsAFileWithoutAnAccessRecord) {
  TraceDir dir;
  const std::string trace = write_trace(dir);
  const Job job = analyze_job(options(trace));
  ASSERT_EQ(job.files.size(), static_cast<size_t>(kStatFiles + 1));
  size_t stat_only = 0;
  for (const FileAgg& f : job.files) {
    const std::string path(f.path);
    ASSERT_EQ(f.procs().size(), 1u) << path;
    if (path == "/data/train.bin") continue;
    ++stat_only;
    EXPECT_EQ(f.stats, 1u) << path;
    EXPECT_EQ(f.reads + f.writes + f.opens, 0u) << path;
    EXPECT_EQ(f.procs()[0].pf.access.find(), nullptr) << path;  // no coverage, samples or epochs allocated
    EXPECT_EQ(file_role(f, job), Role::kOther) << path;
    EXPECT_EQ(classify_file(f, job).evidence, std::vector<std::string>{"metadata only (stat/open without data)"});
  }
  EXPECT_EQ(stat_only, static_cast<size_t>(kStatFiles));

  const FileAgg& data = job.files.at("/data/train.bin");
  EXPECT_EQ(data.opens, 1u);
  EXPECT_EQ(data.reads, static_cast<uint64_t>(kReads));
  EXPECT_EQ(data.bytes_read, int64_t{kReads} * 4096);
  EXPECT_EQ(data.extent, int64_t{kReads - 1} * 8192 + 4096);
  const FileAccess* acc = data.procs()[0].pf.access.find();
  ASSERT_NE(acc, nullptr);
  EXPECT_EQ(acc->coverage.measure(), int64_t{kReads} * 4096);
  EXPECT_EQ(acc->samples.size(), static_cast<size_t>(kReads));
  EXPECT_EQ(acc->seen, static_cast<uint64_t>(kReads));
}

TEST(ManyFiles, GraphHasOneStatNodePerDirectory) {
  TraceDir dir;
  const std::string trace = write_trace(dir);
  std::unique_ptr<Source> src = open_source(trace);
  strata::efg::Builder b;
  src->read_unit(0, b);
  ASSERT_EQ(b.processes().size(), 1u);
  const strata::efg::Graph& g = b.processes().begin()->second;
  size_t stat_nodes = 0, data_nodes = 0;
  for (const auto& n : g.nodes) {
    if (n.sig.function == "stat") {
      ++stat_nodes;
      EXPECT_EQ(n.sig.file.rfind("/data/meta/d", 0), 0u) << n.sig.file;
    }
    if (n.sig.file == "/data") ++data_nodes;  // open, pread, close of /data/train.bin
  }
  EXPECT_EQ(stat_nodes, static_cast<size_t>(kDirs));
  EXPECT_EQ(data_nodes, 3u);
  EXPECT_EQ(g.events, static_cast<uint64_t>(kStatFiles + kReads + 2));
}

TEST(ManyFiles, SavedAndLoadedStateGivesTheSameReport) {
  TraceDir dir;
  const std::string trace = write_trace(dir);
  const AnalyzeOptions o = options(trace);
  std::ostringstream local;
  run_passes(o).write_json(local);
  const std::string unit = analyze_unit_bytes(o, 0);
  EXPECT_EQ(report_from_bytes(o, unit, true), local.str());
  // The stat-only files' access records stay absent through a load.
  Job loaded;
  {
    auto passes = make_passes(o);
    UnitStates st(passes);
    st.load(unit);
    Analysis a(o, std::move(passes), std::move(st));
    loaded = a.job();
  }
  ASSERT_EQ(loaded.files.size(), static_cast<size_t>(kStatFiles + 1));
  EXPECT_EQ(loaded.files.at("/data/meta/d1/f1").procs()[0].pf.access.find(), nullptr);
  ASSERT_NE(loaded.files.at("/data/train.bin").procs()[0].pf.access.find(), nullptr);
  EXPECT_EQ(loaded.files.at("/data/train.bin").procs()[0].pf.coverage(), int64_t{kReads} * 4096);
  // "files" lists every path with its counts.
  EXPECT_NE(local.str().find("{\"path\": \"/data/meta/d3/f1999\", \"role\": \"other\", \"evidence\": [\"metadata only "
                             "(stat/open without data)\"], \"processes\": 1, \"shared\": false, \"access\": "
                             "\"metadata-only\", \"read_extent\": \"unknown\", \"pattern\": \"unknown\", \"reread\": -1, "
                             "\"reread_per_open\": -1, \"metadata_bound\": true, \"opens\": 0, \"fdopens\": 0, "
                             "\"reads\": 0, \"writes\": 0, \"stats\": 1, "),
            std::string::npos);
}
