// The "modes" pass of `strata analyze`: under `strata run --live` a process
// may switch between off, profile, trace and smart while it runs
// (docs/live.md); each switch is a PROC "mode" event. This pass turns them
// into intervals per process and says how much of the run was traced in
// full, so a reader of the report knows which figures cover what: events
// (timelines, structure) only the traced intervals, counters the whole run.
#pragma once

#include <memory>

#include "analysis/pass.h"

namespace strata::analysis {

std::unique_ptr<Pass> make_modes_pass(const AnalyzeOptions& o);

}  // namespace strata::analysis
