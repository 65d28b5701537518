// ring_pages FILE N: N one-byte preads of FILE, then prints the largest
// AnonHugePages (kB) of the process's anonymous 4096 kB mappings (strata's
// event ring under `strata run`), then forks a child that does 10 preads.
// Exit 0 when everything worked.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static long largest_huge_kb_of_4mib_mappings(void) {
  FILE* f = fopen("/proc/self/smaps", "r");
  if (!f) return -1;
  char line[512];
  long best = 0, size_kb = 0, huge_kb = 0;
  while (fgets(line, sizeof line, f)) {
    if (sscanf(line, "Size: %ld kB", &size_kb) == 1) continue;
    if (sscanf(line, "AnonHugePages: %ld kB", &huge_kb) == 1 && size_kb == 4096 && huge_kb > best) best = huge_kb;
  }
  fclose(f);
  return best;
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
  if (fd < 0 || preads(fd, atol(argv[2])) != 0) return 3;
  printf("huge_kb=%ld\n", largest_huge_kb_of_4mib_mappings());
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) return 4;
  if (pid == 0) _exit(preads(fd, 10) == 0 ? 0 : 5);
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return 6;
  return close(fd) == 0 ? 0 : 7;
}
