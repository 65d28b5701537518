#include "analysis/modes_pass.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "analysis/serial.h"
#include "format/live.h"

namespace strata::analysis {

struct ModeSwitch {
  int64_t ts = 0;
  int64_t mode = 0;  // format::LiveMode
};
template <class Ar>
void fields(Ar& ar, ModeSwitch& x) {
  ar(x.ts, x.mode);
}

// A PROC "iteration" event of smart mode (docs/live.md): the start of one
// iteration of the thread's main loop.
struct IterationMark {
  int64_t ts = 0;
  int64_t index = 0;
  int64_t full = 0;  // 1: the iteration's events are in the trace
};
template <class Ar>
void fields(Ar& ar, IterationMark& x) {
  ar(x.ts, x.index, x.full);
}
// pid, (tid, loop id): a thread's marks per main loop it settled on.
using ThreadKey = std::pair<int64_t, std::pair<int64_t, int64_t>>;

namespace {

class ModesState final : public PassState {
 public:
  void begin(const std::string&, const Tables* t, bool) override { tables_ = t; }
  void process(const ProcessMeta&) override {}
  // One virtual call per batch; the loop inlines the event's work (a call
  // per event cost a prologue and epilogue as long as the cheap cases).
  void events(std::span<const IoEvent> batch) override {
    for (const IoEvent& e : batch) on_event(e);
  }
  void event(const IoEvent& e) override { on_event(e); }
  [[gnu::always_inline]] void on_event(const IoEvent& e) {
    if (e.func >= is_mode_.size()) is_mode_.resize(tables_->funcs.size(), -1);
    if (is_mode_[e.func] < 0) {
      const FuncInfo& f = tables_->funcs[e.func];
      is_mode_[e.func] = f.layer != Layer::kProc ? 0 : f.name == "mode" ? 1 : f.name == "iteration" ? 2 : 0;
    }
    if (is_mode_[e.func] == 1 && e.ret >= 0 && e.ret < static_cast<int64_t>(format::kNumLiveModes))
      switches_[e.pid].push_back({e.ts, e.ret});
    else if (is_mode_[e.func] == 2)
      iterations_[{e.pid, {e.tid, e.ret}}].push_back({e.ts, e.offset, e.size == 1 ? 1 : 0});
  }
  void end() override {
    tables_ = nullptr;
    is_mode_.clear();
  }
  void merge(PassState& later) override {
    for (auto& [pid, v] : static_cast<ModesState&>(later).switches_) {
      auto& mine = switches_[pid];
      mine.insert(mine.end(), v.begin(), v.end());
    }
    for (auto& [key, v] : static_cast<ModesState&>(later).iterations_) {
      auto& mine = iterations_[key];
      mine.insert(mine.end(), v.begin(), v.end());
    }
  }
  std::string save() const override {
    return serial::save(switches_, iterations_);
  }
  void load(std::string_view bytes) override {
    serial::load(bytes, switches_, iterations_);
  }
  std::map<int64_t, std::vector<ModeSwitch>>& switches() { return switches_; }
  std::map<ThreadKey, std::vector<IterationMark>>& iterations() { return iterations_; }

 private:
  const Tables* tables_ = nullptr;
  std::vector<int8_t> is_mode_;
  std::map<int64_t, std::vector<ModeSwitch>> switches_;
  std::map<ThreadKey, std::vector<IterationMark>> iterations_;
};

struct Interval {
  int64_t start = 0, end = 0, mode = 0;
};

// One thread's main-loop iterations under smart mode: times between
// consecutive `iteration` events, and which iterations are in full.
struct IterationStats {
  ThreadKey thread;
  int64_t marks = 0, first = 0, last = 0;
  int64_t timed = 0, sum_ns = 0, min_ns = 0, max_ns = 0;
  std::vector<std::pair<int64_t, int64_t>> full;  // ranges of indices, inclusive

  double mean_ns() const { return timed ? static_cast<double>(sum_ns) / static_cast<double>(timed) : 0.0; }
};

IterationStats iteration_stats(const ThreadKey& thread, std::vector<IterationMark>& v) {
  std::stable_sort(v.begin(), v.end(), [](const IterationMark& x, const IterationMark& y) { return x.ts < y.ts; });
  IterationStats st;
  st.thread = thread;
  st.marks = static_cast<int64_t>(v.size());
  st.first = v.front().index;
  st.last = v.back().index;
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i].full) {
      if (!st.full.empty() && st.full.back().second + 1 == v[i].index) st.full.back().second = v[i].index;
      else st.full.emplace_back(v[i].index, v[i].index);
    }
    if (i + 1 == v.size() || v[i + 1].index != v[i].index + 1) continue;
    const int64_t d = v[i + 1].ts - v[i].ts;
    if (st.timed == 0 || d < st.min_ns) st.min_ns = d;
    if (st.timed == 0 || d > st.max_ns) st.max_ns = d;
    st.sum_ns += d;
    ++st.timed;
  }
  return st;
}

std::string millis(double ns) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3f ms", ns / 1e6);
  return b;
}

std::string ranges_text(const std::vector<std::pair<int64_t, int64_t>>& r) {
  std::string out;
  for (const auto& [a, b] : r) {
    if (!out.empty()) out += ", ";
    out += std::to_string(a);
    if (b != a) out += "-" + std::to_string(b);
  }
  return out.empty() ? "none" : out;
}

std::string seconds(int64_t ns) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f s", ns / 1e9);
  return b;
}

class ModesPass : public Pass {
 public:
  const char* name() const override { return "modes"; }
  std::unique_ptr<PassState> new_state() const override { return std::make_unique<ModesState>(); }

  // Each switch holds until the next one, the last until the process's last event.
  void finish(Analysis& a, PassState* s) override {
    std::map<int64_t, int64_t> last_ts;
    for (const ProcResult& p : a.job().procs) last_ts[p.meta.pid] = std::max(last_ts[p.meta.pid], p.last_ts);
    for (auto& [pid, v] : static_cast<ModesState*>(s)->switches()) {
      std::stable_sort(v.begin(), v.end(), [](const ModeSwitch& x, const ModeSwitch& y) { return x.ts < y.ts; });
      // A mode event repeating the mode in force (the runtime writes one at
      // the image's end, so profile-only images have a length) extends it.
      auto& out = intervals_[pid];
      for (const ModeSwitch& sw : v) {
        if (!out.empty() && out.back().mode == sw.mode) continue;
        if (!out.empty()) out.back().end = sw.ts;
        out.push_back({sw.ts, sw.ts, sw.mode});
      }
      if (out.empty()) continue;
      out.back().end = std::max(v.back().ts, last_ts[pid]);
      for (const Interval& iv : out) ns_by_mode_[iv.mode] += iv.end - iv.start;
      switches_ += out.size() - 1;
    }
    for (auto& [thread, v] : static_cast<ModesState*>(s)->iterations())
      if (!v.empty()) iterations_.push_back(iteration_stats(thread, v));
  }

  void text(const Analysis&, std::ostream& out) const override {
    modes_text(out);
    for (const IterationStats& st : iterations_) {
      out << "Smart collection, main loop of pid " << st.thread.first << " tid " << st.thread.second.first;
      if (st.thread.second.second > 0) out << " (loop " << st.thread.second.second << ")";
      out << ": "
          << st.marks << " iterations (" << st.first << ".." << st.last << "), " << st.timed
          << " timed: mean " << millis(st.mean_ns()) << ", min " << millis(static_cast<double>(st.min_ns))
          << ", max " << millis(static_cast<double>(st.max_ns)) << "; kept in full: " << ranges_text(st.full) << "\n";
    }
    // The report's event figures and its counters then cover different
    // calls: said once, as --live's coverage line says it for modes.
    if (!iterations_.empty())
      out << "  events (tables, timelines) cover the iterations kept in full; counters (--darshan) every call\n";
  }

  void modes_text(std::ostream& out) const {
    if (intervals_.empty()) return;
    int64_t total = 0;
    for (auto& [m, ns] : ns_by_mode_) total += ns;
    out << "Recording modes (strata run --live):";
    for (auto& [m, ns] : ns_by_mode_) out << " " << format::kLiveModeNames[m] << " " << seconds(ns) << ",";
    out << " " << intervals_.size() << (intervals_.size() == 1 ? " process, " : " processes, ") << switches_
        << (switches_ == 1 ? " switch" : " switches") << "\n";
    const int64_t traced = ns_or_0(2) + ns_or_0(3);
    out << "  events (timelines, structure) cover the " << seconds(traced) << " traced";
    if (total > 0) out << " (" << static_cast<int>(100.0 * traced / total + 0.5) << "% of process time)";
    out << "; counters cover every mode but off\n";
  }

  void json(const Analysis&, JsonSection& out) const override {
    std::string o = "{\"traced_s\":" + std::to_string((ns_or_0(2) + ns_or_0(3)) / 1e9) + ",\"seconds_by_mode\":{";
    bool first = true;
    for (auto& [m, ns] : ns_by_mode_) {
      o += std::string(first ? "" : ",") + "\"" + format::kLiveModeNames[m] + "\":" + std::to_string(ns / 1e9);
      first = false;
    }
    o += "},\"processes\":[";
    first = true;
    for (auto& [pid, v] : intervals_) {
      o += std::string(first ? "" : ",") + "{\"pid\":" + std::to_string(pid) + ",\"intervals\":[";
      for (size_t i = 0; i < v.size(); ++i)
        o += std::string(i ? "," : "") + "{\"mode\":\"" + format::kLiveModeNames[v[i].mode] +
             "\",\"start_s\":" + std::to_string(v[i].start / 1e9) + ",\"end_s\":" + std::to_string(v[i].end / 1e9) + "}";
      o += "]}";
      first = false;
    }
    o += "],\"iterations\":[";
    for (size_t i = 0; i < iterations_.size(); ++i) {
      const IterationStats& st = iterations_[i];
      o += std::string(i ? "," : "") + "{\"pid\":" + std::to_string(st.thread.first) +
           ",\"tid\":" + std::to_string(st.thread.second.first) + ",\"loop\":" + std::to_string(st.thread.second.second) +
           ",\"events\":" + std::to_string(st.marks) +
           ",\"first\":" + std::to_string(st.first) + ",\"last\":" + std::to_string(st.last) +
           ",\"timed\":" + std::to_string(st.timed) + ",\"mean_s\":" + std::to_string(st.mean_ns() / 1e9) +
           ",\"min_s\":" + std::to_string(st.min_ns / 1e9) + ",\"max_s\":" + std::to_string(st.max_ns / 1e9) +
           ",\"full\":[";
      for (size_t j = 0; j < st.full.size(); ++j)
        o += std::string(j ? "," : "") + "[" + std::to_string(st.full[j].first) + "," + std::to_string(st.full[j].second) + "]";
      o += "]}";
    }
    out.key("modes") << o << "]}";
  }

 private:
  int64_t ns_or_0(int64_t mode) const {
    auto it = ns_by_mode_.find(mode);
    return it == ns_by_mode_.end() ? 0 : it->second;
  }
  std::map<int64_t, std::vector<Interval>> intervals_;
  std::map<int64_t, int64_t> ns_by_mode_;
  size_t switches_ = 0;
  std::vector<IterationStats> iterations_;
};

}  // namespace

std::unique_ptr<Pass> make_modes_pass(const AnalyzeOptions&) { return std::make_unique<ModesPass>(); }

}  // namespace strata::analysis
