/* Calls every intercepted POSIX and STDIO function a known number of times on
 * files under argv[1]; the expected trace is spelled out in workload_test.cc,
 * in the same order. Built twice: -O2, and -O2 -D_FORTIFY_SOURCE=2 (which turns
 * read/pread/fread/fgets/fprintf/vfprintf/open/openat into their checked entry
 * points). Arguments are laundered through an empty asm so the compiler can
 * neither fold nor rewrite the calls (fputs -> fwrite, constant-size reads).
 * Any unexpected result exits 1 with a message on stderr. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define L(x) ({ __typeof__(x) _v = (x); __asm__ volatile("" : "+r"(_v)); _v; })
static const char* LS(const char* s) {
  __asm__ volatile("" : "+r"(s));
  return s;
}

static char dir[2048];
static char* P(const char* name) {
  static char bufs[8][4096];
  static int next;
  char* b = bufs[next++ % 8];
  snprintf(b, 4096, "%s/%s", dir, name);
  return b;
}

static void fail(const char* what, long got, long want) {
  fprintf(stderr, "workload: %s returned %ld, expected %ld (errno %d)\n", what, got, want, errno);
  exit(1);
}
#define EXPECT(call, want)                             \
  do {                                                 \
    long got_ = (long)(call);                          \
    if (got_ != (long)(want)) fail(#call, got_, (want)); \
  } while (0)
#define EXPECT_ERR(call, want_errno)                   \
  do {                                                 \
    errno = 0;                                         \
    long got_ = (long)(call);                          \
    if (got_ != -1 || errno != (want_errno)) fail(#call, got_, -1); \
  } while (0)

static int vprint(FILE* f, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int r = vfprintf(f, fmt, ap);
  va_end(ap);
  return r;
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  snprintf(dir, sizeof(dir), "%s", argv[1]);
  char buf[16384], rbuf[16384], line[64];
  for (size_t i = 0; i < sizeof(buf); ++i) buf[i] = (char)('a' + i % 26);
  struct stat st;
  struct stat64 st64;
  struct statx stx;

  /* 1. Writing data.bin: 4 x 4096 sequential, then positional, vectored,
   *    syncs and size changes. */
  int fd = creat(P("data.bin"), 0644);
  if (fd < 0) fail("creat", fd, 3);
  for (int i = 0; i < 4; ++i) EXPECT(write(fd, buf, L(4096)), 4096);
  EXPECT(pwrite(fd, buf, L(100), 16384), 100);
  EXPECT(pwrite64(fd, buf, L(200), 16484), 200);
  struct iovec wv[3] = {{buf, 10}, {buf, 20}, {buf, 30}};
  EXPECT(writev(fd, wv, 3), 60);
  EXPECT(pwritev(fd, wv, 2, 20000), 30);
  EXPECT(pwritev64(fd, wv, 3, 20030), 60);
  EXPECT(pwritev2(fd, wv, 1, 20090, 0), 10);
  EXPECT(fsync(fd), 0);
  EXPECT(fdatasync(fd), 0);
  EXPECT(fdatasync(fd), 0);
  EXPECT(sync_file_range(fd, 0, 4096, SYNC_FILE_RANGE_WRITE), 0);
  EXPECT(ftruncate(fd, 24576), 0);
  EXPECT(ftruncate64(fd, 32768), 0);
  EXPECT(fallocate(fd, 0, 32768, 4096), 0);
  EXPECT(fallocate64(fd, 0, 36864, 4096), 0);
  EXPECT(posix_fallocate(fd, 40960, 4096), 0);
  EXPECT(posix_fallocate64(fd, 45056, 4096), 0);
  EXPECT(fstat(fd, &st), 0);
  EXPECT(st.st_size, 49152);
  EXPECT(close(fd), 0);

  /* 2. Reading it back: tracked offsets through read/lseek/readv, explicit
   *    offsets for the p* forms, short reads at the end of the file. */
  fd = open(P("data.bin"), L(O_RDONLY));
  for (int i = 0; i < 3; ++i) EXPECT(read(fd, rbuf, L(1000)), 1000);
  EXPECT(lseek(fd, 10000, SEEK_SET), 10000);
  EXPECT(read(fd, rbuf, L(500)), 500);
  EXPECT(lseek(fd, 0, SEEK_END), 49152);
  EXPECT(read(fd, rbuf, L(100)), 0);
  EXPECT(lseek64(fd, -152, SEEK_END), 49000);
  EXPECT(read(fd, rbuf, L(1000)), 152);
  EXPECT(pread(fd, rbuf, L(4096), 4096), 4096);
  EXPECT(pread(fd, rbuf, L(4096), 8192), 4096);
  EXPECT(pread(fd, rbuf, L(4096), 47104), 2048);
  EXPECT(pread64(fd, rbuf, L(8192), 0), 8192);
  EXPECT(pread64(fd, rbuf, L(8192), 0), 8192);
  struct iovec rv[2] = {{rbuf, 100}, {rbuf + 100, 200}};
  EXPECT(lseek(fd, 0, SEEK_SET), 0);
  EXPECT(readv(fd, rv, 2), 300);
  EXPECT(readv(fd, rv, 2), 300);
  EXPECT(preadv(fd, rv, 2, 1000), 300);
  EXPECT(preadv64(fd, rv, 1, 2000), 100);
  EXPECT(preadv2(fd, rv, 2, 49000, 0), 152);
  EXPECT(lseek64(fd, 0, SEEK_CUR), 600);
  EXPECT(fstat64(fd, &st64), 0);
  EXPECT(close(fd), 0);

  /* 3. Other opens, failures, duplication. */
  fd = open64(P("data.bin"), O_RDONLY);
  int fd2 = openat(AT_FDCWD, P("data.bin"), L(O_RDONLY));
  int dfd = open(dir, O_RDONLY | O_DIRECTORY);
  int fd3 = openat(dfd, "data.bin", O_RDONLY);
  int fd4 = openat64(dfd, ".//data.bin", O_RDONLY);
  int c64 = creat64(P("c64.bin"), 0600);
  if (fd < 0 || fd2 < 0 || dfd < 0 || fd3 < 0 || fd4 < 0 || c64 < 0) fail("opens", -1, 0);
  EXPECT_ERR(open(P("missing.bin"), O_RDONLY), ENOENT);
  EXPECT_ERR(open(P("data.bin"), O_WRONLY | O_CREAT | O_EXCL, 0644), EEXIST);
  int d1 = dup(fd);
  EXPECT(dup2(fd, 100), 100);
  EXPECT(dup3(fd, 101, O_CLOEXEC), 101);
  EXPECT(fcntl(fd, F_DUPFD, 200), 200);
  EXPECT(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDONLY); /* not a dup: not recorded */
  EXPECT(read(200, rbuf, L(10)), 10);
  EXPECT(close(d1), 0);
  EXPECT(close(100), 0);
  EXPECT(close(101), 0);
  EXPECT(close(200), 0);
  EXPECT(close(fd4), 0);
  EXPECT(close(fd3), 0);
  EXPECT(close(fd2), 0);
  EXPECT(close(c64), 0);
  EXPECT(close(fd), 0);

  /* 4. Metadata. */
  EXPECT(stat(P("data.bin"), &st), 0);
  EXPECT_ERR(stat(P("missing.bin"), &st), ENOENT);
  EXPECT(stat64(P("data.bin"), &st64), 0);
  EXPECT(lstat(P("data.bin"), &st), 0);
  EXPECT(lstat64(P("data.bin"), &st64), 0);
  EXPECT(fstatat(dfd, "data.bin", &st, 0), 0);
  EXPECT(fstatat64(AT_FDCWD, P("data.bin"), &st64, 0), 0);
  EXPECT(statx(AT_FDCWD, P("data.bin"), 0, STATX_SIZE, &stx), 0);
  EXPECT(stx.stx_size, 49152);
  EXPECT(access(P("data.bin"), R_OK), 0);
  EXPECT_ERR(access(P("missing.bin"), F_OK), ENOENT);
  EXPECT(faccessat(dfd, "data.bin", R_OK, 0), 0);

  /* 5. Directories. */
  EXPECT(mkdir(P("sub"), 0755), 0);
  EXPECT_ERR(mkdir(P("sub"), 0755), EEXIST);
  EXPECT(mkdirat(dfd, "sub2", 0755), 0);
  for (int i = 1; i <= 3; ++i) {
    char name[16];
    snprintf(name, sizeof(name), "sub/f%d", i);
    int f = openat(dfd, name, O_WRONLY | O_CREAT, 0644);
    EXPECT(close(f), 0);
  }
  DIR* d = opendir(P("sub"));
  int entries = 0;
  while (readdir(d)) ++entries;
  EXPECT(entries, 5);
  EXPECT(closedir(d), 0);
  int sfd = open(P("sub2"), O_RDONLY | O_DIRECTORY);
  d = fdopendir(sfd);
  entries = 0;
  while (readdir64(d)) ++entries;
  EXPECT(entries, 2);
  EXPECT(closedir(d), 0);
  errno = 0;
  if (opendir(P("nodir")) != NULL || errno != ENOENT) fail("opendir(nodir)", 0, -1);
  EXPECT(rename(P("sub/f1"), P("sub/g1")), 0);
  EXPECT(renameat(dfd, "sub/f2", dfd, "sub/g2"), 0);
  EXPECT(renameat2(dfd, "sub/f3", dfd, "sub/g3", RENAME_NOREPLACE), 0);
  EXPECT(unlink(P("sub/g1")), 0);
  EXPECT(unlinkat(dfd, "sub/g2", 0), 0);
  EXPECT(unlinkat(dfd, "sub/g3", 0), 0);
  EXPECT(unlinkat(dfd, "sub2", AT_REMOVEDIR), 0);
  EXPECT(rmdir(P("sub")), 0);
  EXPECT_ERR(rmdir(P("sub")), ENOENT);
  EXPECT(close(dfd), 0);

  /* 6. Mappings of the file (an anonymous mapping is not recorded). */
  fd = open(P("data.bin"), O_RDWR);
  void* m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 4096);
  if (m == MAP_FAILED) fail("mmap", -1, 0);
  ((char*)m)[0] = 'Z';
  EXPECT(msync(m, 8192, MS_SYNC), 0);
  EXPECT(munmap(m, 8192), 0);
  void* m2 = mmap64(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
  if (m2 == MAP_FAILED) fail("mmap64", -1, 0);
  EXPECT(munmap(m2, 4096), 0);
  void* anon = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  EXPECT(munmap(anon, 4096), 0);

  /* 7. Copies inside the kernel: a read of the input, a write of the output. */
  int out = open(P("copy.bin"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  off_t so = 1000;
  EXPECT(sendfile(out, fd, &so, 3000), 3000);
  EXPECT(sendfile64(out, fd, NULL, 2000), 2000);
  EXPECT(copy_file_range(fd, NULL, out, NULL, 5000, 0), 5000);
  EXPECT(close(out), 0);
  EXPECT(close(fd), 0);

  /* 8. STDIO writes: 47 bytes in 7 calls. */
  FILE* f = fopen(P("text.txt"), "w");
  EXPECT(fputs(LS("alpha\n"), f) >= 0, 1);
  EXPECT(fputs(LS("beta\n"), f) >= 0, 1);
  EXPECT(fprintf(f, "%s %d\n", LS("gamma"), L(42)), 9);
  EXPECT(vprint(f, "%s-%d\n", LS("delta"), L(7)), 8);
  EXPECT(fwrite(LS("epsilon\n"), 1, L(8), f), 8);
  EXPECT(fwrite(LS("zeta\n"), L(5), 1, f), 1);
  EXPECT(fflush(f), 0);
  EXPECT(fprintf(f, "%d\n", L(12345)), 6);
  EXPECT(fclose(f), 0);

  /* 9. STDIO reads and positioning. */
  f = fopen64(P("text.txt"), "r");
  for (int i = 0; i < 3; ++i)
    if (!fgets(line, L(64), f)) fail("fgets", 0, 1);
  char* lp = NULL;
  size_t cap = 0;
  EXPECT(getline(&lp, &cap, f), 8);
  EXPECT(getline(&lp, &cap, f), 8);
  EXPECT(getdelim(&lp, &cap, '\n', f), 5);
  free(lp);
  EXPECT(ftell(f), 41);
  EXPECT(fseek(f, 6, SEEK_SET), 0);
  EXPECT(fread(rbuf, 1, L(5), f), 5);
  EXPECT(ftello(f), 11);
  EXPECT(fseeko(f, -6, SEEK_END), 0);
  EXPECT(fread(rbuf, 2, L(10), f), 3);
  rewind(f);
  EXPECT(fread(rbuf, 47, L(1), f), 1);
  if (fgets(line, L(64), f) != NULL) fail("fgets at EOF", 1, 0);
  EXPECT(fseeko64(f, 0, SEEK_SET), 0);
  EXPECT(ftello64(f), 0);
  EXPECT(ftell(f), 0);
  EXPECT(fclose(f), 0);

  /* 10. fdopen at a descriptor position, freopen (twice) on the stream. */
  fd = open(P("data.bin"), O_RDONLY);
  EXPECT(lseek(fd, 100, SEEK_SET), 100);
  f = fdopen(fd, "r");
  EXPECT(fread(rbuf, 1, L(50), f), 50);
  f = freopen(P("text.txt"), "r", f);
  if (!f || !fgets(line, L(64), f)) fail("freopen+fgets", 0, 1);
  f = freopen64(P("data.bin"), "r", f);
  if (!f) fail("freopen64", 0, 1);
  EXPECT(fclose(f), 0);
  f = fopen(P("append.txt"), "a+");
  EXPECT(fprintf(f, "%s=%d\n", LS("k"), L(1)), 4);
  EXPECT(fflush(f), 0);
  EXPECT(fclose(f), 0);
  EXPECT(fflush(NULL), 0); /* all streams: not recorded */

  /* 11. A descriptor that is not open. */
  EXPECT_ERR(read(987, rbuf, L(10)), EBADF);

  exit(L(0));
}
