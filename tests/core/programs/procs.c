/* Multi-purpose test program for the core tests; argv[1] selects the mode.
 *   threads FILE NTHREADS NOPS    each thread preads FILE NOPS times at (i % 16) * 4096
 *   forkmt DIR K M                4 threads x K preads of DIR/a while the main thread forks;
 *                                 the child does M preads of DIR/b and 7 of DIR/a, then _exit(0)
 *   chain STEP DIR                exec chain A -> B -> C with known I/O at each step
 *   spawn DIR                     posix_spawn x2 (one with an empty environment), posix_spawnp x1
 *   child DIR N                   N preads of DIR/a (spawned child)
 *   loop DIR                      pwrites 4 KiB to DIR/data forever, 100 per ms at most
 *                                 (writes DIR/ready with its pid after 1000)
 *   term DIR N                    N writes to DIR/data, DIR/ready with its pid, then waits for a signal
 *   writes DIR N                  N 16-byte writes to DIR/data plus one failed open; prints a
 *                                 summary; exits 3
 * Prints "key=value" lines the tests cross-check against the trace. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;
static char self[4096];

__attribute__((noreturn)) static void die(const char* what) {
  fprintf(stderr, "procs: %s: %s\n", what, strerror(errno));
  exit(1);
}

static char* path_in(const char* dir, const char* name) {
  static char bufs[4][4096];
  static int next;
  char* b = bufs[next++ % 4];
  snprintf(b, 4096, "%s/%s", dir, name);
  return b;
}

static void make_file(const char* path, size_t bytes) {
  char buf[4096];
  memset(buf, 'x', sizeof(buf));
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) die("create");
  for (size_t done = 0; done < bytes; done += sizeof(buf))
    if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf)) die("write");
  close(fd);
}

static void preads(int fd, long n) {
  char buf[4096];
  for (long i = 0; i < n; ++i)
    if (pread(fd, buf, sizeof(buf), (i % 16) * 4096) != (ssize_t)sizeof(buf)) die("pread");
}

/* ---- threads ---- */
static int g_fd;
static long g_ops;
static atomic_long g_done;
static void* thread_preads(void* arg) {
  (void)arg;
  char buf[4096];
  for (long i = 0; i < g_ops; ++i) {
    if (pread(g_fd, buf, sizeof(buf), (i % 16) * 4096) != (ssize_t)sizeof(buf)) die("pread");
    atomic_fetch_add(&g_done, 1);
  }
  return NULL;
}

static int run_threads(const char* file, int nthreads, long nops) {
  g_fd = open(file, O_RDONLY);
  if (g_fd < 0) die("open");
  g_ops = nops;
  pthread_t t[64];
  for (int i = 0; i < nthreads; ++i) pthread_create(&t[i], NULL, thread_preads, NULL);
  for (int i = 0; i < nthreads; ++i) pthread_join(t[i], NULL);
  close(g_fd);
  return 0;
}

/* ---- fork from a multi-threaded parent ---- */
static int run_forkmt(const char* dir, long k, long m) {
  make_file(path_in(dir, "a"), 65536);
  make_file(path_in(dir, "b"), 65536);
  g_fd = open(path_in(dir, "a"), O_RDONLY);
  if (g_fd < 0) die("open a");
  g_ops = k;
  pthread_t t[4];
  for (int i = 0; i < 4; ++i) pthread_create(&t[i], NULL, thread_preads, NULL);
  /* Fork while the threads are busy: after a quarter of their work. */
  while (atomic_load(&g_done) < k) sched_yield();
  pid_t child = fork();
  if (child < 0) die("fork");
  if (child == 0) {
    int fb = open(path_in(dir, "b"), O_RDONLY);
    if (fb < 0) die("open b");
    preads(fb, m);
    preads(g_fd, 7);
    close(fb);
    _exit(0);
  }
  long done_at_fork = atomic_load(&g_done);
  for (int i = 0; i < 4; ++i) pthread_join(t[i], NULL);
  int status = 0;
  if (waitpid(child, &status, 0) != child) die("waitpid");
  close(g_fd);
  printf("parent=%d\nchild=%d\nchild_status=%d\nbusy_at_fork=%d\n", getpid(), child, status,
         done_at_fork < 4 * k);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

/* ---- exec chain A -> B -> C ---- */
static int run_chain(const char* step, const char* dir) {
  char buf[4096];
  memset(buf, 'c', sizeof(buf));
  if (strcmp(step, "A") == 0) {
    int fd = open(path_in(dir, "a.txt"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    for (int i = 0; i < 3; ++i)
      if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf)) die("write");
    close(fd);
    execl(self, self, "chain", "B", dir, (char*)NULL);
    die("execl");
  } else if (strcmp(step, "B") == 0) {
    int fd = open(path_in(dir, "a.txt"), O_RDONLY);
    for (int i = 0; i < 5; ++i)
      if (pread(fd, buf, 100, i * 100) != 100) die("pread");
    close(fd);
    fd = open(path_in(dir, "b.txt"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    for (int i = 0; i < 2; ++i)
      if (write(fd, buf, 10) != 10) die("write");
    close(fd);
    char* argv[] = {self, "chain", "C", (char*)dir, NULL};
    execvp(self, argv);
    die("execvp");
  } else {
    struct stat st;
    for (int i = 0; i < 7; ++i)
      if (stat(path_in(dir, "a.txt"), &st) != 0) die("stat");
    printf("pid=%d\n", getpid());
    fflush(stdout);
    exit(0);
  }
  return 1;
}

/* ---- posix_spawn ---- */
static int run_spawn(const char* dir) {
  make_file(path_in(dir, "a"), 65536);
  pid_t pids[3];
  char* argv1[] = {self, "child", (char*)dir, "11", NULL};
  char* argv2[] = {self, "child", (char*)dir, "13", NULL};
  char* argv3[] = {self, "child", (char*)dir, "17", NULL};
  char* empty_env[] = {"STRATA_TEST_EMPTY=1", NULL};
  if (posix_spawn(&pids[0], self, NULL, NULL, argv1, environ) != 0) die("posix_spawn");
  if (posix_spawn(&pids[1], self, NULL, NULL, argv2, empty_env) != 0) die("posix_spawn (empty env)");
  if (posix_spawnp(&pids[2], self, NULL, NULL, argv3, environ) != 0) die("posix_spawnp");
  for (int i = 0; i < 3; ++i) {
    int status = 0;
    if (waitpid(pids[i], &status, 0) != pids[i] || !WIFEXITED(status) || WEXITSTATUS(status) != 0) die("child");
  }
  printf("parent=%d\nchild11=%d\nchild13=%d\nchild17=%d\n", getpid(), pids[0], pids[1], pids[2]);
  return 0;
}

/* vfork + exec of "child" (5, 7 preads), then vfork + _exit(3). The parent's
 * locals must survive the children running on its stack. */
static int run_vfork(const char* dir) {
  make_file(path_in(dir, "a"), 65536);
  const char* counts[2] = {"5", "7"};
  pid_t pids[3];
  volatile int marker = 1234;
  for (int i = 0; i < 2; ++i) {
    pid_t p = vfork();
    if (p == 0) {
      execl(self, self, "child", dir, counts[i], (char*)NULL);
      _exit(127);
    }
    if (p < 0) die("vfork");
    pids[i] = p;
    int status = 0;
    if (waitpid(p, &status, 0) != p || !WIFEXITED(status) || WEXITSTATUS(status) != 0) die("vfork child");
  }
  pid_t p = vfork();
  if (p == 0) _exit(3);
  if (p < 0) die("vfork");
  pids[2] = p;
  int status = 0;
  if (waitpid(p, &status, 0) != p || !WIFEXITED(status) || WEXITSTATUS(status) != 3) die("vfork _exit child");
  printf("parent=%d\nchild5=%d\nchild7=%d\nexiter=%d\nmarker=%d\n", getpid(), pids[0], pids[1], pids[2], marker);
  return 0;
}

static int run_child(const char* dir, long n) {
  int fd = open(path_in(dir, "a"), O_RDONLY);
  if (fd < 0) die("open");
  preads(fd, n);
  close(fd);
  return 0;
}

/* ---- crash safety ---- */
static void write_ready(const char* dir) {
  char tmp[4096], pid[32];
  snprintf(tmp, sizeof(tmp), "%s.tmp", path_in(dir, "ready"));
  int n = snprintf(pid, sizeof(pid), "%d\n", getpid());
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || write(fd, pid, n) != n) die("ready");
  close(fd);
  if (rename(tmp, path_in(dir, "ready")) != 0) die("rename ready");
}

static int run_loop(const char* dir) {
  char buf[4096];
  memset(buf, 'l', sizeof(buf));
  int fd = open(path_in(dir, "data"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) die("open");
  for (long i = 0;; ++i) {
    if (pwrite(fd, buf, sizeof(buf), (i % 256) * 4096) != (ssize_t)sizeof(buf)) die("pwrite");
    if (i == 1000) write_ready(dir);
    if (i % 100 == 0) usleep(1000);
  }
  return 0;
}

static int run_term(const char* dir, long n) {
  char buf[64];
  memset(buf, 't', sizeof(buf));
  int fd = open(path_in(dir, "data"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) die("open");
  for (long i = 0; i < n; ++i)
    if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf)) die("write");
  write_ready(dir);
  for (;;) pause();
  return 0;
}

/* ---- thread cancellation: a thread blocked in read() is cancelled ---- */
static void* blocked_reader(void* arg) {
  char c;
  ssize_t n = read(*(int*)arg, &c, 1); /* a cancellation point; blocks: nothing is written */
  (void)n;
  return NULL;
}

/* Cancels a thread blocked reading an empty pipe (waiting at most 10 s), then
 * preads a file n times. Prints cancelled=1 when the thread ended cancelled. */
static int run_cancel(const char* file, long n) {
  int p[2];
  if (pipe(p)) die("pipe");
  pthread_t th;
  if (pthread_create(&th, NULL, blocked_reader, &p[0])) die("pthread_create");
  usleep(200 * 1000);
  pthread_cancel(th);
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += 10;
  void* ret = NULL;
  int cancelled = 0;
  if (pthread_timedjoin_np(th, &ret, &deadline) == 0) {
    cancelled = ret == PTHREAD_CANCELED;
  } else {
    if (write(p[1], "x", 1) != 1) die("write");
    pthread_join(th, &ret);
  }
  int fd = open(file, O_RDONLY);
  if (fd < 0) die("open");
  char buf[512];
  long bytes = 0;
  for (long i = 0; i < n; ++i) bytes += pread(fd, buf, sizeof(buf), (i % 8) * 512);
  close(fd);
  printf("cancelled=%d\npread_bytes=%ld\n", cancelled, bytes);
  return cancelled ? 0 : 1;
}

/* ---- unchanged behaviour under failure ---- */
static int run_writes(const char* dir, long n) {
  char buf[16];
  memset(buf, 'w', sizeof(buf));
  int fd = open(path_in(dir, "data"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) die("open");
  long total = 0;
  for (long i = 0; i < n; ++i) total += write(fd, buf, sizeof(buf));
  close(fd);
  errno = 0;
  int bad = open(path_in(dir, "missing"), O_RDONLY);
  int saved = errno;
  printf("writes=%ld\nbytes=%ld\nmissing_open=%d errno=%d (%s)\n", n, total, bad, saved, strerror(saved));
  return 3;
}

int main(int argc, char** argv) {
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) die("readlink");
  self[n] = '\0';
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc < 3) return 2;
  const char* mode = argv[1];
  if (!strcmp(mode, "threads") && argc == 5) return run_threads(argv[2], atoi(argv[3]), atol(argv[4]));
  if (!strcmp(mode, "forkmt") && argc == 5) return run_forkmt(argv[2], atol(argv[3]), atol(argv[4]));
  if (!strcmp(mode, "chain") && argc == 4) return run_chain(argv[2], argv[3]);
  if (!strcmp(mode, "spawn")) return run_spawn(argv[2]);
  if (!strcmp(mode, "vfork")) return run_vfork(argv[2]);
  if (!strcmp(mode, "child") && argc == 4) return run_child(argv[2], atol(argv[3]));
  if (!strcmp(mode, "loop")) return run_loop(argv[2]);
  if (!strcmp(mode, "term") && argc == 4) return run_term(argv[2], atol(argv[3]));
  if (!strcmp(mode, "writes") && argc == 4) return run_writes(argv[2], atol(argv[3]));
  if (!strcmp(mode, "cancel") && argc == 4) return run_cancel(argv[2], atol(argv[3]));
  return 2;
}
