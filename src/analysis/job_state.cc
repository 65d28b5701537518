// Merging and (de)serialising a Job: the state of the "io" pass (pass.h).
#include <algorithm>
#include <iterator>
#include <string>
#include <type_traits>

#include "analysis/aggregate.h"
#include "analysis/serial.h"

namespace strata::counters {
// In the records' namespace, where the serialiser's lookup finds them.
template <class Ar> void fields(Ar& ar, PosixRecord& x) { ar(x.file, x.counters, x.fcounters); }
template <class Ar> void fields(Ar& ar, StdioRecord& x) { ar(x.file, x.counters, x.fcounters); }
}  // namespace strata::counters

namespace strata::analysis {

// ---- fields: every member that is part of a result, once ------------------------

template <class Ar> void fields(Ar& ar, ValueDist& x) { ar(x.exact, x.log2, x.n, x.min, x.max, x.approx); }
template <class Ar> void fields(Ar& ar, FuncStats& x) {
  ar(x.name, x.category, x.layer, x.count, x.errors, x.total_ns, x.bytes, x.sizes);
}
template <class Ar> void fields(Ar& ar, Bin& x) { ar(x.read_bytes, x.write_bytes, x.ops, x.io_ns); }
template <class Ar> void fields(Ar& ar, TimeBins& x) { ar(x.width, x.bins); }
template <class Ar> void fields(Ar& ar, Point& x) { ar(x.ts, x.offset, x.size, x.pid, x.write); }
template <class Ar> void fields(Ar& ar, TagAgg& x) {
  ar(x.events, x.reads, x.writes, x.meta_ops, x.io_ns, x.read_ns, x.write_ns, x.meta_ns, x.compute_ns,
     x.bytes_read, x.bytes_written, x.first_ts, x.last_ts, x.loader_waits, x.loader_wait_ns, x.waiters,
     x.loader_starts, x.loader_start_ns, x.loader_stop_ns, x.loop_first, x.loop_last);
}
template <class Ar> void fields(Ar& ar, IntervalSet& x) {
  int64_t measure = x.measure();
  uint64_t clipped = x.clipped();
  ar(measure, clipped);
  if constexpr (std::is_same_v<Ar, serial::Reader>) x.freeze(measure, clipped);
}
template <class Ar> void fields(Ar& ar, FileAccess& x) {
  ar(x.coverage, x.write_epochs, x.read_epochs, x.samples, x.seen, x.max_read, x.min_read, x.offsets_known);
}
template <class Ar> void fields(Ar& ar, ProcFile& x) {
  ar(x.opens, x.fdopens, x.reads, x.writes, x.stats, x.seeks, x.mmaps, x.other_meta, x.bytes_read, x.bytes_written,
     x.read_ns, x.write_ns, x.meta_ns, x.extent, x.first_ts, x.last_ts, x.eof_reads);
  // The same bytes with or without the access part (an absent one reads as
  // empty); loading allocates it only when it holds something.
  if constexpr (std::is_same_v<Ar, serial::Reader>) {
    FileAccess acc;
    ar(acc);
    if (acc.seen || !acc.coverage.empty() || !acc.write_epochs.empty() || !acc.read_epochs.empty() ||
        !acc.samples.empty() || acc.max_read != 0 || acc.min_read != INT64_MAX || acc.offsets_known)
      x.access.get() = std::move(acc);
  } else {
    static FileAccess kNone;
    ar(x.access.find() ? const_cast<FileAccess&>(*x.access.find()) : kNone);
  }
}
template <class Ar> void fields(Ar& ar, ProcessMeta& x) {
  ar(x.pid, x.ppid, x.rank, x.host, x.exe, x.cmdline, x.start_ns, x.source_file);
}
template <class Ar> void fields(Ar& ar, ProcResult& x) {
  ar(x.meta, x.meta_known, x.threads, x.events, x.first_ts, x.last_ts, x.io_union, x.compute_union,
     x.both_union, x.app_union, x.posix_ns, x.stdio_ns, x.meta_ns, x.data_ns, x.bytes_read,
     x.bytes_written, x.clipped, x.children, x.exit_status, x.exit_signal, x.bins, x.posix, x.stdio);
}
template <class Ar> void fields(Ar& ar, FileProc& x) { ar(x.pid, x.pf); }
// The path is the table's (fields of FileTable).
template <class Ar> void fields(Ar& ar, FileAgg& x) {
  int64_t seq = x.seq_reads(), consec = x.consec_reads(), counted = x.counted_reads();
  ar(static_cast<ProcFile&>(x), seq, consec, counted, x.only_pid_);
  if constexpr (std::is_same_v<Ar, serial::Reader>) {
    if (auto* e = x.extra_.find()) e->order = {};
    x.add_read_order(seq, consec, counted);
  }
  bool many = x.many() != nullptr;
  ar(many);
  if (many) ar(x.many_list());
}
template <class Ar> void fields(Ar& ar, FileTable& x) {
  uint64_t n = x.size();
  ar(n);
  if constexpr (std::is_same_v<Ar, serial::Reader>) {
    PathPool pool;
    std::deque<FileAgg> files;
    for (uint64_t i = 0; i < n; ++i) {
      std::string path;
      FileAgg f;
      ar(path, f);
      f.path = pool.add(path);
      files.push_back(std::move(f));
    }
    x = FileTable(std::move(pool), std::move(files));
  } else {
    for (FileAgg& f : x) {
      std::string path(f.path);
      ar(path, f);
    }
  }
}
template <class Ar> void fields(Ar& ar, Job& x) {
  ar(x.procs, x.funcs, x.files, x.by_tag, x.by_epoch, x.by_epoch_outside, x.units, x.warnings, x.approximate, x.sizes_known,
     x.events, x.first_ts, x.last_ts, x.source_kind);
}

std::string save_job(const Job& job) { return serial::save(job); }

void load_job(std::string_view bytes, Job& job) {
  job = Job{};
  serial::load(bytes, job);
}

// ---- merge ---------------------------------------------------------------------------

static void merge_func(FuncStats& a, FuncStats& b) {
  if (a.count == 0) {
    a.name = b.name;
    a.category = b.category;
    a.layer = b.layer;
  }
  a.count += b.count;
  a.errors += b.errors;
  a.total_ns += b.total_ns;
  a.bytes += b.bytes;
  a.sizes.merge(b.sizes);
}

// Moves b's entries into a: nodes a lacks move over whole (no copy of their
// key or value), the others merge with `merge`.
template <class Map, class Merge>
static void merge_map(Map& a, Map& b, Merge merge) {
  for (auto it = b.begin(); it != b.end();) {
    auto next = std::next(it);
    auto found = a.find(it->first);
    if (found == a.end())
      a.insert(b.extract(it));
    else
      merge(found->second, it->second);
    it = next;
  }
}

namespace {
bool moved_data(const FileAgg& f) { return f.reads + f.writes > 0 || f.bytes_read != 0 || f.bytes_written != 0; }
}  // namespace

void index_data_files(Job& job) {
  job.data_files.files.clear();
  for (const FileAgg& f : job.files)
    if (moved_data(f)) job.data_files.files.push_back(&f);
  auto& ranks = job.data_files.rank_of_pid;
  ranks.clear();
  for (const ProcResult& p : job.procs)
    if (p.meta.rank >= 0) ranks.emplace_back(p.meta.pid, p.meta.rank);
  std::sort(ranks.begin(), ranks.end());
  job.data_files.known = true;
}

FilesWithData::FilesWithData(const Job& job) {
  if (job.data_files.known) {
    view_ = job.data_files.files;
    return;
  }
  for (const FileAgg& f : job.files)
    if (moved_data(f)) own_.push_back(&f);
  view_ = own_;
}

void merge_jobs(Job& a, Job& b) {
  if (a.units.empty() && a.events == 0 && a.procs.empty()) {  // the first unit: nothing to add up
    const bool finished = a.finished;
    a = std::move(b);
    a.finished = a.finished || finished;
    a.data_files = DataFileIndex();  // the files change: index them again when finished
    b = Job{};
    return;
  }
  a.data_files = DataFileIndex();
  for (auto& p : b.procs) a.procs.push_back(std::move(p));
  merge_map(a.funcs, b.funcs, merge_func);
  a.files.merge(b.files);
  auto merge_tag = [](TagAgg& x, TagAgg& y) { x.merge(y); };
  merge_map(a.by_tag, b.by_tag, merge_tag);
  merge_map(a.by_epoch, b.by_epoch, merge_tag);
  merge_map(a.by_epoch_outside, b.by_epoch_outside, merge_tag);
  a.units.insert(a.units.end(), b.units.begin(), b.units.end());
  a.warnings.insert(a.warnings.end(), b.warnings.begin(), b.warnings.end());
  a.approximate.insert(b.approximate.begin(), b.approximate.end());
  a.sizes_known = a.sizes_known && b.sizes_known;
  a.events += b.events;
  a.first_ts = std::min(a.first_ts, b.first_ts);
  a.last_ts = std::max(a.last_ts, b.last_ts);
  if (a.source_kind.empty()) a.source_kind = b.source_kind;
  b = Job{};
}

}  // namespace strata::analysis
