// The "structure" pass of `strata analyze`: the event flow graph of each
// process (src/efg) reduced to its main loop, one line per distinct process
// graph ("loop x5 { loop x40 { open read x3 close } checkpoint }").
// `strata efg` shows the whole graph; docs/efg.md.
#pragma once

#include <memory>

#include "analysis/pass.h"

namespace strata::analysis {

std::unique_ptr<Pass> make_structure_pass(const AnalyzeOptions& o);

}  // namespace strata::analysis
