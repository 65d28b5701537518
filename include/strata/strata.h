/* strata application API (C).
 *
 * Link with -lstrata (or let `strata run` preload it). Every call is safe when
 * tracing is off: it returns at once and records nothing. Strings passed in are
 * copied or interned; the caller keeps ownership.
 *
 * Context tags: strata_tag_* set key/value context on the calling thread. Every
 * event that thread records afterwards (application, POSIX and STDIO events)
 * carries the tags in force, as one interned context id.
 */
#ifndef STRATA_STRATA_H
#define STRATA_STRATA_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when the runtime is loaded and recording into a trace, else 0. */
int strata_enabled(void);

/* Regions: a begin/end pair on one thread becomes one complete event. Regions
 * nest; end closes the innermost open region of the thread. */
void strata_region_begin(const char* name, const char* category);
void strata_region_end(void);

/* A complete event with explicit times (CLOCK_MONOTONIC ns, see strata_now). */
void strata_complete(const char* name, const char* category, uint64_t start_ns, uint64_t dur_ns);
/* Same, with the I/O fields of an application-level read or write (path may be
 * NULL, size and ret -1 when unknown). */
void strata_complete_io(const char* name, const char* category, uint64_t start_ns,
                        uint64_t dur_ns, const char* path, int64_t size, int64_t ret);

void strata_instant(const char* name, const char* category);
void strata_counter(const char* name, int64_t value);

/* CLOCK_MONOTONIC in ns, the trace's time base. */
uint64_t strata_now(void);

/* Context tags of the calling thread. set replaces the key's value (or adds
 * it); unset removes it; clear removes all keys. */
void strata_tag_set_int(const char* key, int64_t value);
void strata_tag_set_str(const char* key, const char* value);
void strata_tag_unset(const char* key);
void strata_tag_clear(void);

/* Opaque snapshot of the calling thread's tags, to restore later (scopes). */
uint32_t strata_tag_save(void);
void strata_tag_restore(uint32_t saved);

/* Process metadata (key/value strings stored with the process). */
void strata_set_metadata(const char* key, const char* value);

/* Names the calling thread in the trace. */
void strata_thread_name(const char* name);

/* Writes every buffered event of this process to disk now. */
void strata_flush(void);

/* For strata's Python layer: calls `callable` (CPython's os.fork or
 * os.forkpty, a PyObject*) with no arguments and returns its result (a new
 * reference, or NULL with the exception set). CPython 3.12 and later count
 * the process's threads as the fork returns and warn when they find more
 * than one: strata's writer thread stops for the call (the kernel no
 * longer lists it) and starts again after it. Call it through
 * ctypes.PyDLL (with the GIL held), from a CPython process only. */
void* strata_fork_call(void* callable);

/* Tracing without the launcher (attach). strata_start starts tracing this
 * process into directory `dir` (created if missing) as `strata run` would: it
 * rewrites the GOT/PLT entries of every loaded object (and of objects loaded
 * later with dlopen) to point at strata's interposers, and sets STRATA_DIR and
 * LD_PRELOAD so that programs exec'd from now on are traced too. Returns 0, or
 * -1 with errno EINVAL (no dir), EBUSY (already tracing, e.g. under
 * `strata run`) or ENOTSUP (libstrata cannot reach libc's functions from where
 * it was loaded, or the platform is not supported). strata_stop restores every entry and the environment and
 * finishes the trace file; -1 with errno EINVAL when strata_start did not
 * start tracing. Calls made through raw system calls, or through function
 * pointers taken before strata_start, are not seen. */
int strata_start(const char* dir);
int strata_stop(void);
/* 1 between a successful strata_start and strata_stop, else 0. */
int strata_attached(void);

#ifdef __cplusplus
}
#endif

#endif /* STRATA_STRATA_H */
