// Interning tables of the runtime: strings (paths, names, tag values), event
// names and tag contexts. Producers (any thread, on open/tag/region calls, not
// on the read/write hot path) insert under a spinlock; the writer thread reads
// published entries without locking, by index, to emit DICT blocks.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace strata::runtime {

// Runtime locks (interning tables, the writer's mutex) the calling thread
// holds: a signal handler that forks while this thread is inside one must not
// wait for it in the fork handler (core.cc, fork_prepare).
extern __thread int t_runtime_locks __attribute__((tls_model("initial-exec")));

class SpinLock;
// The spinlock this thread holds or waits for (the last one it asked for).
extern __thread SpinLock* t_spin_wanted __attribute__((tls_model("initial-exec")));

// Owned by a thread (a token of its own), so that a signal handler of the
// thread that holds it can tell: it never waits for its own thread, which
// could not go on until the handler returned.
class SpinLock {
 public:
  // False, without waiting, when this thread holds the lock already (a
  // signal handler that interrupted the thread inside it).
  bool lock();
  void unlock() {
    owner_.store(0, std::memory_order_release);
    --t_runtime_locks;
  }
  void reset() { owner_.store(0, std::memory_order_relaxed); }
  // For fork handlers: not counted as held by the forking thread.
  void lock_uncounted();
  void unlock_uncounted() { owner_.store(0, std::memory_order_release); }
  // Releases the lock if this thread holds it (it leaves the frame that took
  // it with longjmp, signals.cc).
  void release_if_mine();

 private:
  std::atomic<uintptr_t> owner_{0};
};

// A longjmp leaves the frames of the runtime on this thread: releases the
// spinlock the thread holds or waits for, when that is the only runtime lock
// it has (never the writer's mutex). A table changes in an order a jump
// may abandon anywhere (Interner::insert, intern.cc). False when the thread
// keeps a lock.
bool leave_spin_lock();

class Interner {
 public:
  struct Entry {
    const char* data;
    uint32_t len;
    uint32_t aux;  // caller-defined (e.g. path excluded bit, name fields)
  };

  // Returns the id (>= 1) of the byte string, inserting it with `aux` if new;
  // 0 if the table is full, or when a signal handler asks while its thread
  // holds the table's lock.
  uint32_t intern(std::string_view s, uint32_t aux = 0) { return intern_impl(s, nullptr, aux); }
  // The same, with `aux` computed by aux_of(stored NUL-terminated copy) only
  // when the string is new (e.g. the path exclusion check, once per path).
  uint32_t intern(std::string_view s, uint32_t (*aux_of)(const char*)) { return intern_impl(s, aux_of, 0); }
  // Number of entries whose contents are visible (ids 1..published()).
  uint32_t published() const { return count_.load(std::memory_order_acquire); }
  const Entry& get(uint32_t id) const { return chunks_[(id - 1) >> kChunkBits][(id - 1) & kChunkMask]; }

  void lock_for_fork() { lock_.lock_uncounted(); }
  void unlock_after_fork() { lock_.unlock_uncounted(); }
  void reset_lock_in_child() { lock_.reset(); }

 private:
  static constexpr uint32_t kChunkBits = 12;
  static constexpr uint32_t kChunkMask = (1u << kChunkBits) - 1;
  static constexpr uint32_t kMaxChunks = 4096;
  static constexpr size_t kArenaChunk = 1 << 20;

  uint32_t intern_impl(std::string_view s, uint32_t (*aux_of)(const char*), uint32_t aux);
  uint32_t find_or_insert(std::string_view s, uint64_t hash, uint32_t (*aux_of)(const char*), uint32_t aux);
  uint32_t insert(std::string_view s, uint64_t hash, uint32_t (*aux_of)(const char*), uint32_t aux);
  const char* store_bytes(std::string_view s);
  void grow_index();
  bool make_room(uint32_t id, size_t bytes);

  SpinLock lock_;
  std::atomic<uint32_t> count_{0};
  Entry* chunks_[kMaxChunks] = {};
  // Open addressing: (hash's upper 32 bits << 32) | id, 0 = empty. The hash
  // bits skip the entry and its bytes (two cache misses) on most probes that
  // are not the string. One mapping: its capacity, then its slots, so that
  // one pointer store replaces both (a jump out of the growth, intern.cc).
  struct Index {
    size_t cap;
    uint64_t slots[];
  };
  Index* index_ = nullptr;
  char* arena_ = nullptr;
  size_t arena_left_ = 0;
};

}  // namespace strata::runtime
