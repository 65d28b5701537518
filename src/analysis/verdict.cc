// The verdict pass (verdict.h): an event pass for the per-process facts the
// io pass does not keep (loop waits, worker batches, I/O inside a batch),
// then a verdict from them and the merged job.
#include "analysis/verdict.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

#include "analysis/critical_path.h"
#include "analysis/report_sections.h"
#include "analysis/serial.h"

namespace strata::analysis {

template <class Ar>
void fields(Ar& ar, VerdictProc& p) {
  ar(p.loader_wait_ns, p.loader_waits, p.loader_start_ns, p.loader_stop_ns, p.loop_first, p.loop_last, p.checkpoint_ns, p.checkpoint_calls,
     p.batch_ns, p.batches, p.worker_id, p.loader, p.step_data_ns, p.step_meta_ns);
}

namespace {

// ---- the event pass -------------------------------------------------------------

// Tags of one context that the verdict reads.
struct CtxFlags {
  bool known = false;
  bool in_step = false;  // a batch is being produced (`step` tag)
  int64_t worker = -1, loader = -1;
  std::string_view epoch;  // `epoch` tag value, "" without (in the unit's tables: begin to end)
};

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Code and system files, whose reads (imports, lazily loaded modules) are
// not the job's data.
bool environment_path(std::string_view p) {
  for (std::string_view ext : {".py", ".pyc", ".so", ".pth"})
    if (ends_with(p, ext)) return true;
  for (std::string_view prefix : {"/usr/", "/lib/", "/lib32/", "/lib64/", "/proc/", "/sys/", "/dev/", "/etc/"})
    if (p.substr(0, prefix.size()) == prefix) return true;
  return p.find(".so.") != std::string_view::npos || p.find("/site-packages/") != std::string_view::npos ||
         p.find("/dist-packages/") != std::string_view::npos;
}

enum class AppKind : uint8_t { kNone, kWait, kIter, kEpoch, kBatch, kCheckpoint, kStop };

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

AppKind app_kind(const FuncInfo& f) {
  if (f.layer != Layer::kApp) return AppKind::kNone;
  if (f.is_loader_wait) return AppKind::kWait;
  if (lower(f.category) == "checkpoint") return AppKind::kCheckpoint;
  if (f.name == "dataloader.iter") return AppKind::kIter;
  if (f.is_loader_stop) return AppKind::kStop;
  if (f.name == "dataloader.epoch") return AppKind::kEpoch;
  if (f.name == "dataloader.batch") return AppKind::kBatch;
  return AppKind::kNone;
}

void merge_proc(VerdictProc& a, const VerdictProc& b) {
  a.loader_wait_ns += b.loader_wait_ns;
  a.loader_waits += b.loader_waits;
  a.loader_start_ns += b.loader_start_ns;
  a.loader_stop_ns += b.loader_stop_ns;
  a.loop_first = std::min(a.loop_first, b.loop_first);
  a.loop_last = std::max(a.loop_last, b.loop_last);
  a.checkpoint_ns += b.checkpoint_ns;
  a.checkpoint_calls += b.checkpoint_calls;
  a.batch_ns += b.batch_ns;
  a.batches += b.batches;
  if (a.worker_id < 0) {
    a.worker_id = b.worker_id;
    a.loader = b.loader;
  }
  a.step_data_ns += b.step_data_ns;
  a.step_meta_ns += b.step_meta_ns;
}

class VerdictState final : public PassState {
 public:
  void begin(const std::string&, const Tables* t, bool) override {
    tables_ = t;
    ctx_.assign(t ? t->ctxs.size() : 0, CtxFlags{});
    skip_func_ = skip_ctx_ = UINT32_MAX;
    kinds_.clear();
    env_.clear();
    last_ = nullptr;
    last_pid_ = INT64_MIN;
    last_epoch_ns_ = nullptr;
  }
  void process(const ProcessMeta&) override {}
  // final: the loop calls event() directly, one virtual call per batch.
  void events(std::span<const IoEvent> batch) override {
    for (const IoEvent& e : batch) event(e);
  }
  void event(const IoEvent& e) override {
    if (e.func == skip_func_ && e.ctx == skip_ctx_) return;  // as the last skipped event
    counted(e);
  }

 private:
  // Out of line: the skip test above stays free of counted()'s prologue.
  [[gnu::noinline]] void counted(const IoEvent& e) {
    if (!tables_ || e.func >= tables_->funcs.size()) return;
    const FuncInfo& f = tables_->funcs[e.func];
    const CtxFlags& c = flags(e.ctx);
    const AppKind k = kind(e.func, f);
    const bool io = f.layer == Layer::kPosix || f.layer == Layer::kStdio;
    if (k == AppKind::kNone && c.worker < 0 && !(io && (c.in_step || !c.epoch.empty()))) {
      skip_func_ = e.func;  // a fact of (function, context) only
      skip_ctx_ = e.ctx;
      return;
    }
    VerdictProc& p = proc(e.pid);
    if (c.worker >= 0 && p.worker_id < 0) {
      p.worker_id = c.worker;
      p.loader = c.loader;
    }
    switch (k) {
      case AppKind::kWait:
        p.loader_wait_ns += e.dur;
        ++p.loader_waits;
        p.loop_first = std::min(p.loop_first, e.ts);
        p.loop_last = std::max(p.loop_last, e.ts + e.dur);
        break;
      case AppKind::kStop:
        p.loader_stop_ns += e.dur;
        [[fallthrough]];
      case AppKind::kIter:
        if (k == AppKind::kIter) p.loader_start_ns += e.dur;
        [[fallthrough]];
      case AppKind::kEpoch:
        p.loop_first = std::min(p.loop_first, e.ts);
        p.loop_last = std::max(p.loop_last, e.ts + e.dur);
        break;
      case AppKind::kCheckpoint:
        p.checkpoint_ns += e.dur;
        ++p.checkpoint_calls;
        p.loop_first = std::min(p.loop_first, e.ts);  // saving between epochs is part of the loop
        p.loop_last = std::max(p.loop_last, e.ts + e.dur);
        break;
      case AppKind::kBatch:
        p.batch_ns += e.dur;
        ++p.batches;
        break;
      case AppKind::kNone:
        break;
    }
    if (io && c.in_step) (f.is_read || f.is_write || f.is_sync ? p.step_data_ns : p.step_meta_ns) += e.dur;
    if (io && f.is_read && !c.epoch.empty() && !environment(e.path)) read_ns_of_epoch(e.ctx, c.epoch) += e.dur;
  }

 public:
  void end() override { tables_ = nullptr; }
  void merge(PassState& later) override {
    auto& l = static_cast<VerdictState&>(later);
    for (auto& [pid, p] : l.procs_) merge_proc(procs_[pid], p);
    for (auto& [epoch, ns] : l.epoch_read_ns_) epoch_read_ns_[epoch] += ns;
  }
  std::string save() const override {
    return serial::save(procs_, epoch_read_ns_);
  }
  void load(std::string_view bytes) override {
    serial::load(bytes, procs_, epoch_read_ns_);
    last_epoch_ns_ = nullptr;
  }
  const std::map<int64_t, VerdictProc>& procs() const { return procs_; }
  const std::map<std::string, int64_t>& epoch_read_ns() const { return epoch_read_ns_; }

 private:
  const CtxFlags& flags(uint32_t ctx) {
    if (ctx >= ctx_.size()) ctx_.resize(ctx_slots(tables_, ctx));
    CtxFlags& c = ctx_[ctx];
    if (c.known) return c;
    return fill_flags(c, ctx);
  }
  // Once per context id: out of line, so that flags() stays small in event().
  [[gnu::noinline]] const CtxFlags& fill_flags(CtxFlags& c, uint32_t ctx) {
    c.known = true;
    if (!tables_ || ctx >= tables_->ctxs.size()) return c;
    for (const CtxTag& t : tables_->ctxs[ctx]) {
      if (t.key == std::string_view("step")) c.in_step = true;
      if (t.key == std::string_view("worker") && t.is_int) c.worker = t.int_value;
      if (t.key == std::string_view("loader") && t.is_int) c.loader = t.int_value;
      if (t.key == std::string_view("epoch")) c.epoch = t.value;
    }
    return c;
  }
  AppKind kind(uint32_t func, const FuncInfo& f) {
    if (func >= kinds_.size()) kinds_.resize(tables_->funcs.size(), 0xff);
    if (kinds_[func] == 0xff) kinds_[func] = static_cast<uint8_t>(app_kind(f));
    return static_cast<AppKind>(kinds_[func]);
  }
  bool environment(uint32_t path) {
    if (path == 0 || !tables_->str) return true;
    if (path >= env_.size()) env_.resize(path + 1, 2);
    if (env_[path] == 2) env_[path] = environment_path(tables_->str(path)) ? 1 : 0;
    return env_[path] == 1;
  }
  // Reads come in runs of one epoch: the last epoch's counter (map nodes
  // never move), kept without comparing the value while the context is the same.
  int64_t& read_ns_of_epoch(uint32_t ctx, std::string_view epoch) {
    if (!last_epoch_ns_ || (ctx != last_epoch_ctx_ && epoch != last_epoch_)) {
      last_epoch_ns_ = &epoch_read_ns_[std::string(epoch)];
      last_epoch_ = epoch;
    }
    last_epoch_ctx_ = ctx;
    return *last_epoch_ns_;
  }
  VerdictProc& proc(int64_t pid) {
    if (pid != last_pid_) {
      last_ = &procs_[pid];
      last_pid_ = pid;
    }
    return *last_;
  }

  const Tables* tables_ = nullptr;
  std::vector<CtxFlags> ctx_;
  std::vector<uint8_t> kinds_;
  uint32_t skip_func_ = UINT32_MAX, skip_ctx_ = UINT32_MAX;  // the last event this pass ignored
  std::vector<uint8_t> env_;  // per path id: 1 environment, 0 data, 2 not yet known
  std::map<int64_t, VerdictProc> procs_;
  std::map<std::string, int64_t> epoch_read_ns_;  // reads of non-environment files per epoch value
  VerdictProc* last_ = nullptr;
  int64_t last_pid_ = INT64_MIN;
  int64_t* last_epoch_ns_ = nullptr;
  std::string last_epoch_;
  uint32_t last_epoch_ctx_ = 0;  // a context whose epoch value is last_epoch_ (while last_epoch_ns_ is set)
};

// ---- words a person reads -------------------------------------------------------------

std::string pct(double share) {
  char b[32];
  std::snprintf(b, sizeof b, "%.0f%%", 100.0 * share);
  return b;
}

std::string duration(int64_t ns) {
  const double v = static_cast<double>(ns);
  char b[32];
  if (v >= 1e9)
    std::snprintf(b, sizeof b, "%.3g s", v / 1e9);
  else if (v >= 1e6)
    std::snprintf(b, sizeof b, "%.3g ms", v / 1e6);
  else
    std::snprintf(b, sizeof b, "%.3g µs", v / 1e3);
  return b;
}

std::string bytes(double n) {
  char b[32];
  if (n >= 1024.0 * 1024 * 1024)
    std::snprintf(b, sizeof b, "%.3g GiB", n / (1024.0 * 1024 * 1024));
  else if (n >= 1024.0 * 1024)
    std::snprintf(b, sizeof b, "%.3g MiB", n / (1024.0 * 1024));
  else if (n >= 1024.0)
    std::snprintf(b, sizeof b, "%.3g KiB", n / 1024.0);
  else
    std::snprintf(b, sizeof b, "%.0f B", n);
  return b;
}

std::string times(double factor) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3gx", factor);
  return b;
}

double share(int64_t part, int64_t whole) {
  return whole > 0 ? std::clamp(static_cast<double>(part) / static_cast<double>(whole), 0.0, 1.0) : 0.0;
}

using Evidence = std::vector<std::pair<std::string, double>>;

// ---- files: small files and metadata ---------------------------------------------

// Files of the job's data (not libraries, configuration, logs, checkpoints).
struct DataFiles {
  size_t read = 0;          // files with bytes read
  int64_t read_extent = 0;  // their summed extents
  uint64_t meta_ops = 0;
  int64_t meta_ns = 0, data_ns = 0;
  uint64_t data_ops = 0;  // reads + writes
  uint64_t eof_reads = 0;  // of those, reads that met the end of the file (0 bytes)
  int64_t data_bytes = 0;
  // The mean request: a read returning 0 at the end of a file asked for
  // nothing the program could have asked for in a larger request.
  uint64_t requests() const { return data_ops - eof_reads; }
  double mean_request() const { return requests() ? double(data_bytes) / double(requests()) : 0; }
  // Every file the job moved data with (outputs, logs and checkpoints too):
  // a job bound by writing gets no read-ahead advice. write_ns holds fsync.
  struct {
    int64_t read_ns = 0, write_ns = 0, bytes_written = 0;
    uint64_t writes = 0;
  } all;
};

DataFiles data_files(const Job& job) {
  DataFiles d;
  for (const FileAgg& f : files_with_data(job)) {
    d.all.read_ns += f.read_ns;
    d.all.write_ns += f.write_ns;
    d.all.writes += f.writes;
    d.all.bytes_written += f.bytes_written;
    // The cheap test first: most files of a large job moved no data.
    if (f.bytes_read + f.bytes_written <= 0) continue;  // stat-only paths: imports searching sys.path
    const Role r = file_role(f, job);
    if (!dataset_role(r) && r != Role::kOther) continue;
    if (f.bytes_read > 0) {
      ++d.read;
      d.read_extent += f.extent;
    }
    d.meta_ops += f.opens + f.stats + f.seeks + f.other_meta;
    d.data_ops += f.reads + f.writes;
    d.eof_reads += f.eof_reads;
    d.data_bytes += f.bytes_read + f.bytes_written;
    d.meta_ns += f.meta_ns;
    d.data_ns += f.read_ns + f.write_ns;
  }
  return d;
}

void file_rules(const DataFiles& d, Verdict& v) {
  if (d.read >= kSmallFilesMin) {
    const double mean = static_cast<double>(d.read_extent) / static_cast<double>(d.read);
    if (mean < kSmallFileBytes)
      v.advice.push_back({"small-files",
                          std::to_string(d.read) + " data files of " + bytes(mean) +
                              " on average were read one by one: pack them into shards "
                              "(tar/WebDataset, TFRecord, HDF5, LMDB) read sequentially",
                          {{"files_read", double(d.read)}, {"mean_file_bytes", mean}},
                          d.meta_ns + d.data_ns});
  }
  if (d.meta_ops >= kMetaOpsMin && d.meta_ns > d.data_ns)
    v.advice.push_back({"metadata",
                        "metadata calls (open, stat, seek, close) on data files took " + duration(d.meta_ns) +
                            ", more than reading and writing them (" + duration(d.data_ns) +
                            "): pack files into shards, or open each file once and keep the handle",
                        {{"meta_ops", double(d.meta_ops)},
                         {"meta_ns", double(d.meta_ns)},
                         {"data_ns", double(d.data_ns)}},
                        d.meta_ns});
}

// Many small requests to data files of an I/O-bound job: fewer, larger ones
// cost fewer calls and let the storage read ahead.
void request_size_rule(const DataFiles& d, const std::string& bottleneck, Verdict& v) {
  if (bottleneck != "io" || d.requests() < kSmallRequestsMin || d.data_ns < d.meta_ns || d.data_bytes <= 0) return;
  const double mean = d.mean_request();
  if (mean >= kSmallRequestBytes) return;
  // Files read whole, one request each: no larger request exists, the
  // files are small (small-files says so).
  if (d.read > 0 && 2 * mean >= static_cast<double>(d.read_extent) / static_cast<double>(d.read)) return;
  v.advice.push_back({"larger-requests",
                      std::to_string(d.requests()) + " reads and writes of data files moved " + bytes(mean) +
                          " each on average (" + duration(d.data_ns) +
                          "): use larger requests (1 MiB or more) or a buffered reader, and read each file "
                          "sequentially in one pass",
                      {{"data_ops", double(d.data_ops)},
                       {"eof_reads", double(d.eof_reads)},
                       {"mean_request_bytes", mean},
                       {"data_ns", double(d.data_ns)},
                       {"meta_ns", double(d.meta_ns)}},
                      d.data_ns});
}

// with_loader: a DataLoader feeds the job, whose prefetching can hide reads.
// at_stake_ns: the time spent waiting for the reads.
void staging_advice(const Job& job, const AnalyzeOptions& o, std::string why, Evidence ev, Verdict& v,
                    bool with_loader, int64_t at_stake_ns) {
  const StageAdvice s = stage_advice(job, o.stage_capacity, o.stage_speedup);
  std::string text = why + ": put the data set on faster storage";
  if (!s.picks.empty()) {
    text += ", or stage " + std::to_string(s.picks.size()) + " files (" + bytes(double(s.used)) +
            ") to a fast tier first (saves ~" + duration(s.saved_ns) + " at " + times(o.stage_speedup) +
            " speed; see staging)";
  }
  text += with_loader ? "; prefetch more (DataLoader prefetch_factor) to overlap reads with compute"
                      : "; read ahead (larger or asynchronous reads) to overlap reads with the rest of the work";
  ev.emplace_back("stage_files", double(s.picks.size()));
  ev.emplace_back("stage_bytes", double(s.used));
  ev.emplace_back("stage_saved_ns", double(s.saved_ns));
  v.advice.push_back({"faster-storage", text, std::move(ev), at_stake_ns});
}

// ---- with a training loop (strata's Python layer) -----------------------------------

struct Loader {
  size_t workers = 0, worker_ids = 0;  // the training loader's
  // Any loader of the loop started again (an evaluation loader re-created
  // each epoch too): the one with the most processes per worker id.
  size_t max_starts = 0, restart_workers = 0, restart_ids = 0;
  int64_t life_ns = 0, busy_ns = 0, data_ns = 0, meta_ns = 0;
};

// Processes and worker ids of one DataLoader (`loader` tag).
struct LoaderStarts {
  size_t processes = 0;
  std::map<int64_t, size_t> per_id;
};

Loader loader_of(const Job& job, const std::map<int64_t, VerdictProc>& procs, int64_t main_pid,
                 const VerdictProc& main) {
  Loader l;
  std::map<int64_t, LoaderStarts> starts;  // by `loader` tag
  std::set<int64_t> ids;
  std::map<int64_t, const ProcResult*> by_pid;
  for (const auto& p : job.procs) by_pid[p.meta.pid] = &p;
  // The loop's own workers (not another rank's); its figures from the
  // training loader's only (`loader` tag 0 or none), not an evaluation loader's.
  const ProcessTree tree = process_tree(job);
  std::map<int64_t, int64_t> loops;  // pid -> rank
  for (const auto& [pid, p] : procs)
    if (p.loader_waits && p.worker_id < 0) loops[pid] = tree.count(pid) ? tree.at(pid)->rank : -1;
  for (const auto& [pid, p] : procs) {
    if (p.worker_id < 0 || pid == main_pid || owner_loop(pid, tree, loops) != main_pid) continue;
    LoaderStarts& s = starts[p.loader];
    ++s.processes;
    ++s.per_id[p.worker_id];
    if (p.loader > 0) continue;
    ++l.workers;
    ids.insert(p.worker_id);
    auto it = by_pid.find(pid);
    if (it != by_pid.end() && it->second->last_ts > it->second->first_ts)
      l.life_ns += it->second->last_ts - it->second->first_ts;
    l.busy_ns += p.batch_ns;
    l.data_ns += p.step_data_ns;
    l.meta_ns += p.step_meta_ns;
  }
  l.worker_ids = ids.size();
  for (const auto& [loader, s] : starts)
    for (const auto& [id, n] : s.per_id)
      if (n > l.max_starts) l.max_starts = n, l.restart_workers = s.processes, l.restart_ids = s.per_id.size();
  if (l.workers == 0) {  // num_workers=0: the loop loads its own batches while it waits
    l.life_ns = main.loop_last - main.loop_first;
    l.busy_ns = main.loader_wait_ns + main.loader_start_ns + main.loader_stop_ns;
    l.data_ns = main.step_data_ns;
    l.meta_ns = main.step_meta_ns;
  }
  l.busy_ns = std::max(l.busy_ns, l.data_ns + l.meta_ns);
  return l;
}

// How the loader spent its time. Workers live between batches too, waiting
// for the next index: "0% CPU and 0% I/O" of idle workers read as if they
// did nothing at all, so their idle share is said, and alone when the
// busy shares would round to 0.
std::string loader_time(const Loader& l, const std::string& who, const std::string& life, int64_t io_ns) {
  const double cpu = share(l.busy_ns - io_ns, l.life_ns), io = share(io_ns, l.life_ns);
  if (!l.workers) return who + " spent " + pct(cpu) + " " + life + " outside I/O (CPU) and " + pct(io) + " in I/O";
  const double idle = 1 - share(l.busy_ns, l.life_ns);
  if (cpu < 0.005 && io < 0.005)
    return who + (l.workers > 1 ? " were" : " was") + " idle (waiting for work, not producing a batch) " + pct(idle) +
           " " + life;
  return who + " spent " + pct(cpu) + " " + life + " outside I/O (CPU), " + pct(io) + " in I/O and " + pct(idle) +
         " idle (waiting for work)";
}

// First epoch vs the others dl_summary compares (same number of batches),
// counting reads of the job's files only: a first epoch that imports modules
// lazily is not a cold cache.
void cold_epoch_rule(const Job& job, const std::map<std::string, int64_t>& epoch_read_ns, Verdict& v) {
  const DlSummary dl = dl_summary(job);
  if (!dl.has_first_vs_rest) return;
  auto read_ns = [&](const std::string& epoch) {
    auto it = epoch_read_ns.find(epoch);
    return it == epoch_read_ns.end() ? int64_t{0} : it->second;
  };
  const int64_t first = read_ns(dl.epochs[0].value);
  double rest = 0;
  for (const auto& e : dl.compared) rest += static_cast<double>(read_ns(e));
  rest /= static_cast<double>(dl.compared.size());
  if (first >= kColdEpochMinNs && static_cast<double>(first) >= kColdEpochFactor * rest)
    v.advice.push_back({"cold-first-epoch",
                        "the first epoch spent " + duration(first) + " reading the job's files, the others " +
                            duration(static_cast<int64_t>(rest)) +
                            " on average: a cold cache; stage the data set to local storage or warm "
                            "the cache (read it once) before training",
                        {{"first_read_ns", double(first)}, {"rest_read_ns", rest}, {"epochs_compared", double(dl.compared.size())}},
                        first - static_cast<int64_t>(rest)});
}

// The sums over `pid`'s epochs (nullptr when the critical path has none).
const PathFigures* epochs_of(const std::vector<LoopPath>& paths, int64_t pid) {
  for (const LoopPath& p : paths)
    if (p.pid == pid && !p.epochs.empty()) return &p.total;
  return nullptr;
}

Verdict loop_verdict(const Job& job, const std::map<int64_t, VerdictProc>& procs,
                     const std::map<std::string, int64_t>& epoch_read_ns, int64_t main_pid,
                     const AnalyzeOptions& o, const PathFigures* epochs) {
  const VerdictProc& m = procs.at(main_pid);
  Verdict v;
  int64_t loop_ns = m.loop_last - m.loop_first;
  // Starting an iterator (worker start-up under spawn/forkserver) is waiting for data too.
  int64_t wait_ns = m.loader_wait_ns + m.loader_start_ns + m.loader_stop_ns;
  if (epochs && epochs->loop_ns > 0) {
    // The training loop is its epochs, as in the epoch table and the critical
    // path, plus the checkpoints saved between them; an evaluation pass
    // between or after the epochs is not.
    loop_ns = epochs->loop_ns + std::max<int64_t>(0, m.checkpoint_ns - epochs->checkpoint_ns);
    wait_ns = epochs->wait_ns;
  }
  const int64_t compute_ns = std::max<int64_t>(0, loop_ns - wait_ns - m.checkpoint_ns);
  const double wait = share(wait_ns, loop_ns), ckpt = share(m.checkpoint_ns, loop_ns);
  // The wait, split: in dataloader.next, where the loader's throughput shows,
  // and starting and stopping workers (each epoch without persistent workers).
  const int64_t next_ns = epochs && epochs->loop_ns > 0 ? epochs->next_ns : m.loader_wait_ns;
  const double next_wait = share(next_ns, loop_ns), start_stop = std::max(0.0, wait - next_wait);
  // What the workers did during those waits (critical path): idle workers
  // (a pipeline filling, queues) are not a loader too slow for the loop.
  double idle_in_waits = -1;
  if (epochs && epochs->loop_ns > 0)
    if (int64_t w = epochs->wait_read_ns + epochs->wait_cpu_ns + epochs->wait_idle_ns; w > 0)
      idle_in_waits = share(epochs->wait_idle_ns, w);
  const bool loader_bound = next_wait >= kWaitShareMin && idle_in_waits < kIdleInWaitsMax;
  const Loader l = loader_of(job, procs, main_pid, m);
  const int64_t io_ns = l.data_ns + l.meta_ns;
  const double io_of_busy = share(io_ns, l.busy_ns);
  const std::string who = l.workers ? std::to_string(l.workers) + " loader worker process" +
                                          (l.workers > 1 ? "es" : "")
                                    : std::string("the loop itself (num_workers=0)");
  const std::string life = l.workers > 1 ? "of their time" : l.workers ? "of its time" : "of the loop";
  std::string s = "the training loop (pid " + std::to_string(main_pid) + ") waited for data " + pct(wait) +
                  " of its " + duration(loop_ns);
  if (m.checkpoint_calls && ckpt >= 0.01) s += " and checkpointed " + pct(ckpt);  // below 1% it says nothing
  s += "; " + loader_time(l, who, life, io_ns);
  if (ckpt >= kCheckpointShareMin && ckpt >= wait) {
    v.bottleneck = "checkpoint";
    s += "; checkpoints block the loop";
  } else if (loader_bound && io_of_busy >= kLoaderIoShareMin) {
    v.bottleneck = l.meta_ns > l.data_ns ? "metadata" : "io";
    s += v.bottleneck == "io" ? "; reading the data bounds the job"
                              : "; metadata calls (open, stat) bound the job";
  } else if (loader_bound) {
    v.bottleneck = "loader-cpu";
    s += "; the loader's CPU work (decoding, transforms) bounds the job; I/O is not the bottleneck";
  } else if (start_stop >= kWaitShareMin) {
    v.bottleneck = "loader-cpu";
    s += "; starting and stopping the loader's workers (" + pct(start_stop) +
         " of the loop) bounds the job; I/O is not the bottleneck";
  } else {
    v.bottleneck = "compute";
    if (wait >= kWaitShareMin && next_wait < kWaitShareMin)
      s += "; of the wait, " + pct(start_stop) + " is starting and stopping workers";
    else if (next_wait >= kWaitShareMin)
      s += "; the workers were idle " + pct(idle_in_waits) +
           " of the time the loop waited (the pipeline filling, queues), so their speed is not what it waits for";
    s += "; the loop's own compute bounds the job; I/O is not the bottleneck";
  }
  v.summary = s;
  v.run_ns = loop_ns;
  v.evidence = {{"loop_pid", double(main_pid)},
                {"loop_ns", double(loop_ns)},
                {"loader_wait_ns", double(wait_ns)},
                {"loader_start_ns", double(m.loader_start_ns)},
                {"loader_stop_ns", double(m.loader_stop_ns)},
                {"loader_waits", double(m.loader_waits)},
                {"wait_share", wait},
                {"next_wait_share", next_wait},
                {"worker_idle_share_in_waits", idle_in_waits},
                {"checkpoint_ns", double(m.checkpoint_ns)},
                {"checkpoint_calls", double(m.checkpoint_calls)},
                {"checkpoint_share", ckpt},
                {"compute_ns", double(compute_ns)},
                {"loader_workers", double(l.workers)},
                {"loader_worker_ids", double(l.worker_ids)},
                {"loader_time_ns", double(l.life_ns)},
                {"loader_busy_ns", double(l.busy_ns)},
                {"loader_data_ns", double(l.data_ns)},
                {"loader_meta_ns", double(l.meta_ns)},
                {"loader_io_share_of_busy", io_of_busy}};

  const Evidence loop_ev = {{"wait_share", wait},
                            {"next_wait_share", next_wait},
                            {"worker_idle_share_in_waits", idle_in_waits},
                            {"loader_io_share_of_busy", io_of_busy}};
  if (loader_bound && io_of_busy < kLoaderIoShareMin)
    v.advice.push_back({"more-workers",
                        "the loop waited " + pct(wait) + " while " + who + " computed " +
                            pct(1 - io_of_busy) + " of the time it spent on batches: use more workers (" +
                            (l.worker_ids ? "num_workers=" + std::to_string(l.worker_ids) + " now"
                                          : std::string("num_workers=0 now")) +
                            ") or cheaper transforms (decode once, resize offline, GPU augmentation)",
                        loop_ev, next_ns});
  if (loader_bound && io_of_busy >= kLoaderIoShareMin)
    staging_advice(job, o,
                   "the loop waited " + pct(wait) + " while " + who + " spent " + pct(io_of_busy) +
                       " of their batch time in I/O",
                   loop_ev, v, true, next_ns);
  cold_epoch_rule(job, epoch_read_ns, v);
  if (l.max_starts >= 2)
    v.advice.push_back({"persistent-workers",
                        "a DataLoader started its workers again for every epoch (" + std::to_string(l.restart_workers) +
                            " worker processes for " + std::to_string(l.restart_ids) +
                            " workers): pass persistent_workers=True",
                        {{"worker_processes", double(l.restart_workers)},
                         {"worker_ids", double(l.restart_ids)},
                         {"max_starts", double(l.max_starts)}},
                        wait_ns - next_ns});
  if (ckpt >= kCheckpointShareMin)
    v.advice.push_back({"async-checkpoint",
                        std::to_string(m.checkpoint_calls) + " checkpoint calls took " + pct(ckpt) +
                            " of the loop (" + duration(m.checkpoint_ns) +
                            "): save asynchronously (torch.distributed.checkpoint.async_save, or a "
                            "background thread writing a copy of the state) or less often",
                        {{"checkpoint_share", ckpt}, {"checkpoint_ns", double(m.checkpoint_ns)}},
                        m.checkpoint_ns});
  return v;
}

// ---- without a training loop: I/O share of each process -------------------------------

// Without a training loop, what bounds the job is judged on its processes'
// time in I/O over their active time: each process's span less the spans of
// its children (a shell waiting for the program it started is not a
// process computing). A shell loop of 300 `cat`, where each cat is mostly
// I/O but the loop spends its time starting them, is then not "I/O bound".
struct ActiveTime {
  int64_t io_ns = 0, active_ns = 0;
  double share() const { return active_ns > 0 ? double(io_ns) / double(active_ns) : 0; }
};

ActiveTime job_active_time(const Job& job) {
  // Spans per pid (its images together) and children per parent pid.
  std::map<int64_t, std::pair<int64_t, int64_t>> span;
  std::map<int64_t, std::vector<int64_t>> children;
  std::map<int64_t, int64_t> parent;
  for (const auto& p : job.procs) {
    if (p.last_ts <= p.first_ts) continue;
    auto [it, fresh] = span.try_emplace(p.meta.pid, p.first_ts, p.last_ts);
    if (!fresh) {
      it->second.first = std::min(it->second.first, p.first_ts);
      it->second.second = std::max(it->second.second, p.last_ts);
    }
    parent.try_emplace(p.meta.pid, p.meta.ppid);
  }
  for (const auto& [pid, ppid] : parent)
    if (ppid != pid && span.count(ppid)) children[ppid].push_back(pid);
  ActiveTime t;
  for (const auto& p : job.procs) t.io_ns += p.io_union;
  for (const auto& [pid, s] : span) {
    std::vector<std::pair<int64_t, int64_t>> kids;
    for (int64_t c : children[pid]) {
      const auto& cs = span[c];
      const int64_t a = std::max(cs.first, s.first), b = std::min(cs.second, s.second);
      if (b > a) kids.emplace_back(a, b);
    }
    std::sort(kids.begin(), kids.end());
    int64_t covered = 0, end = INT64_MIN;
    for (const auto& [a, b] : kids) {
      const int64_t from = std::max(a, end);
      if (b > from) covered += b - from;
      end = std::max(end, b);
    }
    t.active_ns += std::max<int64_t>(0, s.second - s.first - covered);
  }
  return t;
}

// The process image named is the one that spent the most time in I/O: the
// highest share alone named a shell that lived 375 µs between its fork and
// its exec in a pipeline whose tar and gzip ran for seconds. The range of
// shares leaves out images that lived under 1% of the longest one for the
// same reason.
Verdict process_verdict(const Job& job, const std::map<int64_t, VerdictProc>& procs, const DataFiles& d,
                        const AnalyzeOptions& o) {
  Verdict v;
  const ProcResult* worst = nullptr;
  double worst_share = -1, least = 1, most = 0;
  size_t n = 0;
  int64_t longest = 0;
  for (const auto& p : job.procs) longest = std::max(longest, p.last_ts - p.first_ts);
  std::set<int64_t> pids;  // processes, not images: a fork child and the program it exec'd are one
  for (const auto& p : job.procs) {
    if (p.last_ts <= p.first_ts) continue;
    pids.insert(p.meta.pid);
    const double sh = share(p.io_union, p.last_ts - p.first_ts);
    if ((p.last_ts - p.first_ts) * 100 >= longest) {
      least = std::min(least, sh);
      most = std::max(most, sh);
    }
    if (!worst || p.io_union > worst->io_union || (p.io_union == worst->io_union && sh > worst_share)) {
      worst_share = sh;
      worst = &p;
    }
  }
  n = pids.size();
  // The range holds the process named, however short its life.
  least = std::min(least, worst_share);
  most = std::max(most, worst_share);
  if (!worst) {
    v.bottleneck = "none";
    const bool profiled = std::any_of(job.procs.begin(), job.procs.end(),
                                      [](const ProcResult& p) { return !p.posix.empty() || !p.stdio.empty(); });
    v.summary = profiled ? "a profile-mode trace (-m profile, the default of --live): Darshan counters per file, no "
                           "events to time the job with; strata analyze --darshan prints the counters, and "
                           "strata run -m trace records the events the verdict needs"
                         : "the trace holds no timed events: nothing to judge";
    return v;
  }
  // The job's data files, as the request-size rule counts them: one average
  // in the summary and in the advice.
  const uint64_t ops = d.data_ops;
  const double mean_req = d.mean_request();
  const int64_t wall = worst->last_ts - worst->first_ts;
  const double meta = share(worst->meta_ns, worst->meta_ns + worst->data_ns);
  std::string exe = worst->meta.exe.substr(worst->meta.exe.rfind('/') + 1);
  std::string s = "no training loop in the trace (no DataLoader events); pid " + std::to_string(worst->meta.pid) +
                  (exe.empty() ? "" : " (" + exe + ")") + " spent " + pct(worst_share) + " of its " +
                  duration(wall) + " in I/O, " + pct(meta) + " of it in metadata calls";
  if (n > 1)
    s += " (the most I/O time of " + std::to_string(n) + " processes; they spent " + pct(least) + " to " + pct(most) +
         " in I/O)";
  if (d.requests())
    s += "; the job's data requests average " + bytes(mean_req) + (mean_req < kSmallRequestBytes ? " (small)" : " (large)");
  // One process: its share. Several: their I/O time over their active time.
  const ActiveTime active = job_active_time(job);
  const bool measured = compute_measured(job);
  const double job_share = n > 1 ? std::min(1.0, active.share()) : worst_share;
  if (n > 1) s += "; the processes spent " + pct(job_share) + " of their active time in I/O";
  // Checkpoints of a loop without a DataLoader (batches made in memory):
  // the process that spent the most time in checkpoint calls (torch.save),
  // against its span. They bound the job, as in a loop's verdict, when they
  // take 10% of it and at least as long as its I/O outside them can have.
  int64_t ckpt_pid = -1, ckpt_span = 0, ckpt_io = 0;
  const VerdictProc* ckpt_p = nullptr;
  for (const auto& [pid, p] : procs)
    if (p.checkpoint_calls && (!ckpt_p || p.checkpoint_ns > ckpt_p->checkpoint_ns)) {
      ckpt_p = &p;
      ckpt_pid = pid;
    }
  if (ckpt_p) {
    int64_t first = INT64_MAX, last = INT64_MIN;
    for (const auto& p : job.procs)
      if (p.meta.pid == ckpt_pid && p.last_ts > p.first_ts) {
        first = std::min(first, p.first_ts);
        last = std::max(last, p.last_ts);
        ckpt_io += p.io_union;
      }
    ckpt_span = last > first ? last - first : 0;
  }
  const int64_t ckpt_ns = ckpt_p ? ckpt_p->checkpoint_ns : 0;
  const double ckpt = share(ckpt_ns, ckpt_span);
  if (ckpt >= kCheckpointShareMin && ckpt_ns >= ckpt_io - ckpt_ns) {
    v.bottleneck = "checkpoint";
    s += (ckpt_pid == worst->meta.pid ? std::string("; it spent ") : "; pid " + std::to_string(ckpt_pid) + " spent ") + pct(ckpt) + " of its " + duration(ckpt_span) + " in " +
         std::to_string(ckpt_p->checkpoint_calls) + " checkpoint calls: checkpoints bound the job";
  } else if (worst_share >= kIoShareBound && job_share >= kIoShareBound) {
    v.bottleneck = worst->meta_ns > worst->data_ns ? "metadata" : "io";
    s += v.bottleneck == "io" ? "; I/O bounds the job" : "; metadata calls bound the job";
  } else {
    v.bottleneck = "compute";
    s += "; I/O is not the bottleneck";
    // The name says "not I/O": without compute regions the rest is unknown.
    if (!measured) s += " (the rest of its time is not measured: CPU, or waits strata does not trace)";
  }
  v.summary = s;
  v.run_ns = job.last_ts > job.first_ts ? job.last_ts - job.first_ts : 0;
  v.evidence = {{"pid", double(worst->meta.pid)},    {"wall_ns", double(wall)},
                {"io_ns", double(worst->io_union)},  {"io_share", worst_share},
                {"meta_ns", double(worst->meta_ns)}, {"data_ns", double(worst->data_ns)},
                {"processes", double(n)},            {"min_io_share", least},
                {"max_io_share", most},              {"job_io_share", job_share},
                {"active_ns", double(active.active_ns)},
                {"data_ops", double(ops)},           {"eof_reads", double(d.eof_reads)},
                {"mean_request_bytes", mean_req},
                {"checkpoint_ns", double(ckpt_ns)},  {"checkpoint_calls", double(ckpt_p ? ckpt_p->checkpoint_calls : 0)},
                {"checkpoint_share", ckpt},          {"compute_measured", measured ? 1.0 : 0.0}};
  const std::string why = "pid " + std::to_string(worst->meta.pid) + " spent " + pct(worst_share) + " of its time in I/O";
  const auto& all = d.all;
  if (v.bottleneck == "io" && all.write_ns > all.read_ns) {
    const double mean_write = all.writes ? double(all.bytes_written) / double(all.writes) : 0;
    v.advice.push_back(
        {"write-bound",
         why + ", mostly writing: writes and syncs took " + duration(all.write_ns) + " (" +
             std::to_string(all.writes) + " writes of " + bytes(mean_write) + " on average), reads " +
             duration(all.read_ns) + ": " + (mean_write < kLargeWriteBytes ? "write larger blocks, " : "") +
             "sync only where durability needs it (fsync/fdatasync wait for the device), or write to fast local "
             "storage and copy the results out at the end",
         {{"io_share", worst_share},
          {"write_ns", double(all.write_ns)},
          {"read_ns", double(all.read_ns)},
          {"writes", double(all.writes)},
          {"mean_write_bytes", mean_write}},
         all.write_ns});
  } else if (v.bottleneck == "io") {
    staging_advice(job, o, why, {{"io_share", worst_share}}, v, false, all.read_ns);
  }
  if (ckpt >= kCheckpointShareMin)
    v.advice.push_back({"async-checkpoint",
                        std::to_string(ckpt_p->checkpoint_calls) + " checkpoint calls took " + pct(ckpt) +
                            " of pid " + std::to_string(ckpt_pid) + " (" + duration(ckpt_ns) +
                            "): save asynchronously (torch.distributed.checkpoint.async_save, or a "
                            "background thread writing a copy of the state) or less often",
                        {{"checkpoint_share", ckpt}, {"checkpoint_ns", double(ckpt_ns)}},
                        ckpt_ns});
  return v;
}

// ---- JSON and text ------------------------------------------------------------------

std::string quoted(const std::string& s) {
  std::string q = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      q += '\\';
      q += static_cast<char>(c);
    } else if (c < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      q += b;
    } else {
      q += static_cast<char>(c);
    }
  }
  return q + "\"";
}

std::string number(double x) {
  if (!std::isfinite(x)) return "null";
  char b[40];
  if (x == std::floor(x) && std::fabs(x) < 9e15)
    std::snprintf(b, sizeof b, "%.0f", x);
  else
    std::snprintf(b, sizeof b, "%.6g", x);
  return b;
}

void json_evidence(const Evidence& ev, std::ostream& out) {
  out << "{";
  for (size_t i = 0; i < ev.size(); ++i) out << (i ? ", " : "") << quoted(ev[i].first) << ": " << number(ev[i].second);
  out << "}";
}

class VerdictPass : public Pass {
 public:
  const char* name() const override { return "verdict"; }
  bool leads_report() const override { return true; }
  std::unique_ptr<PassState> new_state() const override { return std::make_unique<VerdictState>(); }
  void finish(Analysis& a, PassState* s) override {
    auto* st = static_cast<VerdictState*>(s);
    // The training loops' epochs as the critical path pass (run before this one) cut them.
    verdict_ = make_verdict(a.job(), st->procs(), st->epoch_read_ns(), a.opts(), critical_paths(a));
  }
  // By default each piece of advice takes one screen line so that the report
  // fits a screen: its whole text when it fits, else what to do (the part
  // after the evidence's last ": "); the whole text is in --json and --all.
  void text(const Analysis& an, std::ostream& out) const override {
    out << "Verdict: " << verdict_.bottleneck << "\n  " << verdict_.summary << "\n";
    for (const auto& a : verdict_.advice) {
      const std::string head = "  - [" + a.rule + ", " + at_stake(a) + "] ";
      std::string line = head + a.text;
      if (!an.opts().all && clip_words(line, kTextColumns) != line) {  // wider than the screen (columns, not bytes)
        const size_t action = a.text.rfind(": ");
        if (action != std::string::npos) line = head + a.text.substr(action + 2);
        line = clip_words(line, kTextColumns);
      }
      out << line << "\n";
    }
    if (an.opts().all && !verdict_.left_out.empty()) {
      std::string line = "  (under " + pct(kAtStakeShareMin) + " of the run at stake, left out:";
      for (const auto& a : verdict_.left_out) line += " [" + a.rule + ", " + at_stake(a) + "]";
      out << line << ")\n";
    }
  }
  void json(const Analysis&, JsonSection& out) const override {
    std::ostream& o = out.key("verdict");
    o << "{\"bottleneck\": " << quoted(verdict_.bottleneck) << ", \"summary\": " << quoted(verdict_.summary)
      << ", \"evidence\": ";
    json_evidence(verdict_.evidence, o);
    o << ", \"advice\": [";
    for (size_t i = 0; i < verdict_.advice.size(); ++i) {
      const auto& a = verdict_.advice[i];
      o << (i ? ", " : "") << "{\"rule\": " << quoted(a.rule) << ", \"text\": " << quoted(a.text)
        << ", \"at_stake_ns\": " << a.at_stake_ns << ", \"at_stake_share\": " << number(stake_share(a))
        << ", \"evidence\": ";
      json_evidence(a.evidence, o);
      o << "}";
    }
    o << "], \"run_ns\": " << verdict_.run_ns << ", \"advice_left_out\": [";
    for (size_t i = 0; i < verdict_.left_out.size(); ++i) {
      const auto& a = verdict_.left_out[i];
      o << (i ? ", " : "") << "{\"rule\": " << quoted(a.rule) << ", \"at_stake_ns\": " << a.at_stake_ns
        << ", \"at_stake_share\": " << number(stake_share(a)) << "}";
    }
    o << "]}";
  }

 private:
  double stake_share(const Verdict::Advice& a) const { return share(a.at_stake_ns, verdict_.run_ns); }
  // "1.2 s at stake (8%)": of the loop or the job (Verdict::run_ns).
  std::string at_stake(const Verdict::Advice& a) const {
    return duration(a.at_stake_ns) + " at stake (" + pct(stake_share(a)) + ")";
  }
  Verdict verdict_;
};

}  // namespace

Verdict make_verdict(const Job& job, const std::map<int64_t, VerdictProc>& procs,
                     const std::map<std::string, int64_t>& epoch_read_ns, const AnalyzeOptions& o,
                     const std::vector<LoopPath>& paths) {
  int64_t main_pid = -1, most = -1;
  for (const auto& [pid, p] : procs)
    if (p.loader_waits && p.loader_wait_ns > most) {
      most = p.loader_wait_ns;
      main_pid = pid;
    }
  const DataFiles files = data_files(job);
  Verdict v = main_pid >= 0 && procs.at(main_pid).loop_last > procs.at(main_pid).loop_first
                  ? loop_verdict(job, procs, epoch_read_ns, main_pid, o, epochs_of(paths, main_pid))
                  : process_verdict(job, procs, files, o);
  std::vector<Verdict::Advice> first = std::move(v.advice);
  v.advice.clear();
  file_rules(files, v);
  request_size_rule(files, v.bottleneck, v);
  v.advice.insert(v.advice.begin(), first.begin(), first.end());
  // A rule can hold on a job where following it would save next to nothing
  // (200 small files read in 2 ms of a 1 s run): such advice is left out.
  std::vector<Verdict::Advice> kept;
  for (auto& a : v.advice)
    (static_cast<double>(a.at_stake_ns) >= kAtStakeShareMin * static_cast<double>(v.run_ns) ? kept : v.left_out)
        .push_back(std::move(a));
  v.advice = std::move(kept);
  return v;
}

std::unique_ptr<Pass> make_verdict_pass(const AnalyzeOptions&) { return std::make_unique<VerdictPass>(); }

}  // namespace strata::analysis
