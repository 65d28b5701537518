/* Every dup form, fileno, fdopen, rename, mmap and every stat form, a known
 * number of times (stdio_test.cc: PosixForms.*). argv[1]: directory to work in. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc < 2 || chdir(argv[1]) != 0) return 2;
  char buf[256];
  memset(buf, 'a', sizeof buf);
  /* a.dat: 1 open + 5 dups, 1 write (100 B), 1 pread (10 B), 6 stats, 1 mmap */
  int fd = open("a.dat", O_CREAT | O_RDWR | O_TRUNC, 0640);
  if (fd < 0) return 3;
  if (write(fd, buf, 100) != 100) return 4;
  int d[5];
  d[0] = dup(fd);
  d[1] = dup2(fd, 50);
  d[2] = dup3(fd, 51, O_CLOEXEC);
  d[3] = fcntl(fd, F_DUPFD, 60);
  d[4] = fcntl(fd, F_DUPFD_CLOEXEC, 70);
  if (fcntl(fd, F_GETFL) < 0) return 5; /* not a dup: not recorded */
  if (pread(d[0], buf, 10, 0) != 10) return 6;
  for (int i = 0; i < 5; ++i)
    if (d[i] < 0 || close(d[i]) != 0) return 7;
  struct stat st;
  struct statx stx;
  if (stat("a.dat", &st) || lstat("a.dat", &st) || fstat(fd, &st)) return 8;
  if (fstatat(AT_FDCWD, "a.dat", &st, 0) || fstatat(fd, "", &st, AT_EMPTY_PATH)) return 9;
  if (statx(AT_FDCWD, "a.dat", 0, STATX_SIZE, &stx)) return 10;
  void* m = mmap(NULL, 100, PROT_READ, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED || munmap(m, 100)) return 11;
  if (close(fd)) return 12;
  /* b.txt: fopen, fileno, fputs, fclose */
  FILE* fp = fopen("b.txt", "w");
  if (!fp || fileno(fp) < 0 || fputs("hello\n", fp) < 0 || fclose(fp)) return 13;
  /* c.dat: open (mode 0600), fdopen, fputs, fclose, then renamed to d.dat */
  int cfd = open("c.dat", O_CREAT | O_WRONLY | O_TRUNC, 0600);
  FILE* cf = cfd >= 0 ? fdopen(cfd, "w") : NULL;
  if (!cf || fputs("x", cf) < 0 || fclose(cf)) return 14;
  if (rename("c.dat", "d.dat")) return 15;
  return 0;
}
