// Shared shapes of the POSIX and STDIO interposers: one function per kind of
// call (I/O on a descriptor, open, path operation, descriptor operation) so
// each interposer is a line or two.
#pragma once

#include <fcntl.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <cstdint>
#include <type_traits>

#include "runtime/state.h"

namespace strata::runtime {

// The Column::kMemAlign value of a buffer, and of the least aligned buffer
// of an iovec array (Darshan: the call is aligned when every iov_base is).
inline uint32_t mem_align_of(const void* buf) { return format::mem_align_code(reinterpret_cast<uintptr_t>(buf)); }
inline uint32_t mem_align_of(const struct iovec* iov, int n) {
  uintptr_t bits = 0;
  for (int i = 0; i < n; ++i) bits |= reinterpret_cast<uintptr_t>(iov[i].iov_base);
  return format::mem_align_code(bits);
}

// Where a transfer of `moved` bytes on a traced descriptor happened: the
// call's explicit offset, else the descriptor's tracked offset, which then
// moves past the bytes (or the kernel's, asked after the call, for a
// description the process shares).
__attribute__((always_inline)) inline int64_t transfer_offset(FdEntry* e, int fd, int64_t explicit_offset,
                                                              int64_t moved) {
  if (explicit_offset >= 0) return explicit_offset;
  const int64_t off = e->pos.load(std::memory_order_relaxed);
  if (__builtin_expect(off == kPosFromKernel, 0)) return kernel_offset_before(fd, moved);
  if (moved > 0) e->pos.store(off + moved, std::memory_order_relaxed);
  return off;
}

// A value an interposer knows before the call, or one it can only tell once
// the call returned (a callable): what the caller's pointers hold is read
// only after the kernel accepted them, so that a bad pointer gets the
// program its EFAULT and not a crash in strata.
template <class Value>
__attribute__((always_inline)) inline int64_t value_after_call(const Value& v) {
  if constexpr (std::is_invocable_v<const Value&>) return v();
  else return static_cast<int64_t>(v);
}

// I/O on a descriptor. explicit_offset < 0 means "at the tracked position",
// which then advances by the bytes transferred. mem_align() gives the
// buffer's alignment (Column::kMemAlign); it runs only when recording.
// *traced (when given) is set to true when the call was recorded on a traced
// file, and left as it was otherwise.
template <class Call, class MemAlign, class Offset = int64_t, class Size = int64_t>
inline auto fd_io(Fn fn, Layer layer, int fd, Offset explicit_offset_after, Size size_after, Call call,
                  MemAlign mem_align, bool* traced = nullptr) {
  IoScope s(fn, layer);
  if (!s.on()) return call();  // two call sites: the recording path below tests nothing twice
  auto r = call();
  s.stop(r < 0);
  const int64_t explicit_offset = value_after_call(explicit_offset_after);
  const int64_t size = value_after_call(size_after);
  FdEntry* e;
  if (__builtin_expect(fd_lookup(fd, e) != kFdTraced, 0)) {
    // A call on a descriptor that is not open is the program's bug worth
    // seeing: recorded without a path. Excluded descriptors stay silent; a
    // file whose path was lost counts its calls as drops.
    if (!e && r < 0) s.record(fd, 0, explicit_offset, size, static_cast<int64_t>(r));
    else if (e && e->state.load(std::memory_order_relaxed) == kFdLost) s.drop();
    return r;
  }
  const int64_t off = transfer_offset(e, fd, explicit_offset, static_cast<int64_t>(r));
  s.record(fd, e->path.load(std::memory_order_relaxed), off, size, static_cast<int64_t>(r), mem_align());
  if (traced) *traced = true;
  return r;
}

// I/O on a descriptor without a memory buffer (sendfile, fallocate...).
template <class Call, class Offset = int64_t, class Size = int64_t>
inline auto fd_io(Fn fn, Layer layer, int fd, Offset explicit_offset, Size size, Call call) {
  return fd_io(fn, layer, fd, explicit_offset, size, call, [] { return 0u; });
}

// An operation on a descriptor that moves no data (fsync, fstat, close...).
template <class Call>
inline auto fd_op(Fn fn, Layer layer, int fd, Call call, int64_t size = -1) {
  IoScope s(fn, layer);
  if (!s.on()) return call();
  FdEntry* e = fd_entry(fd);
  uint32_t path = e && e->state.load(std::memory_order_relaxed) == kFdTraced ? e->path.load(std::memory_order_relaxed) : 0;
  auto r = call();
  s.stop(r < 0);
  if (path != 0 || (!e && r < 0)) s.record(fd, path, -1, size, static_cast<int64_t>(r));
  else if (e && e->state.load(std::memory_order_relaxed) == kFdLost) s.drop();
  return r;
}

// An operation naming a path (stat, access, mkdir, unlink...).
template <class Call>
inline auto path_op(Fn fn, int dirfd, const char* path, Call call) {
  IoScope s(fn, Layer::POSIX);
  if (!s.on()) return call();
  auto r = call();
  s.stop(r < 0);
  const uint32_t sid = path_after_call(dirfd, path, r < 0);
  if (sid == 0) s.drop();
  else if (path_excluded(sid)) s.skip();
  else s.record(-1, sid, -1, -1, static_cast<int64_t>(r));
  return r;
}

// open/openat/creat: on success the new descriptor is tracked under the path.
// The mode argument is recorded in the size column (Darshan's POSIX_MODE).
template <class Call>
inline int open_op(Fn fn, int dirfd, const char* path, int flags, int mode, Call call) {
  IoScope s(fn, Layer::POSIX);
  int fd = call();
  if (!s.on()) {
    if (fd >= 0 && keeps_fd_table()) fd_closed(fd);  // forget stale state for this number
    return fd;
  }
  s.stop(fd < 0);
  uint32_t sid = path_after_call(dirfd, path, fd < 0);
  if (fd >= 0) fd_opened(fd, sid, (flags & O_APPEND) ? kPosFromKernel : 0);
  if (sid == 0) s.drop();
  else if (path_excluded(sid)) s.skip();
  else s.record(fd, sid, -1, mode, fd);
  return fd;
}

}  // namespace strata::runtime
