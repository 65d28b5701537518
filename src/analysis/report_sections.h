// The sections of the text and JSON reports, one function each, rendered
// from the merged job by the passes that own them (passes.cc). JSON
// sections write `,\n "key": value` into the report's one object.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>

#include "analysis/analyze.h"

namespace strata::analysis {

#define STRATA_SECTION(name) \
  void name(const Job& job, const AnalyzeOptions& o, std::ostream& out);
STRATA_SECTION(text_header)
STRATA_SECTION(text_dl)
STRATA_SECTION(text_functions)
STRATA_SECTION(text_files)
STRATA_SECTION(text_tags)
STRATA_SECTION(text_sizes)
STRATA_SECTION(text_staging)
STRATA_SECTION(json_header)  // opens the object; Analysis::write_json closes it
STRATA_SECTION(json_summary)
STRATA_SECTION(json_functions)
STRATA_SECTION(json_files)
STRATA_SECTION(json_tags)
STRATA_SECTION(json_dataset_dirs)
STRATA_SECTION(json_dl)
STRATA_SECTION(json_staging)
#undef STRATA_SECTION

// Names of the job's processes (timeline_pass.h: process_names, process_kinds)
// for the job tree.
struct ProcessNaming {
  std::map<int64_t, std::string> names, kinds;
};
void text_summary(const Job& job, const AnalyzeOptions& o, const ProcessNaming& naming, std::ostream& out);

// Whether the trace measured compute: it has app regions counted as compute
// (strata's Python layer marks forward/backward/optimizer steps; the strata
// API, the program's own). Without them a compute time of 0 is unknown, not none.
bool compute_measured(const Job& job);

// The text report at `cols` columns: a longer line breaks at its last space
// that fits (or inside a word without one), continued 5 columns deeper.
std::string fit_width(const std::string& text, size_t cols);

// One screen line of at most `cols` columns: a longer text is cut at its last
// space that leaves room for " ..." (the whole text is in the JSON and with --all).
std::string clip_words(const std::string& text, size_t cols);

}  // namespace strata::analysis
