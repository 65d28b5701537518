// Analyses as passes. Every analysis strata runs on a trace has one shape:
//
//   1. consume the events of one unit (a process file of a strata trace, a
//      .pfw file) into a PassState              -- event passes only
//   2. merge the states of units, in unit order   -- anywhere: threads, Dask
//   3. finish: derive figures from the merged states of this and earlier passes
//   4. render text, JSON and HTML sections
//
// A PassState can be saved to bytes and loaded elsewhere, so step 1 runs on
// one machine and step 2 on another (strata.dask runs these same passes on
// a cluster and gets the same report). Passes run in the order of
// make_passes(); a pass may read the results of the passes before it through
// Analysis. Adding a pass is: write the class, add it to make_passes(); no
// other pass changes. See docs/architecture.md, "How to add a pass".
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/aggregate.h"
#include "analysis/analyze.h"
#include "analysis/model.h"

namespace strata::analysis {

// One pass's results for a run of consecutive units.
class PassState : public UnitConsumer {
 public:
  // Appends the results of `later` (the same pass, the units right after
  // this state's). Merging is associative, so any tree of merges in unit
  // order gives the same result.
  virtual void merge(PassState& later) = 0;
  virtual std::string save() const = 0;
  virtual void load(std::string_view bytes) = 0;  // throws std::runtime_error on corrupt bytes
};

class Analysis;

// Where a pass writes its JSON keys: each key goes into the report's one
// top-level object ("key": value), in pass order.
class JsonSection {
 public:
  explicit JsonSection(std::ostream& out) : out_(out) {}
  std::ostream& key(std::string_view k) {
    out_ << ",\n \"" << k << "\": ";
    return out_;
  }
  // For sections that write their own `,\n "key": value` (report_sections.h).
  std::ostream& stream() { return out_; }

 private:
  std::ostream& out_;
};

class Pass {
 public:
  virtual ~Pass() = default;
  virtual const char* name() const = 0;
  // Event passes return a fresh state for one unit; derived passes nullptr.
  virtual std::unique_ptr<PassState> new_state() const { return nullptr; }
  // After all units are merged; `state` is this pass's merged state (or
  // nullptr for a derived pass).
  virtual void finish(Analysis& /*a*/, PassState* /*state*/) {}
  virtual void text(const Analysis& /*a*/, std::ostream& /*out*/) const {}
  virtual void json(const Analysis& /*a*/, JsonSection& /*out*/) const {}
  // Rendered right after the header (the first pass) whatever its place in
  // the pass order: a summary that reads the results of later passes (the verdict).
  virtual bool leads_report() const { return false; }
};

// The passes of `strata analyze`, in order, configured by the options.
std::vector<std::unique_ptr<Pass>> make_passes(const AnalyzeOptions& o);
// The order their sections are rendered in: the first pass (the header),
// the passes that lead the report, then the others in pass order.
std::vector<const Pass*> report_order(const std::vector<std::unique_ptr<Pass>>& passes);
// Their names (what --section takes), in report order.
std::vector<std::string> pass_names(const AnalyzeOptions& o);

// The merged states of every event pass of one set of units, as one value
// that can travel (save/load) and merge.
class UnitStates {
 public:
  explicit UnitStates(const std::vector<std::unique_ptr<Pass>>& passes);
  // Streams unit `i` of `src` into a fresh state per event pass.
  void consume(Source& src, size_t i);
  void merge(UnitStates& later);
  std::string save() const;
  void load(std::string_view bytes);  // throws InputError on corrupt bytes
  PassState* state(size_t pass_index) const { return states_[pass_index].get(); }

 private:
  std::vector<std::unique_ptr<PassState>> states_;  // per pass; nullptr for derived passes
  std::vector<std::string> names_;
};

// A finished analysis: the options, the passes with their merged states,
// and the job-wide facts of the "io" pass that most passes read.
class Analysis {
 public:
  Analysis(const AnalyzeOptions& o, std::vector<std::unique_ptr<Pass>> passes, UnitStates states);
  const AnalyzeOptions& opts() const { return opts_; }
  const Job& job() const { return *job_; }
  // The pass called `name` (nullptr if it is not part of this analysis).
  template <class P>
  const P* pass(std::string_view name) const {
    for (auto& p : passes_)
      if (name == p->name()) return dynamic_cast<const P*>(p.get());
    return nullptr;
  }
  void write_text(std::ostream& out) const;
  void write_json(std::ostream& out) const;
  // One JSON object with the keys of the named passes only (the HTML page's data).
  void write_json_of(const std::vector<std::string>& pass_names, std::ostream& out) const;
  // The self-contained HTML page (report_html.cc); false with a message on err.
  bool write_html(std::ostream& out, std::ostream& err) const;

 private:
  AnalyzeOptions opts_;
  std::vector<std::unique_ptr<Pass>> passes_;
  UnitStates states_;
  const Job* job_ = nullptr;
};

// Runs every pass over the input named by o.input on o.threads threads.
// Throws InputError.
Analysis run_passes(const AnalyzeOptions& o);

// The pieces strata.dask runs on workers: the states of one unit, saved;
// the merge of two saved states; the report from a saved merged state.
std::vector<std::string> list_units(const std::string& input);
std::string analyze_unit_bytes(const AnalyzeOptions& o, size_t unit);
std::string merge_bytes(const AnalyzeOptions& o, std::string_view first, std::string_view later);
// Throws InputError when o.by names a tag that no event carries, as
// `strata analyze --by` refuses it.
std::string report_from_bytes(const AnalyzeOptions& o, std::string_view merged, bool json);

// What to tell the user when the analysis has --by KEY and no event carries
// KEY (the keys the trace has instead), or "" (analyze.cc).
std::string by_key_error(const Analysis& a);

}  // namespace strata::analysis
