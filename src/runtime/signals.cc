// SIGINT and SIGTERM: flush the trace before the process dies, then do what the
// application asked for. The runtime's handler stays installed; handlers the
// application installs (sigaction/signal) are kept aside and chained.
#include <signal.h>

#include <cerrno>
#include <cstring>

#include "runtime/real.h"
#include "runtime/state.h"
#include "runtime/writer.h"

STRATA_REAL_DECL(sigaction);
STRATA_REAL_DECL(signal);

namespace strata::runtime {
namespace {

constexpr int kSignals[] = {SIGINT, SIGTERM};
struct Chain {
  bool installed;
  struct sigaction app;  // what the application believes is installed
};
Chain chains[2];

int slot_of(int sig) {
  for (int i = 0; i < 2; ++i)
    if (kSignals[i] == sig) return i;
  return -1;
}

void on_signal(int sig, siginfo_t* info, void* uctx) {
  int saved_errno = errno;
  Chain& c = chains[slot_of(sig)];
  bool dies = !(c.app.sa_flags & SA_SIGINFO) && c.app.sa_handler == SIG_DFL;
  if (g_hot.active && !g.finalized.load()) {
    if (ThreadState* t = t_state; t && g_hot.layer_on[static_cast<int>(Layer::PROC)]) {
      uint64_t now = now_ticks();
      record_event(t, static_cast<uint32_t>(Fn::signal_flush), now, now, -1, 0, -1, -1, sig, 0);
    }
    writer_request_flush(dies, 2000);
  }
  errno = saved_errno;
  if (c.app.sa_flags & SA_SIGINFO) {
    c.app.sa_sigaction(sig, info, uctx);
  } else if (c.app.sa_handler == SIG_DFL) {
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    REAL(sigaction)(sig, &dfl, nullptr);
    raise(sig);  // delivered with the default action once this handler returns
  } else if (c.app.sa_handler != SIG_IGN) {
    c.app.sa_handler(sig);
  }
}

}  // namespace

void signals_install() {
  for (int i = 0; i < 2; ++i) {
    struct sigaction old {};
    REAL(sigaction)(kSignals[i], nullptr, &old);
    if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_IGN) continue;  // e.g. nohup
    chains[i].app = old;
    struct sigaction ours {};
    ours.sa_sigaction = on_signal;
    ours.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&ours.sa_mask);
    chains[i].installed = REAL(sigaction)(kSignals[i], &ours, nullptr) == 0;
  }
}

}  // namespace strata::runtime

using strata::runtime::chains;
using strata::runtime::slot_of;

extern "C" __attribute__((visibility("default"))) int sigaction(int sig, const struct sigaction* act, struct sigaction* old) {
  int i = slot_of(sig);
  if (i < 0 || !chains[i].installed) return REAL(sigaction)(sig, act, old);
  if (old) *old = chains[i].app;
  if (act) chains[i].app = *act;
  return 0;
}

extern "C" __attribute__((visibility("default"))) sighandler_t signal(int sig, sighandler_t handler) {
  int i = slot_of(sig);
  if (i < 0 || !chains[i].installed) return REAL(signal)(sig, handler);
  sighandler_t prev = (chains[i].app.sa_flags & SA_SIGINFO) ? SIG_DFL : chains[i].app.sa_handler;
  chains[i].app = {};
  chains[i].app.sa_handler = handler;
  chains[i].app.sa_flags = SA_RESTART;
  return prev;
}
