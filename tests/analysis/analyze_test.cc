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
  ASSERT_GE(bytes.size(), 400u) << "sample missing or short: " << kBench;
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

// ---- directory roll-ups, grouped staging advice, deep-learning summary ------

namespace {

FileAgg& add_file(Job& job, const std::string& path, int64_t extent, int64_t bytes_read, int64_t read_ns) {
  FileAgg& f = job.files[path];
  f.extent = extent;
  f.bytes_read = bytes_read;
  f.read_ns = read_ns;
  f.reads = 10;
  return f;
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

}  // namespace

TEST(Rollup, ParentDir) {
  EXPECT_EQ(parent_dir("/d/train/a.png"), "/d/train/");
  EXPECT_EQ(parent_dir("/d/train/"), "/d/");
  EXPECT_EQ(parent_dir("/a"), "/");
  EXPECT_EQ(parent_dir("/"), "/");
  EXPECT_EQ(parent_dir("a.png"), "");
}

// rollup_dirs over owned strings (it takes views).
std::vector<std::string> rollup_dirs(const std::vector<std::pair<std::string, std::string>>& items,
                                     const std::vector<std::pair<std::string, std::string>>& universe) {
  auto views = [](const std::vector<std::pair<std::string, std::string>>& v) {
    return std::vector<PathKey>(v.begin(), v.end());
  };
  return strata::analysis::rollup_dirs(views(items), views(universe));
}

TEST(Rollup, ClimbsWhileTheParentHoldsOnlyTheSameKey) {
  std::vector<std::pair<std::string, std::string>> items, universe;
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < 2; ++i) items.emplace_back("/d/train/c" + std::to_string(c) + "/" + std::to_string(i) + ".png", "T");
  for (int i = 0; i < 4; ++i) items.emplace_back("/d/val/" + std::to_string(i) + ".png", "V");
  items.emplace_back("/d/x/only.png", "T");               // alone: 1 item
  for (int i = 0; i < 4; ++i) items.emplace_back("/r" + std::to_string(i) + "/f.png", "T");  // never up to "/"
  universe = items;
  universe.emplace_back("/d/ckpt/model.pt", "");  // /d/ holds other files: no climb to it
  auto dirs = rollup_dirs(items, universe);
  ASSERT_EQ(dirs.size(), items.size());
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(dirs[i], "/d/train/") << items[i].first;
  for (size_t i = 6; i < 10; ++i) EXPECT_EQ(dirs[i], "/d/val/") << items[i].first;
  EXPECT_EQ(dirs[10], "");
  for (size_t i = 11; i < 15; ++i) EXPECT_EQ(dirs[i], "") << items[i].first;

  // Three picks of train/c0 and one of c1, c1 also holding an unpicked file:
  // c1 is impure, so the c0 files stop at c0/ (3 < 4: alone), c1's pick too.
  std::vector<std::pair<std::string, std::string>> picks = {
      {"/d/train/c0/a", "P"}, {"/d/train/c0/b", "P"}, {"/d/train/c0/c", "P"}, {"/d/train/c1/a", "P"}};
  universe = picks;
  universe.emplace_back("/d/train/c1/b", "");
  dirs = rollup_dirs(picks, universe);
  EXPECT_EQ(dirs, std::vector<std::string>(4, ""));
  // Without the unpicked file all four meet in train/ (their deepest common directory).
  dirs = rollup_dirs(picks, picks);
  EXPECT_EQ(dirs, std::vector<std::string>(4, "/d/train/"));
}

TEST(Staging, GroupedByDirectoryInJsonAndText) {
  Job job;
  job.sizes_known = true;
  job.by_epoch["0"];  // a training job: train and validation data sets
  // 5 training files re-read 4x in two class directories: each saves
  // 4 ms * (1 - 1/4 - 1/4) = 2 ms.
  for (int i = 0; i < 5; ++i)
    add_file(job, "/job/train/c" + std::to_string(i % 2) + "/f" + std::to_string(i) + ".png", 1000, 4000, 4000000);
  // 4 validation files re-read 2x: 1 ms * (1 - 1/4 - 1/2) = 0.25 ms each.
  for (int i = 0; i < 4; ++i) add_file(job, "/job/val/v" + std::to_string(i) + ".png", 1000, 2000, 1000000);
  // One training file directly in /job/: 3 ms * 0.5 = 1.5 ms, alone.
  add_file(job, "/job/cfg.npz", 1000, 4000, 3000000);
  // 5 files read once.
  for (int i = 0; i < 5; ++i) add_file(job, "/job/once/o" + std::to_string(i) + ".dat", 1000, 1000, 500000);

  StageAdvice a = stage_advice(job, 1 << 20, 4.0);
  EXPECT_EQ(a.picks.size(), 10u);
  EXPECT_EQ(a.used, 10000);
  EXPECT_EQ(a.saved_ns, 5 * 2000000 + 1500000 + 4 * 250000);
  ASSERT_EQ(a.groups.size(), 3u);
  EXPECT_EQ(a.groups[0].name, "/job/train/");
  EXPECT_TRUE(a.groups[0].is_dir);
  EXPECT_EQ(a.groups[0].files, 5u);
  EXPECT_EQ(a.groups[0].size, 5000);
  EXPECT_EQ(a.groups[0].read_ns, 20000000);
  EXPECT_EQ(a.groups[0].bytes_read, 20000);
  EXPECT_EQ(a.groups[0].saved_ns, 10000000);
  EXPECT_EQ(a.groups[0].reread, 4.0);
  EXPECT_EQ(a.groups[1].name, "/job/cfg.npz");
  EXPECT_FALSE(a.groups[1].is_dir);
  EXPECT_EQ(a.groups[1].saved_ns, 1500000);
  EXPECT_EQ(a.groups[2].name, "/job/val/");
  EXPECT_EQ(a.groups[2].files, 4u);
  EXPECT_EQ(a.groups[2].saved_ns, 1000000);
  EXPECT_EQ(a.groups[2].reread, 2.0);
  ASSERT_EQ(a.warnings.size(), 5u);
  ASSERT_EQ(a.warning_groups.size(), 1u);
  EXPECT_EQ(a.warning_groups[0].name, "/job/once/");
  EXPECT_EQ(a.warning_groups[0].reason, "read once");
  EXPECT_EQ(a.warning_groups[0].files, 5u);
  EXPECT_EQ(a.warning_groups[0].size, 5000);

  AnalyzeOptions o;
  o.input = "synthetic";
  o.stage_capacity = 1 << 20;
  std::ostringstream text;
  write_text(job, o, text);
  const std::string t = text.str();
  EXPECT_NE(t.find("== Staging advice (capacity 1.00 MiB, fast tier x4) ==\n"
                   "  stage /job/train/: 5 files, 4.88 KiB, read 4.00x, saves ~10.0 ms\n"
                   "  stage /job/cfg.npz: 1000 B, read 4.00x, saves ~1.50 ms\n"
                   "  stage /job/val/: 4 files, 3.91 KiB, read 2.00x, saves ~1.00 ms\n"
                   "  total 10 files, 9.77 KiB, expected I/O time saved 12.5 ms (not worth staging: 1 item, --all)\n"),
            std::string::npos)
      << t;
  {
    AnalyzeOptions all = o;
    all.all = true;
    std::ostringstream listed;
    write_text(job, all, listed);
    EXPECT_NE(listed.str().find("  total 10 files, 9.77 KiB, expected I/O time saved 12.5 ms\n"
                                "  do not stage /job/once/: 5 files, 4.88 KiB, read once: staging costs a full read\n"),
              std::string::npos)
        << listed.str();
  }
  // Files table: data set files rolled up by directory (role, then I/O time).
  EXPECT_NE(t.find("  dataset(train) /job/train/: 5 files, 4.88 KiB, 0 readers (0/file)\n"
                   "     read 19.5 KiB (x4.00), 0/5 whole; read/meta 20.0 ms/0 s\n"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("  data set directories (14 file(s) rolled up, not listed below; --json \"dataset_dirs\"):\n"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("  /job/cfg.npz  (dataset(train), 1000 B, read-only, one process)\n"
                   "     r/w/open/stat 10/0/0/0; bytes r/w 3.91 KiB/0 B; time r/w/meta 3.00 ms/0 s/0 s\n"),
            std::string::npos)
      << t;

  std::ostringstream json;
  write_json(job, o, json);
  const std::string j = json.str();
  EXPECT_NE(j.find("\"groups\": [{\"dir\": \"/job/train/\", \"files\": 5, \"size\": 5000, \"read_ns\": 20000000, "
                   "\"bytes_read\": 20000, \"reread\": 4, \"saved_ns\": 10000000},"),
            std::string::npos)
      << j;
  EXPECT_NE(j.find("\"warning_groups\": [{\"dir\": \"/job/once/\", \"files\": 5, \"size\": 5000, \"read_ns\": "
                   "2500000, \"bytes_read\": 5000, \"reread\": 1, \"reason\": \"read once\"}]"),
            std::string::npos)
      << j;
  EXPECT_NE(j.find("{\"dir\": \"/job/val/\", \"role\": \"dataset(validation)\", \"files\": 4, \"opens\": 0, \"file_opens\": 0, "
                   "\"reads\": 40, \"stats\": 0, \"bytes_read\": 8000, \"extent\": 4000, \"reread\": 2,"),
            std::string::npos)
      << j;
  // The epoch that makes it a training job also brings the deep-learning summary.
  EXPECT_NE(t.find("Deep learning"), std::string::npos);
  EXPECT_EQ(j.find("\"dl_summary\": null"), std::string::npos);
}

TEST(Staging, TextCappedJsonComplete) {
  Job job;
  job.sizes_known = true;
  // 20 picks, each alone (a directory of its own right under "/").
  for (int i = 0; i < 20; ++i) add_file(job, "/r" + std::to_string(100 + i) + "/f.npz", 1000, 4000, 4000000 + i);
  AnalyzeOptions o;
  o.input = "synthetic";
  o.stage_capacity = 1 << 20;
  std::ostringstream text, json;
  write_text(job, o, text);
  write_json(job, o, json);
  const std::string t = text.str(), j = json.str();
  EXPECT_EQ(count_of(t, "  stage /r"), 3u) << t;  // --top 3 by default
  EXPECT_NE(t.find("  stage /r119/f.npz: "), std::string::npos);  // largest saving first
  EXPECT_NE(t.find("  stage /r117/f.npz: "), std::string::npos);
  EXPECT_EQ(t.find("  stage /r116/f.npz: "), std::string::npos);
  EXPECT_NE(t.find("  ... 17 more (17 files; --json for all)\n  total 20 files, 19.5 KiB, "), std::string::npos) << t;
  o.all = true;  // every row
  std::ostringstream all;
  write_text(job, o, all);
  EXPECT_EQ(count_of(all.str(), "  stage /r"), 20u) << all.str();
  EXPECT_EQ(count_of(j, "{\"path\": \"/r1"), 20u + 20u + 20u);  // files, staging files, staging groups
}

TEST(DlSummary, EpochsLoaderWaitRolesAndFirstEpoch) {
  Job job;
  job.sizes_known = true;
  auto epoch = [&](const std::string& v, int64_t first, int64_t last, uint64_t waits, int64_t wait_ns, int64_t io,
                   int64_t rd) {
    TagAgg& a = job.by_epoch[v];
    a.events = 10;
    a.first_ts = first;
    a.last_ts = last;
    a.loader_waits = waits;
    a.loader_wait_ns = wait_ns;
    a.io_ns = io;
    a.read_ns = rd;
    a.reads = 4;
    a.bytes_read = 4096;
  };
  epoch("0", 1000000000, 11000000000, 5, 2000000000, 4000000, 3000000);
  epoch("1", 11000000000, 16000000000, 5, 500000000, 1000000, 500000);
  epoch("2", 16000000000, 21000000000, 5, 1500000000, 3000000, 1500000);
  epoch("10", 21000000000, 22000000000, 1, 100000000, 1000000, 1000000);  // a shorter pass: left out
  auto func = [&](const std::string& name, const std::string& cat, uint64_t n, int64_t ns) {
    FuncStats& f = job.funcs["APP/" + cat + "/" + name];
    f.name = name;
    f.category = cat;
    f.layer = Layer::kApp;
    f.count = n;
    f.total_ns = ns;
  };
  func("dataloader.next", "dataloader", 17, 4200000000);  // one untagged: 4.1 s tagged
  func("torch.save", "checkpoint", 3, 30000000);
  func("SmallCNN.forward", "compute", 16, 1000000000);
  FileAgg& ck = job.files["/run/model.ckpt"];
  ck.writes = 3;
  ck.bytes_written = 3 << 20;
  ck.extent = 1 << 20;
  add_file(job, "/run/data/a.npy", 1000, 3000, 1000);
  add_file(job, "/run/data/val_b.npy", 500, 1500, 2000);

  DlSummary s = dl_summary(job);
  ASSERT_TRUE(s.present);
  EXPECT_EQ(s.batches, 17u);
  EXPECT_EQ(s.loader_wait_ns, 4200000000);
  ASSERT_EQ(s.epochs.size(), 4u);
  EXPECT_EQ(s.epochs[0].value, "0");
  EXPECT_EQ(s.epochs[1].value, "1");
  EXPECT_EQ(s.epochs[2].value, "2");
  EXPECT_EQ(s.epochs[3].value, "10");  // numeric order, not "10" < "2"
  EXPECT_EQ(s.epochs[0].wall_ns, 10000000000);
  EXPECT_EQ(s.epochs[0].loader_wait_ns, 2000000000);
  EXPECT_EQ(s.epochs[0].batches, 5u);
  EXPECT_TRUE(s.has_first_vs_rest);
  EXPECT_EQ(s.compared, (std::vector<std::string>{"1", "2"}));
  EXPECT_EQ(s.left_out, (std::vector<std::string>{"10"}));
  EXPECT_EQ(s.first_io_ns, 4000000);
  EXPECT_EQ(s.rest_io_ns, 2000000.0);
  EXPECT_EQ(s.rest_read_ns, 1000000.0);
  ASSERT_EQ(s.roles.size(), 3u);
  EXPECT_EQ(s.roles[0].role, Role::kTrainData);
  EXPECT_EQ(s.roles[0].files, 1u);
  EXPECT_EQ(s.roles[0].bytes_read, 3000);
  EXPECT_EQ(s.roles[1].role, Role::kValData);
  EXPECT_EQ(s.roles[1].bytes_read, 1500);
  EXPECT_EQ(s.roles[2].role, Role::kCheckpoint);
  EXPECT_EQ(s.roles[2].writes, 3u);
  EXPECT_EQ(s.roles[2].bytes_written, 3 << 20);
  ASSERT_EQ(s.checkpoint_calls.size(), 1u);
  EXPECT_EQ(s.checkpoint_calls[0].name, "torch.save");
  EXPECT_EQ(s.checkpoint_calls[0].count, 3u);

  AnalyzeOptions o;
  o.input = "synthetic";
  std::ostringstream text;
  write_text(job, o, text);
  const std::string t = text.str();
  EXPECT_NE(t.find("\n== Deep learning == 4 epochs (tag \"epoch\"), 17 batches; all loops waited 4.20 s for data\n"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("  0            10.0 s      2.00 s   20.0%        5          -    4.00 ms    4.00 KiB\n"),
            std::string::npos)
      << t;
  // The header's 4.20 s holds an untagged wait the rows do not: --all gives the split.
  EXPECT_EQ(t.find("(waited for data: "), std::string::npos) << t;
  o.all = true;
  std::ostringstream all_text;
  write_text(job, o, all_text);
  EXPECT_NE(all_text.str().find("\n  (waited for data: 4.10 s in the epochs' training loops + 100 ms in other loaders' passes)\n"),
            std::string::npos)
      << all_text.str();
  EXPECT_NE(t.find("first epoch 0 vs mean of 1, 2: I/O 4.00 ms vs 2.00 ms (x2.00), read 3.00 ms vs 1.00 ms (x3.00)\n"
                   "  (left out: epoch 10, not as many loader batches as the first)\n"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("files by role: train 1, validation 1, checkpoint 1\n"), std::string::npos) << t;
  EXPECT_NE(t.find("checkpoint calls (app events, category checkpoint): torch.save 3x 30.0 ms\n"), std::string::npos);
  // --all: the roles table and the by-epoch table.
  o.all = true;
  std::ostringstream all;
  write_text(job, o, all);
  const std::string ta = all.str();
  EXPECT_NE(ta.find("  checkpoint                 1         0          0 B         3     3.00 MiB              0 s\n"),
            std::string::npos)
      << ta;
  EXPECT_LT(t.find("== Deep learning =="), t.find("== Job == "));
  // The by-epoch table in numeric order too.
  EXPECT_LT(ta.find("\n  2                     4"), ta.find("\n  10                    4")) << ta;
  EXPECT_NE(ta.find("\n  2                     4"), std::string::npos) << ta;
}

TEST(DlSummary, LoaderWaitClassification) {
  EXPECT_TRUE(classify("dataloader.next", "dataloader").is_loader_wait);
  EXPECT_TRUE(classify("DataLoader.next", "app").is_loader_wait);
  EXPECT_FALSE(classify("dataloader.batch", "dataloader").is_loader_wait);
  EXPECT_FALSE(classify("dataloader.next", "POSIX").is_loader_wait);
}
