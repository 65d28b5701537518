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

#ifdef __cplusplus
}
#endif

#endif /* STRATA_STRATA_H */
