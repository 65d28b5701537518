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

namespace {

class ModesState : public PassState {
 public:
  void begin(const std::string&, const Tables* t, bool) override { tables_ = t; }
  void process(const ProcessMeta&) override {}
  void event(const IoEvent& e) override {
    if (e.func >= is_mode_.size()) is_mode_.resize(tables_->funcs.size(), -1);
    if (is_mode_[e.func] < 0) {
      const FuncInfo& f = tables_->funcs[e.func];
      is_mode_[e.func] = f.layer == Layer::kProc && f.name == "mode" ? 1 : 0;
    }
    if (is_mode_[e.func] && e.ret >= 0 && e.ret < static_cast<int64_t>(format::kNumLiveModes))
      switches_[e.pid].push_back({e.ts, e.ret});
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
  }
  std::string save() const override {
    serial::Writer w;
    auto copy = switches_;
    w(copy);
    return w.take();
  }
  void load(std::string_view bytes) override {
    serial::Reader r(bytes.data(), bytes.size());
    r(switches_);
  }
  std::map<int64_t, std::vector<ModeSwitch>>& switches() { return switches_; }

 private:
  const Tables* tables_ = nullptr;
  std::vector<int8_t> is_mode_;
  std::map<int64_t, std::vector<ModeSwitch>> switches_;
};

struct Interval {
  int64_t start = 0, end = 0, mode = 0;
};

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
      auto& out = intervals_[pid];
      for (size_t i = 0; i < v.size(); ++i) {
        const int64_t end = i + 1 < v.size() ? v[i + 1].ts : std::max(v[i].ts, last_ts[pid]);
        out.push_back({v[i].ts, end, v[i].mode});
        ns_by_mode_[v[i].mode] += end - v[i].ts;
      }
      switches_ += v.size() - 1;
    }
  }

  void text(const Analysis&, std::ostream& out) const override {
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
};

}  // namespace

std::unique_ptr<Pass> make_modes_pass(const AnalyzeOptions&) { return std::make_unique<ModesPass>(); }

}  // namespace strata::analysis
