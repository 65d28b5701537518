#include "analysis/structure_pass.h"

#include <cstdio>
#include <stdexcept>

#include "analysis/report_sections.h"
#include "efg/builder.h"
#include "efg/report.h"
#include "format/json_escape.h"

namespace strata::analysis {

namespace {

// One unit's (or a merged run of units') efg::Builder as a pass state.
class GraphState final : public PassState {
 public:
  void begin(const std::string& unit, const Tables* t, bool sizes_known) override {
    builder_.begin(unit, t, sizes_known);
  }
  void process(const ProcessMeta& m) override { builder_.process(m); }
  void events(std::span<const IoEvent> batch) override { builder_.events(batch); }
  void event(const IoEvent& e) override { builder_.event(e); }
  void end() override { builder_.end(); }
  void merge(PassState& later) override { builder_.merge(static_cast<GraphState&>(later).builder_); }
  std::string save() const override { return builder_.to_bytes(); }
  void load(std::string_view bytes) override { builder_ = efg::Builder::from_bytes(std::string(bytes)); }
  const efg::Builder& builder() const { return builder_; }

 private:
  efg::Builder builder_;
};

// Process groups shown in the text before "... more" (all with --all); the JSON has all.
constexpr size_t kTextGroups = 1;

std::string group_label(const efg::ProcessGroup& pg) {
  std::string s = "pid " + std::to_string(pg.pids.front());
  if (pg.pids.size() > 1) s += " (+" + std::to_string(pg.pids.size() - 1) + " same)";
  return s;
}

std::string trips(const efg::Loop& l, uint64_t n) { return l.trips_known ? std::to_string(n) : "null"; }

std::string main_line(const efg::ProcessGroup& pg) {
  return pg.loops.main_loop < 0 ? std::string() : efg::loop_line(pg.graph, pg.loops, pg.loops.main_loop);
}

class StructurePass : public Pass {
 public:
  const char* name() const override { return "structure"; }
  std::unique_ptr<PassState> new_state() const override { return std::make_unique<GraphState>(); }
  void finish(Analysis&, PassState* s) override { report_ = efg::make_report(static_cast<GraphState*>(s)->builder()); }

  // The busiest distinct process graph's main loop (every graph with --all);
  // the loop's time share is in the JSON.
  void text(const Analysis& a, std::ostream& out) const override {
    if (report_.groups.empty()) return;
    const size_t shown = a.opts().all ? report_.groups.size() : std::min(report_.groups.size(), kTextGroups);
    out << "Structure (strata efg):"
        << (shown > 1 ? "\n" : " ");
    for (size_t i = 0; i < shown; ++i) {
      const efg::ProcessGroup& pg = report_.groups[i];
      std::string line = main_line(pg);
      if (shown > 1) out << "  ";
      if (line.empty()) {
        out << "no loops in " << group_label(pg) << "\n";
        continue;
      }
      const efg::Loop& m = pg.loops.loops[pg.loops.main_loop];
      std::string text = std::string("main loop of ") + group_label(pg);
      if (m.entries > 1) text += ", entered " + std::to_string(m.entries) + "x";
      text += ": " + line;
      // One screen line by default; --all and the JSON have the whole loop.
      if (!a.opts().all) text = clip_words(text, kTextColumns - (shown > 1 ? 2 : 24));
      out << text << "\n";
    }
    if (report_.groups.size() > shown && a.opts().all)
      out << "  ... and " << report_.groups.size() - shown << " more distinct process graphs\n";
  }

  void json(const Analysis&, JsonSection& out) const override {
    std::string o = "[";
    for (size_t i = 0; i < report_.groups.size(); ++i) {
      const efg::ProcessGroup& pg = report_.groups[i];
      if (i) o += ",";
      o += "{\"pids\":[";
      for (size_t p = 0; p < pg.pids.size(); ++p) o += (p ? "," : "") + std::to_string(pg.pids[p]);
      o += "],\"exe\":" + json::quoted(pg.exe) + ",\"events\":" + std::to_string(pg.graph.events) +
           ",\"nodes\":" + std::to_string(pg.graph.nodes.size() - 1) + ",\"edges\":" +
           std::to_string(pg.graph.edges.size()) + ",\"main_loop\":";
      if (pg.loops.main_loop < 0) {
        o += "null";
      } else {
        const efg::Loop& m = pg.loops.loops[pg.loops.main_loop];
        char share[32];
        std::snprintf(share, sizeof share, "%.6f", m.time_share);
        o += "{\"structure\":" + json::quoted(main_line(pg)) +
             ",\"header\":" + json::quoted(efg::signature_label(pg.graph.nodes[m.header].sig)) +
             ",\"entries\":" + std::to_string(m.entries) + ",\"iterations\":" + std::to_string(m.iterations) +
             ",\"trips_min\":" + trips(m, m.trips_min) + ",\"trips_max\":" + trips(m, m.trips_max) +
             ",\"time_share\":" + share + "}";
      }
      o += ",\"structure\":" + json::quoted(pg.loops.loops.empty() ? std::string() : efg::structure_line(pg.graph, pg.loops)) + "}";
    }
    o += "]";
    out.key("structure") << o;
  }

 private:
  efg::Report report_;
};

}  // namespace

std::unique_ptr<Pass> make_structure_pass(const AnalyzeOptions&) { return std::make_unique<StructurePass>(); }

}  // namespace strata::analysis
