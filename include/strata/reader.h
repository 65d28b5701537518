// strata trace reader library: streams the blocks of strata trace files and
// decodes their columns, one EVENTS block at a time, never the whole file.
// Used by the command line, the analyzer and the Python bindings.
//
//   strata::reader::TraceReader trace("mytrace");         // a directory or one file
//   for (auto& file : trace.files()) {
//     strata::reader::FileReader r(file);
//     strata::reader::EventBatch batch;
//     while (r.next(batch)) { ... batch.ts[i], r.dict().name(batch.name[i]).name ... }
//   }
//
// Every malformed input raises FormatError naming the file, the block and what
// is wrong. A file without a footer (the process was killed) reads up to its
// last complete block.
#pragma once

#include <cstdint>
#include <functional>
#include <cstdio>
#include <exception>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace strata::reader {

// Reader limits (docs/trace-format.md, "Reader limits"). A file that needs
// more is corrupt (or hostile): FormatError, never an unbounded allocation.
// Events of one EVENTS block (the runtime writes at most 65,536).
inline constexpr uint32_t kMaxBlockEvents = 1u << 20;
// Memory the dictionary, PROCESS block and PROFILE records of one file may
// take: kDictMemoryBase + kDictMemoryPerByte x the file's size in bytes.
inline constexpr uint64_t kDictMemoryBase = 256ull << 20;
inline constexpr uint64_t kDictMemoryPerByte = 64;

class FormatError : public std::runtime_error {
 public:
  FormatError(const std::string& file, long block, uint64_t offset, const std::string& what);
  const std::string& file() const { return file_; }
  long block() const { return block_; }  // -1 when the problem is not in a block
  uint64_t offset() const { return offset_; }

 private:
  std::string file_;
  long block_;
  uint64_t offset_;
};

struct ProcessInfo {
  int64_t pid = 0;
  int64_t ppid = 0;
  int64_t rank = -1;             // MPI rank when the environment gave one
  uint64_t start_wall_ns = 0;    // CLOCK_REALTIME at start
  uint64_t start_mono_ns = 0;    // CLOCK_MONOTONIC at the same instant
  uint64_t start_ticks = 0;      // the file's clock ticks at start_mono_ns
  uint64_t tick_q32 = 0;         // ns per tick (32.32 fixed point); 0: ticks are ns
  // Converts the file's clock ticks to CLOCK_MONOTONIC ns.
  uint64_t ticks_to_ns(uint64_t ticks) const;
  std::string hostname;
  std::string exe;
  std::vector<std::string> argv;
  std::string version;           // strata version that wrote the file
  std::string mode;              // "trace" or "profile"
  std::vector<std::pair<std::string, std::string>> metadata;
  std::string cmdline() const;   // argv joined by spaces
};

// What a person calls a process by its command line: the program's base name,
// with the script's for a Python interpreter ("python3 train.py"); "process"
// for an empty command. Header-only: the analyzer uses it without the reader.
inline std::string program_label(const std::string& command) {
  std::vector<std::string> argv;
  size_t i = 0;
  while (i < command.size() && argv.size() < 2) {
    size_t j = command.find(' ', i);
    if (j == std::string::npos) j = command.size();
    if (j > i) argv.push_back(command.substr(i, j - i));
    i = j + 1;
  }
  auto base = [](const std::string& s) { return s.substr(s.find_last_of('/') + 1); };
  if (argv.empty()) return "process";
  const std::string prog = base(argv[0]);
  if (argv.size() > 1 && prog.rfind("python", 0) == 0 && argv[1][0] != '-') return prog + " " + base(argv[1]);
  return prog;
}

struct NameInfo {
  std::string name;
  std::string category;
  uint32_t fields = 0;  // format::Field bits
  uint8_t kind = 0;     // format::EventKind
};

struct Tag {
  uint32_t key = 0;     // string id
  bool is_int = true;
  int64_t int_value = 0;
  uint32_t str_value = 0;  // string id when !is_int
};

// Ids below a table's size that no DICT entry has defined. Empty in every
// file the runtime writes (it numbers ids in turn), so the checks that ask
// cost nothing there; a damaged file that skips ids would otherwise read the
// missing ones as "" or "unknown" instead of failing.
class IdGaps {
 public:
  bool empty() const { return ranges_.empty(); }
  const std::vector<std::pair<uint32_t, uint32_t>>& ranges() const { return ranges_; }
  bool contains(uint32_t id) const { return !ranges_.empty() && contains_slow(id); }
  void add(uint32_t lo, uint32_t hi);  // [lo, hi), above every gap so far
  void remove(uint32_t id);

 private:
  bool contains_slow(uint32_t id) const;
  std::vector<std::pair<uint32_t, uint32_t>> ranges_;  // sorted, disjoint [lo, hi)
};

// Per-file id tables; they grow as DICT blocks are read. Strings and the tags
// of contexts live in append-only pools of chunks that never move: a view that
// str(), context() or thread_name() returns stays valid (and unchanged, even if
// a later DICT block redefines its id) until the Dictionary is destroyed, i.e.
// as long as its FileReader lives. Copy what must outlive the reader.
class Dictionary {
 public:
  Dictionary() = default;
  Dictionary(const Dictionary&) = delete;
  Dictionary& operator=(const Dictionary&) = delete;

  std::string_view str(uint32_t sid) const { return sid < strings_.size() ? strings_[sid] : std::string_view(); }  // "" for 0 or unknown
  // Holding this keeps every view str() returned (or will return) valid,
  // after the dictionary itself is gone: what a reader of millions of paths
  // keeps of them need not be copied.
  std::shared_ptr<const void> string_storage() const { return chars_; }
  const NameInfo& name(uint32_t nid) const;
  std::span<const Tag> context(uint32_t cid) const {  // empty for 0
    return cid < contexts_.size() ? contexts_[cid] : std::span<const Tag>();
  }
  std::string_view thread_name(uint32_t tid) const;
  const std::vector<std::pair<uint32_t, uint32_t>>& threads() const { return threads_; }  // tid, name sid
  size_t num_strings() const { return strings_.size(); }
  size_t num_names() const { return names_.size(); }
  size_t num_contexts() const { return contexts_.size(); }
  // Whether a DICT entry defined the id (0, "none", always counts).
  bool has_string(uint32_t sid) const { return sid == 0 || (sid < strings_.size() && !string_gaps_.contains(sid)); }
  bool has_name(uint32_t nid) const { return nid == 0 || (nid < names_.size() && !name_gaps_.contains(nid)); }
  bool has_context(uint32_t cid) const { return cid == 0 || (cid < contexts_.size() && !context_gaps_.contains(cid)); }
  const IdGaps& string_gaps() const { return string_gaps_; }
  const IdGaps& name_gaps() const { return name_gaps_; }
  const IdGaps& context_gaps() const { return context_gaps_; }

  // Used by the decoder. set_string copies s into the pool; new_context
  // returns n tags of the pool to fill before set_context(id, them).
  void set_string(uint32_t id, std::string_view s);
  void set_name(uint32_t id, NameInfo n);
  std::span<Tag> new_context(size_t n);
  void set_context(uint32_t id, std::span<const Tag> tags) { put_at(contexts_, context_gaps_, id, tags); }
  void set_thread(uint32_t tid, uint32_t name_sid);

 private:
  template <class T>
  static void put_at(std::vector<T>& v, IdGaps& gaps, uint32_t id, T value) {
    if (v.size() == id) {  // writers number ids in turn: the common case
      v.push_back(std::move(value));
      return;
    }
    if (v.size() < id) {
      gaps.add(std::max<uint32_t>(static_cast<uint32_t>(v.size()), 1), id);
      v.resize(id + 1);
    } else if (!gaps.empty()) {
      gaps.remove(id);
    }
    v[id] = std::move(value);
  }
  // Bump allocator over chunks that never move.
  template <class T>
  struct Pool {
    std::vector<std::unique_ptr<T[]>> chunks;
    T* next = nullptr;
    size_t left = 0;
    T* take(size_t n);
  };
  std::vector<std::string_view> strings_;
  std::vector<NameInfo> names_;
  std::vector<std::span<const Tag>> contexts_;
  IdGaps string_gaps_, name_gaps_, context_gaps_;
  std::vector<std::pair<uint32_t, uint32_t>> threads_;
  std::shared_ptr<Pool<char>> chars_ = std::make_shared<Pool<char>>();  // shared: string_storage()
  Pool<Tag> tags_;
};

// An allocator whose resize() leaves new elements of a trivial type
// uninitialised (value-initialised otherwise). A decoder writes every
// element it sizes a column for; zero-filling each batch first, whenever
// a block was larger than the batch's last one, was ~7% of `strata
// analyze` on a many-threaded trace.
template <class T>
struct UninitAllocator : std::allocator<T> {
  using value_type = T;
  UninitAllocator() noexcept = default;
  template <class U>
  UninitAllocator(const UninitAllocator<U>&) noexcept {}
  template <class U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
template <class T>
using EventColumn = std::vector<T, UninitAllocator<T>>;

// One decoded EVENTS block: one thread's events, as columns of equal length.
// resize() (or a column's) leaves the new elements' values unspecified.
struct EventBatch {
  uint32_t tid = 0;
  EventColumn<uint32_t> name, path, ctx;
  EventColumn<int32_t> fd, err;
  EventColumn<uint64_t> ts, dur;  // ts: host CLOCK_MONOTONIC ns
  EventColumn<int64_t> offset, size, ret;
  // Column kMemAlign (format 1.2): 0 = not recorded, else 1 + trailing zero
  // bits of the buffer address (capped); mem_align_bytes() gives the alignment.
  EventColumn<uint8_t> mem_align;
  size_t size_events() const { return ts.size(); }
  void resize(size_t n);
};

// Profile mode: Darshan-style counters of one file (module 0 POSIX, 1 STDIO),
// in the order of src/analysis/counters.h.
struct ProfileRecord {
  uint8_t module = 0;
  uint32_t path = 0;  // string id
  std::vector<int64_t> counters;
  std::vector<double> fcounters;
};

struct FileStats {
  uint64_t events_written = 0;  // as the runtime counted them
  uint64_t events_dropped = 0;
};

// How a FileReader works through a file's blocks.
struct ReadOptions {
  // Threads that read, check, decompress and decode blocks ahead of next(),
  // up to a bounded number of blocks (2 x (threads + 1)); next() still hands
  // the batches out in file order, and errors surface at the block they are
  // in, as without them. 0: next() does everything on the calling thread.
  unsigned decode_threads = 0;
  // Called on the thread that calls next(), right before a DICT block
  // changes the dictionary: a consumer that reads the dictionary from other
  // threads while it calls next() waits for them here.
  std::function<void()> before_dict_change;
};
// Files smaller than this are read in turn whatever decode_threads says: a
// few blocks do not pay for starting threads.
inline constexpr uint64_t kDecodeAheadMinBytes = 256u << 10;

struct BlockJob;
class BlockPipeline;
enum class ScanOutcome : uint8_t;

class FileReader {
 public:
  // Reads the header and PROCESS block.
  explicit FileReader(const std::string& path, ReadOptions options = {});
  ~FileReader();
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;

  const std::string& path() const { return path_; }
  const ProcessInfo& process() const { return process_; }
  // Grows as next() reaches DICT blocks, on the thread calling next() only.
  const Dictionary& dict() const { return dict_; }
  // Decodes the next EVENTS block (reading DICT/STATS blocks on the way).
  // After a FormatError, every later call throws it again.
  bool next(EventBatch& out);
  // Like next() but skips the next EVENTS block without reading its payload
  // (its checksum is not verified); returns its event count (0 at end).
  // Not once next() has read ahead (decode_threads; std::logic_error).
  uint64_t skip_events_block();
  const FileStats& stats() const { return stats_; }
  // Records of the last PROFILE block read so far (profile mode traces).
  const std::vector<ProfileRecord>& profile() const { return profile_; }
  bool has_footer() const { return footer_seen_; }
  // False when the file ended inside its first (PROCESS) block: nothing of the
  // process is known (TraceReader skips such files).
  bool has_process() const { return has_process_; }
  // True when the file ended inside a block (the writer was killed mid-write).
  bool truncated() const { return truncated_tail_; }
  uint64_t file_size() const { return file_size_; }
  long blocks_read() const { return block_index_; }

 private:
  // The stages of a block (src/reader/block.h).
  enum class Step : uint8_t { kBatch, kMore, kEnd };
  ScanOutcome scan_block(BlockJob& job);
  void load_block(BlockJob& job, void* dctx, bool decode) const;
  Step apply_block(BlockJob& job, EventBatch& out);
  void scan_and_load(BlockJob& job, bool decode = true);
  bool next_in_turn(EventBatch& out);
  bool next_ahead(EventBatch& out);
  void fill_pipeline();
  bool read_at(void* buf, size_t n, uint64_t offset) const;

  void open_and_read_process();
  void decode_process(const std::vector<uint8_t>& p);
  void decode_dict(const std::vector<uint8_t>& p, uint32_t count);
  void decode_stats(const std::vector<uint8_t>& p);
  void decode_profile(const std::vector<uint8_t>& p);
  // EFG blocks (format 1.3, `strata efg --compress`): decoded whole into the
  // batches of the EVENTS blocks they replaced, handed out one per next().
  void decode_efg(const std::vector<uint8_t>& p, uint32_t count);
  bool next_efg_batch(EventBatch& out);
  [[noreturn]] void fail(const std::string& what) const;
  void charge(uint64_t bytes);  // dictionary memory budget

  std::string path_;
  ReadOptions options_;
  FILE* fp_ = nullptr;
  int fd_ = -1;
  uint64_t file_size_ = 0;
  uint64_t scan_pos_ = 0;    // where stage 1 reads the next block header
  long scan_index_ = 0;      // blocks stage 1 has scanned
  long block_index_ = 0;     // the block stage 3 is at (FormatError, blocks_read)
  uint64_t block_offset_ = 0;
  bool footer_seen_ = false;
  bool truncated_tail_ = false;
  bool has_process_ = false;
  bool scan_done_ = false;   // stage 1 met the end of the file or an error
  bool ahead_ = false;       // stage 2 on decode_threads (a file large enough)
  uint64_t mem_used_ = 0, mem_budget_ = 0;
  ProcessInfo process_;
  Dictionary dict_;
  FileStats stats_;
  std::vector<ProfileRecord> profile_;
  std::unique_ptr<BlockJob> job_;            // reading in turn (decode_threads 0)
  std::unique_ptr<BlockPipeline> pipeline_;  // reading ahead (decode_threads > 0)
  std::vector<EventBatch> efg_batches_;
  size_t efg_next_ = 0;
  void* dctx_ = nullptr;
  std::exception_ptr failed_;  // the FormatError next() threw
};

// The files of a trace (a directory of *.strata files, or one file), with a
// common time base: trace time 0 is the earliest process start; processes on
// one host share that host's monotonic clock, hosts are aligned by wall clock.
class TraceReader {
 public:
  // Files that hold nothing readable because they were cut short before their
  // PROCESS block was complete (an empty file, a header or first block cut
  // short: the disk filled, or the process was killed at start) are skipped
  // and listed in skipped(); a corrupt file is an error (FormatError). If
  // every file is skipped, throws FormatError naming them.
  explicit TraceReader(const std::string& path);
  const std::vector<std::string>& files() const { return files_; }
  struct Skipped {
    std::string file;
    std::string why;  // "empty", "cut at byte N inside block K", ...
  };
  const std::vector<Skipped>& skipped() const { return skipped_; }
  // Converts a host-monotonic timestamp of `proc` into ns since trace start.
  int64_t to_trace_ns(const ProcessInfo& proc, uint64_t mono_ns) const;
  uint64_t start_wall_ns() const { return start_wall_ns_; }

 private:
  std::vector<std::string> files_;
  std::vector<Skipped> skipped_;
  uint64_t start_wall_ns_ = 0;
  std::vector<std::pair<std::string, int64_t>> host_offsets_;  // host -> wall - mono
};

// Lists *.strata files of a trace directory (sorted), or {path} for a file.
// Throws FormatError if the path does not exist or holds no trace file.
std::vector<std::string> list_trace_files(const std::string& path);

// Why a trace file holds nothing to read ("empty", "cut at byte N inside
// block 1", "file header cut short ..."), or "" when it has a complete PROCESS
// block. Throws FormatError if the file is corrupt.
std::string why_unreadable(const std::string& file);

}  // namespace strata::reader
