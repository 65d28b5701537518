#include "runtime/intern.h"

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

const char* Interner::store_bytes(std::string_view s) {
  if (s.size() + 1 > arena_left_) {
    size_t bytes = s.size() + 1 > kArenaChunk ? s.size() + 1 : kArenaChunk;
    arena_ = static_cast<char*>(sys::map(bytes));
    if (!arena_) {
      arena_left_ = 0;
      return nullptr;
    }
    arena_left_ = bytes;
  }
  char* p = arena_;
  std::memcpy(p, s.data(), s.size());
  p[s.size()] = '\0';
  arena_ += s.size() + 1;
  arena_left_ -= s.size() + 1;
  return p;
}

void Interner::grow_index() {
  size_t cap = index_cap_ ? index_cap_ * 2 : 4096;
  auto* idx = static_cast<uint64_t*>(sys::map(cap * sizeof(uint64_t)));
  if (!idx) return;
  uint32_t n = count_.load(std::memory_order_relaxed);
  for (uint32_t id = 1; id <= n; ++id) {
    const Entry& e = get(id);
    const uint64_t hash = XXH3_64bits(e.data, e.len);
    size_t h = hash & (cap - 1);
    while (idx[h]) h = (h + 1) & (cap - 1);
    idx[h] = index_slot(hash, id);
  }
  if (index_) sys::unmap(index_, index_cap_ * sizeof(uint64_t));
  index_ = idx;
  index_cap_ = cap;
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
  if (index_) {
    const uint64_t tag = index_slot(hash, 0);
    for (size_t h = hash & (index_cap_ - 1); index_[h] != 0; h = (h + 1) & (index_cap_ - 1)) {
      const uint64_t slot = index_[h];
      if ((slot & ~uint64_t{0xffffffff}) != tag) continue;
      const uint32_t id = static_cast<uint32_t>(slot);
      const Entry& e = get(id);
      if (e.len == s.size() && std::memcmp(e.data, s.data(), s.size()) == 0) return id;
    }
  }
  // New: the table changes, with every signal blocked. A handler that
  // jumped out of it half changed would leave it unusable (an index
  // unmapped, an arena overrun); one that jumps out of the lookup above
  // only has the lock released (leave_spin_lock). Once per new string:
  // two system calls where the path's open costs more.
  sigset_t all, saved;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &saved);
  const uint32_t id = insert(s, hash, aux_of, aux);
  pthread_sigmask(SIG_SETMASK, &saved, nullptr);
  return id;
}

uint32_t Interner::insert(std::string_view s, uint64_t hash, uint32_t (*aux_of)(const char*), uint32_t aux) {
  const uint32_t n = count_.load(std::memory_order_relaxed);
  if ((n + 1) * 2 > index_cap_) grow_index();
  if (!index_) return 0;
  size_t h = hash & (index_cap_ - 1);
  while (index_[h] != 0) h = (h + 1) & (index_cap_ - 1);
  const uint32_t id = n + 1;
  const uint32_t chunk = (id - 1) >> kChunkBits;
  if (chunk >= kMaxChunks) return 0;
  if (!chunks_[chunk]) chunks_[chunk] = static_cast<Entry*>(sys::map(sizeof(Entry) << kChunkBits));
  const char* data = store_bytes(s);
  if (!chunks_[chunk] || !data) return 0;
  if (aux_of) aux = aux_of(data);
  chunks_[chunk][(id - 1) & kChunkMask] = Entry{data, static_cast<uint32_t>(s.size()), aux};
  index_[h] = index_slot(hash, id);
  count_.store(id, std::memory_order_release);
  return id;
}

}  // namespace strata::runtime
