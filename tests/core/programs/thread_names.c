/* Threads that rename themselves (strata_thread_name) while they read: each
 * of 2 threads, argv[2] times, takes a name never used before and preads one
 * byte of argv[1]. The writer thread names a thread in the trace while the
 * thread may be interning its next name. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "strata/strata.h"

static int fd;
static long rounds;

static void* rename_and_read(void* arg) {
  long k = (long)arg;
  char name[64], byte;
  for (long i = 0; i < rounds; ++i) {
    snprintf(name, sizeof name, "reader-%ld-%ld", k, i);
    strata_thread_name(name);
    if (pread(fd, &byte, 1, 0) != 1) return (void*)1;
  }
  return NULL;
}

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  fd = open(argv[1], O_RDONLY);
  if (fd < 0) return 1;
  rounds = atol(argv[2]);
  pthread_t t[2];
  for (long k = 0; k < 2; ++k) pthread_create(&t[k], NULL, rename_and_read, (void*)k);
  int failed = 0;
  for (int k = 0; k < 2; ++k) {
    void* r;
    pthread_join(t[k], &r);
    failed |= r != NULL;
  }
  close(fd);
  printf("%ld preads\n", failed ? 0 : 2 * rounds);
  return failed;
}
