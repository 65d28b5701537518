// Direct system calls for the read/write family while the application has one
// thread.
//
// Why: the runtime's writer thread makes the process multi-threaded, and from
// then on glibc brackets every cancellation-point call (read, write, pread...)
// with two atomic compare-and-swaps that switch the thread to asynchronous
// cancellation and back (__pthread_enable/disable_asynccancel): ~31
// instructions and 10-15 ns per call on this machine, a cost strata would add
// to every single-threaded program. Nothing can cancel a thread of a process
// whose application never created a second thread, so while that holds the
// interposers issue the system call themselves, exactly as glibc's
// single-threaded path does (same system call, errno on failure).
//
// `g_hot.direct` is on only while all of these hold (checked in core.cc):
// x86-64; the application had one thread when the runtime started; the next
// definition of every function below is glibc's own (no other interposer
// after strata to skip); STRATA_DIRECT_SYSCALLS is not 0. The pthread_create
// interposer (process.cc) turns it off for good before the application's
// second thread exists; a forked child (one thread) turns it back on.
#pragma once

#include <sys/syscall.h>
#include <sys/types.h>

#include <cerrno>
#include <cstddef>

#include "runtime/runtime.h"

namespace strata::runtime::direct {

#if defined(__x86_64__)
inline constexpr bool kSupported = true;

inline long syscall4(long nr, long a, long b, long c, long d) {
  long ret;
  register long r10 asm("r10") = d;
  asm volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
  return ret;
}

inline ssize_t result(long r) {
  if (__builtin_expect(r < 0 && r > -4096, 0)) {
    errno = static_cast<int>(-r);
    return -1;
  }
  return r;
}

inline ssize_t read(int fd, void* buf, size_t n) {
  return result(syscall4(SYS_read, fd, reinterpret_cast<long>(buf), static_cast<long>(n), 0));
}
inline ssize_t write(int fd, const void* buf, size_t n) {
  return result(syscall4(SYS_write, fd, reinterpret_cast<long>(buf), static_cast<long>(n), 0));
}
inline ssize_t pread(int fd, void* buf, size_t n, off_t off) {
  return result(syscall4(SYS_pread64, fd, reinterpret_cast<long>(buf), static_cast<long>(n), off));
}
inline ssize_t pwrite(int fd, const void* buf, size_t n, off_t off) {
  return result(syscall4(SYS_pwrite64, fd, reinterpret_cast<long>(buf), static_cast<long>(n), off));
}
#else
inline constexpr bool kSupported = false;
inline ssize_t read(int, void*, size_t) { return -1; }
inline ssize_t write(int, const void*, size_t) { return -1; }
inline ssize_t pread(int, void*, size_t, off_t) { return -1; }
inline ssize_t pwrite(int, const void*, size_t, off_t) { return -1; }
#endif

inline bool on() { return kSupported && g_hot.direct; }

// Whether this process may use direct calls (everything above but the thread
// count, which the caller knows). Implemented in core.cc.
bool eligible();

}  // namespace strata::runtime::direct
