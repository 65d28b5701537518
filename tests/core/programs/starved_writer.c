// starved_writer FILE N: one pread of FILE, then N one-byte preads while
// strata's writer thread cannot run: every thread of the process is pinned to
// one CPU and the reading thread runs SCHED_FIFO, which a SCHED_OTHER thread
// on that CPU never preempts. Whatever the ring holds must hold the burst.
// Exits 77 when the system refuses SCHED_FIFO (no CAP_SYS_NICE), 0 when all
// the reads worked.
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

// Pins every thread of the process (strata's writer too) to `cpu`.
static int pin_all_threads(int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  DIR* d = opendir("/proc/self/task");
  if (!d) return -1;
  int ok = 0;
  for (struct dirent* e; (e = readdir(d)) != NULL;) {
    if (e->d_name[0] == '.') continue;
    if (sched_setaffinity(atoi(e->d_name), sizeof(one), &one) != 0) ok = -1;
  }
  closedir(d);
  return ok;
}

static int preads(int fd, long n) {
  char c;
  for (long i = 0; i < n; ++i)
    if (pread(fd, &c, 1, i % 16) != 1) return -1;
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  int fd = open(argv[1], O_RDONLY);
  if (fd < 0 || preads(fd, 1) != 0) return 3;  // the thread's ring and the writer exist now
  cpu_set_t mine;
  if (sched_getaffinity(0, sizeof(mine), &mine) != 0) return 4;
  int cpu = 0;
  while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &mine)) ++cpu;
  if (pin_all_threads(cpu) != 0) return 5;
  struct sched_param fifo = {.sched_priority = 1};
  if (sched_setscheduler(0, SCHED_FIFO, &fifo) != 0) {
    printf("SCHED_FIFO refused\n");
    return 77;
  }
  const int burst = preads(fd, atol(argv[2]));
  struct sched_param other = {.sched_priority = 0};
  sched_setscheduler(0, SCHED_OTHER, &other);
  if (burst != 0) return 6;
  return close(fd) == 0 ? 0 : 7;
}
