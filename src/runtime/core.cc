// Lifecycle of the runtime inside a traced process: configuration from the
// environment, start-up, per-thread state, fork, exit and exec.
#include <dlfcn.h>
#include <pthread.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/single_threaded.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <new>

#include "runtime/direct.h"
#include "runtime/live.h"
#include "runtime/real.h"
#include "runtime/state.h"
#include "runtime/sys.h"
#include "runtime/writer.h"

namespace strata::runtime {

constinit HotConfig g_hot;
constinit Globals g;
__thread ThreadState* t_state __attribute__((tls_model("initial-exec"))) = nullptr;
__thread bool t_done __attribute__((tls_model("initial-exec"))) = false;
__thread bool t_vfork_child __attribute__((tls_model("initial-exec"))) = false;
__thread bool t_no_ring __attribute__((tls_model("initial-exec"))) = false;  // its ring could not be mapped
__thread uintptr_t t_setup_sp __attribute__((tls_model("initial-exec"))) = 0;

void signals_install();    // signals.cc
void signals_uninstall();  // signals.cc

namespace {

uint64_t clock_ns(clockid_t id) {
  timespec ts;
  clock_gettime(id, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + ts.tv_nsec;
}

uint64_t env_u64(const char* name, uint64_t dflt) {
  const char* s = getenv(name);
  if (!s || !*s) return dflt;
  char* end = nullptr;
  unsigned long long v = std::strtoull(s, &end, 10);
  if (end == s) return dflt;
  if (*end == 'k' || *end == 'K') v <<= 10;
  if (*end == 'm' || *end == 'M') v <<= 20;
  if (*end == 'g' || *end == 'G') v <<= 30;
  return v;
}

uint64_t env_plain_u64(const char* name, uint64_t dflt) {
  const char* s = getenv(name);
  if (!s || !*s) return dflt;
  char* end = nullptr;
  unsigned long long v = std::strtoull(s, &end, 10);
  return end == s ? dflt : v;
}

int split_prefixes(const char* list, char (*out)[256], int start) {
  int n = start;
  if (!list) return n;
  const char* p = list;
  while (*p && n < kMaxPrefixes) {
    const char* e = std::strchr(p, ':');
    size_t len = e ? static_cast<size_t>(e - p) : std::strlen(p);
    if (len > 0 && len < 256) {
      std::memcpy(out[n], p, len);
      out[n][len] = '\0';
      ++n;
    }
    if (!e) break;
    p = e + 1;
  }
  return n;
}

// True if `layer` is an item of the comma-separated list (case and spaces ignored).
bool layer_listed(const char* list, const char* layer) {
  size_t n = std::strlen(layer);
  for (const char* p = list; *p;) {
    while (*p == ' ' || *p == ',') ++p;
    const char* e = p;
    while (*e && *e != ',') ++e;
    const char* t = e;
    while (t > p && t[-1] == ' ') --t;
    if (static_cast<size_t>(t - p) == n && strncasecmp(p, layer, n) == 0) return true;
    p = e;
  }
  return false;
}

void read_config() {
  Config& c = g.cfg;
  std::memset(&c, 0, sizeof(c));
  for (bool& on : g_hot.layer_on) on = true;
  g_hot.app_on = true;
  const char* dir = getenv("STRATA_DIR");
  std::strncpy(c.dir, dir ? dir : "", sizeof(c.dir) - 1);
  // Relative to where the process started, whatever it chdirs to later.
  if (c.dir[0] && c.dir[0] != '/') {
    char abs[kPathMax];
    long n = sys::getcwd(abs, sizeof(abs));
    if (n > 0 && std::strlen(abs) + 1 + std::strlen(c.dir) < sizeof(c.dir)) {
      std::strcat(abs, "/");
      std::strcat(abs, c.dir);
      std::strcpy(c.dir, abs);
    }
  }
  const char* live = getenv("STRATA_LIVE");
  c.live = live && std::strcmp(live, "1") == 0;
  c.smart_iterations = static_cast<uint32_t>(env_plain_u64("STRATA_SMART_ITERATIONS", 10));
  // 4 MiB (65,536 events) per thread that records: bursts of several threads
  // doing tiny I/O on 2 cores outran 1 MiB rings (measured: ~4,600 drops in
  // 1 run of 5 with 4 threads x 20,000 preads and a fork).
  uint64_t buf = env_u64("STRATA_BUFFER_SIZE", 4 << 20);
  uint64_t pow2 = 16 * sizeof(RawEvent);
  while (pow2 < buf && pow2 < (1ull << 30)) pow2 <<= 1;
  c.buffer_bytes = pow2;
  c.flush_interval_ms = env_plain_u64("STRATA_FLUSH_INTERVAL_MS", 1000);
  if (c.flush_interval_ms == 0) c.flush_interval_ms = 1;
  const char* level = getenv("STRATA_ZSTD_LEVEL");
  c.zstd_level = level && *level ? static_cast<int>(std::strtol(level, nullptr, 10)) : 1;
  const char* hz = getenv("STRATA_TSC_HZ");
  c.tsc_hz = hz ? std::strtod(hz, nullptr) : 0;
  // Default exclusions: kernel pseudo files and the trace itself.
  c.nexclude = split_prefixes("/proc:/sys:/dev", c.exclude, 0);
  if (c.dir[0] && c.nexclude < kMaxPrefixes && std::strlen(c.dir) < 256) std::strcpy(c.exclude[c.nexclude++], c.dir);
  const char* ex = getenv("STRATA_EXCLUDE");
  if (ex && std::strcmp(ex, "none") == 0) c.nexclude = 0;
  else c.nexclude = split_prefixes(ex, c.exclude, c.nexclude);
  c.ninclude = split_prefixes(getenv("STRATA_INCLUDE"), c.include, 0);
  if (const char* layers = getenv("STRATA_LAYERS")) {
    g_hot.layer_on[static_cast<int>(Layer::POSIX)] = layer_listed(layers, "posix");
    g_hot.layer_on[static_cast<int>(Layer::STDIO)] = layer_listed(layers, "stdio");
    g_hot.layer_on[static_cast<int>(Layer::PROC)] = layer_listed(layers, "proc");
    g_hot.app_on = layer_listed(layers, "app");
  }
}

void take_time_anchors() {
  g.start_wall_ns = clock_ns(CLOCK_REALTIME);
  g.start_mono_ns = clock_ns(CLOCK_MONOTONIC);
  g.start_ticks = now_ticks();
}

void setup_clock() {
  g_hot.use_tsc = false;
#if defined(__x86_64__)
  if (g.cfg.tsc_hz > 1e6) {
    g.ns_per_tick_q32 = static_cast<uint64_t>(1e9 * (1 << kTscShift) / g.cfg.tsc_hz * 4294967296.0);
    g_hot.use_tsc = true;
  }
#endif
  take_time_anchors();
}

void register_builtin_names() {
  for (uint32_t i = 1; i < kNumFns; ++i) {
    uint32_t key[4] = {g.strings.intern(kFnInfo[i].name), g.strings.intern(layer_name(kFnInfo[i].layer)),
                       static_cast<uint32_t>(format::EventKind::kComplete), kFnInfo[i].fields};
    g.names.intern(std::string_view(reinterpret_cast<const char*>(key), sizeof(key)),
                   kFnInfo[i].fields | (static_cast<uint32_t>(format::EventKind::kComplete) << 24));
  }
}

void thread_exit(void* p) {
  auto* s = static_cast<ThreadState*>(p);
  t_state = nullptr;
  t_done = true;
  s->status.store(static_cast<int>(ThreadStatus::kExited), std::memory_order_release);
  // A program that starts thread after thread would otherwise map a ring per
  // thread until the writer's next periodic round frees the exited ones
  // (4 MiB of address space each: RLIMIT_AS counts it). Past a few rings the
  // writer is asked to free this one now, for the next thread to take.
  if (g.thread_states.load(std::memory_order_relaxed) > kRingsBeforeRecycling) writer_wake();
}

// A signal handler that forks while its thread is inside the runtime (an
// open interning its path) would wait for a lock this thread holds, for ever.
// The fork goes ahead without the locks then, and the child, whose tables may
// be half updated, traces nothing.
__thread bool t_fork_without_locks __attribute__((tls_model("initial-exec"))) = false;

void fork_prepare() {
  if (!g_hot.active) return;
  if (t_runtime_locks > 0) {
    t_fork_without_locks = true;
    return;
  }
  writer_prepare_fork();
  g.strings.lock_for_fork();
  g.names.lock_for_fork();
  g.contexts.lock_for_fork();
  g.metadata.lock_for_fork();
}

void fork_parent() {
  if (!g_hot.active) return;
  if (t_fork_without_locks) {
    t_fork_without_locks = false;
    fd_offsets_shared();
    return;
  }
  g.metadata.unlock_after_fork();
  g.contexts.unlock_after_fork();
  g.names.unlock_after_fork();
  g.strings.unlock_after_fork();
  writer_parent_after_fork();
  fd_offsets_shared();
}

// The child keeps the interning tables (ids stay valid) but none of the
// parent's buffered events: those are the parent's to write.
void fork_child() {
  if (!g_hot.active) return;
  if (t_fork_without_locks) {
    t_fork_without_locks = false;
    t_runtime_locks = 0;
    set_active(false);
    return;
  }
  g.strings.reset_lock_in_child();
  g.names.reset_lock_in_child();
  g.contexts.reset_lock_in_child();
  g.metadata.reset_lock_in_child();
  g.ppid = g.pid;
  g.pid = sys::getpid();
  for (ThreadState* s = g.threads.load(std::memory_order_acquire); s; s = s->next) {
    // The child's rings are empty (MADV_WIPEONFORK): back to their first pages.
    ring_restart(s->ring, s->ring.head.load(std::memory_order_relaxed));
    s->dropped.store(0, std::memory_order_relaxed);
    if (s != t_state) s->status.store(static_cast<int>(ThreadStatus::kFree), std::memory_order_relaxed);
  }
  if (t_state) t_state->tid = static_cast<uint32_t>(sys::gettid());
  fd_offsets_shared();
  g.ringless_dropped.store(0, std::memory_order_relaxed);
  g.finalized.store(false);
  take_time_anchors();
  live_forget_in_child();
  writer_child_after_fork();
  g_hot.direct = g.direct_eligible;  // the child has one application thread
}

}  // namespace

namespace {

ThreadState* take_free_state() {
  for (ThreadState* it = g.threads.load(std::memory_order_acquire); it; it = it->next) {
    int expected = static_cast<int>(ThreadStatus::kFree);
    if (it->status.compare_exchange_strong(expected, static_cast<int>(ThreadStatus::kLive))) {
      // Freed empty (head == tail): back to its first pages, which the last
      // owner touched, even if it had grown. The writer skips an empty ring.
      ring_restart(it->ring, it->ring.head.load(std::memory_order_relaxed));
      return it;
    }
  }
  return nullptr;
}

bool some_state_exited() {
  for (ThreadState* it = g.threads.load(std::memory_order_acquire); it; it = it->next)
    if (it->status.load(std::memory_order_acquire) == static_cast<int>(ThreadStatus::kExited)) return true;
  return false;
}

// Past a few rings, a new thread waits (5 ms at most) for the writer to free
// an exited thread's ring rather than map one more: a program starting
// thread after thread keeps its address space (RLIMIT_AS) whatever the
// writer's scheduling.
ThreadState* reuse_exited_state() {
  if (g.thread_states.load(std::memory_order_relaxed) <= kRingsBeforeRecycling || !writer_thread_running())
    return nullptr;
  for (int tries = 0; tries < 20 && some_state_exited(); ++tries) {
    const uint32_t seen = g.rings_freed.load(std::memory_order_acquire);
    if (ThreadState* s = take_free_state()) return s;
    writer_wake();
    timespec wait{0, 250000};
    sys::futex_wait(&g.rings_freed, seen, &wait);
  }
  return take_free_state();
}

}  // namespace

namespace {
ThreadState* setup_thread_state();
}  // namespace

ThreadState* first_state_or_drop() {
  if (!t_done) {
    if (ThreadState* s = create_thread_state()) return s;
  }
  if (t_no_ring) g.ringless_dropped.fetch_add(1, std::memory_order_relaxed);
  return nullptr;
}

ThreadState* create_thread_state() {
  if (g.initialized.load(std::memory_order_acquire) != 2 || !g_hot.active) return nullptr;
  // A signal handler that interrupts this setup (the thread's first event)
  // and makes a call finds t_state still null: it would set up a second
  // state, and the one this frame then publishes hid it, live and mapped for
  // ever (4 MiB of address space per thread, Edges.
  // AHandlerDuringAThreadsSetupLeavesNoRingBehind). The handler's events
  // are counted as dropped instead. A longjmp out of the handler clears the
  // mark (signals.cc), for the thread's next call to set it up again.
  if (t_setup_sp) {
    g.ringless_dropped.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  t_setup_sp = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  std::atomic_signal_fence(std::memory_order_seq_cst);
  ThreadState* s = setup_thread_state();
  std::atomic_signal_fence(std::memory_order_seq_cst);
  t_setup_sp = 0;
  return s;
}

namespace {
ThreadState* setup_thread_state() {
  ThreadState* s = take_free_state();
  if (!s) {
    const int saved_errno = errno;
    s = reuse_exited_state();
    errno = saved_errno;
  }
  if (!s) {
    const int saved_errno = errno;  // a refused mapping must not show in the program's errno
    void* mem = sys::map(sizeof(ThreadState));
    void* slots = sys::map_ring(g.cfg.buffer_bytes);
    if (!mem || !slots) {
      if (mem) sys::unmap(mem, sizeof(ThreadState));
      if (slots) sys::unmap(slots, g.cfg.buffer_bytes);
    }
    errno = saved_errno;  // also advice an older kernel refuses (map_ring)
    if (!mem || !slots) {  // an address-space limit: the thread's events are counted as dropped
      t_done = true;
      t_no_ring = true;
      return nullptr;
    }
    s = new (mem) ThreadState();
    s->ring.slots = static_cast<RawEvent*>(slots);
    s->ring.max_capacity = g.cfg.buffer_bytes / sizeof(RawEvent);
    ring_restart(s->ring, 0);
    g.thread_states.fetch_add(1, std::memory_order_relaxed);
    ThreadState* head = g.threads.load(std::memory_order_relaxed);
    do {
      s->next = head;
    } while (!g.threads.compare_exchange_weak(head, s, std::memory_order_release, std::memory_order_relaxed));
  }
  s->tid = static_cast<uint32_t>(sys::gettid());
  // A thread strata did not see created (C11 thrd_create, raw clone): no
  // interposer may bypass glibc's cancellation bracket from now on (direct.h).
  if (s->tid != static_cast<uint32_t>(g.pid)) g_hot.direct = false;
  s->busy = 0;
  s->ctx = 0;
  s->ntags = 0;
  s->depth = 0;
  s->name_sid.store(0, std::memory_order_relaxed);
  t_state = s;
  pthread_setspecific(g.thread_key, s);
  return s;
}
}  // namespace

void wake_writer_if_behind(ThreadState* t, uint64_t head) {
  if (ring_wants_writer(t->ring, head)) writer_wake();
}

// The thread is marked inside the runtime while the event is pushed (the
// strata_* API calls this unmarked): a signal handler's interposed call
// there would push into the same ring between the head's load and store, or
// in the middle of its growth, and one of the two events would be lost or
// read from a slot never written.
void record_event(ThreadState* t, uint32_t name, uint64_t t0, uint64_t t1, int fd, uint32_t path,
                  int64_t offset, int64_t size, int64_t ret, int err) {
  InternalScope pushing;
  push_event(t, make_event(name, t0, t1, fd, path, offset, size, ret, err, t->ctx));
}

bool direct::eligible() {
  if (!direct::kSupported) return false;
  const char* env = getenv("STRATA_DIRECT_SYSCALLS");
  if (env && std::strcmp(env, "0") == 0) return false;
  void* libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
  if (!libc) return false;
  bool ok = true;
  for (const char* name : {"read", "write", "pread", "pread64", "pwrite", "pwrite64"}) {
    void* own = dlsym(libc, name);
    ok = ok && own != nullptr && dlsym(RTLD_NEXT, name) == own;
  }
  dlclose(libc);
  return ok;
}

namespace {
bool g_recording = true;  // false while the live mode is off
void store_record_flags() {
  const bool on = g_hot.active && g_recording;
  for (int l = 0; l < 3; ++l) g_hot.record[l].store(on && g_hot.layer_on[l], std::memory_order_relaxed);
  g_hot.app_record.store(on && g_hot.app_on, std::memory_order_relaxed);
}
}  // namespace

void set_active(bool on) {
  g_hot.active = on;
  store_record_flags();
}

void set_recording(bool recording) {
  g_recording = recording;
  store_record_flags();
}

namespace {
// quick_exit (process.cc) leaves through glibc's own _exit, past strata's.
void finish_at_quick_exit() {
  if (!is_vfork_child()) finalize_process(0, Fn::kNone);
}

// Process-wide hooks made once, whichever start comes first.
void install_process_hooks() {
  static bool installed = false;
  if (installed) return;
  installed = true;
  pthread_key_create(&g.thread_key, thread_exit);
  pthread_atfork(fork_prepare, fork_parent, fork_child);
  at_quick_exit(finish_at_quick_exit);
}

// Starts recording into g.cfg.dir: the first time with a new writer, after a
// strata_stop with the same writer and interning tables (ids stay valid; a
// new file gets every definition again).
void begin_tracing() {
  static bool writer_made = false;
  g.pid = sys::getpid();
  g.ppid = sys::getppid();
  setup_clock();
  register_builtin_names();
  refresh_cwd();
  install_process_hooks();
  const bool single_threaded = __libc_single_threaded;
  g.direct_eligible = direct::eligible();
  g.finalized.store(false, std::memory_order_release);
  live_init_mode();
  if (!writer_made) writer_start();
  else writer_restart();
  writer_made = true;
  g_hot.direct = single_threaded && g.direct_eligible;
  signals_install();
  set_active(true);
}

// The probe's failure must not leave ENOMEM in the errno the program reads
// after the call that started the runtime.
bool address_space_for_tracing() {
  constexpr size_t kNeed = size_t{48} << 20;
  const int saved_errno = errno;
  void* probe = ::mmap(nullptr, kNeed, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  errno = saved_errno;
  if (probe == MAP_FAILED) return false;
  ::munmap(probe, kNeed);
  return true;
}
}  // namespace

void ensure_initialized() {
  int expected = 0;
  if (!g.initialized.compare_exchange_strong(expected, 1)) return;
  t_done = true;  // nothing recorded while starting up
  resolve_all_real();
  read_config();
  const char* disabled = getenv("STRATA_DISABLE");
  if (g.cfg.dir[0] == '\0' || (disabled && *disabled == '1')) {
    t_done = false;
    g.initialized.store(2, std::memory_order_release);
    return;
  }
  // Memory strata cannot have (a low address-space limit, `ulimit -v`) costs
  // the trace, never the program: the runtime stays inactive. Asked first of
  // the kernel (the buffers, the first ring and the writer's stack take ~37
  // MB of address space): under a very low limit even the exception that
  // would report it cannot be allocated.
  if (!address_space_for_tracing()) {
    t_done = false;
    g.initialized.store(2, std::memory_order_release);
    return;
  }
  try {
    begin_tracing();
  } catch (const std::bad_alloc&) {
    set_active(false);
  }
  t_done = false;
  g.initialized.store(2, std::memory_order_release);
}

bool attach_begin() {
  ensure_initialized();
  if (g_hot.active || g.initialized.load(std::memory_order_acquire) != 2) return false;
  const bool was_done = t_done;
  t_done = true;
  read_config();
  // Descriptors opened or closed while nothing was traced: ask /proc again.
  g.fds.clear_all();
  for (ThreadState* s = g.threads.load(std::memory_order_acquire); s; s = s->next) {
    // Events a thread recorded while the previous trace was being finished.
    s->ring.tail.store(s->ring.head.load(std::memory_order_acquire), std::memory_order_release);
    s->ring.cached_tail = s->ring.tail.load(std::memory_order_relaxed);
    s->dropped.store(0, std::memory_order_relaxed);
  }
  const bool ok = g.cfg.dir[0] != '\0';
  if (ok) begin_tracing();
  t_done = was_done;
  return ok;
}

void attach_end() {
  if (!g_hot.active || is_vfork_child()) return;
  set_active(false);
  {
    InternalScope guard;
    writer_flush(true);
  }
  writer_stop();
  signals_uninstall();
}

void flush_all(bool final_flush) {
  if (!g_hot.active) return;
  InternalScope guard;
  writer_flush(final_flush);
}

void finalize_process(int exit_status, Fn how) {
  if (!g_hot.active || g.finalized.load(std::memory_order_acquire)) return;
  const bool proc_on = g_hot.record[static_cast<int>(Layer::PROC)].load(std::memory_order_relaxed);
  live_set_exit_status(exit_status);
  if (ThreadState* t = thread_state(); t && how != Fn::kNone && proc_on) {
    uint64_t now = now_ticks();
    record_event(t, static_cast<uint32_t>(how), now, now, -1, 0, -1, -1, exit_status, 0);
  }
  flush_all(true);
}

bool is_vfork_child() { return g_hot.active && sys::getpid() != g.pid; }

void before_exec() {
  if (!g_hot.active || is_vfork_child()) return;
  flush_all(true);
  live_end(true);
}

void after_failed_exec() {
  if (!g_hot.active || is_vfork_child()) return;
  g.finalized.store(false, std::memory_order_release);
  live_exec_failed();
}

namespace {
__attribute__((constructor(101))) void runtime_constructor() { ensure_initialized(); }

__attribute__((destructor(101))) void runtime_destructor() {
  if (!g_hot.active || is_vfork_child()) return;
  finalize_process(0, Fn::kNone);
  writer_stop();
  set_active(false);
}
}  // namespace

}  // namespace strata::runtime

namespace strata::runtime {
void* resolve_next(const char* name) { return dlsym(RTLD_NEXT, name); }

extern "C" {
extern RealResolver __start_strata_real[] __attribute__((visibility("hidden")));
extern RealResolver __stop_strata_real[] __attribute__((visibility("hidden")));
}

void resolve_all_real() {
  for (RealResolver* r = __start_strata_real; r != __stop_strata_real; ++r) (*r)();
  // A name this libc lacks leaves an error the program's dlerror() would read.
  (void)dlerror();
}
}  // namespace strata::runtime
