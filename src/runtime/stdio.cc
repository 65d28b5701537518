// STDIO interposers. A stream is tracked through its descriptor's entry in the
// fd table, with its own position (spos) because stream buffering makes the
// descriptor offset differ from the stream's. fread/fwrite record sizes and
// returns in bytes (size x items), not items. Character and word calls (fputc,
// getc, putw...) move a known count on success; fscanf's count is the change
// of the stream position, read with ftello around the call; ungetc moves the
// position back by one. Every call keeps spos exact, so later offsets are.
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "runtime/io_common.h"
#include "runtime/real.h"

using namespace strata::runtime;

extern "C" {
size_t __fread_chk(void*, size_t, size_t, size_t, FILE*);
char* __fgets_chk(char*, size_t, int, FILE*);
size_t __fread_unlocked_chk(void*, size_t, size_t, size_t, FILE*);
char* __fgets_unlocked_chk(char*, size_t, int, FILE*);
int __fprintf_chk(FILE*, int, const char*, ...);
int __vfprintf_chk(FILE*, int, const char*, va_list);
int __printf_chk(int, const char*, ...);
int __vprintf_chk(int, const char*, va_list);
int __isoc99_fscanf(FILE*, const char*, ...);
int __isoc99_vfscanf(FILE*, const char*, va_list);
int _IO_getc(FILE*);
int _IO_putc(int, FILE*);
// <stdio.h> redirects fscanf/vfscanf to __isoc99_* in strict C++ modes: the
// GNU entry points are defined under their symbol names.
int gnu_fscanf(FILE*, const char*, ...) __asm__("fscanf");
int gnu_vfscanf(FILE*, const char*, va_list) __asm__("vfscanf");
}

namespace {
STRATA_REAL_DECL(fopen);
STRATA_REAL_DECL(fopen64);
STRATA_REAL_DECL(fdopen);
STRATA_REAL_DECL(fileno);
STRATA_REAL_DECL(freopen);
STRATA_REAL_DECL(freopen64);
STRATA_REAL_DECL(fclose);
STRATA_REAL_DECL(fread);
STRATA_REAL_DECL(__fread_chk);
STRATA_REAL_DECL(fwrite);
STRATA_REAL_DECL(fgets);
STRATA_REAL_DECL(__fgets_chk);
STRATA_REAL_DECL(fputs);
STRATA_REAL_DECL(getline);
STRATA_REAL_DECL(getdelim);
STRATA_REAL_DECL(__getdelim);
STRATA_REAL_DECL(fseek);
STRATA_REAL_DECL(fseeko);
STRATA_REAL_DECL(fseeko64);
STRATA_REAL_DECL(ftell);
STRATA_REAL_DECL(ftello);
STRATA_REAL_DECL(ftello64);
STRATA_REAL_DECL(rewind);
STRATA_REAL_DECL(fflush);
STRATA_REAL_DECL(vfprintf);
STRATA_REAL_DECL(__vfprintf_chk);
STRATA_REAL_DECL(vprintf);
STRATA_REAL_DECL(__vprintf_chk);
STRATA_REAL_DECL(fputc);
STRATA_REAL_DECL(putc);
STRATA_REAL_DECL(putchar);
STRATA_REAL_DECL(puts);
STRATA_REAL_DECL(putw);
STRATA_REAL_DECL(fgetc);
STRATA_REAL_DECL(getc);
STRATA_REAL_DECL(getchar);
STRATA_REAL_DECL(getw);
STRATA_REAL_DECL(vfscanf);
STRATA_REAL_DECL(__isoc99_vfscanf);
STRATA_REAL_DECL(ungetc);
STRATA_REAL_DECL(fsetpos);
STRATA_REAL_DECL(fsetpos64);
STRATA_REAL_DECL(fread_unlocked);
STRATA_REAL_DECL(__fread_unlocked_chk);
STRATA_REAL_DECL(fwrite_unlocked);
STRATA_REAL_DECL(fgets_unlocked);
STRATA_REAL_DECL(__fgets_unlocked_chk);
STRATA_REAL_DECL(fputs_unlocked);
STRATA_REAL_DECL(fputc_unlocked);
STRATA_REAL_DECL(putc_unlocked);
STRATA_REAL_DECL(putchar_unlocked);
STRATA_REAL_DECL(fgetc_unlocked);
STRATA_REAL_DECL(getc_unlocked);
STRATA_REAL_DECL(getchar_unlocked);
STRATA_REAL_DECL(fflush_unlocked);

constexpr Layer S = Layer::STDIO;

// The stream's descriptor, read from glibc's FILE (public struct _IO_FILE):
// fileno() is a call, and sets errno to EBADF for memory streams (-1 here).
inline int stream_fd(FILE* fp) { return fp ? fp->_fileno : -1; }

// ftello without recording and without touching errno; -1 if unknown.
int64_t stream_pos(FILE* fp) {
  const int saved = errno;
  const int64_t pos = REAL(ftello)(fp);
  errno = saved;
  return pos;
}

// A stream fdopen'ed on a descriptor whose offset is the kernel's (a dup, as
// numpy's np.load makes) starts where the kernel is when it is first used:
// spos holds kPosFromKernel until then. Asking costs an lseek, and np.load
// never needs it: its own ftell and fseek set the position first.
// `moved`: what the call that just ran consumed (the position is read after it).
__attribute__((noinline)) int64_t stream_start(FILE* fp, int64_t moved) {
  const int64_t after = stream_pos(fp);
  if (after < 0) return 0;  // not seekable: counted from 0, as an unseekable descriptor is
  return moved > 0 && after >= moved ? after - moved : after;
}

// The tracked position before a call that moved `moved` bytes.
__attribute__((always_inline)) inline int64_t position_before(const FdEntry* e, FILE* fp, int64_t moved) {
  const int64_t off = e->spos.load(std::memory_order_relaxed);
  return __builtin_expect(off == kPosFromKernel, 0) ? stream_start(fp, moved) : off;
}

// For calls whose count is only known from positions (getw at the end, ungetc):
// the start is settled before the call.
void settle_stream_start(FILE* fp) {
  FdEntry* e;
  if (fd_lookup(stream_fd(fp), e) == kFdTraced && e->spos.load(std::memory_order_relaxed) == kPosFromKernel)
    e->spos.store(stream_start(fp, 0), std::memory_order_relaxed);
}

// Records a call that moved `moved` bytes (0 at end of file, -1 on error) at
// the stream's tracked position, and advances it.
__attribute__((always_inline)) inline void record_moved(IoScope& s, FILE* fp, int64_t size, int64_t moved) {
  const int fd = stream_fd(fp);
  FdEntry* e;
  if (__builtin_expect(fd_lookup(fd, e) != kFdTraced, 0)) return;
  const int64_t off = position_before(e, fp, moved);
  e->spos.store(moved > 0 ? off + moved : off, std::memory_order_relaxed);
  s.record(fd, e->path.load(std::memory_order_relaxed), off, size, moved);
}

// A call moving `n` bytes when it returns anything but EOF (fputc, getc,
// putw, puts). EOF without the error indicator is the end of the file.
template <class Call>
__attribute__((always_inline)) inline int char_io(Fn fn, FILE* fp, int64_t n, Call call) {
  IoScope s(fn, S);
  if (!s.on()) return call();  // two call sites: the recording path tests nothing twice
  const int r = call();
  if (__builtin_expect(r != EOF, 1)) {
    s.stop(false);
    record_moved(s, fp, n, n);
  } else {
    const bool failed = fp && ferror_unlocked(fp);
    s.stop(failed);
    record_moved(s, fp, n, failed ? -1 : 0);
  }
  return r;
}

// fscanf family: the bytes consumed are the change of the stream position
// (Darshan does the same); -1 when the call failed with the error indicator.
template <class Call>
int scan_io(Fn fn, FILE* fp, Call call) {
  IoScope s(fn, S);
  if (!s.on()) return call();
  const int fd = stream_fd(fp);
  FdEntry* e;
  if (fd_lookup(fd, e) != kFdTraced) return call();
  const int64_t before = stream_pos(fp);
  const int r = call();
  const bool failed = r == EOF && ferror_unlocked(fp);
  s.stop(failed);
  const int64_t after = stream_pos(fp);
  int64_t off = e->spos.load(std::memory_order_relaxed);
  if (off == kPosFromKernel) off = before >= 0 ? before : 0;
  const int64_t moved = before >= 0 && after >= before ? after - before : 0;
  if (after >= 0) e->spos.store(after, std::memory_order_relaxed);
  s.record(fd, e->path.load(std::memory_order_relaxed), off, -1, failed ? -1 : moved);
  return r;
}

// Data moved through a stream; `call` returns bytes moved (or -1 on error).
template <class Call>
int64_t stream_io(Fn fn, FILE* fp, int64_t size, Call call) {
  IoScope s(fn, S);
  int64_t r = call();
  if (!s.on()) return r;
  s.stop(r < 0 || (r < size && fp && ferror_unlocked(fp)));
  int fd = stream_fd(fp);
  FdEntry* e = fd_entry(fd);
  if (!e || e->state.load(std::memory_order_relaxed) != kFdTraced) {
    s.skip();
    return r;
  }
  const int64_t off = position_before(e, fp, r);
  e->spos.store(r > 0 ? off + r : off, std::memory_order_relaxed);
  s.record(fd, e->path.load(std::memory_order_relaxed), off, size, r);
  return r;
}

// Where the position after a stream position change comes from. Asking the
// stream (ftello) costs an lseek system call on a fresh stream, so it is done
// only when the call's arguments or result do not already say it.
enum class PosAfter { kAsk, kRequested, kResult };
PosAfter seek_set(int whence) { return whence == SEEK_SET ? PosAfter::kRequested : PosAfter::kAsk; }

// A stream position change; the new position is recorded as the event's
// offset (Darshan's STDIO offset after fseek is ftell's), so SEEK_CUR/SEEK_END
// moves count right. A failed call records the requested argument.
template <class Call>
int64_t stream_seek(Fn fn, FILE* fp, int64_t requested, PosAfter after, Call call) {
  IoScope s(fn, S);
  int64_t r = call();
  if (!s.on()) return r;
  s.stop(r < 0);
  int fd = stream_fd(fp);
  FdEntry* e = fd_entry(fd);
  if (!e || e->state.load(std::memory_order_relaxed) != kFdTraced) {
    s.skip();
    return r;
  }
  int64_t pos = -1;
  if (after == PosAfter::kAsk) pos = stream_pos(fp);
  else if (r >= 0) pos = after == PosAfter::kRequested ? requested : r;
  if (pos >= 0) e->spos.store(pos, std::memory_order_relaxed);
  s.record(fd, e->path.load(std::memory_order_relaxed), r >= 0 && pos >= 0 ? pos : requested, -1, r);
  return r;
}

// `path_of` names the stream's file; it runs only when the call is recorded
// (resolving a path, or a descriptor's path through /proc, costs system calls).
// An append stream ("a", "a+") writes at the end of the file: its
// descriptor's offset is the kernel's, and the stream starts where the
// kernel puts it at its first use (glibc seeks an "a" stream to the end).
template <class PathOf, class Call>
FILE* stream_open(Fn fn, const char* mode, PathOf path_of, Call call) {
  IoScope s(fn, S);
  FILE* fp = call();
  if (!s.on()) return fp;
  s.stop(fp == nullptr);
  const int saved = errno;
  const uint32_t sid = fp == nullptr && errno == EFAULT ? 0 : path_of();  // a bad path pointer (path_after_call)
  errno = saved;
  int fd = stream_fd(fp);
  if (fd >= 0) {
    if (fn != Fn::fdopen) {
      const bool append = mode && mode[0] == 'a';
      fd_opened(fd, sid, append ? kPosFromKernel : 0);
      if (FdEntry* e = append ? fd_entry(fd) : nullptr) e->spos.store(kPosFromKernel, std::memory_order_relaxed);
    } else if (FdEntry* e = fd_entry(fd)) {
      // glibc's fdopen "a" sets O_APPEND on the descriptor itself.
      if (mode && mode[0] == 'a') fd_set_append(fd);
      // The stream starts at the descriptor's offset; when that is the
      // kernel's (shared, or appending), where the kernel is at the stream's
      // first use.
      const int64_t pos = e->pos.load(std::memory_order_relaxed);
      e->spos.store(pos == kPosFromKernel || pos >= 0 ? pos : 0, std::memory_order_relaxed);
    }
  }
  if (path_excluded(sid)) s.skip();
  else s.record(fd, sid, -1, -1, fd);
  return fp;
}

uint32_t open_path(const char* path) { return g_hot.active ? path_at(AT_FDCWD, path) : 0; }

int64_t print_bytes(int r) { return r; }

// fread/fwrite and their forms: sizes and results in bytes, the call's in items.
template <class Call>
size_t items_io(Fn fn, FILE* fp, size_t size, size_t n, Call call) {
  size_t items = 0;
  stream_io(fn, fp, static_cast<int64_t>(size * n), [&] {
    items = call();
    return static_cast<int64_t>(items * size);
  });
  return items;
}

// fgets and its forms: the bytes are the line's (0 at the end of the file).
template <class Call>
char* line_io(Fn fn, FILE* fp, int n, Call call) {
  char* r = nullptr;
  stream_io(fn, fp, n, [&] {
    r = call();
    return r ? static_cast<int64_t>(std::strlen(r)) : (ferror_unlocked(fp) ? -1 : 0);
  });
  return r;
}

template <class Call>
int puts_io(FILE* fp, const char* str, Call call) {
  int r = 0;
  const int64_t len = static_cast<int64_t>(std::strlen(str));
  stream_io(Fn::fputs, fp, len, [&] {
    r = call();
    return r >= 0 ? len : -1;
  });
  return r;
}

}  // namespace

extern "C" {
#pragma GCC visibility push(default)

FILE* fopen(const char* path, const char* mode) {
  return stream_open(Fn::fopen, mode, [&] { return open_path(path); }, [&] { return REAL(fopen)(path, mode); });
}
FILE* fopen64(const char* path, const char* mode) {
  return stream_open(Fn::fopen64, mode, [&] { return open_path(path); }, [&] { return REAL(fopen64)(path, mode); });
}
// fileno: Darshan counts it as an open of the stream's file in its POSIX
// record (POSIX_OPENS, POSIX_FILENOS). Recorded in the POSIX layer with the
// descriptor returned as fd and ret.
int fileno(FILE* fp) {
  IoScope s(Fn::fileno, Layer::POSIX);
  if (!s.on()) return REAL(fileno)(fp);
  const int r = REAL(fileno)(fp);
  s.stop(r < 0);
  FdEntry* e;
  if (r < 0 || fd_lookup(r, e) != kFdTraced) {
    s.skip();
    return r;
  }
  s.record(r, e->path.load(std::memory_order_relaxed), -1, -1, r);
  return r;
}
FILE* fdopen(int fd, const char* mode) {
  return stream_open(Fn::fdopen, mode, [&] { return fd_path(fd); }, [&] { return REAL(fdopen)(fd, mode); });
}
// freopen(NULL, mode, fp) reopens the stream's own file in another mode: its
// path is the one the stream had.
FILE* freopen(const char* path, const char* mode, FILE* fp) {
  const uint32_t own = path || !g_hot.active || !fp ? 0 : fd_path(stream_fd(fp));
  return stream_open(Fn::freopen, mode, [&] { return path ? open_path(path) : own; },
                     [&] { return REAL(freopen)(path, mode, fp); });
}
FILE* freopen64(const char* path, const char* mode, FILE* fp) {
  const uint32_t own = path || !g_hot.active || !fp ? 0 : fd_path(stream_fd(fp));
  return stream_open(Fn::freopen64, mode, [&] { return path ? open_path(path) : own; },
                     [&] { return REAL(freopen64)(path, mode, fp); });
}

int fclose(FILE* fp) {
  IoScope s(Fn::fclose, S);
  int fd = stream_fd(fp);
  if (!s.on()) {
    int r = REAL(fclose)(fp);
    if (keeps_fd_table()) fd_closed(fd);
    return r;
  }
  uint32_t path = fd_path(fd);
  int r = REAL(fclose)(fp);
  s.stop(r != 0);
  fd_closed(fd);
  if (path == 0) s.skip();
  else s.record(fd, path, -1, -1, r);
  return r;
}

size_t fread(void* p, size_t size, size_t n, FILE* fp) {
  return items_io(Fn::fread, fp, size, n, [&] { return REAL(fread)(p, size, n, fp); });
}
size_t __fread_chk(void* p, size_t plen, size_t size, size_t n, FILE* fp) {
  return items_io(Fn::fread, fp, size, n, [&] { return REAL(__fread_chk)(p, plen, size, n, fp); });
}
size_t fwrite(const void* p, size_t size, size_t n, FILE* fp) {
  return items_io(Fn::fwrite, fp, size, n, [&] { return REAL(fwrite)(p, size, n, fp); });
}
char* fgets(char* buf, int n, FILE* fp) {
  return line_io(Fn::fgets, fp, n, [&] { return REAL(fgets)(buf, n, fp); });
}
char* __fgets_chk(char* buf, size_t blen, int n, FILE* fp) {
  return line_io(Fn::fgets, fp, n, [&] { return REAL(__fgets_chk)(buf, blen, n, fp); });
}
int fputs(const char* str, FILE* fp) {
  return puts_io(fp, str, [&] { return REAL(fputs)(str, fp); });
}
ssize_t getline(char** line, size_t* n, FILE* fp) {
  return stream_io(Fn::getline, fp, -1, [&] { return static_cast<int64_t>(REAL(getline)(line, n, fp)); });
}
ssize_t getdelim(char** line, size_t* n, int delim, FILE* fp) {
  return stream_io(Fn::getdelim, fp, -1, [&] { return static_cast<int64_t>(REAL(getdelim)(line, n, delim, fp)); });
}
// glibc's <bits/stdio.h> inlines getline() into __getdelim(..., '\n', ...) when
// compiling with optimisation, so most C programs reach getline this way.
ssize_t __getdelim(char** line, size_t* n, int delim, FILE* fp) {
  return stream_io(delim == '\n' ? Fn::getline : Fn::getdelim, fp, -1,
                   [&] { return static_cast<int64_t>(REAL(__getdelim)(line, n, delim, fp)); });
}

int fseek(FILE* fp, long off, int whence) {
  return static_cast<int>(stream_seek(Fn::fseek, fp, off, seek_set(whence), [&] { return static_cast<int64_t>(REAL(fseek)(fp, off, whence)); }));
}
int fseeko(FILE* fp, off_t off, int whence) {
  return static_cast<int>(stream_seek(Fn::fseeko, fp, off, seek_set(whence), [&] { return static_cast<int64_t>(REAL(fseeko)(fp, off, whence)); }));
}
int fseeko64(FILE* fp, off64_t off, int whence) {
  return static_cast<int>(stream_seek(Fn::fseeko64, fp, off, seek_set(whence), [&] { return static_cast<int64_t>(REAL(fseeko64)(fp, off, whence)); }));
}
long ftell(FILE* fp) {
  return stream_seek(Fn::ftell, fp, -1, PosAfter::kResult, [&] { return static_cast<int64_t>(REAL(ftell)(fp)); });
}
off_t ftello(FILE* fp) {
  return stream_seek(Fn::ftello, fp, -1, PosAfter::kResult, [&] { return static_cast<int64_t>(REAL(ftello)(fp)); });
}
off64_t ftello64(FILE* fp) {
  return stream_seek(Fn::ftello64, fp, -1, PosAfter::kResult, [&] { return static_cast<int64_t>(REAL(ftello64)(fp)); });
}
void rewind(FILE* fp) {
  stream_seek(Fn::rewind, fp, 0, PosAfter::kAsk, [&] {
    REAL(rewind)(fp);
    return int64_t{0};
  });
}
int fflush(FILE* fp) {
  if (!fp) return REAL(fflush)(fp);
  return fd_op(Fn::fflush, S, stream_fd(fp), [&] { return REAL(fflush)(fp); });
}

int vfprintf(FILE* fp, const char* format, va_list ap) {
  return static_cast<int>(stream_io(Fn::vfprintf, fp, -1, [&] { return print_bytes(REAL(vfprintf)(fp, format, ap)); }));
}
int fprintf(FILE* fp, const char* format, ...) {
  va_list ap;
  va_start(ap, format);
  int r = static_cast<int>(stream_io(Fn::fprintf, fp, -1, [&] { return print_bytes(REAL(vfprintf)(fp, format, ap)); }));
  va_end(ap);
  return r;
}
int __vfprintf_chk(FILE* fp, int flag, const char* format, va_list ap) {
  return static_cast<int>(stream_io(Fn::vfprintf, fp, -1, [&] { return print_bytes(REAL(__vfprintf_chk)(fp, flag, format, ap)); }));
}
int __fprintf_chk(FILE* fp, int flag, const char* format, ...) {
  va_list ap;
  va_start(ap, format);
  int r = static_cast<int>(stream_io(Fn::fprintf, fp, -1, [&] { return print_bytes(REAL(__vfprintf_chk)(fp, flag, format, ap)); }));
  va_end(ap);
  return r;
}

int printf(const char* format, ...) {
  va_list ap;
  va_start(ap, format);
  int r = static_cast<int>(stream_io(Fn::printf, stdout, -1, [&] { return print_bytes(REAL(vprintf)(format, ap)); }));
  va_end(ap);
  return r;
}
int vprintf(const char* format, va_list ap) {
  return static_cast<int>(stream_io(Fn::vprintf, stdout, -1, [&] { return print_bytes(REAL(vprintf)(format, ap)); }));
}
int __printf_chk(int flag, const char* format, ...) {
  va_list ap;
  va_start(ap, format);
  int r = static_cast<int>(
      stream_io(Fn::printf, stdout, -1, [&] { return print_bytes(REAL(__vprintf_chk)(flag, format, ap)); }));
  va_end(ap);
  return r;
}
int __vprintf_chk(int flag, const char* format, va_list ap) {
  return static_cast<int>(
      stream_io(Fn::vprintf, stdout, -1, [&] { return print_bytes(REAL(__vprintf_chk)(flag, format, ap)); }));
}

// Characters and words. glibc's _IO_getc/_IO_putc are getc/putc (Darshan
// wraps them for old binaries); they are recorded under those names.
int fputc(int c, FILE* fp) {
  return char_io(Fn::fputc, fp, 1, [&] { return REAL(fputc)(c, fp); });
}
int putc(int c, FILE* fp) {
  return char_io(Fn::putc, fp, 1, [&] { return REAL(putc)(c, fp); });
}
int _IO_putc(int c, FILE* fp) {
  return char_io(Fn::putc, fp, 1, [&] { return REAL(putc)(c, fp); });
}
int putchar(int c) {
  return char_io(Fn::putchar, stdout, 1, [&] { return REAL(putchar)(c); });
}
int putw(int w, FILE* fp) {
  return char_io(Fn::putw, fp, sizeof(int), [&] { return REAL(putw)(w, fp); });
}
int puts(const char* str) {
  const int64_t n = g_hot.active ? static_cast<int64_t>(std::strlen(str)) + 1 : 0;  // with the newline
  return char_io(Fn::puts, stdout, n, [&] { return REAL(puts)(str); });
}
int fgetc(FILE* fp) {
  return char_io(Fn::fgetc, fp, 1, [&] { return REAL(fgetc)(fp); });
}
int getc(FILE* fp) {
  return char_io(Fn::getc, fp, 1, [&] { return REAL(getc)(fp); });
}
int _IO_getc(FILE* fp) {
  return char_io(Fn::getc, fp, 1, [&] { return REAL(getc)(fp); });
}
int getchar() {
  return char_io(Fn::getchar, stdin, 1, [&] { return REAL(getchar)(); });
}
// The _unlocked forms (glibc, without the stream's lock): GNU programs call
// them through gnulib's unlocked-io.h (md5sum and sha256sum read with
// fread_unlocked, sort and sed write with fwrite_unlocked), and libc's own
// reads inside them are invisible to the POSIX layer, so without these the
// bytes go missing. Recorded under the locked form's name.
size_t fread_unlocked(void* p, size_t size, size_t n, FILE* fp) {
  return items_io(Fn::fread, fp, size, n, [&] { return REAL(fread_unlocked)(p, size, n, fp); });
}
size_t __fread_unlocked_chk(void* p, size_t plen, size_t size, size_t n, FILE* fp) {
  return items_io(Fn::fread, fp, size, n, [&] { return REAL(__fread_unlocked_chk)(p, plen, size, n, fp); });
}
size_t fwrite_unlocked(const void* p, size_t size, size_t n, FILE* fp) {
  return items_io(Fn::fwrite, fp, size, n, [&] { return REAL(fwrite_unlocked)(p, size, n, fp); });
}
char* fgets_unlocked(char* buf, int n, FILE* fp) {
  return line_io(Fn::fgets, fp, n, [&] { return REAL(fgets_unlocked)(buf, n, fp); });
}
char* __fgets_unlocked_chk(char* buf, size_t blen, int n, FILE* fp) {
  return line_io(Fn::fgets, fp, n, [&] { return REAL(__fgets_unlocked_chk)(buf, blen, n, fp); });
}
int fputs_unlocked(const char* str, FILE* fp) {
  return puts_io(fp, str, [&] { return REAL(fputs_unlocked)(str, fp); });
}
int fputc_unlocked(int c, FILE* fp) {
  return char_io(Fn::fputc, fp, 1, [&] { return REAL(fputc_unlocked)(c, fp); });
}
int putc_unlocked(int c, FILE* fp) {
  return char_io(Fn::putc, fp, 1, [&] { return REAL(putc_unlocked)(c, fp); });
}
int putchar_unlocked(int c) {
  return char_io(Fn::putchar, stdout, 1, [&] { return REAL(putchar_unlocked)(c); });
}
int fgetc_unlocked(FILE* fp) {
  return char_io(Fn::fgetc, fp, 1, [&] { return REAL(fgetc_unlocked)(fp); });
}
int getc_unlocked(FILE* fp) {
  return char_io(Fn::getc, fp, 1, [&] { return REAL(getc_unlocked)(fp); });
}
int getchar_unlocked() {
  return char_io(Fn::getchar, stdin, 1, [&] { return REAL(getchar_unlocked)(); });
}
int fflush_unlocked(FILE* fp) {
  if (!fp) return REAL(fflush_unlocked)(fp);
  return fd_op(Fn::fflush, S, stream_fd(fp), [&] { return REAL(fflush_unlocked)(fp); });
}

// A word equal to EOF is told from the end by the indicators; a word cut by
// the end of the file consumed its bytes, read back from the stream.
int getw(FILE* fp) {
  IoScope s(Fn::getw, S);
  if (!s.on()) return REAL(getw)(fp);
  settle_stream_start(fp);
  const int r = REAL(getw)(fp);
  if (r != EOF || !(ferror_unlocked(fp) || feof_unlocked(fp))) {
    s.stop(false);
    record_moved(s, fp, sizeof(int), sizeof(int));
    return r;
  }
  const bool failed = ferror_unlocked(fp);
  s.stop(failed);
  const int fd = stream_fd(fp);
  FdEntry* e;
  if (fd_lookup(fd, e) != kFdTraced) return r;
  const int64_t off = e->spos.load(std::memory_order_relaxed);
  const int64_t pos = stream_pos(fp);
  const int64_t moved = pos > off ? pos - off : 0;
  if (pos >= 0) e->spos.store(pos, std::memory_order_relaxed);
  s.record(fd, e->path.load(std::memory_order_relaxed), off, sizeof(int), failed ? -1 : moved);
  return r;
}

// ungetc pushes one character back: the position moves back by one. Recorded
// with the position before the call and, as ret, the position after (-1: the
// call failed, ungetc(EOF) or a full push-back buffer; it sets no errno).
int ungetc(int c, FILE* fp) {
  IoScope s(Fn::ungetc, S);
  if (!s.on()) return REAL(ungetc)(c, fp);
  settle_stream_start(fp);
  const int r = REAL(ungetc)(c, fp);
  s.stop(false);
  const int fd = stream_fd(fp);
  FdEntry* e;
  if (fd_lookup(fd, e) != kFdTraced) return r;
  const int64_t off = e->spos.load(std::memory_order_relaxed);
  int64_t pos = -1;
  if (r != EOF) {
    pos = off > 0 ? off - 1 : 0;
    e->spos.store(pos, std::memory_order_relaxed);
  }
  s.record(fd, e->path.load(std::memory_order_relaxed), off, -1, pos);
  return r;
}

int gnu_fscanf(FILE* fp, const char* format, ...) {
  va_list ap;
  va_start(ap, format);
  int r = scan_io(Fn::fscanf, fp, [&] { return REAL(vfscanf)(fp, format, ap); });
  va_end(ap);
  return r;
}
int __isoc99_fscanf(FILE* fp, const char* format, ...) {
  va_list ap;
  va_start(ap, format);
  int r = scan_io(Fn::fscanf, fp, [&] { return REAL(__isoc99_vfscanf)(fp, format, ap); });
  va_end(ap);
  return r;
}
int gnu_vfscanf(FILE* fp, const char* format, va_list ap) {
  return scan_io(Fn::vfscanf, fp, [&] { return REAL(vfscanf)(fp, format, ap); });
}
int __isoc99_vfscanf(FILE* fp, const char* format, va_list ap) {
  return scan_io(Fn::vfscanf, fp, [&] { return REAL(__isoc99_vfscanf)(fp, format, ap); });
}

// fsetpos: recorded like fseek, with the absolute position it restores.
int fsetpos(FILE* fp, const fpos_t* pos) {
  return static_cast<int>(stream_seek(Fn::fsetpos, fp, pos ? pos->__pos : -1, PosAfter::kAsk,
                                      [&] { return static_cast<int64_t>(REAL(fsetpos)(fp, pos)); }));
}
int fsetpos64(FILE* fp, const fpos64_t* pos) {
  return static_cast<int>(stream_seek(Fn::fsetpos64, fp, pos ? pos->__pos : -1, PosAfter::kAsk,
                                      [&] { return static_cast<int64_t>(REAL(fsetpos64)(fp, pos)); }));
}

#pragma GCC visibility pop
}  // extern "C"
