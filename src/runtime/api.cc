// The application API of include/strata/strata.h: regions, instants, counters,
// context tags, metadata. Tag sets are interned as contexts so an event carries
// one id, not strings.
#include <fcntl.h>

#include <algorithm>
#include <cstring>
#include <ctime>

#include "runtime/state.h"
#include "runtime/writer.h"
#include "strata/strata.h"

using namespace strata::runtime;
namespace fmt = strata::format;

namespace {

// App-layer threads: the thread state if the API may record now.
ThreadState* app_thread() {
  if (!g_hot.active || !g_hot.app_on) return nullptr;
  ThreadState* t = thread_state();
  return t && !t->busy ? t : nullptr;
}

// The thread state if the API may record an event now: tags and open regions
// are kept while the live mode is off, so they are right when it comes back.
ThreadState* recording_app_thread() {
  return g_hot.app_record.load(std::memory_order_relaxed) ? app_thread() : nullptr;
}

// Whether the NUL-terminated `s` is the interned string `sid`.
bool is_string(uint32_t sid, const char* s) {
  const Interner::Entry& e = g.strings.get(sid);
  return std::strncmp(e.data, s, e.len) == 0 && s[e.len] == '\0';
}

uint32_t intern_name(const char* name, const char* cat, fmt::EventKind kind, uint32_t fields) {
  name = name ? name : "";
  cat = cat && *cat ? cat : "app";
  const uint32_t kind_fields = fields | (static_cast<uint32_t>(kind) << 24);
  ThreadState* t = t_state;
  if (t)
    for (const RecentIds::Name& n : t->recent.names)
      if (n.nid != 0 && n.name == name && n.cat == cat && n.kind_fields == kind_fields &&
          is_string(n.name_sid, name) && is_string(n.cat_sid, cat))
        return n.nid;
  uint32_t key[4] = {g.strings.intern(name), g.strings.intern(cat), static_cast<uint32_t>(kind), fields};
  const uint32_t nid = g.names.intern(std::string_view(reinterpret_cast<const char*>(key), sizeof(key)), kind_fields);
  if (t && nid != 0 && key[0] != 0 && key[1] != 0)
    t->recent.names[t->recent.next_name++ % RecentIds::kNames] = {name, cat, kind_fields, key[0], key[1], nid};
  return nid;
}

uint64_t ns_to_ticks(uint64_t ns) {
  if (!g_hot.use_tsc) return ns;
  // Inverse of ticks_to_ns, for times the application gives in ns.
  int64_t d = static_cast<int64_t>(ns - g.start_mono_ns);
  __int128 t = (static_cast<__int128>(d) << 32) / static_cast<__int128>(g.ns_per_tick_q32);
  return g.start_ticks + static_cast<int64_t>(t);
}

void update_context(ThreadState* t) {
  if (t->ntags == 0) {
    t->ctx = 0;
    return;
  }
  TagSlot sorted[kMaxTags];
  std::copy(t->tags, t->tags + t->ntags, sorted);
  std::sort(sorted, sorted + t->ntags, [](const TagSlot& a, const TagSlot& b) { return a.key_sid < b.key_sid; });
  t->ctx = g.contexts.intern(std::string_view(reinterpret_cast<const char*>(sorted), sizeof(TagSlot) * t->ntags));
}

void set_tag(const char* key, bool is_int, int64_t value) {
  ThreadState* t = app_thread();
  if (!t || !key) return;
  InternalScope guard;
  uint32_t key_sid = g.strings.intern(key);
  int i = 0;
  while (i < t->ntags && t->tags[i].key_sid != key_sid) ++i;
  if (i == kMaxTags) return;
  // The slot is filled before it is counted: a longjmp out of this call
  // (InternalScope) leaves no unfilled tag behind.
  t->tags[i] = TagSlot{key_sid, is_int ? 1u : 0u, value};
  std::atomic_signal_fence(std::memory_order_seq_cst);
  if (i == t->ntags) ++t->ntags;
  update_context(t);
}

}  // namespace

extern "C" {
#pragma GCC visibility push(default)

int strata_enabled(void) { return g_hot.active ? 1 : 0; }

uint64_t strata_now(void) {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + ts.tv_nsec;
}

void strata_region_begin(const char* name, const char* category) {
  ThreadState* t = app_thread();
  if (!t) return;
  if (t->depth >= kMaxRegionDepth) {
    ++t->depth;  // still balanced by end; the region itself is dropped
    t->dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  uint32_t nid;
  {
    InternalScope guard;
    nid = intern_name(name, category, fmt::EventKind::kComplete, 0);
  }
  t->regions[t->depth++] = {nid, now_ticks()};
}

void strata_region_end(void) {
  ThreadState* t = app_thread();
  if (!t || t->depth == 0) return;
  --t->depth;
  if (t->depth >= kMaxRegionDepth) return;
  const auto& open = t->regions[t->depth];
  if (g_hot.app_record.load(std::memory_order_relaxed)) record_event(t, open.name, open.t0, now_ticks(), -1, 0, -1, -1, 0, 0);
}

void strata_complete(const char* name, const char* category, uint64_t start_ns, uint64_t dur_ns) {
  ThreadState* t = recording_app_thread();
  if (!t) return;
  uint32_t nid;
  {
    InternalScope guard;
    nid = intern_name(name, category, fmt::EventKind::kComplete, 0);
  }
  record_event(t, nid, ns_to_ticks(start_ns), ns_to_ticks(start_ns + dur_ns), -1, 0, -1, -1, 0, 0);
}

void strata_complete_io(const char* name, const char* category, uint64_t start_ns, uint64_t dur_ns,
                        const char* path, int64_t size, int64_t ret) {
  ThreadState* t = recording_app_thread();
  if (!t) return;
  uint32_t nid, sid = 0;
  {
    InternalScope guard;
    nid = intern_name(name, category, fmt::EventKind::kComplete,
                      fmt::kFieldPath | fmt::kFieldSize | fmt::kFieldRet);
    if (path) sid = path_at(AT_FDCWD, path);
  }
  record_event(t, nid, ns_to_ticks(start_ns), ns_to_ticks(start_ns + dur_ns), -1, sid, -1, size, ret, 0);
}

void strata_instant(const char* name, const char* category) {
  ThreadState* t = recording_app_thread();
  if (!t) return;
  uint32_t nid;
  {
    InternalScope guard;
    nid = intern_name(name, category, fmt::EventKind::kInstant, 0);
  }
  uint64_t now = now_ticks();
  record_event(t, nid, now, now, -1, 0, -1, -1, 0, 0);
}

void strata_counter(const char* name, int64_t value) {
  ThreadState* t = recording_app_thread();
  if (!t) return;
  uint32_t nid;
  {
    InternalScope guard;
    nid = intern_name(name, "counter", fmt::EventKind::kCounter, fmt::kFieldValue);
  }
  uint64_t now = now_ticks();
  record_event(t, nid, now, now, -1, 0, -1, value, 0, 0);
}

void strata_tag_set_int(const char* key, int64_t value) { set_tag(key, true, value); }

void strata_tag_set_str(const char* key, const char* value) {
  if (!app_thread()) return;
  uint32_t sid;
  {
    InternalScope guard;
    sid = g.strings.intern(value ? value : "");
  }
  set_tag(key, false, sid);
}

void strata_tag_unset(const char* key) {
  ThreadState* t = app_thread();
  if (!t || !key) return;
  InternalScope guard;
  uint32_t key_sid = g.strings.intern(key);
  for (int i = 0; i < t->ntags; ++i) {
    if (t->tags[i].key_sid == key_sid) {
      t->tags[i] = t->tags[--t->ntags];
      update_context(t);
      return;
    }
  }
}

void strata_tag_clear(void) {
  if (ThreadState* t = app_thread()) {
    t->ntags = 0;
    t->ctx = 0;
  }
}

uint32_t strata_tag_save(void) {
  ThreadState* t = app_thread();
  return t ? t->ctx : 0;
}

void strata_tag_restore(uint32_t saved) {
  ThreadState* t = app_thread();
  if (!t) return;
  if (saved == 0 || saved > g.contexts.published()) {
    t->ntags = 0;
    t->ctx = 0;
    return;
  }
  const auto& e = g.contexts.get(saved);
  t->ntags = static_cast<int>(e.len / sizeof(TagSlot));
  std::memcpy(t->tags, e.data, e.len);
  t->ctx = saved;
}

void strata_set_metadata(const char* key, const char* value) {
  if (!g_hot.active || !key) return;
  InternalScope guard;
  uint32_t kv[2] = {g.strings.intern(key), g.strings.intern(value ? value : "")};
  g.metadata.intern(std::string_view(reinterpret_cast<const char*>(kv), sizeof(kv)));
}

void strata_thread_name(const char* name) {
  ThreadState* t = app_thread();
  if (!t || !name) return;
  InternalScope guard;
  t->name_sid.store(g.strings.intern(name), std::memory_order_relaxed);
}

void strata_flush(void) { flush_all(false); }

#pragma GCC visibility pop
}  // extern "C"
