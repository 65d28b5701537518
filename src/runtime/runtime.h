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
#include <ctime>

#include "format/encoder.h"
#include "runtime/functions.h"

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace strata::runtime {

// One ring slot: the encoder's input record, read in place by the writer.
using RawEvent = format::EncodeEvent;

// Single-producer (the owning thread) / single-consumer (the writer) ring.
struct Ring {
  alignas(64) std::atomic<uint64_t> head{0};  // next slot the producer fills
  alignas(64) std::atomic<uint64_t> tail{0};  // next slot the writer reads
  uint64_t capacity = 0;                      // power of two
  RawEvent* slots = nullptr;
  uint64_t quarter_mask = 0;  // capacity / 4 - 1
  uint64_t cached_tail = 0;  // producer's last view of tail: re-read only when the ring looks full
};

inline constexpr int kMaxTags = 16;
inline constexpr int kMaxRegionDepth = 64;

struct TagSlot {
  uint32_t key_sid;
  uint32_t is_int;
  int64_t value;  // int value or string id
};

enum class ThreadStatus : int { kLive = 0, kExited = 1, kFree = 2 };

struct ThreadState {
  Ring ring;
  uint32_t tid = 0;
  uint32_t ctx = 0;   // interned context id of the tags in force
  int busy = 0;       // >0 while inside the runtime: nothing is recorded
  std::atomic<int> status{0};
  std::atomic<uint64_t> dropped{0};
  std::atomic<uint32_t> name_sid{0};
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
};
extern HotConfig g_hot __attribute__((visibility("hidden")));

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

inline ThreadState* thread_state() {
  ThreadState* t = t_state;
  if (__builtin_expect(t != nullptr, 1)) return t;
  if (t_done) return nullptr;
  return create_thread_state();
}

void wake_writer();

// Reserves the next slot of the thread's ring, or counts a drop and returns null.
inline RawEvent* reserve_slot(ThreadState* t) {
  Ring& r = t->ring;
  uint64_t head = r.head.load(std::memory_order_relaxed);
  if (__builtin_expect(head - r.cached_tail >= r.capacity, 0)) {
    r.cached_tail = r.tail.load(std::memory_order_acquire);
    if (head - r.cached_tail >= r.capacity) {
      t->dropped.fetch_add(1, std::memory_order_relaxed);
      return nullptr;
    }
  }
  return &r.slots[head & (r.capacity - 1)];
}

// Publishes the reserved slot. Every quarter of the ring, looks at the
// writer's progress and wakes it when the ring is at least half full.
inline void commit_slot(ThreadState* t) {
  Ring& r = t->ring;
  uint64_t head = r.head.load(std::memory_order_relaxed) + 1;
  r.head.store(head, std::memory_order_release);
  if (__builtin_expect((head & r.quarter_mask) == 0, 0)) {
    r.cached_tail = r.tail.load(std::memory_order_acquire);
    if (head - r.cached_tail >= r.capacity / 2) wake_writer();
  }
}

// Records one event of the calling thread (not for the hot interposers, which
// fill the slot directly through IoScope).
void record_event(ThreadState* t, uint32_t name, uint64_t t0, uint64_t t1, int fd, uint32_t path,
                  int64_t offset, int64_t size, int64_t ret, int err);

// Brackets one intercepted call: decides whether to record, reads the start
// time, keeps the runtime from recording itself, and preserves errno.
class IoScope {
 public:
  IoScope(Fn fn, Layer layer) : fn_(fn) {
    if (!g_hot.active || !g_hot.layer_on[static_cast<int>(layer)]) return;
    ThreadState* t = thread_state();
    if (t == nullptr || t->busy) return;
    t_ = t;
    t->busy = 1;
    t0_ = now_ticks();
  }
  ~IoScope() {
    if (t_) t_->busy = 0;
  }
  IoScope(const IoScope&) = delete;
  IoScope& operator=(const IoScope&) = delete;

  bool on() const { return t_ != nullptr; }
  // Call right after the real function returns: takes the end time and errno.
  void stop(bool failed) {
    t1_ = now_ticks();
    err_ = failed ? errno : 0;
  }
  // For calls that return an error number instead of setting errno.
  void stop_with(int error_number) {
    t1_ = now_ticks();
    err_ = error_number;
  }
  // Records the call. errno is as the real call left it: the only runtime code
  // between stop() and here that can change errno (resolving an unknown
  // descriptor) restores it itself.
  void record(int fd, uint32_t path, int64_t offset, int64_t size, int64_t ret) {
    RawEvent* e = reserve_slot(t_);
    if (e) {
      e->start = t0_;
      e->end = t1_;
      e->offset = offset;
      e->size = size;
      e->ret = ret;
      e->name = static_cast<uint32_t>(fn_);
      e->path = path;
      e->ctx = t_->ctx;
      e->fd = fd;
      e->err = err_;
      commit_slot(t_);
    }
  }
  // Records nothing (excluded file).
  void skip() {}
  ThreadState* thread() const { return t_; }
  Fn fn() const { return fn_; }

 private:
  Fn fn_;
  ThreadState* t_ = nullptr;
  uint64_t t0_ = 0;
  uint64_t t1_ = 0;
  int err_ = 0;
};

// Marks the calling thread as inside the runtime for the scope's lifetime.
class InternalScope {
 public:
  InternalScope() : t_(t_state) {
    if (t_) ++t_->busy;
  }
  ~InternalScope() {
    if (t_) --t_->busy;
  }

 private:
  ThreadState* t_;
};

// Lifecycle (core.cc).
void ensure_initialized();
void flush_all(bool final_flush);  // drains every ring and writes; final also writes the footer
void finalize_process(int exit_status, Fn how);
void before_exec();
void after_failed_exec();
bool is_vfork_child();

}  // namespace strata::runtime
