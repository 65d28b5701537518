// analyze_shapes.c: the trace shapes of issue 9 §5 that stress `strata analyze`
// differently from the synthetic job of gen_trace, made by a real program
// under `strata run` (bench/analyze_shapes.sh).
//
//   analyze_shapes strided FILE N    N pread of 64 B at strided offsets of a 64 MiB file
//   analyze_shapes newoffset FILE N  N pread of 64 B, each at an offset not read before
//                                    (FILE at least N * 128 bytes; a sparse file will do)
//   analyze_shapes newfile DIR N     N stat of N distinct paths (every event a new file)
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s strided|newoffset|newfile PATH N\n", argv[0]);
    return 2;
  }
  const char* mode = argv[1];
  long n = atol(argv[3]);
  char buf[64];
  unsigned long long sum = 0;
  if (strcmp(mode, "newfile") == 0) {
    char p[4096];
    struct stat st;
    for (long i = 0; i < n; ++i) {
      snprintf(p, sizeof p, "%s/d%ld/f%ld", argv[2], i % 1000, i);
      sum += (unsigned long long)stat(p, &st);
    }
  } else {
    int fd = open(argv[2], O_RDONLY);
    if (fd < 0) {
      perror(argv[2]);
      return 1;
    }
    const long blocks = (64L << 20) / 64;
    for (long i = 0; i < n; ++i) {
      // newoffset: every 128 bytes, never adjacent (FILE: >= N * 128 bytes, sparse is fine)
      long off = strcmp(mode, "strided") == 0 ? ((i * 7919) % blocks) * 64 : i * 128;
      ssize_t r = pread(fd, buf, sizeof buf, off);
      sum += (unsigned long long)r + (unsigned char)buf[0];
    }
    close(fd);
  }
  printf("%s n=%ld chk=%llu\n", mode, n, sum);
  return 0;
}
