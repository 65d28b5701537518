#include "runtime/intern.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>

#include <cstring>

#define XXH_INLINE_ALL
// The runtime is built with -fno-builtin (it defines functions named like
// libc's): xxhash's default unaligned reads, memcpy of 8 bytes, became a
// call through the PLT each. Packed-struct reads are plain loads on x86-64.
#define XXH_FORCE_MEMORY_ACCESS 1
#include <xxhash.h>

#include "runtime/sys.h"

namespace strata::runtime {

__thread int t_runtime_locks __attribute__((tls_model("initial-exec"))) = 0;
__thread SpinLock* t_spin_wanted __attribute__((tls_model("initial-exec"))) = nullptr;

namespace {
// This thread's token: the address of one of its thread-local variables.
uintptr_t my_token() { return reinterpret_cast<uintptr_t>(&t_runtime_locks); }
}  // namespace

void SpinLock::lock_uncounted() {
  for (int spins = 0;; ++spins) {
    uintptr_t expected = 0;
    if (owner_.compare_exchange_weak(expected, my_token(), std::memory_order_acquire, std::memory_order_relaxed))
      return;
    if (spins > 64) sched_yield();
  }
}

bool SpinLock::lock() {
  if (owner_.load(std::memory_order_relaxed) == my_token()) return false;
  // Named and counted before it is waited for: a handler that forks or
  // jumps out meanwhile must see it (fork_prepare, leave_spin_lock).
  t_spin_wanted = this;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  ++t_runtime_locks;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  lock_uncounted();
  return true;
}

void SpinLock::release_if_mine() {
  uintptr_t mine = my_token();
  owner_.compare_exchange_strong(mine, 0, std::memory_order_release, std::memory_order_relaxed);
}

bool leave_spin_lock() {
  SpinLock* l = t_spin_wanted;
  if (t_runtime_locks == 0) {
    t_spin_wanted = nullptr;  // a jump between an unlock and intern_impl restoring it
    return true;
  }
  if (t_runtime_locks != 1 || !l) return false;
  l->release_if_mine();
  t_spin_wanted = nullptr;
  t_runtime_locks = 0;
  return true;
}

namespace {
uint64_t index_slot(uint64_t hash, uint32_t id) { return (hash & ~uint64_t{0xffffffff}) | id; }
}  // namespace

// The table changes in an order that a handler's longjmp can interrupt at
// any point (leave_spin_lock then releases the lock): every store that makes
// something visible comes after what it makes visible, each step kept in
// place by a signal fence (the compiler must not reorder them across a
// handler of this thread), and an interrupted step leaves at worst an
// unused slot or unused bytes. Blocking signals around every change instead
// cost two system calls per new string, ~0.5 us (bench/README.md, session
// 25); only the rare steps run with signals blocked (make_room).
namespace {
inline void in_this_order() { std::atomic_signal_fence(std::memory_order_seq_cst); }
}  // namespace

// Copies a string into the arena, which has room for it (make_room):
// arena_ .. arena_ + arena_left_ stays free space of one mapping, the space
// shrinking before the pointer moves.
const char* Interner::store_bytes(std::string_view s) {
  char* p = arena_;
  std::memcpy(p, s.data(), s.size());
  p[s.size()] = '\0';
  in_this_order();
  arena_left_ -= s.size() + 1;
  in_this_order();
  arena_ += s.size() + 1;
  return p;
}

// The new index is filled, then published by one store, then the old one
// unmapped.
void Interner::grow_index() {
  const size_t cap = index_ ? index_->cap * 2 : 4096;
  auto* idx = static_cast<Index*>(sys::map(sizeof(Index) + cap * sizeof(uint64_t)));
  if (!idx) return;
  idx->cap = cap;
  const uint32_t n = count_.load(std::memory_order_relaxed);
  for (uint32_t id = 1; id <= n; ++id) {
    const Entry& e = get(id);
    const uint64_t hash = XXH3_64bits(e.data, e.len);
    size_t h = hash & (cap - 1);
    while (idx->slots[h]) h = (h + 1) & (cap - 1);
    idx->slots[h] = index_slot(hash, id);
  }
  Index* const old = index_;
  index_ = idx;
  if (old) sys::unmap(old, sizeof(Index) + old->cap * sizeof(uint64_t));
}

// Room for entry `id` and `bytes` more bytes: the rare steps (a larger
// index, a chunk of entries, a new arena), with every signal blocked. A
// rehash of n strings takes long enough that a program's periodic handler
// jumping out of it (a 30 us timer) stopped it every time, and the program,
// retrying its open, never went on (Edges.LongjmpsThatLandInsideStrataDo
// NotHang); a mapping made but not yet stored would leak. Two system calls
// each time, log2(strings) + strings / 4,096 + bytes / 1 MiB times in all.
bool Interner::make_room(uint32_t id, size_t bytes) {
  const uint32_t chunk = (id - 1) >> kChunkBits;
  auto fits = [&] {
    return index_ && size_t{id} * 2 <= index_->cap && chunks_[chunk] && bytes <= arena_left_;
  };
  if (fits()) return true;
  sigset_t all, saved;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &saved);
  if (!index_ || size_t{id} * 2 > index_->cap) grow_index();
  if (!chunks_[chunk]) chunks_[chunk] = static_cast<Entry*>(sys::map(sizeof(Entry) << kChunkBits));
  if (bytes > arena_left_) {
    const size_t size = bytes > kArenaChunk ? bytes : kArenaChunk;
    if (char* fresh = static_cast<char*>(sys::map(size))) {
      arena_ = fresh;
      arena_left_ = size;
    }
  }
  pthread_sigmask(SIG_SETMASK, &saved, nullptr);
  return fits();
}

uint32_t Interner::intern_impl(std::string_view s, uint32_t (*aux_of)(const char*), uint32_t aux) {
  const uint64_t hash = XXH3_64bits(s.data(), s.size());
  SpinLock* const outer = t_spin_wanted;  // a handler's interning comes between a thread's lock and unlock
  if (!lock_.lock()) return 0;
  const uint32_t id = find_or_insert(s, hash, aux_of, aux);
  lock_.unlock();
  t_spin_wanted = outer;
  return id;
}

uint32_t Interner::find_or_insert(std::string_view s, uint64_t hash, uint32_t (*aux_of)(const char*), uint32_t aux) {
  if (const Index* idx = index_) {
    const uint64_t tag = index_slot(hash, 0);
    const size_t mask = idx->cap - 1;
    for (size_t h = hash & mask; idx->slots[h] != 0; h = (h + 1) & mask) {
      const uint64_t slot = idx->slots[h];
      if ((slot & ~uint64_t{0xffffffff}) != tag) continue;
      const uint32_t id = static_cast<uint32_t>(slot);
      if (id > count_.load(std::memory_order_relaxed)) continue;  // left by a jump out of insert
      const Entry& e = get(id);
      if (e.len == s.size() && std::memcmp(e.data, s.data(), s.size()) == 0) return id;
    }
  }
  return insert(s, hash, aux_of, aux);
}

// The entry, then its slot in the index, then the count that publishes it.
// A jump before the count leaves the entry unpublished (the next new string
// takes its id and its place) and maybe a slot naming that id under another
// hash, which probes skip (or compare, once the id is published again); the
// next growth drops it.
uint32_t Interner::insert(std::string_view s, uint64_t hash, uint32_t (*aux_of)(const char*), uint32_t aux) {
  const uint32_t id = count_.load(std::memory_order_relaxed) + 1;
  if (((id - 1) >> kChunkBits) >= kMaxChunks || !make_room(id, s.size() + 1)) return 0;
  Index* const idx = index_;
  const size_t mask = idx->cap - 1;
  size_t h = hash & mask;
  while (idx->slots[h] != 0) h = (h + 1) & mask;
  const char* data = store_bytes(s);
  if (aux_of) aux = aux_of(data);
  chunks_[(id - 1) >> kChunkBits][(id - 1) & kChunkMask] = Entry{data, static_cast<uint32_t>(s.size()), aux};
  in_this_order();
  idx->slots[h] = index_slot(hash, id);
  in_this_order();
  count_.store(id, std::memory_order_release);
  return id;
}

}  // namespace strata::runtime
