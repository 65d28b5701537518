// strata_start / strata_stop: tracing a process the launcher did not start.
// Start sets the environment `strata run` would have set (so children exec'd
// from now on preload libstrata and trace into the same directory), starts
// the runtime and rewrites the GOTs of the loaded objects (got.cc). Stop
// undoes the three in the reverse order and finishes the trace file.
#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "runtime/got.h"
#include "runtime/state.h"
#include "runtime/sys.h"
#include "strata/strata.h"

using namespace strata::runtime;

namespace {

pthread_mutex_t g_attach_mu = PTHREAD_MUTEX_INITIALIZER;
bool g_attached = false;

// An environment variable as it was before strata_start changed it.
struct SavedVar {
  const char* name;
  bool was_set = false;
  std::string value;
};
SavedVar g_saved[] = {{"STRATA_DIR", false, {}}, {"LD_PRELOAD", false, {}}};

void save_env() {
  for (SavedVar& v : g_saved) {
    const char* cur = getenv(v.name);
    v.was_set = cur != nullptr;
    v.value = cur ? cur : "";
  }
}

void restore_env() {
  for (const SavedVar& v : g_saved) {
    if (v.was_set) setenv(v.name, v.value.c_str(), 1);
    else unsetenv(v.name);
  }
}

std::string absolute(const char* dir) {
  if (dir[0] == '/') return dir;
  char cwd[kPathMax];
  if (sys::getcwd(cwd, sizeof(cwd)) <= 0) return dir;
  return std::string(cwd) + "/" + dir;
}

std::string self_path() {
  Dl_info self;
  if (dladdr(reinterpret_cast<void*>(&strata_start), &self) == 0 || !self.dli_fname) return {};
  return self.dli_fname;
}

bool listed(const std::string& list, const std::string& item) {
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t end = list.find_first_of(": ", pos);
    if (end == std::string::npos) end = list.size();
    if (list.compare(pos, end - pos, item) == 0) return true;
    pos = end + 1;
  }
  return false;
}

// What `strata run` sets for the processes it starts: exec'd children of
// this process trace into the same directory.
void export_env(const std::string& dir) {
  setenv("STRATA_DIR", dir.c_str(), 1);
  const std::string lib = self_path();
  const char* pre = getenv("LD_PRELOAD");
  const std::string preload = pre ? pre : "";
  if (!lib.empty() && !listed(preload, lib)) setenv("LD_PRELOAD", (preload.empty() ? lib : lib + ":" + preload).c_str(), 1);
}

}  // namespace

extern "C" {
#pragma GCC visibility push(default)

int strata_start(const char* dir) {
  if (!dir || !*dir) {
    errno = EINVAL;
    return -1;
  }
  const int saved_errno = errno;
  pthread_mutex_lock(&g_attach_mu);
  ensure_initialized();
  if (g_hot.active) {  // under `strata run`, or started already
    pthread_mutex_unlock(&g_attach_mu);
    errno = EBUSY;
    return -1;
  }
  if (!got_usable()) {
    pthread_mutex_unlock(&g_attach_mu);
    errno = ENOTSUP;
    return -1;
  }
  save_env();
  export_env(absolute(dir));
  if (!attach_begin()) {
    restore_env();
    pthread_mutex_unlock(&g_attach_mu);
    errno = EINVAL;
    return -1;
  }
  g_attached = true;
  strata_set_metadata("strata.attach", "strata_start");
  got_patch_all();
  pthread_mutex_unlock(&g_attach_mu);
  errno = saved_errno;
  return 0;
}

int strata_stop(void) {
  const int saved_errno = errno;
  pthread_mutex_lock(&g_attach_mu);
  if (!g_attached) {
    pthread_mutex_unlock(&g_attach_mu);
    errno = EINVAL;
    return -1;
  }
  g_attached = false;
  got_restore_all();
  attach_end();
  restore_env();
  pthread_mutex_unlock(&g_attach_mu);
  errno = saved_errno;
  return 0;
}

int strata_attached(void) { return g_attached && g_hot.active ? 1 : 0; }

#pragma GCC visibility pop
}  // extern "C"
