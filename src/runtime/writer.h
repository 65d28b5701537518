// The writer: owns the trace file of this process and the background thread
// that drains every thread's ring, encodes events into columnar blocks,
// compresses them and appends them to the file. Nothing here runs on an
// application thread except the explicit flush paths (exit, exec, signals).
#pragma once

#include <cstdint>

namespace strata::runtime {

bool writer_start();                 // opens the file, writes header + PROCESS, starts the thread
void writer_flush(bool final_flush); // drains everything now (any thread), final adds STATS + FOOTER
void writer_stop();                  // stops the thread (process exit)
void writer_prepare_fork();
void writer_parent_after_fork();
void writer_child_after_fork();      // new file for the child, fresh thread
void writer_wake();
uint64_t writer_dropped_total();
// Requests a flush from the writer thread and waits up to timeout_ms for it.
void writer_request_flush(bool final_flush, int timeout_ms);

}  // namespace strata::runtime
