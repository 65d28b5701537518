/* fork_loop N: N times fork(), the child _exit(0)s, the parent waits. The
 * fixed cost strata adds to every process a job forks (bench/short_procs.sh). */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char** argv) {
  const int n = argc > 1 ? atoi(argv[1]) : 300;
  for (int i = 0; i < n; ++i) {
    const pid_t p = fork();
    if (p < 0) return 1;
    if (p == 0) _exit(0);
    int status;
    if (waitpid(p, &status, 0) != p) return 1;
  }
  return 0;
}
