/* A job the live tests steer: phases of known I/O separated by hand-offs, so
 * a test can switch the mode between phases and know exactly which calls each
 * mode saw. Links libstrata.so for the tag API.
 *
 *   live_job DIR phases   : for k = 1, 2, 3: 100 write(2)s of 100 bytes to
 *                           DIR/phaseK.bin, then print "phase K done" and wait
 *                           (bounded: 30 s) for DIR/goK to exist.
 *   live_job DIR steps E S: for each of E epochs (tag epoch=e): S steps (tag
 *                           step=s) of one 64-byte write to DIR/steps.bin, then
 *                           untagged, one 64-byte write to DIR/ckpt.bin.
 *   live_job DIR fork     : a child writes DIR/child.bin (10 x 10 bytes) and
 *                           exits 0; the parent waits for it, then execs
 *                           /bin/true.
 * Exit status 0 when every call did what it should. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "strata/strata.h"

static void write_n(const char* dir, const char* leaf, int n, int size) {
  char path[4096], buf[4096];
  snprintf(path, sizeof(path), "%s/%s", dir, leaf);
  memset(buf, 'x', sizeof(buf));
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0) exit(2);
  for (int i = 0; i < n; ++i)
    if (write(fd, buf, (size_t)size) != size) exit(3);
  close(fd);
}

static void wait_for_file(const char* dir, const char* leaf) {
  char path[4096];
  snprintf(path, sizeof(path), "%s/%s", dir, leaf);
  for (int i = 0; i < 3000; ++i) {
    if (access(path, F_OK) == 0) return;
    usleep(10000);
  }
  fprintf(stderr, "live_job: %s never appeared\n", path);
  exit(4);
}

int main(int argc, char** argv) {
  if (argc < 3) return 64;
  const char* dir = argv[1];
  if (strcmp(argv[2], "phases") == 0) {
    for (int k = 1; k <= 3; ++k) {
      char leaf[32], go[32];
      snprintf(leaf, sizeof(leaf), "phase%d.bin", k);
      snprintf(go, sizeof(go), "go%d", k);
      write_n(dir, leaf, 100, 100);
      printf("phase %d done\n", k);
      fflush(stdout);
      wait_for_file(dir, go);
    }
    return 0;
  }
  if (strcmp(argv[2], "steps") == 0 && argc == 5) {
    const int epochs = atoi(argv[3]), steps = atoi(argv[4]);
    for (int e = 0; e < epochs; ++e) {
      strata_tag_set_int("epoch", e);
      for (int s = 0; s < steps; ++s) {
        strata_tag_set_int("step", s);
        write_n(dir, "steps.bin", 1, 64);
      }
      strata_tag_clear();
      write_n(dir, "ckpt.bin", 1, 64);
    }
    return 0;
  }
  if (strcmp(argv[2], "fork") == 0) {
    pid_t child = fork();
    if (child < 0) return 5;
    if (child == 0) {
      write_n(dir, "child.bin", 10, 10);
      _exit(0);
    }
    int status = 0;
    if (waitpid(child, &status, 0) != child || status != 0) return 6;
    execl("/bin/true", "true", (char*)NULL);
    return 7;
  }
  return 64;
}
