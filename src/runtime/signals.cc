// Fatal signals (those whose default action ends the process: SIGINT,
// SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM,
// SIGPROF, SIGXCPU, SIGXFSZ, and the crashes SIGABRT, SIGSEGV, SIGBUS, SIGFPE,
// SIGILL, SIGSYS): flush the trace before the process dies of one, without
// changing what the program sees. Not SIGTRAP (a debugger's), the real-time
// signals (glibc keeps some for itself) nor the rare SIGIO, SIGPWR, SIGSTKFLT.
//
// The runtime's handler is installed only while the application's disposition
// is SIG_DFL, that is only when the signal would kill the process anyway; it
// asks the writer thread for a final flush, restores SIG_DFL and re-raises.
// Whatever else the application installs (a handler with its own flags and
// mask, SA_RESETHAND, SIG_IGN, which exec keeps) goes to the kernel as it is,
// and sigaction/signal report the application's own disposition back to it.
// The kernel is asked first: glibc's sigset, sysv_signal, bsd_signal and
// sigignore install dispositions without calling sigaction, and a vfork child
// shares the view kept here with its parent, not its dispositions.
//
// One exception, in the command `strata run` started: a handler installed for
// a signal strata run forwards is called through on_shared_signal, which
// passes on one copy of a signal that reached the command twice (see there).
#include <setjmp.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "runtime/forwarded_signal.h"
#include "runtime/intern.h"
#include "runtime/real.h"
#include "runtime/state.h"
#include "runtime/writer.h"

STRATA_REAL_DECL(sigaction);
STRATA_REAL_DECL(longjmp);
STRATA_REAL_DECL(_longjmp);
STRATA_REAL_DECL(siglongjmp);
using LongjmpChkFn = void (*)(jmp_buf, int);
STRATA_REAL_DECL_T(__longjmp_chk, LongjmpChkFn);
using SiginterruptFn = int (*)(int, int);  // not decltype: deprecated in glibc's header
STRATA_REAL_DECL_T(siginterrupt, SiginterruptFn);

namespace strata::runtime {
namespace {

constexpr int kSaRestorer = 0x04000000;  // SA_RESTORER: the kernel's, not in glibc's headers
constexpr int kSignals[] = {SIGINT,  SIGTERM, SIGHUP,  SIGQUIT, SIGPIPE, SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM,
                            SIGPROF, SIGXCPU, SIGXFSZ, SIGABRT, SIGSEGV, SIGBUS,  SIGFPE,  SIGILL,  SIGSYS};
constexpr int kNumSignals = sizeof(kSignals) / sizeof(kSignals[0]);

struct Watch {
  bool tracked;          // strata keeps the application's view of this signal
  struct sigaction app;  // the disposition the application believes is installed
  // What on_shared_signal calls, in one word a handler reads at once: app's
  // handler (or SIG_DFL, SIG_IGN) with its SA_SIGINFO and SA_RESETHAND. A
  // copy of `app` taken in a handler while another thread's sigaction wrote
  // it could pair one call's handler with the other's flags (a three-argument
  // handler called with one).
  std::atomic<uint64_t> call;
};
Watch watches[kNumSignals];

static_assert(sizeof(void*) == 8 && std::atomic<uint64_t>::is_always_lock_free);
constexpr uint64_t kCallSiginfo = uint64_t{1} << 63, kCallResetHand = uint64_t{1} << 62;  // above user addresses

// Sets the application's view of signal slot i.
void set_app(int i, const struct sigaction& a) {
  watches[i].app = a;
  uint64_t call = reinterpret_cast<uintptr_t>(a.sa_handler);
  if (a.sa_flags & SA_SIGINFO) call |= kCallSiginfo;
  if (a.sa_flags & SA_RESETHAND) call |= kCallResetHand;
  watches[i].call.store(call, std::memory_order_release);
}

int slot_of(int sig) {
  for (int i = 0; i < kNumSignals; ++i)
    if (kSignals[i] == sig) return i;
  return -1;
}

// SIG_DFL is a null handler, whether or not SA_SIGINFO is set.
bool is_default(const struct sigaction& a) { return a.sa_handler == SIG_DFL; }

// The signal again, with the siginfo it came with, for this thread: it is
// blocked while the handler runs and delivered under SIG_DFL as the handler
// returns, so the process dies of it as it would have without strata (a
// fault's code and address in the core; a sender's pid for a kill). raise()
// if the kernel refuses to queue it (RLIMIT_SIGPENDING).
void deliver_again(int sig, siginfo_t* info) {
  if (info && syscall(SYS_rt_tgsigqueueinfo, getpid(), syscall(SYS_gettid), sig, info) == 0) return;
  raise(sig);
}

void on_fatal_signal(int sig, siginfo_t* info, void*) {
  int saved_errno = errno;
  // Only the writer thread can flush safely from a signal handler (a flush on
  // this thread could find malloc or zstd interrupted), and only in the
  // process that owns it (not a vfork child borrowing the parent's memory);
  // not when the writer itself crashed.
  if (g_hot.active && !g.finalized.load() && writer_thread_running() && !on_writer_thread()) {
    if (ThreadState* t = t_state; t && !t->busy && g_hot.layer_on[static_cast<int>(Layer::PROC)]) {
      uint64_t now = now_ticks();
      record_event(t, static_cast<uint32_t>(Fn::signal_flush), now, now, -1, 0, -1, -1, sig, 0);
    }
    writer_request_flush(true, 2000);
  }
  // The signal is blocked while this handler runs: raised again, it is
  // delivered with the default action as soon as the handler returns.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  REAL(sigaction)(sig, &dfl, nullptr);
  deliver_again(sig, info);
  errno = saved_errno;
}

// Installs the flush handler in place of SIG_DFL.
int install_flush_handler(int sig, struct sigaction* previous = nullptr) {
  struct sigaction ours {};
  ours.sa_sigaction = on_fatal_signal;
  ours.sa_flags = SA_SIGINFO;
  sigemptyset(&ours.sa_mask);
  return REAL(sigaction)(sig, &ours, previous);
}

bool holds_flush_handler(const struct sigaction& k) {
  return reinterpret_cast<void*>(k.sa_sigaction) == reinterpret_cast<void*>(on_fatal_signal);
}

// The application's disposition while the kernel holds the flush handler:
// SIG_DFL as the application installed it (a view saying otherwise is stale).
struct sigaction default_view(int i) {
  struct sigaction dfl {};
  return is_default(watches[i].app) ? watches[i].app : dfl;
}

// ---- a signal that reaches the command twice ---------------------------------
// A signal sent to the whole process group (`timeout`, `kill -- -PGID`) or to
// every pid of a job (Slurm's scancel) reaches the command directly and again
// through strata run, which forwards what is sent to it. strata run sends its
// copy with rt_sigqueueinfo: the sender's pid and uid, and a tag in the value
// (forwarded_signal.h). In the command, a handler the program installed for
// such a signal is called through on_shared_signal, which passes on the first
// copy from a sender and drops the other kind's copy from the same sender
// arriving within a second of it. The program sees one signal, from its real
// sender, with si_code SI_USER, as without strata. (Two copies of one kind, a
// sender's two kills, both go on; a copy the kernel merged into one still
// pending is not seen, and a second one sent on purpose within the second may
// then be taken for its twin.)

pid_t launcher_pid = 0;  // strata run's, from the environment

bool is_forwarded_kind(int sig) {
  for (int s : forwarded_signal::kSignals)
    if (s == sig) return true;
  return false;
}

// Only the command strata run started gets forwarded copies: not its
// children, not a process whose launcher is gone.
bool gets_forwarded_copies() { return launcher_pid > 0 && getppid() == launcher_pid; }

bool is_handler(const struct sigaction& a) { return a.sa_handler != SIG_DFL && a.sa_handler != SIG_IGN; }

bool wraps(int sig, const struct sigaction& a) { return is_handler(a) && is_forwarded_kind(sig) && gets_forwarded_copies(); }

void on_shared_signal(int sig, siginfo_t* info, void* context);

// SA_RESETHAND is the wrapper's to carry out: reset by the kernel, the
// action would be SIG_DFL when the twin of the first copy comes, and the
// twin would end the program.
int install_wrapper(int sig, const struct sigaction& app, struct sigaction* previous = nullptr) {
  struct sigaction ours = app;
  ours.sa_sigaction = on_shared_signal;
  ours.sa_flags = (app.sa_flags | SA_SIGINFO) & ~SA_RESETHAND;
  return REAL(sigaction)(sig, &ours, previous);
}

bool holds_wrapper(const struct sigaction& k) {
  return reinterpret_cast<void*>(k.sa_sigaction) == reinterpret_cast<void*>(on_shared_signal);
}

// The last copy passed on, per signal: sender pid (23 bits), whether it was
// the forwarded one (1 bit), when (milliseconds, 40 bits). 0: none waiting
// for its twin.
std::atomic<uint64_t> last_copy[kNumSignals];
static_assert(std::atomic<uint64_t>::is_always_lock_free);

uint64_t now_ms() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000 + static_cast<uint64_t>(ts.tv_nsec) / 1'000'000;
}

uint64_t pack_copy(pid_t sender, bool forwarded, uint64_t ms) {
  return (static_cast<uint64_t>(sender) & 0x7fffff) | static_cast<uint64_t>(forwarded) << 23 | ms << 24;
}

// Whether this copy is the twin of the one passed on last (then it is taken
// out, so a third copy is not); otherwise it becomes the one passed on last.
bool is_twin(int i, pid_t sender, bool forwarded) {
  const uint64_t ms = now_ms() & ((uint64_t{1} << 40) - 1);
  const uint64_t mine = pack_copy(sender, forwarded, ms);
  constexpr uint64_t kWindowMs = forwarded_signal::kTwinWindowNs / 1'000'000;
  uint64_t seen = last_copy[i].load();
  for (;;) {
    const bool twin = seen != 0 && (seen & 0x7fffff) == (mine & 0x7fffff) && ((seen >> 23) & 1) != forwarded &&
                      ms - (seen >> 24) <= kWindowMs;
    if (last_copy[i].compare_exchange_weak(seen, twin ? 0 : mine)) return twin;
  }
}

void on_shared_signal(int sig, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  const int i = slot_of(sig);
  siginfo_t as_sent;
  siginfo_t* passed = info;
  if (info && i >= 0 && gets_forwarded_copies()) {
    const bool forwarded = info->si_code == SI_QUEUE &&
                           reinterpret_cast<uintptr_t>(info->si_value.sival_ptr) ==
                               forwarded_signal::value_for(launcher_pid);
    if (forwarded) {
      as_sent = *info;
      as_sent.si_code = SI_USER;
      as_sent.si_value.sival_ptr = nullptr;
      passed = &as_sent;
    }
    const bool from_a_process =
        info->si_pid > 0 && (info->si_code == SI_USER || info->si_code == SI_TKILL || info->si_code == SI_QUEUE);
    if (from_a_process && is_twin(i, info->si_pid, forwarded)) {
      errno = saved_errno;
      return;
    }
  }
  errno = saved_errno;
  if (i < 0) return;
  uint64_t call = watches[i].call.load(std::memory_order_acquire);
  // SA_RESETHAND: the first delivery takes the handler, as the kernel's reset
  // would; one on another thread at the same time then finds SIG_DFL.
  while ((call & kCallResetHand) && !watches[i].call.compare_exchange_weak(call, 0, std::memory_order_acq_rel)) {
  }
  if (call & kCallResetHand) {
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    watches[i].app = dfl;
  }
  const uintptr_t fn = call & ~(kCallSiginfo | kCallResetHand);
  if (fn == reinterpret_cast<uintptr_t>(SIG_DFL)) {  // an SA_RESETHAND action already used: the default action
    on_fatal_signal(sig, passed, context);
    return;
  }
  if (fn == reinterpret_cast<uintptr_t>(SIG_IGN)) return;  // SIG_IGN meanwhile
  if (call & kCallSiginfo) reinterpret_cast<void (*)(int, siginfo_t*, void*)>(fn)(sig, passed, context);
  else reinterpret_cast<void (*)(int)>(fn)(sig);
}

}  // namespace

void signals_install() {
  // The kernel drops SIG_DFL signals sent to a (namespace) init from inside:
  // a handler would make them delivered. Init keeps its dispositions.
  if (getpid() == 1) return;
  if (const char* p = getenv(forwarded_signal::kLauncherPidVariable)) launcher_pid = static_cast<pid_t>(atoi(p));
  for (int i = 0; i < kNumSignals; ++i) {
    struct sigaction current {};
    if (REAL(sigaction)(kSignals[i], nullptr, &current) != 0) continue;
    set_app(i, current);
    watches[i].tracked = !is_default(current) || install_flush_handler(kSignals[i]) == 0;
  }
}

// strata_stop: the kernel gets back exactly what the application installed.
void signals_uninstall() {
  for (int i = 0; i < kNumSignals; ++i) {
    if (!watches[i].tracked) continue;
    watches[i].tracked = false;
    struct sigaction k {};
    if (REAL(sigaction)(kSignals[i], nullptr, &k) != 0) continue;
    if (holds_flush_handler(k)) {
      struct sigaction app = default_view(i);
      REAL(sigaction)(kSignals[i], &app, nullptr);
    } else if (holds_wrapper(k)) {
      REAL(sigaction)(kSignals[i], &watches[i].app, nullptr);
    }
  }
}

}  // namespace strata::runtime

using strata::runtime::default_view;
using strata::runtime::holds_flush_handler;
using strata::runtime::holds_wrapper;
using strata::runtime::install_flush_handler;
using strata::runtime::install_wrapper;
using strata::runtime::is_default;
using strata::runtime::is_vfork_child;
using strata::runtime::kSaRestorer;
using strata::runtime::set_app;
using strata::runtime::slot_of;
using strata::runtime::watches;
using strata::runtime::wraps;

extern "C" __attribute__((visibility("default"))) int sigaction(int sig, const struct sigaction* act,
                                                                  struct sigaction* old) {
  int i = slot_of(sig);
  if (i < 0 || !watches[i].tracked) return REAL(sigaction)(sig, act, old);
  // While the kernel holds strata's handler the application's disposition is
  // SIG_DFL, its view kept here; so while it holds on_shared_signal for a
  // handler of the application. Otherwise the kernel holds exactly what the
  // application installed, whether through this function or not.
  // A vfork child shares the parent's memory, not its dispositions: it leaves
  // the parent's view alone and its SIG_DFL is the kernel's (it has no trace
  // of its own to flush).
  const bool vfork_child = is_vfork_child();
  struct sigaction previous {};
  int r = act && is_default(*act) && !vfork_child ? install_flush_handler(sig, &previous)
          : act && wraps(sig, *act) && !vfork_child ? install_wrapper(sig, *act, &previous)
                                                    : REAL(sigaction)(sig, act, &previous);
  if (r != 0) return r;
  if (holds_flush_handler(previous)) previous = default_view(i);
  if (holds_wrapper(previous)) previous = watches[i].app;
  if (act && !vfork_child) {
    struct sigaction view = *act;
    // glibc adds its signal-return trampoline to every action it installs,
    // and reports it back: so does the view kept here.
    struct sigaction installed {};
    REAL(sigaction)(sig, nullptr, &installed);
    view.sa_flags |= installed.sa_flags & kSaRestorer;
    view.sa_restorer = installed.sa_restorer;
    set_app(i, view);
  }
  if (old) *old = previous;
  return 0;
}

// The signals siginterrupt(sig, 1) made interrupt system calls: glibc keeps
// that set to itself (and its signal() reads it), so strata keeps a copy.
namespace {
sigset_t interrupting;
}

extern "C" __attribute__((visibility("default"))) int siginterrupt(int sig, int flag) {
  const int r = REAL(siginterrupt)(sig, flag);
  if (r == 0) {
    if (flag) sigaddset(&interrupting, sig);
    else sigdelset(&interrupting, sig);
    // glibc changed SA_RESTART of the action the kernel holds: when that is
    // the wrapper of the program's handler, the view follows.
    const int i = slot_of(sig);
    struct sigaction k {};
    if (i >= 0 && watches[i].tracked && REAL(sigaction)(sig, nullptr, &k) == 0 && holds_wrapper(k))
      watches[i].app.sa_flags = (watches[i].app.sa_flags & ~SA_RESTART) | (k.sa_flags & SA_RESTART);
  }
  return r;
}

// glibc's signal() is sigaction with BSD semantics: SA_RESTART (unless
// siginterrupt said otherwise for the signal), and the signal blocked while
// its handler runs.
extern "C" __attribute__((visibility("default"))) sighandler_t signal(int sig, sighandler_t handler) {
  if (handler == SIG_ERR || sig < 1 || sig >= NSIG) {
    errno = EINVAL;
    return SIG_ERR;
  }
  struct sigaction act {}, old{};
  act.sa_handler = handler;
  sigemptyset(&act.sa_mask);
  sigaddset(&act.sa_mask, sig);
  act.sa_flags = sigismember(&interrupting, sig) ? 0 : SA_RESTART;
  if (sigaction(sig, &act, &old) != 0) return SIG_ERR;
  return (old.sa_flags & SA_SIGINFO) ? reinterpret_cast<sighandler_t>(reinterpret_cast<void*>(old.sa_sigaction)) : old.sa_handler;
}

// ---- longjmp out of an interposed call -------------------------------------
// A signal handler that interrupted an interposed call (a read waiting on a
// pipe, an alarm as its timeout) and leaves it with longjmp abandons the
// interposer's frame: the thread stayed marked as inside the runtime and
// recorded nothing for the rest of its life. The jump's target stack pointer
// (glibc's jmp_buf, pointer-mangled, x86-64) tells whether the marked frame is
// left: a target above it is outside the call.
namespace {
// A string table's lock taken there is released: left taken, every other
// thread's next new path waited for it for ever (Edges.
// ALongjmpOutOfStratasLockDoesNotStopOtherThreads); a table changes in an
// order a jump may abandon anywhere (intern.cc). Left marked
// (as before) when strata holds the writer's mutex there, when the mark is
// not an interposer's (busy_sp 0), and when the jump stays on the alternate
// signal stack the handler runs on (its addresses say nothing of the
// thread's stack).
//
// A jump out of the thread's first-event setup (a handler that interrupted it
// jumps past create_thread_state, core.cc) clears its mark: the thread's next
// call sets its state up again (left marked, the thread recorded nothing).
void leaving_frames_below(const void* env) {
#if defined(__x86_64__)
  using strata::runtime::t_setup_sp;
  using strata::runtime::t_state;
  strata::runtime::ThreadState* t = t_state;
  const bool in_call = t && t->busy == 1 && t->busy_sp;
  if (!in_call && !t_setup_sp) return;
  uintptr_t sp = reinterpret_cast<const long*>(env)[6];  // JB_RSP
  uintptr_t guard;
  asm("mov %%fs:0x30, %0" : "=r"(guard));  // tcbhead_t.pointer_guard
  sp = ((sp >> 0x11) | (sp << (64 - 0x11))) ^ guard;
  const bool leaves_setup = t_setup_sp && sp > t_setup_sp;
  const bool leaves_call = in_call && sp > t->busy_sp;
  if (!leaves_setup && !leaves_call) return;
  stack_t alt;
  if (sigaltstack(nullptr, &alt) == 0 && (alt.ss_flags & SS_ONSTACK)) {
    const uintptr_t lo = reinterpret_cast<uintptr_t>(alt.ss_sp);
    if (sp >= lo && sp < lo + alt.ss_size) return;
  }
  if (leaves_setup) t_setup_sp = 0;
  if (!leaves_call || !strata::runtime::leave_spin_lock()) return;
  t->busy = 0;
  t->busy_sp = 0;
#else
  (void)env;
#endif
}
}  // namespace

#define STRATA_LONGJMP(fn, buf_type)                                                           \
  extern "C" __attribute__((visibility("default"), noreturn)) void fn(buf_type env, int val) { \
    leaving_frames_below(env);                                                                 \
    REAL(fn)(env, val);                                                                        \
    __builtin_unreachable();                                                                   \
  }
STRATA_LONGJMP(longjmp, jmp_buf)
STRATA_LONGJMP(_longjmp, jmp_buf)
STRATA_LONGJMP(siglongjmp, sigjmp_buf)
STRATA_LONGJMP(__longjmp_chk, jmp_buf)
#undef STRATA_LONGJMP
