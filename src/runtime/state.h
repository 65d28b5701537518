// Process-wide state of the runtime: configuration, interning tables, the fd
// table and the thread registry. One instance, `g`, zero-initialised before any
// constructor runs so interposers called early see "inactive".
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstdint>

#include "runtime/intern.h"
#include "runtime/runtime.h"

namespace strata::runtime {

inline constexpr int kMaxPrefixes = 16;
inline constexpr int kPathMax = 4096;

struct Config {
  char dir[kPathMax];          // STRATA_DIR
  bool live;                   // STRATA_LIVE=1: report to and obey <dir>/.live/ (live.cc)
  uint32_t smart_iterations;   // STRATA_SMART_ITERATIONS: main-loop iterations kept in full in mode smart (smart.h)
  uint64_t buffer_bytes;       // STRATA_BUFFER_SIZE, per thread ring
  uint64_t flush_interval_ms;  // STRATA_FLUSH_INTERVAL_MS
  int zstd_level;              // STRATA_ZSTD_LEVEL
  double tsc_hz;               // STRATA_TSC_HZ (0: use CLOCK_MONOTONIC)
  int nexclude, ninclude;
  char exclude[kMaxPrefixes][256];
  char include[kMaxPrefixes][256];
};

// One descriptor's tracking state. kFdLost: a file opened under a path strata
// could not record (longer than PATH_MAX): its calls count as drops. A socket
// or an excluded file is kFdExcluded: its calls are left out on purpose, and
// counting them as drops told users of every DataLoader job (workers talk
// over sockets) that thousands of events were lost.
enum FdState : uint32_t { kFdUnknown = 0, kFdTraced = 1, kFdExcluded = 2, kFdLost = 3 };
// A descriptor whose offset strata cannot follow by counting bytes (O_APPEND,
// an open file description shared through dup or fork, one inherited across
// exec) has pos == kPosFromKernel: its calls read the offset from the kernel.
inline constexpr int64_t kPosFromKernel = INT64_MIN;
struct FdEntry {
  std::atomic<uint32_t> state;
  std::atomic<uint32_t> path;  // string id; 0 for a socket or a lost path (kFdLost)
  std::atomic<int64_t> pos;    // POSIX file offset as tracked, or kPosFromKernel
  std::atomic<int64_t> spos;   // STDIO stream position as tracked
};

class FdTable {
 public:
  static constexpr int kChunkBits = 10;
  static constexpr int kChunks = 1024;  // fds up to 2^20 are tracked
  FdEntry* get(int fd, bool create) {
    unsigned chunk = static_cast<unsigned>(fd) >> kChunkBits;
    if (__builtin_expect(chunk < kChunks, 1)) {
      FdEntry* c = chunks_[chunk].load(std::memory_order_acquire);
      if (__builtin_expect(c != nullptr, 1)) return &c[fd & ((1 << kChunkBits) - 1)];
    }
    return create ? get_slow(fd) : nullptr;
  }
  void clear_all();
  void share_all_offsets();
  // Calls f(fd, entry) for every descriptor in state kFdTraced.
  template <class F>
  void for_each_traced(F f) const {
    for (int c = 0; c < kChunks; ++c) {
      const FdEntry* e = chunks_[c].load(std::memory_order_acquire);
      if (!e) continue;
      for (int i = 0; i < (1 << kChunkBits); ++i)
        if (e[i].state.load(std::memory_order_relaxed) == kFdTraced) f((c << kChunkBits) | i, e[i]);
    }
  }

 private:
  FdEntry* get_slow(int fd);
  std::atomic<FdEntry*> chunks_[kChunks] = {};
};

// Interned string aux bits.
inline constexpr uint32_t kPathExcluded = 1;

struct Globals {
  Config cfg{};
  Interner strings;   // paths, names, categories, tag keys and values
  Interner names;     // key: name_sid,cat_sid,kind,fields (16 bytes); aux: fields | kind << 24
  Interner contexts;  // key: sorted TagSlot array
  Interner metadata;  // key: key_sid,value_sid (8 bytes)
  FdTable fds;
  std::atomic<uint32_t> cwd_sid{0};
  std::atomic<ThreadState*> threads{nullptr};
  std::atomic<uint32_t> thread_states{0};  // how many are mapped (each with its ring)
  std::atomic<uint32_t> rings_freed{0};    // bumped (and woken) as the writer frees exited threads' rings
  std::atomic<uint64_t> ringless_dropped{0};  // events of threads whose ring could not be mapped
  pthread_key_t thread_key{};
  int pid = 0, ppid = 0;
  uint64_t start_wall_ns = 0, start_mono_ns = 0, start_ticks = 0;
  uint64_t ns_per_tick_q32 = 0;  // fixed point 32.32, when ticks are TSC cycles
  std::atomic<int> initialized{0};  // 0 no, 1 in progress, 2 done
  std::atomic<bool> finalized{false};
  bool direct_eligible = false;  // direct.h: all but the thread count allow direct calls
};
extern Globals g __attribute__((visibility("hidden")));
// Thread states (and rings) mapped before an exiting thread has the writer
// free its ring at once (thread_exit in core.cc, drain in writer.cc).
inline constexpr uint32_t kRingsBeforeRecycling = 8;

// Ticks -> CLOCK_MONOTONIC ns.
inline uint64_t ticks_to_ns(uint64_t t) {
  if (!g_hot.use_tsc) return t;
  int64_t d = static_cast<int64_t>(t - g.start_ticks);
  __int128 ns = static_cast<__int128>(d) * static_cast<__int128>(g.ns_per_tick_q32);
  return g.start_mono_ns + static_cast<int64_t>(ns >> 32);
}

// Paths (paths.cc).
uint32_t intern_path(const char* abs_path);
uint32_t path_at(int dirfd, const char* path);  // absolute, normalised, interned
// path_at for a call that returned, `failed` or not, with errno as it left
// it: a path the kernel could not read (EFAULT, a bad pointer) is not read
// here either, where it would crash the program instead (counted as a drop).
inline uint32_t path_after_call(int dirfd, const char* path, bool failed) {
  return failed && errno == EFAULT ? 0 : path_at(dirfd, path);
}
inline bool path_excluded(uint32_t sid) { return sid == 0 || (g.strings.get(sid).aux & kPathExcluded); }
// Path of a descriptor for recording; 0 if it is excluded or not a file.
uint32_t fd_path(int fd);
void fd_opened(int fd, uint32_t sid, int64_t pos);
void fd_closed(int fd);
void fd_duplicated(int oldfd, int newfd);  // both now share one offset
void fd_offsets_shared();                  // fork: every tracked descriptor shares its offset
void fd_set_append(int fd);                // F_SETFL with O_APPEND
// Offset at which a call that transferred `transferred` bytes (or failed)
// started, from the kernel's current offset; -1 if the descriptor has none.
int64_t kernel_offset_before(int fd, int64_t transferred);
FdEntry* resolve_fd(int fd, FdEntry* e);  // first sight of a descriptor: ask /proc
// Resolved entry of a descriptor, or null for untracked fds.
inline FdEntry* fd_entry(int fd) {
  FdEntry* e = g.fds.get(fd, true);
  if (__builtin_expect(e != nullptr && e->state.load(std::memory_order_acquire) != kFdUnknown, 1)) return e;
  return e ? resolve_fd(fd, e) : nullptr;
}
// The tracking state of a descriptor (resolving one seen for the first time);
// `e` is its entry, null for descriptors the table cannot hold.
__attribute__((always_inline)) inline uint32_t fd_lookup(int fd, FdEntry*& e) {
  e = g.fds.get(fd, true);
  if (__builtin_expect(e == nullptr, 0)) return kFdUnknown;
  const uint32_t state = e->state.load(std::memory_order_acquire);
  if (__builtin_expect(state != kFdUnknown, 1)) return state;
  e = resolve_fd(fd, e);
  return e ? e->state.load(std::memory_order_acquire) : kFdUnknown;
}
void refresh_cwd();

}  // namespace strata::runtime
