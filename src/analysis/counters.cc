// Darshan-compatible counter engine; see counters.h and docs/analysis.md.
#include "analysis/counters.h"

#include "format/format.h"

#include <algorithm>

namespace strata::counters {

#define STRATA_X_NAME(a) #a,
const char* const kPosixCounterNames[POSIX_NUM_INDICES] = {STRATA_POSIX_COUNTERS(STRATA_X_NAME)};
const char* const kPosixFCounterNames[POSIX_F_NUM_INDICES] = {STRATA_POSIX_F_COUNTERS(STRATA_X_NAME)};
const char* const kStdioCounterNames[STDIO_NUM_INDICES] = {STRATA_STDIO_COUNTERS(STRATA_X_NAME)};
const char* const kStdioFCounterNames[STDIO_F_NUM_INDICES] = {STRATA_STDIO_F_COUNTERS(STRATA_X_NAME)};
#undef STRATA_X_NAME

namespace {

// Darshan's DARSHAN_TIMER_INC_NO_OVERLAP: time already counted up to `last`
// is not counted again.
inline void timer_inc_no_overlap(double& timer, double t1, double t2, double& last) {
  if (t1 > last)
    timer += t2 - t1;
  else if (t2 > last)
    timer += t2 - last;
  // Darshan adds (t2 - last) even when negative; an event entirely inside
  // the counted span would subtract time. strata adds nothing in that case.
  if (t2 > last) last = t2;
}

inline void set_start(double& ts, double t1) {
  if (ts == 0 || ts > t1) ts = t1;
}

constexpr int64_t kMaxFdIndex = 1 << 22;

}  // namespace

// ---- CommonValues -----------------------------------------------------------

int CommonValues::find(int64_t v) const {
  for (int i = 0; i < n_; ++i)
    if (value(i) == v) return i;
  return -1;
}

void CommonValues::add(int64_t v, int64_t c) {
  int i = find(v);
  if (i < 0) {
    if (n_ == kMax) return;
    if (n_ == kInline && !spill_) spill_ = std::make_unique<Spill>();
    i = n_++;
    (i < kInline ? val_[i] : spill_->val[i - kInline]) = v;
    count(i) = 0;
  }
  count(i) += c;
  last_ = i;
}

void CommonValues::track_slow(int64_t v) { add(v, 1); }

void CommonValues::merge(const CommonValues& o) {
  const int last = last_;
  for (int j = 0; j < o.n_; ++j) add(o.value(j), o.count(j));
  last_ = last;
}

void CommonValues::top4(int64_t* vals, int64_t* cnts) const {
  int idx[kMax];
  int m = 0;
  for (int i = 0; i < n_; ++i)
    if (value(i) != 0) idx[m++] = i;
  std::sort(idx, idx + m, [&](int a, int b) {
    if (count(a) != count(b)) return count(a) > count(b);
    return value(a) > value(b);
  });
  for (int k = 0; k < 4; ++k) {
    vals[k] = k < m ? value(idx[k]) : 0;
    cnts[k] = k < m ? count(idx[k]) : 0;
  }
}

// ---- record lookup -------------------------------------------------------------

PosixEntry* CounterEngine::posix_for_file(uint32_t file) {
  if (file == kNoFile) return nullptr;
  if (file >= posix_by_file_.size()) posix_by_file_.resize(file + 1, 0);
  uint32_t& slot = posix_by_file_[file];
  if (slot == 0) {
    PosixEntry& r = posix_.emplace_back();
    r.file = file;
    r.counters[POSIX_MEM_ALIGNMENT] = cfg_.mem_alignment;
    r.counters[POSIX_FILE_ALIGNMENT] = cfg_.file_alignment;
    if (!cfg_.count_mmap) r.counters[POSIX_MMAPS] = -1;
    slot = static_cast<uint32_t>(posix_.size());
  }
  return &posix_[slot - 1];
}

StdioRecord* CounterEngine::stdio_for_file(uint32_t file) {
  if (file == kNoFile) return nullptr;
  if (file >= stdio_by_file_.size()) stdio_by_file_.resize(file + 1, 0);
  uint32_t& slot = stdio_by_file_[file];
  if (slot == 0) {
    stdio_.emplace_back().file = file;
    slot = static_cast<uint32_t>(stdio_.size());
  }
  return &stdio_[slot - 1];
}

template <class T>
void CounterEngine::bind_fd(std::vector<T*>& table, int32_t fd, T* r) {
  if (fd < 0 || fd >= kMaxFdIndex) return;
  if (static_cast<size_t>(fd) >= table.size()) table.resize(static_cast<size_t>(fd) + 1, nullptr);
  table[fd] = r;
}

inline PosixEntry* CounterEngine::posix_for_event(const CounterEvent& e) {
  if (PosixEntry* r = at_fd(posix_fd_, e.fd)) {
    // The fd table can be stale when the trace missed a close; trust the path.
    if (e.file == kNoFile || r->file == e.file) return r;
  }
  return posix_for_event_slow(e);
}

PosixEntry* CounterEngine::posix_for_event_slow(const CounterEvent& e) {
  PosixEntry* r = posix_for_file(e.file);
  if (r) {
    bind_fd(posix_fd_, e.fd, r);
  } else {
    ++unmatched_;
  }
  return r;
}

StdioRecord* CounterEngine::stdio_for_event(const CounterEvent& e) {
  if (StdioRecord* r = at_fd(stdio_fd_, e.fd)) {
    if (e.file == kNoFile || r->file == e.file) return r;
  }
  StdioRecord* r = stdio_for_file(e.file);
  if (r) {
    bind_fd(stdio_fd_, e.fd, r);
  } else {
    ++unmatched_;
  }
  return r;
}

const PosixEntry* CounterEngine::find_posix(uint32_t file) const {
  if (file >= posix_by_file_.size() || posix_by_file_[file] == 0) return nullptr;
  return &posix_[posix_by_file_[file] - 1];
}

const StdioRecord* CounterEngine::find_stdio(uint32_t file) const {
  if (file >= stdio_by_file_.size() || stdio_by_file_[file] == 0) return nullptr;
  return &stdio_[stdio_by_file_[file] - 1];
}

// ---- events --------------------------------------------------------------------

void CounterEngine::on_posix(const CounterEvent& e) {
  int64_t* c;
  double* f;
  switch (e.op) {
    case Op::kOpen: {
      if (!e.ok) return;
      PosixEntry* r = posix_for_file(e.file);
      if (!r) {
        ++unmatched_;
        return;
      }
      c = r->counters;
      f = r->fcounters;
      if (e.value) c[POSIX_MODE] = e.value;
      r->offset = 0;
      r->last_byte_read = 0;
      r->last_byte_written = 0;
      c[POSIX_OPENS] += 1;
      set_start(f[POSIX_F_OPEN_START_TIMESTAMP], e.t1);
      f[POSIX_F_OPEN_END_TIMESTAMP] = e.t2;
      timer_inc_no_overlap(f[POSIX_F_META_TIME], e.t1, e.t2, r->last_meta_end);
      bind_fd(posix_fd_, e.fd, r);
      return;
    }
    case Op::kDup:
    case Op::kFileno: {
      if (!e.ok) return;
      PosixEntry* r = nullptr;
      if (e.op == Op::kDup) r = at_fd(posix_fd_, e.old_fd);
      if (!r) r = posix_for_file(e.file);
      if (!r) {
        ++unmatched_;
        return;
      }
      c = r->counters;
      f = r->fcounters;
      c[POSIX_OPENS] += 1;
      c[e.op == Op::kDup ? POSIX_DUPS : POSIX_FILENOS] += 1;
      set_start(f[POSIX_F_OPEN_START_TIMESTAMP], e.t1);
      f[POSIX_F_OPEN_END_TIMESTAMP] = e.t2;
      timer_inc_no_overlap(f[POSIX_F_META_TIME], e.t1, e.t2, r->last_meta_end);
      bind_fd(posix_fd_, e.fd, r);
      return;
    }
    case Op::kRead:
    case Op::kWrite: {
      if (!e.ok || e.bytes < 0) return;
      PosixEntry* r = posix_for_event(e);
      if (!r) return;
      c = r->counters;
      f = r->fcounters;
      const bool rd = e.op == Op::kRead;
      const int64_t off = (e.positional && e.offset >= 0) ? e.offset : r->offset;
      int64_t& last = rd ? r->last_byte_read : r->last_byte_written;
      if (off > last) c[rd ? POSIX_SEQ_READS : POSIX_SEQ_WRITES] += 1;
      if (off == last + 1) c[rd ? POSIX_CONSEC_READS : POSIX_CONSEC_WRITES] += 1;
      int64_t stride = 0;
      if (off > 0 && off > last && last != 0) stride = off - last - 1;
      last = off + e.bytes - 1;
      r->offset = off + e.bytes;
      const int max_idx = rd ? POSIX_MAX_BYTE_READ : POSIX_MAX_BYTE_WRITTEN;
      if (c[max_idx] < off + e.bytes - 1) c[max_idx] = off + e.bytes - 1;
      c[rd ? POSIX_BYTES_READ : POSIX_BYTES_WRITTEN] += e.bytes;
      c[rd ? POSIX_READS : POSIX_WRITES] += 1;
      c[(rd ? POSIX_SIZE_READ_0_100 : POSIX_SIZE_WRITE_0_100) + size_bucket(e.bytes)] += 1;
      r->access.track(e.bytes);
      r->stride.track(stride);
      if (e.mem_align != 0 && !format::mem_aligned_to(e.mem_align, static_cast<uint64_t>(cfg_.mem_alignment)))
        c[POSIX_MEM_NOT_ALIGNED] += 1;
      const int64_t fa = c[POSIX_FILE_ALIGNMENT];
      // fa is a block size, nearly always a power of two: a mask, not a division.
      if (fa > 0 && ((fa & (fa - 1)) == 0 ? (off & (fa - 1)) : off % fa) != 0) c[POSIX_FILE_NOT_ALIGNED] += 1;
      if (r->last_io == (rd ? 2 : 1)) c[POSIX_RW_SWITCHES] += 1;
      r->last_io = rd ? 1 : 2;
      const double el = e.t2 - e.t1;
      if (rd) {
        set_start(f[POSIX_F_READ_START_TIMESTAMP], e.t1);
        f[POSIX_F_READ_END_TIMESTAMP] = e.t2;
        if (f[POSIX_F_MAX_READ_TIME] < el) {
          f[POSIX_F_MAX_READ_TIME] = el;
          c[POSIX_MAX_READ_TIME_SIZE] = e.bytes;
        }
        timer_inc_no_overlap(f[POSIX_F_READ_TIME], e.t1, e.t2, r->last_read_end);
      } else {
        set_start(f[POSIX_F_WRITE_START_TIMESTAMP], e.t1);
        f[POSIX_F_WRITE_END_TIMESTAMP] = e.t2;
        if (f[POSIX_F_MAX_WRITE_TIME] < el) {
          f[POSIX_F_MAX_WRITE_TIME] = el;
          c[POSIX_MAX_WRITE_TIME_SIZE] = e.bytes;
        }
        timer_inc_no_overlap(f[POSIX_F_WRITE_TIME], e.t1, e.t2, r->last_write_end);
      }
      return;
    }
    case Op::kSeek: {
      if (!e.ok || e.offset < 0) return;
      PosixEntry* r = posix_for_event(e);
      if (!r) return;
      r->offset = e.offset;
      timer_inc_no_overlap(r->fcounters[POSIX_F_META_TIME], e.t1, e.t2, r->last_meta_end);
      r->counters[POSIX_SEEKS] += 1;
      return;
    }
    case Op::kStat: {
      if (!e.ok) return;
      PosixEntry* r = e.file != kNoFile ? posix_for_file(e.file) : posix_for_event(e);
      if (!r) return;
      r->counters[POSIX_STATS] += 1;
      timer_inc_no_overlap(r->fcounters[POSIX_F_META_TIME], e.t1, e.t2, r->last_meta_end);
      return;
    }
    case Op::kFsync:
    case Op::kFdatasync: {
      if (!e.ok) return;
      PosixEntry* r = posix_for_event(e);
      if (!r) return;
      timer_inc_no_overlap(r->fcounters[POSIX_F_WRITE_TIME], e.t1, e.t2, r->last_write_end);
      r->counters[e.op == Op::kFsync ? POSIX_FSYNCS : POSIX_FDSYNCS] += 1;
      return;
    }
    case Op::kMmap: {
      if (!e.ok || !cfg_.count_mmap) return;
      PosixEntry* r = posix_for_event(e);
      if (!r) return;
      r->counters[POSIX_MMAPS] += 1;
      return;
    }
    case Op::kClose: {
      PosixEntry* r = nullptr;
      if (PosixEntry* bound = at_fd(posix_fd_, e.fd))
        r = bound;
      else if (e.file != kNoFile)
        r = posix_for_file(e.file);
      if (!r) {
        ++unmatched_;
        return;
      }
      r->last_byte_read = 0;
      r->last_byte_written = 0;
      set_start(r->fcounters[POSIX_F_CLOSE_START_TIMESTAMP], e.t1);
      r->fcounters[POSIX_F_CLOSE_END_TIMESTAMP] = e.t2;
      timer_inc_no_overlap(r->fcounters[POSIX_F_META_TIME], e.t1, e.t2, r->last_meta_end);
      if (e.fd >= 0 && static_cast<size_t>(e.fd) < posix_fd_.size()) posix_fd_[e.fd] = nullptr;
      return;
    }
    case Op::kRenameSrc: {
      rename_src_counted_ = false;
      if (!e.ok || e.file == kNoFile) return;
      if (e.file >= posix_by_file_.size() || posix_by_file_[e.file] == 0) return;  // unknown file
      rename_src_counted_ = true;
      PosixEntry* r = &posix_[posix_by_file_[e.file] - 1];
      r->counters[POSIX_RENAME_SOURCES] += 1;
      timer_inc_no_overlap(r->fcounters[POSIX_F_META_TIME], e.t1, e.t2, r->last_meta_end);
      return;
    }
    case Op::kRenameDst: {
      // Darshan records the target only when the source had a record.
      if (!e.ok || !rename_src_counted_) return;
      rename_src_counted_ = false;
      PosixEntry* r = posix_for_file(e.file);
      if (!r) return;
      r->counters[POSIX_RENAME_TARGETS] += 1;
      if (r->counters[POSIX_RENAMED_FROM] == 0) r->counters[POSIX_RENAMED_FROM] = e.value;
      return;
    }
    default:
      return;
  }
}

void CounterEngine::on_stdio(const CounterEvent& e) {
  switch (e.op) {
    case Op::kOpen:
    case Op::kFdopen: {
      if (!e.ok) return;
      StdioRecord* r = stdio_for_file(e.file);
      if (!r) {
        ++unmatched_;
        return;
      }
      if (e.op == Op::kOpen) r->offset = 0;
      r->counters[STDIO_OPENS] += 1;
      if (e.op == Op::kFdopen) r->counters[STDIO_FDOPENS] += 1;
      set_start(r->fcounters[STDIO_F_OPEN_START_TIMESTAMP], e.t1);
      r->fcounters[STDIO_F_OPEN_END_TIMESTAMP] = e.t2;
      timer_inc_no_overlap(r->fcounters[STDIO_F_META_TIME], e.t1, e.t2, r->last_meta_end);
      bind_fd(stdio_fd_, e.fd, r);
      return;
    }
    case Op::kRead:
    case Op::kWrite:
    case Op::kFlush: {
      if (!e.ok) return;
      StdioRecord* r = stdio_for_event(e);
      if (!r) return;
      int64_t* c = r->counters;
      double* f = r->fcounters;
      const int64_t bytes = e.op == Op::kFlush ? 0 : (e.bytes < 0 ? 0 : e.bytes);
      const int64_t off = r->offset;
      r->offset = off + bytes;
      if (e.op == Op::kRead) {
        if (c[STDIO_MAX_BYTE_READ] < off + bytes - 1) c[STDIO_MAX_BYTE_READ] = off + bytes - 1;
        c[STDIO_BYTES_READ] += bytes;
        c[STDIO_READS] += 1;
        set_start(f[STDIO_F_READ_START_TIMESTAMP], e.t1);
        f[STDIO_F_READ_END_TIMESTAMP] = e.t2;
        timer_inc_no_overlap(f[STDIO_F_READ_TIME], e.t1, e.t2, r->last_read_end);
      } else {
        if (c[STDIO_MAX_BYTE_WRITTEN] < off + bytes - 1) c[STDIO_MAX_BYTE_WRITTEN] = off + bytes - 1;
        c[STDIO_BYTES_WRITTEN] += bytes;
        c[e.op == Op::kFlush ? STDIO_FLUSHES : STDIO_WRITES] += 1;
        set_start(f[STDIO_F_WRITE_START_TIMESTAMP], e.t1);
        f[STDIO_F_WRITE_END_TIMESTAMP] = e.t2;
        timer_inc_no_overlap(f[STDIO_F_WRITE_TIME], e.t1, e.t2, r->last_write_end);
      }
      return;
    }
    case Op::kSeek: {
      if (!e.ok) return;
      StdioRecord* r = stdio_for_event(e);
      if (!r) return;
      if (e.offset >= 0) r->offset = e.offset;
      timer_inc_no_overlap(r->fcounters[STDIO_F_META_TIME], e.t1, e.t2, r->last_meta_end);
      r->counters[STDIO_SEEKS] += 1;
      return;
    }
    case Op::kClose: {
      StdioRecord* r = nullptr;
      if (StdioRecord* bound = at_fd(stdio_fd_, e.fd))
        r = bound;
      else if (e.file != kNoFile)
        r = stdio_for_file(e.file);
      if (!r) {
        ++unmatched_;
        return;
      }
      set_start(r->fcounters[STDIO_F_CLOSE_START_TIMESTAMP], e.t1);
      r->fcounters[STDIO_F_CLOSE_END_TIMESTAMP] = e.t2;
      timer_inc_no_overlap(r->fcounters[STDIO_F_META_TIME], e.t1, e.t2, r->last_meta_end);
      if (e.fd >= 0 && static_cast<size_t>(e.fd) < stdio_fd_.size()) stdio_fd_[e.fd] = nullptr;
      return;
    }
    default:
      return;
  }
}

// ---- merge / finalize ----------------------------------------------------------

namespace {

// 0 is "never"; a start may be negative (a DFTracer trace's time origin is
// its first record, and a longer call on another thread may have started
// before it), and the earlier one wins as set_start would have it.
inline void min_nonzero(double& into, double v) {
  if (v != 0 && (into == 0 || v < into)) into = v;
}

}  // namespace

void CounterEngine::adopt(const PosixRecord& r) {
  PosixEntry* rec = posix_for_file(r.file);
  if (!rec) return;
  *rec = PosixEntry();  // the running state too: the record starts over from r
  static_cast<PosixRecord&>(*rec) = r;
  for (int k = 0; k < 4; ++k) {
    if (r.counters[POSIX_ACCESS1_COUNT + k] > 0)
      rec->access.add(r.counters[POSIX_ACCESS1_ACCESS + k], r.counters[POSIX_ACCESS1_COUNT + k]);
    if (r.counters[POSIX_STRIDE1_COUNT + k] > 0)
      rec->stride.add(r.counters[POSIX_STRIDE1_STRIDE + k], r.counters[POSIX_STRIDE1_COUNT + k]);
  }
}

void CounterEngine::adopt(const StdioRecord& r) {
  if (StdioRecord* rec = stdio_for_file(r.file)) *rec = r;
}

void CounterEngine::merge(const CounterEngine& other) {
  for (const PosixEntry& o : other.posix_) {
    PosixEntry* r = posix_for_file(o.file);
    int64_t* c = r->counters;
    const int64_t* oc = o.counters;
    for (int j = POSIX_OPENS; j <= POSIX_RENAME_TARGETS; ++j) {
      if (c[j] < 0 || oc[j] < 0)
        c[j] = -1;
      else
        c[j] += oc[j];
    }
    if (c[POSIX_RENAMED_FROM] == 0) c[POSIX_RENAMED_FROM] = oc[POSIX_RENAMED_FROM];
    if (c[POSIX_MODE] == 0) c[POSIX_MODE] = oc[POSIX_MODE];
    // -1 is "unknown" (a trace without sizes): unknown plus anything stays unknown.
    auto add = [](int64_t& a, int64_t b) { a = a < 0 || b < 0 ? -1 : a + b; };
    add(c[POSIX_BYTES_READ], oc[POSIX_BYTES_READ]);
    add(c[POSIX_BYTES_WRITTEN], oc[POSIX_BYTES_WRITTEN]);
    c[POSIX_MAX_BYTE_READ] = std::max(c[POSIX_MAX_BYTE_READ], oc[POSIX_MAX_BYTE_READ]);
    c[POSIX_MAX_BYTE_WRITTEN] = std::max(c[POSIX_MAX_BYTE_WRITTEN], oc[POSIX_MAX_BYTE_WRITTEN]);
    for (int j = POSIX_CONSEC_READS; j <= POSIX_MEM_NOT_ALIGNED; ++j) add(c[j], oc[j]);
    add(c[POSIX_FILE_NOT_ALIGNED], oc[POSIX_FILE_NOT_ALIGNED]);
    for (int j = POSIX_SIZE_READ_0_100; j <= POSIX_SIZE_WRITE_1G_PLUS; ++j) add(c[j], oc[j]);
    r->access.merge(o.access);
    r->stride.merge(o.stride);
    double* f = r->fcounters;
    const double* of = o.fcounters;
    for (int j = POSIX_F_OPEN_START_TIMESTAMP; j <= POSIX_F_CLOSE_START_TIMESTAMP; ++j)
      min_nonzero(f[j], of[j]);
    for (int j = POSIX_F_OPEN_END_TIMESTAMP; j <= POSIX_F_CLOSE_END_TIMESTAMP; ++j)
      f[j] = std::max(f[j], of[j]);
    for (int j = POSIX_F_READ_TIME; j <= POSIX_F_META_TIME; ++j) f[j] += of[j];
    if (of[POSIX_F_MAX_READ_TIME] > f[POSIX_F_MAX_READ_TIME]) {
      f[POSIX_F_MAX_READ_TIME] = of[POSIX_F_MAX_READ_TIME];
      c[POSIX_MAX_READ_TIME_SIZE] = oc[POSIX_MAX_READ_TIME_SIZE];
    }
    if (of[POSIX_F_MAX_WRITE_TIME] > f[POSIX_F_MAX_WRITE_TIME]) {
      f[POSIX_F_MAX_WRITE_TIME] = of[POSIX_F_MAX_WRITE_TIME];
      c[POSIX_MAX_WRITE_TIME_SIZE] = oc[POSIX_MAX_WRITE_TIME_SIZE];
    }
  }
  for (const StdioRecord& o : other.stdio_) {
    StdioRecord* r = stdio_for_file(o.file);
    for (int j = STDIO_OPENS; j <= STDIO_BYTES_READ; ++j) r->counters[j] += o.counters[j];
    for (int j = STDIO_MAX_BYTE_READ; j <= STDIO_MAX_BYTE_WRITTEN; ++j)
      r->counters[j] = std::max(r->counters[j], o.counters[j]);
    for (int j = STDIO_F_META_TIME; j <= STDIO_F_READ_TIME; ++j) r->fcounters[j] += o.fcounters[j];
    for (int j = STDIO_F_OPEN_START_TIMESTAMP; j <= STDIO_F_READ_START_TIMESTAMP; ++j)
      min_nonzero(r->fcounters[j], o.fcounters[j]);
    for (int j = STDIO_F_OPEN_END_TIMESTAMP; j <= STDIO_F_READ_END_TIMESTAMP; ++j)
      r->fcounters[j] = std::max(r->fcounters[j], o.fcounters[j]);
  }
  unmatched_ += other.unmatched_;
}

void CounterEngine::finalize() {
  for (size_t i = 0; i < posix_.size(); ++i) {
    PosixEntry& r = posix_[i];
    r.access.top4(&r.counters[POSIX_ACCESS1_ACCESS], &r.counters[POSIX_ACCESS1_COUNT]);
    r.stride.top4(&r.counters[POSIX_STRIDE1_STRIDE], &r.counters[POSIX_STRIDE1_COUNT]);
  }
}

uint64_t record_id(const std::string& path) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : path) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace strata::counters
