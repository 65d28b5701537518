// The writer: owns the trace file of this process and the background thread
// that drains every thread's ring, encodes events into columnar blocks,
// compresses them and appends them to the file. The file is written from the
// writer thread only, through a descriptor in that thread's private table;
// application threads ask it to flush (exit, exec, signals) and wait.
#pragma once

#include <cstdint>

namespace strata::runtime {

bool writer_start();                 // starts the thread, which creates the file (header + PROCESS)
void writer_flush(bool final_flush); // drains everything now (any thread), final adds STATS + FOOTER
void writer_stop();                  // stops the thread (process exit)
void writer_prepare_fork();
void writer_parent_after_fork();
void writer_child_after_fork();      // new file for the child, fresh thread
void writer_restart();               // after writer_stop: new file, fresh thread (strata_start)
void writer_wake();
bool writer_pause();                 // stops the thread, keeping the file and the rings; true if it ran
void writer_resume();                // after writer_pause: the thread again, same file
void writer_wait_fs_private();       // until the writer has its own cwd/root (100 ms at most)
void writer_stop_for_main_exit();   // the main thread calls pthread_exit: no writer thread from now on
// True in the process that owns a running writer thread (not in a vfork or
// clone child that only sees the parent's state).
bool writer_thread_running();
bool on_writer_thread();            // the calling thread is the writer
int writer_last_tid();              // the running or last stopped writer thread's tid, 0 if it never ran
int writer_thread_id();             // its tid while it runs, -1 while it starts, 0 none
uint64_t writer_dropped_total();
// Runs fn(arg) on the writer thread and waits for it (bounded): for calls
// that change per-thread kernel state, such as capabilities, which the writer
// thread must share with the application's threads.
void writer_run(void (*fn)(void*), void* arg);
// Requests a flush from the writer thread and waits up to timeout_ms for it.
void writer_request_flush(bool final_flush, int timeout_ms);

}  // namespace strata::runtime
