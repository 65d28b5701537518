// Darshan counters of a trace directory as the JSON of GET /api/counters and
// `strata ctl counters --json` (docs/live.md): the analysis library's
// counters, one entry per process and file.
#pragma once

#include <string>

#include "analysis/aggregate.h"

namespace strata::live {

// {"files": [{"path", "module", "pid", "rank", "counters": {..}, "fcounters": {..}}]}
// for the files whose path starts with `path_prefix` ("" = all).
std::string counters_json(const analysis::Job& job, const std::string& path_prefix);

// Runs the analysis over `trace_dir` (as `strata analyze` does) and returns
// counters_json of it. Throws std::exception naming the input on failure.
std::string trace_counters_json(const std::string& trace_dir, const std::string& path_prefix);

}  // namespace strata::live
