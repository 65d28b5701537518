// Reading and steering the slots of src/format/live.h (docs/live.md).
#include "live/channel.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <simdjson.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <thread>

#include "cli/live.h"  // process_running, parse-free this_host: header-only
#include "format/json_escape.h"

namespace strata::live {
namespace fs = std::filesystem;
using format::LiveJob;
using format::LiveSlot;

namespace {

constexpr uint64_t kStaleHeartbeatNs = 5'000'000'000ull;

uint64_t clock_ns(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void futex_wake(std::atomic<uint32_t>& word) {
  word.fetch_add(1, std::memory_order_release);
  // Shared futex (not FUTEX_WAKE_PRIVATE): the waiter is another process
  // mapping the same file.
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

// Maps `path` read-write if it is exactly `bytes` long; nullptr (why in
// `error`, empty when the file is merely not filled in yet) otherwise.
void* map_exact(const std::string& path, size_t bytes, std::string& error) {
  int fd = open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    error = std::string("cannot open it: ") + std::strerror(errno);
    return nullptr;
  }
  struct stat st{};
  void* map = nullptr;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    error = "not a regular file";
  } else if (st.st_size == 0) {
    error.clear();  // created, not yet sized: the process is starting
  } else if (static_cast<size_t>(st.st_size) != bytes) {
    error = "size " + std::to_string(st.st_size) + " bytes, a slot has " + std::to_string(bytes);
  } else {
    map = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
      map = nullptr;
      error = std::string("cannot map it: ") + std::strerror(errno);
    }
  }
  close(fd);
  return map;
}

std::string valid_json_object(const std::string& text) {
  if (text.empty()) return "{}";
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(simdjson::padded_string(text)).get(root) != simdjson::SUCCESS || !root.is_object()) return "{}";
  return text;
}

std::string bounded_text(const char* p, size_t n) { return std::string(p, strnlen(p, n)); }

}  // namespace

int64_t parse_duration_ns(const std::string& text) {
  if (text.empty()) return -1;
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || errno || !std::isfinite(value) || value < 0) return -1;
  const std::string unit(end);
  double scale = 0;
  if (unit.empty() || unit == "s") scale = 1e9;
  else if (unit == "ms") scale = 1e6;
  else if (unit == "m" || unit == "min") scale = 60e9;
  else if (unit == "h") scale = 3600e9;
  else return -1;
  const double ns = value * scale;
  return ns > 9e18 ? -1 : static_cast<int64_t>(ns);
}

uint32_t parse_mode(const std::string& name) {
  for (uint32_t m = 0; m < format::kNumLiveModes; ++m)
    if (name == format::kLiveModeNames[m]) return m;
  return format::kNoMode;
}

const char* mode_name(uint32_t mode) { return mode < format::kNumLiveModes ? format::kLiveModeNames[mode] : "?"; }

struct Channel::Slot {
  std::string path, host;
  LiveSlot* map = nullptr;
  ~Slot() {
    if (map) munmap(map, sizeof(LiveSlot));
  }
};

Channel::Channel(std::string trace_dir, std::function<void(const std::string&)> warn)
    : dir_(std::move(trace_dir)), warn_(std::move(warn)) {
  while (dir_.size() > 1 && dir_.back() == '/') dir_.pop_back();
  std::error_code ec;
  if (!fs::is_directory(dir_, ec)) throw ChannelError(dir_ + ": no such trace directory");
  if (!fs::is_directory(live_dir(), ec))
    throw ChannelError(dir_ + ": not a live trace (no " + format::kLiveDirName +
                       "/ in it): run it with strata run --live");
  std::string error;
  const std::string job = live_dir() + "/" + format::kLiveJobFile;
  if (fs::exists(job, ec)) {
    job_map_ = map_exact(job, sizeof(LiveJob), error);
    auto* j = static_cast<LiveJob*>(job_map_);
    if (j && (j->magic != format::kLiveMagic || j->version != format::kLiveVersion)) {
      munmap(job_map_, sizeof(LiveJob));
      job_map_ = nullptr;
      error = "wrong magic or version";
    }
    if (!job_map_) this->warn(job + ": ignored, not a live job file (" + error + ")");
  }
}

Channel::~Channel() {
  if (job_map_) munmap(job_map_, sizeof(LiveJob));
}

std::string Channel::live_dir() const { return dir_ + "/" + format::kLiveDirName; }

void Channel::warn(const std::string& what) {
  if (std::find(warned_.begin(), warned_.end(), what) != warned_.end()) return;
  warned_.push_back(what);
  if (warn_) warn_(what);
  else std::fprintf(stderr, "strata: warning: %s\n", what.c_str());
}

void Channel::rescan() {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(live_dir(), ec)) {
    const std::string name = entry.path().filename().string();
    const std::string suffix = format::kLiveSuffix;
    if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) continue;
    const std::string path = entry.path().string();
    if (std::any_of(slots_.begin(), slots_.end(), [&](auto& s) { return s->path == path; })) continue;
    std::string error;
    void* map = map_exact(path, sizeof(LiveSlot), error);
    if (!map) {
      if (!error.empty()) warn(path + ": skipped, not a live slot (" + error + ")");
      continue;
    }
    auto* slot = static_cast<LiveSlot*>(map);
    const uint64_t magic = std::atomic_ref<uint64_t>(slot->magic).load(std::memory_order_acquire);
    if (magic != format::kLiveMagic || slot->version != format::kLiveVersion ||
        slot->slot_bytes != sizeof(LiveSlot)) {
      munmap(map, sizeof(LiveSlot));
      if (magic != 0) warn(path + ": skipped, not a live slot (wrong magic, version or slot size)");
      continue;  // magic 0: the process has not finished its identity yet
    }
    auto s = std::make_unique<Slot>();
    s->path = path;
    s->map = slot;
    cli::FileNameParts parts;
    const std::string as_trace = name.substr(0, name.size() - suffix.size()) + ".strata";
    s->host = cli::parse_file_name(as_trace, parts) ? parts.host : cli::this_host();
    slots_.push_back(std::move(s));
  }
  std::sort(slots_.begin(), slots_.end(), [](auto& a, auto& b) {
    return std::tie(a->map->start_mono_ns, a->map->pid) < std::tie(b->map->start_mono_ns, b->map->pid);
  });
}

// Running, starting, and neither gone from this host nor silent for 5 s.
bool Channel::slot_running(const Slot& s) const {
  const LiveSlot& m = *s.map;
  const auto state = static_cast<format::LiveState>(m.state.load(std::memory_order_acquire));
  if (state != format::LiveState::kRunning && state != format::LiveState::kStarting) return false;
  if (s.host == cli::this_host() && !cli::process_running(m.pid, m.start_mono_ns)) return false;
  const uint64_t beat = m.heartbeat_mono_ns.load(std::memory_order_relaxed);
  const uint64_t since = beat ? beat : m.start_mono_ns;
  const uint64_t now = clock_ns(CLOCK_MONOTONIC);
  return now <= since || now - since <= kStaleHeartbeatNs;
}

ProcessStatus Channel::read_slot(const Slot& s) {
  const LiveSlot& m = *s.map;
  ProcessStatus p;
  p.slot_path = s.path;
  p.host = s.host;
  p.pid = m.pid;
  p.ppid = m.ppid;
  p.start_wall_ns = m.start_wall_ns;
  p.start_mono_ns = m.start_mono_ns;
  p.command = bounded_text(m.command, sizeof m.command);
  switch (static_cast<format::LiveState>(m.state.load(std::memory_order_acquire))) {
    case format::LiveState::kStarting:
    case format::LiveState::kRunning: p.state = "running"; break;
    case format::LiveState::kExited: p.state = "exited"; break;
    case format::LiveState::kReplaced: p.state = "replaced"; break;
    default: p.state = "gone"; break;
  }
  p.mode = mode_name(m.mode.load(std::memory_order_relaxed));
  p.exit_status = m.exit_status.load(std::memory_order_relaxed);
  p.open_file_count = m.open_files.load(std::memory_order_relaxed);
  const uint64_t beat = m.heartbeat_mono_ns.load(std::memory_order_relaxed);
  const uint64_t now = clock_ns(CLOCK_MONOTONIC);
  p.heartbeat_age_ns = beat && now > beat ? now - beat : 0;
  p.events = m.events.load(std::memory_order_relaxed);
  p.dropped = m.dropped.load(std::memory_order_relaxed);
  p.read_bytes = m.read_bytes.load(std::memory_order_relaxed);
  p.written_bytes = m.written_bytes.load(std::memory_order_relaxed);
  p.read_ops = m.read_ops.load(std::memory_order_relaxed);
  p.write_ops = m.write_ops.load(std::memory_order_relaxed);
  p.meta_ops = m.meta_ops.load(std::memory_order_relaxed);
  p.traced_ns = m.traced_ns.load(std::memory_order_relaxed);
  p.events_per_s = m.events_per_s.load(std::memory_order_relaxed);
  p.read_bytes_per_s = m.read_bytes_per_s.load(std::memory_order_relaxed);
  p.written_bytes_per_s = m.written_bytes_per_s.load(std::memory_order_relaxed);
  p.revert_at_mono_ns = m.revert_at_mono_ns.load(std::memory_order_relaxed);
  // The text fields change under a seqlock: copy until a stable even sequence.
  std::string tags, files;
  for (int attempt = 0; attempt < 100; ++attempt) {
    const uint32_t before = m.text_seq.load(std::memory_order_acquire);
    if (before & 1) {
      std::this_thread::yield();
      continue;
    }
    tags = bounded_text(m.tags, sizeof m.tags);
    files = bounded_text(m.files, sizeof m.files);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (m.text_seq.load(std::memory_order_relaxed) == before) break;
    tags.clear();
    files.clear();
  }
  p.tags_json = valid_json_object(tags);
  for (size_t start = 0; start < files.size();) {
    size_t end = files.find('\n', start);
    if (end == std::string::npos) end = files.size();
    if (end > start) p.open_files.push_back(files.substr(start, end - start));
    start = end + 1;
  }
  return p;
}

std::vector<ProcessStatus> Channel::processes() {
  rescan();
  std::vector<ProcessStatus> out;
  out.reserve(slots_.size());
  for (auto& s : slots_) {
    ProcessStatus p = read_slot(*s);
    if (p.state == "running" && !slot_running(*s)) p.state = "gone";
    if (p.state != "running") p.events_per_s = p.read_bytes_per_s = p.written_bytes_per_s = 0;  // no longer moving
    out.push_back(std::move(p));
  }
  return out;
}

JobStatus Channel::job() {
  JobStatus j;
  auto* m = static_cast<LiveJob*>(job_map_);
  if (!m) return j;
  j.present = true;
  j.mode = mode_name(m->mode.load(std::memory_order_relaxed));
  j.revert_at_wall_ns = m->revert_at_wall_ns.load(std::memory_order_acquire);
  j.revert_mode = mode_name(m->revert_mode.load(std::memory_order_relaxed));
  // A timed switch that has ended: processes starting now take the revert
  // mode (the runtime reads the file so), which is the job's mode now.
  if (j.revert_at_wall_ns && clock_ns(CLOCK_REALTIME) >= j.revert_at_wall_ns) {
    j.mode = j.revert_mode;
    j.revert_at_wall_ns = 0;
  }
  return j;
}

SwitchResult Channel::request_mode(uint32_t mode, int64_t pid, int64_t for_ns, int wait_ms) {
  if (mode >= format::kNumLiveModes) throw ChannelError("unknown mode " + std::to_string(mode));
  rescan();
  std::vector<std::pair<Slot*, uint64_t>> asked;
  for (auto& s : slots_) {
    if ((pid != 0 && s->map->pid != pid) || !slot_running(*s)) continue;
    LiveSlot& m = *s->map;
    m.requested_mode.store(mode, std::memory_order_relaxed);
    m.revert_after_ns.store(for_ns > 0 ? static_cast<uint64_t>(for_ns) : 0, std::memory_order_relaxed);
    const uint64_t seq = m.request_seq.fetch_add(1, std::memory_order_release) + 1;
    futex_wake(m.wake);
    asked.emplace_back(s.get(), seq);
  }
  if (pid != 0 && asked.empty())
    throw ChannelError(dir_ + ": no running process with pid " + std::to_string(pid));
  if (pid == 0) {
    if (auto* j = static_cast<LiveJob*>(job_map_)) {
      const uint32_t before = j->mode.exchange(mode, std::memory_order_relaxed);
      if (for_ns > 0) {
        j->revert_mode.store(before, std::memory_order_relaxed);
        j->revert_at_wall_ns.store(clock_ns(CLOCK_REALTIME) + static_cast<uint64_t>(for_ns), std::memory_order_release);
      } else {
        j->revert_at_wall_ns.store(0, std::memory_order_release);
      }
      msync(j, sizeof(LiveJob), MS_ASYNC);
    }
  }
  SwitchResult result;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  for (auto& [slot, seq] : asked) {
    while (slot->map->applied_seq.load(std::memory_order_acquire) < seq && slot_running(*slot) &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    (slot->map->applied_seq.load(std::memory_order_acquire) >= seq ? result.switched : result.pending)
        .push_back(slot->map->pid);
  }
  return result;
}

std::vector<int64_t> Channel::request_snapshot(int wait_ms) {
  rescan();
  std::vector<std::pair<Slot*, uint64_t>> asked;
  for (auto& s : slots_) {
    if (!slot_running(*s)) continue;
    const uint64_t seq = s->map->snapshot_seq.fetch_add(1, std::memory_order_release) + 1;
    futex_wake(s->map->wake);
    asked.emplace_back(s.get(), seq);
  }
  std::vector<int64_t> silent;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  for (auto& [slot, seq] : asked) {
    while (slot->map->snapshot_done.load(std::memory_order_acquire) < seq && slot_running(*slot) &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (slot->map->snapshot_done.load(std::memory_order_acquire) < seq && slot_running(*slot))
      silent.push_back(slot->map->pid);
  }
  return silent;
}

std::string process_json(const ProcessStatus& p) {
  std::string o = "{\"pid\": " + std::to_string(p.pid) + ", \"ppid\": " + std::to_string(p.ppid) + ", \"command\": ";
  json::append_quoted(o, p.command);
  o += ", \"host\": ";
  json::append_quoted(o, p.host);
  o += ", \"state\": \"" + p.state + "\", \"mode\": \"" + p.mode + "\"";
  if (p.state == "exited") o += ", \"exit_status\": " + std::to_string(p.exit_status);
  auto num = [&](const char* key, uint64_t v) { o += std::string(", \"") + key + "\": " + std::to_string(v); };
  num("start_wall_ns", p.start_wall_ns);
  num("events", p.events);
  num("events_per_s", p.events_per_s);
  num("read_bytes", p.read_bytes);
  num("written_bytes", p.written_bytes);
  num("read_bytes_per_s", p.read_bytes_per_s);
  num("written_bytes_per_s", p.written_bytes_per_s);
  num("read_ops", p.read_ops);
  num("write_ops", p.write_ops);
  num("meta_ops", p.meta_ops);
  num("traced_ns", p.traced_ns);
  num("dropped", p.dropped);
  num("open_file_count", p.open_file_count);
  num("heartbeat_age_ns", p.heartbeat_age_ns);
  o += ", \"open_files\": [";
  for (size_t i = 0; i < p.open_files.size(); ++i) {
    if (i) o += ", ";
    json::append_quoted(o, p.open_files[i]);
  }
  o += "], \"tags\": " + p.tags_json + "}";
  return o;
}

std::string Channel::status_json() {
  const std::vector<ProcessStatus> procs = processes();
  const JobStatus j = job();
  std::string o = "{\"live\": true, \"trace\": ";
  json::append_quoted(o, dir_);
  o += ", \"job\": ";
  if (j.present) {
    o += "{\"mode\": \"" + j.mode + "\"";
    if (j.revert_at_wall_ns)
      o += ", \"revert_at_wall_ns\": " + std::to_string(j.revert_at_wall_ns) + ", \"revert_mode\": \"" +
           j.revert_mode + "\"";
    o += "}";
  } else {
    o += "null";
  }
  o += ", \"processes\": [";
  for (size_t i = 0; i < procs.size(); ++i) o += (i ? ", " : "") + process_json(procs[i]);
  return o + "]}";
}

void create_channel(const std::string& dir, uint32_t mode) {
  const std::string live = dir + "/" + format::kLiveDirName;
  if (mkdir(live.c_str(), 0700) != 0 && errno != EEXIST)
    throw ChannelError(live + ": cannot create the live channel: " + std::strerror(errno));
  chmod(live.c_str(), 0700);
  LiveJob job{};
  job.magic = format::kLiveMagic;
  job.version = format::kLiveVersion;
  job.job_bytes = sizeof(LiveJob);
  job.mode.store(mode, std::memory_order_relaxed);
  job.revert_mode.store(mode, std::memory_order_relaxed);
  const std::string path = live + "/" + format::kLiveJobFile;
  const std::string tmp = path + ".tmp";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw ChannelError(tmp + ": cannot create the job file: " + std::strerror(errno));
  const bool ok = write(fd, &job, sizeof job) == static_cast<ssize_t>(sizeof job);
  const int err = errno;
  close(fd);
  // Renamed into place whole: a process never maps a half-written job file.
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0) {
    unlink(tmp.c_str());
    throw ChannelError(path + ": cannot write the job file: " + std::strerror(ok ? errno : err));
  }
}

}  // namespace strata::live
