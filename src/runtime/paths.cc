// Path resolution and the descriptor table. Paths are made absolute and
// normalised lexically (no symlink resolution: one cheap string pass per open)
// and checked once against the include/exclude prefixes when first interned.
#include <fcntl.h>
#include <pthread.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <sys/stat.h>

#include "runtime/state.h"
#include "runtime/sys.h"

namespace strata::runtime {

FdEntry* FdTable::get_slow(int fd) {
  if (fd < 0) return nullptr;
  unsigned chunk = static_cast<unsigned>(fd) >> kChunkBits;
  if (chunk >= kChunks) return nullptr;
  FdEntry* c = chunks_[chunk].load(std::memory_order_acquire);
  if (!c) {
    auto* fresh = static_cast<FdEntry*>(sys::map(sizeof(FdEntry) << kChunkBits));
    if (!fresh) return nullptr;
    if (chunks_[chunk].compare_exchange_strong(c, fresh, std::memory_order_acq_rel)) {
      c = fresh;
    } else {
      sys::unmap(fresh, sizeof(FdEntry) << kChunkBits);
    }
  }
  return &c[fd & ((1 << kChunkBits) - 1)];
}

void FdTable::clear_all() {
  for (auto& c : chunks_) {
    FdEntry* e = c.load(std::memory_order_acquire);
    if (!e) continue;
    for (int i = 0; i < (1 << kChunkBits); ++i) e[i].state.store(kFdUnknown, std::memory_order_relaxed);
  }
}

void FdTable::share_all_offsets() {
  for (auto& c : chunks_) {
    FdEntry* e = c.load(std::memory_order_acquire);
    if (!e) continue;
    for (int i = 0; i < (1 << kChunkBits); ++i)
      if (e[i].state.load(std::memory_order_relaxed) != kFdUnknown) e[i].pos.store(kPosFromKernel, std::memory_order_relaxed);
  }
}

static bool has_prefix(const char* path, const char* prefix) {
  // Most paths differ from a prefix in their first two bytes (/proc, /sys,
  // /dev): no strlen and strncmp calls for those, once per new path.
  if (prefix[0] == '\0' || path[0] != prefix[0] || (prefix[1] != '\0' && path[1] != prefix[1])) return false;
  size_t n = std::strlen(prefix);
  if (n == 0 || std::strncmp(path, prefix, n) != 0) return false;
  return prefix[n - 1] == '/' || path[n] == '\0' || path[n] == '/';
}

static bool excluded_by_config(const char* abs) {
  if (abs[0] != '/') return true;  // pipes, sockets, anonymous inodes
  const Config& c = g.cfg;
  for (int i = 0; i < c.nexclude; ++i)
    if (has_prefix(abs, c.exclude[i])) return true;
  if (c.ninclude == 0) return false;
  for (int i = 0; i < c.ninclude; ++i)
    if (has_prefix(abs, c.include[i])) return false;
  return true;
}

static uint32_t path_aux(const char* abs) { return excluded_by_config(abs) ? kPathExcluded : 0; }

// The id of `abs` (n bytes) if this thread interned it lately, else 0.
static uint32_t recent_path(const char* abs, size_t n) {
  ThreadState* t = t_state;
  if (!t || n < 8) return 0;
  // The paths of one data set often differ only near their end. (The
  // runtime's -fno-builtin makes std::memcpy a call: a load is meant.)
  uint64_t tail;
  __builtin_memcpy(&tail, abs + n - 8, 8);
  for (uint32_t sid : t->recent.paths) {
    if (sid == 0) continue;
    const Interner::Entry& e = g.strings.get(sid);
    if (e.len != n) continue;
    uint64_t other;
    __builtin_memcpy(&other, e.data + n - 8, 8);
    if (other == tail && std::memcmp(e.data, abs, n - 8) == 0) return sid;
  }
  return 0;
}

static uint32_t remember_path(uint32_t sid) {
  ThreadState* t = t_state;
  if (t && sid != 0) t->recent.paths[t->recent.next_path++ % RecentIds::kPaths] = sid;
  return sid;
}

// `abs` (n bytes, absolute and normal), not among the recent paths.
static uint32_t intern_new_path(const char* abs, size_t n) {
  return remember_path(g.strings.intern(std::string_view(abs, n), path_aux));
}

uint32_t intern_path(const char* abs) {
  const size_t n = std::strlen(abs);
  if (uint32_t sid = recent_path(abs, n)) return sid;
  return intern_new_path(abs, n);
}

// Collapses "//", "/./" and "/../" in place; `p` is absolute.
static void normalise(char* p) {
  char* out = p;
  const char* in = p;
  while (*in) {
    while (*in == '/') ++in;
    if (!*in) break;
    const char* seg = in;
    while (*in && *in != '/') ++in;
    size_t len = static_cast<size_t>(in - seg);
    if (len == 1 && seg[0] == '.') continue;
    if (len == 2 && seg[0] == '.' && seg[1] == '.') {
      while (out > p && *--out != '/') {
      }
      continue;
    }
    *out++ = '/';
    std::memmove(out, seg, len);
    out += len;
  }
  if (out == p) *out++ = '/';
  *out = '\0';
}

uint32_t path_at_unsaved(int dirfd, const char* path);

// Whether p (n bytes, NUL-terminated) holds "//", "/./" or "/../" or ends in
// "/." or "/..". memchr finds a path's few slashes; a loop over every byte
// took ~290 instructions for a 45-byte path.
static bool needs_normalise(const char* p, size_t n) {
  const char* const end = p + n;
  for (auto s = static_cast<const char*>(std::memchr(p, '/', n)); s;
       s = static_cast<const char*>(std::memchr(s + 1, '/', static_cast<size_t>(end - s - 1))))
    if (s[1] == '/' || (s[1] == '.' && (s[2] == '/' || s[2] == '\0' || s[2] == '.'))) return true;
  return false;
}

uint32_t path_at(int dirfd, const char* path) {
  if (!path) return 0;
  int saved = errno;
  uint32_t sid = path_at_unsaved(dirfd, path);
  errno = saved;
  return sid;
}

// Paths are joined and normalised, and links read, in buffers on the stack.
// Most paths are short: a small buffer first, and a PATH_MAX one only for a
// path that does not fit, in a frame of its own. An interposed call in a
// signal handler running on a small alternate stack (a crash handler's
// 8 KiB) then adds well under 1 KiB to it instead of 4 KiB, which
// overflowed it (Safety.AHandlerOnAnAlternateStackHasItsStack).
constexpr size_t kShortPath = 512;

// path (n bytes, relative or not normal) joined to its base and normalised,
// interned; `too_long` when it does not fit in N bytes.
template <size_t N>
__attribute__((noinline)) static uint32_t joined_path(int dirfd, const char* path, size_t n, bool& too_long) {
  char buf[N];
  size_t used = 0;
  if (path[0] != '/') {
    uint32_t base = 0;
    if (dirfd == AT_FDCWD) {
      base = g.cwd_sid.load(std::memory_order_acquire);
    } else if (FdEntry* e = fd_entry(dirfd)) {
      base = e->path.load(std::memory_order_relaxed);
    }
    if (base == 0) return 0;
    const Interner::Entry& b = g.strings.get(base);
    if (b.len + 2 >= sizeof(buf)) {
      too_long = true;
      return 0;
    }
    std::memcpy(buf, b.data, b.len);
    used = b.len;
    buf[used++] = '/';
  }
  if (used + n + 1 > sizeof(buf)) {
    too_long = true;
    return 0;
  }
  std::memcpy(buf + used, path, n + 1);
  if (uint32_t sid = recent_path(buf, used + n)) return sid;
  if (!needs_normalise(buf, used + n)) return intern_new_path(buf, used + n);
  normalise(buf);
  return intern_path(buf);
}

uint32_t path_at_unsaved(int dirfd, const char* path) {
  // Read no further than the kernel does (PATH_MAX bytes, then ENAMETOOLONG):
  // a path with no NUL there may run into memory that cannot be read, which
  // crashed the program in strlen (Edges.UnterminatedPathsGetTheKernelsError).
  // Such a path is not a file's: a drop.
  const size_t n = strnlen(path, kPathMax);
  if (n == static_cast<size_t>(kPathMax)) return 0;
  // A path equal to a recent (interned) one is absolute and normal already:
  // checked before the scan for "//", "/./" and "/../".
  if (path[0] == '/') {
    if (uint32_t sid = recent_path(path, n)) return sid;
    if (!needs_normalise(path, n)) return intern_new_path(path, n);
  }
  bool too_long = false;
  const uint32_t sid = joined_path<kShortPath>(dirfd, path, n, too_long);
  return too_long ? joined_path<kPathMax>(dirfd, path, n, too_long) : sid;
}

template <size_t N>
__attribute__((noinline)) static bool cwd_in(uint32_t& sid) {
  char buf[N];
  if (sys::getcwd(buf, sizeof(buf)) > 0) {
    sid = intern_path(buf);
    return true;
  }
  return false;
}

void refresh_cwd() {
  // A directory too deep for PATH_MAX leaves the cwd unknown: relative paths
  // under it then count as drops instead of resolving against a stale cwd.
  uint32_t sid = 0;
  if (!cwd_in<kShortPath>(sid)) cwd_in<kPathMax>(sid);
  g.cwd_sid.store(sid, std::memory_order_release);
}

// The interned target of /proc/self/fd/<fd>: -1 when it cannot be read, -2
// when it may not fit in N bytes.
template <size_t N>
__attribute__((noinline)) static int64_t fd_link_sid(int fd) {
  char link[32] = "/proc/self/fd/", digits[12], target[N];
  int nd = 0;
  for (unsigned v = static_cast<unsigned>(fd); nd == 0 || v != 0; v /= 10) digits[nd++] = static_cast<char>('0' + v % 10);
  size_t at = std::strlen(link);
  while (nd > 0) link[at++] = digits[--nd];
  link[at] = '\0';
  const long n = sys::readlink(link, target, sizeof(target) - 1);
  if (n <= 0) return -1;
  if (N < kPathMax && static_cast<size_t>(n) == sizeof(target) - 1) return -2;
  target[n] = '\0';
  return intern_path(target);
}

// First sight of a descriptor the runtime did not see opened: ask /proc.
// Returns false, leaving the entry unknown, when the descriptor is not open
// (the number may be opened later by a call strata does not see).
// Sockets (never traced: their link is "socket:[inode]") are told by fstat:
// reading the link costs ~10 times more, and a PyTorch DataLoader meets
// hundreds of them. Pipes are not: a named FIFO's link is its path.
static bool resolve_unknown(int fd, FdEntry* e) {
  struct stat st;
  if (sys::fstat(fd, &st) != 0) return false;
  uint32_t sid = 0;
  if (!S_ISSOCK(st.st_mode)) {
    int64_t got = fd_link_sid<kShortPath>(fd);
    if (got == -2) got = fd_link_sid<kPathMax>(fd);
    if (got < 0) return false;
    sid = static_cast<uint32_t>(got);
  }
  const bool traced = !path_excluded(sid);
  const long pos = traced ? sys::lseek(fd, 0, SEEK_CUR) : 0;
  e->path.store(sid, std::memory_order_relaxed);
  // Inherited: the description may be shared with the process that opened it.
  e->pos.store(kPosFromKernel, std::memory_order_relaxed);
  e->spos.store(pos < 0 ? 0 : pos, std::memory_order_relaxed);
  e->state.store(traced ? kFdTraced : kFdExcluded, std::memory_order_release);
  return true;
}

FdEntry* resolve_fd(int fd, FdEntry* e) {
  int saved = errno;
  bool open = resolve_unknown(fd, e);
  errno = saved;
  return open ? e : nullptr;
}

uint32_t fd_path(int fd) {
  FdEntry* e = fd_entry(fd);
  if (!e || e->state.load(std::memory_order_relaxed) != kFdTraced) return 0;
  return e->path.load(std::memory_order_relaxed);
}

void fd_opened(int fd, uint32_t sid, int64_t pos) {
  FdEntry* e = g.fds.get(fd, true);
  if (!e) return;
  e->path.store(sid, std::memory_order_relaxed);
  e->pos.store(pos, std::memory_order_relaxed);
  e->spos.store(pos == kPosFromKernel ? 0 : pos, std::memory_order_relaxed);
  e->state.store(sid == 0 ? kFdLost : path_excluded(sid) ? kFdExcluded : kFdTraced, std::memory_order_release);
}

void fd_offsets_shared() { g.fds.share_all_offsets(); }

void fd_set_append(int fd) {
  if (FdEntry* e = g.fds.get(fd, false)) e->pos.store(kPosFromKernel, std::memory_order_relaxed);
}

int64_t kernel_offset_before(int fd, int64_t transferred) {
  int saved = errno;
  long now = sys::lseek(fd, 0, SEEK_CUR);
  errno = saved;
  if (now < 0) return -1;
  return transferred > 0 ? now - transferred : now;
}

void fd_closed(int fd) {
  if (FdEntry* e = g.fds.get(fd, false)) e->state.store(kFdUnknown, std::memory_order_release);
}

void fd_duplicated(int oldfd, int newfd) {
  FdEntry* src = fd_entry(oldfd);
  FdEntry* dst = g.fds.get(newfd, true);
  if (!src || !dst) return;
  src->pos.store(kPosFromKernel, std::memory_order_relaxed);
  dst->path.store(src->path.load(std::memory_order_relaxed), std::memory_order_relaxed);
  dst->pos.store(kPosFromKernel, std::memory_order_relaxed);
  dst->spos.store(src->spos.load(std::memory_order_relaxed), std::memory_order_relaxed);
  dst->state.store(src->state.load(std::memory_order_relaxed), std::memory_order_release);
}

}  // namespace strata::runtime
