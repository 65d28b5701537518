// Internal core of the in-process runtime (libstrata.so): per-thread event
// rings, the clock, and the record path every interposer uses.
//
// The hot path (IoScope + commit) takes no lock, allocates nothing and makes no
// system call: it reads the clock twice and fills one 64-byte slot of the
// calling thread's single-producer ring. The writer thread (writer.cc) drains
// the rings, encodes columns and writes compressed blocks.
#pragma once

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <ctime>

#include "format/encoder.h"
#include "runtime/functions.h"

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace strata::runtime {

// One ring slot: the encoder's input record, read in place by the writer.
using RawEvent = format::EncodeEvent;

// A thread's ring uses the first kFirstRingBytes of its mapping until the
// writer falls behind it (ring_grow): most threads then fault in and reuse
// 1 MiB instead of touching 4 MiB once (the short DataLoader job, whose
// workers record ~50 k events each: 4.1 k of strata's 9.5 k page faults
// fewer, bench/README.md).
inline constexpr uint64_t kFirstRingBytes = uint64_t{1} << 20;

// Single-producer (the owning thread) / single-consumer (the writer) ring.
// head and tail count events; event p lives in slot (p - base) & (capacity - 1).
struct Ring {
  alignas(64) std::atomic<uint64_t> head{0};  // next event the producer fills
  alignas(64) std::atomic<uint64_t> tail{0};  // next event the writer reads
  // The consumers' copy of base and capacity (ring_layout_word), published
  // before any event that needs it; a growth keeps the slot of every event
  // not yet read, so a consumer may read it before or after.
  std::atomic<uint64_t> layout{0};
  RawEvent* slots = nullptr;
  // The producer's own copies (only it changes them, but for fork in the child).
  uint64_t base = 0;
  uint64_t capacity = 0;      // power of two
  uint64_t max_capacity = 0;  // the mapping's slots
  uint64_t quarter_mask = 0;  // capacity / 4 - 1
  // The producer's full check: head - tail below it. capacity, but after a
  // growth that copied events (ring_grow) only up to event base + capacity
  // until tail reaches reuse_at.
  uint64_t limit = 0;
  uint64_t reuse_at = 0;
  uint64_t cached_tail = 0;  // producer's last view of tail: re-read only when the ring looks full
  uint64_t woken_at = 0;     // head when the producer last woke the writer
};

inline uint64_t ring_layout_word(uint64_t base, uint64_t capacity) {
  return base << 6 | static_cast<uint64_t>(__builtin_ctzll(capacity));
}

// Where the events of a ring are, as its consumer sees them: read after
// loading head (acquire), it places every event before that head.
struct RingView {
  const RawEvent* slots;
  uint64_t base, mask;
  const RawEvent& at(uint64_t pos) const { return slots[(pos - base) & mask]; }
  uint64_t capacity() const { return mask + 1; }
};
inline RingView ring_view(const Ring& r) {
  const uint64_t word = r.layout.load(std::memory_order_acquire);
  return {r.slots, word >> 6, (uint64_t{1} << (word & 63)) - 1};
}

// (Re)starts a ring with nothing pending at event `head`, on its first slots.
inline void ring_restart(Ring& r, uint64_t head) {
  constexpr uint64_t kFirstSlots = kFirstRingBytes / sizeof(RawEvent);
  r.capacity = r.max_capacity < kFirstSlots ? r.max_capacity : kFirstSlots;
  r.quarter_mask = r.capacity / 4 - 1;
  r.limit = r.capacity;
  r.reuse_at = head;
  r.base = head;
  r.cached_tail = head;
  r.woken_at = head;
  r.layout.store(ring_layout_word(head, r.capacity), std::memory_order_relaxed);
  r.tail.store(head, std::memory_order_relaxed);
}

// The ring looks full: the producer's next view of tail, and how far it may
// write. Until tail reaches reuse_at, a consumer may still be reading events a
// growth copied at their old slots, which the larger ring reaches again at
// event base + capacity (ring_grow): the producer stops short of it.
__attribute__((noinline, cold)) inline void ring_reload_tail(Ring& r) {
  r.cached_tail = r.tail.load(std::memory_order_acquire);
  r.limit = r.cached_tail >= r.reuse_at ? r.capacity : r.base + r.capacity - r.cached_tail;
}

// Grows the ring to its whole mapping. The new base keeps the slot of the
// first event not yet read, so the events pending before the current end keep
// theirs; those that wrapped to the first slots belong right after the old
// end in the larger ring, and are copied there before the new layout is
// published (a consumer reading by the old layout finds them where they were).
__attribute__((noinline, cold)) inline bool ring_grow(Ring& r, uint64_t head) {
  if (r.capacity >= r.max_capacity) return false;
  const uint64_t tail = r.cached_tail, pending = head - tail, old_capacity = r.capacity;
  const uint64_t first = (tail - r.base) & (old_capacity - 1);
  const uint64_t wrapped = first + pending > old_capacity ? first + pending - old_capacity : 0;
  if (first + pending >= r.max_capacity) return false;  // no room past the copied events: drop as before
  if (wrapped) std::memcpy(static_cast<void*>(r.slots + old_capacity), r.slots, wrapped * sizeof(RawEvent));
  r.base = tail - first;
  r.capacity = r.max_capacity;
  r.quarter_mask = r.capacity / 4 - 1;
  r.reuse_at = wrapped ? head : tail;
  ring_reload_tail(r);
  r.layout.store(ring_layout_word(r.base, r.capacity), std::memory_order_release);
  return true;
}

inline constexpr int kMaxTags = 16;
inline constexpr int kMaxRegionDepth = 64;

struct TagSlot {
  uint32_t key_sid;
  uint32_t is_int;
  int64_t value;  // int value or string id
};

enum class ThreadStatus : int { kLive = 0, kExited = 1, kFree = 2 };

// The ids this thread interned last. A Python-level I/O event (numpy.load)
// names the file the interposed open just resolved, and the API's events
// repeat a few names: a hit costs a length and byte compare against the
// interned string instead of a hash and a locked probe (callgrind, a
// DataLoader job: ~690 instructions a path, ~890 a name and category).
// Hits are checked against the interned bytes, never trusted by pointer: a
// caller may reuse one buffer for different names.
struct RecentIds {
  static constexpr int kPaths = 4, kNames = 4;
  uint32_t paths[kPaths] = {};  // string ids of absolute paths
  uint32_t next_path = 0;
  struct Name {
    const char* name = nullptr;  // the caller's pointers the entry was made from
    const char* cat = nullptr;
    uint32_t kind_fields = 0, name_sid = 0, cat_sid = 0, nid = 0;
  } names[kNames];
  uint32_t next_name = 0;
};

struct ThreadState {
  Ring ring;
  uint32_t tid = 0;
  uint32_t ctx = 0;   // interned context id of the tags in force
  int busy = 0;       // >0 while inside the runtime: nothing is recorded
  uintptr_t busy_sp = 0;  // the stack pointer of the interposer that set busy (longjmp, signals.cc)
  std::atomic<int> status{0};
  std::atomic<uint64_t> dropped{0};
  std::atomic<uint32_t> name_sid{0};
  RecentIds recent;
  ThreadState* next = nullptr;  // registry list, never unlinked
  int ntags = 0;
  TagSlot tags[kMaxTags];
  int depth = 0;
  struct Open {
    uint32_t name;
    uint64_t t0;
  } regions[kMaxRegionDepth];
};

// Global switches read on the hot path.
struct HotConfig {
  bool active = false;    // tracing into a trace (or profile) right now
  bool use_tsc = false;   // ticks are TSC cycles, else CLOCK_MONOTONIC ns
  bool layer_on[3] = {true, true, true};  // Layer::POSIX, STDIO, PROC
  bool app_on = true;
  // active && layer_on[layer] && the live mode records (live.h): the one byte
  // an interposer tests first. Atomic because `strata ctl mode` flips it from
  // the writer thread while application threads read it; a relaxed load is a
  // plain load, so the hot path costs what it did.
  std::atomic<bool> record[3] = {false, false, false};
  std::atomic<bool> app_record{false};  // active && app_on && the live mode records
  bool direct = false;  // read/write family as direct system calls (direct.h)
};
extern HotConfig g_hot __attribute__((visibility("hidden")));
void set_active(bool on);  // sets active and record[]
// Recomputes record[] and app_record: `recording` is false while the live
// mode is off (live.cc).
void set_recording(bool recording);

// A tick is 2^kTscShift TSC cycles when the TSC is used (3.1 ns at 2.6 GHz:
// finer than the clock read costs, and 3 noise bits fewer per timestamp).
inline constexpr int kTscShift = 3;

inline uint64_t now_ticks() {
#if defined(__x86_64__) || defined(__i386__)
  if (g_hot.use_tsc) return __rdtsc() >> kTscShift;
#endif
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Per-thread state; created on the thread's first event.
extern __thread ThreadState* t_state __attribute__((tls_model("initial-exec"), visibility("hidden")));
extern __thread bool t_done __attribute__((tls_model("initial-exec"), visibility("hidden")));
ThreadState* create_thread_state();
// The stack pointer of this thread's create_thread_state while it sets the
// thread's state up (0 otherwise).
extern __thread uintptr_t t_setup_sp __attribute__((tls_model("initial-exec"), visibility("hidden")));
// recording_thread's way out when the thread has no state yet: creates it,
// or counts the event as dropped when its ring could not be mapped.
ThreadState* first_state_or_drop();

// Set in a vfork child, which runs on its parent's thread and memory until it
// execs or exits: it records nothing and leaves the parent's descriptor table
// alone (its dup2, open and close act on its own descriptors).
extern __thread bool t_vfork_child __attribute__((tls_model("initial-exec"), visibility("hidden")));

// Whether this thread keeps the descriptor table up to date even when it
// records nothing.
inline bool keeps_fd_table() { return g_hot.active && !t_vfork_child; }

inline ThreadState* thread_state() {
  ThreadState* t = t_state;
  if (__builtin_expect(t != nullptr, 1)) return t;
  if (t_done) return nullptr;
  return create_thread_state();
}

void wake_writer_if_behind(ThreadState* t, uint64_t head);

// Fields by name: the encoder may lay the record out in any order.
__attribute__((always_inline)) inline RawEvent make_event(uint32_t name, uint64_t t0, uint64_t t1, int fd,
                                                          uint32_t path, int64_t offset, int64_t size,
                                                          int64_t ret, int err, uint32_t ctx,
                                                          uint32_t mem_align = 0) {
  RawEvent e;
  e.start = t0;
  e.end = t1;
  e.offset = offset;
  e.size = size;
  e.ret = ret;
  e.name = name;
  e.path = path;
  e.ctx = ctx;
  e.fd = fd;
  e.err = err;
  e.mem_align = mem_align;
  return e;
}

// Every quarter of the ring: whether to wake the writer (the ring is half
// full). The ring grows instead when the writer was woken at an earlier
// quarter and has read nothing since: a writer that keeps up leaves it on its
// first pages, one that stalls finds it grown.
__attribute__((noinline, cold)) inline bool ring_wants_writer(Ring& r, uint64_t head) {
  ring_reload_tail(r);
  if (head - r.cached_tail < r.capacity / 2) return false;
  if (r.cached_tail < r.woken_at) return !ring_grow(r, head);
  r.woken_at = head;
  return true;
}

// Appends one event to the thread's ring, or counts a drop when it is full.
// The producer re-reads the writer's tail only when the ring looks full, and
// every quarter of the ring, to wake the writer when it is half full.
__attribute__((always_inline)) inline void push_event(ThreadState* t, const RawEvent& ev) {
  Ring& r = t->ring;
  const uint64_t head = r.head.load(std::memory_order_relaxed);
  if (__builtin_expect(head - r.cached_tail >= r.limit, 0)) {
    ring_reload_tail(r);
    if (head - r.cached_tail >= r.limit && !ring_grow(r, head)) {
      t->dropped.fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
  r.slots[(head - r.base) & (r.capacity - 1)] = ev;
  r.head.store(head + 1, std::memory_order_release);
  if (__builtin_expect(((head + 1 - r.base) & r.quarter_mask) == 0, 0)) wake_writer_if_behind(t, head + 1);
}

// Records one event of the calling thread (not for the hot interposers, which
// fill the slot directly through IoScope).
void record_event(ThreadState* t, uint32_t name, uint64_t t0, uint64_t t1, int fd, uint32_t path,
                  int64_t offset, int64_t size, int64_t ret, int err);

// The calling thread's state when an event of `layer` is to be recorded now:
// tracing is on, the layer is on, and the thread is not inside the runtime.
__attribute__((always_inline)) inline ThreadState* recording_thread(Layer layer) {
  if (!g_hot.record[static_cast<int>(layer)].load(std::memory_order_relaxed)) return nullptr;
  ThreadState* t = t_state;
  if (__builtin_expect(t == nullptr, 0)) t = first_state_or_drop();
  return t && !t->busy ? t : nullptr;
}

// Where this function's frame is (one instruction; 0 where not known).
__attribute__((always_inline)) inline uintptr_t stack_pointer() {
#if defined(__x86_64__)
  uintptr_t sp;
  asm("mov %%rsp, %0" : "=r"(sp));
  return sp;
#else
  return 0;
#endif
}

// Brackets one intercepted call: decides whether to record, reads the start
// time, keeps the runtime from recording itself, and preserves errno. Every
// member is inlined so the scope lives in registers across the real call.
class IoScope {
 public:
  __attribute__((always_inline)) IoScope(Fn fn, Layer layer) : fn_(fn), t_(recording_thread(layer)) {
    if (t_) {
      t_->busy = 1;
      t_->busy_sp = stack_pointer();
      t0_ = now_ticks();
    }
  }
  __attribute__((always_inline)) ~IoScope() {
    if (t_) t_->busy = 0;
  }
  IoScope(const IoScope&) = delete;
  IoScope& operator=(const IoScope&) = delete;

  bool on() const { return t_ != nullptr; }
  // Call right after the real function returns: takes the end time and errno.
  __attribute__((always_inline)) void stop(bool failed) {
    t1_ = now_ticks();
    err_ = failed ? errno : 0;
  }
  // For an event that spans more than the scope: the call began at t0.
  void start_at(uint64_t t0) { t0_ = t0; }
  // For calls that return an error number instead of setting errno.
  void stop_with(int error_number) {
    t1_ = now_ticks();
    err_ = error_number;
  }
  // Records the call. errno is as the real call left it: the only runtime code
  // between stop() and here that can change errno (resolving an unknown
  // descriptor) restores it itself.
  // mem_align: the buffer's Column::kMemAlign value (0 = no buffer).
  __attribute__((always_inline)) void record(int fd, uint32_t path, int64_t offset, int64_t size, int64_t ret,
                                             uint32_t mem_align = 0) {
    push_event(t_, make_event(static_cast<uint32_t>(fn_), t0_, t1_, fd, path, offset, size, ret, err_, t_->ctx,
                              mem_align));
  }
  // Records nothing (excluded file).
  void skip() {}
  // Records nothing but counts a lost event (a path too long to resolve).
  void drop() { t_->dropped.fetch_add(1, std::memory_order_relaxed); }
  ThreadState* thread() const { return t_; }
  Fn fn() const { return fn_; }

 private:
  Fn fn_;
  ThreadState* t_;
  uint64_t t0_ = 0;
  uint64_t t1_ = 0;
  int err_ = 0;
};

// Marks the calling thread as inside the runtime as an IoScope does, around
// work an interposer does outside one (following a chdir, interning the
// program an exec runs): a signal handler that interrupts it records nothing
// (its interning would wait for the lock its own thread holds), and a
// longjmp out of it is seen leaving it (signals.cc). Does nothing on a
// thread marked already.
class InterposerMark {
 public:
  __attribute__((always_inline)) explicit InterposerMark(ThreadState* t) : t_(t && !t->busy ? t : nullptr) {
    if (t_) {
      t_->busy = 1;
      t_->busy_sp = stack_pointer();
    }
  }
  __attribute__((always_inline)) ~InterposerMark() {
    if (t_) t_->busy = 0;
  }
  InterposerMark(const InterposerMark&) = delete;
  InterposerMark& operator=(const InterposerMark&) = delete;

 private:
  ThreadState* t_;
};

// Marks the calling thread as inside the runtime for the scope's lifetime
// (the strata_* API, flushes), and the mark is put back as it was. The
// outermost mark notes its frame as an interposer's does: a longjmp out of
// a strata_* call that a handler interrupted inside a string table's lookup
// releases the lock and the mark (signals.cc), the rule for interposers; a
// jump with the writer's mutex held leaves both. Left taken, the lock
// stopped every other thread's next new string for ever and the thread
// recorded nothing more (Edges.ALongjmpOutOfStratasApiDoesNotStopOther
// Threads). Inside another mark (busy_sp 0) a jump leaves the thread marked.
class InternalScope {
 public:
  __attribute__((always_inline)) InternalScope() : t_(t_state) {
    if (t_) {
      saved_sp_ = t_->busy_sp;
      t_->busy_sp = t_->busy == 0 ? stack_pointer() : 0;
      ++t_->busy;
    }
  }
  ~InternalScope() {
    if (t_) {
      --t_->busy;
      t_->busy_sp = saved_sp_;
    }
  }

 private:
  ThreadState* t_;
  uintptr_t saved_sp_ = 0;
};

// Lifecycle (core.cc).
void ensure_initialized();
// strata_start/strata_stop (attach.cc): start recording into the configuration
// the environment holds now, in a process the launcher did not start; and
// finish that trace. attach_begin is false when already recording.
bool attach_begin();
void attach_end();
void flush_all(bool final_flush);  // drains every ring and writes; final also writes the footer
void finalize_process(int exit_status, Fn how);
void before_exec();
void after_failed_exec();
bool is_vfork_child();

}  // namespace strata::runtime
