// The passes of `strata analyze` and the machinery that runs them (pass.h).
#include <algorithm>
#include <atomic>
#include <mutex>
#include <sstream>
#include <thread>

#include "analysis/open_source.h"
#include "analysis/pass.h"
#include "analysis/critical_path.h"
#include "analysis/fan_out.h"
#include "analysis/modes_pass.h"
#include "analysis/report_sections.h"
#include "analysis/serial.h"
#include "analysis/structure_pass.h"
#include "analysis/timeline_pass.h"
#include "analysis/verdict.h"

namespace strata::analysis {

namespace {

// ---- io: the event pass every report section reads -----------------------------
// Per process: time unions (I/O, compute, both: the overlap), bins over time,
// Darshan POSIX/STDIO records (the counter engine); per function, per file,
// per (process, file), per tag value. One pass, because these figures share
// per-event work (bytes, failure, the access offset the counter engine
// tracks for calls that carry none).

class JobState final : public PassState {
 public:
  explicit JobState(const AggConfig& cfg) : agg_(cfg) {}
  void begin(const std::string& unit, const Tables* t, bool sizes_known) override {
    flush();
    agg_.begin(unit, t, sizes_known);
  }
  void process(const ProcessMeta& m) override { agg_.process(m); }
  void event(const IoEvent& e) override { agg_.event(e); }
  void events(std::span<const IoEvent> batch) override { agg_.events(batch); }
  void profile(int64_t pid, const std::vector<counters::PosixRecord>& posix,
               const std::vector<counters::StdioRecord>& stdio) override {
    agg_.profile(pid, posix, stdio);
  }
  void warning(const std::string& w) override { agg_.warning(w); }
  void approximate(const std::string& f) override { agg_.approximate(f); }
  // The unit's paths are resolved here, while the source's tables are alive;
  // its files become the job's (a sort of millions of files, on some jobs)
  // in finish_unit(), which UnitStates::consume calls once the source has
  // freed the unit's reader and its dictionary (a string per path), on the
  // unit's own thread; any other use of the state finishes it first too.
  void end() override {
    agg_.end();
    pending_ = true;
  }
  void merge(PassState& later) override {
    flush();
    auto& l = static_cast<JobState&>(later);
    l.flush();
    merge_jobs(job_, l.job_);
  }
  std::string save() const override {
    const_cast<JobState*>(this)->flush();
    return save_job(job_);
  }
  void load(std::string_view bytes) override {
    flush();
    load_job(bytes, job_);
  }
  Job& job() {
    flush();
    return job_;
  }
  void finish_unit() { flush(); }

 private:
  void flush() {
    if (!pending_) return;
    pending_ = false;
    Job unit;
    agg_.merge_into(unit);
    merge_jobs(job_, unit);
  }
  UnitAgg agg_;
  Job job_;
  bool pending_ = false;  // a unit ended, not yet merged into job_
};

// Job-wide notes that need the merged job (they depend on every unit).
void finish_job(Job& job) {
  if (!job.data_files.known) {
    index_data_files(job);
    index_file_verdicts(job);
  }
  if (job.finished) return;
  job.finished = true;
  if (!job.sizes_known)
    job.warnings.push_back(
        "sizes unknown: the DFTracer trace has no arguments (DFTRACER_INC_METADATA was off); "
        "counts and times are exact, bytes, offsets and sizes are not recorded");
  uint64_t clipped = 0;
  for (auto& p : job.procs) clipped += p.clipped;
  if (clipped)
    job.warnings.push_back(std::to_string(clipped) +
                           " intervals reached back past the bounded interval window; unions are lower bounds");
}

class IoPass : public Pass {
 public:
  explicit IoPass(const AnalyzeOptions& o) {
    cfg_.by_key = o.by;
  }
  const char* name() const override { return "io"; }
  std::unique_ptr<PassState> new_state() const override { return std::make_unique<JobState>(cfg_); }
  void finish(Analysis&, PassState* s) override { finish_job(static_cast<JobState*>(s)->job()); }
  void text(const Analysis& a, std::ostream& out) const override { text_header(a.job(), a.opts(), out); }

 private:
  AggConfig cfg_;
};

// ---- derived passes: figures and sections from the merged job ------------------
// Each renders what it owns; the function names say which section.

using Section = void (*)(const Job&, const AnalyzeOptions&, std::ostream&);

class SectionPass : public Pass {
 public:
  SectionPass(const char* name, Section text, std::vector<Section> json)
      : name_(name), text_(text), json_(std::move(json)) {}
  const char* name() const override { return name_; }
  void text(const Analysis& a, std::ostream& out) const override {
    if (text_) text_(a.job(), a.opts(), out);
  }
  void json(const Analysis& a, JsonSection& out) const override {
    for (Section s : json_) s(a.job(), a.opts(), out.stream());
  }

 private:
  const char* name_;
  Section text_;
  std::vector<Section> json_;
};

// The job summary names its processes from what the timeline pass learned
// (DataLoader workers, the training loop).
class JobSummaryPass : public SectionPass {
 public:
  JobSummaryPass() : SectionPass("overlap", nullptr, {json_summary}) {}
  void text(const Analysis& a, std::ostream& out) const override {
    text_summary(a.job(), a.opts(), {process_names(a, false), process_kinds(a)}, out);
  }
};

}  // namespace

std::vector<std::unique_ptr<Pass>> make_passes(const AnalyzeOptions& o) {
  std::vector<std::unique_ptr<Pass>> v;
  v.push_back(std::make_unique<IoPass>(o));
  v.push_back(make_modes_pass(o));    // under --live: which intervals were traced in full
  // Deep-learning summary: epochs, loader wait, data set vs checkpoint files.
  v.push_back(std::make_unique<SectionPass>("dl", text_dl, std::vector<Section>{}));
  v.push_back(make_critical_path_pass(o));  // the loop's wait vs compute, and what the workers did meanwhile
  v.push_back(make_verdict_pass(o));  // what bounds the job (reads the critical path); printed first
  // Job summary and per-process overlap of I/O and compute.
  v.push_back(std::make_unique<JobSummaryPass>());
  v.push_back(std::make_unique<SectionPass>("functions", text_functions, std::vector<Section>{json_functions}));
  v.push_back(make_structure_pass(o));  // the event flow graph's main loop per process (src/efg)
  // File roles (data set, checkpoint, ...), data set directories, I/O strategy.
  v.push_back(std::make_unique<SectionPass>("files", text_files, std::vector<Section>{json_files}));
  v.push_back(std::make_unique<SectionPass>("tags", text_tags, std::vector<Section>{json_tags}));
  v.push_back(std::make_unique<SectionPass>("datasets", nullptr, std::vector<Section>{json_dataset_dirs}));
  v.push_back(std::make_unique<SectionPass>("dl_json", nullptr, std::vector<Section>{json_dl}));
  // Darshan access-size histogram.
  v.push_back(std::make_unique<SectionPass>("sizes", text_sizes, std::vector<Section>{}));
  v.push_back(std::make_unique<SectionPass>("staging", text_staging, std::vector<Section>{json_staging}));
  v.push_back(make_timeline_pass(o));  // process names and kinds; the HTML timeline's lanes (only with --html)
  return v;
}

// ---- UnitStates -------------------------------------------------------------------------

UnitStates::UnitStates(const std::vector<std::unique_ptr<Pass>>& passes) {
  for (auto& p : passes) {
    states_.push_back(p->new_state());
    names_.push_back(p->name());
  }
}

void UnitStates::consume(Source& src, size_t i) {
  std::vector<PassState*> to;
  for (auto& s : states_)
    if (s) to.push_back(s.get());
  if (to.size() == 1) {
    src.read_unit(i, *to[0]);  // the common case: no fan-out call per event
  } else {
    FanOut f(to, src.unit_threads());
    src.read_unit(i, f);
  }
  if (auto* js = dynamic_cast<JobState*>(states_[0].get())) {
    js->finish_unit();  // here, not later under the merge's lock
    js->job().source_kind = src.kind();
  }
}

void UnitStates::merge(UnitStates& later) {
  for (size_t i = 0; i < states_.size(); ++i)
    if (states_[i]) states_[i]->merge(*later.states_[i]);
}

std::string UnitStates::save() const {
  std::vector<std::pair<std::string, std::string>> named;
  for (size_t i = 0; i < states_.size(); ++i)
    if (states_[i]) named.emplace_back(names_[i], states_[i]->save());
  return serial::save(named);
}

void UnitStates::load(std::string_view bytes) {
  try {
    std::vector<std::pair<std::string, std::string>> named;
    serial::load(bytes, named);
    size_t k = 0;
    for (size_t i = 0; i < states_.size(); ++i) {
      if (!states_[i]) continue;
      if (k >= named.size() || named[k].first != names_[i])
        throw std::runtime_error("its passes do not match this strata's (" +
                                 (k < named.size() ? named[k].first : std::string("missing")) + " for " + names_[i] + ")");
      states_[i]->load(named[k++].second);
    }
  } catch (const std::runtime_error& e) {
    throw InputError(std::string("analysis state: ") + e.what());
  }
}

// ---- Analysis -----------------------------------------------------------------------

Analysis::Analysis(const AnalyzeOptions& o, std::vector<std::unique_ptr<Pass>> passes, UnitStates states)
    : opts_(o), passes_(std::move(passes)), states_(std::move(states)) {
  auto* js = dynamic_cast<JobState*>(states_.state(0));
  if (!js) throw std::logic_error("the io pass must come first");
  job_ = &js->job();
  for (size_t i = 0; i < passes_.size(); ++i) passes_[i]->finish(*this, states_.state(i));
}

std::vector<const Pass*> report_order(const std::vector<std::unique_ptr<Pass>>& passes) {
  std::vector<const Pass*> order;
  for (size_t i = 0; i < passes.size(); ++i)
    if (i == 0 || passes[i]->leads_report()) order.push_back(passes[i].get());
  for (size_t i = 1; i < passes.size(); ++i)
    if (!passes[i]->leads_report()) order.push_back(passes[i].get());
  return order;
}

void Analysis::write_text(std::ostream& out) const {
  // --section NAME: the header (the io pass) and the named passes only.
  auto selected = [&](const Pass& p) {
    if (opts_.sections.empty() || std::string_view(p.name()) == "io") return true;
    return std::find(opts_.sections.begin(), opts_.sections.end(), p.name()) != opts_.sections.end();
  };
  std::ostringstream text;
  for (const Pass* p : report_order(passes_))
    if (selected(*p)) p->text(*this, text);
  out << fit_width(text.str(), kTextColumns);
}

std::vector<std::string> pass_names(const AnalyzeOptions& o) {
  std::vector<std::string> names;
  const auto passes = make_passes(o);
  for (const Pass* p : report_order(passes)) names.push_back(p->name());
  return names;
}

void Analysis::write_json(std::ostream& out) const {
  json_header(job(), opts_, out);
  JsonSection s(out);
  for (const Pass* p : report_order(passes_)) p->json(*this, s);
  out << "\n}\n";
}

void Analysis::write_json_of(const std::vector<std::string>& pass_names, std::ostream& out) const {
  out << "{\"passes\": " << pass_names.size();
  JsonSection s(out);
  for (const Pass* p : report_order(passes_))
    if (std::find(pass_names.begin(), pass_names.end(), p->name()) != pass_names.end()) p->json(*this, s);
  out << "\n}";
}

// A rendering of an already merged job (tests, tools).
static Analysis analysis_of(const Job& job, const AnalyzeOptions& o) {
  auto passes = make_passes(o);
  UnitStates st(passes);
  static_cast<JobState*>(st.state(0))->job() = job;
  return Analysis(o, std::move(passes), std::move(st));
}

void write_text(const Job& job, const AnalyzeOptions& o, std::ostream& out) { analysis_of(job, o).write_text(out); }
void write_json(const Job& job, const AnalyzeOptions& o, std::ostream& out) { analysis_of(job, o).write_json(out); }
bool write_html(const Job& job, const AnalyzeOptions& o, std::ostream& out, std::ostream& err) {
  return analysis_of(job, o).write_html(out, err);
}

Job analyze_job(const AnalyzeOptions& o) { return run_passes(o).job(); }

// ---- running the passes -----------------------------------------------------------

Analysis run_passes(const AnalyzeOptions& o) {
  std::unique_ptr<Source> src = open_source(o.input);
  auto passes = make_passes(o);
  const size_t nunits = src->units().size();
  unsigned nthreads = o.threads > 0 ? static_cast<unsigned>(o.threads)
                                    : std::max(1u, std::min(2u, std::thread::hardware_concurrency()));
  // Decoding one file's blocks ahead on other threads is asked for with -j
  // only: it costs more CPU per event (blocks leave the cache between the
  // decoding core and the reading one) and on a busy machine (a login node)
  // it made a one-file analysis slower, not faster (bench/README.md).
  src->set_threads(o.threads > 0 ? nthreads : 1);
  nthreads = static_cast<unsigned>(std::max<size_t>(1, std::min<size_t>(nthreads, nunits)));
  UnitStates merged(passes);
  std::atomic<size_t> next{0};
  std::mutex mu;
  std::string first_error;
  // Merge in unit order so that results do not depend on thread timing.
  std::vector<std::unique_ptr<UnitStates>> done(nunits);
  size_t nmerged = 0;
  auto worker = [&]() {
    while (true) {
      size_t i = next.fetch_add(1);
      if (i >= nunits) return;
      {
        std::lock_guard<std::mutex> lk(mu);
        if (!first_error.empty()) return;
      }
      auto st = std::make_unique<UnitStates>(passes);
      try {
        st->consume(*src, i);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lk(mu);
        if (first_error.empty()) first_error = e.what();
        return;
      }
      std::lock_guard<std::mutex> lk(mu);
      done[i] = std::move(st);
      while (nmerged < nunits && done[nmerged]) {
        merged.merge(*done[nmerged]);
        done[nmerged].reset();
        ++nmerged;
      }
    }
  };
  if (nthreads <= 1) {
    worker();
  } else {
    std::vector<std::thread> ts;
    for (unsigned t = 0; t < nthreads; ++t) ts.emplace_back(worker);
    for (auto& t : ts) t.join();
  }
  if (!first_error.empty()) throw InputError(first_error);
  if (auto* js = dynamic_cast<JobState*>(merged.state(0))) js->job().source_kind = src->kind();
  return Analysis(o, std::move(passes), std::move(merged));
}

// ---- the pieces strata.dask runs --------------------------------------------------------

std::vector<std::string> list_units(const std::string& input) { return open_source(input)->units(); }

std::string analyze_unit_bytes(const AnalyzeOptions& o, size_t unit) {
  std::unique_ptr<Source> src = open_source(o.input);
  if (unit >= src->units().size())
    throw InputError(o.input + ": no unit " + std::to_string(unit) + " (it has " +
                     std::to_string(src->units().size()) + ")");
  auto passes = make_passes(o);
  UnitStates st(passes);
  st.consume(*src, unit);
  return st.save();
}

std::string merge_bytes(const AnalyzeOptions& o, std::string_view first, std::string_view later) {
  auto passes = make_passes(o);
  UnitStates a(passes), b(passes);
  a.load(first);
  b.load(later);
  a.merge(b);
  return a.save();
}

std::string report_from_bytes(const AnalyzeOptions& o, std::string_view merged, bool json) {
  auto passes = make_passes(o);
  UnitStates st(passes);
  st.load(merged);
  Analysis a(o, std::move(passes), std::move(st));
  if (std::string e = by_key_error(a); !e.empty()) throw InputError(e);
  std::ostringstream out;
  if (json)
    a.write_json(out);
  else
    a.write_text(out);
  return out.str();
}

}  // namespace strata::analysis
