// The job's files: what the analysis keeps per file and per (process, file),
// stored so that a file costs little more than its path and its counts. A
// job can touch millions of files that it only stat()s or opens (a Python
// import searching sys.path, a data set of small files), so every byte per
// file here is a byte per event on such traces (issue 9 §5).
//
//   PathPool    the paths' bytes, one after another in large chunks
//   ProcFile    one process's counts for one file
//   FileAgg     one file: the sums over its processes and who they are
//   FileTable   every file of the job, sorted by path
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/intervals.h"

namespace strata::analysis {

// A T allocated on first use (get()); copies copy the T. For parts of a
// per-file record that most files of a large job never need.
template <class T>
class Lazy {
 public:
  Lazy() = default;
  Lazy(const Lazy& o) : p_(o.p_ ? std::make_unique<T>(*o.p_) : nullptr) {}
  Lazy& operator=(const Lazy& o) {
    p_ = o.p_ ? std::make_unique<T>(*o.p_) : nullptr;
    return *this;
  }
  Lazy(Lazy&&) noexcept = default;
  Lazy& operator=(Lazy&&) noexcept = default;
  T& get() {
    if (!p_) p_ = std::make_unique<T>();
    return *p_;
  }
  const T* find() const { return p_.get(); }
  T* find() { return p_.get(); }
  void reset() { p_.reset(); }

 private:
  std::unique_ptr<T> p_;
};

struct Point {
  int64_t ts, offset, size, pid;
  bool write;
};

// What a (process, file) keeps of its reads and writes beyond counters: a
// stat- or open-only file (millions in some jobs) never allocates it.
// The fields every access updates come first, in one cache line: with
// thousands of files a record is rarely in the L1 or L2 cache.
struct FileAccess {
  uint64_t seen = 0;
  // The sampling window (UnitAgg::next_sample_window): the access it keeps
  // and its last access, by number (the first is 1), and its length. Used
  // only while the unit is read: not saved.
  uint64_t sample_pick = 1, window_end = 1, window = 1;
  int64_t max_read = 0, min_read = INT64_MAX;  // request sizes of reads that moved bytes
  // The epoch group (UnitAgg's, this unit only) last added to each list: a
  // run of accesses in one epoch adds it once, without string compares.
  int32_t last_write_group = -1, last_read_group = -1;
  bool offsets_known = false;  // an access's offset was known
  std::vector<Point> samples;
  IntervalSet coverage{1u << 14};
  std::vector<std::string> write_epochs;  // distinct epoch values while writing (<= 64)
  std::vector<std::string> read_epochs;
};

// Per (process, file).
// What a read updates comes first (7 of its first 8 words), then a write's.
struct ProcFile {
  int64_t first_ts = INT64_MAX, last_ts = INT64_MIN;
  uint64_t reads = 0;
  int64_t bytes_read = 0, read_ns = 0;
  int64_t extent = 0;  // max offset + bytes seen
  Lazy<FileAccess> access;  // allocated by the first read or write
  uint64_t writes = 0;
  int64_t bytes_written = 0, write_ns = 0;
  uint64_t opens = 0, stats = 0, seeks = 0, mmaps = 0, other_meta = 0;
  uint64_t fdopens = 0;  // the opens that were fdopen of a descriptor already open (not a new pass)
  int64_t meta_ns = 0;
  // Reads that returned 0 (the end of the file): calls, not requests for
  // data, so the mean request size leaves them out (Darshan's size bins do not).
  uint64_t eof_reads = 0;
  int64_t max_read() const { return access.find() ? access.find()->max_read : 0; }
  bool offsets_known() const { return access.find() && access.find()->offsets_known; }
  int64_t coverage() const { return access.find() ? access.find()->coverage.measure() : 0; }
  size_t write_epochs() const { return access.find() ? access.find()->write_epochs.size() : 0; }
  // Adds another process's counts (opens .. last_ts: what a file sums).
  void add_counts(const ProcFile& o);
};

struct FileProc {  // one process's view of a file, after merge
  int64_t pid;
  ProcFile pf;
};

// What FileAgg::procs() yields: a process and its record of the file.
struct FileProcRef {
  int64_t pid;
  const ProcFile& pf;
};

class FileAgg;

// The processes of one file, in the order they were added.
class FileProcRange {
 public:
  class iterator {
   public:
    iterator(const FileAgg* f, size_t i) : f_(f), i_(i) {}
    FileProcRef operator*() const;
    iterator& operator++() {
      ++i_;
      return *this;
    }
    bool operator==(const iterator& o) const { return i_ == o.i_; }

   private:
    const FileAgg* f_;
    size_t i_;
  };
  explicit FileProcRange(const FileAgg* f);
  iterator begin() const { return {f_, 0}; }
  iterator end() const { return {f_, n_}; }
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  FileProcRef operator[](size_t i) const { return *iterator(f_, i); }

 private:
  const FileAgg* f_;
  size_t n_;
};

// One file of the job. Its counts (the ProcFile it derives from) are the
// sums over the processes that touched it. Most files are touched by one
// process: then those counts *are* that process's record, stored once, and
// procs() yields them with its pid; a second process moves both records to
// a list of their own.
class FileAgg : public ProcFile {
 public:
  std::string_view path;  // in the FileTable's PathPool
  // POSIX+STDIO Darshan sums over processes (sequential / consecutive reads),
  // stored only for a file that has some.
  int64_t seq_reads() const { return extra_.find() ? extra_.find()->order.seq : 0; }
  int64_t consec_reads() const { return extra_.find() ? extra_.find()->order.consec : 0; }
  int64_t counted_reads() const { return extra_.find() ? extra_.find()->order.counted : 0; }
  void add_read_order(int64_t seq, int64_t consec, int64_t counted);

  FileProcRange procs() const { return FileProcRange(this); }
  // The counts so far are process `pid`'s record (a file with no process yet).
  void set_only_process(int64_t pid);
  // Adds process `pid`'s record of this file (the counts grow by its counts).
  void add_process(int64_t pid, ProcFile&& pf);
  // Adds a later unit's record of the same file (its processes after ours).
  void absorb(FileAgg&& later);

 private:
  friend class FileProcRange;
  template <class Ar>
  friend void fields(Ar& ar, FileAgg& x);
  // What most files (one process, no reads) never need, in one allocation:
  // 168 bytes a file, three to a deque block.
  struct Extra {
    std::vector<FileProc> many;  // two or more processes: every one (else empty)
    struct {
      int64_t seq = 0, consec = 0, counted = 0;
    } order;
  };
  static constexpr int64_t kNoPid = INT64_MIN;
  bool single() const { return only_pid_ != kNoPid; }
  const std::vector<FileProc>* many() const {
    const Extra* e = extra_.find();
    return e && !e->many.empty() ? &e->many : nullptr;
  }
  std::vector<FileProc>* many() { return const_cast<std::vector<FileProc>*>(std::as_const(*this).many()); }
  std::vector<FileProc>& many_list() { return extra_.get().many; }
  int64_t only_pid_ = kNoPid;  // one process: its pid, its record is *this
  Lazy<Extra> extra_;
};

// Paths, each stored once, in chunks that never move: a string_view into the
// pool stays valid while the pool (or the pool that absorbed it) lives.
class PathPool {
 public:
  PathPool() = default;
  PathPool(PathPool&&) noexcept = default;
  PathPool& operator=(PathPool&&) noexcept = default;
  std::string_view add(std::string_view s);
  // Keeps `storage` alive with the pool: views into it can stand for paths
  // instead of copies (a reader's strings, Tables::str_storage).
  void keep(std::shared_ptr<const void> storage);
  // Takes `other`'s chunks and kept storage; views into them stay valid.
  void absorb(PathPool& other);

 private:
  static constexpr size_t kChunk = size_t{1} << 20;
  std::vector<std::shared_ptr<const void>> kept_;
  std::vector<std::unique_ptr<char[]>> chunks_;
  size_t used_ = kChunk;  // bytes used of chunks_.back()
};

// Every file of the job, sorted by path (the order of every file list in
// the reports), paths in one pool: no map node, no string per file. A deque,
// so that the per-unit files become the table's without a copy and a merge
// frees its inputs as it goes.
class FileTable {
 public:
  FileTable() = default;
  // A table of `files` (paths viewed in `pool`), in any order; records of
  // one path are combined in their order in `files`.
  FileTable(PathPool pool, std::deque<FileAgg> files);
  FileTable(const FileTable& o);
  FileTable& operator=(const FileTable& o);
  FileTable(FileTable&&) noexcept = default;
  FileTable& operator=(FileTable&&) noexcept = default;

  using iterator = std::deque<FileAgg>::iterator;
  using const_iterator = std::deque<FileAgg>::const_iterator;
  iterator begin() { return files_.begin(); }
  iterator end() { return files_.end(); }
  const_iterator begin() const { return files_.begin(); }
  const_iterator end() const { return files_.end(); }
  size_t size() const { return files_.size(); }
  bool empty() const { return files_.empty(); }

  const FileAgg* find(std::string_view path) const;
  FileAgg* find(std::string_view path);
  const FileAgg& at(std::string_view path) const;  // throws std::out_of_range
  // The file of `path`, added in its place if new (tests, small tables).
  FileAgg& operator[](std::string_view path);
  // Adds `later`'s files (the units after ours); later is left empty.
  void merge(FileTable& later);

 private:
  PathPool pool_;
  std::deque<FileAgg> files_;
};

// Fetches the path bytes of the files a few places ahead of a loop over a
// FileTable (next() once per file). The paths lie in the pool in the order
// the trace named the files, the table in path order: on millions of files
// each path read is a cache miss, longer than the rest of a loop's work on
// a file, unless fetched ahead. So is each record's (the deque's blocks lie
// apart): they are fetched further ahead.
class PathsAhead {
 public:
  explicit PathsAhead(const FileTable& t) : record_(t.begin()), path_(t.begin()), end_(t.end()) {
    for (size_t i = 0; i < kAhead; ++i) step(record_, false);
    for (size_t i = 0; i < kAhead; ++i) next();
  }
  void next() {
    step(record_, false);
    step(path_, true);
  }

 private:
  static constexpr size_t kAhead = 4;
  void step(FileTable::const_iterator& it, bool path) {
    if (it == end_) return;
    if (!path) {
      __builtin_prefetch(&it->path);
    } else if (const std::string_view p = it->path; !p.empty()) {
      __builtin_prefetch(p.data());
      __builtin_prefetch(p.data() + p.size() - 1);
    }
    ++it;
  }
  FileTable::const_iterator record_, path_, end_;
};

}  // namespace strata::analysis
