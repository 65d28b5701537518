// Programs that do what daemons, launchers and careful tools do to their
// descriptors, signals and limits. Each mode prints what the program saw;
// tests run it with and without strata and require the same output, output
// files and exit status.
//   hostile closeall OUT   close every descriptor (loop, close_range, closefrom), then write OUT
//   hostile rawclose OUT   the same with raw close system calls
//   hostile dup2onto OUT   dup2/dup3/F_DUPFD onto every low descriptor number, then write OUT
//   hostile fdlimit        RLIMIT_NOFILE 64: how many files can be opened
//   hostile eintr          SIGINT handler without SA_RESTART interrupts a blocking read
//   hostile resethand      SA_RESETHAND: the handler runs once, the second SIGTERM kills
//   hostile oldaction      sigaction reports back what the program installed
//   hostile ignored-HOW    SIGINT ignored by HOW (sigset, sysv, bsd, sigignore: glibc calls
//                          its internal __sigaction), then saved, replaced and restored
//                          with sigaction and raised: still ignored
//   hostile vforksig       vfork children change SIGINT: the parent's stays its own
//   hostile fsize OUT      RLIMIT_FSIZE 4096: writes 1000 bytes to OUT, exits 7
//   hostile offsets OUT    O_APPEND writes, dup'ed and fork-shared descriptors
//   hostile vforkcaps      a vfork child drops its capabilities; the parent then setuid()s
//   hostile clonekeep      a clone() child (no CLONE_VM) calls prctl: how long it takes
//   hostile longpath DIR   20 opens of a file whose absolute path exceeds 4096 bytes
//   hostile inherited OUT  an exec'ed child writes to a file and a socket it inherited
//                          (descriptors its process never saw opened)
//   hostile shm OUT        a shared memory object made as PyTorch's DataLoader makes
//                          one per batch: created, unlinked, sized, written, mapped
//   hostile crash-HOW OUT  200 writes to OUT, then dies of HOW: abort (SIGABRT), segv
//                          (a null store), pipe (a write to a pipe without reader),
//                          kill-segv (SIGSEGV sent with kill), queued-segv (SIGSEGV
//                          with a fault's si_code, queued to itself), usr1 (SIGUSR1,
//                          as `strata run` forwards it), alarm (SIGALRM of alarm(1));
//                          no core file
//   hostile rawcap         drops every capability with the raw capset system call (Rust's
//                          caps crate), then setgroups() and setuid(): both fail with EPERM
//   hostile sigcount DIR   SIGUSR1 handled (SA_SIGINFO, and SA_RESETHAND with "oneshot" as a
//                          third argument): writes its pid to DIR/ready, waits for DIR/stop
//                          (10 s at most), prints how many USR1 came, the last one's si_code
//                          and sender pid
//   hostile flipsig        SIGUSR1 flipped 100,000 times between a one-argument handler and an
//                          SA_SIGINFO one that checks its siginfo, while a thread sends SIGUSR1
//                          without pause: prints whether a handler saw a wrong argument
//   hostile sigfork DIR    a 1 ms timer whose handler forks (a child that _exits) while
//                          the program opens distinct missing paths under DIR
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

// Opens, reads and closes a file many times so the runtime has events to
// write, and waits past its flush interval (the tests set 20 ms).
static void busy_io(void) {
  for (int i = 0; i < 200; ++i) {
    char b[16];
    int fd = open("/etc/hostname", O_RDONLY);
    if (fd >= 0) {
      if (read(fd, b, sizeof b) < 0) perror("read");
      close(fd);
    }
  }
  sleep_ms(150);
}

static int write_out(const char* path, const char* text) {
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
  printf("out fd %d\n", fd);
  if (fd < 0) return 1;
  busy_io();
  if (write(fd, text, strlen(text)) != (ssize_t)strlen(text)) return 1;
  busy_io();
  char back[64] = {0};
  ssize_t n = pread(fd, back, sizeof back - 1, 0);
  printf("read back %zd: %s", n, back);
  close(fd);
  return 0;
}

static int closeall(const char* out, int raw) {
  int first = open("/etc/hostname", O_RDONLY);
  printf("first open fd %d\n", first);
  close(first);
  busy_io();
  for (int fd = 3; fd < 1024; ++fd) raw ? syscall(SYS_close, fd) : close(fd);
  if (!raw) {
    printf("close_range %d\n", close_range(3, ~0u, 0));
    closefrom(3);
  }
  return write_out(out, "hello\n");
}

static int dup2onto(const char* out) {
  int src = open("/etc/hostname", O_RDONLY);
  busy_io();
  for (int fd = 3; fd < 64; ++fd) {
    if (fd == src) continue;
    if (dup2(src, fd) != fd) printf("dup2 %d failed\n", fd);
    if (dup3(src, fd, O_CLOEXEC) != fd) printf("dup3 %d failed\n", fd);
  }
  for (int fd = 3; fd < 64; ++fd)
    if (fd != src) close(fd);
  int d = fcntl(src, F_DUPFD, 3);
  printf("F_DUPFD gave %d\n", d);
  close(d);
  close(src);
  return write_out(out, "dup2\n");
}

static int fdlimit(void) {
  struct rlimit rl = {64, 64};
  if (setrlimit(RLIMIT_NOFILE, &rl) != 0) return 2;
  int n = 0;
  while (open("/etc/hostname", O_RDONLY) >= 0) ++n;
  printf("opened %d, then errno %d\n", n, errno);
  return 0;
}

static volatile sig_atomic_t handled;
static void on_signal(int sig) {
  (void)sig;
  ++handled;
}

static int eintr(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;  // no SA_RESTART: the read must fail with EINTR
  sigaction(SIGINT, &sa, NULL);
  int p[2];
  if (pipe(p) != 0) return 2;
  pid_t parent = getpid();
  pid_t child = fork();
  if (child == 0) {
    sleep_ms(200);
    kill(parent, SIGINT);
    sleep_ms(2000);  // keeps the write end open: only the signal can end the read
    _exit(0);
  }
  char b;
  ssize_t r = read(p[0], &b, 1);
  printf("read returned %zd errno %s handled %d\n", r, r < 0 ? strerror(errno) : "-", (int)handled);
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
  return 0;
}

static int resethand(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESETHAND;
  sigaction(SIGTERM, &sa, NULL);
  raise(SIGTERM);
  printf("handled %d\n", (int)handled);
  fflush(stdout);
  raise(SIGTERM);  // the disposition is back to default: this kills
  printf("still alive\n");
  return 0;
}

static int oldaction(void) {
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  sigaddset(&sa.sa_mask, SIGUSR2);
  sigaction(SIGINT, NULL, &old);
  printf("initial: %s flags %#x\n", old.sa_handler == SIG_DFL ? "default" : "other", old.sa_flags);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGINT, NULL, &old);
  printf("installed: %s flags %#x usr2-masked %d\n", old.sa_handler == on_signal ? "ours" : "other", old.sa_flags,
         sigismember(&old.sa_mask, SIGUSR2));
  signal(SIGINT, SIG_IGN);
  sigaction(SIGINT, NULL, &old);
  printf("ignored: %d\n", old.sa_handler == SIG_IGN);
  raise(SIGINT);
  printf("survived an ignored SIGINT\n");
  sighandler_t prev = signal(SIGINT, SIG_DFL);
  printf("signal() returned SIG_IGN: %d\n", prev == SIG_IGN);
  return 0;
}

static const char* disposition(void (*f)(int)) {
  return f == SIG_IGN ? "ignored" : f == SIG_DFL ? "default" : "a handler";
}

// What a program does around a section: saves SIGINT's disposition as it
// installs a handler, restores it, then raises SIGINT.
static void save_replace_restore_raise(const char* who) {
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGINT, NULL, &old);
  printf("%s: sigaction reports %s\n", who, disposition(old.sa_handler));
  sigaction(SIGINT, &sa, &old);
  printf("%s: replaced %s\n", who, disposition(old.sa_handler));
  sigaction(SIGINT, &old, NULL);
  fflush(stdout);
  raise(SIGINT);
  printf("%s: survived SIGINT\n", who);
}

sighandler_t bsd_signal(int sig, sighandler_t handler);  // exported, declared only for XPG4.2
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static int ignored_by(const char* how) {
  if (!strcmp(how, "sigset")) sigset(SIGINT, SIG_IGN);
  else if (!strcmp(how, "sysv")) sysv_signal(SIGINT, SIG_IGN);
  else if (!strcmp(how, "bsd")) bsd_signal(SIGINT, SIG_IGN);
  else if (!strcmp(how, "sigignore")) sigignore(SIGINT);
  else return 2;
  save_replace_restore_raise(how);
  return 0;
}
#pragma GCC diagnostic pop

// A vfork child shares the parent's memory but has its own dispositions.
static int vforksig(void) {
  struct sigaction ign, dfl, old;
  memset(&ign, 0, sizeof ign);
  memset(&dfl, 0, sizeof dfl);
  ign.sa_handler = SIG_IGN;
  dfl.sa_handler = SIG_DFL;
  int status = 0;
  sigaction(SIGINT, &ign, NULL);
  pid_t c = vfork();
  if (c == 0) {
    sigaction(SIGINT, &dfl, NULL);  // as before an exec
    _exit(0);
  }
  waitpid(c, NULL, 0);
  save_replace_restore_raise("ignored, child set default");
  sigaction(SIGINT, &dfl, NULL);
  c = vfork();
  if (c == 0) {
    sigaction(SIGINT, &ign, &old);
    _exit(old.sa_handler == SIG_DFL ? 0 : 1);
  }
  waitpid(c, &status, 0);
  printf("child saw default: %d\n", WIFEXITED(status) && WEXITSTATUS(status) == 0);
  sigaction(SIGINT, NULL, &old);
  printf("default, child ignored: sigaction reports %s\n", disposition(old.sa_handler));
  fflush(stdout);
  raise(SIGINT);  // default: this kills
  printf("still alive\n");
  return 0;
}

static int fsize(const char* out) {
  struct rlimit rl = {4096, 4096};
  if (setrlimit(RLIMIT_FSIZE, &rl) != 0) return 2;
  int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  char b[1000];
  memset(b, 'x', sizeof b);
  ssize_t n = write(fd, b, sizeof b);
  busy_io();
  busy_io();
  close(fd);
  printf("wrote %zd\n", n);
  return 7;
}

static int offsets(const char* out) {
  int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  char b[500];
  memset(b, 'a', sizeof b);
  if (write(fd, b, 500) != 500) return 2;
  close(fd);
  int ap = open(out, O_WRONLY | O_APPEND);
  if (write(ap, "1234567", 7) != 7 || write(ap, "abc", 3) != 3) return 2;  // at 500, 507
  int rw = open(out, O_RDWR);
  int d = dup(rw);
  if (write(rw, "xyzw", 4) != 4 || write(d, "12", 2) != 2) return 2;  // at 0, 4
  pid_t child = fork();
  if (child == 0) {
    if (write(rw, "c", 1) != 1) _exit(2);  // at 6
    _exit(0);
  }
  waitpid(child, NULL, 0);
  if (write(rw, "p", 1) != 1) return 2;  // at 7
  close(d);
  close(rw);
  close(ap);
  printf("offsets done\n");
  return 0;
}

// The exec'ed side of `inherited`: descriptor 7 is OUT at offset 5, 8 a socket.
static int inherited_child(void) {
  if (write(7, "abc", 3) != 3 || write(8, "ping", 4) != 4) return 2;
  return 0;
}

static int inherited(const char* self, const char* out) {
  int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  int sv[2];
  if (fd < 0 || write(fd, "head:", 5) != 5 || socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return 2;
  pid_t child = fork();
  if (child == 0) {
    if (dup2(fd, 7) != 7 || dup2(sv[1], 8) != 8) _exit(2);
    execl(self, self, "inherited-child", (char*)NULL);
    _exit(3);
  }
  close(sv[1]);
  int status = 0;
  waitpid(child, &status, 0);
  char got[16] = {0};
  ssize_t n = read(sv[0], got, sizeof got - 1);
  if (n > 0 && write(fd, got, (size_t)n) != n) return 2;
  close(fd);
  printf("child %d, socket gave %zd bytes: %s\n", WEXITSTATUS(status), n, got);
  return 0;
}

static int longpath(const char* dir) {
  if (chdir(dir) != 0) return 2;
  char name[201];
  memset(name, 'd', 200);
  name[200] = '\0';
  for (int i = 0; i < 22; ++i) {  // 22 x 201 bytes: deeper than PATH_MAX
    if (mkdir(name, 0755) != 0 && errno != EEXIST) return 2;
    if (chdir(name) != 0) return 2;
  }
  int fd = open("f", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || write(fd, "x", 1) != 1) return 2;
  close(fd);
  for (int i = 0; i < 20; ++i) {
    fd = open("f", O_RDONLY);
    char b;
    if (fd < 0 || read(fd, &b, 1) != 1) return 2;
    close(fd);
  }
  printf("long path opened 21 times\n");
  return 0;
}

static int vforkcaps(void) {
  pid_t child = vfork();
  if (child == 0) {
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    memset(d, 0, sizeof d);
    syscall(SYS_capset, &h, d);  // the child's own capabilities only
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    _exit(0);
  }
  waitpid(child, NULL, 0);
  printf("setuid %d\n", setuid(65534));
  printf("no_new_privs %d\n", prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0));
  return 0;
}

static char clone_stack[64 * 1024];
static int clone_child(void* arg) {
  (void)arg;
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0);
  clock_gettime(CLOCK_MONOTONIC, &b);
  double s = (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
  printf("prctl in clone child under a second: %d\n", s < 1.0);
  fflush(stdout);
  return 0;
}

static int clonekeep(void) {
  pid_t child = clone(clone_child, clone_stack + sizeof clone_stack, SIGCHLD, NULL);
  if (child < 0) return 2;
  waitpid(child, NULL, 0);
  return 0;
}

// glibc opens the object inside shm_open, where strata cannot see the open.
static int shm(const char* out) {
  char name[64];
  snprintf(name, sizeof name, "/strata-hostile-%d", (int)getpid());
  int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) {
    perror("shm_open");
    return 1;
  }
  shm_unlink(name);
  if (ftruncate(fd, 4096) != 0 || pwrite(fd, "shared", 6, 100) != 6) return 1;
  char* p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return 1;
  int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (o < 0 || write(o, p + 100, 6) != 6) return 1;
  printf("shm gave %.6s\n", p + 100);
  munmap(p, 4096);
  close(fd);
  close(o);
  return 0;
}

static volatile sig_atomic_t handler_forks;
static void fork_in_handler(int sig) {
  (void)sig;
  int saved = errno;
  pid_t c = fork();
  if (c == 0) _exit(0);
  if (c > 0) {
    waitpid(c, NULL, 0);
    handler_forks++;
  }
  // Disarmed here, not by the loop: when a fork takes longer than the timer's
  // period (a loaded machine, or a traced child starting its writer), the
  // next SIGALRM is pending as the handler returns and the interrupted open
  // never gets to finish.
  if (handler_forks >= 200) {
    struct itimerval off;
    memset(&off, 0, sizeof off);
    setitimer(ITIMER_REAL, &off, NULL);
  }
  errno = saved;
}

static volatile sig_atomic_t usr1_count, usr1_code, usr1_sender;

static void count_usr1(int sig, siginfo_t* si, void* ctx) {
  (void)sig;
  (void)ctx;
  ++usr1_count;
  usr1_code = si->si_code;
  usr1_sender = si->si_pid;
}

static int sigcount(const char* dir, int oneshot) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = count_usr1;
  sa.sa_flags = SA_SIGINFO | (oneshot ? SA_RESETHAND : 0);
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGUSR1, &sa, NULL) != 0) return 2;
  char path[4096];
  snprintf(path, sizeof path, "%s/ready.tmp", dir);
  FILE* f = fopen(path, "w");
  if (!f) return 2;
  fprintf(f, "%d\n", (int)getpid());
  fclose(f);
  char ready[4096];
  snprintf(ready, sizeof ready, "%s/ready", dir);
  rename(path, ready);
  snprintf(path, sizeof path, "%s/stop", dir);
  struct stat st;
  for (int i = 0; i < 1000 && stat(path, &st) != 0; ++i) usleep(10000);
  printf("usr1 %d code %d from %d\n", (int)usr1_count, (int)usr1_code, (int)usr1_sender);
  return 0;
}

static int sigfork(const char* dir) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = fork_in_handler;
  sa.sa_flags = SA_RESTART;
  sigaction(SIGALRM, &sa, NULL);
  struct itimerval every = {{0, 1000}, {0, 1000}}, off;
  memset(&off, 0, sizeof off);
  setitimer(ITIMER_REAL, &every, NULL);
  char p[4200];
  int opened = 0;
  for (int i = 0; i < 400000 && handler_forks < 200; i++) {
    snprintf(p, sizeof p, "%s/missing-%d", dir, i);
    int fd = open(p, O_RDONLY);
    if (fd >= 0) {
      opened++;
      close(fd);
    }
  }
  setitimer(ITIMER_REAL, &off, NULL);
  printf("forks in the handler >= 200: %d, opened %d\n", handler_forks >= 200, opened);
  return 0;
}

static int rawcap(void) {
  struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct d[2];
  memset(d, 0, sizeof d);
  printf("raw capset %ld\n", syscall(SYS_capset, &h, d));
  int r = setgroups(0, NULL);
  printf("setgroups %d %s\n", r, r ? strerror(errno) : "");
  r = setuid(65534);
  printf("setuid %d %s\n", r, r ? strerror(errno) : "");
  return 0;
}

static int crash(const char* how, const char* out) {
  struct rlimit no_core = {0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return 2;
  for (int i = 0; i < 200; ++i)
    if (write(fd, "line\n", 5) != 5) return 2;
  printf("crashing by %s\n", how);
  if (!strcmp(how, "abort")) abort();
  if (!strcmp(how, "segv")) *(volatile int*)0 = 1;
  if (!strcmp(how, "kill-segv")) kill(getpid(), SIGSEGV);
  if (!strcmp(how, "usr1")) kill(getpid(), SIGUSR1);
  if (!strcmp(how, "alarm")) {
    alarm(1);
    sleep(10);
  }
  if (!strcmp(how, "queued-segv")) {  // as crash reporters re-raise: a fault's code, sent
    siginfo_t si;
    memset(&si, 0, sizeof si);
    si.si_signo = SIGSEGV;
    si.si_code = SEGV_MAPERR;
    syscall(SYS_rt_tgsigqueueinfo, getpid(), syscall(SYS_gettid), SIGSEGV, &si);
  }
  if (!strcmp(how, "pipe")) {
    int p[2];
    if (pipe(p) != 0) return 2;
    close(p[0]);
    write(p[1], "x", 1);
  }
  return 3;
}

static volatile sig_atomic_t flip_bad, flip_calls, flip_stop;

static void flip_plain(int sig) {
  if (sig != SIGUSR1) flip_bad = 1;
  flip_calls = 1;
}

static void flip_info(int sig, siginfo_t* info, void* context) {
  if (sig != SIGUSR1 || !info || !context || info->si_signo != SIGUSR1) flip_bad = 1;
  flip_calls = 1;
}

static void* flip_sender(void* arg) {
  (void)arg;
  while (!flip_stop) kill(getpid(), SIGUSR1);
  return NULL;
}

static int flipsig(void) {
  struct sigaction plain, info;
  memset(&plain, 0, sizeof plain);
  memset(&info, 0, sizeof info);
  plain.sa_handler = flip_plain;
  info.sa_sigaction = flip_info;
  info.sa_flags = SA_SIGINFO;
  sigaction(SIGUSR1, &plain, NULL);
  pthread_t sender;
  if (pthread_create(&sender, NULL, flip_sender, NULL) != 0) return 2;
  for (int i = 0; i < 100000; ++i) sigaction(SIGUSR1, (i & 1) ? &info : &plain, NULL);
  flip_stop = 1;
  pthread_join(sender, NULL);
  sigaction(SIGUSR1, &plain, NULL);  // a copy still pending finds a handler
  printf("wrong argument %d, handled %s\n", (int)flip_bad, flip_calls ? "yes" : "no");
  return 0;
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc < 2) return 2;
  const char* mode = argv[1];
  const char* out = argc > 2 ? argv[2] : "/dev/null";
  if (!strncmp(mode, "crash-", 6)) return crash(mode + 6, out);
  if (!strcmp(mode, "sigfork")) return sigfork(out);
  if (!strcmp(mode, "flipsig")) return flipsig();
  if (!strcmp(mode, "sigcount")) return sigcount(out, argc > 3 && !strcmp(argv[3], "oneshot"));
  if (!strcmp(mode, "rawcap")) return rawcap();
  if (!strcmp(mode, "closeall")) return closeall(out, 0);
  if (!strcmp(mode, "rawclose")) return closeall(out, 1);
  if (!strcmp(mode, "dup2onto")) return dup2onto(out);
  if (!strcmp(mode, "fdlimit")) return fdlimit();
  if (!strcmp(mode, "eintr")) return eintr();
  if (!strcmp(mode, "resethand")) return resethand();
  if (!strcmp(mode, "oldaction")) return oldaction();
  if (!strncmp(mode, "ignored-", 8)) return ignored_by(mode + 8);
  if (!strcmp(mode, "vforksig")) return vforksig();
  if (!strcmp(mode, "fsize")) return fsize(out);
  if (!strcmp(mode, "offsets")) return offsets(out);
  if (!strcmp(mode, "longpath")) return longpath(out);
  if (!strcmp(mode, "vforkcaps")) return vforkcaps();
  if (!strcmp(mode, "clonekeep")) return clonekeep();
  if (!strcmp(mode, "inherited")) return inherited(argv[0], out);
  if (!strcmp(mode, "inherited-child")) return inherited_child();
  if (!strcmp(mode, "shm")) return shm(out);
  return 2;
}
