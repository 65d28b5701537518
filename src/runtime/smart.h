// Smart collection (mode smart, issue 11): the writer thread keeps an event
// flow graph per application thread as it drains the thread's ring, and
// writes full events only while behaviour is new.
//
// Per thread: every event is a node (function, file directory, request-size
// class, as src/efg builds them) and an edge from the previous node.
//  - Warm-up: events are written in full until the graph is stable: no new
//    node or edge for max(64, E) events, E being the events seen up to the
//    last growth (the thread has run again as long as it took to settle).
//    Then the efg loop finder (find_loops, LoopForest::main_loop) names the
//    main loop's header; without a main loop the check repeats after
//    another such window. It runs again a window after the graph grows
//    later: a loop found early may be the inner loop of one whose first trip
//    had not ended; if the answer changes, marks carry the next loop id.
//  - Then each entry into the header (not an inner same-header loop's back
//    edge) starts an iteration: one PROC `iteration` event (dur 0 at the
//    header's start, offset = iteration index, ret = loop id, size = 1 when
//    the iteration is written in full, else 0). The first STRATA_SMART_ITERATIONS iterations
//    are written in full, later ones only as their `iteration` event; the
//    counters see every event regardless (profile.h).
//  - A new node or edge keeps the whole iteration it occurs in (its events
//    are buffered until its end, at most kSmartPendingMax; past that they
//    are written) and STRATA_SMART_ITERATIONS more. The edge that closes an
//    iteration (into the next header) belongs to the iteration it closes.
//
// Writer thread only. The application threads' hot path is unchanged.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/runtime.h"

namespace strata::runtime {

// Events buffered per thread for the iteration in progress.
inline constexpr size_t kSmartPendingMax = 16384;

// Appends to `out`, in order, what smart mode writes of the n events from
// position `tail` of s's ring (where v places them): full events and
// `iteration` events.
void smart_filter(ThreadState* s, const RingView& v, uint64_t tail, uint64_t n, std::vector<RawEvent>& out);

// Ends s's stream (thread exited, final flush, mode left smart): the
// iteration in progress is settled into `out` and the thread's graph
// forgotten.
void smart_finish(ThreadState* s, std::vector<RawEvent>& out);

// Fork child: the parent's graphs are the parent's.
void smart_forget_in_child();

// Threads that have smart state (for smart_finish at a final flush).
std::vector<ThreadState*> smart_threads();

}  // namespace strata::runtime
