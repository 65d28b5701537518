// The job's file table (src/analysis/file_table.h): files sorted by path with
// their paths in one pool, a file of one process storing that process's record
// once, a second process splitting them, merges of units in any path order,
// and a real two-process job whose report survives strata.dask's
// save/merge/load trip byte for byte.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <span>
#include <string>

#include "analysis/analyze.h"
#include "analysis/file_table.h"
#include "analysis/pass.h"

using namespace strata::analysis;
namespace fs = std::filesystem;

namespace {

// A file of one process: `stats` stats and `reads` reads of 100 B.
FileAgg file_of(PathPool& pool, const std::string& path, int64_t pid, uint64_t stats, uint64_t reads) {
  FileAgg f;
  f.path = pool.add(path);
  f.stats = stats;
  f.reads = reads;
  f.bytes_read = static_cast<int64_t>(reads) * 100;
  f.first_ts = pid * 10;
  f.last_ts = pid * 10 + 5;
  f.set_only_process(pid);
  return f;
}

std::vector<std::string> paths(const FileTable& t) {
  std::vector<std::string> v;
  for (const FileAgg& f : t) v.emplace_back(f.path);
  return v;
}

// A table of one file record per name, in order: record i has pid i + 1
// and one stat (records of a name that repeats combine).
FileTable table_of(const std::vector<std::string>& names) {
  PathPool pool;
  std::deque<FileAgg> files;
  for (size_t i = 0; i < names.size(); ++i) files.push_back(file_of(pool, names[i], static_cast<int64_t>(i + 1), 1, 0));
  return FileTable(std::move(pool), std::move(files));
}

std::vector<std::string> sorted_distinct(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

std::vector<int64_t> pids(const FileAgg& f) {
  std::vector<int64_t> v;
  for (const FileProcRef fp : f.procs()) v.push_back(fp.pid);
  return v;
}

}  // namespace

TEST(FileTable, SortsByPathAndCombinesOnePathsRecordsInOrder) {
  PathPool pool;
  std::deque<FileAgg> files;
  files.push_back(file_of(pool, "/b", 7, 1, 0));
  files.push_back(file_of(pool, "/a", 7, 2, 3));
  files.push_back(file_of(pool, "/c", 7, 1, 0));
  files.push_back(file_of(pool, "/a", 9, 0, 5));  // a second process of /a
  FileTable t(std::move(pool), std::move(files));
  ASSERT_EQ(paths(t), (std::vector<std::string>{"/a", "/b", "/c"}));

  const FileAgg& a = t.at("/a");
  EXPECT_EQ(pids(a), (std::vector<int64_t>{7, 9}));
  EXPECT_EQ(a.stats, 2u);
  EXPECT_EQ(a.reads, 8u);
  EXPECT_EQ(a.bytes_read, 800);
  EXPECT_EQ(a.first_ts, 70);
  EXPECT_EQ(a.last_ts, 95);
  EXPECT_EQ(a.procs()[0].pf.reads, 3u);
  EXPECT_EQ(a.procs()[1].pf.reads, 5u);

  // One process: its record is the file's counts, not a copy.
  const FileAgg& b = t.at("/b");
  ASSERT_EQ(b.procs().size(), 1u);
  EXPECT_EQ(b.procs()[0].pid, 7);
  EXPECT_EQ(&b.procs()[0].pf, static_cast<const ProcFile*>(&b));
  EXPECT_EQ(t.find("/d"), nullptr);
  EXPECT_THROW(t.at("/d"), std::out_of_range);
}

// The sort keys on the 8 bytes after the prefix every path shares: paths that
// end inside those 8 bytes, that agree on them and differ later, a NUL byte
// (a key padded with zeros ties with it), and one path's records kept in
// their order, all in the order of std::string's operator<.
TEST(FileTable, SortsPathsSharingLongPrefixesByteForByte) {
  const std::string base = "/data/set/shard-";
  std::vector<std::string> names = {
      base + "0001/f9",          base + "0001/f10",          base + "0001",        base + "0001/",
      base + "0001/f9/deeper-a", base + "0001/f9/deeper-b",  base + "000",         base + "0001/f9",
      base + "1",                base + std::string("0001\0x", 6), base + "0001\x80",  base + "0001/f9/deeper-a",
      base + "00012345678",      base + "00012345679",       base + "0001234567",  base.substr(0, base.size() - 1)};
  for (int i = 0; i < 200; ++i) names.push_back(base + "0001/f" + std::to_string((i * 7919) % 200));
  const FileTable t = table_of(names);
  ASSERT_EQ(paths(t), sorted_distinct(names));
  // Records of one path combined in their order (first seen first).
  const FileAgg& f9 = t.at(base + "0001/f9");
  EXPECT_EQ(pids(f9).front(), 1);
  EXPECT_EQ(pids(f9)[1], 8);
  EXPECT_EQ(f9.stats, 2u + 1u);  // twice by name, once as "f" + (i * 7919) % 200 == 9
}

// More files than one bucket of the in-place permutation (4,096 records):
// each record reaches its place with its own counts, and the records of one
// path, in different buckets before the sort, still combine in their order.
// Names of one directory agree far past the sort items' 16 bytes: runs of
// them are keyed again, several levels deep.
TEST(FileTable, SortsManyShuffledFilesInPlace) {
  const int n = 20000;
  auto name = [](int k) {
    return "/d" + std::to_string(k % 97) + "/shard-of-a-data-set-with-a-long-name-" + std::to_string(k);
  };
  PathPool pool;
  std::deque<FileAgg> files;
  for (int i = 0; i < n; ++i) {
    const int k = (i * 7919) % n;  // 0 .. n-1 shuffled (7919 is prime)
    files.push_back(file_of(pool, name(k), k + 1, static_cast<uint64_t>(k), 0));
  }
  for (int i = 0; i < 3; ++i) files.push_back(file_of(pool, name(5), 100000 + i, 1, 1));
  FileTable t(std::move(pool), std::move(files));

  std::vector<std::string> want;
  for (int k = 0; k < n; ++k) want.push_back(name(k));
  std::sort(want.begin(), want.end());
  ASSERT_EQ(paths(t), want);
  for (const FileAgg& f : t) {
    if (f.path == name(5)) continue;
    const int k = static_cast<int>(f.stats);
    ASSERT_EQ(f.path, name(k));
    ASSERT_EQ(pids(f), std::vector<int64_t>{k + 1});
  }
  EXPECT_EQ(pids(t.at(name(5))), (std::vector<int64_t>{6, 100000, 100001, 100002}));
  EXPECT_EQ(t.at(name(5)).stats, 5u + 3u);
  EXPECT_EQ(t.at(name(5)).reads, 3u);
}

// Paths of every byte value (0, 0x80, 0xff among them), of every length
// from 0 to past the sort items' 16 bytes, sharing prefixes, many twice:
// the table's order is std::string's, byte for byte, and the records of one
// path combine in the order they were given.
TEST(FileTable, SortsArbitraryBytesAsStringsDo) {
  std::mt19937_64 rng(20261127);
  const std::string alphabet = std::string("\0\x01/a.b\x7f\x80\xfe\xff", 10);
  std::vector<std::string> names;
  for (int i = 0; i < 30000; ++i) {
    std::string s = i % 3 == 0 ? "/common/prefix/of/forty/bytes/or/so/" : "";
    const size_t len = rng() % 40;
    for (size_t k = 0; k < len; ++k) s += alphabet[rng() % alphabet.size()];
    names.push_back(s.empty() ? "x" : s);  // an empty path is no file
    if (i % 5 == 0) names.push_back(names[rng() % names.size()]);
  }
  const FileTable t = table_of(names);
  ASSERT_EQ(paths(t), sorted_distinct(names));
  for (const FileAgg& f : t) {
    const std::vector<int64_t> got = pids(f);
    ASSERT_TRUE(std::is_sorted(got.begin(), got.end())) << f.path;
    for (int64_t pid : got) ASSERT_EQ(names[static_cast<size_t>(pid - 1)], f.path);
    ASSERT_EQ(f.stats, got.size());
  }
}

TEST(FileTable, MergeOfInterleavedUnitsKeepsPathOrderAndUnitOrder) {
  PathPool p1, p2;
  std::deque<FileAgg> f1, f2;
  for (const char* path : {"/x/1", "/x/3", "/x/5"}) f1.push_back(file_of(p1, path, 1, 1, 1));
  for (const char* path : {"/x/0", "/x/3", "/x/9"}) f2.push_back(file_of(p2, path, 2, 1, 2));
  FileTable first(std::move(p1), std::move(f1)), later(std::move(p2), std::move(f2));
  first.merge(later);
  EXPECT_TRUE(later.empty());
  ASSERT_EQ(paths(first), (std::vector<std::string>{"/x/0", "/x/1", "/x/3", "/x/5", "/x/9"}));
  const FileAgg& shared = first.at("/x/3");
  EXPECT_EQ(pids(shared), (std::vector<int64_t>{1, 2}));  // the earlier unit's process first
  EXPECT_EQ(shared.reads, 3u);
  EXPECT_EQ(shared.stats, 2u);
  EXPECT_EQ(pids(first.at("/x/9")), std::vector<int64_t>{2});

  // A unit wholly after the table: appended.
  PathPool p3;
  std::deque<FileAgg> f3;
  f3.push_back(file_of(p3, "/z", 3, 4, 0));
  FileTable last(std::move(p3), std::move(f3));
  first.merge(last);
  EXPECT_EQ(paths(first).back(), "/z");
  EXPECT_EQ(first.size(), 6u);
}

TEST(FileTable, CopiesOwnTheirPathsAndLongPathsSurvive) {
  const std::string long_path = "/deep/" + std::string(600 * 1024, 'p');  // past a quarter chunk
  FileTable copy;
  {
    PathPool pool;
    std::deque<FileAgg> files;  // ~0.6 MiB of paths: two chunks; out of path order
    for (int i = 0; i < 50000; ++i) files.push_back(file_of(pool, "/many/" + std::to_string(i), 1, 1, 0));
    FileTable t(std::move(pool), std::move(files));
    t[long_path].stats = 2;
    t["/many/7"].add_process(4, ProcFile{});
    copy = t;
  }
  ASSERT_EQ(copy.size(), 50001u);
  EXPECT_EQ(copy.at(long_path).stats, 2u);
  EXPECT_EQ(copy.at("/many/49999").stats, 1u);
  EXPECT_EQ(pids(copy.at("/many/7")), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(copy.at("/many/7").stats, 1u);
  EXPECT_TRUE(std::is_sorted(copy.begin(), copy.end(), [](const FileAgg& a, const FileAgg& b) { return a.path < b.path; }));
  size_t n = 0;
  for (const FileAgg& f : copy) n += f.path.starts_with("/many/");
  EXPECT_EQ(n, 50000u);
}

namespace {

class TraceDir {
 public:
  TraceDir() {
    char tmpl[] = "/tmp/strata-file-table-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TraceDir() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// One DFTracer process file of pid `pid`: stats of its own 300 paths, then
// `reads` 4 KiB preads of /data/shared.bin.
void write_process(const TraceDir& dir, int pid, int reads) {
  std::ofstream out(dir.path() + "/job-" + std::to_string(pid) + ".pfw");
  out << "[\n";
  int id = 1;
  int64_t ts = 1000;
  auto event = [&](const char* name, const std::string& args) {
    out << "{\"id\":" << id++ << ",\"name\":\"" << name << "\",\"cat\":\"POSIX\",\"pid\":" << pid << ",\"tid\":" << pid
        << ",\"ts\":" << (ts += 10) << ",\"dur\":2,\"ph\":\"X\",\"args\":{" << args << "}}\n";
  };
  for (int i = 0; i < 300; ++i)
    event("stat", "\"fname\":\"/data/p" + std::to_string(pid) + "/f" + std::to_string(i) + "\",\"ret\":0");
  event("open64", "\"fname\":\"/data/shared.bin\",\"ret\":5");
  for (int i = 0; i < reads; ++i)
    event("pread64", "\"fname\":\"/data/shared.bin\",\"fd\":5,\"size\":4096,\"offset\":" + std::to_string(i * 4096) +
                         ",\"ret\":4096");
  event("close", "\"fname\":\"/data/shared.bin\",\"fd\":5,\"ret\":0");
  out << "]\n";
}

}  // namespace

TEST(FileTable, TwoProcessJobCountsExactlyAndSurvivesDaskTrip) {
  TraceDir dir;
  write_process(dir, 11, 3);
  write_process(dir, 12, 5);
  AnalyzeOptions o;
  o.input = dir.path();
  o.threads = 2;
  const Job job = analyze_job(o);
  ASSERT_EQ(job.files.size(), 601u);  // 2 x 300 own paths + the shared file
  const FileAgg& shared = job.files.at("/data/shared.bin");
  EXPECT_EQ(shared.reads, 8u);
  EXPECT_EQ(shared.opens, 2u);
  EXPECT_EQ(shared.bytes_read, 8 * 4096);
  ASSERT_EQ(shared.procs().size(), 2u);
  EXPECT_EQ(shared.procs()[0].pf.reads + shared.procs()[1].pf.reads, 8u);
  const FileAgg& own = job.files.at("/data/p12/f299");
  EXPECT_EQ(own.stats, 1u);
  EXPECT_EQ(pids(own), std::vector<int64_t>{12});

  // strata.dask: each unit saved, merged as bytes, the report from the bytes.
  std::ostringstream local;
  run_passes(o).write_json(local);
  ASSERT_EQ(list_units(dir.path()).size(), 2u);
  const std::string merged = merge_bytes(o, analyze_unit_bytes(o, 0), analyze_unit_bytes(o, 1));
  EXPECT_EQ(report_from_bytes(o, merged, true), local.str());
}

// The name tests of classify_file and is_environment_file, rewritten to scan
// a path once (file name extension, memchr-based search): each rule still
// matches where it did, case folded where it was.
// files_with_data: the files that read, wrote or count bytes, in path order;
// the finished job's index, or one built on the spot; never another job's
// records (a copy indexes its own, a merge drops the index).
TEST(FileTable, FilesWithDataAreThisJobsInPathOrder) {
  Job job;
  job.files["/b/read"].reads = 2;
  job.files["/a/stat-only"].stats = 5;
  job.files["/c/wrote"].writes = 1;
  job.files["/a/bytes"].bytes_read = 7;  // bytes without a call (a hand-built record)
  job.files["/d/open-only"].opens = 1;
  auto names = [](const Job& j) {
    std::vector<std::string> v;
    for (const FileAgg& f : files_with_data(j)) v.emplace_back(f.path);
    return v;
  };
  const std::vector<std::string> want = {"/a/bytes", "/b/read", "/c/wrote"};
  EXPECT_EQ(names(job), want);  // not indexed: built on the spot
  index_data_files(job);
  EXPECT_TRUE(job.data_files.known);
  EXPECT_EQ(names(job), want);  // the job's own index
  const Job copy = job;
  EXPECT_FALSE(copy.data_files.known);
  for (const FileAgg& f : files_with_data(copy)) {
    EXPECT_EQ(copy.files.find(f.path), &f) << f.path;  // the copy's records, not job's
  }
  Job later;
  later.files["/e/read"].reads = 1;
  later.units.push_back("later");
  job.units.push_back("first");
  merge_jobs(job, later);
  EXPECT_FALSE(job.data_files.known);
  EXPECT_EQ(names(job), (std::vector<std::string>{"/a/bytes", "/b/read", "/c/wrote", "/e/read"}));
}

TEST(FileRoles, NameRulesMatchWhereTheyDid) {
  Job job;
  job.by_epoch["0"];  // a training job: the data-set rules name train and validation
  PathPool pool;
  auto role = [&](const std::string& path, uint64_t reads, uint64_t writes, int64_t written = 0) {
    FileAgg f = file_of(pool, path, 1, 1, reads);
    f.writes = writes;
    f.bytes_written = written;
    return classify_file(f, job).role;
  };
  EXPECT_EQ(role("/x/libfoo.so", 1, 0), Role::kLibrary);
  EXPECT_EQ(role("/x/libfoo.so.1.2", 1, 0), Role::kLibrary);
  EXPECT_EQ(role("/x/MOD.PY", 1, 0), Role::kLibrary);  // lower-cased
  EXPECT_EQ(role("/x/a.so/data.bin", 20, 0), Role::kTrainData);  // ".so" of a directory is no extension
  EXPECT_EQ(role("/env/lib/python3/Site-Packages/x/data", 1, 0), Role::kLibrary);
  EXPECT_EQ(role("/usr/LIB/x", 1, 0), Role::kLibrary);
  EXPECT_EQ(role("/run/train.LOG", 0, 3), Role::kLog);
  EXPECT_EQ(role("/run/out.csv.log", 0, 3), Role::kLog);
  EXPECT_EQ(role("/run/model.h5.ckpt", 0, 1), Role::kCheckpoint);
  EXPECT_EQ(role("/run/Checkpoints/step", 0, 1), Role::kCheckpoint);
  EXPECT_EQ(role("/cfg/Config.YAML", 1, 0), Role::kConfig);
  EXPECT_EQ(role("/data/val/shard.tfrecord", 1, 0), Role::kValData);
  EXPECT_EQ(role("/data/train/shard.tfrecord", 1, 0), Role::kTrainData);
  EXPECT_EQ(role("/data/train/shard", 1, 0), Role::kOther);
  EXPECT_EQ(role("/data/train.d/noext", 0, 0), Role::kOther);
  EXPECT_EQ(role("noslash.npy", 1, 0), Role::kTrainData);
  EXPECT_EQ(role("/run/big.out.bin", 0, 1, 2 << 20), Role::kCheckpoint);  // large write-only
  // Not a training job: no split, and a large output is not a checkpoint
  // unless its name says so.
  job.by_epoch.clear();
  EXPECT_EQ(role("/data/val/shard.tfrecord", 1, 0), Role::kData);
  EXPECT_EQ(role("/data/train/shard.tfrecord", 1, 0), Role::kData);
  EXPECT_EQ(role("/run/big.out.bin", 0, 1, 2 << 20), Role::kOutput);
  EXPECT_EQ(role("/run/model.h5.ckpt", 0, 1, 2 << 20), Role::kCheckpoint);
  EXPECT_EQ(role("/run/train.LOG", 0, 3, 2 << 20), Role::kLog);

  EXPECT_TRUE(is_environment_file("/data/x", Role::kLibrary));
  for (const char* p : {"/usr/x", "/etc/passwd", "/opt/conda/x", "/home/u/.venv/lib/site-packages/a/b",
                        "/h/dist-packages/x", "/h/__pycache__/m.cpython.pyc", "/tmp/ompi.host.1/x",
                        "/tmp/openmpi-sessions-1/x", "/dev/shm/vader_segment.1", "/tmp/mpich_1", "/tmp/ucx_x",
                        "/h/m.pyc", "/h/m.so", "/h/m.so.1", "/h/s/"})
    EXPECT_EQ(is_environment_file(p, Role::kOther), std::string_view(p) != "/h/s/") << p;
  for (const char* p : {"/data/x", "/usrx/y", "/h/Site-Packages/x", "/h/sitepackages/", "/h/m.PYC", "/h/so", "/", ""})
    EXPECT_FALSE(is_environment_file(p, Role::kOther)) << p;
}
