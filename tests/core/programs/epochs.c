/* A loop program for smart collection (docs/live.md, "Modes"):
 *   epochs DIR EPOCHS CHANGED SLEEP_US [FILES]
 * Each of EPOCHS epochs opens DIR/train/sample.bin, reads it in 4 KiB
 * requests to its end, closes it (and the same for DIR/train/sample1.bin ..
 * sample<FILES-1>.bin when FILES > 1), appends one 32-byte line to
 * DIR/out/epochs.log, and sleeps SLEEP_US microseconds (a stand-in for
 * compute). Epoch CHANGED (-1: none) also reads DIR/extra/x.bin: the one
 * epoch that behaves differently. The files are made by the caller, so the
 * program's first events are the loop's. Exit status 0 when every call did
 * what it should. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void read_all(const char* dir, const char* leaf) {
  char path[4096], buf[4096];
  snprintf(path, sizeof(path), "%s/%s", dir, leaf);
  int fd = open(path, O_RDONLY);
  if (fd < 0) exit(2);
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) {
  }
  if (n < 0) exit(3);
  close(fd);
}

static void append_line(const char* dir, int epoch) {
  char path[4096], line[33];
  snprintf(path, sizeof(path), "%s/out/epochs.log", dir);
  snprintf(line, sizeof(line), "epoch %-24d\n", epoch);
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0) exit(4);
  if (write(fd, line, 32) != 32) exit(5);
  close(fd);
}

int main(int argc, char** argv) {
  if (argc != 5 && argc != 6) {
    fprintf(stderr, "usage: epochs DIR EPOCHS CHANGED SLEEP_US [FILES]\n");
    return 1;
  }
  const char* dir = argv[1];
  const int epochs = atoi(argv[2]), changed = atoi(argv[3]);
  const long sleep_us = atol(argv[4]);
  const int files = argc == 6 ? atoi(argv[5]) : 1;
  for (int e = 0; e < epochs; ++e) {
    read_all(dir, "train/sample.bin");
    for (int f = 1; f < files; ++f) {
      char leaf[64];
      snprintf(leaf, sizeof(leaf), "train/sample%d.bin", f);
      read_all(dir, leaf);
    }
    if (e == changed) read_all(dir, "extra/x.bin");
    append_line(dir, e);
    if (sleep_us > 0) {
      struct timespec ts = {sleep_us / 1000000, (sleep_us % 1000000) * 1000};
      nanosleep(&ts, NULL);
    }
  }
  return 0;
}
