// Recording modes and the live channel inside the traced process.
//
// The mode (off, profile, trace, smart: format::LiveMode) decides what the
// writer does with the events it drains. It starts from STRATA_MODE, or under
// `strata run --live` (STRATA_LIVE=1) from the job file of the live channel,
// and the writer thread switches it when a controller asks through this
// process's slot (src/format/live.h, docs/live.md). The hot path sees a switch
// only as the per-layer record flags it already tests (set_recording).
//
// Threads: the mode is read by any thread and changed by the writer thread
// only; every slot function below runs on the writer thread unless it says
// otherwise.
#pragma once

#include <atomic>
#include <cstdint>

#include "format/live.h"
#include "runtime/runtime.h"

namespace strata::runtime {

using format::LiveMode;

// Any thread, at start-up (begin_tracing): the starting mode, and the record flags.
void live_init_mode();
LiveMode live_mode();
// Whether drained events go through the counter engine: always under --live
// (cheap metrics always on), else in modes profile and smart.
bool live_feeds_engine();
// Changes the mode (record flags included) and counts the time spent tracing.
void live_set_mode(LiveMode mode);

// ---- the slot; nothing happens without STRATA_LIVE=1 ----
void live_open_slot();
std::atomic<uint32_t>* live_wake_word();  // the slot's futex word, or null

struct LiveRequests {
  bool switch_mode = false;
  LiveMode to = LiveMode::kTrace;
  bool snapshot = false;  // flush and write a PROFILE snapshot now
  bool ack = false;       // a mode request arrived (even one for the mode in force)
};
// What controllers asked for since the last call, and timed switches now due.
LiveRequests live_take_requests();
// Acknowledges the requests once they took effect: a controller that sees
// its sequence number applied also sees the new mode.
void live_requests_done(const LiveRequests& r);
// Nanoseconds until the writer must wake for a timed switch (~0: none).
uint64_t live_ns_until_deadline();

// Per drained event: counts for the status. (Smart mode's filter: smart.h.)
void live_count(const RawEvent& e);
// Writes the status half of the slot.
void live_publish(uint64_t events_dropped);

// Any thread: the end of this image (exit, or exec when `replaced`), and an
// exec that failed after all.
void live_end(bool replaced);
void live_exec_failed();
void live_set_exit_status(int status);
// Fork child (any thread): the parent's slot is the parent's.
void live_forget_in_child();

}  // namespace strata::runtime
