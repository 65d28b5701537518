#include "analysis/file_table.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <stdexcept>

namespace strata::analysis {

// ---- ProcFile / FileAgg -------------------------------------------------------------

void ProcFile::add_counts(const ProcFile& o) {
  opens += o.opens;
  fdopens += o.fdopens;
  reads += o.reads;
  eof_reads += o.eof_reads;
  writes += o.writes;
  stats += o.stats;
  seeks += o.seeks;
  mmaps += o.mmaps;
  other_meta += o.other_meta;
  bytes_read += o.bytes_read;
  bytes_written += o.bytes_written;
  read_ns += o.read_ns;
  write_ns += o.write_ns;
  meta_ns += o.meta_ns;
  extent = std::max(extent, o.extent);
  first_ts = std::min(first_ts, o.first_ts);
  last_ts = std::max(last_ts, o.last_ts);
}

FileProcRange::FileProcRange(const FileAgg* f)
    : f_(f), n_(f->many() ? f->many()->size() : f->single() ? 1 : 0) {}

FileProcRef FileProcRange::iterator::operator*() const {
  if (const auto* many = f_->many()) return {(*many)[i_].pid, (*many)[i_].pf};
  return {f_->only_pid_, *f_};
}

void FileAgg::set_only_process(int64_t pid) {
  only_pid_ = pid;
}

void FileAgg::add_read_order(int64_t seq, int64_t consec, int64_t counted) {
  if (seq == 0 && consec == 0 && counted == 0) return;  // most files: nothing allocated
  auto& r = extra_.get().order;
  r.seq += seq;
  r.consec += consec;
  r.counted += counted;
}

void FileAgg::add_process(int64_t pid, ProcFile&& pf) {
  ProcFile& counts = *this;
  if (!single() && !many()) {
    // The first process: the file's counts are its record. Counts set
    // without a process (tests build files by hand) are added to it.
    ProcFile before = std::move(counts);
    counts = std::move(pf);
    counts.add_counts(before);
    only_pid_ = pid;
    return;
  }
  if (single()) {
    // A second process: the first one's record moves to the list and the
    // file's counts keep only the sums.
    auto& list = many_list();
    list.push_back(FileProc{only_pid_, std::move(counts)});
    counts = ProcFile{};
    counts.add_counts(list.front().pf);
    only_pid_ = kNoPid;
  }
  counts.add_counts(pf);
  many_list().push_back(FileProc{pid, std::move(pf)});
}

void FileAgg::absorb(FileAgg&& later) {
  if (path.empty()) path = later.path;
  add_read_order(later.seq_reads(), later.consec_reads(), later.counted_reads());
  if (auto* many = later.many()) {
    for (FileProc& fp : *many) add_process(fp.pid, std::move(fp.pf));
  } else if (later.single()) {
    add_process(later.only_pid_, std::move(static_cast<ProcFile&>(later)));
  } else {
    add_counts(later);
  }
}

// ---- PathPool ---------------------------------------------------------------------

std::string_view PathPool::add(std::string_view s) {
  if (s.empty()) return {};
  if (s.size() > kChunk / 4) {  // a path this long gets a chunk of its own
    auto own = std::make_unique<char[]>(s.size());
    std::memcpy(own.get(), s.data(), s.size());
    const char* at = own.get();
    chunks_.insert(chunks_.end() - (chunks_.empty() ? 0 : 1), std::move(own));
    return {at, s.size()};
  }
  if (kChunk - used_ < s.size()) {
    chunks_.push_back(std::make_unique_for_overwrite<char[]>(kChunk));
    used_ = 0;
  }
  char* at = chunks_.back().get() + used_;
  std::memcpy(at, s.data(), s.size());
  used_ += s.size();
  return {at, s.size()};
}

void PathPool::keep(std::shared_ptr<const void> storage) {
  if (!storage) return;
  for (const auto& k : kept_)
    if (k == storage) return;
  kept_.push_back(std::move(storage));
}

void PathPool::absorb(PathPool& other) {
  for (auto& k : other.kept_) keep(std::move(k));
  other.kept_.clear();
  if (other.chunks_.empty()) return;
  // Our last chunk stays last: it is the one we still fill.
  auto last = chunks_.empty() ? nullptr : std::move(chunks_.back());
  if (last) chunks_.pop_back();
  for (auto& c : other.chunks_) chunks_.push_back(std::move(c));
  if (last) {
    chunks_.push_back(std::move(last));
  } else {
    used_ = other.used_;
  }
  other.chunks_.clear();
  other.used_ = kChunk;
}

// ---- FileTable --------------------------------------------------------------------

namespace {

bool by_path(const FileAgg& a, const FileAgg& b) { return a.path < b.path; }

// Length of the common prefix of a and b.
size_t common_prefix(std::string_view a, std::string_view b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t x, y;
    std::memcpy(&x, a.data() + i, 8);
    std::memcpy(&y, b.data() + i, 8);
    if (x != y) return i + static_cast<size_t>(std::countr_zero(x ^ y) / 8);  // little-endian
  }
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

// The 8 bytes of s from `at` as a number that orders as the bytes do (big
// endian, 0 past the end): equal keys still need the rest compared.
uint64_t sort_key(std::string_view s, size_t at) {
  uint64_t k = 0;
  if (at + 8 <= s.size()) {
    std::memcpy(&k, s.data() + at, 8);
    return __builtin_bswap64(k);
  }
  if (at < s.size()) std::memcpy(&k, s.data() + at, s.size() - at);  // the rest stays 0
  return __builtin_bswap64(k);
}

constexpr size_t kKeyBytes = 16;    // of a path, in a sort item
constexpr size_t kFetchAhead = 16;  // records or paths fetched ahead of the one read

// Starts fetching the cache line of f's path view, of p's bytes from
// `from`, of the whole record f.
void prefetch_path_of(const FileAgg& f) { __builtin_prefetch(&f.path); }

void prefetch_path(std::string_view p, size_t from) {
  if (from < p.size()) __builtin_prefetch(p.data() + from);
}

void prefetch_record(const FileAgg* f) {
  const char* p = reinterpret_cast<const char*>(f);
  for (size_t line = 0; line < sizeof(FileAgg); line += 64) __builtin_prefetch(p + line);
  __builtin_prefetch(p + sizeof(FileAgg) - 1);
}

// Puts files in order (rank[i]: the place in the order of the record now
// at i; rank ends as 0, 1, 2, ...), in place: the records keep the memory
// they have, in the order the later passes read it. Moving each record
// straight to its place reads or writes the records in random order, a
// cache and TLB miss per record on millions of files, each waiting on the
// one before when a permutation cycle is followed. So first each record
// goes to its bucket, kBucket consecutive places (an American flag sort: a
// record carried to the next free place of its bucket takes the one there
// along): ~1,000 buckets for 4 M files, each filled from its front, so the
// places written are ~1,000 runs of consecutive memory, their fronts in the
// cache. Then each bucket, small enough for the L2 cache, is put in order
// by following its cycles.
void permute(std::deque<FileAgg>& files, std::vector<uint32_t>& rank) {
  constexpr size_t kBucket = 4096;  // records: 688 KB
  const size_t n = files.size();
  const size_t buckets = (n + kBucket - 1) / kBucket;
  if (buckets > 1) {
    std::vector<size_t> next(buckets);  // the first place of each bucket not known to hold one of its records
    for (size_t b = 0; b < buckets; ++b) next[b] = b * kBucket;
    for (size_t b = 0; b < buckets; ++b) {
      const size_t end = std::min(n, (b + 1) * kBucket);
      while (next[b] < end) {
        const size_t at = next[b];
        uint32_t r = rank[at];
        if (r / kBucket != b) {
          // Carries the record to its bucket, and the one found there to
          // its own, until one of bucket b comes back to fill `at`.
          FileAgg held = std::move(files[at]);
          while (r / kBucket != b) {
            size_t& q = next[r / kBucket];
            while (rank[q] / kBucket == r / kBucket) ++q;  // already in their bucket
            std::swap(held, files[q]);
            std::swap(r, rank[q]);
            ++q;
            // The bucket's next place is written ~1,000 records from now:
            // fetched meanwhile, and its next ranks.
            if (q < n) prefetch_record(&files[q]);
            if (q + 16 < n) __builtin_prefetch(&rank[q + 16]);
          }
          files[at] = std::move(held);
          rank[at] = r;
        }
        ++next[b];
      }
    }
  }
  std::vector<uint32_t> from(std::min(n, kBucket));  // from[i]: where the bucket's i-th record is now
  for (size_t begin = 0; begin < n; begin += kBucket) {
    const size_t end = std::min(n, begin + kBucket);
    for (size_t at = begin; at < end; ++at) {
      from[rank[at] - begin] = static_cast<uint32_t>(at - begin);
      prefetch_record(&files[at]);  // in order, before the cycles read the bucket in random order
    }
    for (size_t i = 0; i < end - begin; ++i) {
      if (from[i] == i) continue;
      FileAgg held = std::move(files[begin + i]);
      size_t j = i;
      while (from[j] != i) {
        const size_t src = from[j];
        files[begin + j] = std::move(files[begin + src]);
        from[j] = static_cast<uint32_t>(j);
        j = src;
      }
      files[begin + j] = std::move(held);
      from[j] = static_cast<uint32_t>(j);
    }
  }
}

// A path's place in the sort: 16 of its bytes from some depth on.
struct Item {
  uint64_t key, key2;  // the path's 16 bytes at the run's depth (0 past its end)
  uint32_t end;        // how the path ends against those bytes: its length in them, 17 if it goes on
  uint32_t at;         // where the record is now
};

// A path that ends inside the 16 bytes sorts before one that goes on with
// zeros (equal keys): the shorter first, as std::string compares. `at` last:
// a total order, so every correct sort of the items gives one result.
bool item_less(const Item& a, const Item& b) {
  if (a.key != b.key) return a.key < b.key;
  if (a.key2 != b.key2) return a.key2 < b.key2;
  if (a.end != b.end) return a.end < b.end;
  return a.at < b.at;
}

// Digit d of an item's sort key (key, key2, end), most significant first:
// 16 bytes, then `end` (0..17).
constexpr int kDigits = 17;
inline uint32_t digit(const Item& x, int d) {
  if (d < 8) return static_cast<uint32_t>(x.key >> (56 - 8 * d)) & 0xff;
  if (d < 16) return static_cast<uint32_t>(x.key2 >> (56 - 8 * (d - 8))) & 0xff;
  return x.end;
}

// Sorts items by item_less: in place, most significant byte first (an
// American flag sort), digits every item shares skipped, small buckets and
// the items whose whole key is equal left to std::sort. On millions of paths
// a comparison sort takes ~22 passes over the items with a branch missed
// per compare; this takes one per distinguishing byte.
void radix_sort(Item* a, size_t n, int d = 0) {
  constexpr size_t kSmall = 64;
  for (; d < kDigits; ++d) {
    if (n <= kSmall) break;
    size_t count[256] = {};
    for (size_t i = 0; i < n; ++i) ++count[digit(a[i], d)];
    if (count[digit(a[0], d)] == n) continue;  // every item has this byte
    size_t next[256], end[256];
    size_t at = 0;
    for (int b = 0; b < 256; ++b) {
      next[b] = at;
      at += count[b];
      end[b] = at;
    }
    for (int b = 0; b < 256; ++b) {
      while (next[b] < end[b]) {
        Item held = a[next[b]];
        uint32_t hb = digit(held, d);
        while (hb != static_cast<uint32_t>(b)) {  // carried to its bucket, taking the one there along
          std::swap(held, a[next[hb]++]);
          hb = digit(held, d);
        }
        a[next[b]++] = held;
      }
    }
    size_t from = 0;
    for (int b = 0; b < 256; ++b) {
      if (count[b] > 1) radix_sort(a + from, count[b], d + 1);
      from += count[b];
    }
    return;
  }
  std::sort(a, a + n, item_less);
}

// Sorts by path, records of one path in their order. The order is computed
// on 24-byte items, most significant bytes first: the 16 bytes after the
// prefix every path shares (a unit's paths often share a long one: one data
// set's directory), then, for each run of paths that agree on those and go
// on, the next 16, and so on. Comparisons are of integers in a contiguous
// array, never of paths through the deque (a cache miss each on millions of
// files). Then the records move to their places (permute).
// Returns false when no path occurs twice (combine_equal has nothing to do).
bool sort_by_path(std::deque<FileAgg>& files) {
  if (files.size() < 2) return false;
  // 16 bytes of each path: most paths differ within that many bytes after
  // the shared prefix; runs that do not are sorted again deeper on, their
  // paths read again in random order.
  auto item_of = [](std::string_view p, uint32_t at, size_t depth) {
    const size_t left = p.size() > depth ? p.size() - depth : 0;
    return Item{sort_key(p, depth), sort_key(p, depth + 8), static_cast<uint32_t>(std::min<size_t>(left, kKeyBytes + 1)),
                at};
  };
  auto item_at = [&](uint32_t at, size_t depth) { return item_of(files[at].path, at, depth); };
  // The prefix every path shares, guessed from a few records: then one pass
  // over them all (each a cache miss on millions of files) checks the guess,
  // whether they are in order already, and keys them. A second one keys
  // them again if a path shares less.
  const size_t n = files.size();
  const std::string_view first = files.front().path;
  size_t guess = first.size();
  constexpr size_t kSamples = 64;
  for (size_t s = 1; s <= kSamples; ++s) guess = std::min(guess, common_prefix(first, files[(n - 1) * s / kSamples].path));
  std::vector<Item> items(n);
  size_t shared = guess;
  bool sorted = true;
  const std::string_view* before = &first;
  uint32_t at = 0;
  // The deque's blocks lie apart, between other allocations: fetched ahead.
  auto ahead = files.begin() + static_cast<ptrdiff_t>(std::min(n, kFetchAhead));
  for (const FileAgg& f : files) {
    if (ahead != files.end()) prefetch_path_of(*ahead++);
    shared = std::min(shared, common_prefix(first, f.path));
    sorted = sorted && !(f.path < *before);
    before = &f.path;
    items[at] = item_of(f.path, at, guess);
    ++at;
  }
  if (sorted) return true;
  if (shared < guess)
    for (uint32_t i = 0; i < n; ++i) items[i] = item_at(i, shared);
  radix_sort(items.data(), items.size());
  // Runs that agree on their 16 bytes and go on: sorted again on the next 16,
  // all the runs of one depth at a time.
  struct Run {
    uint32_t begin, end;
  };
  std::vector<Run> runs{{0, static_cast<uint32_t>(n)}}, deeper;
  bool dups = false;
  for (size_t depth = shared + kKeyBytes;; depth += kKeyBytes) {
    deeper.clear();
    for (const Run& r : runs)
      for (uint32_t i = r.begin; i < r.end;) {
        uint32_t j = i + 1;
        while (j < r.end && items[j].key == items[i].key && items[j].key2 == items[i].key2 &&
               items[j].end == items[i].end)
          ++j;
        if (j - i > 1 && items[i].end <= kKeyBytes) dups = true;  // one path, j - i records
        if (j - i > 1 && items[i].end > kKeyBytes) deeper.push_back({i, j});
        i = j;
      }
    if (deeper.empty()) break;
    std::swap(runs, deeper);
    // The records of the runs lie anywhere, their paths too: each read is
    // two cache misses, the path's on the record's. Both are fetched ahead,
    // the record first, across the runs (most are a few records long).
    struct Cursor {
      size_t run, k;
    };
    auto step = [&](Cursor& c) {
      if (++c.k == runs[c.run].end && ++c.run < runs.size()) c.k = runs[c.run].begin;
    };
    Cursor record{0, runs[0].begin}, path = record, key = record;
    for (size_t a = 0; a < 2 * kFetchAhead && record.run < runs.size(); ++a) step(record);
    for (size_t a = 0; a < kFetchAhead && path.run < runs.size(); ++a) step(path);
    while (key.run < runs.size()) {
      if (record.run < runs.size()) {
        prefetch_path_of(files[items[record.k].at]);
        step(record);
      }
      if (path.run < runs.size()) {
        prefetch_path(files[items[path.k].at].path, depth);
        step(path);
      }
      items[key.k] = item_at(items[key.k].at, depth);
      step(key);
    }
    for (const Run& r : runs) radix_sort(items.data() + r.begin, r.end - r.begin);
  }
  std::vector<uint32_t> rank(items.size());
  for (uint32_t i = 0; i < items.size(); ++i) rank[items[i].at] = i;
  items = {};  // freed before the records move
  permute(files, rank);
  return dups;
}

// Combines neighbours of one path (files sorted by path, stable).
void combine_equal(std::deque<FileAgg>& files) {
  if (files.size() < 2) return;
  size_t out = 0;
  for (size_t i = 1; i < files.size(); ++i) {
    if (files[i].path == files[out].path)
      files[out].absorb(std::move(files[i]));
    else if (++out != i)
      files[out] = std::move(files[i]);
  }
  files.resize(out + 1);
}

// The first index at or after `from` whose path is not below `path`
// (files sorted by path): galloping, as successive lookups move forward.
size_t lower_bound_from(const std::deque<FileAgg>& files, size_t from, std::string_view path) {
  size_t lo = from, step = 1;
  while (lo + step < files.size() && files[lo + step].path < path) {
    lo += step;
    step *= 2;
  }
  const size_t hi = std::min(files.size(), lo + step + 1);
  auto it = std::lower_bound(files.begin() + static_cast<ptrdiff_t>(lo), files.begin() + static_cast<ptrdiff_t>(hi), path,
                             [](const FileAgg& f, std::string_view p) { return f.path < p; });
  return static_cast<size_t>(it - files.begin());
}

// Moves the front of `from` to the back of `to`, freeing `from` as it goes.
void move_front(std::deque<FileAgg>& from, std::deque<FileAgg>& to) {
  to.push_back(std::move(from.front()));
  from.pop_front();
}

}  // namespace

FileTable::FileTable(PathPool pool, std::deque<FileAgg> files) : pool_(std::move(pool)), files_(std::move(files)) {
  if (sort_by_path(files_)) combine_equal(files_);
}

FileTable::FileTable(const FileTable& o) : files_(o.files_) {
  for (FileAgg& f : files_) f.path = pool_.add(f.path);
}

FileTable& FileTable::operator=(const FileTable& o) {
  if (this != &o) *this = FileTable(o);
  return *this;
}

const FileAgg* FileTable::find(std::string_view path) const {
  auto it = std::lower_bound(files_.begin(), files_.end(), path,
                             [](const FileAgg& f, std::string_view p) { return f.path < p; });
  return it != files_.end() && it->path == path ? &*it : nullptr;
}

FileAgg* FileTable::find(std::string_view path) {
  return const_cast<FileAgg*>(static_cast<const FileTable*>(this)->find(path));
}

const FileAgg& FileTable::at(std::string_view path) const {
  if (const FileAgg* f = find(path)) return *f;
  throw std::out_of_range("no file " + std::string(path) + " in the job");
}

FileAgg& FileTable::operator[](std::string_view path) {
  auto it = std::lower_bound(files_.begin(), files_.end(), path,
                             [](const FileAgg& f, std::string_view p) { return f.path < p; });
  if (it != files_.end() && it->path == path) return *it;
  it = files_.insert(it, FileAgg{});
  it->path = pool_.add(path);
  return *it;
}

void FileTable::merge(FileTable& later) {
  pool_.absorb(later.pool_);
  std::deque<FileAgg>& b = later.files_;
  if (files_.empty()) {
    files_ = std::move(b);
  } else if (!b.empty() && files_.back().path < b.front().path) {
    while (!b.empty()) move_front(b, files_);
  } else if (!b.empty()) {
    // Most of a later unit's files are ours already (the data set another
    // worker read, the same libraries): they join ours in place, ours first.
    // Only paths new to the table make it merge the two, a copy of every
    // record: a job of many processes copied its whole table once per
    // process.
    std::deque<FileAgg> fresh;
    size_t at = 0;
    for (FileAgg& f : b) {
      at = lower_bound_from(files_, at, f.path);
      if (at < files_.size() && files_[at].path == f.path)
        files_[at].absorb(std::move(f));
      else
        fresh.push_back(std::move(f));
    }
    b = {};
    if (!fresh.empty()) {
      std::deque<FileAgg> all;
      std::deque<FileAgg>& a = files_;
      while (!a.empty() && !fresh.empty()) move_front(by_path(fresh.front(), a.front()) ? fresh : a, all);
      while (!a.empty()) move_front(a, all);
      while (!fresh.empty()) move_front(fresh, all);
      files_ = std::move(all);
    }
  }
  b = {};
}

}  // namespace strata::analysis
