// POSIX interposers: open/close, read/write and their positional, vectored
// and fortified forms, seeks, syncs, size changes, metadata (the stat family
// glibc >= 2.33 exports directly), directories, mappings and descriptor
// duplication. Each records one event through io_common.h.
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>

#include "runtime/direct.h"
#include "runtime/io_common.h"
#include "runtime/real.h"

using namespace strata::runtime;

extern "C" {
int __open_2(const char*, int);
int __open64_2(const char*, int);
int __openat_2(int, const char*, int);
int __openat64_2(int, const char*, int);
ssize_t __read_chk(int, void*, size_t, size_t);
ssize_t __pread_chk(int, void*, size_t, off_t, size_t);
ssize_t __pread64_chk(int, void*, size_t, off64_t, size_t);
}

namespace {
STRATA_REAL_DECL(open);
STRATA_REAL_DECL(shm_open);  // libc's since glibc 2.34; see real_shm_open_fn
STRATA_REAL_DECL(open64);
STRATA_REAL_DECL(openat);
STRATA_REAL_DECL(openat64);
STRATA_REAL_DECL(creat);
STRATA_REAL_DECL(creat64);
STRATA_REAL_DECL(__open_2);
STRATA_REAL_DECL(__open64_2);
STRATA_REAL_DECL(__openat_2);
STRATA_REAL_DECL(__openat64_2);
STRATA_REAL_DECL(close);
STRATA_REAL_DECL(read);
STRATA_REAL_DECL(write);
STRATA_REAL_DECL(__read_chk);
STRATA_REAL_DECL(pread);
STRATA_REAL_DECL(pread64);
STRATA_REAL_DECL(__pread_chk);
STRATA_REAL_DECL(__pread64_chk);
STRATA_REAL_DECL(pwrite);
STRATA_REAL_DECL(pwrite64);
STRATA_REAL_DECL(readv);
STRATA_REAL_DECL(writev);
STRATA_REAL_DECL(preadv);
STRATA_REAL_DECL(preadv64);
STRATA_REAL_DECL(pwritev);
STRATA_REAL_DECL(pwritev64);
STRATA_REAL_DECL(preadv2);
STRATA_REAL_DECL(pwritev2);
STRATA_REAL_DECL(lseek);
STRATA_REAL_DECL(lseek64);
STRATA_REAL_DECL(fsync);
STRATA_REAL_DECL(fdatasync);
STRATA_REAL_DECL(sync_file_range);
STRATA_REAL_DECL(ftruncate);
STRATA_REAL_DECL(ftruncate64);
STRATA_REAL_DECL(fallocate);
STRATA_REAL_DECL(fallocate64);
STRATA_REAL_DECL(posix_fallocate);
STRATA_REAL_DECL(posix_fallocate64);
STRATA_REAL_DECL(stat);
STRATA_REAL_DECL(stat64);
STRATA_REAL_DECL(lstat);
STRATA_REAL_DECL(lstat64);
STRATA_REAL_DECL(fstat);
STRATA_REAL_DECL(fstat64);
STRATA_REAL_DECL(fstatat);
STRATA_REAL_DECL(fstatat64);
STRATA_REAL_DECL(statx);
STRATA_REAL_DECL(access);
STRATA_REAL_DECL(faccessat);
STRATA_REAL_DECL(mkdir);
STRATA_REAL_DECL(mkdirat);
STRATA_REAL_DECL(rmdir);
STRATA_REAL_DECL(unlink);
STRATA_REAL_DECL(unlinkat);
STRATA_REAL_DECL(rename);
STRATA_REAL_DECL(renameat);
STRATA_REAL_DECL(renameat2);
STRATA_REAL_DECL(opendir);
STRATA_REAL_DECL(fdopendir);
STRATA_REAL_DECL(readdir);
STRATA_REAL_DECL(readdir64);
STRATA_REAL_DECL(closedir);
STRATA_REAL_DECL(mmap);
STRATA_REAL_DECL(mmap64);
STRATA_REAL_DECL(munmap);
STRATA_REAL_DECL(msync);
STRATA_REAL_DECL(dup);
STRATA_REAL_DECL(dup2);
STRATA_REAL_DECL(dup3);
STRATA_REAL_DECL(fcntl);
STRATA_REAL_DECL(fcntl64);
STRATA_REAL_DECL(sendfile);
STRATA_REAL_DECL(sendfile64);
STRATA_REAL_DECL(copy_file_range);
STRATA_REAL_DECL(chdir);
STRATA_REAL_DECL(fchdir);

constexpr Layer P = Layer::POSIX;

int mode_arg(int flags, va_list ap) {
  return (flags & O_CREAT) || (flags & __O_TMPFILE) == __O_TMPFILE ? va_arg(ap, int) : 0;
}

int64_t iov_bytes(const struct iovec* iov, int n) {
  int64_t total = 0;
  for (int i = 0; i < n; ++i) total += static_cast<int64_t>(iov[i].iov_len);
  return total;
}

// readv and the like: the iovec array is walked (for the bytes asked and the
// buffers' alignment) only when the kernel read it, that is when the call
// succeeded; a null or short array, or a count past IOV_MAX, is the
// program's EFAULT or EINVAL as without strata.
template <class Call>
ssize_t vector_io(Fn fn, int fd, int64_t off, const struct iovec* iov, int n, Call call) {
  bool walkable = false;
  return fd_io(
      fn, P, fd, off, [&] { return walkable ? iov_bytes(iov, n) : int64_t{-1}; },
      [&] {
        const ssize_t r = call();
        walkable = r >= 0;
        return r;
      },
      [&] { return walkable ? mem_align_of(iov, n) : 0u; });
}

// File-backed mappings, so munmap/msync can name the file.
struct Mapping {
  std::atomic<uintptr_t> addr;
  size_t len;
  uint32_t path;
};
constexpr int kMaxMappings = 512;
Mapping mappings[kMaxMappings];
// Slots [0, mappings_used) have been claimed at least once. Every munmap
// looks up its address, mostly an anonymous one of malloc: scanning all 512
// slots cost ~2,000 instructions per call (2.3 M on a short PyTorch job).
std::atomic<int> mappings_used{0};

void remember_mapping(void* addr, size_t len, uint32_t path) {
  for (int i = 0; i < kMaxMappings; ++i) {
    Mapping& m = mappings[i];
    uintptr_t expected = 0;
    if (m.addr.compare_exchange_strong(expected, 1)) {
      m.len = len;
      m.path = path;
      int used = mappings_used.load(std::memory_order_relaxed);
      while (used < i + 1 && !mappings_used.compare_exchange_weak(used, i + 1, std::memory_order_release)) {
      }
      m.addr.store(reinterpret_cast<uintptr_t>(addr), std::memory_order_release);
      return;
    }
  }
}

Mapping* find_mapping(void* addr) {
  auto a = reinterpret_cast<uintptr_t>(addr);
  const int used = mappings_used.load(std::memory_order_acquire);
  for (int i = 0; i < used; ++i) {
    Mapping& m = mappings[i];
    uintptr_t base = m.addr.load(std::memory_order_acquire);
    if (base > 1 && a >= base && a < base + m.len) return &m;
  }
  return nullptr;
}

template <class Call>
int mapping_op(Fn fn, void* addr, size_t len, bool forget, Call call) {
  IoScope s(fn, P);
  if (!s.on()) return call();
  Mapping* m = find_mapping(addr);
  uint32_t path = m ? m->path : 0;
  int r = call();
  s.stop(r < 0);
  if (m && forget && r == 0) m->addr.store(0, std::memory_order_release);
  if (path == 0) s.skip();
  else s.record(-1, path, -1, static_cast<int64_t>(len), r);
  return r;
}

template <class Call>
void* mmap_op(Fn fn, size_t len, int fd, off_t off, Call call) {
  IoScope s(fn, P);
  void* r = call();
  if (!s.on() || fd < 0) return r;
  s.stop(r == MAP_FAILED);
  uint32_t path = fd_path(fd);
  if (path == 0) {
    s.skip();
    return r;
  }
  if (r != MAP_FAILED) remember_mapping(r, len, path);
  s.record(fd, path, off, static_cast<int64_t>(len), r == MAP_FAILED ? -1 : 0);
  return r;
}

template <class Call>
int dup_op(Fn fn, int oldfd, Call call) {
  IoScope s(fn, P);
  int r = call();
  if (!s.on()) return r;
  s.stop(r < 0);
  if (r >= 0) fd_duplicated(oldfd, r);
  uint32_t path = fd_path(oldfd);
  if (path == 0) s.skip();
  else s.record(oldfd, path, -1, -1, r);
  return r;
}

// The output side of a copy inside the kernel (sendfile, copy_file_range):
// without it `cp` (which copies with copy_file_range) would show its input
// read and nothing written, and the output descriptor's tracked offset would
// fall behind the kernel's. Recorded only when the output is a traced file
// (not a socket or a pipe). When the input's event was recorded it holds the
// call's time, and this one follows it with no duration; when the input is
// not traced (an excluded path such as /dev/zero, a lost path), this event
// spans the call from `call_start`, so the time the copy took still belongs
// to a file.
void record_copy_out(Fn fn, int out, int64_t explicit_offset, int64_t bytes, const uint64_t* call_start) {
  const int saved = errno;
  IoScope s(fn, P);
  if (!s.on()) return;
  s.stop(false);
  if (call_start) s.start_at(*call_start);
  FdEntry* e;
  if (fd_lookup(out, e) == kFdTraced) {
    const int64_t off = transfer_offset(e, out, explicit_offset, bytes);
    s.record(out, e->path.load(std::memory_order_relaxed), off, bytes, bytes);
  } else if (e && e->state.load(std::memory_order_relaxed) == kFdLost) {
    s.drop();
  }
  errno = saved;
}

// Whether the input's event holds the call's time is decided once, by the
// input's own recording: a second lookup could see another thread's close or
// dup2 in between and count the time twice, or not at all.
// The offsets are the caller's pointers (null: the descriptor's own offset),
// read once the call returned, never before: the kernel moved them past the
// r bytes it copied, and a bad pointer is the program's EFAULT. After a
// failed call they are not read (the kernel may not have checked them).
template <class Call>
ssize_t kernel_copy(Fn fn, Fn out_fn, int in, const off64_t* in_off, int out, const off64_t* out_off, size_t n,
                    Call call) {
  const uint64_t t0 = now_ticks();
  bool input_traced = false;
  ssize_t r = -1;
  auto start_of = [&](const off64_t* off) -> int64_t { return off && r >= 0 ? *off - r : -1; };
  r = fd_io(
      fn, P, in, [&] { return start_of(in_off); }, n,
      [&] {
        r = call();
        return r;
      },
      [] { return 0u; }, &input_traced);
  if (r > 0) record_copy_out(out_fn, out, start_of(out_off), r, input_traced ? nullptr : &t0);
  return r;
}

// rename family: the event names the source; a successful rename is followed
// by a "rename.target" event naming the target, with the source's string id in
// the offset column (Darshan's POSIX_RENAME_TARGETS / POSIX_RENAMED_FROM).
template <class Call>
int rename_op(Fn fn, int fromfd, const char* from, int tofd, const char* to, Call call) {
  IoScope s(fn, P);
  if (!s.on()) return call();
  int r = call();
  s.stop(r < 0);
  const uint32_t sid = path_after_call(fromfd, from, r < 0);
  if (sid == 0) {
    s.drop();
  } else if (!path_excluded(sid)) {
    s.record(-1, sid, -1, -1, r);
    if (r == 0) {
      const int saved = errno;
      const uint32_t to_sid = path_at(tofd, to);
      errno = saved;
      if (to_sid != 0 && !path_excluded(to_sid)) {
        const uint64_t now = now_ticks();
        record_event(s.thread(), static_cast<uint32_t>(Fn::rename_target), now, now, -1, to_sid, sid, -1, 0, 0);
      }
    }
  }
  return r;
}

// fcntl: the dup forms are recorded; O_APPEND set later makes the offset the kernel's.
template <class Call>
int fcntl_op(int fd, int cmd, void* arg, Call call) {
  if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) return dup_op(Fn::fcntl, fd, call);
  int r = call();
  if (cmd == F_SETFL && r == 0 && keeps_fd_table() && (reinterpret_cast<intptr_t>(arg) & O_APPEND)) fd_set_append(fd);
  return r;
}

template <class Call>
off_t seek_op(Fn fn, int fd, off_t off, Call call) {
  IoScope s(fn, P);
  off_t r = call();
  if (!s.on()) return r;
  s.stop(r < 0);
  FdEntry* e = fd_entry(fd);
  if (!e || e->state.load(std::memory_order_relaxed) != kFdTraced) {
    s.skip();
    return r;
  }
  if (r >= 0 && e->pos.load(std::memory_order_relaxed) != kPosFromKernel) e->pos.store(r, std::memory_order_relaxed);
  s.record(fd, e->path.load(std::memory_order_relaxed), off, -1, r);
  return r;
}

template <class Call>
DIR* opendir_op(Fn fn, uint32_t sid, Call call) {
  IoScope s(fn, P);
  DIR* d = call();
  if (!s.on()) return d;
  s.stop(d == nullptr);
  int fd = d ? dirfd(d) : -1;  // opendir of a missing directory returns NULL
  if (fd >= 0) fd_opened(fd, sid, 0);
  if (path_excluded(sid)) s.skip();
  else s.record(fd, sid, -1, -1, fd);
  return d;
}

template <class Call>
auto readdir_op(Fn fn, DIR* d, Call call) {
  IoScope s(fn, P);
  if (!s.on()) return call();
  int fd = dirfd(d);
  uint32_t path = fd_path(fd);
  auto r = call();
  s.stop(false);
  if (path == 0) s.skip();
  else s.record(fd, path, -1, -1, r ? 1 : 0);
  return r;
}

// posix_fallocate returns an error number and leaves errno alone: the event
// records ret -1 with that number as errno, the caller gets what libc returned.
template <class Call>
int fallocate_op(Fn fn, int fd, off64_t off, off64_t len, Call call) {
  IoScope s(fn, P);
  int r = call();
  if (!s.on()) return r;
  s.stop_with(r);
  uint32_t path = fd_path(fd);
  if (path == 0) s.skip();
  else s.record(fd, path, off, len, r == 0 ? 0 : -1);
  return r;
}

}  // namespace

extern "C" {
#pragma GCC visibility push(default)

int open(const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  int mode = mode_arg(flags, ap);
  va_end(ap);
  return open_op(Fn::open, AT_FDCWD, path, flags, mode, [&] { return REAL(open)(path, flags, mode); });
}
int open64(const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  int mode = mode_arg(flags, ap);
  va_end(ap);
  return open_op(Fn::open64, AT_FDCWD, path, flags, mode, [&] { return REAL(open64)(path, flags, mode); });
}
int openat(int dirfd, const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  int mode = mode_arg(flags, ap);
  va_end(ap);
  return open_op(Fn::openat, dirfd, path, flags, mode, [&] { return REAL(openat)(dirfd, path, flags, mode); });
}
int openat64(int dirfd, const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  int mode = mode_arg(flags, ap);
  va_end(ap);
  return open_op(Fn::openat64, dirfd, path, flags, mode, [&] { return REAL(openat64)(dirfd, path, flags, mode); });
}
int creat(const char* path, mode_t mode) {
  return open_op(Fn::creat, AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, static_cast<int>(mode), [&] { return REAL(creat)(path, mode); });
}
int creat64(const char* path, mode_t mode) {
  return open_op(Fn::creat64, AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, static_cast<int>(mode), [&] { return REAL(creat64)(path, mode); });
}
// _FORTIFY_SOURCE entry points are recorded under the name the program used.
int __open_2(const char* path, int flags) {
  return open_op(Fn::open, AT_FDCWD, path, flags, 0, [&] { return REAL(__open_2)(path, flags); });
}
int __open64_2(const char* path, int flags) {
  return open_op(Fn::open64, AT_FDCWD, path, flags, 0, [&] { return REAL(__open64_2)(path, flags); });
}
int __openat_2(int dirfd, const char* path, int flags) {
  return open_op(Fn::openat, dirfd, path, flags, 0, [&] { return REAL(__openat_2)(dirfd, path, flags); });
}
int __openat64_2(int dirfd, const char* path, int flags) {
  return open_op(Fn::openat64, dirfd, path, flags, 0, [&] { return REAL(__openat64_2)(dirfd, path, flags); });
}

int close(int fd) {
  IoScope s(Fn::close, P);
  if (!s.on()) {
    int r = REAL(close)(fd);
    if (keeps_fd_table()) fd_closed(fd);
    return r;
  }
  uint32_t path = fd_path(fd);
  int r = REAL(close)(fd);
  s.stop(r < 0);
  fd_closed(fd);
  if (path == 0) s.skip();
  else s.record(fd, path, -1, -1, r);
  return r;
}

ssize_t read(int fd, void* buf, size_t n) {
  return fd_io(Fn::read, P, fd, -1, n, [&] { return direct::on() ? direct::read(fd, buf, n) : REAL(read)(fd, buf, n); }, [&] { return mem_align_of(buf); });
}
ssize_t __read_chk(int fd, void* buf, size_t n, size_t buflen) {
  return fd_io(Fn::read, P, fd, -1, n, [&] { return REAL(__read_chk)(fd, buf, n, buflen); }, [&] { return mem_align_of(buf); });
}
ssize_t write(int fd, const void* buf, size_t n) {
  return fd_io(Fn::write, P, fd, -1, n, [&] { return direct::on() ? direct::write(fd, buf, n) : REAL(write)(fd, buf, n); }, [&] { return mem_align_of(buf); });
}
ssize_t pread(int fd, void* buf, size_t n, off_t off) {
  return fd_io(Fn::pread, P, fd, off, n, [&] { return direct::on() ? direct::pread(fd, buf, n, off) : REAL(pread)(fd, buf, n, off); }, [&] { return mem_align_of(buf); });
}
ssize_t pread64(int fd, void* buf, size_t n, off64_t off) {
  return fd_io(Fn::pread64, P, fd, off, n, [&] { return direct::on() ? direct::pread(fd, buf, n, off) : REAL(pread64)(fd, buf, n, off); }, [&] { return mem_align_of(buf); });
}
ssize_t __pread_chk(int fd, void* buf, size_t n, off_t off, size_t buflen) {
  return fd_io(Fn::pread, P, fd, off, n, [&] { return REAL(__pread_chk)(fd, buf, n, off, buflen); }, [&] { return mem_align_of(buf); });
}
ssize_t __pread64_chk(int fd, void* buf, size_t n, off64_t off, size_t buflen) {
  return fd_io(Fn::pread64, P, fd, off, n, [&] { return REAL(__pread64_chk)(fd, buf, n, off, buflen); }, [&] { return mem_align_of(buf); });
}
ssize_t pwrite(int fd, const void* buf, size_t n, off_t off) {
  return fd_io(Fn::pwrite, P, fd, off, n, [&] { return direct::on() ? direct::pwrite(fd, buf, n, off) : REAL(pwrite)(fd, buf, n, off); }, [&] { return mem_align_of(buf); });
}
ssize_t pwrite64(int fd, const void* buf, size_t n, off64_t off) {
  return fd_io(Fn::pwrite64, P, fd, off, n, [&] { return direct::on() ? direct::pwrite(fd, buf, n, off) : REAL(pwrite64)(fd, buf, n, off); }, [&] { return mem_align_of(buf); });
}
ssize_t readv(int fd, const struct iovec* iov, int n) {
  return vector_io(Fn::readv, fd, -1, iov, n, [&] { return REAL(readv)(fd, iov, n); });
}
ssize_t writev(int fd, const struct iovec* iov, int n) {
  return vector_io(Fn::writev, fd, -1, iov, n, [&] { return REAL(writev)(fd, iov, n); });
}
ssize_t preadv(int fd, const struct iovec* iov, int n, off_t off) {
  return vector_io(Fn::preadv, fd, off, iov, n, [&] { return REAL(preadv)(fd, iov, n, off); });
}
ssize_t preadv64(int fd, const struct iovec* iov, int n, off64_t off) {
  return vector_io(Fn::preadv64, fd, off, iov, n, [&] { return REAL(preadv64)(fd, iov, n, off); });
}
ssize_t pwritev(int fd, const struct iovec* iov, int n, off_t off) {
  return vector_io(Fn::pwritev, fd, off, iov, n, [&] { return REAL(pwritev)(fd, iov, n, off); });
}
ssize_t pwritev64(int fd, const struct iovec* iov, int n, off64_t off) {
  return vector_io(Fn::pwritev64, fd, off, iov, n, [&] { return REAL(pwritev64)(fd, iov, n, off); });
}
ssize_t preadv2(int fd, const struct iovec* iov, int n, off_t off, int flags) {
  return vector_io(Fn::preadv2, fd, off, iov, n, [&] { return REAL(preadv2)(fd, iov, n, off, flags); });
}
ssize_t pwritev2(int fd, const struct iovec* iov, int n, off_t off, int flags) {
  return vector_io(Fn::pwritev2, fd, off, iov, n, [&] { return REAL(pwritev2)(fd, iov, n, off, flags); });
}

off_t lseek(int fd, off_t off, int whence) {
  return seek_op(Fn::lseek, fd, off, [&] { return REAL(lseek)(fd, off, whence); });
}
off64_t lseek64(int fd, off64_t off, int whence) {
  return seek_op(Fn::lseek64, fd, off, [&] { return REAL(lseek64)(fd, off, whence); });
}

int fsync(int fd) { return fd_op(Fn::fsync, P, fd, [&] { return REAL(fsync)(fd); }); }
int fdatasync(int fd) { return fd_op(Fn::fdatasync, P, fd, [&] { return REAL(fdatasync)(fd); }); }
int sync_file_range(int fd, off64_t off, off64_t n, unsigned int flags) {
  return fd_io(Fn::sync_file_range, P, fd, off, n, [&] { return REAL(sync_file_range)(fd, off, n, flags); });
}
int ftruncate(int fd, off_t len) {
  return fd_op(Fn::ftruncate, P, fd, [&] { return REAL(ftruncate)(fd, len); }, len);
}
int ftruncate64(int fd, off64_t len) {
  return fd_op(Fn::ftruncate64, P, fd, [&] { return REAL(ftruncate64)(fd, len); }, len);
}
int fallocate(int fd, int mode, off_t off, off_t len) {
  return fd_io(Fn::fallocate, P, fd, off, len, [&] { return REAL(fallocate)(fd, mode, off, len); });
}
int fallocate64(int fd, int mode, off64_t off, off64_t len) {
  return fd_io(Fn::fallocate64, P, fd, off, len, [&] { return REAL(fallocate64)(fd, mode, off, len); });
}
int posix_fallocate(int fd, off_t off, off_t len) {
  return fallocate_op(Fn::posix_fallocate, fd, off, len, [&] { return REAL(posix_fallocate)(fd, off, len); });
}
int posix_fallocate64(int fd, off64_t off, off64_t len) {
  return fallocate_op(Fn::posix_fallocate64, fd, off, len, [&] { return REAL(posix_fallocate64)(fd, off, len); });
}

int stat(const char* path, struct stat* st) {
  return path_op(Fn::stat, AT_FDCWD, path, [&] { return REAL(stat)(path, st); });
}
int stat64(const char* path, struct stat64* st) {
  return path_op(Fn::stat64, AT_FDCWD, path, [&] { return REAL(stat64)(path, st); });
}
int lstat(const char* path, struct stat* st) {
  return path_op(Fn::lstat, AT_FDCWD, path, [&] { return REAL(lstat)(path, st); });
}
int lstat64(const char* path, struct stat64* st) {
  return path_op(Fn::lstat64, AT_FDCWD, path, [&] { return REAL(lstat64)(path, st); });
}
int fstat(int fd, struct stat* st) { return fd_op(Fn::fstat, P, fd, [&] { return REAL(fstat)(fd, st); }); }
int fstat64(int fd, struct stat64* st) { return fd_op(Fn::fstat64, P, fd, [&] { return REAL(fstat64)(fd, st); }); }
int fstatat(int dirfd, const char* path, struct stat* st, int flags) {
  if (path && !*path && (flags & AT_EMPTY_PATH)) return fd_op(Fn::fstatat, P, dirfd, [&] { return REAL(fstatat)(dirfd, path, st, flags); });
  return path_op(Fn::fstatat, dirfd, path, [&] { return REAL(fstatat)(dirfd, path, st, flags); });
}
int fstatat64(int dirfd, const char* path, struct stat64* st, int flags) {
  if (path && !*path && (flags & AT_EMPTY_PATH)) return fd_op(Fn::fstatat64, P, dirfd, [&] { return REAL(fstatat64)(dirfd, path, st, flags); });
  return path_op(Fn::fstatat64, dirfd, path, [&] { return REAL(fstatat64)(dirfd, path, st, flags); });
}
int statx(int dirfd, const char* path, int flags, unsigned int mask, struct statx* st) {
  if (path && !*path && (flags & AT_EMPTY_PATH)) return fd_op(Fn::statx, P, dirfd, [&] { return REAL(statx)(dirfd, path, flags, mask, st); });
  return path_op(Fn::statx, dirfd, path, [&] { return REAL(statx)(dirfd, path, flags, mask, st); });
}

int access(const char* path, int mode) {
  return path_op(Fn::access, AT_FDCWD, path, [&] { return REAL(access)(path, mode); });
}
int faccessat(int dirfd, const char* path, int mode, int flags) {
  return path_op(Fn::faccessat, dirfd, path, [&] { return REAL(faccessat)(dirfd, path, mode, flags); });
}
int mkdir(const char* path, mode_t mode) {
  return path_op(Fn::mkdir, AT_FDCWD, path, [&] { return REAL(mkdir)(path, mode); });
}
int mkdirat(int dirfd, const char* path, mode_t mode) {
  return path_op(Fn::mkdirat, dirfd, path, [&] { return REAL(mkdirat)(dirfd, path, mode); });
}
int rmdir(const char* path) { return path_op(Fn::rmdir, AT_FDCWD, path, [&] { return REAL(rmdir)(path); }); }
int unlink(const char* path) { return path_op(Fn::unlink, AT_FDCWD, path, [&] { return REAL(unlink)(path); }); }
int unlinkat(int dirfd, const char* path, int flags) {
  return path_op(Fn::unlinkat, dirfd, path, [&] { return REAL(unlinkat)(dirfd, path, flags); });
}
// Renames are recorded under the source path, then "rename.target" (rename_op).
int rename(const char* from, const char* to) {
  return rename_op(Fn::rename, AT_FDCWD, from, AT_FDCWD, to, [&] { return REAL(rename)(from, to); });
}
int renameat(int fromfd, const char* from, int tofd, const char* to) {
  return rename_op(Fn::renameat, fromfd, from, tofd, to, [&] { return REAL(renameat)(fromfd, from, tofd, to); });
}
int renameat2(int fromfd, const char* from, int tofd, const char* to, unsigned int flags) {
  return rename_op(Fn::renameat2, fromfd, from, tofd, to, [&] { return REAL(renameat2)(fromfd, from, tofd, to, flags); });
}

DIR* opendir(const char* path) {
  ThreadState* t = g_hot.active ? thread_state() : nullptr;  // may be the thread's first call
  uint32_t sid = t && !t->busy ? path_at(AT_FDCWD, path) : 0;
  return opendir_op(Fn::opendir, sid, [&] { return REAL(opendir)(path); });
}
DIR* fdopendir(int fd) {
  uint32_t sid = g_hot.active ? fd_path(fd) : 0;
  return opendir_op(Fn::fdopendir, sid, [&] { return REAL(fdopendir)(fd); });
}
struct dirent* readdir(DIR* d) { return readdir_op(Fn::readdir, d, [&] { return REAL(readdir)(d); }); }
struct dirent64* readdir64(DIR* d) { return readdir_op(Fn::readdir64, d, [&] { return REAL(readdir64)(d); }); }
// glibc declares the stream nonnull, yet answers a null one with EINVAL: the
// test must not be optimised away. Static: inside the exported region, a
// plain function would be exported under its name (`is_null`) and bind the
// program's own function of that name to this one.
static bool is_null(const void* p) {
  asm("" : "+r"(p));
  return p == nullptr;
}

int closedir(DIR* d) {
  IoScope s(Fn::closedir, P);
  if (is_null(d) || !s.on()) return REAL(closedir)(d);
  int fd = dirfd(d);
  uint32_t path = fd_path(fd);
  int r = REAL(closedir)(d);
  s.stop(r < 0);
  fd_closed(fd);
  if (path == 0) s.skip();
  else s.record(fd, path, -1, -1, r);
  return r;
}

// An anonymous mapping maps no file, whatever descriptor it names (often 0).
void* mmap(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  return mmap_op(Fn::mmap, len, (flags & MAP_ANONYMOUS) ? -1 : fd, off,
                 [&] { return REAL(mmap)(addr, len, prot, flags, fd, off); });
}
void* mmap64(void* addr, size_t len, int prot, int flags, int fd, off64_t off) {
  return mmap_op(Fn::mmap64, len, (flags & MAP_ANONYMOUS) ? -1 : fd, off,
                 [&] { return REAL(mmap64)(addr, len, prot, flags, fd, off); });
}
int munmap(void* addr, size_t len) {
  return mapping_op(Fn::munmap, addr, len, true, [&] { return REAL(munmap)(addr, len); });
}
int msync(void* addr, size_t len, int flags) {
  return mapping_op(Fn::msync, addr, len, false, [&] { return REAL(msync)(addr, len, flags); });
}

int dup(int fd) { return dup_op(Fn::dup, fd, [&] { return REAL(dup)(fd); }); }
int dup2(int fd, int to) { return dup_op(Fn::dup2, fd, [&] { return REAL(dup2)(fd, to); }); }
int dup3(int fd, int to, int flags) { return dup_op(Fn::dup3, fd, [&] { return REAL(dup3)(fd, to, flags); }); }
int fcntl(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  void* arg = va_arg(ap, void*);  // int and pointer arguments share the register
  va_end(ap);
  return fcntl_op(fd, cmd, arg, [&] { return REAL(fcntl)(fd, cmd, arg); });
}
// What programs built with -D_FILE_OFFSET_BITS=64 call (glibc >= 2.28).
int fcntl64(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  return fcntl_op(fd, cmd, arg, [&] { return REAL(fcntl64)(fd, cmd, arg); });
}

// Copies inside the kernel: the call's event is a read of the input file (with
// the call's time); the bytes it wrote are the `<name>.out` event below.
ssize_t sendfile(int out, int in, off_t* off, size_t n) {
  static_assert(sizeof(off_t) == sizeof(off64_t));
  return kernel_copy(Fn::sendfile, Fn::sendfile_out, in, reinterpret_cast<const off64_t*>(off), out, nullptr, n,
                     [&] { return REAL(sendfile)(out, in, off, n); });
}
ssize_t sendfile64(int out, int in, off64_t* off, size_t n) {
  return kernel_copy(Fn::sendfile64, Fn::sendfile_out, in, off, out, nullptr, n,
                     [&] { return REAL(sendfile64)(out, in, off, n); });
}
ssize_t copy_file_range(int in, off64_t* in_off, int out, off64_t* out_off, size_t n, unsigned int flags) {
  return kernel_copy(Fn::copy_file_range, Fn::copy_file_range_out, in, in_off, out, out_off, n,
                     [&] { return REAL(copy_file_range)(in, in_off, out, out_off, n, flags); });
}

// A vfork child's chdir is its own (keeps_fd_table: the working directory
// strata keeps is the parent's as much as its descriptors are).
// Both are async-signal-safe: a handler may call them while its thread is
// inside strata, and a handler's open may interrupt the interning here
// (InterposerMark; Edges.AHandlerThatChdirsAndOpensDoesNotWaitForItsOwnThread).
static void follow_chdir() {
  int saved = errno;
  InterposerMark mark(thread_state());
  refresh_cwd();
  errno = saved;
}
int chdir(const char* path) {
  int r = REAL(chdir)(path);
  if (r == 0 && keeps_fd_table()) follow_chdir();
  return r;
}
int fchdir(int fd) {
  int r = REAL(fchdir)(fd);
  if (r == 0 && keeps_fd_table()) follow_chdir();
  return r;
}

// glibc's shm_open opens /dev/shm/NAME with an internal call strata does not
// see, so the first recorded call on the descriptor (PyTorch's DataLoader
// workers create, ftruncate and mmap one per batch) had to ask /proc for its
// path: an fstat and a readlink, ~600 system calls on a 3-epoch job. The path
// is known here (glibc's directory, the name without its leading slashes). It
// is not an event itself; a program that unlinks the name still sees its
// calls named by it, where /proc would add " (deleted)".
using ShmOpen = int (*)(const char*, int, mode_t);
// libc's is resolved at start-up with every other function (real.h): found
// by dlsym on the first call, a handler's siglongjmp out of that call left
// the dynamic linker's lock taken, and the next thread to load a library or
// look up a symbol waited for ever (Edges.AJumpOutOfTheFirstShmOpenLeavesDlsymAlone).
static ShmOpen real_shm_open_fn() {
  if (real_shm_open) return real_shm_open;
  // Before glibc 2.34 shm_open is librt's, which a library opened with
  // RTLD_LOCAL (Python's _posixshmem) brings in out of RTLD_NEXT's reach,
  // maybe long after start-up: looked up on use.
  static ShmOpen fn = nullptr;
  if (fn) return fn;
  if (void* rt = dlopen("librt.so.1", RTLD_LAZY | RTLD_NOLOAD)) fn = reinterpret_cast<ShmOpen>(dlsym(rt, "shm_open"));
  return fn;
}

int shm_open(const char* name, int oflag, mode_t mode) {
  const ShmOpen real = real_shm_open_fn();
  if (!real) {
    errno = ENOSYS;
    return -1;
  }
  const int fd = real(name, oflag, mode);
  if (fd < 0) return fd;
  if (ThreadState* t = recording_thread(Layer::POSIX)) {
    const int saved = errno;
    t->busy = 1;
    t->busy_sp = 0;  // not an interposer's frame a longjmp could leave (signals.cc)
    while (*name == '/') ++name;
    // The call succeeded, so the name is at most NAME_MAX bytes (glibc's
    // limit): a small buffer, not a PATH_MAX one in this interposer's frame.
    constexpr char kDir[] = "/dev/shm/";
    char path[sizeof(kDir) + NAME_MAX];
    const size_t n = strnlen(name, NAME_MAX + 1);
    uint32_t sid = 0;
    if (n <= NAME_MAX) {
      std::memcpy(path, kDir, sizeof(kDir) - 1);
      std::memcpy(path + sizeof(kDir) - 1, name, n);
      path[sizeof(kDir) - 1 + n] = '\0';
      sid = intern_path(path);
    }
    fd_opened(fd, sid, (oflag & O_APPEND) ? kPosFromKernel : 0);
    t->busy = 0;
    errno = saved;
  }
  return fd;
}

#pragma GCC visibility pop
}  // extern "C"
