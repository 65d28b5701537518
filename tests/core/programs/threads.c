// Threads and namespaces a traced program may use, each printing what it
// observes (threads_test.cc runs it plain and under strata and compares):
//   threads mainexit OUT     main leaves through pthread_exit while a worker
//                            writes OUT 200 ms later; the process must end,
//                            and the exit flushes stdout and a stream main
//                            left unflushed on descriptor 0 (OUT.log), and
//                            runs an atexit handler
//   threads setns N          N threads x 500 setns() into this process's own
//                            network namespace (type 0)
//   threads thrdcancel       a C11 thread blocked in read() is cancelled
//   threads churn OUT        400 threads one after the other under a 512 MiB
//                            address-space limit, each writing a line with
//                            errno cleared first; then a 256 MiB malloc
//   threads userns           unshare(CLONE_NEWUSER), then setns() into the
//                            mount namespace of a forked child
//   threads execveat OUT     writes 1,000 lines to OUT, then execveat()s
//                            /bin/true by descriptor (AT_EMPTY_PATH)
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <threads.h>
#include <time.h>
#include <unistd.h>

static const char* out_path;

static void* late_writer(void* arg) {
  (void)arg;
  usleep(200000);
  int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    write(fd, "worker done\n", 12);
    close(fd);
  }
  return NULL;
}

static void at_exit(void) { printf("atexit ran\n"); }

static int mainexit(void) {
  pthread_t t;
  if (pthread_create(&t, NULL, late_writer, NULL) != 0) return 3;
  atexit(at_exit);
  // A daemon's log: opened after closing stdin, so on descriptor 0, and left
  // for exit() to flush, as stdout is.
  char log_path[4200];
  snprintf(log_path, sizeof log_path, "%s.log", out_path);
  close(0);
  FILE* log = fdopen(open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644), "w");
  if (!log) return 3;
  fprintf(log, "log line on descriptor %d\n", fileno(log));
  printf("main leaves\n");
  pthread_exit(NULL);
}

static int setns_fd;
static volatile int setns_failures;
static void* setns_loop(void* arg) {
  (void)arg;
  for (int i = 0; i < 500; i++)
    if (setns(setns_fd, 0) != 0) __sync_fetch_and_add(&setns_failures, 1);
  return NULL;
}

static int setns_threads(int n) {
  setns_fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
  if (setns_fd < 0 || n > 16) return 3;
  pthread_t t[16];
  for (int i = 0; i < n; i++) pthread_create(&t[i], NULL, setns_loop, NULL);
  for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
  printf("setns failures %d\n", setns_failures);
  return 0;
}

static int pipe_fds[2];
static int blocked_reader(void* arg) {
  (void)arg;
  char b;
  read(pipe_fds[0], &b, 1);
  return 0;
}

static int thrdcancel(void) {
  if (pipe(pipe_fds) != 0) return 3;
  thrd_t t;
  if (thrd_create(&t, blocked_reader, NULL) != thrd_success) return 3;
  usleep(200000);
  pthread_cancel((pthread_t)t);
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 3;
  void* res = NULL;
  int r = pthread_timedjoin_np((pthread_t)t, &res, &until);
  printf("join %s, cancelled %d\n", r == 0 ? "ok" : "timed out", r == 0 && res == PTHREAD_CANCELED);
  return 0;
}

static int churn_fd, errno_changed;
static void* churn_body(void* arg) {
  char b[32];
  int n = snprintf(b, sizeof b, "%ld\n", (long)arg);
  errno = 0;
  if (write(churn_fd, b, (size_t)n) == n && errno != 0) __atomic_add_fetch(&errno_changed, 1, __ATOMIC_RELAXED);
  return NULL;
}

static int churn(const char* out) {
  struct rlimit rl = {512u << 20, 512u << 20};
  setrlimit(RLIMIT_AS, &rl);
  churn_fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (churn_fd < 0) return 3;
  pthread_attr_t at;
  pthread_attr_init(&at);
  pthread_attr_setstacksize(&at, 64 << 10);
  int failed = 0;
  for (long i = 0; i < 400; i++) {
    pthread_t t;
    if (pthread_create(&t, &at, churn_body, (void*)i) != 0) {
      failed++;
      continue;
    }
    pthread_join(t, NULL);
  }
  close(churn_fd);
  void* p = malloc(256u << 20);
  printf("threads not created %d, successful writes that changed errno %d, malloc 256 MiB %s\n", failed,
         errno_changed, p ? "ok" : strerror(errno));
  return 0;
}

static int userns(void) {
  int r = unshare(CLONE_NEWUSER);
  printf("unshare(CLONE_NEWUSER) %d %s\n", r, r ? strerror(errno) : "");
  int ready[2];
  if (pipe(ready) != 0) return 3;
  pid_t child = fork();
  if (child == 0) {
    char b = unshare(CLONE_NEWNS) == 0 ? 'y' : 'n';
    write(ready[1], &b, 1);
    pause();
    _exit(0);
  }
  char b = 'n';
  read(ready[0], &b, 1);
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/ns/mnt", (int)child);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  r = setns(fd, CLONE_NEWNS);
  printf("child's unshare(CLONE_NEWNS) %c, setns(its mount namespace) %d %s\n", b, r, r ? strerror(errno) : "");
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
  return 0;
}

static int exec_at(const char* out) {
  int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return 3;
  for (int i = 0; i < 1000; i++) write(fd, "abc\n", 4);
  close(fd);
  int bin = open("/bin/true", O_RDONLY | O_CLOEXEC);
  char* args[] = {"true", NULL};
  extern char** environ;
  execveat(bin, "", args, environ, AT_EMPTY_PATH);
  perror("execveat");
  return 4;
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const char* mode = argv[1];
  out_path = argc > 2 ? argv[2] : "/dev/null";
  if (!strcmp(mode, "mainexit")) return mainexit();
  if (!strcmp(mode, "thrdcancel")) return thrdcancel();
  if (!strcmp(mode, "churn")) return churn(out_path);
  if (!strcmp(mode, "userns")) return userns();
  if (!strcmp(mode, "execveat")) return exec_at(out_path);
  if (!strcmp(mode, "setns")) return setns_threads(atoi(out_path));
  return 2;
}
