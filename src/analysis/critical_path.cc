// The critical_path pass (critical_path.h): an event pass that keeps, per
// process, the training loop's waits, checkpoints and passes and the loader
// workers' batch and read intervals; then a sweep per epoch over the loop's
// segments (wait, checkpoint, compute) against each worker's intervals.
#include "analysis/critical_path.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "analysis/serial.h"
#include "format/json_escape.h"

namespace strata::analysis {

void PathFigures::add(const PathFigures& o) {
  loop_ns += o.loop_ns;
  wait_ns += o.wait_ns;
  next_ns += o.next_ns;
  startup_ns += o.startup_ns;
  shutdown_ns += o.shutdown_ns;
  checkpoint_ns += o.checkpoint_ns;
  compute_ns += o.compute_ns;
  wait_read_ns += o.wait_read_ns;
  wait_cpu_ns += o.wait_cpu_ns;
  wait_idle_ns += o.wait_idle_ns;
  worker_read_ns += o.worker_read_ns;
  hidden_read_ns += o.hidden_read_ns;
}

void overlap_into(const std::vector<Span>& segs, const std::vector<Span>& list, std::vector<int64_t>& out) {
  size_t i = 0, j = 0;
  while (i < segs.size() && j < list.size()) {
    const int64_t lo = std::max(segs[i].ts, list[j].ts), hi = std::min(segs[i].end, list[j].end);
    if (hi > lo) out[i] += hi - lo;
    if (segs[i].end <= list[j].end)
      ++i;
    else
      ++j;
  }
}

void union_spans(std::vector<Span>& v) {
  std::sort(v.begin(), v.end(), [](const Span& a, const Span& b) { return a.ts < b.ts; });
  size_t k = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i].end <= v[i].ts) continue;
    if (k > 0 && v[i].ts <= v[k - 1].end)
      v[k - 1].end = std::max(v[k - 1].end, v[i].end);
    else
      v[k++] = v[i];
  }
  v.resize(k);
}

template <class Ar> void fields(Ar& ar, Span& x) { ar(x.ts, x.end); }

namespace {

enum class Kind : uint8_t { kNext, kIter, kPass, kCheckpoint, kCompute, kStop };
// An app function's part in the loop: a Kind of loop event, or not one.
enum class AppRole : uint8_t {
  kNext = static_cast<uint8_t>(Kind::kNext),
  kIter = static_cast<uint8_t>(Kind::kIter),
  kPass = static_cast<uint8_t>(Kind::kPass),
  kCheckpoint = static_cast<uint8_t>(Kind::kCheckpoint),
  kStop = static_cast<uint8_t>(Kind::kStop),
  kBatch = 16,  // "dataloader.batch": a worker's batch span
  kOther = 17,
};

// One app event of the loop: a wait, an iterator start, a pass, a checkpoint.
struct LoopEvent {
  int64_t ts = 0, end = 0;
  int64_t step = -1;
  std::string epoch;
  Kind kind = Kind::kNext;
  bool training = true;  // `loader` tag 0 or none: the training loader
};

template <class Ar> void fields(Ar& ar, LoopEvent& x) { ar(x.ts, x.end, x.step, x.epoch, x.kind, x.training); }

// Spans kept per process and list; past it, reads are coarsened (neighbours
// bridged, flagged approximate) and loop events dropped (counted).
constexpr size_t kMaxSpans = 1u << 18;
constexpr size_t kMaxLoopEvents = 1u << 20;

struct CpProc {
  int64_t worker = -1, loader = -1;
  int64_t first_ts = INT64_MAX, last_ts = INT64_MIN;
  int64_t next_ns = 0;
  uint64_t nexts = 0;
  std::vector<LoopEvent> loop;
  std::vector<Span> batches, reads;
  // First start and last end of the events tagged with each epoch value: an
  // epoch's end when its loop has no pass event (left with break).
  std::map<std::string, Span> tagged;
  uint64_t dropped = 0;
  bool coarse = false;
};

template <class Ar> void fields(Ar& ar, CpProc& x) {
  ar(x.worker, x.loader, x.first_ts, x.last_ts, x.next_ns, x.nexts, x.loop, x.batches, x.reads, x.tagged, x.dropped,
     x.coarse);
}

struct CtxInfo {
  bool known = false;
  bool in_step = false;
  int64_t step = -1, worker = -1, loader = -1;
  std::string_view epoch;  // in the unit's tables (used between begin and end only)
};

class CriticalPathState final : public PassState {
 public:
  void begin(const std::string&, const Tables* t, bool) override {
    tables_ = t;
    ctx_.assign(t ? t->ctxs.size() : 0, CtxInfo{});
    app_roles_.clear();
    skip_func_ = skip_ctx_ = UINT32_MAX;
  }
  void process(const ProcessMeta&) override {}
  // final: the loop calls event() directly, one virtual call per batch; the
  // events it would skip (most I/O outside workers and steps) without a call.
  void events(std::span<const IoEvent> batch) override {
    for (const IoEvent& e : batch)
      if (e.func != skip_func_ || e.ctx != skip_ctx_) event(e);
  }
  void event(const IoEvent& e) override {
    if (e.func == skip_func_ && e.ctx == skip_ctx_) return;  // as the last skipped event
    if (!tables_ || e.func >= tables_->funcs.size()) return;
    const FuncInfo& f = tables_->funcs[e.func];
    const CtxInfo& c = info(e.ctx);
    const bool io = f.layer == Layer::kPosix || f.layer == Layer::kStdio;
    const bool app = f.layer == Layer::kApp;
    const int64_t end = e.ts + e.dur;
    if (!c.epoch.empty()) {
      Span& t = tagged(e.pid, e.ctx, c.epoch);
      t.ts = std::min(t.ts, e.ts);
      t.end = std::max(t.end, end);
    }
    if (!app && !(io && (c.worker >= 0 || c.in_step))) {
      if (c.epoch.empty()) {  // nothing done: a fact of (function, context) only
        skip_func_ = e.func;
        skip_ctx_ = e.ctx;
      }
      return;
    }
    CpProc& p = proc(e.pid);
    p.first_ts = std::min(p.first_ts, e.ts);
    p.last_ts = std::max(p.last_ts, end);
    if (c.worker >= 0 && p.worker < 0) {
      p.worker = c.worker;
      p.loader = c.loader;
    }
    if (io) {
      if (f.is_read) add_span(p.reads, e.ts, end, p.coarse);
      return;
    }
    const AppRole role = app_role(e.func, f);
    if (role == AppRole::kBatch) {
      add_span(p.batches, e.ts, end, p.coarse);
      return;
    }
    if (role == AppRole::kOther) return;
    const Kind k = static_cast<Kind>(role);
    if (k == Kind::kNext) {
      p.next_ns += e.dur;
      ++p.nexts;
    }
    if (p.loop.size() >= kMaxLoopEvents) {
      ++p.dropped;
      return;
    }
    p.loop.push_back({e.ts, end, c.step, std::string(c.epoch), k, c.loader <= 0});
  }
  void end() override {
    tables_ = nullptr;
    last_ = nullptr;
    last_pid_ = INT64_MIN;
    last_tagged_ = nullptr;
  }
  void merge(PassState& later) override {
    for (auto& [pid, q] : static_cast<CriticalPathState&>(later).procs_) {
      auto [it, fresh] = procs_.emplace(pid, std::move(q));
      if (fresh) continue;
      CpProc& p = it->second;  // a process image after exec: same pid, later unit
      if (p.worker < 0) {
        p.worker = q.worker;
        p.loader = q.loader;
      }
      p.first_ts = std::min(p.first_ts, q.first_ts);
      p.last_ts = std::max(p.last_ts, q.last_ts);
      p.next_ns += q.next_ns;
      p.nexts += q.nexts;
      p.loop.insert(p.loop.end(), q.loop.begin(), q.loop.end());
      p.batches.insert(p.batches.end(), q.batches.begin(), q.batches.end());
      p.reads.insert(p.reads.end(), q.reads.begin(), q.reads.end());
      for (auto& [epoch, span] : q.tagged) {
        auto [t, added] = p.tagged.emplace(epoch, span);
        if (!added) t->second = {std::min(t->second.ts, span.ts), std::max(t->second.end, span.end)};
      }
      p.dropped += q.dropped;
      p.coarse = p.coarse || q.coarse;
    }
  }
  std::string save() const override {
    return serial::save(procs_);
  }
  void load(std::string_view bytes) override {
    serial::load(bytes, procs_);
  }
  std::map<int64_t, CpProc>& procs() { return procs_; }

 private:
  const CtxInfo& info(uint32_t ctx) {
    if (ctx >= ctx_.size()) ctx_.resize(ctx_slots(tables_, ctx));
    CtxInfo& c = ctx_[ctx];
    if (c.known) return c;
    c.known = true;
    if (!tables_ || ctx >= tables_->ctxs.size()) return c;
    for (const CtxTag& t : tables_->ctxs[ctx]) {
      if (t.key == std::string_view("step")) {
        c.in_step = true;
        if (t.is_int) c.step = t.int_value;
      }
      if (t.key == std::string_view("worker") && t.is_int) c.worker = t.int_value;
      if (t.key == std::string_view("loader") && t.is_int) c.loader = t.int_value;
      if (t.key == std::string_view("epoch")) c.epoch = t.value;
    }
    return c;
  }

  // What an app function is to the loop, per function id (names compared once).
  AppRole app_role(uint32_t func, const FuncInfo& f) {
    if (func >= app_roles_.size()) app_roles_.resize(tables_->funcs.size(), kUnknownRole);
    uint8_t& r = app_roles_[func];
    if (r == kUnknownRole) {
      AppRole role = AppRole::kOther;
      if (f.name == "dataloader.batch")
        role = AppRole::kBatch;
      else if (f.is_loader_wait)
        role = AppRole::kNext;
      else if (f.is_loader_start)
        role = AppRole::kIter;
      else if (f.is_loader_stop)
        role = AppRole::kStop;
      else if (f.is_loader_pass)
        role = AppRole::kPass;
      else if (f.category == "checkpoint")
        role = AppRole::kCheckpoint;
      r = static_cast<uint8_t>(role);
    }
    return static_cast<AppRole>(r);
  }

  CpProc& proc(int64_t pid) {
    if (pid != last_pid_) {
      last_ = &procs_[pid];
      last_pid_ = pid;
      last_tagged_ = nullptr;
    }
    return *last_;
  }
  Span& tagged(int64_t pid, uint32_t ctx, std::string_view epoch) {
    CpProc& p = proc(pid);
    // Threads interleave contexts (step tags) of one epoch: a new context
    // with the same epoch value keeps the span without a map lookup.
    if (!last_tagged_ || pid != last_tagged_pid_ || (ctx != last_ctx_ && epoch != last_epoch_)) {
      last_tagged_ = &p.tagged.try_emplace(std::string(epoch), Span{INT64_MAX, INT64_MIN}).first->second;
      last_tagged_pid_ = pid;
      last_epoch_ = epoch;
    }
    last_ctx_ = ctx;
    return *last_tagged_;
  }

  const Tables* tables_ = nullptr;
  std::vector<CtxInfo> ctx_;
  static constexpr uint8_t kUnknownRole = 0xff;
  std::vector<uint8_t> app_roles_;  // per function id: an AppRole, kUnknownRole not yet known
  std::map<int64_t, CpProc> procs_;
  CpProc* last_ = nullptr;  // the last event's process (map nodes never move)
  int64_t last_pid_ = INT64_MIN;
  uint32_t skip_func_ = UINT32_MAX, skip_ctx_ = UINT32_MAX;  // the last event this pass ignored
  Span* last_tagged_ = nullptr;  // its span of the last context's epoch
  int64_t last_tagged_pid_ = 0;  // whose span (a unit may hold several processes)
  uint32_t last_ctx_ = 0;
  std::string last_epoch_;  // the epoch value of last_tagged_
};

// ---- the sweep --------------------------------------------------------------------

struct Segment {
  Span span;
  Kind kind = Kind::kCompute;
  int64_t step = -1;
};

// The loop's segments inside `span`: its waits and checkpoints, compute between.
std::vector<Segment> segments(const std::vector<LoopEvent>& loop, Span span) {
  std::vector<Segment> out;
  int64_t cursor = span.ts;
  for (const LoopEvent& e : loop) {  // sorted by start
    if (e.kind == Kind::kPass) continue;
    const int64_t ts = std::max(e.ts, cursor), end = std::min(e.end, span.end);
    if (end <= ts) continue;
    if (ts > cursor) out.push_back({{cursor, ts}, Kind::kCompute, -1});
    out.push_back({{ts, end}, e.kind, e.step});
    cursor = end;
  }
  if (cursor < span.end) out.push_back({{cursor, span.end}, Kind::kCompute, -1});
  return out;
}

// One loader worker's intervals, sorted and disjoint.
struct WorkerSpans {
  const CpProc* proc;
  std::vector<Span> reads, batches;
};

class CriticalPathPass : public Pass {
 public:
  const char* name() const override { return "critical_path"; }
  std::unique_ptr<PassState> new_state() const override { return std::make_unique<CriticalPathState>(); }
  void finish(Analysis& a, PassState* s) override { compute(a.job(), static_cast<CriticalPathState*>(s)->procs()); }
  void text(const Analysis& a, std::ostream& out) const override;
  void json(const Analysis& a, JsonSection& out) const override;
  const std::vector<LoopPath>& loops() const { return loops_; }

 private:
  void compute(const Job& job, std::map<int64_t, CpProc>& procs);
  void trace_loop(CpProc& loop, const std::vector<WorkerSpans>& own_workers, bool list_steps, LoopPath& path);
  void sweep(const std::vector<Segment>& segs, const std::vector<WorkerSpans>& workers, bool list_steps, LoopPath& path,
             EpochPath& ep);

  std::vector<LoopPath> loops_;  // by rank, then pid
  size_t main_ = 0;              // the loop that waited longest: the top-level JSON
  bool approximate_ = false;
  uint64_t dropped_ = 0;
};

// A loop has epochs to cut: a wait for the training loader tagged with an epoch.
bool is_training_loop(const CpProc& p) {
  return std::any_of(p.loop.begin(), p.loop.end(),
                     [](const LoopEvent& e) { return e.kind == Kind::kNext && e.training && !e.epoch.empty(); });
}

void CriticalPathPass::compute(const Job& job, std::map<int64_t, CpProc>& procs) {
  const ProcessTree meta = process_tree(job);
  std::map<int64_t, int64_t> loop_rank;
  for (const auto& [pid, p] : procs)
    if (is_training_loop(p)) loop_rank[pid] = meta.count(pid) ? meta.at(pid)->rank : -1;
  if (loop_rank.empty()) return;
  std::map<int64_t, std::vector<WorkerSpans>> workers;  // by loop pid
  for (auto& [pid, p] : procs) {
    approximate_ = approximate_ || p.coarse;
    dropped_ += p.dropped;
    if (loop_rank.count(pid) || p.worker < 0 || p.loader > 0) continue;
    const int64_t owner = owner_loop(pid, meta, loop_rank);
    if (owner < 0) continue;
    WorkerSpans w{&p, p.reads, p.batches};
    union_spans(w.reads);
    union_spans(w.batches);
    workers[owner].push_back(std::move(w));
  }
  int64_t main_pid = -1;
  for (const auto& [pid, r] : loop_rank)
    if (main_pid < 0 || procs.at(pid).next_ns > procs.at(main_pid).next_ns) main_pid = pid;
  for (const auto& [pid, rank] : loop_rank) {
    LoopPath path;
    path.pid = pid;
    path.rank = rank;
    path.next_ns = procs.at(pid).next_ns;
    trace_loop(procs.at(pid), workers[pid], pid == main_pid, path);
    loops_.push_back(std::move(path));
  }
  std::sort(loops_.begin(), loops_.end(), [](const LoopPath& a, const LoopPath& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.pid < b.pid;
  });
  for (size_t i = 0; i < loops_.size(); ++i)
    if (loops_[i].pid == main_pid) main_ = i;
}

void CriticalPathPass::trace_loop(CpProc& loop, const std::vector<WorkerSpans>& own_workers, bool list_steps,
                                  LoopPath& path) {
  std::sort(loop.loop.begin(), loop.loop.end(), [](const LoopEvent& a, const LoopEvent& b) { return a.ts < b.ts; });
  // The training loader's epochs: first iter/next to the end of its pass or last next.
  // Without a pass event (a loop left with break) the epoch runs to the
  // loop process's last event tagged with it.
  std::map<std::string, Span> spans;
  std::map<std::string, int64_t> pass_end;
  for (const LoopEvent& e : loop.loop) {
    if (!e.training || e.kind == Kind::kCheckpoint || e.epoch.empty()) continue;
    auto [it, fresh] = spans.emplace(e.epoch, Span{e.ts, e.end});
    if (!fresh) it->second.ts = std::min(it->second.ts, e.ts);
    if (e.kind == Kind::kPass) pass_end[e.epoch] = std::max(pass_end[e.epoch], e.end);
  }
  for (auto& [epoch, span] : spans) {
    auto p = pass_end.find(epoch);
    auto t = loop.tagged.find(epoch);
    span.end = p != pass_end.end() ? p->second : t != loop.tagged.end() ? t->second.end : span.end;
  }
  for (auto& [epoch, span] : spans) path.epochs.push_back({epoch, span, 0, 0, {}});
  std::sort(path.epochs.begin(), path.epochs.end(),
            [](const EpochPath& a, const EpochPath& b) { return a.span.ts < b.span.ts; });
  std::vector<WorkerSpans> workers = own_workers;
  path.self_loading = workers.empty();
  if (path.self_loading) {  // the loop loads its batches inside dataloader.next
    WorkerSpans w{&loop, loop.reads, {}};
    for (const LoopEvent& e : loop.loop)
      if (e.kind == Kind::kNext) w.batches.push_back({e.ts, e.end});
    union_spans(w.reads);
    union_spans(w.batches);
    workers.push_back(std::move(w));
  }
  for (EpochPath& ep : path.epochs) {
    std::vector<WorkerSpans> alive;
    for (const WorkerSpans& w : workers)
      if (w.proc->last_ts > ep.span.ts && w.proc->first_ts < ep.span.end) alive.push_back(w);
    ep.workers = alive.size();
    sweep(segments(loop.loop, ep.span), alive, list_steps, path, ep);
    path.total.add(ep.f);
  }
}

void CriticalPathPass::sweep(const std::vector<Segment>& segs, const std::vector<WorkerSpans>& workers, bool list_steps,
                             LoopPath& path, EpochPath& ep) {
  std::vector<Span> spans;
  for (const Segment& s : segs) spans.push_back(s.span);
  // Per segment: worker time reading / in a batch outside reads (summed over workers).
  std::vector<int64_t> read(segs.size(), 0), cpu(segs.size(), 0);
  for (const WorkerSpans& w : workers) {
    std::vector<int64_t> r(segs.size(), 0), b(segs.size(), 0);
    overlap_into(spans, w.reads, r);
    overlap_into(spans, w.batches, b);
    for (size_t i = 0; i < segs.size(); ++i) {
      const int64_t len = segs[i].span.len(), rd = std::min(r[i], len);
      read[i] += rd;
      cpu[i] += std::min(std::max<int64_t>(0, b[i] - rd), len - rd);
    }
  }
  PathFigures& f = ep.f;
  StepPath* step = nullptr;
  const int64_t nworkers = static_cast<int64_t>(workers.size());
  for (size_t i = 0; i < segs.size(); ++i) {
    const Segment& s = segs[i];
    const int64_t len = s.span.len();
    PathFigures d;
    d.loop_ns = len;
    d.worker_read_ns = read[i];
    switch (s.kind) {
      case Kind::kNext:
        d.wait_ns = d.next_ns = len;
        d.wait_read_ns = read[i];
        d.wait_cpu_ns = cpu[i];
        d.wait_idle_ns = std::max<int64_t>(0, len * nworkers - read[i] - cpu[i]);
        ++ep.steps;
        ++path.steps_total;
        if (list_steps && path.steps.size() < kMaxSteps) {
          path.steps.push_back({ep.epoch, s.step, s.span.ts, {}});
          step = &path.steps.back();
        } else {
          step = nullptr;
        }
        break;
      case Kind::kIter:
        d.wait_ns = d.startup_ns = len;
        break;
      case Kind::kStop:
        d.wait_ns = d.shutdown_ns = len;
        break;
      case Kind::kCheckpoint:
        d.checkpoint_ns = len;
        break;
      case Kind::kCompute:
      case Kind::kPass:
        d.compute_ns = len;
        d.hidden_read_ns = read[i];
        break;
    }
    f.add(d);
    if (step && s.kind != Kind::kIter) step->f.add(d);
  }
}

double share(int64_t part, int64_t whole) {
  return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

std::string pct(int64_t part, int64_t whole) {
  char b[16];
  std::snprintf(b, sizeof b, "%.0f%%", 100.0 * share(part, whole));
  return b;
}

std::string seconds(int64_t ns) {
  char b[32];
  const double v = static_cast<double>(ns);
  if (v >= 1e12)
    std::snprintf(b, sizeof b, "%.0f s", v / 1e9);
  else if (v >= 1e9)
    std::snprintf(b, sizeof b, "%.3g s", v / 1e9);
  else if (v >= 1e6)
    std::snprintf(b, sizeof b, "%.3g ms", v / 1e6);
  else
    std::snprintf(b, sizeof b, "%.3g \u00b5s", v / 1e3);
  return b;
}

// "waited 38% of 2.1 s (5% starting workers); ..." for one stretch.
std::string sentence(const PathFigures& f, size_t workers, bool self_loading) {
  std::string s = "waited " + pct(f.wait_ns, f.loop_ns) + " of " + seconds(f.loop_ns);
  if (f.startup_ns + f.shutdown_ns > 0)
    s += " (" + pct(f.startup_ns + f.shutdown_ns, f.loop_ns) + " starting and stopping workers)";
  if (f.checkpoint_ns > 0) s += ", checkpointed " + pct(f.checkpoint_ns, f.loop_ns);
  const int64_t worker_time = f.next_ns * static_cast<int64_t>(std::max<size_t>(1, workers));
  s += self_loading ? "; loading in the loop: reading " : "; workers while it waited: reading ";
  s += pct(f.wait_read_ns, worker_time) + ", CPU " + pct(f.wait_cpu_ns, worker_time);
  if (!self_loading) s += ", idle " + pct(f.wait_idle_ns, worker_time);
  if (f.worker_read_ns > 0) s += "; reads hidden under compute " + pct(f.hidden_read_ns, f.worker_read_ns);
  return s;
}

// One line of at most kTextColumns: the whole loop.
std::string summary_line(const PathFigures& f, size_t workers, bool self_loading) {
  const int64_t worker_time = f.next_ns * static_cast<int64_t>(std::max<size_t>(1, workers));
  std::string head = "critical path: waited " + pct(f.wait_ns, f.loop_ns) + " of " + seconds(f.loop_ns);
  std::string tail = (self_loading ? "; loading in the loop: read " : "; workers then read ") +
                     pct(f.wait_read_ns, worker_time) + ", CPU " + pct(f.wait_cpu_ns, worker_time);
  if (!self_loading) tail += ", idle " + pct(f.wait_idle_ns, worker_time);
  if (f.worker_read_ns > 0) tail += "; reads hidden " + pct(f.hidden_read_ns, f.worker_read_ns);
  const std::string startstop = " (start/stop " + pct(f.startup_ns + f.shutdown_ns, f.loop_ns) + ")";
  if (f.startup_ns + f.shutdown_ns > 0 && head.size() + startstop.size() + tail.size() <= kTextColumns)
    head += startstop;
  return head + tail;
}

std::string loop_label(const LoopPath& l) {
  return l.rank >= 0 ? "rank " + std::to_string(l.rank) : "pid " + std::to_string(l.pid);
}

// "per rank: rank 0 waited 78% of 1.2 s, rank 1 ..." cut to one line.
std::string ranks_line(const std::vector<LoopPath>& loops) {
  std::string line = "  per rank:";
  for (size_t i = 0; i < loops.size(); ++i) {
    const LoopPath& l = loops[i];
    const std::string item = std::string(i ? ", " : " ") + loop_label(l) + " waited " + pct(l.total.wait_ns, l.total.loop_ns) +
                             " of " + seconds(l.total.loop_ns);
    const std::string more = ", ... " + std::to_string(loops.size() - i) + " more (--all)";
    if (line.size() + item.size() + (i + 1 < loops.size() ? more.size() : 0) > kTextColumns) return line + more;
    line += item;
  }
  return line;
}

void CriticalPathPass::text(const Analysis& a, std::ostream& out) const {
  if (loops_.empty()) return;
  const LoopPath& m = loops_[main_];
  out << summary_line(m.total, m.workers(), m.self_loading) << "\n";
  if (loops_.size() > 1 && !a.opts().all) out << ranks_line(loops_) << "\n";
  if (!a.opts().all) return;
  for (const LoopPath& l : loops_) {
    if (loops_.size() > 1) out << "  " << loop_label(l) << " (pid " << l.pid << "): " << sentence(l.total, l.workers(), l.self_loading) << "\n";
    for (const EpochPath& e : l.epochs)
      out << (loops_.size() > 1 ? "    epoch " : "  epoch ") << e.epoch << ": " << sentence(e.f, e.workers, l.self_loading) << "\n";
  }
}

void json_figures(const PathFigures& f, size_t workers, std::ostream& o) {
  const int64_t worker_time = f.next_ns * static_cast<int64_t>(std::max<size_t>(1, workers));
  o << "\"loop_ns\": " << f.loop_ns << ", \"wait_ns\": " << f.wait_ns << ", \"next_ns\": " << f.next_ns
    << ", \"startup_ns\": " << f.startup_ns << ", \"shutdown_ns\": " << f.shutdown_ns
    << ", \"checkpoint_ns\": " << f.checkpoint_ns
    << ", \"compute_ns\": " << f.compute_ns << ", \"wait_share\": " << share(f.wait_ns, f.loop_ns)
    << ", \"during_wait\": {\"read_ns\": " << f.wait_read_ns << ", \"cpu_ns\": " << f.wait_cpu_ns
    << ", \"idle_ns\": " << f.wait_idle_ns << ", \"read_share\": " << share(f.wait_read_ns, worker_time)
    << ", \"cpu_share\": " << share(f.wait_cpu_ns, worker_time) << ", \"idle_share\": " << share(f.wait_idle_ns, worker_time)
    << "}, \"worker_read_ns\": " << f.worker_read_ns << ", \"hidden_read_ns\": " << f.hidden_read_ns
    << ", \"hidden_share\": " << share(f.hidden_read_ns, f.worker_read_ns);
}

void json_epochs(const LoopPath& l, std::ostream& o) {
  o << "\"epochs\": [";
  for (size_t i = 0; i < l.epochs.size(); ++i) {
    const EpochPath& e = l.epochs[i];
    o << (i ? "," : "") << "\n   {\"epoch\": " << json::quoted(e.epoch) << ", \"start_ns\": " << e.span.ts
      << ", \"end_ns\": " << e.span.end << ", \"workers\": " << e.workers << ", \"steps\": " << e.steps << ", ";
    json_figures(e.f, e.workers, o);
    o << "}";
  }
  o << "], \"steps_total\": " << l.steps_total;
}

// What every loop's entry and the top level share: who loads, the totals, the epochs.
void json_loop(const LoopPath& l, std::ostream& o) {
  o << "\"loop_pid\": " << l.pid << ", \"rank\": " << l.rank << ", \"loaders\": "
    << json::quoted(l.self_loading ? "loop" : "workers") << ", \"total\": {\"workers\": " << l.workers() << ", ";
  json_figures(l.total, l.workers(), o);
  o << "}, ";
  json_epochs(l, o);
}

void CriticalPathPass::json(const Analysis&, JsonSection& js) const {
  std::ostream& o = js.key("critical_path");
  if (loops_.empty()) {
    o << "null";
    return;
  }
  const LoopPath& m = loops_[main_];
  o << "{\"approximate\": " << (approximate_ ? "true" : "false") << ", \"dropped_events\": " << dropped_ << ", ";
  json_loop(m, o);
  o << ", \"steps_listed\": " << m.steps.size() << ", \"steps\": [";
  for (size_t i = 0; i < m.steps.size(); ++i) {
    const StepPath& s = m.steps[i];
    const PathFigures& f = s.f;
    o << (i ? "," : "") << "\n   {\"epoch\": " << json::quoted(s.epoch) << ", \"step\": " << s.step
      << ", \"start_ns\": " << s.start << ", \"wait_ns\": " << f.next_ns << ", \"compute_ns\": " << f.compute_ns
      << ", \"checkpoint_ns\": " << f.checkpoint_ns << ", \"read_ns\": " << f.wait_read_ns
      << ", \"cpu_ns\": " << f.wait_cpu_ns << ", \"idle_ns\": " << f.wait_idle_ns
      << ", \"hidden_read_ns\": " << f.hidden_read_ns << "}";
  }
  o << "], \"ranks\": [";
  for (size_t i = 0; i < loops_.size(); ++i) {
    o << (i ? "," : "") << "\n  {";
    json_loop(loops_[i], o);
    o << "}";
  }
  o << "]}";
}

}  // namespace

// The loop a loader worker feeds: its nearest ancestor that is a loop (fork
// and spawn make the loop the parent; forkserver puts its server between),
// else the only loop of its rank (workers inherit the launcher's rank), else
// the only loop of the job; -1 when none fits.
int64_t owner_loop(int64_t pid, const ProcessTree& meta, const std::map<int64_t, int64_t>& loop_rank) {
  int64_t at = pid;
  for (int depth = 0; depth < 32; ++depth) {
    auto m = meta.find(at);
    if (m == meta.end() || m->second->ppid == at) break;
    at = m->second->ppid;
    if (loop_rank.count(at)) return at;
  }
  auto m = meta.find(pid);
  const int64_t rank = m == meta.end() ? -1 : m->second->rank;
  int64_t found = -1;
  size_t same_rank = 0;
  for (const auto& [loop, r] : loop_rank)
    if (rank >= 0 && r == rank) found = loop, ++same_rank;
  if (same_rank == 1) return found;
  return loop_rank.size() == 1 ? loop_rank.begin()->first : -1;
}

size_t LoopPath::workers() const {
  size_t n = 0;
  for (const EpochPath& e : epochs) n = std::max(n, e.workers);
  return n;
}

ProcessTree process_tree(const Job& job) {
  ProcessTree t;
  for (const ProcResult& r : job.procs) t[r.meta.pid] = &r.meta;
  return t;
}

std::unique_ptr<Pass> make_critical_path_pass(const AnalyzeOptions&) { return std::make_unique<CriticalPathPass>(); }

const std::vector<LoopPath>& critical_paths(const Analysis& a) {
  static const std::vector<LoopPath> kNone;
  const CriticalPathPass* p = a.pass<CriticalPathPass>("critical_path");
  return p ? p->loops() : kNone;
}

[[gnu::noinline]] void add_span_slow(std::vector<Span>& v, int64_t ts, int64_t end, bool& coarse) {
  // Events come in completion order: a span that started before the last
  // one and reaches it (the other threads' reads overlap) merges into it,
  // and into those before it that it reaches. A union (union_spans) is all
  // the spans are used for: so a process reading on several threads at
  // once keeps one span for the whole stretch, not one per read.
  if (!v.empty() && ts < v.back().ts && end >= v.back().ts) {
    Span merged{ts, std::max(end, v.back().end)};
    v.pop_back();
    while (!v.empty() && v.back().end >= merged.ts && v.back().ts <= merged.end) {
      merged = {std::min(merged.ts, v.back().ts), std::max(merged.end, v.back().end)};
      v.pop_back();
    }
    v.push_back(merged);
    return;
  }
  v.push_back({ts, end});
  if (v.size() <= kMaxSpans) return;
  union_spans(v);
  if (v.size() <= kMaxSpans * 3 / 4) return;
  // Bridge each pair of neighbours: half as many spans, gaps counted as busy.
  size_t k = 0;
  for (size_t i = 0; i < v.size(); i += 2) v[k++] = {v[i].ts, i + 1 < v.size() ? v[i + 1].end : v[i].end};
  v.resize(k);
  coarse = true;
}

}  // namespace strata::analysis
