// Process interposers: fork, posix_spawn, the exec family and exit. The trace
// of a process image is finished (flushed, footer written) before it is
// replaced by exec or ends through exit/_exit, since forked workers often
// leave through _exit and run no destructor. Children started with an
// environment that lacks strata's variables get them back, so every process
// of the job is traced.
#include <aio.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <mqueue.h>
#include <sys/syscall.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <threads.h>
#include <time.h>
#include <unistd.h>

#include <alloca.h>
#include <cstdarg>
#include <cstdlib>
#include <cstring>

#include "runtime/real.h"
#include "runtime/state.h"
#include "runtime/sys.h"
#include "runtime/writer.h"

using namespace strata::runtime;

extern "C" char** environ;

namespace {
STRATA_REAL_DECL(fork);
STRATA_REAL_DECL(vfork);
STRATA_REAL_DECL(pthread_create);
STRATA_REAL_DECL(thrd_create);
STRATA_REAL_DECL(timer_create);
STRATA_REAL_DECL(mq_notify);
STRATA_REAL_DECL(aio_read);
STRATA_REAL_DECL(aio_write);
STRATA_REAL_DECL(aio_read64);
STRATA_REAL_DECL(aio_write64);
STRATA_REAL_DECL(aio_fsync);
STRATA_REAL_DECL(aio_fsync64);
STRATA_REAL_DECL(lio_listio);
STRATA_REAL_DECL(lio_listio64);
STRATA_REAL_DECL(pthread_exit);
STRATA_REAL_DECL(unshare);
STRATA_REAL_DECL(setns);
STRATA_REAL_DECL(posix_spawn);
STRATA_REAL_DECL(posix_spawnp);
STRATA_REAL_DECL(execve);
STRATA_REAL_DECL(execvpe);
STRATA_REAL_DECL(fexecve);
STRATA_REAL_DECL(execveat);
STRATA_REAL_DECL(exit);
STRATA_REAL_DECL(_exit);
STRATA_REAL_DECL(_Exit);
STRATA_REAL_DECL(quick_exit);
STRATA_REAL_DECL(daemon);

constexpr Layer PR = Layer::PROC;

// vfork bookkeeping (below): per thread, since the child clobbers the stack.
__thread void* t_vfork_caller __attribute__((tls_model("initial-exec")));
__thread uint64_t t_vfork_t0 __attribute__((tls_model("initial-exec")));
__thread ThreadState* t_vfork_thread __attribute__((tls_model("initial-exec")));
__thread bool t_vfork_saved_done __attribute__((tls_model("initial-exec")));
__thread decltype(ThreadState::busy) t_vfork_saved_busy __attribute__((tls_model("initial-exec")));
__thread uintptr_t t_vfork_saved_busy_sp __attribute__((tls_model("initial-exec")));
// What the vfork child's last exec call failed with (0: it succeeded, or the
// child made none). The child writes it into the parent's memory, which it
// borrows; the parent's vfork event carries it (its err), so that readers
// know a child without a trace file of its own had no new image to trace.
__thread int t_vfork_exec_errno __attribute__((tls_model("initial-exec")));

// The variables a traced child must inherit, captured at start-up.
constexpr int kMaxInherited = 24;
char* inherited[kMaxInherited];
int ninherited = 0;

bool inherits(const char* entry) {
  return std::strncmp(entry, "STRATA_", 7) == 0 || std::strncmp(entry, "LD_PRELOAD=", 11) == 0;
}

__attribute__((constructor(102))) void capture_environment() {
  if (!g_hot.active || !environ) return;
  for (char** e = environ; *e && ninherited < kMaxInherited; ++e)
    if (inherits(*e)) inherited[ninherited++] = strdup(*e);
}

bool has_key(char* const* envp, const char* entry) {
  size_t klen = std::strcspn(entry, "=") + 1;
  for (char* const* e = envp; e && *e; ++e)
    if (std::strncmp(*e, entry, klen) == 0) return true;
  return false;
}

size_t count(char* const* v) {
  size_t n = 0;
  while (v && v[n]) ++n;
  return n;
}

// Fills `out` (room for count(envp) + kMaxInherited + 1) with envp plus the
// missing strata variables. Stack only: safe in a vfork child.
char** with_strata_env(char* const* envp, char** out) {
  size_t n = 0;
  for (char* const* e = envp; e && *e; ++e) out[n++] = *e;
  for (int i = 0; i < ninherited; ++i)
    if (!has_key(envp, inherited[i])) out[n++] = inherited[i];
  out[n] = nullptr;
  return out;
}

#define STRATA_ENV(envp) with_strata_env((envp), static_cast<char**>(alloca((count(envp) + kMaxInherited + 1) * sizeof(char*))))

// Whether the kernel can read the path `p` (exec answers EFAULT for a bad
// pointer, where reading it here would crash the program): asked of the
// kernel before the exec, since a successful one never returns. Nor a path
// with no NUL in the PATH_MAX bytes the kernel reads (ENAMETOOLONG): past
// them, strlen could run into memory that cannot be read. Those bytes can
// be, once the kernel did not answer EFAULT.
bool kernel_can_read(const char* p) {
  const int saved = errno;
  const bool ok = syscall(SYS_faccessat, AT_FDCWD, p, F_OK) == 0 || errno != EFAULT;
  errno = saved;
  return ok && strnlen(p, kPathMax) < static_cast<size_t>(kPathMax);
}

void record_proc(Fn fn, const char* program, int64_t ret, int err) {
  if (!g_hot.record[static_cast<int>(PR)].load(std::memory_order_relaxed) || is_vfork_child()) return;
  ThreadState* t = thread_state();
  if (!t || t->busy) return;
  InterposerMark mark(t);  // a handler's open must not wait for this interning
  uint32_t sid = program && kernel_can_read(program) ? g.strings.intern(program) : 0;
  uint64_t now = now_ticks();
  record_event(t, static_cast<uint32_t>(fn), now, now, -1, sid, -1, -1, ret, err);
}

template <class Call>
int exec_op(Fn fn, const char* program, Call call) {
  record_proc(fn, program, 0, 0);
  before_exec();
  if (t_vfork_child) t_vfork_exec_errno = 0;  // left so by an exec that succeeds
  int r = call();
  int err = errno;
  if (t_vfork_child) t_vfork_exec_errno = err ? err : ENOEXEC;
  after_failed_exec();
  record_proc(fn, program, r, err);
  errno = err;
  return r;
}

// Collects execl-style arguments into a NULL-terminated array on the stack.
#define STRATA_COLLECT_ARGS(arg0, ap, argv)              \
  size_t nargs = 1;                                      \
  {                                                      \
    va_list probe;                                       \
    va_copy(probe, ap);                                  \
    while (va_arg(probe, const char*)) ++nargs;          \
    va_end(probe);                                       \
  }                                                      \
  char** argv = static_cast<char**>(alloca((nargs + 1) * sizeof(char*))); \
  argv[0] = const_cast<char*>(arg0);                     \
  for (size_t i = 1; i <= nargs; ++i) argv[i] = va_arg(ap, char*);

// Threads of this process (/proc/self/stat's num_threads), -1 if unknown.
int process_threads() {
  char buf[1024];
  const int fd = sys::open("/proc/self/stat", O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return -1;
  const long n = sys::read(fd, buf, sizeof(buf) - 1);
  sys::close(fd);
  if (n <= 0) return -1;
  buf[n] = 0;
  const char* p = std::strrchr(buf, ')');  // the command name may hold spaces
  if (!p) return -1;
  for (int field = 2; field < 20 && *p; ++p)  // field 20: 18 spaces after field 2's ')'
    if (*p == ' ') ++field;
  return static_cast<int>(std::strtol(p, nullptr, 10));
}

// A new user namespace (and unsharing signal handlers or memory) needs a
// process of one thread: when the writer is the only other thread, it steps
// aside for the call, its rings keeping their events, and starts again after
// it (with more threads the kernel refuses, as without strata).
bool alone_with_writer() { return writer_thread_running() && process_threads() == 2; }

// pthread_join returns once the writer thread has let go of its memory, a
// moment before the kernel takes it out of the thread group: a call made at
// once could still count two threads (unshare(CLONE_NEWUSER) failed with
// EINVAL in 12 runs of 150 beside two CPU hogs). Waits for one, 100 ms at most.
void wait_for_one_thread() {
  for (int i = 0; i < 1000 && process_threads() > 1; ++i) {
    timespec ts{0, 100000};
    nanosleep(&ts, nullptr);
  }
}

// pthread_join returns a moment before the kernel takes the thread out of
// the thread group (as above): waits until /proc no longer lists it, 100 ms
// at most.
void wait_for_thread_gone(int tid) {
  char path[40] = "/proc/self/task/";
  char digits[12];
  int nd = 0;
  for (unsigned v = static_cast<unsigned>(tid); nd == 0 || v != 0; v /= 10) digits[nd++] = static_cast<char>('0' + v % 10);
  size_t at = std::strlen(path);
  while (nd > 0) path[at++] = digits[--nd];
  path[at] = '\0';
  for (int i = 0; i < 1000 && syscall(SYS_faccessat, AT_FDCWD, path, F_OK) == 0; ++i) {
    timespec ts{0, 100000};
    nanosleep(&ts, nullptr);
  }
}

template <class Call>
int with_writer_paused(bool needs_one_thread, Call call) {
  const int errno_before = errno;  // the checks' system calls must not show
  const bool paused = needs_one_thread && g_hot.active && !is_vfork_child() && alone_with_writer() && writer_pause();
  if (paused) wait_for_one_thread();
  errno = errno_before;
  const int r = call();
  if (paused) {
    const int saved_errno = errno;
    writer_resume();
    errno = saved_errno;
  }
  return r;
}

}  // namespace

extern "C" {
#pragma GCC visibility push(default)

// Not traced: noted so that no interposer bypasses glibc's cancellation
// bracket once a second thread could cancel another (direct.h).
int pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*start)(void*), void* arg) {
  g_hot.direct = false;
  return REAL(pthread_create)(thread, attr, start, arg);
}

// C11 threads: glibc creates them without going through pthread_create.
int thrd_create(thrd_t* thread, thrd_start_t start, void* arg) {
  g_hot.direct = false;
  return REAL(thrd_create)(thread, start, arg);
}

// Threads glibc starts for the program without pthread_create: a timer's or
// a message queue's SIGEV_THREAD notification, and asynchronous I/O. Code on
// them can cancel the main thread, so the direct calls stop here too.
int timer_create(clockid_t clock, struct sigevent* sev, timer_t* timer) {
  if (sev && sev->sigev_notify == SIGEV_THREAD) g_hot.direct = false;
  return REAL(timer_create)(clock, sev, timer);
}
int mq_notify(mqd_t mq, const struct sigevent* sev) {
  if (sev && sev->sigev_notify == SIGEV_THREAD) g_hot.direct = false;
  return REAL(mq_notify)(mq, sev);
}
#define STRATA_AIO_STARTS_THREADS(fn, cb_type)  \
  int fn(cb_type* cb) {                          \
    g_hot.direct = false;                        \
    return REAL(fn)(cb);                         \
  }
STRATA_AIO_STARTS_THREADS(aio_read, struct aiocb)
STRATA_AIO_STARTS_THREADS(aio_write, struct aiocb)
STRATA_AIO_STARTS_THREADS(aio_read64, struct aiocb64)
STRATA_AIO_STARTS_THREADS(aio_write64, struct aiocb64)
#undef STRATA_AIO_STARTS_THREADS
int aio_fsync(int op, struct aiocb* cb) {
  g_hot.direct = false;
  return REAL(aio_fsync)(op, cb);
}
int aio_fsync64(int op, struct aiocb64* cb) {
  g_hot.direct = false;
  return REAL(aio_fsync64)(op, cb);
}
int lio_listio(int mode, struct aiocb* const list[], int n, struct sigevent* sev) {
  g_hot.direct = false;
  return REAL(lio_listio)(mode, list, n, sev);
}
int lio_listio64(int mode, struct aiocb64* const list[], int n, struct sigevent* sev) {
  g_hot.direct = false;
  return REAL(lio_listio64)(mode, list, n, sev);
}

// The main thread leaving through pthread_exit: glibc ends the process when
// the last thread exits, and the writer thread would be that last thread;
// it stops now (writer.cc).
void pthread_exit(void* retval) {
  if (g_hot.active && !is_vfork_child() && sys::gettid() == sys::getpid()) writer_stop_for_main_exit();
  REAL(pthread_exit)(retval);
  __builtin_unreachable();
}

int unshare(int flags) {
  const bool one_thread = flags & (CLONE_NEWUSER | CLONE_THREAD | CLONE_SIGHAND | CLONE_VM);
  return with_writer_paused(one_thread, [&] { return REAL(unshare)(flags); });
}

// setns() into a mount namespace needs a caller whose fs context (cwd,
// root) no other thread shares: the writer takes its own as it starts.
// Type 0 names the namespace by its descriptor (NS_GET_NSTYPE); a pidfd's
// type is a mask of CLONE_NEW* flags.
int setns(int fd, int nstype) {
  int type = nstype;
  if (type == 0 && g_hot.active) {
    const int errno_before = errno;
    const long t = syscall(SYS_ioctl, fd, 0xb703 /*NS_GET_NSTYPE*/);
    errno = errno_before;
    type = t > 0 ? static_cast<int>(t) : CLONE_NEWUSER | CLONE_NEWNS;  // unknown: either
  }
  if ((type & CLONE_NEWNS) && g_hot.active && !is_vfork_child()) writer_wait_fs_private();
  return with_writer_paused(type & CLONE_NEWUSER, [&] { return REAL(setns)(fd, nstype); });
}

// CPython 3.12 and later count the process's threads as os.fork returns in
// the parent (3.12 before the at-fork hooks run, 3.13 after them) and warn
// "This process is multi-threaded" when they find more than one. strata's
// Python layer makes os.fork a call of this function through ctypes.PyDLL
// (the GIL held, and no Python frame of strata's on the stack, so a warning
// still names the program's line): the writer steps aside for the whole
// call, the count included, as for unshare. `callable` is the original os.fork or os.forkpty (a
// PyObject*); the result is its new reference, or NULL with its exception.
void* strata_fork_call(void* callable) {
  using CallObject = void* (*)(void*, void*);
  static const auto call_object = reinterpret_cast<CallObject>(dlsym(RTLD_DEFAULT, "PyObject_CallObject"));
  if (!call_object) return nullptr;  // not a CPython process: the layer never calls this
  const int errno_before = errno;
  const pid_t pid = sys::getpid();
  // Whatever other threads the program has: its count must not include the
  // writer (a thread the program joined just before may still be counted a
  // moment, so "alone" cannot be decided before the fork). A writer started
  // again by the previous fork may not have noted its tid yet: asked after
  // the stop, which waits for the thread to end.
  const bool paused = g_hot.active && !is_vfork_child() && writer_pause();
  if (paused && writer_last_tid() > 0) wait_for_thread_gone(writer_last_tid());
  errno = errno_before;
  void* result = call_object(callable, nullptr);
  // The child started its own writer as it forked (fork_child).
  if (paused && sys::getpid() == pid) {
    const int saved_errno = errno;
    writer_resume();
    errno = saved_errno;
  }
  return result;
}

pid_t fork(void) {
  IoScope s(Fn::fork, PR);
  pid_t r = REAL(fork)();
  if (r != 0 && s.on()) {
    s.stop(r < 0);
    s.record(-1, 0, -1, -1, r);
  }
  return r;
}

// vfork: the child borrows the parent's stack until it calls exec or _exit,
// so a C wrapper's frame (and return address) would be overwritten before
// the parent returns through it. The assembly entry below keeps the caller's
// return address in thread-local storage instead, calls the real vfork with
// the caller's stack pointer, and jumps back. Only the parent records (one
// event lasting until the child exec'd or exited); the child records nothing
// since it shares the parent's memory.
__attribute__((visibility("hidden"))) void* strata_vfork_enter(void* caller) {
  t_vfork_caller = caller;
  t_vfork_t0 = 0;
  t_vfork_exec_errno = 0;
  if (g_hot.active) fd_offsets_shared();
  t_vfork_thread = recording_thread(PR);
  if (t_vfork_thread) t_vfork_t0 = now_ticks();
  return reinterpret_cast<void*>(REAL(vfork));
}

__attribute__((visibility("hidden"))) void* strata_vfork_leave(long result) {
  void* caller = t_vfork_caller;
  // The child mutes this thread (its ring would be the parent's, and so would
  // the descriptor table); the parent, resumed once the child exec'd or
  // exited, unmutes it.
  if (result == 0) {
    t_vfork_child = true;
    t_vfork_saved_done = t_done;
    t_done = true;
    if (ThreadState* t = t_state) {
      t_vfork_saved_busy = t->busy;
      t_vfork_saved_busy_sp = t->busy_sp;
      t->busy = 1;
      t->busy_sp = 0;
    }
    return caller;
  }
  if (t_vfork_child) {
    t_vfork_child = false;
    t_done = t_vfork_saved_done;
    if (ThreadState* t = t_state) {
      t->busy = t_vfork_saved_busy;
      t->busy_sp = t_vfork_saved_busy_sp;
    }
  }
  if (t_vfork_thread) {
    const int err = result < 0 ? errno : t_vfork_exec_errno;
    ThreadState* t = t_vfork_thread;
    push_event(t, make_event(static_cast<uint32_t>(Fn::vfork), t_vfork_t0, now_ticks(), -1, 0, -1, -1, result, err,
                             t->ctx));
  }
  return caller;
}

int posix_spawn(pid_t* pid, const char* path, const posix_spawn_file_actions_t* fa, const posix_spawnattr_t* attr,
                char* const argv[], char* const envp[]) {
  if (g_hot.active) fd_offsets_shared();
  int r = REAL(posix_spawn)(pid, path, fa, attr, argv, STRATA_ENV(envp));
  record_proc(Fn::posix_spawn, path, r == 0 && pid ? *pid : -1, r);
  return r;
}
int posix_spawnp(pid_t* pid, const char* file, const posix_spawn_file_actions_t* fa, const posix_spawnattr_t* attr,
                 char* const argv[], char* const envp[]) {
  if (g_hot.active) fd_offsets_shared();
  int r = REAL(posix_spawnp)(pid, file, fa, attr, argv, STRATA_ENV(envp));
  record_proc(Fn::posix_spawnp, file, r == 0 && pid ? *pid : -1, r);
  return r;
}

int execve(const char* path, char* const argv[], char* const envp[]) {
  char** env = STRATA_ENV(envp);
  return exec_op(Fn::execve, path, [&] { return REAL(execve)(path, argv, env); });
}
int execv(const char* path, char* const argv[]) {
  char** env = STRATA_ENV(environ);
  return exec_op(Fn::execv, path, [&] { return REAL(execve)(path, argv, env); });
}
int execvpe(const char* file, char* const argv[], char* const envp[]) {
  char** env = STRATA_ENV(envp);
  return exec_op(Fn::execvpe, file, [&] { return REAL(execvpe)(file, argv, env); });
}
int execvp(const char* file, char* const argv[]) {
  char** env = STRATA_ENV(environ);
  return exec_op(Fn::execvp, file, [&] { return REAL(execvpe)(file, argv, env); });
}
int fexecve(int fd, char* const argv[], char* const envp[]) {
  char** env = STRATA_ENV(envp);
  return exec_op(Fn::fexecve, nullptr, [&] { return REAL(fexecve)(fd, argv, env); });
}
// The path as given (relative to dirfd, or empty with AT_EMPTY_PATH).
int execveat(int dirfd, const char* path, char* const argv[], char* const envp[], int flags) {
  char** env = STRATA_ENV(envp);
  return exec_op(Fn::execveat, path && *path ? path : nullptr,
                 [&] { return REAL(execveat)(dirfd, path, argv, env, flags); });
}
int execl(const char* path, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  STRATA_COLLECT_ARGS(arg, ap, argv);
  va_end(ap);
  char** env = STRATA_ENV(environ);
  return exec_op(Fn::execl, path, [&] { return REAL(execve)(path, argv, env); });
}
int execlp(const char* file, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  STRATA_COLLECT_ARGS(arg, ap, argv);
  va_end(ap);
  char** env = STRATA_ENV(environ);
  return exec_op(Fn::execlp, file, [&] { return REAL(execvpe)(file, argv, env); });
}
int execle(const char* path, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  STRATA_COLLECT_ARGS(arg, ap, argv);
  char* const* envp = va_arg(ap, char* const*);
  va_end(ap);
  char** env = STRATA_ENV(envp);
  return exec_op(Fn::execle, path, [&] { return REAL(execve)(path, argv, env); });
}

// Returning from main is exit(status), but glibc then calls its exit
// internally, past the interposer: main is wrapped so the return records the
// same `exit` event an explicit exit() does.
using MainFn = int (*)(int, char**, char**);
static MainFn real_main = nullptr;

static int main_then_exit_event(int argc, char** argv, char** envp) {
  int status = real_main(argc, argv, envp);
  record_proc(Fn::exit, nullptr, status, 0);
  return status;
}

int __libc_start_main(MainFn main, int argc, char** argv, void* init, void* fini, void* rtld_fini,
                      void* stack_end) {
  using StartFn = int (*)(MainFn, int, char**, void*, void*, void*, void*);
  auto real_start = reinterpret_cast<StartFn>(resolve_next("__libc_start_main"));
  real_main = main;
  return real_start(main_then_exit_event, argc, argv, init, fini, rtld_fini, stack_end);
}

void exit(int status) {
  record_proc(Fn::exit, nullptr, status, 0);
  REAL(exit)(status);
  __builtin_unreachable();
}
void _exit(int status) {
  if (!is_vfork_child()) finalize_process(status, Fn::_exit);
  REAL(_exit)(status);
  __builtin_unreachable();
}
void _Exit(int status) {
  if (!is_vfork_child()) finalize_process(status, Fn::_Exit);
  REAL(_Exit)(status);
  __builtin_unreachable();
}
// quick_exit runs the at_quick_exit handlers, then glibc's own _exit, past
// the interposer above: the trace is finished by a handler strata registered
// first, so that it runs after the program's (core.cc).
void quick_exit(int status) {
  record_proc(Fn::exit, nullptr, status, 0);
  REAL(quick_exit)(status);
  __builtin_unreachable();
}

// daemon() forks, and the parent leaves through glibc's own _exit: its trace
// is finished before (the child, forked inside, starts a file of its own).
// If daemon fails the parent goes on, and so does its trace, in the same file.
int daemon(int nochdir, int noclose) {
  const bool finish = g_hot.active && !is_vfork_child();
  if (finish) finalize_process(0, Fn::kNone);
  const int r = REAL(daemon)(nochdir, noclose);
  if (finish && r != 0) {
    const int saved = errno;
    after_failed_exec();
    errno = saved;
  }
  return r;
}

#pragma GCC visibility pop
}  // extern "C"

#if defined(__x86_64__)
// vfork(): see strata_vfork_enter. The stack pointer the real vfork sees is
// the caller's after its return address is popped, so the child returns into
// the code below with the caller's stack, and so does the parent later; the
// return value travels in %rax, the caller's return address in TLS.
// (It returns with jmp, not ret: with x86 shadow stacks enabled, which glibc
// 2.36 and Debian 12's kernel do not do, this entry would need a shadow-stack
// pop as glibc's own vfork does.)
asm(R"(
    .text
    .globl vfork
    .type vfork, @function
vfork:
    .cfi_startproc
    sub   $8, %rsp
    .cfi_adjust_cfa_offset 8
    mov   8(%rsp), %rdi
    call  strata_vfork_enter
    add   $16, %rsp
    .cfi_adjust_cfa_offset -16
    .cfi_undefined %rip
    call  *%rax
    push  %rax
    sub   $8, %rsp
    mov   %rax, %rdi
    call  strata_vfork_leave
    mov   %rax, %rcx
    add   $8, %rsp
    pop   %rax
    jmp   *%rcx
    .cfi_endproc
    .size vfork, .-vfork
)");
#endif
