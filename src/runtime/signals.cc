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
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "runtime/real.h"
#include "runtime/state.h"
#include "runtime/writer.h"

STRATA_REAL_DECL(sigaction);

namespace strata::runtime {
namespace {

constexpr int kSaRestorer = 0x04000000;  // SA_RESTORER: the kernel's, not in glibc's headers
constexpr int kSignals[] = {SIGINT,  SIGTERM, SIGHUP,  SIGQUIT, SIGPIPE, SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM,
                            SIGPROF, SIGXCPU, SIGXFSZ, SIGABRT, SIGSEGV, SIGBUS,  SIGFPE,  SIGILL,  SIGSYS};
constexpr int kNumSignals = sizeof(kSignals) / sizeof(kSignals[0]);

struct Watch {
  bool tracked;          // strata keeps the application's view of this signal
  struct sigaction app;  // the disposition the application believes is installed
};
Watch watches[kNumSignals];

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

}  // namespace

void signals_install() {
  // The kernel drops SIG_DFL signals sent to a (namespace) init from inside:
  // a handler would make them delivered. Init keeps its dispositions.
  if (getpid() == 1) return;
  for (int i = 0; i < kNumSignals; ++i) {
    struct sigaction current {};
    if (REAL(sigaction)(kSignals[i], nullptr, &current) != 0) continue;
    watches[i].app = current;
    watches[i].tracked = !is_default(current) || install_flush_handler(kSignals[i]) == 0;
  }
}

// strata_stop: the kernel gets back exactly what the application installed.
void signals_uninstall() {
  for (int i = 0; i < kNumSignals; ++i) {
    if (!watches[i].tracked) continue;
    watches[i].tracked = false;
    struct sigaction k {};
    if (REAL(sigaction)(kSignals[i], nullptr, &k) == 0 && holds_flush_handler(k)) {
      struct sigaction app = default_view(i);
      REAL(sigaction)(kSignals[i], &app, nullptr);
    }
  }
}

}  // namespace strata::runtime

using strata::runtime::default_view;
using strata::runtime::holds_flush_handler;
using strata::runtime::install_flush_handler;
using strata::runtime::is_default;
using strata::runtime::is_vfork_child;
using strata::runtime::kSaRestorer;
using strata::runtime::slot_of;
using strata::runtime::watches;

extern "C" __attribute__((visibility("default"))) int sigaction(int sig, const struct sigaction* act,
                                                                  struct sigaction* old) {
  int i = slot_of(sig);
  if (i < 0 || !watches[i].tracked) return REAL(sigaction)(sig, act, old);
  // While the kernel holds strata's handler the application's disposition is
  // SIG_DFL, its view kept here; otherwise the kernel holds exactly what the
  // application installed, whether through this function or not.
  // A vfork child shares the parent's memory, not its dispositions: it leaves
  // the parent's view alone and its SIG_DFL is the kernel's (it has no trace
  // of its own to flush).
  const bool vfork_child = is_vfork_child();
  struct sigaction previous {};
  int r = act && is_default(*act) && !vfork_child ? install_flush_handler(sig, &previous)
                                                  : REAL(sigaction)(sig, act, &previous);
  if (r != 0) return r;
  if (holds_flush_handler(previous)) previous = default_view(i);
  if (act && !vfork_child) {
    watches[i].app = *act;
    // glibc adds its signal-return trampoline to every action it installs,
    // and reports it back: so does the view kept here.
    struct sigaction installed {};
    REAL(sigaction)(sig, nullptr, &installed);
    watches[i].app.sa_flags |= installed.sa_flags & kSaRestorer;
    watches[i].app.sa_restorer = installed.sa_restorer;
  }
  if (old) *old = previous;
  return 0;
}

// glibc's signal() is sigaction with BSD semantics: SA_RESTART, and the signal
// blocked while its handler runs.
extern "C" __attribute__((visibility("default"))) sighandler_t signal(int sig, sighandler_t handler) {
  if (handler == SIG_ERR) {
    errno = EINVAL;
    return SIG_ERR;
  }
  struct sigaction act {}, old{};
  act.sa_handler = handler;
  sigemptyset(&act.sa_mask);
  if (sig > 0 && sig < NSIG) sigaddset(&act.sa_mask, sig);
  act.sa_flags = SA_RESTART;
  if (sigaction(sig, &act, &old) != 0) return SIG_ERR;
  return (old.sa_flags & SA_SIGINFO) ? reinterpret_cast<sighandler_t>(reinterpret_cast<void*>(old.sa_sigaction)) : old.sa_handler;
}
