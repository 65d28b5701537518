// Profile mode (STRATA_MODE=profile): the writer thread feeds every recorded
// event to the Darshan-style counter engine of src/analysis/counters.h (the
// same engine `strata analyze` runs over full traces) instead of encoding it,
// and writes the engine's per-file records as PROFILE blocks. The interposers
// and their cost are the same as in trace mode.
#pragma once

#include "format/encoder.h"
#include "runtime/runtime.h"

namespace strata::runtime {

void profile_consume(const RawEvent& e);          // writer thread only
void profile_encode(format::ByteSink& out, uint32_t& records);  // snapshot of all records
void profile_reset();                             // child after fork

}  // namespace strata::runtime
