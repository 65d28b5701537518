// Bad inputs: a clear error naming the file, never a crash. Options parsing.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "analysis/analyze.h"

using namespace strata::analysis;
namespace fs = std::filesystem;

namespace {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/strata-analysis-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string file(const std::string& name, const std::string& bytes) const {
    std::string p = path_ + "/" + name;
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string read_all(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// Runs the analysis; returns rc and the error text.
std::pair<int, std::string> run(const std::string& input) {
  AnalyzeOptions o;
  o.input = input;
  std::ostringstream out, err;
  int rc = run_analyze(o, out, err);
  return {rc, err.str()};
}

const std::string kBench = std::string(STRATA_SAMPLES_DIR) + "/bench-bench-5032-preload.pfw.gz";
const std::string kProbe = std::string(STRATA_SAMPLES_DIR) + "/probe-probe-4989-preload.pfw";

}  // namespace

TEST(BadInput, Missing) {
  auto [rc, err] = run("/nonexistent/trace");
  EXPECT_EQ(rc, 1);
  EXPECT_NE(err.find("/nonexistent/trace"), std::string::npos);
}

TEST(BadInput, EmptyFile) {
  TempDir d;
  std::string p = d.file("empty.pfw", "");
  auto [rc, err] = run(p);
  EXPECT_EQ(rc, 1);
  EXPECT_NE(err.find(p), std::string::npos);
  EXPECT_NE(err.find("empty"), std::string::npos);
}

TEST(BadInput, Foreign) {
  TempDir d;
  std::string p = d.file("image.png", std::string("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16));
  auto [rc, err] = run(p);
  EXPECT_EQ(rc, 1);
  EXPECT_NE(err.find(p), std::string::npos);
  EXPECT_NE(err.find("unknown file format"), std::string::npos);
  std::string q = d.file("notes.pfw", "hello world\nthis is not json\n");
  auto [rc2, err2] = run(q);
  EXPECT_EQ(rc2, 1);
  EXPECT_NE(err2.find(q + ":1: not a DFTracer trace"), std::string::npos);
}

TEST(BadInput, TruncatedGzip) {
  TempDir d;
  std::string bytes = read_all(kBench);
  std::string p = d.file("cut.pfw.gz", bytes.substr(0, bytes.size() / 2));
  auto [rc, err] = run(p);
  EXPECT_EQ(rc, 1);
  EXPECT_NE(err.find(p + ": truncated gzip stream"), std::string::npos) << err;
}

TEST(BadInput, CorruptGzip) {
  TempDir d;
  std::string bytes = read_all(kBench);
  for (size_t i = 100; i < 400; ++i) bytes[i] = static_cast<char>(bytes[i] ^ 0x5a);
  std::string p = d.file("bad.pfw.gz", bytes);
  auto [rc, err] = run(p);
  EXPECT_EQ(rc, 1);
  EXPECT_NE(err.find(p), std::string::npos) << err;
}

TEST(BadInput, TruncatedJsonLine) {
  TempDir d;
  std::string bytes = read_all(kProbe);
  std::string p = d.file("cut.pfw", bytes.substr(0, bytes.size() - 40));
  auto [rc, err] = run(p);
  EXPECT_EQ(rc, 1);
  EXPECT_NE(err.find(p + ":24: invalid JSON"), std::string::npos) << err;
}

TEST(BadInput, DirectoryWithoutTraces) {
  TempDir d;
  d.file("readme.txt", "nothing here");
  auto [rc, err] = run(d.path());
  EXPECT_EQ(rc, 1);
  EXPECT_NE(err.find(d.path()), std::string::npos);
  EXPECT_NE(err.find("no strata trace file"), std::string::npos);
}

TEST(Options, ParseSize) {
  EXPECT_EQ(parse_size("8GiB"), 8LL << 30);
  EXPECT_EQ(parse_size("512M"), 512LL << 20);
  EXPECT_EQ(parse_size("1000"), 1000);
  EXPECT_EQ(parse_size("2kb"), 2000);
  EXPECT_EQ(parse_size("x"), -1);
  EXPECT_EQ(parse_size("5 parsecs"), -1);
}

TEST(Staging, RereadFilesRankedAndReadOnceWarned) {
  Job job;
  job.sizes_known = true;
  auto add = [&](const std::string& path, int64_t extent, int64_t bytes_read, int64_t read_ns) {
    FileAgg& f = job.files[path];
    f.path = path;
    f.extent = extent;
    f.bytes_read = bytes_read;
    f.read_ns = read_ns;
    f.reads = 10;
  };
  add("/data/a.npz", 1000, 4000, 4000000);  // re-read 4x
  add("/data/b.npz", 1000, 2000, 1000000);  // re-read 2x
  add("/data/once.npz", 1000, 1000, 9000000);
  StageAdvice a = stage_advice(job, 1500, 4.0);
  ASSERT_EQ(a.picks.size(), 1u);
  EXPECT_EQ(a.picks[0].path, "/data/a.npz");
  // 4 ms * (1 - 1/4 - 1/4) = 2 ms
  EXPECT_EQ(a.picks[0].saved_ns, 2000000);
  EXPECT_EQ(a.used, 1000);
  ASSERT_EQ(a.warnings.size(), 1u);
  EXPECT_NE(a.warnings[0].find("/data/once.npz: read once"), std::string::npos);
}
