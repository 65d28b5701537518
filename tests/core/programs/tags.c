/* Context tags reach the POSIX events of the thread that set them, and only
 * that thread: links libstrata.so and calls the C API. argv[1] = a file of at
 * least 4 KiB. Tag timeline of the main thread (5 + 7 + 1 + 1 + 2 preads):
 *   epoch=3 -> 5 preads; epoch=4,stage=train -> 7 preads (while a second,
 *   untagged thread does 9 preads); save; epoch=5 -> 1 pread; restore -> 1
 *   pread; clear -> 2 preads. Also a region "step" (app) under epoch=3, an
 *   instant and a counter. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "strata/strata.h"

static int fd;
static pthread_barrier_t go, done;

static void preads(int n) {
  char buf[4096];
  for (int i = 0; i < n; ++i)
    if (pread(fd, buf, sizeof(buf), 0) != (ssize_t)sizeof(buf)) exit(1);
}

static void* other(void* arg) {
  (void)arg;
  strata_thread_name("untagged-reader");
  pthread_barrier_wait(&go);
  preads(9);
  pthread_barrier_wait(&done);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  fd = open(argv[1], O_RDONLY);
  if (fd < 0) return 1;
  pthread_barrier_init(&go, NULL, 2);
  pthread_barrier_init(&done, NULL, 2);
  pthread_t t;
  pthread_create(&t, NULL, other, NULL);

  strata_tag_set_int("epoch", 3);
  strata_region_begin("step", "app");
  preads(5);
  strata_region_end();
  strata_tag_set_int("epoch", 4);
  strata_tag_set_str("stage", "train");
  pthread_barrier_wait(&go);
  preads(7);
  pthread_barrier_wait(&done);
  uint32_t saved = strata_tag_save();
  strata_tag_set_int("epoch", 5);
  strata_tag_unset("stage");
  preads(1);
  strata_tag_restore(saved);
  preads(1);
  strata_instant("checkpoint", "app");
  strata_tag_clear();
  preads(2);
  strata_counter("loss_x1000", 1234);
  pthread_join(t, NULL);
  close(fd);
  printf("enabled=%d\n", strata_enabled());
  return 0;
}
