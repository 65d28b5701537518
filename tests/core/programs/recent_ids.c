/* The runtime remembers the names and paths each thread interned last
 * (RecentIds): a caller that reuses one buffer for different strings, and
 * paths that differ only in their middle or only by the directory they are
 * relative to, must still be recorded as what they are. Links libstrata.so.
 * argv[1] = an empty directory. Records, in order:
 *   strata_complete: names "op0".."op5" cycled 4 times from one buffer,
 *     categories "cat-a"/"cat-b" alternating from one buffer;
 *   strata_complete_io "load" naming DIR/a0/data/x.npy, DIR/a1/data/x.npy, DIR/a0/data/x.npy
 *     (one path buffer; the paths share their last 8 bytes), then
 *     DIR/a0/data/y.npy, DIR/a0/data/x.npy;
 *   open of the relative "f" in DIR/a0, then in DIR/a1 (chdir between). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "strata/strata.h"

static void touch(const char* path) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || close(fd) != 0) exit(2);
}

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const char* dir = argv[1];
  char name[16], cat[16], path[4096];
  for (int i = 0; i < 24; ++i) {
    snprintf(name, sizeof name, "op%d", i % 6);
    snprintf(cat, sizeof cat, "cat-%c", i % 2 ? 'b' : 'a');
    strata_complete(name, cat, strata_now(), 1);
  }
  const char* files[] = {"a0/data/x.npy", "a1/data/x.npy", "a0/data/x.npy", "a0/data/y.npy", "a0/data/x.npy"};
  for (int i = 0; i < 5; ++i) {
    snprintf(path, sizeof path, "%s/%s", dir, files[i]);
    strata_complete_io("load", "numpy", strata_now(), 1, path, 8, 8);
  }
  for (int i = 0; i < 2; ++i) {
    snprintf(path, sizeof path, "%s/a%d", dir, i);
    if (mkdir(path, 0755) != 0 || chdir(path) != 0) return 2;
    touch("f");
  }
  strata_flush();
  return 0;
}
