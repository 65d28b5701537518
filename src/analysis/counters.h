// Darshan-compatible POSIX and STDIO counters (Darshan 3.5 names and
// semantics, see docs/analysis.md for the rules and where strata differs).
//
// Dependency-free (C++ standard library only) so that the runtime's profile
// mode can link it directly. One CounterEngine holds the state of ONE process
// (Darshan's offset/last-byte state is per file record of a process); feed it
// that process's events in completion order, one at a time. Engines of other
// processes (or of per-thread shards of a profile) are combined with merge(),
// which follows Darshan's shared-record reduction (sums, min/max timestamps)
// but merges the 32-entry common-value tables exactly instead of top-4 lists.
//
// Allocation: records live in chunks of 64 that never move (RecordStore);
// the fd tables are vectors indexed by descriptor. Nothing is allocated per
// event but for a new file, a new descriptor number, or a common-value
// table's fifth distinct value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <vector>

namespace strata::counters {

#define STRATA_POSIX_COUNTERS(X)                                                              \
  X(POSIX_OPENS) X(POSIX_FILENOS) X(POSIX_DUPS) X(POSIX_READS) X(POSIX_WRITES) X(POSIX_SEEKS)  \
  X(POSIX_STATS) X(POSIX_MMAPS) X(POSIX_FSYNCS) X(POSIX_FDSYNCS) X(POSIX_RENAME_SOURCES)       \
  X(POSIX_RENAME_TARGETS) X(POSIX_RENAMED_FROM) X(POSIX_MODE) X(POSIX_BYTES_READ)              \
  X(POSIX_BYTES_WRITTEN) X(POSIX_MAX_BYTE_READ) X(POSIX_MAX_BYTE_WRITTEN) X(POSIX_CONSEC_READS) \
  X(POSIX_CONSEC_WRITES) X(POSIX_SEQ_READS) X(POSIX_SEQ_WRITES) X(POSIX_RW_SWITCHES)           \
  X(POSIX_MEM_NOT_ALIGNED) X(POSIX_MEM_ALIGNMENT) X(POSIX_FILE_NOT_ALIGNED)                    \
  X(POSIX_FILE_ALIGNMENT) X(POSIX_MAX_READ_TIME_SIZE) X(POSIX_MAX_WRITE_TIME_SIZE)             \
  X(POSIX_SIZE_READ_0_100) X(POSIX_SIZE_READ_100_1K) X(POSIX_SIZE_READ_1K_10K)                 \
  X(POSIX_SIZE_READ_10K_100K) X(POSIX_SIZE_READ_100K_1M) X(POSIX_SIZE_READ_1M_4M)              \
  X(POSIX_SIZE_READ_4M_10M) X(POSIX_SIZE_READ_10M_100M) X(POSIX_SIZE_READ_100M_1G)             \
  X(POSIX_SIZE_READ_1G_PLUS) X(POSIX_SIZE_WRITE_0_100) X(POSIX_SIZE_WRITE_100_1K)              \
  X(POSIX_SIZE_WRITE_1K_10K) X(POSIX_SIZE_WRITE_10K_100K) X(POSIX_SIZE_WRITE_100K_1M)          \
  X(POSIX_SIZE_WRITE_1M_4M) X(POSIX_SIZE_WRITE_4M_10M) X(POSIX_SIZE_WRITE_10M_100M)            \
  X(POSIX_SIZE_WRITE_100M_1G) X(POSIX_SIZE_WRITE_1G_PLUS) X(POSIX_STRIDE1_STRIDE)              \
  X(POSIX_STRIDE2_STRIDE) X(POSIX_STRIDE3_STRIDE) X(POSIX_STRIDE4_STRIDE) X(POSIX_STRIDE1_COUNT) \
  X(POSIX_STRIDE2_COUNT) X(POSIX_STRIDE3_COUNT) X(POSIX_STRIDE4_COUNT) X(POSIX_ACCESS1_ACCESS)  \
  X(POSIX_ACCESS2_ACCESS) X(POSIX_ACCESS3_ACCESS) X(POSIX_ACCESS4_ACCESS) X(POSIX_ACCESS1_COUNT) \
  X(POSIX_ACCESS2_COUNT) X(POSIX_ACCESS3_COUNT) X(POSIX_ACCESS4_COUNT) X(POSIX_FASTEST_RANK)    \
  X(POSIX_FASTEST_RANK_BYTES) X(POSIX_SLOWEST_RANK) X(POSIX_SLOWEST_RANK_BYTES)

#define STRATA_POSIX_F_COUNTERS(X)                                                         \
  X(POSIX_F_OPEN_START_TIMESTAMP) X(POSIX_F_READ_START_TIMESTAMP)                          \
  X(POSIX_F_WRITE_START_TIMESTAMP) X(POSIX_F_CLOSE_START_TIMESTAMP)                        \
  X(POSIX_F_OPEN_END_TIMESTAMP) X(POSIX_F_READ_END_TIMESTAMP) X(POSIX_F_WRITE_END_TIMESTAMP) \
  X(POSIX_F_CLOSE_END_TIMESTAMP) X(POSIX_F_READ_TIME) X(POSIX_F_WRITE_TIME) X(POSIX_F_META_TIME) \
  X(POSIX_F_MAX_READ_TIME) X(POSIX_F_MAX_WRITE_TIME) X(POSIX_F_FASTEST_RANK_TIME)          \
  X(POSIX_F_SLOWEST_RANK_TIME) X(POSIX_F_VARIANCE_RANK_TIME) X(POSIX_F_VARIANCE_RANK_BYTES)

#define STRATA_STDIO_COUNTERS(X)                                                              \
  X(STDIO_OPENS) X(STDIO_FDOPENS) X(STDIO_READS) X(STDIO_WRITES) X(STDIO_SEEKS) X(STDIO_FLUSHES) \
  X(STDIO_BYTES_WRITTEN) X(STDIO_BYTES_READ) X(STDIO_MAX_BYTE_READ) X(STDIO_MAX_BYTE_WRITTEN)  \
  X(STDIO_FASTEST_RANK) X(STDIO_FASTEST_RANK_BYTES) X(STDIO_SLOWEST_RANK)                      \
  X(STDIO_SLOWEST_RANK_BYTES)

#define STRATA_STDIO_F_COUNTERS(X)                                                           \
  X(STDIO_F_META_TIME) X(STDIO_F_WRITE_TIME) X(STDIO_F_READ_TIME)                            \
  X(STDIO_F_OPEN_START_TIMESTAMP) X(STDIO_F_CLOSE_START_TIMESTAMP)                           \
  X(STDIO_F_WRITE_START_TIMESTAMP) X(STDIO_F_READ_START_TIMESTAMP)                           \
  X(STDIO_F_OPEN_END_TIMESTAMP) X(STDIO_F_CLOSE_END_TIMESTAMP) X(STDIO_F_WRITE_END_TIMESTAMP) \
  X(STDIO_F_READ_END_TIMESTAMP) X(STDIO_F_FASTEST_RANK_TIME) X(STDIO_F_SLOWEST_RANK_TIME)    \
  X(STDIO_F_VARIANCE_RANK_TIME) X(STDIO_F_VARIANCE_RANK_BYTES)

#define STRATA_X_ENUM(a) a,
enum PosixCounter : int { STRATA_POSIX_COUNTERS(STRATA_X_ENUM) POSIX_NUM_INDICES };
enum PosixFCounter : int { STRATA_POSIX_F_COUNTERS(STRATA_X_ENUM) POSIX_F_NUM_INDICES };
enum StdioCounter : int { STRATA_STDIO_COUNTERS(STRATA_X_ENUM) STDIO_NUM_INDICES };
enum StdioFCounter : int { STRATA_STDIO_F_COUNTERS(STRATA_X_ENUM) STDIO_F_NUM_INDICES };
#undef STRATA_X_ENUM

extern const char* const kPosixCounterNames[POSIX_NUM_INDICES];
extern const char* const kPosixFCounterNames[POSIX_F_NUM_INDICES];
extern const char* const kStdioCounterNames[STDIO_NUM_INDICES];
extern const char* const kStdioFCounterNames[STDIO_F_NUM_INDICES];

enum class Module : uint8_t { kPosix = 0, kStdio = 1 };

// What an event does, as far as the counters are concerned.
enum class Op : uint8_t {
  kNone = 0,   // not counted
  kOpen,       // open/open64/openat/creat/mkstemp; STDIO: fopen/freopen
  kFdopen,     // STDIO fdopen (counts in OPENS and FDOPENS)
  kDup,        // dup/dup2/dup3: new fd refers to the record of the old one
  kFileno,     // fileno(stream)
  kClose,      // close / fclose
  kRead,       // read family / fread, fgets, ...
  kWrite,      // write family / fwrite, fputs, fprintf, ...
  kSeek,       // lseek / fseek, fseeko, fsetpos, rewind
  kStat,       // stat family (any of stat, lstat, fstat, fstatat, statx, __xstat...)
  kFsync,      // fsync
  kFdatasync,  // fdatasync
  kMmap,       // mmap of a file
  kFlush,      // STDIO fflush
  kRenameSrc,  // rename: the file renamed away
  kRenameDst,  // rename: the target (value = record id of the source); counted
               // when the engine's previous kRenameSrc was (the source has a record)
};

// Printable op name ("open", "rename_src"...), for tables exported to Python.
inline constexpr const char* op_name(Op op) {
  constexpr const char* kNames[] = {"none", "open",  "fdopen", "dup",   "fileno",   "close",     "read",       "write",
                                    "seek", "stat",  "fsync",  "fdatasync", "mmap", "flush", "rename_src", "rename_dst"};
  const auto i = static_cast<unsigned>(op);
  return i < sizeof(kNames) / sizeof(kNames[0]) ? kNames[i] : "?";
}

inline constexpr uint32_t kNoFile = 0xFFFFFFFFu;

// One event as the counter engine sees it. Times are seconds since the start
// of the job (Darshan's convention).
struct CounterEvent {
  Module module = Module::kPosix;
  Op op = Op::kNone;
  bool ok = true;           // the call succeeded (ret >= 0 / non-NULL)
  bool positional = false;  // pread/pwrite family: `offset` is the access offset
  uint8_t mem_align = 0;    // kRead/kWrite: the buffer's format::Column::kMemAlign value (0 unknown: aligned)
  int32_t fd = -1;          // descriptor the call used or returned; -1 none
  int32_t old_fd = -1;      // kDup: the duplicated descriptor
  uint32_t file = kNoFile;  // caller's id of the file (path), when the event names it
  int64_t offset = -1;      // kRead/kWrite positional offset; kSeek resulting offset
  int64_t bytes = 0;        // bytes transferred (>= 0)
  int64_t value = 0;        // kOpen: mode; kRenameDst: record id of the source
  double t1 = 0, t2 = 0;    // start and end, seconds
};

// Darshan's runtime table of common values: the first 32 distinct values with
// their frequencies. Zero is tracked (it takes a slot) but never reported.
// The first kInline values live in the table, the rest in a block allocated
// by the fifth distinct value: most files see one to four request sizes and
// strides, and a table of 32 made a record 1 KB larger.
class CommonValues {
 public:
  static constexpr int kMax = 32;
  static constexpr int kInline = 4;
  CommonValues() = default;
  CommonValues(CommonValues&&) noexcept = default;
  CommonValues& operator=(CommonValues&&) noexcept = default;

  void track(int64_t v) {
    if (last_ < n_ && value(last_) == v) {  // runs of one value: the slot hit last (values are distinct)
      ++count(last_);
      return;
    }
    track_slow(v);
  }
  // Adds `c` occurrences of `v` (a new value is dropped when the table is full).
  void add(int64_t v, int64_t c);
  void merge(const CommonValues& o);
  // The four most frequent non-zero values, by count then value (descending);
  // unused slots are 0.
  void top4(int64_t* vals, int64_t* cnts) const;

 private:
  struct Spill {
    int64_t val[kMax - kInline];
    int64_t cnt[kMax - kInline];
  };
  int64_t value(int i) const { return i < kInline ? val_[i] : spill_->val[i - kInline]; }
  int64_t& count(int i) { return i < kInline ? cnt_[i] : spill_->cnt[i - kInline]; }
  int64_t count(int i) const { return i < kInline ? cnt_[i] : spill_->cnt[i - kInline]; }
  int find(int64_t v) const;  // slot of v, or -1
  void track_slow(int64_t v);

  int64_t val_[kInline] = {};
  int64_t cnt_[kInline] = {};
  int n_ = 0;
  int last_ = 0;  // the slot track() found or filled last
  std::unique_ptr<Spill> spill_;
};

// Darshan's POSIX record of one file: what reports and the PROFILE payload carry.
struct PosixRecord {
  uint32_t file = kNoFile;
  int64_t counters[POSIX_NUM_INDICES] = {};
  double fcounters[POSIX_F_NUM_INDICES] = {};
};

// A record with the engine's running state for it (Darshan's runtime state,
// never saved): 912 bytes, of which a record copied out of the engine (a
// PosixRecord, 696 bytes) leaves the rest behind.
struct PosixEntry : PosixRecord {
  int64_t offset = 0;
  int64_t last_byte_read = 0;
  int64_t last_byte_written = 0;
  int last_io = 0;  // 0 none, 1 read, 2 write
  double last_meta_end = 0, last_read_end = 0, last_write_end = 0;
  CommonValues access, stride;
};

struct StdioRecord {
  uint32_t file = kNoFile;
  int64_t counters[STDIO_NUM_INDICES] = {};
  double fcounters[STDIO_F_NUM_INDICES] = {};
  int64_t offset = 0;
  double last_meta_end = 0, last_read_end = 0, last_write_end = 0;
};

// Records in chunks that never move: growing the store copies nothing and a
// record's address stays valid. A vector of PosixEntry copied and
// page-faulted most of an analysis of many small files as it grew.
template <class T>
class RecordStore {
 public:
  static constexpr size_t kChunk = 64;
  RecordStore() = default;
  RecordStore(RecordStore&& o) noexcept : chunks_(std::move(o.chunks_)), size_(o.size_) { o.size_ = 0; }
  RecordStore& operator=(RecordStore&& o) noexcept {
    if (this != &o) {
      clear();
      chunks_ = std::move(o.chunks_);
      size_ = o.size_;
      o.size_ = 0;
    }
    return *this;
  }
  ~RecordStore() { clear(); }

  class iterator {
   public:
    iterator(const RecordStore* s, size_t i) : s_(s), i_(i) {}
    const T& operator*() const { return (*s_)[i_]; }
    iterator& operator++() {
      ++i_;
      return *this;
    }
    bool operator==(const iterator& o) const { return i_ == o.i_; }

   private:
    const RecordStore* s_;
    size_t i_;
  };

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& operator[](size_t i) { return chunks_[i / kChunk][i % kChunk]; }
  const T& operator[](size_t i) const { return chunks_[i / kChunk][i % kChunk]; }
  iterator begin() const { return {this, 0}; }
  iterator end() const { return {this, size_}; }
  // A new value-initialised record at the end.
  T& emplace_back() {
    if (size_ % kChunk == 0) {
      std::unique_ptr<T[], Free> chunk(static_cast<T*>(::operator new(sizeof(T) * kChunk)));
      chunks_.push_back(std::move(chunk));
    }
    return *::new (&chunks_.back()[size_++ % kChunk]) T();
  }
  void clear() {
    for (size_t i = 0; i < size_; ++i) (*this)[i].~T();
    size_ = 0;
    chunks_.clear();
  }

 private:
  struct Free {  // the records were destroyed by clear()
    void operator()(T* p) const { ::operator delete(p); }
  };
  std::vector<std::unique_ptr<T[], Free>> chunks_;
  size_t size_ = 0;
};

struct EngineConfig {
  int64_t mem_alignment = 8;     // POSIX_MEM_ALIGNMENT (Darshan's default)
  int64_t file_alignment = 4096; // POSIX_FILE_ALIGNMENT (fs block size)
  bool count_mmap = true;        // false: POSIX_MMAPS = -1 like a default Darshan build
};

class CounterEngine {
 public:
  explicit CounterEngine(EngineConfig cfg = {}) : cfg_(cfg) {}

  // Inline: the dispatch costs a call per event otherwise (callers are hot loops).
  void on_event(const CounterEvent& e) {
    if (e.op == Op::kNone) return;
    if (e.module == Module::kPosix)
      on_posix(e);
    else
      on_stdio(e);
  }

  // Adds another engine's records (another process or thread shard).
  // Records are matched by file id, so both engines must use the same ids.
  void merge(const CounterEngine& other);

  // Takes over a finalized record (the runtime's profile mode writes them):
  // replaces the record of r.file and rebuilds its common-value tables from
  // the ACCESS/STRIDE top-4 counters so finalize() keeps them.
  void adopt(const PosixRecord& r);
  void adopt(const StdioRecord& r);

  // Fills the ACCESS/STRIDE top-4 counters from the common-value tables.
  // Idempotent; call before reading those counters.
  void finalize();

  // Iterate as `for (const PosixRecord& r : engine.posix())`.
  const RecordStore<PosixEntry>& posix() const { return posix_; }
  const RecordStore<StdioRecord>& stdio() const { return stdio_; }
  const PosixEntry* find_posix(uint32_t file) const;
  const StdioRecord* find_stdio(uint32_t file) const;
  const EngineConfig& config() const { return cfg_; }

  // Events that named an fd the engine had no record for (and no path).
  uint64_t unmatched() const { return unmatched_; }

 private:
  PosixEntry* posix_for_file(uint32_t file);
  StdioRecord* stdio_for_file(uint32_t file);
  PosixEntry* posix_for_event(const CounterEvent& e);
  PosixEntry* posix_for_event_slow(const CounterEvent& e);
  StdioRecord* stdio_for_event(const CounterEvent& e);
  // The record a descriptor is bound to, or nullptr.
  template <class T>
  static T* at_fd(const std::vector<T*>& table, int32_t fd) {
    return fd >= 0 && static_cast<size_t>(fd) < table.size() ? table[fd] : nullptr;
  }
  template <class T>
  static void bind_fd(std::vector<T*>& table, int32_t fd, T* r);
  void on_posix(const CounterEvent& e);
  void on_stdio(const CounterEvent& e);

  EngineConfig cfg_;
  RecordStore<PosixEntry> posix_;
  RecordStore<StdioRecord> stdio_;
  std::vector<uint32_t> posix_by_file_, stdio_by_file_;  // file id -> index+1
  // fd -> its record (records never move), nullptr for none.
  std::vector<PosixEntry*> posix_fd_;
  std::vector<StdioRecord*> stdio_fd_;
  uint64_t unmatched_ = 0;
  bool rename_src_counted_ = false;  // the last kRenameSrc found its record
};

// Darshan's 10-bucket size histogram index for a transfer size.
inline int size_bucket(int64_t v) {
  if (v < 101) return 0;
  if (v < 1025) return 1;
  if (v < 10241) return 2;
  if (v < 102401) return 3;
  if (v < 1048577) return 4;
  if (v < 4194305) return 5;
  if (v < 10485761) return 6;
  if (v < 104857601) return 7;
  if (v < 1073741825) return 8;
  return 9;
}

// 64-bit record id of a path (FNV-1a; Darshan uses its own hash, so ids differ).
uint64_t record_id(const std::string& path);

}  // namespace strata::counters
