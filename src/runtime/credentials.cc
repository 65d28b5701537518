// Per-thread credentials. Capabilities, the capability bounding set, keep-caps,
// securebits and no_new_privs belong to each thread, and prctl/capset change
// only the calling one, while glibc applies set*id/setgroups to every thread
// and aborts the process if one thread fails where another succeeded
// (`setpriv --reuid U --clear-groups` does exactly that sequence). So each such
// change the application makes is made again on strata's writer thread, which
// then always holds the credentials the application's threads hold. A change
// made with the raw system calls (Rust's caps crate) is caught up with just
// before the set*id call that would find the threads disagreeing.
#include <grp.h>
#include <linux/capability.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstring>

#include "runtime/real.h"
#include "runtime/runtime.h"
#include "runtime/writer.h"

extern "C" int capset(cap_user_header_t header, const cap_user_data_t data);

namespace {
STRATA_REAL_DECL(prctl);
STRATA_REAL_DECL(capset);
STRATA_REAL_DECL(setuid);
STRATA_REAL_DECL(setgid);
STRATA_REAL_DECL(seteuid);
STRATA_REAL_DECL(setegid);
STRATA_REAL_DECL(setreuid);
STRATA_REAL_DECL(setregid);
STRATA_REAL_DECL(setresuid);
STRATA_REAL_DECL(setresgid);
STRATA_REAL_DECL(setgroups);

bool is_per_thread_credential(int option, unsigned long arg2) {
  switch (option) {
    case PR_SET_KEEPCAPS:
    case PR_SET_SECUREBITS:
    case PR_CAPBSET_DROP:
    case PR_SET_NO_NEW_PRIVS:
      return true;
    case PR_CAP_AMBIENT:
      return arg2 != PR_CAP_AMBIENT_IS_SET;
    default:
      return false;
  }
}

struct PrctlCall {
  int option;
  unsigned long a2, a3, a4, a5;
};

void prctl_on_writer(void* p) {
  auto* c = static_cast<PrctlCall*>(p);
  syscall(SYS_prctl, c->option, c->a2, c->a3, c->a4, c->a5);
}

struct CapsetCall {
  __user_cap_header_struct header;
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
};

void capset_on_writer(void* p) {
  auto* c = static_cast<CapsetCall*>(p);
  c->header.pid = 0;  // the calling (writer) thread
  syscall(SYS_capset, &c->header, c->data);
}

// Before a set*id call glibc broadcasts to every thread: the writer takes
// the caller's capabilities if they differ (a raw capset did not come
// through the wrapper above). Two capget calls when they agree: programs
// that switch their effective uid per request pay no round trip.
void align_writer_credentials() {
  const int writer = strata::runtime::writer_thread_id();
  if (writer == 0 || writer == static_cast<int>(syscall(SYS_gettid))) return;
  const int saved_errno = errno;
  CapsetCall mine{}, theirs{};
  mine.header = {_LINUX_CAPABILITY_VERSION_3, 0};
  theirs.header = {_LINUX_CAPABILITY_VERSION_3, writer};
  // A writer still starting (-1: its tid not known yet) is given them anyway.
  if (syscall(SYS_capget, &mine.header, mine.data) == 0 &&
      (writer < 0 || syscall(SYS_capget, &theirs.header, theirs.data) != 0 ||
       std::memcmp(mine.data, theirs.data, sizeof(mine.data)) != 0))
    strata::runtime::writer_run(capset_on_writer, &mine);
  errno = saved_errno;
}

}  // namespace

extern "C" {
#pragma GCC visibility push(default)

// The set*id family glibc applies to every thread (a failure on one aborts).
#define STRATA_SETID(ret, name, params, args) \
  ret name params {                            \
    align_writer_credentials();                \
    return REAL(name) args;                    \
  }

int prctl(int option, ...) {
  va_list ap;
  va_start(ap, option);
  PrctlCall c{option, va_arg(ap, unsigned long), va_arg(ap, unsigned long), va_arg(ap, unsigned long),
              va_arg(ap, unsigned long)};
  va_end(ap);
  int r = REAL(prctl)(option, c.a2, c.a3, c.a4, c.a5);
  if (r == 0 && option == PR_SET_SECCOMP && c.a2 == SECCOMP_MODE_STRICT) {
    // The thread may now make no system call but read, write, exit and
    // sigreturn: any other kills it (a descriptor's first lookup, waking the
    // writer). It records nothing more, marked inside the runtime for good;
    // the writer writes what it recorded before.
    if (strata::runtime::ThreadState* t = strata::runtime::t_state) {
      t->busy = 1;
      t->busy_sp = 0;  // no interposer's frame for a longjmp to leave
    }
    strata::runtime::t_done = true;  // and no state made for it later
  }
  if (r == 0 && is_per_thread_credential(option, c.a2)) {
    int saved_errno = errno;
    strata::runtime::writer_run(prctl_on_writer, &c);
    errno = saved_errno;
  }
  return r;
}

int capset(cap_user_header_t header, const cap_user_data_t data) {
  int r = REAL(capset)(header, data);
  // Only a change of the caller's own capabilities (pid 0 or its own tid).
  if (r == 0 && header && data && (header->pid == 0 || header->pid == static_cast<int>(syscall(SYS_gettid)))) {
    int saved_errno = errno;
    CapsetCall c{};
    c.header = *header;
    size_t words = header->version == _LINUX_CAPABILITY_VERSION_1 ? 1 : _LINUX_CAPABILITY_U32S_3;
    std::memcpy(c.data, data, words * sizeof(c.data[0]));
    strata::runtime::writer_run(capset_on_writer, &c);
    errno = saved_errno;
  }
  return r;
}

STRATA_SETID(int, setuid, (uid_t u), (u))
STRATA_SETID(int, setgid, (gid_t g), (g))
STRATA_SETID(int, seteuid, (uid_t u), (u))
STRATA_SETID(int, setegid, (gid_t g), (g))
STRATA_SETID(int, setreuid, (uid_t r, uid_t e), (r, e))
STRATA_SETID(int, setregid, (gid_t r, gid_t e), (r, e))
STRATA_SETID(int, setresuid, (uid_t r, uid_t e, uid_t s), (r, e, s))
STRATA_SETID(int, setresgid, (gid_t r, gid_t e, gid_t s), (r, e, s))
STRATA_SETID(int, setgroups, (size_t n, const gid_t* list), (n, list))
#undef STRATA_SETID

#pragma GCC visibility pop
}  // extern "C"
