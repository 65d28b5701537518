#include "analysis/timeline_pass.h"

#include <algorithm>
#include <cctype>

#include "analysis/serial.h"
#include "format/json_escape.h"
#include "strata/reader.h"

namespace strata::analysis {

template <class Ar>
void fields(Ar& ar, LaneColumns::Column& x) {
  ar(x.ns);
}
template <class Ar>
void fields(Ar& ar, LaneColumns& x) {
  ar(x.width, x.cols);
}
template <class Ar>
void fields(Ar& ar, TimelineProc& x) {
  ar(x.lanes, x.worker, x.loader, x.epoch_min, x.epoch_max, x.waits);
}

const char* timeline_lane_key(int lane) {
  static const char* const kKeys[kTimelineLanes] = {"io", "wait", "batch", "compute", "checkpoint"};
  return kKeys[lane];
}

void LaneColumns::widen(int64_t new_width) {
  if (new_width <= width) return;
  const size_t f = static_cast<size_t>(new_width / width);
  std::vector<Column> wide((cols.size() + f - 1) / f);
  for (size_t i = 0; i < cols.size(); ++i)
    for (int l = 0; l < kTimelineLanes; ++l) wide[i / f].ns[l] += cols[i].ns[l];
  cols.swap(wide);
  width = new_width;
}

void LaneColumns::add_slow(int lane, int64_t ts, int64_t dur) {
  ts = std::max<int64_t>(0, ts);
  dur = std::max<int64_t>(0, dur);
  const int64_t end = ts + dur;
  if (static_cast<size_t>(end / width) >= kMaxColumns) {
    int64_t w = width;
    while (static_cast<size_t>(end / w) >= kMaxColumns) w *= 2;
    widen(w);
  }
  const size_t last = static_cast<size_t>(end / width);
  if (last >= cols.size()) cols.resize(last + 1);
  // Split the call over the columns it spans, so a 2 s wait colours 2 s.
  for (size_t c = static_cast<size_t>(ts / width); c <= last; ++c) {
    const int64_t from = std::max(ts, static_cast<int64_t>(c) * width);
    const int64_t to = std::min(end, static_cast<int64_t>(c + 1) * width);
    cols[c].ns[lane] += to - from;
  }
}

void LaneColumns::merge(const LaneColumns& o) {
  LaneColumns other = o;
  if (other.width > width) widen(other.width);
  if (width > other.width) other.widen(width);
  if (cols.size() < other.cols.size()) cols.resize(other.cols.size());
  for (size_t i = 0; i < other.cols.size(); ++i)
    for (int l = 0; l < kTimelineLanes; ++l) cols[i].ns[l] += other.cols[i].ns[l];
}

namespace {

void merge_proc(TimelineProc& a, const TimelineProc& b) {
  a.lanes.merge(b.lanes);
  if (a.worker < 0) a.worker = b.worker;
  if (a.loader < 0) a.loader = b.loader;
  a.epoch_min = std::min(a.epoch_min, b.epoch_min);
  a.epoch_max = std::max(a.epoch_max, b.epoch_max);
  a.waits += b.waits;
}

// The lane of an event, or -1 (PROC events, app events that are none of these).
int lane_of(const FuncInfo& f) {
  if (f.layer == Layer::kPosix || f.layer == Layer::kStdio) return kLaneIo;
  if (f.layer != Layer::kApp) return -1;
  if (f.is_loader_wait || f.name == "dataloader.iter") return kLaneWait;
  if (f.name == "dataloader.batch") return kLaneBatch;
  std::string cat = f.category;
  std::transform(cat.begin(), cat.end(), cat.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (cat == "checkpoint") return kLaneCheckpoint;
  if (f.is_compute) return kLaneCompute;
  return -1;
}

// Tags that name a process, per context id.
struct CtxNames {
  bool known = false;
  int64_t worker = -1, loader = -1, epoch = INT64_MIN;
};

class TimelineState final : public PassState {
 public:
  // record_lanes: only the HTML page draws the lanes; the names and kinds of
  // the processes (text and JSON) need the tags alone.
  explicit TimelineState(bool record_lanes) : record_lanes_(record_lanes) {}
  void begin(const std::string&, const Tables* t, bool) override {
    tables_ = t;
    lanes_.clear();
    ctx_.clear();
    last_pid_ = INT64_MIN;  // context ids are per unit
  }
  void process(const ProcessMeta& m) override { (void)procs_[m.pid]; }
  // One virtual call per batch; the body inlined into the loop.
  void events(std::span<const IoEvent> batch) override {
    for (const IoEvent& e : batch) on_event(e);
  }
  void event(const IoEvent& e) override { on_event(e); }
  [[gnu::always_inline]] void on_event(const IoEvent& e) {
    if (e.func >= lanes_.size()) lanes_.resize(tables_->funcs.size(), -2);
    if (lanes_[e.func] == -2) lanes_[e.func] = static_cast<int8_t>(lane_of(tables_->funcs[e.func]));
    const int lane = lanes_[e.func];
    // A process's tags change with its context: most events repeat the last one's.
    if (e.pid != last_pid_ || e.ctx != last_ctx_) note_context(e.pid, e.ctx);
    TimelineProc& p = *last_;
    if (lane < 0) return;
    if (lane == kLaneBatch && last_loader_ >= 0) p.loader = last_loader_;
    if (lane == kLaneWait && tables_->funcs[e.func].is_loader_wait) ++p.waits;
    if (record_lanes_) p.lanes.add(lane, e.ts, e.dur);
  }
  void end() override { tables_ = nullptr; }
  void merge(PassState& later) override {
    for (auto& [pid, p] : static_cast<TimelineState&>(later).procs_) merge_proc(procs_[pid], p);
  }
  std::string save() const override {
    return serial::save(procs_);
  }
  void load(std::string_view bytes) override {
    serial::load(bytes, procs_);
  }
  std::map<int64_t, TimelineProc>& procs() { return procs_; }

 private:
  const CtxNames& names(uint32_t ctx) {
    if (ctx >= ctx_.size()) ctx_.resize(ctx_slots(tables_, ctx));
    CtxNames& c = ctx_[ctx];
    if (c.known) return c;
    c.known = true;
    if (!tables_ || ctx >= tables_->ctxs.size()) return c;
    for (const CtxTag& t : tables_->ctxs[ctx]) {
      if (!t.is_int) continue;
      if (t.key == std::string_view("worker")) c.worker = t.int_value;
      if (t.key == std::string_view("loader")) c.loader = t.int_value;
      if (t.key == std::string_view("epoch")) c.epoch = t.int_value;
    }
    return c;
  }
  void note_context(int64_t pid, uint32_t ctx) {
    if (pid != last_pid_) last_ = &procs_[pid];
    last_pid_ = pid;
    last_ctx_ = ctx;
    const CtxNames& c = names(ctx);
    TimelineProc& p = *last_;
    if (c.worker >= 0) p.worker = c.worker;
    if (c.epoch != INT64_MIN) {
      p.epoch_min = std::min(p.epoch_min, c.epoch);
      p.epoch_max = std::max(p.epoch_max, c.epoch);
    }
    last_loader_ = c.loader;
  }

  const bool record_lanes_;
  const Tables* tables_ = nullptr;
  std::vector<int8_t> lanes_;  // per func id; -2 not yet known
  std::vector<CtxNames> ctx_;
  std::map<int64_t, TimelineProc> procs_;
  TimelineProc* last_ = nullptr;  // procs_[last_pid_]
  int64_t last_pid_ = INT64_MIN;
  uint32_t last_ctx_ = 0;
  int64_t last_loader_ = -1;  // `loader` tag of last_ctx_
};

class TimelinePass : public Pass {
 public:
  explicit TimelinePass(bool record_lanes) : record_lanes_(record_lanes) {}
  const char* name() const override { return "timeline"; }
  std::unique_ptr<PassState> new_state() const override { return std::make_unique<TimelineState>(record_lanes_); }
  void finish(Analysis&, PassState* s) override {
    procs_ = std::move(static_cast<TimelineState*>(s)->procs());
    int64_t width = 1;
    for (auto& [pid, p] : procs_) width = std::max(width, p.lanes.width);
    for (auto& [pid, p] : procs_) p.lanes.widen(width);  // one column width for the job
  }
  const std::map<int64_t, TimelineProc>& procs() const { return procs_; }
  // The names the HTML report uses, for scripts: "process_names": {"pid": "name", ...}.
  void json(const Analysis& a, JsonSection& out) const override {
    std::ostream& o = out.key("process_names");
    o << "{";
    bool first = true;
    for (const auto& [pid, name] : process_names(a)) {
      o << (first ? "\"" : ",\"") << pid << "\":" << json::quoted(name);
      first = false;
    }
    o << "}";
  }

 private:
  const bool record_lanes_;
  std::map<int64_t, TimelineProc> procs_;
};


std::string rank_suffix(int64_t rank) { return rank >= 0 ? "rank " + std::to_string(rank) : ""; }

// "train" or "validation" when the files a loader's workers read are mostly
// of that role; else "loader N".
std::map<int64_t, std::string> loader_names(const Job& job, const std::map<int64_t, TimelineProc>& procs) {
  std::map<int64_t, std::string> names;
  // Most jobs have no loader: then no walk over what may be millions of files.
  if (std::none_of(procs.begin(), procs.end(), [](const auto& p) { return p.second.loader >= 0; })) return names;
  std::map<int64_t, std::map<std::string, int64_t>> bytes;  // loader -> role -> bytes read
  for (const FileAgg& f : job.files) {
    if (f.bytes_read <= 0) continue;
    const Role r = file_role(f, job);
    if (r != Role::kTrainData && r != Role::kValData) continue;
    for (const FileProcRef fp : f.procs()) {
      auto it = procs.find(fp.pid);
      if (it != procs.end() && it->second.loader >= 0)
        bytes[it->second.loader][r == Role::kTrainData ? "train" : "validation"] += fp.pf.bytes_read;
    }
  }
  for (const auto& [pid, p] : procs) {
    if (p.loader < 0 || names.count(p.loader)) continue;
    std::string best = "loader " + std::to_string(p.loader);
    int64_t most = 0;
    for (const auto& [role, n] : bytes[p.loader])
      if (n > most) most = n, best = role;
    names[p.loader] = best;
  }
  return names;
}

}  // namespace

const std::map<int64_t, TimelineProc>* timeline_procs(const Analysis& a) {
  const TimelinePass* p = a.pass<TimelinePass>("timeline");
  return p ? &p->procs() : nullptr;
}

namespace {

struct ProcessLabel {
  std::string name;  // "DataLoader worker 1 (train, epoch 2)"
  std::string kind;  // "DataLoader workers (train)"
};

// Labels per pid; a pid's later exec image wins, as in the JSON.
std::map<int64_t, ProcessLabel> process_labels(const Analysis& a) {
  static const std::map<int64_t, TimelineProc> kNone;
  const auto* tp = timeline_procs(a);
  const auto& procs = tp ? *tp : kNone;
  const auto loaders = loader_names(a.job(), procs);
  std::map<int64_t, ProcessLabel> labels;
  for (const ProcResult& r : a.job().procs) {
    auto it = procs.find(r.meta.pid);
    const TimelineProc* p = it == procs.end() ? nullptr : &it->second;
    std::vector<std::string> detail;
    ProcessLabel l;
    if (p && p->worker >= 0) {
      l.name = "DataLoader worker " + std::to_string(p->worker);
      l.kind = "DataLoader workers";
      if (p->loader >= 0) {
        detail.push_back(loaders.at(p->loader));
        l.kind += " (" + loaders.at(p->loader) + ")";
      }
      if (p->epoch_min == p->epoch_max) detail.push_back("epoch " + std::to_string(p->epoch_min));
      else if (p->epoch_min < p->epoch_max)
        detail.push_back("epochs " + std::to_string(p->epoch_min) + "-" + std::to_string(p->epoch_max));
    } else {
      l.name = p && p->waits > 0 ? "training loop" : reader::program_label(r.meta.cmdline.empty() ? r.meta.exe : r.meta.cmdline);
      l.kind = l.name;
    }
    if (r.meta.rank >= 0) detail.push_back(rank_suffix(r.meta.rank));
    for (size_t i = 0; i < detail.size(); ++i) l.name += (i ? ", " : " (") + detail[i] + (i + 1 == detail.size() ? ")" : "");
    labels[r.meta.pid] = l;
  }
  return labels;
}

}  // namespace

std::map<int64_t, std::string> process_names(const Analysis& a, bool unique) {
  std::map<int64_t, std::string> names;
  std::map<std::string, int> uses;
  for (const auto& [pid, l] : process_labels(a)) ++uses[names[pid] = l.name];
  // Two processes never share a name: the pid tells apart what the rest cannot.
  for (auto& [pid, name] : names)
    if (unique && uses[name] > 1) name += " [pid " + std::to_string(pid) + "]";
  return names;
}

std::map<int64_t, std::string> process_kinds(const Analysis& a) {
  std::map<int64_t, std::string> kinds;
  for (const auto& [pid, l] : process_labels(a)) kinds[pid] = l.kind;
  return kinds;
}

std::unique_ptr<Pass> make_timeline_pass(const AnalyzeOptions& o) { return std::make_unique<TimelinePass>(!o.html.empty()); }

}  // namespace strata::analysis
