#include "runtime/live.h"

#include <fcntl.h>
#include <sys/utsname.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "format/json_escape.h"
#include "runtime/state.h"
#include "runtime/sys.h"

namespace strata::runtime {
namespace {

using format::LiveJob;
using format::LiveSlot;
using format::LiveState;

uint64_t mono_now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + ts.tv_nsec;
}

uint64_t wall_now_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + ts.tv_nsec;
}

bool is_tracing(LiveMode m) { return m == LiveMode::kTrace || m == LiveMode::kSmart; }

struct Counts {
  uint64_t events = 0, read_bytes = 0, written_bytes = 0, read_ops = 0, write_ops = 0, meta_ops = 0;
};

// Writer-thread state of the live channel (the mode itself is `mode`).
struct Live {
  std::atomic<uint32_t> mode{static_cast<uint32_t>(LiveMode::kTrace)};
  uint64_t mode_since_ns = 0;  // CLOCK_MONOTONIC of the last switch
  uint64_t traced_ns = 0;      // time in trace/smart before mode_since_ns
  LiveSlot* slot = nullptr;
  uint64_t applied_seq = 0, snapshot_seq = 0;
  uint64_t revert_at_ns = 0;  // CLOCK_MONOTONIC; 0: no timed switch pending
  LiveMode revert_to = LiveMode::kTrace;
  // A timed switch taken but not yet applied: its length, counted again from
  // the switch (the rings are drained in between), so the mode lasts at
  // least the time asked for.
  uint64_t revert_after_ns = 0;
  Counts counts, window;  // window: counts at window_start_ns
  uint64_t window_start_ns = 0;
  uint32_t last_ctx = 0;
};
Live L;

LiveMode mode_named(const char* s, LiveMode dflt) {
  if (!s || !*s) return dflt;
  for (uint32_t m = 0; m < format::kNumLiveModes; ++m)
    if (std::strcmp(s, format::kLiveModeNames[m]) == 0) return static_cast<LiveMode>(m);
  return dflt;
}

void live_path(char* out, size_t cap, const char* leaf) {
  std::snprintf(out, cap, "%s/%s/%s", g.cfg.dir, format::kLiveDirName, leaf);
}

// The job file's mode for a process starting now, if there is a job file.
bool job_mode(LiveMode& mode) {
  char path[kPathMax + 64];
  live_path(path, sizeof(path), format::kLiveJobFile);
  int fd = sys::open(path, O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return false;
  alignas(LiveJob) unsigned char buf[sizeof(LiveJob)];
  long n = sys::read(fd, buf, sizeof(buf));
  sys::close(fd);
  if (n != static_cast<long>(sizeof(buf))) return false;
  const auto* job = reinterpret_cast<const LiveJob*>(buf);
  if (job->magic != format::kLiveMagic || job->version != format::kLiveVersion) return false;
  uint32_t m = job->mode.load(std::memory_order_relaxed);
  const uint64_t revert_at = job->revert_at_wall_ns.load(std::memory_order_relaxed);
  const uint32_t revert = job->revert_mode.load(std::memory_order_relaxed);
  if (revert_at != 0 && revert < format::kNumLiveModes) {
    const uint64_t now = wall_now_ns();
    if (now >= revert_at) {
      m = revert;
    } else {
      L.revert_at_ns = mono_now_ns() + (revert_at - now);
      L.revert_to = static_cast<LiveMode>(revert);
    }
  }
  if (m >= format::kNumLiveModes) return false;
  mode = static_cast<LiveMode>(m);
  return true;
}

void join_cmdline(char* out, size_t cap) {
  out[0] = '\0';
  int fd = sys::open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return;
  long n = sys::read(fd, out, cap - 1);
  sys::close(fd);
  if (n <= 0) return;
  while (n > 0 && out[n - 1] == '\0') --n;
  for (long i = 0; i < n; ++i)
    if (out[i] == '\0') out[i] = ' ';
  out[n] = '\0';
}

// Renders a context's tags as a JSON object.
std::string tags_json(uint32_t ctx) {
  std::string out = "{";
  if (ctx != 0 && ctx <= g.contexts.published()) {
    const Interner::Entry& e = g.contexts.get(ctx);
    const size_t n = e.len / sizeof(TagSlot);
    const uint32_t nstr = g.strings.published();
    for (size_t i = 0; i < n; ++i) {
      TagSlot t;
      std::memcpy(&t, e.data + i * sizeof(TagSlot), sizeof(t));
      if (t.key_sid == 0 || t.key_sid > nstr) continue;
      const Interner::Entry& key = g.strings.get(t.key_sid);
      if (out.size() > 1) out += ',';
      json::append_quoted(out, std::string_view(key.data, key.len));
      out += ':';
      if (t.is_int) {
        out += std::to_string(t.value);
      } else if (t.value > 0 && static_cast<uint64_t>(t.value) <= nstr) {
        const Interner::Entry& v = g.strings.get(static_cast<uint32_t>(t.value));
        json::append_quoted(out, std::string_view(v.data, v.len));
      } else {
        out += "\"\"";
      }
    }
  }
  out += '}';
  return out;
}

std::string open_files_text() {
  std::string out;
  const uint32_t nstr = g.strings.published();
  g.fds.for_each_traced([&](int, const FdEntry& e) {
    const uint32_t sid = e.path.load(std::memory_order_relaxed);
    if (sid == 0 || sid > nstr || out.size() >= format::kLiveFilesBytes) return;
    const Interner::Entry& p = g.strings.get(sid);
    out.append(p.data, p.len);
    out += '\n';
  });
  return out;
}

void copy_text(char* dst, size_t cap, const std::string& s) {
  size_t n = std::min(s.size(), cap - 1);
  std::memcpy(dst, s.data(), n);
  dst[n] = '\0';
}

uint32_t count_open_files() {
  uint32_t n = 0;
  g.fds.for_each_traced([&](int, const FdEntry&) { ++n; });
  return n;
}

uint64_t per_second(uint64_t delta, uint64_t ns) { return ns ? static_cast<uint64_t>(delta * 1e9 / ns + 0.5) : 0; }

}  // namespace

void live_init_mode() {
  LiveMode m = mode_named(getenv("STRATA_MODE"), LiveMode::kTrace);
  if (g.cfg.live) job_mode(m);
  L.mode.store(static_cast<uint32_t>(m), std::memory_order_relaxed);
  L.mode_since_ns = mono_now_ns();
  L.traced_ns = 0;
  set_recording(m != LiveMode::kOff);
}

LiveMode live_mode() { return static_cast<LiveMode>(L.mode.load(std::memory_order_relaxed)); }

bool live_feeds_engine() {
  const LiveMode m = live_mode();
  return g.cfg.live || m == LiveMode::kProfile || m == LiveMode::kSmart;
}

void live_set_mode(LiveMode mode) {
  const uint64_t now = mono_now_ns();
  if (is_tracing(live_mode())) L.traced_ns += now - L.mode_since_ns;
  L.mode_since_ns = now;
  if (L.revert_after_ns) {  // the timed switch being applied: its time starts now
    L.revert_at_ns = now + L.revert_after_ns;
    L.revert_after_ns = 0;
    if (L.slot) L.slot->revert_at_mono_ns.store(L.revert_at_ns, std::memory_order_relaxed);
  }
  L.mode.store(static_cast<uint32_t>(mode), std::memory_order_relaxed);
  set_recording(mode != LiveMode::kOff);
}

void live_open_slot() {
  if (!g.cfg.live || L.slot) return;
  char dir[kPathMax + 64], name[256], path[kPathMax + 320];
  std::snprintf(dir, sizeof(dir), "%s/%s", g.cfg.dir, format::kLiveDirName);
  sys::mkdir(g.cfg.dir, 0755);
  sys::mkdir(dir, 0700);
  utsname u{};
  uname(&u);
  std::snprintf(name, sizeof(name), "%s-%d-%llu%s", u.nodename, g.pid, static_cast<unsigned long long>(g.start_mono_ns),
                format::kLiveSuffix);
  // Made complete under a hidden name, then renamed into place: a
  // controller never maps a file shorter than a slot (SIGBUS on access).
  char tmp[kPathMax + 330];
  std::snprintf(path, sizeof(path), "%s/%s", dir, name);
  std::snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name);
  int fd = sys::open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return;
  void* p = nullptr;
  if (sys::ftruncate(fd, sizeof(LiveSlot)) == 0) p = sys::map_shared(fd, sizeof(LiveSlot));
  sys::close(fd);
  if (!p) {
    sys::unlink(tmp);
    return;
  }
  auto* s = static_cast<LiveSlot*>(p);  // zero-filled by ftruncate
  s->version = format::kLiveVersion;
  s->slot_bytes = sizeof(LiveSlot);
  s->pid = g.pid;
  s->ppid = g.ppid;
  s->start_wall_ns = g.start_wall_ns;
  s->start_mono_ns = g.start_mono_ns;
  join_cmdline(s->command, sizeof(s->command));
  s->mode.store(L.mode.load(std::memory_order_relaxed), std::memory_order_relaxed);
  s->state.store(static_cast<uint32_t>(LiveState::kRunning), std::memory_order_relaxed);
  s->revert_at_mono_ns.store(L.revert_at_ns, std::memory_order_relaxed);
  std::atomic_ref<uint64_t>(s->magic).store(format::kLiveMagic, std::memory_order_release);
  if (sys::rename(tmp, path) != 0) {
    sys::unlink(tmp);
    sys::unmap(p, sizeof(LiveSlot));
    return;
  }
  L.applied_seq = s->request_seq.load(std::memory_order_acquire);
  L.snapshot_seq = s->snapshot_seq.load(std::memory_order_acquire);
  L.window_start_ns = mono_now_ns();
  L.slot = s;
}

std::atomic<uint32_t>* live_wake_word() { return L.slot ? &L.slot->wake : nullptr; }

LiveRequests live_take_requests() {
  LiveRequests r;
  LiveSlot* s = L.slot;
  const uint64_t now = mono_now_ns();
  if (s) {
    const uint64_t seq = s->request_seq.load(std::memory_order_acquire);
    if (seq != L.applied_seq) {
      L.applied_seq = seq;
      const uint32_t m = s->requested_mode.load(std::memory_order_relaxed);
      const uint64_t for_ns = s->revert_after_ns.load(std::memory_order_relaxed);
      if (m < format::kNumLiveModes) {
        r.switch_mode = true;
        r.to = static_cast<LiveMode>(m);
        L.revert_at_ns = for_ns ? now + for_ns : 0;
        L.revert_to = live_mode();
        if (L.revert_at_ns && L.revert_to == r.to) L.revert_at_ns = 0;
        L.revert_after_ns = L.revert_at_ns ? for_ns : 0;
      }
      s->revert_at_mono_ns.store(L.revert_at_ns, std::memory_order_relaxed);
      r.ack = true;
    }
    const uint64_t snap = s->snapshot_seq.load(std::memory_order_acquire);
    if (snap != L.snapshot_seq) {
      L.snapshot_seq = snap;
      r.snapshot = true;
    }
  }
  if (!r.switch_mode && L.revert_at_ns && now >= L.revert_at_ns) {
    r.switch_mode = true;
    r.to = L.revert_to;
    L.revert_at_ns = 0;
    if (s) s->revert_at_mono_ns.store(0, std::memory_order_relaxed);
  }
  if (r.switch_mode && r.to == live_mode()) r.switch_mode = false;
  return r;
}

void live_requests_done(const LiveRequests& r) {
  if (!L.slot) return;
  L.slot->mode.store(L.mode.load(std::memory_order_relaxed), std::memory_order_relaxed);
  if (r.ack) L.slot->applied_seq.store(L.applied_seq, std::memory_order_release);
  if (r.snapshot) L.slot->snapshot_done.store(L.snapshot_seq, std::memory_order_release);
}

uint64_t live_ns_until_deadline() {
  if (!L.revert_at_ns) return ~0ull;
  const uint64_t now = mono_now_ns();
  return now >= L.revert_at_ns ? 0 : L.revert_at_ns - now;
}

void live_count(const RawEvent& e) {
  Counts& c = L.counts;
  ++c.events;
  L.last_ctx = e.ctx;
  if (e.name >= kNumFns) return;
  const FnInfo& f = kFnInfo[e.name];
  if (f.op == counters::Op::kNone) return;
  if (f.data && f.op == counters::Op::kRead) {
    ++c.read_ops;
    if (e.ret > 0) c.read_bytes += static_cast<uint64_t>(e.ret);
  } else if (f.data) {
    ++c.write_ops;
    if (e.ret > 0) c.written_bytes += static_cast<uint64_t>(e.ret);
  } else {
    ++c.meta_ops;
  }
}

void live_publish(uint64_t events_dropped) {
  LiveSlot* s = L.slot;
  if (!s) return;
  const uint64_t now = mono_now_ns();
  const Counts& c = L.counts;
  s->mode.store(L.mode.load(std::memory_order_relaxed), std::memory_order_relaxed);
  s->events.store(c.events, std::memory_order_relaxed);
  s->dropped.store(events_dropped, std::memory_order_relaxed);
  s->read_bytes.store(c.read_bytes, std::memory_order_relaxed);
  s->written_bytes.store(c.written_bytes, std::memory_order_relaxed);
  s->read_ops.store(c.read_ops, std::memory_order_relaxed);
  s->write_ops.store(c.write_ops, std::memory_order_relaxed);
  s->meta_ops.store(c.meta_ops, std::memory_order_relaxed);
  s->traced_ns.store(L.traced_ns + (is_tracing(live_mode()) ? now - L.mode_since_ns : 0), std::memory_order_relaxed);
  s->open_files.store(count_open_files(), std::memory_order_relaxed);
  // Rates over windows of at least 0.9 s: a flush interval of 1 s with jitter.
  const uint64_t span = now - L.window_start_ns;
  if (span >= 900'000'000ull) {
    s->events_per_s.store(per_second(c.events - L.window.events, span), std::memory_order_relaxed);
    s->read_bytes_per_s.store(per_second(c.read_bytes - L.window.read_bytes, span), std::memory_order_relaxed);
    s->written_bytes_per_s.store(per_second(c.written_bytes - L.window.written_bytes, span), std::memory_order_relaxed);
    L.window = c;
    L.window_start_ns = now;
  }
  const std::string tags = tags_json(L.last_ctx), files = open_files_text();
  const uint32_t seq = s->text_seq.load(std::memory_order_relaxed);
  s->text_seq.store(seq + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  copy_text(s->tags, sizeof(s->tags), tags);
  copy_text(s->files, sizeof(s->files), files);
  s->text_seq.store(seq + 2, std::memory_order_release);
  s->heartbeat_mono_ns.store(now, std::memory_order_release);
}

void live_end(bool replaced) {
  if (LiveSlot* s = L.slot) {
    s->state.store(static_cast<uint32_t>(replaced ? LiveState::kReplaced : LiveState::kExited), std::memory_order_release);
    s->heartbeat_mono_ns.store(mono_now_ns(), std::memory_order_release);
  }
}

void live_exec_failed() {
  if (LiveSlot* s = L.slot) s->state.store(static_cast<uint32_t>(LiveState::kRunning), std::memory_order_release);
}

void live_set_exit_status(int status) {
  if (LiveSlot* s = L.slot) s->exit_status.store(status, std::memory_order_relaxed);
}

void live_forget_in_child() {
  if (L.slot) sys::unmap(L.slot, sizeof(LiveSlot));
  L.slot = nullptr;
  L.counts = {};
  L.window = {};
  L.last_ctx = 0;
  L.revert_after_ns = 0;
  L.mode_since_ns = mono_now_ns();
  L.traced_ns = 0;
}

}  // namespace strata::runtime
