#include "runtime/writer.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/utsname.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <new>
#include <string_view>
#include <vector>

#include "format/encoder.h"
#include "runtime/live.h"
#include "runtime/profile.h"
#include "runtime/smart.h"
#include "runtime/state.h"
#include "runtime/sys.h"

namespace strata::runtime {
namespace {

namespace fmt = strata::format;

struct WriterTask {
  void (*fn)(void*);
  void* arg;
};

struct WriterState {
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  int fd = -1;          // the trace file while a FileLease holds it, else -1
  int private_fd = -1;  // the writer thread's own descriptor (its private table)
  bool fd_transient = false;  // fd was opened by path for one lease: check identity
  bool raised_xfsz = false;   // a write of this lease failed with EFBIG (the kernel sent SIGXFSZ)
  bool have_file = false;     // the file was created
  bool private_table = false; // the writer thread has its own descriptor table
  int create_errno = 0;       // why the file could not be created
  dev_t dev = 0;
  ino_t ino = 0;
  uint64_t offset = 0;
  std::vector<fmt::IndexEntry>* index = nullptr;
  fmt::EventsEncoder* encoder = nullptr;
  fmt::BlockFramer* framer = nullptr;
  fmt::ByteSink* payload = nullptr;
  uint32_t emitted_strings = 0, emitted_names = 0, emitted_contexts = 0, emitted_metadata = 0;
  uint64_t events_written = 0;
  uint64_t write_dropped = 0;       // events lost to failed writes
  uint64_t last_stats_written = ~0ull, last_stats_dropped = ~0ull;
  uint64_t last_periodic_ns = 0;
  uint64_t profile_events = ~0ull, profile_ns = 0;  // last PROFILE snapshot
  pthread_t thread{};
  std::atomic<bool> thread_running{false};
  std::atomic<uint32_t> wake_word{0};
  // The futex word the writer sleeps on: wake_word, or under --live the word
  // in this process's live slot, which controllers in other processes bump.
  std::atomic<std::atomic<uint32_t>*> wake_ptr{nullptr};
  // The thread the PROC "mode" events are written for; 0 until the writer
  // thread runs (read by application threads: credentials.cc).
  std::atomic<uint32_t> writer_tid{0};
  std::atomic<bool> stop{false};
  // No writer thread any more (the main thread left through pthread_exit):
  // application threads drain their rings themselves (writer_wake).
  std::atomic<bool> app_threads_flush{false};
  // The writer thread took its own fs context (setns into a mount namespace
  // needs the caller's unshared: process.cc waits for it).
  std::atomic<bool> fs_private{false};
  // 1 once a new writer thread has made its start-up allocations (writer_start).
  std::atomic<uint32_t> started{0};
  // Flush requests: a ticket count (high bits) and the flags asked for since
  // the writer last took them (kFlushBit, kFinalBit). The writer takes the
  // flags and the ticket count at once and, when done, publishes that count
  // in flush_done_seq: a requester waits until its own ticket is covered, so
  // a final flush requested during another flush is never taken as done.
  std::atomic<uint64_t> flush_requested{0};
  std::atomic<uint32_t> flush_done_seq{0};
  std::atomic<WriterTask*> task{nullptr};  // writer_run: a call to make on the writer thread
  std::atomic<uint32_t> task_done_seq{0};
  pthread_mutex_t task_mu = PTHREAD_MUTEX_INITIALIZER;
  char path[kPathMax] = {};
};
WriterState w;
std::mutex pause_mu;  // writer_pause .. writer_resume, writer_stop_for_main_exit
constexpr int kHighFd = 512;  // where a transient trace descriptor is moved
constexpr uint64_t kFlushBit = 1, kFinalBit = 2, kFlagBits = 3, kTicketShift = 2;
// How long an application thread waits for the writer thread to flush at
// exit, exec or a fatal signal, or to run a task.
constexpr int kFlushWaitMs = 10000;
__thread bool t_is_writer __attribute__((tls_model("initial-exec"))) = false;

// The writer's mutex, counted in t_runtime_locks (intern.h) while held.
// Counted before it is taken and after it is released: a signal handler
// that forks in between must find it counted (core.cc, fork_prepare).
// t_wants_writer says the same to a handler that flushes (writer_flush).
__thread bool t_wants_writer __attribute__((tls_model("initial-exec"))) = false;
void lock_writer() {
  ++t_runtime_locks;
  t_wants_writer = true;
  pthread_mutex_lock(&w.mu);
}
bool try_lock_writer() {
  ++t_runtime_locks;
  t_wants_writer = true;
  if (pthread_mutex_trylock(&w.mu) == 0) return true;
  t_wants_writer = false;
  --t_runtime_locks;
  return false;
}
void unlock_writer() {
  pthread_mutex_unlock(&w.mu);
  t_wants_writer = false;
  --t_runtime_locks;
}

uint64_t mono_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + ts.tv_nsec;
}

bool is_trace_file(int fd) {
  struct stat st;
  return w.have_file && sys::fstat(fd, &st) == 0 && st.st_dev == w.dev && st.st_ino == w.ino;
}

size_t read_small_file(const char* path, char* buf, size_t cap) {
  int fd = sys::open(path, O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return 0;
  size_t n = 0;
  while (n < cap) {
    long r = sys::read(fd, buf + n, cap - n);
    if (r <= 0) break;
    n += static_cast<size_t>(r);
  }
  sys::close(fd);
  return n;
}

// Whether SIGXFSZ is pending on this thread itself, not only on the process
// (sigpending tells the union): the SigPnd line of /proc/thread-self/status.
// Asked only when one is pending as a lease starts; unknown counts as yes.
__attribute__((noinline)) bool xfsz_pending_on_this_thread() {  // its 4 KiB frame only when asked
  char buf[4096];
  size_t n = read_small_file("/proc/thread-self/status", buf, sizeof(buf) - 1);
  buf[n] = '\0';
  const char* line = std::strstr(buf, "\nSigPnd:");
  if (!line) return true;
  unsigned long long mask = 0;  // hex digits after a tab (not strtoull: this runs in signal handlers)
  for (const char* c = line + 8; *c; ++c) {
    if (*c == '\t' || *c == ' ') continue;
    const int digit = *c >= '0' && *c <= '9' ? *c - '0' : *c >= 'a' && *c <= 'f' ? *c - 'a' + 10 : -1;
    if (digit < 0) break;
    mask = mask << 4 | static_cast<unsigned>(digit);
  }
  return (mask >> (SIGXFSZ - 1)) & 1;
}

// The descriptor one flush writes through. The writer thread keeps the file
// open in its private descriptor table, where the application can neither
// see nor close nor replace it. Any other thread (no writer thread could be
// started, or the kernel has no private tables) opens the file by path for
// the flush only, checks it is the trace file, and checks again before every
// write, so a descriptor the application closed and reused behind strata's
// back is never written. SIGXFSZ stays blocked meanwhile: a file size limit
// costs the trace, never the program.
class FileLease {
 public:
  FileLease() {
    if (t_is_writer && w.private_fd >= 0) {
      w.fd = w.private_fd;
      return;
    }
    transient_ = true;
    sigset_t xfsz;
    sigemptyset(&xfsz);
    sigaddset(&xfsz, SIGXFSZ);
    pthread_sigmask(SIG_BLOCK, &xfsz, &saved_mask_);
    sigset_t pending;
    sigpending(&pending);
    xfsz_merges_ = sigismember(&pending, SIGXFSZ) && xfsz_pending_on_this_thread();
    w.raised_xfsz = false;
    w.fd = -1;  // opened by open_transient() at the first write of this lease
    w.fd_transient = true;
  }
  // The SIGXFSZ a failed write raised is taken back, and only that one: the
  // kernel sends it to this thread, and a wait takes a thread's own pending
  // signal before the process's, so a SIGXFSZ sent to the process meanwhile
  // (kill) stays pending for the program. Taken back only if it did not
  // merge into one already pending on this thread (the program's, blocked).
  ~FileLease() {
    if (!transient_) return;
    // Closed only if it is still the trace file: the program may have closed
    // and reused the number meanwhile (raw close system calls).
    if (w.fd >= 0 && is_trace_file(w.fd)) sys::close(w.fd);
    w.fd = -1;
    w.fd_transient = false;
    if (w.raised_xfsz && !xfsz_merges_) {
      sigset_t xfsz;
      sigemptyset(&xfsz);
      sigaddset(&xfsz, SIGXFSZ);
      timespec zero{0, 0};
      sigtimedwait(&xfsz, nullptr, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &saved_mask_, nullptr);
  }
  FileLease(const FileLease&) = delete;
  FileLease& operator=(const FileLease&) = delete;

 private:
  bool transient_ = false;
  bool xfsz_merges_ = false;
  sigset_t saved_mask_{};
};

// Appends bytes at the end of the blocks written so far; on failure truncates
// back so the file stays a sequence of whole blocks, and returns false.
// Opens the trace file by path for a transient lease, as a high descriptor
// (rarely one a program counts on getting), and checks it is the file.
void open_transient() {
  if (!w.have_file) return;
  int fd = sys::open(w.path, O_WRONLY | O_CLOEXEC, 0);
  if (fd < 0) return;
  int high = sys::dup_at_least(fd, kHighFd);
  if (high >= 0) {
    sys::close(fd);
    fd = high;
  }
  if (!is_trace_file(fd)) {
    sys::close(fd);
    return;
  }
  w.fd = fd;
}

// A writer thread started again for a file it had open: the previous
// thread's private descriptor went with it. Without one, each flush opens
// the file by path (FileLease).
void reopen_private() {
  int fd = sys::open(w.path, O_WRONLY | O_CLOEXEC, 0);
  if (fd < 0) return;
  if (!is_trace_file(fd)) {
    sys::close(fd);
    return;
  }
  w.private_fd = fd;
}

bool append(const void* data, size_t n) {
  if (w.fd < 0 && w.fd_transient) open_transient();
  if (w.fd < 0) return false;
  const auto* p = static_cast<const uint8_t*>(data);
  size_t done = 0;
  while (done < n) {
    if (w.fd_transient && !is_trace_file(w.fd)) return false;
    long r = sys::pwrite(w.fd, p + done, n - done, static_cast<long>(w.offset + done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && errno == EFBIG) w.raised_xfsz = true;
    if (r <= 0) {
      sys::ftruncate(w.fd, static_cast<long>(w.offset));
      return false;
    }
    done += static_cast<size_t>(r);
  }
  w.offset += n;
  return true;
}

bool write_block(fmt::BlockType type, uint32_t count, bool compress, size_t compress_prefix = SIZE_MAX) {
  if (!w.framer->frame(type, count, w.payload->bytes(), compress, compress_prefix)) return false;
  uint64_t at = w.offset;
  if (!append(w.framer->data(), w.framer->size())) return false;
  w.index->push_back({static_cast<uint8_t>(type), at, count});
  return true;
}

int64_t rank_from_env() {
  for (const char* v : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "MV2_COMM_WORLD_RANK", "SLURM_PROCID", "RANK"}) {
    if (const char* s = getenv(v)) return std::strtoll(s, nullptr, 10);
  }
  return -1;
}

void write_process_block() {
  static char cmdline[16384], exe[kPathMax];
  size_t n = read_small_file("/proc/self/cmdline", cmdline, sizeof(cmdline));
  std::vector<std::string_view> argv;
  for (size_t i = 0; i < n;) {
    size_t len = strnlen(cmdline + i, n - i);
    argv.emplace_back(cmdline + i, len);
    i += len + 1;
  }
  long e = sys::readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  exe[e > 0 ? e : 0] = '\0';
  utsname u{};
  uname(&u);
  fmt::ProcessRecord p;
  p.pid = g.pid;
  p.ppid = g.ppid;
  p.rank = rank_from_env();
  p.start_wall_ns = g.start_wall_ns;
  p.start_mono_ns = g.start_mono_ns;
  p.start_ticks = g.start_ticks;
  p.tick_q32 = g_hot.use_tsc ? g.ns_per_tick_q32 : 0;
  p.hostname = u.nodename;
  p.exe = exe;
  p.version = STRATA_VERSION_STRING;
  p.mode = fmt::kLiveModeNames[static_cast<uint32_t>(live_mode())];
  p.argv = std::move(argv);
  w.payload->clear();
  fmt::encode_process(p, *w.payload);
  write_block(fmt::BlockType::kProcess, 0, false);
}

// Creates this process's trace file and writes its header and PROCESS block.
// On the writer thread the descriptor stays open in its private table.
bool open_file() {
  utsname u{};
  uname(&u);
  sys::mkdir(g.cfg.dir, 0755);
  std::snprintf(w.path, sizeof(w.path), "%s/%s-%d-%llu%s", g.cfg.dir, u.nodename, g.pid,
                static_cast<unsigned long long>(g.start_mono_ns), fmt::kFileSuffix);
  w.offset = 0;
  w.index->clear();
  w.have_file = false;
  int fd = sys::open(w.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  w.create_errno = fd < 0 ? errno : 0;
  if (fd < 0) return false;
  struct stat st;
  if (sys::fstat(fd, &st) != 0) {
    sys::close(fd);
    return false;
  }
  w.dev = st.st_dev;
  w.ino = st.st_ino;
  w.have_file = true;
  if (t_is_writer && w.private_table) w.private_fd = fd;
  else sys::close(fd);
  FileLease lease;
  fmt::FileHeader h = fmt::make_file_header();
  if (!append(&h, sizeof(h))) return false;
  write_process_block();
  return true;
}

constexpr size_t kDictBlockBytes = 4u << 20;

// A DICT block could not be written: emit everything again next time (ids
// repeat harmlessly; readers take the last definition, which is the same).
bool fail_dict() {
  w.emitted_strings = w.emitted_names = w.emitted_contexts = w.emitted_metadata = 0;
  return false;
}

// Emits DICT entries published since the last call. Returns false if the
// block could not be written (the entries will be emitted again next time).
bool emit_dict() {
  // Contexts and names reference strings published before them, so read their
  // counts first: every string they use is then within the string count.
  uint32_t nmeta = g.metadata.published();
  uint32_t nctx = g.contexts.published();
  uint32_t nnames = g.names.published();
  uint32_t nstr = g.strings.published();
  fmt::ByteSink& out = *w.payload;
  uint32_t count = 0;
  // Writes what `out` holds as one block once it is large (readers cap a
  // block's payload), or when `last` says the entries are all there.
  auto cut = [&](bool last) {
    if (count == 0 || (!last && out.size() < kDictBlockBytes)) return true;
    bool ok = write_block(fmt::BlockType::kDict, count, true);
    out.clear();
    count = 0;
    return ok;
  };
  out.clear();
  while (w.emitted_strings < nstr) {
    uint32_t id = ++w.emitted_strings;
    const Interner::Entry& e = g.strings.get(id);
    fmt::dict_string(out, id, std::string_view(e.data, e.len));
    ++count;
    if (!cut(false)) return fail_dict();
  }
  while (w.emitted_names < nnames) {
    uint32_t id = ++w.emitted_names;
    const Interner::Entry& e = g.names.get(id);
    uint32_t sids[2];
    std::memcpy(sids, e.data, sizeof(sids));
    fmt::dict_name(out, id, sids[0], sids[1], e.aux & 0xffffff, static_cast<fmt::EventKind>(e.aux >> 24));
    ++count;
    if (!cut(false)) return fail_dict();
  }
  while (w.emitted_contexts < nctx) {
    uint32_t id = ++w.emitted_contexts;
    const Interner::Entry& e = g.contexts.get(id);
    size_t n = e.len / sizeof(TagSlot);
    fmt::TagEntry tags[kMaxTags];
    for (size_t i = 0; i < n && i < kMaxTags; ++i) {
      TagSlot t;
      std::memcpy(&t, e.data + i * sizeof(TagSlot), sizeof(t));
      tags[i] = {t.key_sid, t.is_int != 0, t.value};
    }
    fmt::dict_context(out, id, tags, n);
    ++count;
    if (!cut(false)) return fail_dict();
  }
  while (w.emitted_metadata < nmeta) {
    uint32_t id = ++w.emitted_metadata;
    uint32_t kv[2];
    std::memcpy(kv, g.metadata.get(id).data, sizeof(kv));
    fmt::dict_metadata(out, id, kv[0], kv[1]);
    ++count;
  }
  if (!cut(true)) return fail_dict();
  return true;
}

// The thread may have been named (its name interned) after emit_dict took
// the count of strings to write: the name's string goes first then, or the
// THREAD entry would name a string the file does not define (and no reader
// could read the file).
void emit_thread_name(ThreadState* s, uint32_t& emitted_name) {
  uint32_t sid = s->name_sid.load(std::memory_order_relaxed);
  if (sid == emitted_name) return;
  if (sid > w.emitted_strings && !emit_dict()) return;
  if (sid > w.emitted_strings) return;  // not published yet: the next drain names it
  w.payload->clear();
  fmt::dict_thread(*w.payload, s->tid, sid);
  if (write_block(fmt::BlockType::kDict, 1, false)) emitted_name = sid;
}

// Encodes and writes the events [tail, tail + n) of one ring as one block.
void write_events(ThreadState* s, const RingView& v, uint64_t tail, uint64_t n) {
  const size_t prefix = w.encoder->encode(s->tid, v.slots, v.mask, tail - v.base, n, *w.payload);
  if (write_block(fmt::BlockType::kEvents, static_cast<uint32_t>(n), true, prefix)) {
    w.events_written += n;
  } else {
    w.write_dropped += n;
  }
}

// Writer-side bookkeeping per thread state (thread names already emitted).
struct Seen {
  ThreadState* s;
  uint32_t emitted_name;
};
std::vector<Seen>* seen = nullptr;

uint32_t& emitted_name_of(ThreadState* s) {
  for (auto& x : *seen)
    if (x.s == s) return x.emitted_name;
  seen->push_back({s, 0});
  return seen->back().emitted_name;
}

std::vector<RawEvent>* smart_scratch = nullptr;

// Writes what smart mode keeps (smart.h) for thread s, in blocks. `consumed`
// ring events are accounted as recorded (the counters saw them); the
// `iteration` events smart mode adds count as written too.
void write_kept(ThreadState* s, const std::vector<RawEvent>& kept, uint64_t consumed) {
  w.events_written += consumed;
  for (const RawEvent& e : kept)
    if (e.name == static_cast<uint32_t>(Fn::iteration)) ++w.events_written;
  const size_t max_block = w.encoder->max_events();
  for (size_t at = 0; at < kept.size(); at += max_block) {
    const size_t n = std::min(max_block, kept.size() - at);
    const size_t prefix = w.encoder->encode(s->tid, kept.data() + at, n, *w.payload);
    if (!write_block(fmt::BlockType::kEvents, static_cast<uint32_t>(n), true, prefix)) {
      w.write_dropped += n;
      w.events_written -= n;
    }
  }
}

std::vector<RawEvent>& smart_scratch_cleared() {
  if (!smart_scratch) smart_scratch = new std::vector<RawEvent>();
  smart_scratch->clear();
  return *smart_scratch;
}

// Writes the events of [tail, tail + n) that smart mode keeps.
void write_smart_events(ThreadState* s, const RingView& v, uint64_t tail, uint64_t n) {
  std::vector<RawEvent>& kept = smart_scratch_cleared();
  smart_filter(s, v, tail, n, kept);
  write_kept(s, kept, n);
}

// Ends smart mode's stream of s (see smart_finish).
void finish_smart_thread(ThreadState* s) {
  std::vector<RawEvent>& kept = smart_scratch_cleared();
  smart_finish(s, kept);
  if (!kept.empty() && w.have_file && emit_dict()) write_kept(s, kept, 0);
}

void finish_smart_threads() {
  for (ThreadState* s : smart_threads()) finish_smart_thread(s);
}

// Feeds [tail, head) of a ring to the counter engine and the live status.
void consume(const RingView& v, uint64_t tail, uint64_t head) {
  const bool engine = live_feeds_engine(), live = g.cfg.live;
  for (; tail != head; ++tail) {
    const RawEvent& e = v.at(tail);
    if (engine) profile_consume(e);
    if (live) live_count(e);
  }
}

// Drains every ring that holds events (all) or is at least half full, into
// the trace and the counters as the mode says (live.h).
void drain(bool all) {
  const LiveMode mode = live_mode();
  const bool encode = mode == LiveMode::kTrace || mode == LiveMode::kSmart;
  // Past a few rings, those of exited threads are written out whatever they
  // hold, so that they are free for the next threads (thread_exit, core.cc).
  const bool recycle = g.thread_states.load(std::memory_order_relaxed) > kRingsBeforeRecycling;
  for (ThreadState* s = g.threads.load(std::memory_order_acquire); s; s = s->next) {
    int status = s->status.load(std::memory_order_acquire);
    if (status == static_cast<int>(ThreadStatus::kFree)) continue;
    Ring& r = s->ring;
    uint64_t head = r.head.load(std::memory_order_acquire);
    uint64_t tail = r.tail.load(std::memory_order_relaxed);
    const RingView v = ring_view(r);
    const bool exited = status == static_cast<int>(ThreadStatus::kExited);
    if ((all || head - tail >= v.capacity() / 2 || (recycle && exited)) && head != tail) {
      bool dict_ok = w.have_file && emit_dict();
      if (dict_ok) emit_thread_name(s, emitted_name_of(s));
      consume(v, tail, head);
      if (!encode) {
        w.events_written += head - tail;
        tail = head;
        r.tail.store(tail, std::memory_order_release);
      }
      uint64_t max_block = w.encoder ? w.encoder->max_events() : 0;
      while (tail != head) {
        uint64_t n = head - tail < max_block ? head - tail : max_block;
        if (!dict_ok) w.write_dropped += n;
        else if (mode == LiveMode::kSmart) write_smart_events(s, v, tail, n);
        else write_events(s, v, tail, n);
        tail += n;
        r.tail.store(tail, std::memory_order_release);
      }
    }
    if (status == static_cast<int>(ThreadStatus::kExited) && r.head.load(std::memory_order_acquire) == tail) {
      finish_smart_thread(s);
      emitted_name_of(s) = 0;
      s->status.store(static_cast<int>(ThreadStatus::kFree), std::memory_order_release);
      if (recycle) {  // a new thread may be waiting for a ring (core.cc)
        g.rings_freed.fetch_add(1, std::memory_order_release);
        sys::futex_wake_all(&g.rings_freed);
      }
    }
  }
}

void write_stats_if_changed(bool force) {
  uint64_t dropped = writer_dropped_total();
  if (!force && dropped == w.last_stats_dropped && w.events_written == w.last_stats_written) return;
  w.payload->clear();
  fmt::encode_stats(*w.payload, w.events_written, dropped);
  if (write_block(fmt::BlockType::kStats, 0, false)) {
    w.last_stats_written = w.events_written;
    w.last_stats_dropped = dropped;
  }
}

void write_footer() {
  uint64_t footer_at = w.offset;
  w.payload->clear();
  fmt::encode_footer(*w.payload, *w.index, w.events_written, writer_dropped_total(), footer_at);
  write_block(fmt::BlockType::kFooter, 0, false);
}

// Periodic snapshots only when counters moved and at most every 10 s: each
// snapshot holds every record, and the last one wins.
void write_profile(bool final_flush) {
  uint64_t now = mono_ns();
  if (!final_flush && (w.events_written == w.profile_events || now - w.profile_ns < 10'000'000'000ull)) return;
  w.profile_events = w.events_written;
  w.profile_ns = now;
  if (!emit_dict()) return;
  uint32_t records = 0;
  profile_encode(*w.payload, records);
  write_block(fmt::BlockType::kProfile, records, true);
}

// This process's events are lost (no trace file): say so where the tools look.
void report_unwritable() {
  char path[kPathMax + 64], exe[kPathMax], line[kPathMax + 160];
  std::snprintf(path, sizeof(path), "%s/%s", g.cfg.dir, fmt::kUnwritableLog);
  long e = sys::readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  exe[e > 0 ? e : 0] = '\0';
  int n = std::snprintf(line, sizeof(line), "pid=%d ppid=%d errno=%d lost=%llu exe=%s\n", g.pid, g.ppid,
                        w.create_errno, static_cast<unsigned long long>(writer_dropped_total()), exe);
  int fd = sys::open(path, O_WRONLY | O_APPEND | O_CLOEXEC, 0);
  if (fd < 0) return;
  if (n > 0) sys::write(fd, line, std::min<size_t>(static_cast<size_t>(n), sizeof(line) - 1));
  sys::close(fd);
}

// The PROC "mode" event marking a switch (docs/live.md), written for the
// writer's own thread: the application threads' rings may still hold earlier
// events, and each thread's events must stay in time order.
void write_mode_event(LiveMode mode) {
  if (!w.have_file || !g_hot.layer_on[static_cast<int>(Layer::PROC)] || !emit_dict()) return;
  const uint64_t now = now_ticks();
  const RawEvent e = make_event(static_cast<uint32_t>(Fn::mode), now, now, -1, 0, -1, -1,
                                static_cast<int64_t>(mode), 0, 0);
  const size_t prefix = w.encoder->encode(w.writer_tid.load(std::memory_order_relaxed), &e, 1, *w.payload);
  if (write_block(fmt::BlockType::kEvents, 1, true, prefix)) ++w.events_written;
}

void flush_locked(bool final_flush) {
  drain(true);
  if (final_flush) finish_smart_threads();
  live_publish(writer_dropped_total());
  if (final_flush) live_end(false);
  if (final_flush && !w.have_file && w.create_errno != 0) report_unwritable();
  if (!w.have_file) return;
  // Under --live the image's end is a mode event too: the last interval
  // gets its length even when that mode wrote no events.
  if (final_flush && g.cfg.live) write_mode_event(live_mode());
  if (live_feeds_engine()) write_profile(final_flush);
  write_stats_if_changed(final_flush);
  if (final_flush) write_footer();
}

// Memory the writer cannot have (the program lowered its address-space limit
// below what the process holds, `ulimit -v` then exec) costs the trace, never
// the program: the rest of the file's events are counted as dropped.
void out_of_memory() {
  w.have_file = false;
  if (w.create_errno == 0) w.create_errno = ENOMEM;
}

void flush_guarded(bool final_flush) {
  try {
    flush_locked(final_flush);
  } catch (const std::bad_alloc&) {
    out_of_memory();
  }
}

void drain_guarded(bool all) {
  try {
    drain(all);
  } catch (const std::bad_alloc&) {
    out_of_memory();
  }
}

// Under --live: a switch or a counters snapshot a controller asked for, or a
// timed switch now due. The rings are drained in the old mode first.
void serve_live_requests() {
  const LiveRequests req = live_take_requests();
  if (!req.switch_mode && !req.snapshot) {
    live_requests_done(req);
    return;
  }
  lock_writer();
  if (!g.finalized.load(std::memory_order_acquire)) {
    FileLease lease;
    drain(true);
    if (req.switch_mode) {
      finish_smart_threads();  // a later switch back to smart starts a fresh warm-up
      live_set_mode(req.to);
      write_mode_event(req.to);
    }
    if (req.snapshot) write_profile(true);
    write_stats_if_changed(false);
    live_publish(writer_dropped_total());
  }
  unlock_writer();
  live_requests_done(req);
}

void run_pending_task() {
  if (WriterTask* t = w.task.exchange(nullptr, std::memory_order_acq_rel)) {
    t->fn(t->arg);
    w.task_done_seq.fetch_add(1, std::memory_order_acq_rel);
    sys::futex_wake(&w.task_done_seq);
  }
}

// One round of the writer loop: a requested flush, the periodic flush, or
// draining the rings that are half full.
// Takes the pending flush request: its flags, and the last ticket it covers.
uint64_t take_flush_request(uint32_t& ticket) {
  uint64_t v = w.flush_requested.load(std::memory_order_acquire);
  while (!w.flush_requested.compare_exchange_weak(v, v & ~kFlagBits, std::memory_order_acq_rel)) {
  }
  ticket = static_cast<uint32_t>(v >> kTicketShift);
  return v & kFlagBits;
}

// The main thread's wait status (/proc/self/stat's exit_code, field 52: the
// leader's) when every thread of the program is gone and this one alone
// keeps the process alive, else -1: the main thread is a zombie and counted
// with this thread only. It left through a raw exit system call (the only
// way out under SECCOMP_MODE_STRICT) or was killed alone, and no other
// thread of the program remains.
int program_gone_status() {
  char buf[1024];
  const size_t n = read_small_file("/proc/self/stat", buf, sizeof(buf) - 1);
  buf[n] = '\0';
  const char* p = std::strrchr(buf, ')');  // the command name may hold spaces or ')'
  if (!p || p[1] != ' ' || p[2] != 'Z') return -1;
  long fields[53] = {};
  int field = 2;
  for (const char* c = p + 1; *c && field < 52;) {  // fields 3.. after ')'
    while (*c == ' ') ++c;
    if (!*c || *c == '\n') break;
    fields[++field] = std::strtol(c, nullptr, 10);
    while (*c && *c != ' ') ++c;
  }
  if (field < 52 || fields[20] != 2) return -1;
  return static_cast<int>(fields[52]);
}

// Without strata the process ended when its last thread did, with the main
// thread's status. This thread blocks every signal, so it would have lived
// on for ever, and `strata run` with it: it finishes the trace and ends the
// process as the main thread did (the kernel reports the last thread's).
[[noreturn]] void end_with_the_program(int status) {
  lock_writer();
  if (!g.finalized.load(std::memory_order_acquire)) {
    FileLease lease;
    flush_guarded(true);
    g.finalized.store(true, std::memory_order_release);
  }
  unlock_writer();
  if (const int sig = status & 0x7f) {  // killed (a strict-mode violation: SIGKILL)
    struct {
      void (*handler)(int) = SIG_DFL;
      unsigned long flags = 0;
      void* restorer = nullptr;
      uint64_t mask = 0;
    } dfl;  // the kernel's struct sigaction: no handler of the program's runs now
    syscall(SYS_rt_sigaction, sig, &dfl, nullptr, sizeof(dfl.mask));
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
    syscall(SYS_tgkill, sys::getpid(), sys::gettid(), sig);
  }
  for (;;) syscall(SYS_exit, (status >> 8) & 0xff);
}

void writer_round(uint64_t interval_ns) {
  uint32_t ticket = 0;
  const uint64_t req = take_flush_request(ticket);
  bool periodic = false;
  lock_writer();
  if (!g.finalized.load(std::memory_order_acquire)) {
    FileLease lease;
    uint64_t now = mono_ns();
    if (req != 0) {
      flush_guarded(req & kFinalBit);
      if (req & kFinalBit) g.finalized.store(true, std::memory_order_release);
      w.last_periodic_ns = now;
    } else if (now - w.last_periodic_ns >= interval_ns) {
      flush_guarded(false);
      w.last_periodic_ns = now;
      periodic = true;
    } else {
      drain_guarded(false);
    }
  }
  if (req != 0) {
    w.flush_done_seq.store(ticket, std::memory_order_release);
    sys::futex_wake_all(&w.flush_done_seq);
  }
  unlock_writer();
  if (periodic) {
    const int status = program_gone_status();
    if (status >= 0) end_with_the_program(status);
  }
}

void* writer_main(void*) {
  t_done = true;  // this thread records nothing
  t_is_writer = true;
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  w.private_table = sys::own_fd_table() == 0;
  if (sys::own_fs_context() == 0) w.fs_private.store(true, std::memory_order_release);  // the trace path is absolute
  w.writer_tid.store(static_cast<uint32_t>(sys::gettid()), std::memory_order_release);
  lock_writer();
  try {
    if (!w.have_file) open_file();
    else if (w.private_table) reopen_private();  // started again (writer_resume)
  } catch (const std::bad_alloc&) {
    out_of_memory();
  }
  live_open_slot();
  if (std::atomic<uint32_t>* word = live_wake_word()) {
    w.wake_ptr.store(word, std::memory_order_release);
    FileLease lease;
    write_mode_event(live_mode());  // where the mode intervals of this image start
    live_publish(0);
  }
  unlock_writer();
  w.started.store(1, std::memory_order_release);
  sys::futex_wake_all(&w.started);
  const uint64_t interval_ns = g.cfg.flush_interval_ms * 1000000ull;
  std::atomic<uint32_t>& wake = *w.wake_ptr.load(std::memory_order_acquire);
  while (!w.stop.load(std::memory_order_acquire)) {
    run_pending_task();
    uint32_t seen_word = wake.load(std::memory_order_acquire);
    if ((w.flush_requested.load(std::memory_order_acquire) & kFlagBits) == 0 &&
        w.task.load(std::memory_order_acquire) == nullptr) {
      // Sleeps until the next periodic flush unless woken (a ring half full,
      // a flush request, a task, a live request). Every wake-up runs this
      // thread on another core, which then takes part in the process's TLB
      // flushes: waking every 50 ms made a DataLoader job 7.7% slower on this VM.
      const uint64_t since = mono_ns() - w.last_periodic_ns;
      const uint64_t left = std::min(since < interval_ns ? interval_ns - since : 1000000, live_ns_until_deadline());
      timespec ts{static_cast<time_t>(left / 1000000000ull), static_cast<long>(left % 1000000000ull)};
      sys::futex_wait(&wake, seen_word, &ts);
    }
    run_pending_task();
    if (g.cfg.live) serve_live_requests();
    writer_round(interval_ns);
  }
  run_pending_task();
  if (w.private_fd >= 0) sys::close(w.private_fd);
  w.private_fd = -1;
  return nullptr;
}

void allocate_buffers() {
  size_t max_events = g.cfg.buffer_bytes / sizeof(RawEvent);
  if (max_events > 65536) max_events = 65536;
  w.index = new std::vector<fmt::IndexEntry>();
  w.encoder = new fmt::EventsEncoder(max_events);
  w.framer = new fmt::BlockFramer(g.cfg.zstd_level);
  w.payload = new fmt::ByteSink();
  w.payload->reserve(max_events * 20 * fmt::kNumColumns + 64);
  seen = new std::vector<Seen>();
}

bool start_thread() {
  w.wake_ptr.store(&w.wake_word, std::memory_order_release);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  w.stop.store(false);
  w.fs_private.store(false);
  w.writer_tid.store(0, std::memory_order_relaxed);
  // Created with every signal blocked, so that none of the program's
  // signals runs its handler on the writer before it blocks them itself.
  sigset_t all, saved;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &saved);
  w.thread_running = pthread_create(&w.thread, &attr, writer_main, nullptr) == 0;
  pthread_sigmask(SIG_SETMASK, &saved, nullptr);
  pthread_attr_destroy(&attr);
  return w.thread_running;
}

}  // namespace

bool on_writer_thread() { return t_is_writer; }

int writer_thread_id() {
  if (!writer_thread_running()) return 0;
  const uint32_t tid = w.writer_tid.load(std::memory_order_acquire);
  return tid ? static_cast<int>(tid) : -1;
}

int writer_last_tid() { return static_cast<int>(w.writer_tid.load(std::memory_order_acquire)); }

bool writer_thread_running() { return w.thread_running.load(std::memory_order_acquire) && sys::getpid() == g.pid; }

// The program starts once the writer thread has made its start-up
// allocations (its file, its PROCESS block): glibc reserves a thread's first
// malloc arena then, 64 MiB of address space, and a program that limits its
// address space to what it maps at the start of main plus a margin lost that
// margin whenever the arena came after (Edges.AHandlerDuringAThreadsSetup
// LeavesNoRingBehind failed 1 run in ~10: "address space grew by 65536 KiB").
// Bounded: a writer that cannot run does not hold the program back.
void wait_for_writer_start() {
  for (int waited_ms = 0; waited_ms < 200 && w.started.load(std::memory_order_acquire) == 0; ++waited_ms) {
    timespec ms{0, 1000000};
    sys::futex_wait(&w.started, 0, &ms);
  }
}

bool writer_start() {
  allocate_buffers();
  w.last_periodic_ns = mono_ns();
  w.started.store(0, std::memory_order_relaxed);
  if (start_thread()) {
    wait_for_writer_start();
    return true;
  }
  return open_file();  // no writer thread: flushes happen on application threads
}

uint64_t writer_dropped_total() {
  uint64_t total = w.write_dropped + g.ringless_dropped.load(std::memory_order_relaxed);
  for (ThreadState* s = g.threads.load(std::memory_order_acquire); s; s = s->next)
    total += s->dropped.load(std::memory_order_relaxed);
  return total;
}

void writer_wake() {
  if (w.app_threads_flush.load(std::memory_order_relaxed) && !t_is_writer) {
    writer_request_flush(false, 0);  // no writer thread: a ring half full is drained here
    return;
  }
  std::atomic<uint32_t>* word = w.wake_ptr.load(std::memory_order_acquire);
  if (!word) word = &w.wake_word;
  word->fetch_add(1, std::memory_order_release);
  sys::futex_wake(word);
}

// Both run on application threads, inside interposers (a ring half full,
// exit): the errno of the program's call stays as the call left it, whatever
// the flush's own system calls meet (a descriptor limit below the transient
// descriptor's, a wait that times out).
namespace {
struct ErrnoKept {
  const int saved = errno;
  ~ErrnoKept() { errno = saved; }
};
}  // namespace

void writer_flush(bool final_flush) {
  const ErrnoKept errno_kept;
  if (writer_thread_running() && !t_is_writer) {
    writer_request_flush(final_flush, kFlushWaitMs);
    return;
  }
  // A signal handler that interrupted this thread's own flush (an _exit in a
  // handler while exit flushes, with no writer thread): the mutex would be
  // waited for for ever. The trace ends with what was written
  // (Edges.AnExitInAHandlerDuringExitsFlushDoesNotHang).
  if (t_wants_writer) return;
  lock_writer();
  if (!g.finalized.load(std::memory_order_acquire)) {
    FileLease lease;
    flush_guarded(final_flush);
  }
  if (final_flush) g.finalized.store(true, std::memory_order_release);
  unlock_writer();
}

void writer_wait_fs_private() {
  for (int waited_ms = 0; waited_ms < 100 && writer_thread_running() && !w.fs_private.load(std::memory_order_acquire);
       ++waited_ms) {
    timespec ms{0, 1000000};
    nanosleep(&ms, nullptr);
  }
}

bool writer_pause() {
  if (t_is_writer) return false;
  pause_mu.lock();  // held until writer_resume: one pause at a time
  if (!writer_thread_running()) {
    pause_mu.unlock();
    return false;
  }
  writer_stop();  // its rings keep their events for the next thread
  return true;
}

void writer_resume() {
  start_thread();
  pause_mu.unlock();
}

// glibc ends the process when its last thread exits, calling exit(0) on
// that thread; the writer, a thread glibc counts, would be the last one and
// never exit. So it stops when the main thread leaves through pthread_exit
// (its rings keep their events) and the application threads drain their
// rings from then on; the last one's exit(0) runs the final flush.
void writer_stop_for_main_exit() {
  if (!writer_thread_running() || t_is_writer) return;
  std::lock_guard<std::mutex> serial(pause_mu);
  writer_stop();
  w.app_threads_flush.store(true, std::memory_order_release);
}

void writer_request_flush(bool final_flush, int timeout_ms) {
  const ErrnoKept errno_kept;
  if (!writer_thread_running()) {
    if (try_lock_writer()) {
      if (!g.finalized.load()) {
        FileLease lease;
        flush_guarded(final_flush);
      }
      if (final_flush) g.finalized.store(true, std::memory_order_release);
      unlock_writer();
    }
    return;
  }
  const uint64_t flag = final_flush ? kFinalBit : kFlushBit;
  uint64_t v = w.flush_requested.load(std::memory_order_relaxed), next;
  do {
    next = (((v >> kTicketShift) + 1) << kTicketShift) | (v & kFlagBits) | flag;
  } while (!w.flush_requested.compare_exchange_weak(v, next, std::memory_order_acq_rel));
  const uint32_t ticket = static_cast<uint32_t>(next >> kTicketShift);
  writer_wake();
  for (int waited = 0; waited < timeout_ms; waited += 10) {
    uint32_t done = w.flush_done_seq.load(std::memory_order_acquire);
    if (static_cast<int32_t>(done - ticket) >= 0) return;
    timespec ts{0, 10 * 1000000L};
    sys::futex_wait(&w.flush_done_seq, done, &ts);
  }
}

void writer_run(void (*fn)(void*), void* arg) {
  // A vfork child shares the parent's memory and a clone() child without
  // CLONE_VM ran no fork handlers: neither owns the writer thread it sees.
  if (!w.thread_running || t_is_writer || sys::getpid() != g.pid) return;
  pthread_mutex_lock(&w.task_mu);
  WriterTask task{fn, arg};
  uint32_t before = w.task_done_seq.load(std::memory_order_acquire);
  w.task.store(&task, std::memory_order_release);
  writer_wake();
  // The task is a single system call; the wait is bounded in case the
  // writer is stuck in a write to a hung file system. A task the writer
  // never took is withdrawn; one it took is waited for, since it uses `task`.
  for (int waited = 0; w.task_done_seq.load(std::memory_order_acquire) == before; waited += 10) {
    if (waited >= kFlushWaitMs) {
      WriterTask* expected = &task;
      if (w.task.compare_exchange_strong(expected, nullptr)) break;
    }
    timespec ts{0, 10 * 1000000L};
    sys::futex_wait(&w.task_done_seq, before, &ts);
  }
  pthread_mutex_unlock(&w.task_mu);
}

void writer_stop() {
  if (w.thread_running) {
    w.stop.store(true, std::memory_order_release);
    writer_wake();
    pthread_join(w.thread, nullptr);
    w.thread_running = false;
  }
}

void writer_prepare_fork() { pthread_mutex_lock(&w.mu); }
void writer_parent_after_fork() { pthread_mutex_unlock(&w.mu); }

namespace {
// Forgets the previous file: the next one is created from scratch, with every
// dictionary entry again, by a fresh writer thread.
void reset_for_new_file() {
  w.fd = -1;
  w.private_fd = -1;
  w.fd_transient = false;
  w.have_file = false;
  w.private_table = false;
  w.task.store(nullptr);
  w.emitted_strings = w.emitted_names = w.emitted_contexts = w.emitted_metadata = 0;
  w.events_written = 0;
  w.write_dropped = 0;
  w.last_stats_written = w.last_stats_dropped = ~0ull;
  w.thread_running = false;
  w.app_threads_flush.store(false);  // a fresh writer thread
  w.flush_requested.store(0);
  w.flush_done_seq.store(0);
  seen->clear();
  profile_reset();
  w.last_periodic_ns = mono_ns();
  if (!start_thread()) {
    try {
      open_file();
    } catch (const std::bad_alloc&) {
      out_of_memory();
    }
  }
}
}  // namespace

void writer_child_after_fork() {
  pthread_mutex_init(&w.mu, nullptr);
  pthread_mutex_init(&w.task_mu, nullptr);
  // A fork made while the writer was paused (strata_fork_aside): the pause
  // is the parent's, the child starts its own writer below.
  new (&pause_mu) std::mutex;
  // The parent's descriptor lived in its writer thread's private table (or
  // only during a flush): the child's table holds nothing of strata's.
  reset_for_new_file();
  smart_forget_in_child();  // the child's trace starts with its own warm-up
}

void writer_restart() { reset_for_new_file(); }

}  // namespace strata::runtime

// zstd, linked into the runtime statically, reports each compression to
// ZSTD_trace_compress_begin/end when some object of the process defines
// them (weak references, resolved in the program's global scope). The
// runtime's own hidden definitions bind those references inside
// libstrata.so, so a program that traces its own zstd use never sees the
// writer thread's compressions.
extern "C" {
__attribute__((visibility("hidden"))) unsigned long long ZSTD_trace_compress_begin(const void*) { return 0; }
__attribute__((visibility("hidden"))) void ZSTD_trace_compress_end(unsigned long long, const void*) {}
}
