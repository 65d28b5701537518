/* libc calls at their edges, each mode printing what the program sees
 * (edges_test.cc runs it plain and under strata and compares, then reads the
 * trace). DIR is a scratch directory.
 *   edges badargs DIR     vectored and kernel-copy calls with bad pointers and
 *                         counts (EFAULT, EINVAL), closedir(NULL); then good
 *                         ones: writev of 3 + 4 bytes, sendfile from offset 2,
 *                         copy_file_range from offset 1 to offset 3
 *   edges badpaths DIR    path functions given a bad path pointer (EFAULT): open,
 *                         openat, creat, stat, access, mkdir, unlink, rename (from
 *                         and to), truncate, fopen, execve, execv, posix_spawn; then
 *                         DIR/ok is opened and closed
 *   edges longpaths DIR   the path functions of badpaths given 4096 bytes without a NUL
 *                         before an unreadable page (ENAMETOOLONG), absolute ("/aaa..")
 *                         and relative ("aaa..": open, stat, fopen, execve); then DIR/ok
 *                         is opened and renamed to the long path
 *   edges siginterrupt    siginterrupt(SIGALRM, 1) then signal(): a read on an
 *                         empty pipe fails with EINTR when the timer fires
 *   edges longjmp DIR     a timer's handler leaves a blocking read with
 *                         siglongjmp; then open, 5 writes, close of DIR/after
 *   edges quickexit DIR   10 writes to DIR/quick, then quick_exit(3)
 *   edges daemon DIR      10 writes to DIR/parent, then daemon(1, 1); the
 *                         daemon writes DIR/child.tmp, renames it DIR/child
 *   edges vforkdup DIR    chdir DIR, opens DIR/a; a vfork child chdirs to / and dup2s it onto 1
 *                         and execs /bin/true; the parent then writes 3 lines
 *                         to its own stdout and opens "relative" (its cwd is DIR)
 *   edges append DIR      a 10-byte file; fopen "a", fwrite 5 bytes, fflush,
 *                         write 3 bytes on fileno(): at 10 and 15; then fdopen "a"
 *                         of a plain O_WRONLY descriptor, fwrite 4 bytes: at 18
 *   edges freopen DIR     freopen(NULL, "r", f) of a 2-line file, then fgets x3
 *   edges mmapanon        an anonymous mapping naming descriptor 0 (stdin,
 *                         redirected from a file by the test)
 *   edges timercancel     a SIGEV_THREAD timer's thread cancels the main
 *                         thread, blocked in read(): its cleanup handler runs
 *   edges jumpstorm DIR   a 30 us timer whose handler siglongjmps back around opens
 *                         of 20,000 missing paths under DIR (some land while strata
 *                         holds a lock); then the timer stops and DIR/after is written
 *   edges altjump DIR     a thread opens missing paths under DIR while the main
 *                         thread sends it SIGUSR1 5,000 times; the handler runs on an
 *                         alternate stack mapped before the thread's, jumps within
 *                         itself (setjmp/longjmp) and opens a missing path too
 *   edges firstcalls DIR  200 fresh processes (exec'd): each makes its first calls
 *                         of 20 path and descriptor functions (none allocates) under DIR while a
 *                         30 us timer's handler siglongjmps out of them; the
 *                         parent says how many exited 0, hung (10 s) or died
 *   edges restartview     siginterrupt() on a handled signal: what sigaction reports
 *   edges handlerchdir DIR  a 30 us timer whose handler chdirs to DIR and opens one of
 *                         64 missing paths under it, while the main thread opens
 *                         20,000 missing paths under DIR and chdirs to DIR after each
 *   edges jumpthreads DIR like jumpstorm on the main thread, while a second thread
 *                         (SIGALRM blocked) opens missing paths under DIR until the
 *                         storm is over; then the thread is joined
 *   edges apijumps DIR    jumpthreads with strata_tag_set_str (dlsym'd: skipped without
 *                         strata) 200,000 times in place of the opens; the other thread
 *                         is waited for 10 s at most; then DIR/after is written 5 times
 *   edges shmfirst DIR    100 fresh processes (exec'd): each makes its first shm_open
 *                         call while a 30 us timer's handler siglongjmps (out of it,
 *                         at times), then a second thread calls dlsym; the parent
 *                         says how many exited 0, hung (3 s) or died
 *   edges exitflush DIR   20 fresh processes (exec'd): each starts a thread and leaves
 *                         main with pthread_exit; the thread makes 30,000 pwrites to
 *                         DIR/cN, sets a one-shot timer of 50-240 us whose handler
 *                         calls _exit(0), and calls exit(0); the parent says how many
 *                         exited 0, hung (3 s) or died
 *   edges errnoflush      a thread lowers RLIMIT_NOFILE to 100 and the main thread leaves
 *                         with pthread_exit; the thread makes 200,000 reads of descriptor
 *                         -1 and counts those whose errno is not EBADF
 *   edges trappedfirst    under an address-space limit 40 MiB above what the process
 *                         maps, 100 threads one after the other: each traps gettid
 *                         with seccomp (SIGSYS; the handler emulates it and, outermost,
 *                         closes descriptor -1), then closes descriptor -1; then a
 *                         24 MiB mapping (x86-64)
 *   edges trappedjump DIR a thread traps gettid with seccomp; the SIGSYS handler
 *                         emulates it and siglongjmps out of the thread's first call
 *                         (close(-1)) once; the thread then writes DIR/j 3 times (x86-64)
 *   edges xfszkill DIR    the main thread leaves with pthread_exit (so a thread of the
 *                         program flushes the trace); one thread reads descriptor -1
 *                         without pause while another sends the process SIGXFSZ 300
 *                         times, each once the handler counted the last (200 ms at
 *                         most); prints how many the handler counted
 *   edges xfszlimit DIR   xfszkill under RLIMIT_FSIZE 64 KiB (the trace's own writes
 *                         fail with EFBIG, the kernel sending SIGXFSZ to the writer)
 *   edges altstack DIR    a SIGUSR1 handler on a 64 KiB alternate stack, painted before,
 *                         makes the first write to its stdout (a descriptor it never
 *                         opened), opens DIR/a by absolute and by relative path (cwd DIR),
 *                         stats it and fopens it; prints how many bytes of the
 *                         alternate stack it used
 *   edges rawexit DIR     writes DIR/raw, then its only thread leaves with the raw exit
 *                         system call (status 3), as a program in seccomp strict mode must
 *   edges strict DIR      writes DIR/strict, enters SECCOMP_MODE_STRICT, writes to it again
 *                         (allowed), then the raw exit (status 0)
 *   edges strictkill DIR  writes DIR/strict, enters SECCOMP_MODE_STRICT, then makes a call
 *                         strict mode forbids (fstat): the kernel kills it (SIGKILL)
 *   edges ringless DIR    an address-space limit 1 MiB above what the process
 *                         maps, then a thread (64 KiB stack) that opens
 *                         DIR/t, writes it 100 times and closes it */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

extern char** environ;
static const char* dir;

static const char* at(const char* name) {
  static char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return path;
}

static void said(const char* what, long r) {
  printf("%s: %ld %s\n", what, r, r < 0 ? strerror(errno) : "");
  fflush(stdout);
}

static void every_50ms(void) {
  struct itimerval it = {{0, 0}, {0, 50000}};
  setitimer(ITIMER_REAL, &it, NULL);
}

static int badargs(void) {
  int fd = open(at("f"), O_CREAT | O_RDWR | O_TRUNC, 0644);
  char b[8];
  struct iovec one = {b, 4};
  errno = 0;
  said("readv(NULL, 5)", readv(fd, NULL, 5));
  said("writev(NULL, 5)", writev(fd, NULL, 5));
  said("readv(iov, INT_MAX)", readv(fd, &one, INT_MAX));
  said("writev(iov, 1e8)", writev(fd, &one, 100000000));
  said("preadv(iov, 2^30)", preadv(fd, &one, 1 << 30, 0));
  said("pwritev(iov, -1)", pwritev(fd, &one, -1, 0));
  int in = open(at("in"), O_CREAT | O_RDWR | O_TRUNC, 0644);
  if (write(in, "0123456789", 10) != 10) return 2;
  int out = open(at("out"), O_CREAT | O_RDWR | O_TRUNC, 0644);
  said("sendfile(off 0x8)", sendfile(out, in, (off_t*)8, 5));
  said("copy_file_range(in_off 0x8)", copy_file_range(in, (loff_t*)8, out, NULL, 5, 0));
  said("copy_file_range(out_off 0x8)", copy_file_range(in, NULL, out, (loff_t*)8, 5, 0));
  said("closedir(NULL)", closedir(NULL));
  struct iovec two[2] = {{"abc", 3}, {"defg", 4}};
  said("writev(3 + 4)", writev(fd, two, 2));
  off_t from = 2;
  said("sendfile(from 2)", sendfile(out, in, &from, 4));
  printf("sendfile moved the offset to %ld\n", (long)from);
  loff_t in_off = 1, out_off = 3;
  said("copy_file_range(1 -> 3)", copy_file_range(in, &in_off, out, &out_off, 2, 0));
  printf("copy_file_range moved the offsets to %ld, %ld\n", (long)in_off, (long)out_off);
  return 0;
}

static void on_alarm(int sig) { (void)sig; }

static int interrupting(void) {
  siginterrupt(SIGALRM, 1);
  signal(SIGALRM, on_alarm);
  int p[2];
  if (pipe(p) != 0) return 2;
  every_50ms();
  char c;
  said("read of an empty pipe", read(p[0], &c, 1));
  return 0;
}

static sigjmp_buf escape;
static void jump_out(int sig) {
  (void)sig;
  siglongjmp(escape, 1);
}

static int leave_by_longjmp(void) {
  signal(SIGALRM, jump_out);
  int p[2];
  if (pipe(p) != 0) return 2;
  if (sigsetjmp(escape, 1) == 0) {
    every_50ms();
    char c;
    said("read", read(p[0], &c, 1));  /* never returns */
  }
  int fd = open(at("after"), O_CREAT | O_WRONLY | O_TRUNC, 0644);
  for (int i = 0; i < 5; ++i)
    if (write(fd, "x", 1) != 1) return 2;
  close(fd);
  printf("left the read\n");
  return 0;
}

static int quick(void) {
  int fd = open(at("quick"), O_CREAT | O_WRONLY | O_TRUNC, 0644);
  for (int i = 0; i < 10; ++i)
    if (write(fd, "line\n", 5) != 5) return 2;
  printf("quick_exit\n");
  fflush(stdout);
  quick_exit(3);
}

static int become_daemon(void) {
  int fd = open(at("parent"), O_CREAT | O_WRONLY | O_TRUNC, 0644);
  for (int i = 0; i < 10; ++i)
    if (write(fd, "line\n", 5) != 5) return 2;
  close(fd);
  printf("daemon\n");
  fflush(stdout);
  if (daemon(1, 1) != 0) return 2;
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s", at("child.tmp"));
  fd = open(tmp, O_CREAT | O_WRONLY | O_TRUNC, 0644);
  for (int i = 0; i < 5; ++i)
    if (write(fd, "line\n", 5) != 5) return 2;
  close(fd);
  rename(tmp, at("child"));
  return 0;
}

static int vfork_dup(void) {
  if (chdir(dir) != 0) return 2;
  int fd = open(at("a"), O_CREAT | O_WRONLY | O_TRUNC, 0644);
  if (fd < 0) return 2;
  pid_t pid = vfork();
  if (pid == 0) {
    if (chdir("/") != 0) _exit(126); /* the child's working directory, not the parent's */
    dup2(fd, 1);
    execl("/bin/true", "true", (char*)NULL);
    _exit(127);
  }
  int status;
  waitpid(pid, &status, 0);
  for (int i = 0; i < 3; ++i)
    if (write(1, "parent line\n", 12) != 12) return 2;
  if (write(fd, "a", 1) != 1) return 2;
  int rel = open("relative", O_CREAT | O_WRONLY | O_TRUNC, 0644);
  if (rel < 0 || write(rel, "r", 1) != 1) return 2;
  return 0;
}

static int append(void) {
  int fd = open(at("log"), O_CREAT | O_WRONLY | O_TRUNC, 0644);
  if (write(fd, "0123456789", 10) != 10) return 2;
  close(fd);
  FILE* f = fopen(at("log"), "a");
  fwrite("abcde", 1, 5, f);
  fflush(f);
  if (write(fileno(f), "xyz", 3) != 3) return 2;
  printf("ftell %ld\n", ftell(f));
  fclose(f);
  /* fdopen "a" of a descriptor opened without O_APPEND: glibc adds it */
  fd = open(at("log"), O_WRONLY);
  f = fdopen(fd, "a");
  fwrite("ABCD", 1, 4, f);
  fclose(f);
  return 0;
}

static int reopen(void) {
  FILE* f = fopen(at("lines"), "w");
  fputs("line1\nline2\n", f);
  fclose(f);
  f = fopen(at("lines"), "r+");
  f = freopen(NULL, "r", f);
  if (!f) return 2;
  char line[64];
  for (int i = 0; i < 3; ++i) printf("fgets %s", fgets(line, sizeof line, f) ? line : "(end)\n");
  fclose(f);
  return 0;
}

static int anonymous(void) {
  void* p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, 0, 0);
  if (p == MAP_FAILED) return 2;
  memset(p, 1, 4096);
  munmap(p, 4096);
  printf("mapped\n");
  return 0;
}

static pthread_t main_thread;
static void cancel_main(union sigval v) {
  (void)v;
  pthread_cancel(main_thread);
}
static void cleanup(void* arg) {
  (void)arg;
  printf("main cancelled\n");
  fflush(stdout);
  _exit(0);  /* glibc's timer thread would keep the process alive */
}

static int timer_cancel(void) {
  main_thread = pthread_self();
  struct sigevent sev;
  memset(&sev, 0, sizeof sev);
  sev.sigev_notify = SIGEV_THREAD;
  sev.sigev_notify_function = cancel_main;
  timer_t timer;
  if (timer_create(CLOCK_MONOTONIC, &sev, &timer) != 0) return 2;
  struct itimerspec its = {{0, 0}, {0, 50000000}};
  timer_settime(timer, 0, &its, NULL);
  int p[2];
  if (pipe(p) != 0) return 2;
  char c;
  pthread_cleanup_push(cleanup, NULL);
  read(p[0], &c, 1);
  pthread_cleanup_pop(0);
  return 1;
}

static sigjmp_buf storm_env;
static void storm_jump(int sig) {
  (void)sig;
  siglongjmp(storm_env, 1);
}

// Opens 20,000 missing paths under DIR while a 30 us timer's handler
// siglongjmps back into the loop (an open it interrupted is made again).
static void open_missing_under_storm(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = storm_jump;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGALRM, &sa, NULL);
  struct itimerval it = {{0, 30}, {0, 30}};
  volatile int i = 0;
  char path[4096];
  // The timer starts once the jump has a target: a tick between the two
  // jumped to a zeroed buffer (SIGSEGV, once in ~150 runs on a loaded machine).
  if (sigsetjmp(storm_env, 1) == 0) setitimer(ITIMER_REAL, &it, NULL);
  for (; i < 20000; i++) {
    snprintf(path, sizeof path, "%s/missing-%d", dir, (int)i);
    int fd = open(path, O_RDONLY);
    if (fd >= 0) close(fd);
  }
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, NULL);
}

static int jump_storm(void) {
  open_missing_under_storm();
  int fd = open(at("after"), O_CREAT | O_WRONLY | O_TRUNC, 0644);
  if (write(fd, "x", 1) != 1) return 2;
  close(fd);
  printf("opened 20000\n");
  return 0;
}

// A handler that calls async-signal-safe functions strata interposes (chdir,
// open) while the thread it interrupted may be inside strata, and the other
// way round: the main thread's chdir, which strata follows, interrupted by a
// handler's open.
static char handler_paths[64][4096];
static volatile sig_atomic_t handler_runs;
static void chdir_and_open(int sig) {
  (void)sig;
  const int saved = errno;
  if (chdir(dir) != 0) _exit(3);
  int fd = open(handler_paths[handler_runs++ % 64], O_RDONLY);
  if (fd >= 0) close(fd);
  errno = saved;
}

static int handler_chdir(void) {
  for (int k = 0; k < 64; ++k) snprintf(handler_paths[k], sizeof handler_paths[k], "%s/h%d", dir, k);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = chdir_and_open;
  sa.sa_flags = SA_RESTART;
  sigaction(SIGALRM, &sa, NULL);
  struct itimerval it = {{0, 30}, {0, 30}};
  setitimer(ITIMER_REAL, &it, NULL);
  char path[4096];
  int failed = 0;
  for (int i = 0; i < 20000; i++) {
    snprintf(path, sizeof path, "%s/missing-%d", dir, i);
    int fd = open(path, O_RDONLY);
    if (fd >= 0) close(fd);
    if (chdir(dir) != 0) failed++;
  }
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, NULL);
  printf("opened 20000, chdir failed %d, handler ran: %s\n", failed, handler_runs > 0 ? "yes" : "no");
  return 0;
}

// The jumps of jumpstorm, while another thread opens files too: a jump that
// left strata holding its string table's lock made the other thread wait
// for it for ever.
static volatile int other_stop;
static void* open_until_stopped(void* arg) {
  sigset_t alrm;
  sigemptyset(&alrm);
  sigaddset(&alrm, SIGALRM);
  pthread_sigmask(SIG_BLOCK, &alrm, NULL);  /* the timer's jumps are the main thread's */
  char path[4096];
  for (long i = 0; !other_stop; i++) {
    snprintf(path, sizeof path, "%s/u%ld", dir, i);
    int fd = open(path, O_RDONLY);
    if (fd >= 0) close(fd);
  }
  return arg;
}

// Starts open_until_stopped on a thread that never takes SIGALRM.
static int start_opener(pthread_t* t) {
  sigset_t alrm, saved;
  sigemptyset(&alrm);
  sigaddset(&alrm, SIGALRM);
  pthread_sigmask(SIG_BLOCK, &alrm, &saved); /* inherited by the thread */
  const int started = pthread_create(t, NULL, open_until_stopped, NULL) == 0;
  pthread_sigmask(SIG_SETMASK, &saved, NULL);
  return started;
}

static int jump_threads(void) {
  pthread_t t;
  if (!start_opener(&t)) return 2;
  open_missing_under_storm();
  other_stop = 1;
  pthread_join(t, NULL);
  printf("opened 20000, the other thread stopped\n");
  return 0;
}

// jumpthreads with strata's own API: the main thread sets a string tag
// (strata_tag_set_str, looked up with dlsym: absent without strata) 200,000
// times under the timer's jumps; then it writes DIR/after 5 times.
static int api_jumps(void) {
  void (*tag_set_str)(const char*, const char*) =
      (void (*)(const char*, const char*))dlsym(RTLD_DEFAULT, "strata_tag_set_str");
  pthread_t t;
  if (!start_opener(&t)) return 2;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = storm_jump;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGALRM, &sa, NULL);
  static const char* const stages[] = {"load", "train", "eval", "save"};
  struct itimerval it = {{0, 30}, {0, 30}};
  volatile int i = 0;
  if (sigsetjmp(storm_env, 1) == 0) setitimer(ITIMER_REAL, &it, NULL);
  for (; i < 200000; i++)
    if (tag_set_str) tag_set_str("stage", stages[i & 3]);
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, NULL);
  other_stop = 1;
  struct timespec limit;
  clock_gettime(CLOCK_REALTIME, &limit);
  limit.tv_sec += 10;
  if (pthread_timedjoin_np(t, NULL, &limit) != 0) {
    printf("tagged 200000, the other thread is stuck\n");
    _exit(1);
  }
  int fd = open(at("after"), O_CREAT | O_WRONLY | O_TRUNC, 0644);
  for (int k = 0; k < 5; ++k)
    if (write(fd, "a", 1) != 1) return 2;
  close(fd);
  printf("tagged 200000, the other thread stopped\n");
  return 0;
}

// The calls that take a path, each on `p`, printed as call(name).
static void calls_on_path(const char* name, const char* p) {
  char what[64];
#define SAID(call, r) (snprintf(what, sizeof what, "%s(%s)", call, name), said(what, r))
  struct stat st;
  SAID("open", open(p, O_RDONLY));
  SAID("openat", openat(AT_FDCWD, p, O_RDONLY));
  SAID("creat", creat(p, 0644));
  SAID("stat", stat(p, &st));
  SAID("access", access(p, F_OK));
  SAID("mkdir", mkdir(p, 0755));
  SAID("unlink", unlink(p));
  snprintf(what, sizeof what, "rename(%s, ok)", name);
  said(what, rename(p, at("ok")));
  SAID("truncate", truncate(p, 0));
  errno = 0;
  FILE* f = fopen(p, "r");
  SAID("fopen", f ? 0 : -1);
  char* argv[] = {"edges", NULL};
  SAID("execve", execve(p, argv, environ));
  SAID("execv", execv(p, argv));
  pid_t pid;
  errno = posix_spawn(&pid, p, NULL, NULL, argv, environ);
  SAID("posix_spawn", errno ? -1 : 0);
#undef SAID
}

static int bad_paths(void) {
  const char* bad = (const char*)8;
  calls_on_path("bad", bad);
  int fd = open(at("ok"), O_CREAT | O_WRONLY, 0644);
  said("open(ok)", fd >= 0 ? 0 : -1);
  said("rename(ok, bad)", rename(at("ok"), bad));
  close(fd);
  return 0;
}

// A path of 4096 bytes without a NUL, followed by a page that cannot be read:
// the kernel reads PATH_MAX bytes and answers ENAMETOOLONG.
static char* unterminated(char first) {
  char* p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED || mprotect(p + 4096, 4096, PROT_NONE) != 0) exit(2);
  memset(p, 'a', 4096);
  p[0] = first;
  return p;
}

static int long_paths(void) {
  const char* abs = unterminated('/');
  const char* rel = unterminated('a');
  struct stat st;
  calls_on_path("abs", abs);
  said("open(rel)", open(rel, O_RDONLY));
  said("stat(rel)", stat(rel, &st));
  errno = 0;
  FILE* f = fopen(rel, "r");
  said("fopen(rel)", f ? 0 : -1);
  char* argv[] = {"edges", NULL};
  said("execve(rel)", execve(rel, argv, environ));
  int fd = open(at("ok"), O_CREAT | O_WRONLY, 0644);
  said("open(ok)", fd >= 0 ? 0 : -1);
  said("rename(ok, abs)", rename(at("ok"), abs));
  close(fd);
  return 0;
}

static void* alt_stack;
static volatile int alt_stop;
static volatile sig_atomic_t alt_hits;

static void on_alt_stack(int sig) {
  (void)sig;
  jmp_buf local;
  if (!setjmp(local)) longjmp(local, 1);  /* a library's error recovery, say */
  char path[4096];
  snprintf(path, sizeof path, "%s/h%d", dir, (int)alt_hits++);
  int fd = open(path, O_RDONLY);
  if (fd >= 0) close(fd);
}

static void* open_missing(void* arg) {
  stack_t ss = {.ss_sp = alt_stack, .ss_size = 65536, .ss_flags = 0};
  sigaltstack(&ss, NULL);
  char path[4096];
  for (long i = 0; !alt_stop; i++) {
    snprintf(path, sizeof path, "%s/t%ld", dir, i % 1000);
    int fd = open(path, O_RDONLY);
    if (fd >= 0) close(fd);
  }
  return arg;
}

static int alt_jump(void) {
  alt_stack = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alt_stack;
  sa.sa_flags = SA_ONSTACK | SA_RESTART;
  sigaction(SIGUSR1, &sa, NULL);
  pthread_t t;
  if (pthread_create(&t, NULL, open_missing, NULL) != 0) return 2;
  for (int k = 0; k < 5000; k++) {
    pthread_kill(t, SIGUSR1);
    usleep(50);
  }
  alt_stop = 1;
  pthread_join(t, NULL);
  printf("handled: %s\n", alt_hits > 0 ? "yes" : "no");
  return 0;
}

static void nothing(int sig) { (void)sig; }

static int restart_view(void) {
  struct sigaction sa, seen;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = nothing;
  sa.sa_flags = SA_RESTART;
  sigaction(SIGUSR1, &sa, NULL);
  siginterrupt(SIGUSR1, 1);
  sigaction(SIGUSR1, NULL, &seen);
  printf("after siginterrupt(1): SA_RESTART %d\n", !!(seen.sa_flags & SA_RESTART));
  siginterrupt(SIGUSR1, 0);
  sigaction(SIGUSR1, NULL, &seen);
  printf("after siginterrupt(0): SA_RESTART %d\n", !!(seen.sa_flags & SA_RESTART));
  return 0;
}

static long vm_size_kb(void) {
  FILE* f = fopen("/proc/self/status", "r");
  char line[256];
  long kb = 0;
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "VmSize:", 7)) kb = atol(line + 7);
  if (f) fclose(f);
  return kb;
}

static void* write_100(void* arg) {
  (void)arg;
  int fd = open(at("t"), O_CREAT | O_WRONLY | O_TRUNC, 0644);
  for (int i = 0; i < 100; ++i)
    if (write(fd, "t", 1) != 1) return (void*)1;
  close(fd);
  return NULL;
}

static int ringless(void) {
  const rlim_t limit = (rlim_t)(vm_size_kb() + 1024) * 1024;
  struct rlimit rl = {limit, limit};
  if (setrlimit(RLIMIT_AS, &rl) != 0) return 2;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 64 * 1024);
  pthread_t t;
  if (pthread_create(&t, &attr, write_100, NULL) != 0) return 2;
  void* r;
  pthread_join(t, &r);
  printf("thread wrote: %s\n", r ? "no" : "yes");
  return 0;
}

// A thread's first call into strata interrupted by a handler that makes a
// call of its own: the thread traps gettid with seccomp (as a sandbox that
// emulates a system call does), and strata's setup of the thread's state
// asks for its tid. The handler emulates gettid and, outermost, closes
// descriptor -1. Threads one after the other under an address-space limit
// that leaves the final 24 MiB mapping 16 MiB to spare.
#if defined(__x86_64__)
static __thread long trapped_tid;
static __thread int trap_depth;
static void emulate_gettid(int sig, siginfo_t* info, void* context) {
  (void)sig;
  (void)info;
  ((ucontext_t*)context)->uc_mcontext.gregs[REG_RAX] = trapped_tid;
  if (++trap_depth == 1) {
    const int e = errno;
    close(-1);
    errno = e;
  }
  --trap_depth;
}

static sigjmp_buf trap_env;
static __thread int trap_jumps;  // the handler's jumps left
static void jump_from_gettid(int sig, siginfo_t* info, void* context) {
  (void)sig;
  (void)info;
  ((ucontext_t*)context)->uc_mcontext.gregs[REG_RAX] = trapped_tid;
  if (trap_jumps > 0) {
    --trap_jumps;
    siglongjmp(trap_env, 1);
  }
}

static int trap_gettid(void) {
  trapped_tid = syscall(SYS_gettid);
  struct sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_gettid, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {sizeof filter / sizeof filter[0], filter};
  return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}

static void* trap_gettid_then_close(void* arg) {
  if (!trap_gettid()) return arg;
  close(-1);
  return NULL;
}

// The handler leaves the thread's first call with siglongjmp; the thread
// then writes DIR/j three times.
static void* jump_out_of_first_call(void* arg) {
  if (!trap_gettid()) return arg;
  trap_jumps = 1;
  if (sigsetjmp(trap_env, 1) == 0) close(-1);
  int fd = open(at("j"), O_CREAT | O_WRONLY | O_TRUNC, 0644);
  for (int i = 0; i < 3; ++i)
    if (write(fd, "j", 1) != 1) return arg;
  close(fd);
  return NULL;
}
#endif

static int trapped_jump(void) {
#if defined(__x86_64__)
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = jump_from_gettid;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigaction(SIGSYS, &sa, NULL);
  pthread_t t;
  void* r = &t;
  if (pthread_create(&t, NULL, jump_out_of_first_call, NULL) != 0) return 2;
  pthread_join(t, &r);
  printf("thread wrote: %s\n", r ? "no" : "yes");
#else
  printf("thread wrote: yes\n");
#endif
  return 0;
}

static int trapped_first(void) {
#if defined(__x86_64__)
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = emulate_gettid;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;  // strata's setup inside the handler traps again
  sigaction(SIGSYS, &sa, NULL);
  const long before = vm_size_kb();
  const rlim_t limit = (rlim_t)(before + 40 * 1024) * 1024;
  struct rlimit rl = {limit, limit};
  if (setrlimit(RLIMIT_AS, &rl) != 0) return 2;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 64 * 1024);
  int ran = 0;
  for (int i = 0; i < 100; ++i) {
    pthread_t t;
    void* r = &ran;
    if (pthread_create(&t, &attr, trap_gettid_then_close, &ran) != 0) break;
    pthread_join(t, &r);
    if (r == NULL) ++ran;
  }
  fprintf(stderr, "address space grew by %ld KiB\n", vm_size_kb() - before);
  void* p = mmap(NULL, 24 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  printf("threads: %d, 24 MiB mapping: %s\n", ran, p == MAP_FAILED ? "refused" : "made");
#else
  printf("threads: 100, 24 MiB mapping: made\n");
#endif
  return 0;
}

// One first call each, in order; a jump out of one goes on with the next.
// None allocates: a jump out of malloc would hang the program without strata.
static int first_fd = -1;
static void call_open(void) { first_fd = open(at("f"), O_CREAT | O_RDWR, 0644); }
static void call_openat(void) { close(openat(AT_FDCWD, at("f"), O_RDONLY)); }
static void call_pwrite(void) { (void)!pwrite(first_fd, "ab", 2, 0); }
static void call_pread(void) {
  char b[2];
  (void)!pread(first_fd, b, 2, 0);
}
static void call_lseek(void) { lseek(first_fd, 0, SEEK_SET); }
static void call_fsync(void) { fsync(first_fd); }
static void call_fstat(void) {
  struct stat st;
  fstat(first_fd, &st);
}
static void call_stat(void) {
  struct stat st;
  stat(at("f"), &st);
}
static void call_lstat(void) {
  struct stat st;
  lstat(at("f"), &st);
}
static void call_access(void) { access(at("f"), R_OK); }
static void call_mkdir(void) { mkdir(at("d"), 0755); }
static void call_rmdir(void) { rmdir(at("d")); }
static void call_rename(void) { rename(at("f"), at("g")); }
static void call_unlink(void) { unlink(at("g")); }
static void call_creat(void) { close(creat(at("h"), 0644)); }
static void call_ftruncate(void) { (void)!ftruncate(first_fd, 1); }
static void call_truncate(void) { truncate(at("h"), 0); }
static void call_dup(void) { close(dup(first_fd)); }
static void call_fcntl(void) { fcntl(first_fd, F_GETFL); }
static void call_close(void) { close(first_fd); }
static void (*const first_calls[])(void) = {
    call_open,  call_openat, call_pwrite, call_pread,  call_lseek, call_fsync,    call_fstat,
    call_stat,  call_lstat,  call_access, call_mkdir,  call_rmdir, call_rename,   call_unlink,
    call_creat, call_ftruncate, call_truncate, call_dup, call_fcntl, call_close};

static int first_calls_child(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = storm_jump;
  sigaction(SIGALRM, &sa, NULL);
  struct itimerval it = {{0, 30}, {0, 30}};
  volatile unsigned next = 0;
  if (sigsetjmp(storm_env, 1) == 0) setitimer(ITIMER_REAL, &it, NULL);
  while (next < sizeof first_calls / sizeof first_calls[0]) first_calls[next++]();
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, NULL);
  return 0;
}

// Waits for `pid` at most 10 s (outcome_within: `ms`): 0 exited 0, 1 hung
// (killed), 2 anything else.
static int outcome_within(pid_t pid, int ms);
static int outcome(pid_t pid) { return outcome_within(pid, 10000); }
static int outcome_within(pid_t pid, int ms) {
  int status = 0;
  for (int i = 0; i < ms; ++i) {
    if (waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 2;
    struct timespec ms1 = {0, 1000000};
    nanosleep(&ms1, NULL);
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return 1;
}

static int first_calls_under_jumps(void) {
  int counts[3] = {0, 0, 0};
  for (int i = 0; i < 200; ++i) {
    char sub[64];
    snprintf(sub, sizeof sub, "c%d", i);
    mkdir(at(sub), 0755);
    char path[4096];
    snprintf(path, sizeof path, "%s", at(sub));
    pid_t pid = fork();
    if (pid == 0) {
      execl("/proc/self/exe", "edges", "firstcalls-child", path, (char*)NULL);
      _exit(127);
    }
    counts[outcome(pid)]++;
  }
  printf("exited 0: %d, hung: %d, died: %d\n", counts[0], counts[1], counts[2]);
  return 0;
}

// shm_open's first call, which a handler may leave with siglongjmp; then a
// second thread asks the dynamic linker for a symbol, as a thread that loads
// a library does.
static int looked_up;
static void* look_up(void* arg) {
  (void)arg;
  return dlsym(RTLD_DEFAULT, "strlen") ? &looked_up : NULL;
}

static int shm_first_child(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = storm_jump;
  sigaction(SIGALRM, &sa, NULL);
  char name[64];
  snprintf(name, sizeof name, "/strata-edges-%d", (int)getpid());
  struct itimerval it = {{0, 30}, {0, 30}};
  volatile int called = 0;
  if (sigsetjmp(storm_env, 1) == 0) setitimer(ITIMER_REAL, &it, NULL);
  if (!called) {
    called = 1;
    /* A different moment of the timer's period in each process. */
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    const long spin_ns = (getpid() * 7919L) % 30000;
    do clock_gettime(CLOCK_MONOTONIC, &now);
    while ((now.tv_sec - t0.tv_sec) * 1000000000L + now.tv_nsec - t0.tv_nsec < spin_ns);
    int fd = shm_open(name, O_CREAT | O_RDWR, 0600);
    if (fd >= 0) close(fd);
  }
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, NULL);
  shm_unlink(name);
  pthread_t t;
  void* found = NULL;
  if (pthread_create(&t, NULL, look_up, NULL) != 0) return 2;
  pthread_join(t, &found);
  return found ? 0 : 3;
}

static int shm_first(void) {
  int counts[3] = {0, 0, 0};
  for (int i = 0; i < 100; ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      execl("/proc/self/exe", "edges", "shmfirst-child", dir, (char*)NULL);
      _exit(127);
    }
    counts[outcome_within(pid, 3000)]++;
  }
  printf("exited 0: %d, hung: %d, died: %d\n", counts[0], counts[1], counts[2]);
  return 0;
}

// _exit (async-signal-safe) from a handler that interrupts exit: with the
// main thread gone through pthread_exit the writer thread has stopped, and
// exit's final flush of the trace runs on the exiting thread itself.
static void exit_now(int sig) {
  (void)sig;
  _exit(0);
}

static long exit_timer_us;
static void* pwrite_then_exit(void* arg) {
  int fd = open(at("c"), O_CREAT | O_WRONLY | O_TRUNC, 0644);
  for (int i = 0; i < 30000; i++) (void)!pwrite(fd, "x", 1, 0);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = exit_now;
  sigaction(SIGALRM, &sa, NULL);
  struct itimerval it = {{0, 0}, {0, exit_timer_us}};
  setitimer(ITIMER_REAL, &it, NULL);
  exit(0);
  return arg;
}

static int exit_flush_child(const char* us) {
  exit_timer_us = atol(us);
  pthread_t t;
  if (pthread_create(&t, NULL, pwrite_then_exit, NULL) != 0) return 2;
  pthread_exit(NULL);
}

static int exit_flush(void) {
  int counts[3] = {0, 0, 0};
  for (int i = 0; i < 20; ++i) {
    char sub[64], us[32];
    snprintf(sub, sizeof sub, "c%d", i);
    mkdir(at(sub), 0755);
    char path[4096];
    snprintf(path, sizeof path, "%s", at(sub));
    snprintf(us, sizeof us, "%d", 50 + i * 10);
    pid_t pid = fork();
    if (pid == 0) {
      execl("/proc/self/exe", "edges", "exitflush-child", path, us, (char*)NULL);
      _exit(127);
    }
    counts[outcome_within(pid, 3000)]++;
  }
  printf("exited 0: %d, hung: %d, died: %d\n", counts[0], counts[1], counts[2]);
  return 0;
}

// The errno of failed calls on a thread that flushes the trace itself (the
// main thread left through pthread_exit, so the writer thread stopped),
// with too few descriptors for the flush's own (it asks for one above 511).
static void* read_bad_descriptor(void* arg) {
  struct rlimit rl = {100, 100};
  if (setrlimit(RLIMIT_NOFILE, &rl) != 0) exit(2);
  int wrong = 0;
  char c;
  for (int i = 0; i < 200000; i++) {
    errno = 0;
    if (read(-1, &c, 1) < 0 && errno != EBADF) wrong++;
  }
  printf("wrong errno: %d\n", wrong);
  exit(0);
  return arg;
}

static int errno_flush(void) {
  pthread_t t;
  if (pthread_create(&t, NULL, read_bad_descriptor, NULL) != 0) return 2;
  pthread_exit(NULL);
}

// SIGXFSZ sent to the process while the thread that flushes the trace has
// it blocked for a write (no writer thread: main left through pthread_exit).
static int xfsz_handled;
static int xfsz_sending = 1;
static void count_xfsz(int sig) {
  (void)sig;
  __atomic_add_fetch(&xfsz_handled, 1, __ATOMIC_SEQ_CST);
}

static void* read_until_sent(void* arg) {
  char c;
  while (__atomic_load_n(&xfsz_sending, __ATOMIC_SEQ_CST)) (void)!read(-1, &c, 1);
  return arg;
}

static void* send_xfsz(void* arg) {
  sigset_t xfsz;
  sigemptyset(&xfsz);
  sigaddset(&xfsz, SIGXFSZ);
  pthread_sigmask(SIG_BLOCK, &xfsz, NULL);  // so the reading thread takes each one
  enum { kSends = 300 };
  for (int i = 0; i < kSends; ++i) {
    int before = __atomic_load_n(&xfsz_handled, __ATOMIC_SEQ_CST);
    kill(getpid(), SIGXFSZ);
    for (int ms = 0; ms < 200 && __atomic_load_n(&xfsz_handled, __ATOMIC_SEQ_CST) == before; ++ms) {
      struct timespec ms1 = {0, 1000000};
      nanosleep(&ms1, NULL);
    }
  }
  __atomic_store_n(&xfsz_sending, 0, __ATOMIC_SEQ_CST);
  pthread_join(*(pthread_t*)arg, NULL);
  printf("sent %d, handled %d\n", kSends, __atomic_load_n(&xfsz_handled, __ATOMIC_SEQ_CST));
  exit(0);
  return arg;
}

static int xfsz_kill(int limit) {
  if (limit) {
    struct rlimit rl = {64 << 10, 64 << 10};
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0) return 2;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = count_xfsz;
  sigaction(SIGXFSZ, &sa, NULL);
  static pthread_t reader, sender;
  if (pthread_create(&reader, NULL, read_until_sent, NULL) != 0) return 2;
  if (pthread_create(&sender, NULL, send_xfsz, &reader) != 0) return 2;
  pthread_exit(NULL);
}

// How much of an alternate signal stack a handler's calls use: crash handlers
// run on small ones (8 KiB), which strata's 4 KiB path buffers overflowed.
static void calls_on_the_alternate_stack(int sig) {
  (void)sig;
  (void)!write(1, "", 0);
  int fd = open(at("a"), O_CREAT | O_WRONLY, 0644);
  close(fd);
  fd = open("a", O_RDONLY);
  close(fd);
  struct stat st;
  stat(at("a"), &st);
  FILE* f = fopen(at("a"), "r");
  if (f) fclose(f);
}

static int stack_of_handler(void) {
  enum { kSize = 64 << 10 };
  static unsigned char stack[kSize];
  memset(stack, 0xAA, sizeof stack);
  stack_t ss = {.ss_sp = stack, .ss_size = kSize, .ss_flags = 0};
  if (sigaltstack(&ss, NULL) != 0 || chdir(dir) != 0) return 2;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = calls_on_the_alternate_stack;
  sa.sa_flags = SA_ONSTACK;
  sigaction(SIGUSR1, &sa, NULL);
  raise(SIGUSR1);
  size_t untouched = 0;
  while (untouched < sizeof stack && stack[untouched] == 0xAA) ++untouched;
  printf("alternate stack used: %zu bytes\n", sizeof stack - untouched);
  return 0;
}

// A process whose only thread leaves without exit_group: the raw exit system
// call, the one way out under seccomp strict mode (which allows read, write,
// exit and sigreturn only, and kills the thread on any other call).
static int leave_raw(const char* how) {
  const int strict = strcmp(how, "rawexit") != 0;
  int fd = open(at(strict ? "strict" : "raw"), O_CREAT | O_WRONLY | O_TRUNC, 0644);
  if (fd < 0 || write(fd, "before\n", 7) != 7) return 2;
  if (strict) {
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT) != 0) return 2;
    if (write(fd, "in strict mode\n", 15) != 15) syscall(SYS_exit, 4);
    if (!strcmp(how, "strictkill")) {
      struct stat st;
      fstat(fd, &st);
    }
  }
  syscall(SYS_exit, strict ? 0 : 3);
  return 5;
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc < 2) return 2;
  const char* mode = argv[1];
  dir = argc > 2 ? argv[2] : ".";
  if (!strcmp(mode, "badargs")) return badargs();
  if (!strcmp(mode, "badpaths")) return bad_paths();
  if (!strcmp(mode, "longpaths")) return long_paths();
  if (!strcmp(mode, "siginterrupt")) return interrupting();
  if (!strcmp(mode, "longjmp")) return leave_by_longjmp();
  if (!strcmp(mode, "quickexit")) return quick();
  if (!strcmp(mode, "daemon")) return become_daemon();
  if (!strcmp(mode, "vforkdup")) return vfork_dup();
  if (!strcmp(mode, "append")) return append();
  if (!strcmp(mode, "freopen")) return reopen();
  if (!strcmp(mode, "mmapanon")) return anonymous();
  if (!strcmp(mode, "ringless")) return ringless();
  if (!strcmp(mode, "trappedfirst")) return trapped_first();
  if (!strcmp(mode, "trappedjump")) return trapped_jump();
  if (!strcmp(mode, "jumpstorm")) return jump_storm();
  if (!strcmp(mode, "altjump")) return alt_jump();
  if (!strcmp(mode, "firstcalls")) return first_calls_under_jumps();
  if (!strcmp(mode, "firstcalls-child")) return first_calls_child();
  if (!strcmp(mode, "restartview")) return restart_view();
  if (!strcmp(mode, "handlerchdir")) return handler_chdir();
  if (!strcmp(mode, "jumpthreads")) return jump_threads();
  if (!strcmp(mode, "apijumps")) return api_jumps();
  if (!strcmp(mode, "shmfirst")) return shm_first();
  if (!strcmp(mode, "exitflush")) return exit_flush();
  if (!strcmp(mode, "errnoflush")) return errno_flush();
  if (!strcmp(mode, "xfszkill")) return xfsz_kill(0);
  if (!strcmp(mode, "altstack")) return stack_of_handler();
  if (!strcmp(mode, "rawexit") || !strcmp(mode, "strict") || !strcmp(mode, "strictkill")) return leave_raw(mode);
  if (!strcmp(mode, "xfszlimit")) return xfsz_kill(1);
  if (!strcmp(mode, "exitflush-child")) return exit_flush_child(argc > 3 ? argv[3] : "100");
  if (!strcmp(mode, "shmfirst-child")) return shm_first_child();
  if (!strcmp(mode, "timercancel")) {
    timer_cancel();
    return 1;
  }
  return 2;
}
