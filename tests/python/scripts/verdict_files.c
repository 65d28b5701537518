/* A plain POSIX job for the verdict tests (test_verdict.py):
 *   verdict_files DIR STATS CHUNK BURN_MS
 * stats every file of DIR STATS times, reads each whole in CHUNK-byte reads,
 * then burns BURN_MS of CPU. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s DIR STATS CHUNK BURN_MS\n", argv[0]);
    return 2;
  }
  const int stats = atoi(argv[2]);
  const size_t chunk = (size_t)atol(argv[3]);
  const double burn_ms = atof(argv[4]);
  char* buf = malloc(chunk);
  DIR* d = opendir(argv[1]);
  if (!d || !buf) return 1;
  struct dirent* e;
  char path[4096];
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    snprintf(path, sizeof path, "%s/%s", argv[1], e->d_name);
    struct stat st;
    for (int i = 0; i < stats; ++i) stat(path, &st);
    int fd = open(path, O_RDONLY);
    if (fd < 0) return 1;
    while (read(fd, buf, chunk) > 0) {
    }
    close(fd);
  }
  closedir(d);
  volatile unsigned long x = 0;
  const double t0 = now_ms();
  while (now_ms() - t0 < burn_ms) x += 1;
  free(buf);
  return 0;
}
