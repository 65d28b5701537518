#include "analysis/aggregate.h"

#include <algorithm>
#include <array>
#include <bit>
#include <deque>
#include <unordered_set>

// Per-event helpers of UnitAgg::event(), inlined into it (one call per event).
#define STRATA_HOT_INLINE [[gnu::always_inline]] inline

namespace strata::analysis {

// ---- ValueDist ----------------------------------------------------------------

static int log2_bucket(int64_t v) { return v <= 0 ? 0 : 64 - std::countl_zero(static_cast<uint64_t>(v)); }

void ValueDist::add_slow(int64_t v, uint64_t k) {
  n += k;
  min = std::min(min, v);
  max = std::max(max, v);
  auto it = exact.find(v);
  if (it != exact.end()) {
    it->second += k;
    hot_.value = v;
    hot_.count = &it->second;
  } else if (exact.size() < 65536) {
    auto ins = exact.emplace(v, k).first;
    hot_.value = v;
    hot_.count = &ins->second;
  } else {
    approx = true;
    log2[std::min(63, log2_bucket(v))] += k;
  }
}

void ValueDist::merge(const ValueDist& o) {
  for (auto& [v, k] : o.exact) {
    add_slow(v, k);
    n -= k;  // add() counted it; n is summed below
  }
  for (int i = 0; i < 64; ++i) log2[i] += o.log2[i];
  n += o.n;
  approx = approx || o.approx;
  if (o.n) {
    min = std::min(min, o.min);
    max = std::max(max, o.max);
  }
}

int64_t ValueDist::quantile(double q) const {
  if (n == 0) return -1;
  std::vector<std::pair<int64_t, uint64_t>> v(exact.begin(), exact.end());
  for (int i = 0; i < 64; ++i)
    if (log2[i]) v.emplace_back(i == 0 ? 0 : (int64_t{1} << (i - 1)), log2[i]);
  std::sort(v.begin(), v.end());
  uint64_t rank = static_cast<uint64_t>(q * static_cast<double>(n));
  if (rank < 1) rank = 1;
  if (rank > n) rank = n;
  uint64_t acc = 0;
  for (auto& [val, k] : v) {
    acc += k;
    if (acc >= rank) return val;
  }
  return v.back().first;
}

// ---- TimeBins -------------------------------------------------------------------

Bin& TimeBins::at_slow(int64_t ts) {
  if (ts < 0) ts = 0;
  size_t i = static_cast<size_t>(ts / width);
  if (i >= kMaxBins) {
    int64_t w = width;
    while (static_cast<size_t>(ts / w) >= kMaxBins) w *= 2;
    rebin(w);
    i = static_cast<size_t>(ts / width);
  }
  if (i >= bins.size()) bins.resize(i + 1);
  return bins[i];
}

void TimeBins::rebin(int64_t new_width) {
  if (new_width <= width) return;
  const int64_t f = new_width / width;
  std::vector<Bin> nb((bins.size() + static_cast<size_t>(f) - 1) / static_cast<size_t>(f));
  for (size_t i = 0; i < bins.size(); ++i) {
    Bin& d = nb[i / static_cast<size_t>(f)];
    d.read_bytes += bins[i].read_bytes;
    d.write_bytes += bins[i].write_bytes;
    d.ops += bins[i].ops;
    d.io_ns += bins[i].io_ns;
  }
  bins.swap(nb);
  width = new_width;
}

void TimeBins::merge(const TimeBins& o) {
  TimeBins other = o;
  if (other.width > width) rebin(other.width);
  if (width > other.width) other.rebin(width);
  if (bins.size() < other.bins.size()) bins.resize(other.bins.size());
  for (size_t i = 0; i < other.bins.size(); ++i) {
    bins[i].read_bytes += other.bins[i].read_bytes;
    bins[i].write_bytes += other.bins[i].write_bytes;
    bins[i].ops += other.bins[i].ops;
    bins[i].io_ns += other.bins[i].io_ns;
  }
}

void TagAgg::merge(const TagAgg& o) {
  events += o.events;
  reads += o.reads;
  writes += o.writes;
  meta_ops += o.meta_ops;
  io_ns += o.io_ns;
  read_ns += o.read_ns;
  write_ns += o.write_ns;
  meta_ns += o.meta_ns;
  compute_ns += o.compute_ns;
  loader_waits += o.loader_waits;
  loader_wait_ns += o.loader_wait_ns;
  std::vector<int64_t> all;
  std::set_union(waiters.begin(), waiters.end(), o.waiters.begin(), o.waiters.end(), std::back_inserter(all));
  waiters = std::move(all);
  loader_starts += o.loader_starts;
  loader_start_ns += o.loader_start_ns;
  loader_stop_ns += o.loader_stop_ns;
  loop_first = std::min(loop_first, o.loop_first);
  loop_last = std::max(loop_last, o.loop_last);
  bytes_read += o.bytes_read;
  bytes_written += o.bytes_written;
  first_ts = std::min(first_ts, o.first_ts);
  last_ts = std::max(last_ts, o.last_ts);
}

// ---- UnitAgg ----------------------------------------------------------------------

struct UnitAgg::Proc {
  ProcessMeta meta;
  bool meta_known = false;
  std::unordered_set<int64_t> tids;
  int64_t last_tid = INT64_MIN;
  // The last few threads seen: threads of a process take turns event by
  // event (completion order), and each switch would otherwise be a hash insert.
  std::array<int64_t, 8> recent_tids;
  size_t next_recent_tid = 0;
  Proc() { recent_tids.fill(INT64_MIN); }
  void saw_thread(int64_t tid) {
    last_tid = tid;
    for (int64_t t : recent_tids)
      if (t == tid) return;
    tids.insert(tid);
    recent_tids[next_recent_tid++ % recent_tids.size()] = tid;
  }
  uint64_t events = 0;
  int64_t first_ts = INT64_MAX, last_ts = INT64_MIN;
  IntervalSet io, compute, both, app;
  // Until the process's first compute region, `both` (I/O or compute) would
  // receive exactly io's inserts: it is not filled, and becomes a copy of
  // io (same intervals, pending batch, sealed part, clipped count) then.
  bool both_is_io = true;
  const IntervalSet& both_set() const { return both_is_io ? io : both; }
  int64_t posix_ns = 0, stdio_ns = 0, meta_ns = 0, data_ns = 0;
  int64_t bytes_read = 0, bytes_written = 0;
  std::vector<int64_t> children;
  int64_t exit_status = -1;
  int32_t exit_signal = 0;
  std::vector<int32_t> loops_ended;  // epoch groups whose training-loader pass ended in this process
  TimeBins bins;
  counters::CounterEngine engine;
  std::vector<uint32_t> file_idx;  // path id -> index + 1
  std::deque<FileAgg> files;       // become the job's (merge_files): counted as ProcFiles
  std::vector<uint32_t> file_paths;
  uint64_t rng = 0x9E3779B97F4A7C15ull;
  // The files last asked for, by path id (direct-mapped): the threads of a
  // process take turns event by event, each on its own file. Deque elements
  // never move on emplace_back.
  struct RecentFile {
    uint32_t path = 0;  // 0: empty
    ProcFile* file = nullptr;
  };
  std::array<RecentFile, 16> recent_files;
  ProcFile& file(uint32_t path) {
    RecentFile& r = recent_files[path % recent_files.size()];
    if (r.path == path && r.file) return *r.file;
    r.path = path;
    r.file = &file_slow(path);
    return *r.file;
  }
  [[gnu::noinline]] ProcFile& file_slow(uint32_t path) {
    // Doubled, not grown once per new path id.
    if (path >= file_idx.size()) file_idx.resize(std::max<size_t>(path + 1, 2 * file_idx.size()), 0);
    uint32_t& s = file_idx[path];
    if (!s) {
      files.emplace_back();
      file_paths.push_back(path);
      s = static_cast<uint32_t>(files.size());
    }
    return files[s - 1];
  }
  uint64_t next_rand() {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
  }
  // Uniform in [0, n), n > 0: the high half of a 128-bit product, not a
  // 64-bit division per access.
  uint64_t next_below(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(next_rand()) * n) >> 64);
  }
};

// The access samples of a (process, file) are stratified: its accesses are
// cut into windows of w in turn, and one access at random of each window is
// kept. When the samples fill their room, neighbouring windows pair up (one
// of each pair's two samples kept at random) and w doubles. So the samples
// cover the whole run evenly, in access order, and never alias with a
// periodic pattern; an access costs two compares, and the samples are
// appended, where a reservoir writes a random slot (a cache miss across
// thousands of files) on a fraction of accesses that falls only slowly.
void UnitAgg::next_sample_window(Proc& p, FileAccess& acc) {
  // Even, so that windows pair up (1 counts as 2).
  const size_t room = cfg_.samples_per_file == 0 ? 0 : std::max<size_t>(2, cfg_.samples_per_file & ~size_t{1});
  if (room == 0) {  // the first access was kept before its window ended
    acc.samples = {};
    acc.sample_pick = acc.window_end = UINT64_MAX;
    return;
  }
  if (acc.samples.size() >= room) {
    const size_t half = acc.samples.size() / 2;
    for (size_t i = 0; i < half; ++i) acc.samples[i] = acc.samples[2 * i + (p.next_rand() >> 63)];
    acc.samples.resize(half);
    acc.window *= 2;
  }
  acc.sample_pick = acc.seen + 1 + (acc.window > 1 ? p.next_below(acc.window) : 0);
  acc.window_end = acc.seen + acc.window;
}

UnitAgg::UnitAgg(const AggConfig& cfg) : cfg_(cfg) {}
UnitAgg::~UnitAgg() = default;

void UnitAgg::begin(const std::string& unit, const Tables* tables, bool sizes_known) {
  unit_ = unit;
  tables_ = tables;
  sizes_known_ = sizes_known;
}

inline UnitAgg::Proc& UnitAgg::proc(int64_t pid) {
  if (pid == last_pid_) [[likely]] return *last_;
  return proc_slow(pid);
}

UnitAgg::Proc& UnitAgg::proc_slow(int64_t pid) {
  auto& p = procs_[pid];
  if (!p) {
    p = std::make_unique<Proc>();
    p->meta.pid = pid;
  }
  last_pid_ = pid;
  last_ = p.get();
  return *p;
}

void UnitAgg::process(const ProcessMeta& meta) {
  Proc& p = proc(meta.pid);
  p.meta = meta;
  p.meta_known = true;
}

std::span<const CtxTag> UnitAgg::tags(uint32_t ctx) const {
  if (ctx == 0 || ctx >= tables_->ctxs.size()) return {};
  return tables_->ctxs[ctx];
}

int32_t UnitAgg::tag_group(uint32_t ctx, const std::string& key, std::vector<int32_t>& cache,
                           std::vector<std::string>& names) {
  if (ctx < cache.size() && cache[ctx] >= 0) return cache[ctx];
  if (ctx >= cache.size()) cache.resize(ctx_slots(ctx), -1);
  std::string_view value = "(none)";
  for (const CtxTag& t : tags(ctx))
    if (t.key == key) value = t.value;
  // Neighbouring contexts mostly share the value (the epoch of many steps),
  // and a new value is mostly the newest group's: the previous context's
  // group is tried first, then the groups newest first (names are distinct).
  int32_t g = -1;
  if (ctx > 0 && cache[ctx - 1] >= 0 && names[static_cast<size_t>(cache[ctx - 1])] == value) g = cache[ctx - 1];
  for (size_t i = names.size(); g < 0 && i-- > 0;)
    if (names[i] == value) g = static_cast<int32_t>(i);
  if (g < 0) {
    names.emplace_back(value);
    g = static_cast<int32_t>(names.size() - 1);
  }
  cache[ctx] = g;
  return g;
}

// One scan of the context's tags for both of count_tags's facts. A context
// without the epoch tag gets no group (the untagged are not counted per epoch).
const UnitAgg::CtxGroups& UnitAgg::ctx_groups_slow(uint32_t ctx) {
  if (ctx >= ctx_groups_.size()) ctx_groups_.resize(ctx_slots(ctx));
  std::string_view epoch = "(none)", loader = "(none)";
  for (const CtxTag& t : tags(ctx)) {
    if (t.key == cfg_.epoch_key) epoch = t.value;
    if (t.key == std::string_view("loader")) loader = t.value;
  }
  CtxGroups& c = ctx_groups_[ctx];
  c.training = loader == std::string_view("(none)") || loader == std::string_view("0");
  if (epoch == std::string_view("(none)")) {
    c.epoch = -1;
    return c;
  }
  // Neighbouring contexts mostly share the epoch (it spans many steps), and a
  // new one is mostly the newest group: the previous context's group is tried
  // first, then the groups newest first (names are distinct).
  int32_t g = -1;
  if (ctx > 0 && ctx_groups_[ctx - 1].epoch >= 0 &&
      epoch_names_[static_cast<size_t>(ctx_groups_[ctx - 1].epoch)] == epoch)
    g = ctx_groups_[ctx - 1].epoch;
  for (size_t i = epoch_names_.size(); g < 0 && i-- > 0;)
    if (epoch_names_[i] == epoch) g = static_cast<int32_t>(i);
  if (g < 0) {
    epoch_names_.emplace_back(epoch);
    g = static_cast<int32_t>(epoch_names_.size() - 1);
  }
  c.epoch = g;
  return c;
}

static void add_distinct(std::vector<std::string>& v, const std::string& s) {
  if (v.size() >= 64) return;
  for (auto& x : v)
    if (x == s) return;
  v.push_back(s);
}

// What every step of event() needs to know about one event.
struct UnitAgg::Facts {
  const FuncInfo& f;
  int64_t end;          // ts + dur
  bool io;              // a POSIX or STDIO call
  bool failed;
  int64_t bytes;        // moved by a data call, -1 unknown
  int32_t epoch = -1;   // index into epoch_names_, -1 untagged
};

void UnitAgg::event(const IoEvent& e) { count_event(e); }

// The batch's loop inlines the event's work: no call per event.
void UnitAgg::events(std::span<const IoEvent> batch) {
  for (const IoEvent& e : batch) count_event(e);
}

STRATA_HOT_INLINE void UnitAgg::count_event(const IoEvent& e) {
  ++events_;
  const FuncInfo& f = tables_->funcs[e.func];
  Facts x = facts(e, f);
  Proc& p = proc(e.pid);
  count_process(p, e, x);
  count_function(e, x);
  count_tags(e, x);
  if (!x.io) return;
  const int64_t off = count_darshan(p, e, x);
  if (e.path != 0) count_file(p, e, x, off);
}

STRATA_HOT_INLINE UnitAgg::Facts UnitAgg::facts(const IoEvent& e, const FuncInfo& f) const {
  const bool io = f.layer == Layer::kPosix || f.layer == Layer::kStdio;
  bool failed = e.err != 0 || (io && e.has_ret && e.ret < 0 && f.op != counters::Op::kNone);
  if (f.layer == Layer::kStdio && (f.op == counters::Op::kOpen || f.op == counters::Op::kFdopen))
    failed = e.err != 0 || (e.has_ret && e.ret == 0 && e.fd < 0);
  // Bytes transferred by a data op: ret (normalised to bytes by the source).
  int64_t bytes = -1;
  if (f.data && sizes_known_) {
    if (e.has_ret)
      bytes = e.ret >= 0 ? e.ret : -1;
    else if (e.size >= 0)
      bytes = e.size;
  }
  return Facts{f, e.ts + e.dur, io, failed, bytes};
}

STRATA_HOT_INLINE void UnitAgg::count_function(const IoEvent& e, const Facts& x) {
  if (e.func >= funcs_.size()) funcs_.resize(e.func + 1);
  FuncStats& fs = funcs_[e.func];
  ++fs.count;
  fs.total_ns += e.dur;
  if (x.failed) ++fs.errors;
  // A request above the most one call can move (Linux's MAX_RW_COUNT, 2 GiB
  // less a page) asks for all there is: cp asks copy_file_range for SSIZE_MAX.
  // Its size is what it moved.
  constexpr int64_t kMaxOneCall = 0x7ffff000;
  if (sizes_known_) {
    if (e.size >= 0 && x.f.data && e.size <= kMaxOneCall)
      fs.sizes.add(e.size);
    else if (x.bytes >= 0)
      fs.sizes.add(x.bytes);
  }
  if (x.bytes > 0) fs.bytes += x.bytes;
}

// Threads, time range, the unions behind the overlap figures, bins over time.
STRATA_HOT_INLINE void UnitAgg::count_process(Proc& p, const IoEvent& e, const Facts& x) {
  const FuncInfo& f = x.f;
  const int64_t end = x.end, bytes = x.bytes;
  const bool io = x.io;
  ++p.events;
  if (e.tid != p.last_tid) p.saw_thread(e.tid);
  p.first_ts = std::min(p.first_ts, e.ts);
  p.last_ts = std::max(p.last_ts, end);
  if (io) {
    p.io.insert(e.ts, end);
    if (!p.both_is_io) p.both.insert(e.ts, end);
    (f.layer == Layer::kPosix ? p.posix_ns : p.stdio_ns) += e.dur;
    Bin& b = p.bins.at(e.ts);
    ++b.ops;
    b.io_ns += e.dur;
    if (f.data || f.is_sync) {
      p.data_ns += e.dur;
      if (f.data && bytes > 0) {
        if (f.is_read) {
          p.bytes_read += bytes;
          b.read_bytes += bytes;
        } else {
          p.bytes_written += bytes;
          b.write_bytes += bytes;
        }
      }
    } else {
      p.meta_ns += e.dur;
    }
  } else if (f.layer == Layer::kApp) {
    p.app.insert(e.ts, end);
    if (f.is_compute) {
      p.compute.insert(e.ts, end);
      if (p.both_is_io) {
        p.both = p.io;
        p.both_is_io = false;
      }
      p.both.insert(e.ts, end);
    }
  } else if (f.is_fork && e.has_ret && e.ret > 0) {
    if (p.children.size() < 4096) p.children.push_back(e.ret);
  } else if (f.ends_process != FuncInfo::End::kNone && e.has_ret) {
    // What the parent sees: exit(-1) is status 255, _exit(256) status 0.
    if (f.ends_process == FuncInfo::End::kExit) p.exit_status = e.ret & 0xff;
    else p.exit_signal = static_cast<int32_t>(e.ret);
  }

}

// One event into a --by or epoch group's figures.
STRATA_HOT_INLINE void UnitAgg::tag_update(TagAgg& t, const IoEvent& e, const Facts& x, bool training_loader) {
  const FuncInfo& f = x.f;
  const int64_t end = x.end, bytes = x.bytes;
  const bool io = x.io;
  ++t.events;
  t.first_ts = std::min(t.first_ts, e.ts);
  t.last_ts = std::max(t.last_ts, end);
  if (io) {
    t.io_ns += e.dur;
    if (f.is_read) {
      ++t.reads;
      t.read_ns += e.dur;
      if (bytes > 0) t.bytes_read += bytes;
    } else if (f.is_write) {
      ++t.writes;
      t.write_ns += e.dur;
      if (bytes > 0) t.bytes_written += bytes;
    } else if (f.is_sync) {
      t.write_ns += e.dur;
    } else {
      ++t.meta_ops;
      t.meta_ns += e.dur;
    }
  } else {
    if (f.is_compute) t.compute_ns += e.dur;
    if (f.is_loader_wait) {
      ++t.loader_waits;
      t.loader_wait_ns += e.dur;
      auto at = std::lower_bound(t.waiters.begin(), t.waiters.end(), e.pid);
      if (at == t.waiters.end() || *at != e.pid) t.waiters.insert(at, e.pid);
    }
    if (f.is_loader_start) {
      ++t.loader_starts;
      t.loader_start_ns += e.dur;
    }
    if (f.is_loader_stop) t.loader_stop_ns += e.dur;
    if (training_loader && (f.is_loader_wait || f.is_loader_start || f.is_loader_pass))
      t.loop_first = std::min(t.loop_first, e.ts);
    if (training_loader && f.is_loader_pass) t.loop_last = std::max(t.loop_last, end);
  }
}

// The --by breakdown and the per-epoch figures.
STRATA_HOT_INLINE void UnitAgg::count_tags(const IoEvent& e, Facts& x) {
  const FuncInfo& f = x.f;
  // The training loader is the first one iterated (`loader` 0, python/strata/_auto.py).
  static constexpr CtxGroups kNoContext{-1, true};
  const CtxGroups& groups = e.ctx != 0 ? ctx_groups(e.ctx) : kNoContext;
  const bool training_loader = groups.training;
  if (!cfg_.by_key.empty()) {
    int32_t g = tag_group(e.ctx, cfg_.by_key, by_cache_, by_names_);
    if (static_cast<size_t>(g) >= by_aggs_.size()) by_aggs_.resize(g + 1);
    tag_update(by_aggs_[g], e, x, training_loader);
  }
  const int32_t eg = x.epoch = groups.epoch;
  if (eg >= 0) {
    // Events come in completion order: once the training loader's pass of
    // this epoch ended in this process, its later events are outside the loop.
    std::vector<int32_t>& ended = proc(e.pid).loops_ended;
    const bool after_loop = std::find(ended.begin(), ended.end(), eg) != ended.end();
    const bool outside = !training_loader || after_loop;
    std::vector<TagAgg>& aggs = outside ? outside_aggs_ : epoch_aggs_;
    if (static_cast<size_t>(eg) >= aggs.size()) aggs.resize(eg + 1);
    tag_update(aggs[eg], e, x, training_loader);
    if (training_loader && f.is_loader_pass && !after_loop) ended.push_back(eg);
  }
}

// The Darshan counter engine; returns the access offset of a data call (from
// the event, or the position the engine tracks for calls that carry none).
STRATA_HOT_INLINE int64_t UnitAgg::count_darshan(Proc& p, const IoEvent& e, const Facts& x) {
  const FuncInfo& f = x.f;
  const int64_t end = x.end, bytes = x.bytes;
  const bool failed = x.failed;
  // Darshan counters.
  int64_t off = -1;
  if (f.op != counters::Op::kNone) {
    counters::CounterEvent ce;
    ce.module = f.layer == Layer::kPosix ? counters::Module::kPosix : counters::Module::kStdio;
    ce.op = f.op;
    ce.ok = e.err == 0 && (!e.has_ret || e.ret >= 0);
    if (ce.module == counters::Module::kStdio && (f.data)) ce.ok = e.err == 0 && (!e.has_ret || e.ret > 0);
    if (ce.module == counters::Module::kStdio && (f.op == counters::Op::kOpen || f.op == counters::Op::kFdopen))
      ce.ok = !failed;
    ce.positional = f.positional;
    ce.fd = e.fd;
    if (f.op == counters::Op::kDup) {
      ce.old_fd = e.fd;
      ce.fd = e.has_ret ? static_cast<int32_t>(e.ret) : -1;
    } else if (f.op == counters::Op::kOpen && ce.module == counters::Module::kPosix && e.has_ret) {
      ce.fd = static_cast<int32_t>(e.ret);
    }
    if (f.op == counters::Op::kOpen && ce.module == counters::Module::kPosix && e.size > 0) ce.value = e.size;  // mode
    if (f.op == counters::Op::kRenameDst && e.offset > 0 && tables_->str)  // offset: the source's string id
      ce.value = static_cast<int64_t>(counters::record_id(std::string(tables_->str(static_cast<uint32_t>(e.offset)))));
    ce.file = e.path ? e.path : counters::kNoFile;
    ce.offset = f.op == counters::Op::kRenameDst ? -1 : e.offset;
    if (f.op == counters::Op::kSeek && ce.module == counters::Module::kPosix && e.has_ret) ce.offset = e.ret;
    ce.bytes = bytes > 0 ? bytes : 0;
    ce.mem_align = e.mem_align;
    ce.t1 = static_cast<double>(e.ts) * 1e-9;
    ce.t2 = static_cast<double>(end) * 1e-9;
    p.engine.on_event(ce);
    if (f.data && ce.ok && e.path) {
      if (e.offset >= 0) {
        off = e.offset;
      } else if (ce.module == counters::Module::kPosix) {
        if (auto* r = p.engine.find_posix(e.path)) off = r->offset - ce.bytes;
      } else if (auto* r = p.engine.find_stdio(e.path)) {
        off = r->offset - ce.bytes;
      }
    }
  }

  return off;
}

STRATA_HOT_INLINE void UnitAgg::count_file(Proc& p, const IoEvent& e, const Facts& x, int64_t off) {
  const FuncInfo& f = x.f;
  const int64_t end = x.end, bytes = x.bytes;
  const int32_t eg = x.epoch;
  ProcFile& pf = p.file(e.path);
  pf.first_ts = std::min(pf.first_ts, e.ts);
  pf.last_ts = std::max(pf.last_ts, end);
  using counters::Op;
  switch (f.op) {
    case Op::kOpen:
    case Op::kFdopen:
      // Calls that failed are counted per function (errors), not as the
      // file's opens or stats, as Darshan's records count them; their time
      // was spent all the same.
      pf.opens += !x.failed;
      pf.fdopens += !x.failed && f.op == Op::kFdopen;
      pf.meta_ns += e.dur;
      break;
    case Op::kRead:
    case Op::kWrite: {
      FileAccess& acc = pf.access.get();
      if (f.is_read) {
        ++pf.reads;
        pf.read_ns += e.dur;
        if (bytes > 0) {
          pf.bytes_read += bytes;
          acc.max_read = std::max(acc.max_read, bytes);
          acc.min_read = std::min(acc.min_read, bytes);
        } else {
          pf.eof_reads += bytes == 0;
        }
      } else {
        ++pf.writes;
        pf.write_ns += e.dur;
        if (bytes > 0) pf.bytes_written += bytes;
      }
      if (off >= 0 && bytes >= 0) {
        acc.offsets_known = true;
        pf.extent = std::max(pf.extent, off + bytes);
        if (f.is_read) acc.coverage.insert(off, off + bytes);
        ++acc.seen;
        if (acc.seen == acc.sample_pick) acc.samples.push_back(Point{e.ts, off, bytes, e.pid, f.is_write});
        if (acc.seen == acc.window_end) next_sample_window(p, acc);
      }
      int32_t& last_group = f.is_read ? acc.last_read_group : acc.last_write_group;
      if (eg >= 0 && eg != last_group) {
        add_distinct(f.is_read ? acc.read_epochs : acc.write_epochs, epoch_names_[eg]);
        last_group = eg;
      }
      break;
    }
    case Op::kStat:
      pf.stats += !x.failed;
      pf.meta_ns += e.dur;
      break;
    case Op::kSeek:
      ++pf.seeks;
      pf.meta_ns += e.dur;
      break;
    case Op::kFsync:
    case Op::kFdatasync:
      pf.write_ns += e.dur;  // write time, as Darshan counts it; not a write
      break;
    case Op::kMmap:
      ++pf.mmaps;
      pf.meta_ns += e.dur;
      if (e.size > 0) pf.extent = std::max(pf.extent, (e.offset > 0 ? e.offset : 0) + e.size);
      break;
    default:
      ++pf.other_meta;
      pf.meta_ns += e.dur;
      break;
  }
}

void UnitAgg::end() {
  // Resolve ids while the source's tables are alive, into the pool the
  // Job's files will view: each file's path into the file (no table by path
  // id: a unit can hold millions of paths); a Darshan record's path is its
  // file's, or, for a record without one (profile mode), in record_names_.
  func_infos_ = tables_->funcs;
  // The source's strings outlive the unit when it can share them (a strata
  // file's dictionary): its views then stand for the paths, no copy.
  const bool shared = tables_->str_storage != nullptr;
  if (shared) paths_.keep(tables_->str_storage);
  auto keep_path = [&](uint32_t id) { return shared ? tables_->str(id) : paths_.add(tables_->str(id)); };
  for (auto& entry : procs_) {
    auto& p = entry.second;  // a name a lambda can capture (clang 14: not a structured binding)
    p->engine.finalize();
    for (size_t i = 0; i < p->files.size(); ++i) p->files[i].path = keep_path(p->file_paths[i]);
    auto name = [&](uint32_t id) {
      if (id < p->file_idx.size() && p->file_idx[id]) return;
      if (!record_names_.count(id)) record_names_.emplace(id, keep_path(id));
    };
    for (auto& r : p->engine.posix()) name(r.file);
    for (auto& r : p->engine.stdio()) name(r.file);
  }
  tables_ = nullptr;
  ended_ = true;
}

void UnitAgg::profile(int64_t pid, const std::vector<counters::PosixRecord>& posix,
                      const std::vector<counters::StdioRecord>& stdio) {
  Proc& p = proc(pid);
  for (const auto& r : posix) p.engine.adopt(r);
  for (const auto& r : stdio) p.engine.adopt(r);
}

void UnitAgg::merge_into(Job& job) {
  if (!ended_) end();
  job.units.push_back(unit_);
  job.events += events_;
  job.warnings.insert(job.warnings.end(), warnings_.begin(), warnings_.end());
  job.approximate.insert(approximate_.begin(), approximate_.end());
  approximate_.clear();
  warnings_.clear();
  if (!sizes_known_) job.sizes_known = false;

  // functions
  for (size_t i = 0; i < funcs_.size(); ++i) {
    FuncStats& fs = funcs_[i];
    if (fs.count == 0) continue;
    const FuncInfo& fi = func_infos_[i];
    std::string key = std::string(layer_name(fi.layer)) + "/" + fi.category + "/" + fi.name;
    FuncStats& d = job.funcs[key];
    if (d.count == 0) {
      d.name = fi.name;
      d.category = fi.category;
      d.layer = fi.layer;
    }
    d.count += fs.count;
    d.errors += fs.errors;
    d.total_ns += fs.total_ns;
    d.bytes += fs.bytes;
    d.sizes.merge(fs.sizes);
  }
  for (size_t g = 0; g < by_aggs_.size(); ++g) job.by_tag[by_names_[g]].merge(by_aggs_[g]);
  for (size_t g = 0; g < epoch_aggs_.size(); ++g)
    if (epoch_aggs_[g].events) job.by_epoch[epoch_names_[g]].merge(epoch_aggs_[g]);
  for (size_t g = 0; g < outside_aggs_.size(); ++g)
    if (outside_aggs_[g].events) job.by_epoch_outside[epoch_names_[g]].merge(outside_aggs_[g]);

  // processes, in pid order for determinism
  std::vector<int64_t> pids;
  for (auto& [pid, p] : procs_) pids.push_back(pid);
  std::sort(pids.begin(), pids.end());
  for (int64_t pid : pids) {
    Proc& p = *procs_[pid];
    auto path_of = [&](uint32_t id) {
      if (id < p.file_idx.size() && p.file_idx[id]) return std::string(p.files[p.file_idx[id] - 1].path);
      auto it = record_names_.find(id);
      return std::string(it != record_names_.end() ? it->second : std::string_view());
    };
    ProcResult r;
    r.meta = p.meta;
    r.meta_known = p.meta_known;
    if (r.meta.source_file.empty()) r.meta.source_file = unit_;
    r.threads = p.tids.size();
    r.events = p.events;
    r.first_ts = p.first_ts;
    r.last_ts = p.last_ts;
    r.io_union = p.io.measure();
    r.compute_union = p.compute.measure();
    r.both_union = p.both_set().measure();
    r.app_union = p.app.measure();
    r.clipped = p.io.clipped() + p.compute.clipped() + p.both_set().clipped();
    r.posix_ns = p.posix_ns;
    r.stdio_ns = p.stdio_ns;
    r.meta_ns = p.meta_ns;
    r.data_ns = p.data_ns;
    r.bytes_read = p.bytes_read;
    r.bytes_written = p.bytes_written;
    r.children = p.children;
    r.exit_status = p.exit_status;
    r.exit_signal = p.exit_signal;
    r.bins = p.bins;
    // A PosixRecord is ~0.7 KB: growing the vector record by record copied and
    // page-faulted most of a job's analysis time on traces with many files.
    r.posix.reserve(r.posix.size() + p.engine.posix().size());
    r.stdio.reserve(r.stdio.size() + p.engine.stdio().size());
    for (const auto& rec : p.engine.posix()) {
      counters::PosixRecord pr = rec;
      if (!sizes_known_) {
        using namespace counters;
        for (int j : {POSIX_BYTES_READ, POSIX_BYTES_WRITTEN, POSIX_MAX_BYTE_READ, POSIX_MAX_BYTE_WRITTEN,
                      POSIX_CONSEC_READS, POSIX_CONSEC_WRITES, POSIX_SEQ_READS, POSIX_SEQ_WRITES,
                      POSIX_FILE_NOT_ALIGNED, POSIX_MAX_READ_TIME_SIZE, POSIX_MAX_WRITE_TIME_SIZE})
          pr.counters[j] = -1;
        for (int j = POSIX_SIZE_READ_0_100; j <= POSIX_ACCESS4_COUNT; ++j) pr.counters[j] = -1;
      }
      r.posix.emplace_back(path_of(rec.file), pr);
    }
    for (const auto& rec : p.engine.stdio()) {
      counters::StdioRecord sr = rec;
      if (!sizes_known_) {
        using namespace counters;
        for (int j : {STDIO_BYTES_READ, STDIO_BYTES_WRITTEN, STDIO_MAX_BYTE_READ, STDIO_MAX_BYTE_WRITTEN})
          sr.counters[j] = -1;
      }
      r.stdio.emplace_back(path_of(rec.file), sr);
    }
    job.first_ts = std::min(job.first_ts, p.first_ts);
    job.last_ts = std::max(job.last_ts, p.last_ts);

    job.procs.push_back(std::move(r));
  }
  merge_files(job, pids);
  procs_.clear();
  last_ = nullptr;
  last_pid_ = INT64_MIN;
  record_names_.clear();
}

// The unit's files join the job's. Each process's files are already FileAggs
// whose counts are its records: they move into the unit's table, which sorts
// them in place (a file of one process stores one record, never copied).
void UnitAgg::merge_files(Job& job, const std::vector<int64_t>& pids) {
  std::deque<FileAgg> files;
  for (int64_t pid : pids) {
    Proc& p = *procs_[pid];
    for (size_t i = 0; i < p.files.size(); ++i) {
      FileAgg& fa = p.files[i];
      const uint32_t id = p.file_paths[i];
      fa.set_only_process(pid);
      if (auto* rec = p.engine.find_posix(id)) {
        fa.add_read_order(rec->counters[counters::POSIX_SEQ_READS], rec->counters[counters::POSIX_CONSEC_READS],
                          rec->counters[counters::POSIX_READS]);
      }
    }
    if (files.empty()) {
      files = std::move(p.files);
    } else {
      for (FileAgg& fa : p.files) files.push_back(std::move(fa));
    }
    p.files = {};
    p.file_paths = {};
  }
  FileTable unit(std::move(paths_), std::move(files));
  job.files.merge(unit);
  paths_ = PathPool();
}

}  // namespace strata::analysis
