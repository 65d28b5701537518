/* A plain POSIX job that only writes, for the verdict tests (test_verdict.py):
 *   verdict_writes FILE N BLOCK SYNC_EVERY
 * writes N blocks of BLOCK bytes at increasing offsets (pwrite) and calls
 * fsync after every SYNC_EVERY of them (0: never), then closes FILE. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s FILE N BLOCK SYNC_EVERY\n", argv[0]);
    return 2;
  }
  const long n = atol(argv[2]), every = atol(argv[4]);
  const size_t block = (size_t)atol(argv[3]);
  char* buf = malloc(block);
  int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (!buf || fd < 0) return 1;
  memset(buf, 'w', block);
  for (long i = 0; i < n; ++i) {
    if (pwrite(fd, buf, block, (off_t)(i * (long)block)) != (ssize_t)block) return 1;
    if (every > 0 && (i + 1) % every == 0 && fsync(fd) != 0) return 1;
  }
  return close(fd) == 0 ? 0 : 1;
}
