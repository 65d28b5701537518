/* A trace of many small blocks with dictionary growth all along
 * (parallel_decode_test.cc): under STRATA_BUFFER_SIZE=4K each EVENTS block
 * holds at most 64 events.
 *   many_blocks DIR N
 * Two threads; each does N steps: every 100th step creates a new file
 * DIR/t<thread>-<step> (open, 8-byte write, close: a new path, so a DICT
 * block in the middle of the file), the others pread 64 bytes of DIR/data
 * at a strided offset. Every 2000 steps it sleeps 2 ms, so that the
 * writer thread keeps up with the default ring (no drops). Prints
 * "preads=<total> files=<total>". */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char* dir;
static long steps;
static int data_fd;

static void die(const char* what) {
  fprintf(stderr, "many_blocks: %s: %s\n", what, strerror(errno));
  exit(1);
}

static void* work(void* arg) {
  const long t = (long)arg;
  char buf[64], path[4096];
  for (long i = 0; i < steps; ++i) {
    if (i % 2000 == 1999) usleep(2000);
    if (i % 100 == 0) {
      snprintf(path, sizeof path, "%s/t%ld-%ld", dir, t, i);
      int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
      if (fd < 0) die("open");
      if (write(fd, "01234567", 8) != 8) die("write");
      close(fd);
    } else if (pread(data_fd, buf, sizeof buf, (i * 4160 + t * 64) % (1 << 16)) != (ssize_t)sizeof buf) {
      die("pread");
    }
  }
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: many_blocks DIR N\n");
    return 2;
  }
  dir = argv[1];
  steps = atol(argv[2]);
  char path[4096];
  snprintf(path, sizeof path, "%s/data", dir);
  data_fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0644);
  if (data_fd < 0) die("open data");
  static char block[1 << 16];
  memset(block, 'x', sizeof block);
  if (write(data_fd, block, sizeof block) != (ssize_t)sizeof block) die("write data");
  pthread_t th[2];
  for (long t = 0; t < 2; ++t) pthread_create(&th[t], NULL, work, (void*)t);
  for (int t = 0; t < 2; ++t) pthread_join(th[t], NULL);
  close(data_fd);
  printf("preads=%ld files=%ld\n", 2 * (steps - (steps + 99) / 100), 2 * ((steps + 99) / 100));
  return 0;
}
