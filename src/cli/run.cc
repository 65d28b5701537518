// `strata run [options] -- command...`: runs the command with the runtime
// preloaded and the STRATA_* variables set, so it and every process it starts
// write into one trace directory. Exits with the command's exit code, or
// dies of the signal that killed it.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "cli/commands.h"
#include "cli/live.h"
#include "format/format.h"
#ifndef STRATA_LEAN_RUN
#include "live/channel.h"
#include "live/server.h"
#endif
#include "runtime/forwarded_signal.h"

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace strata::cli {
namespace fs = std::filesystem;

std::string self_dir() {
  std::error_code ec;
  auto exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : exe.parent_path().string();
}

namespace {

struct RunOptions {
  std::string out;
  std::string mode = "trace";
  std::vector<std::string> exclude, include;
  std::string layers;
  std::string buffer_size;
  int flush_interval_ms = 0;
  bool quiet = false;
  bool no_python = false;
  bool live = false;        // --live: the channel, the job file and the server
  bool mode_given = false;  // -m on the command line (else --live starts in profile)
  int port = 0;
  std::string listen = "127.0.0.1";
  std::vector<std::string> command;
};

std::string find_runtime() {
  for (const char* rel : {"/../lib/libstrata.so", "/../lib/strata/libstrata.so", "/libstrata.so"}) {
    std::string p = self_dir() + rel;
    if (fs::exists(p)) return fs::canonical(p).string();
  }
  throw std::runtime_error("cannot find libstrata.so next to " + self_dir() + " (expected ../lib/libstrata.so)");
}

std::string find_python_layer() {
  for (std::string p : {self_dir() + "/../python", std::string(STRATA_SOURCE_DIR) + "/python"}) {
    if (fs::exists(p + "/strata/__init__.py")) return fs::canonical(p).string();
  }
  return "";
}

#if defined(__x86_64__)
int64_t mono_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

// A TSC reading and the CLOCK_MONOTONIC instant of it: the TSC read
// between two clock reads, the tightest pair of a few tries (a preempted try
// is wide and loses).
struct ClockPair {
  long double ns = 0;
  uint64_t tsc = 0;
};
ClockPair clock_pair() {
  ClockPair best;
  int64_t width = INT64_MAX;
  for (int i = 0; i < 16; ++i) {
    int64_t a = mono_ns();
    uint64_t c = __rdtsc();
    int64_t b = mono_ns();
    if (b - a < width) {
      width = b - a;
      best = {(a + b) / 2.0L, c};
    }
  }
  return best;
}

double hz_between(const ClockPair& a, const ClockPair& b) {
  return static_cast<double>(static_cast<long double>(b.tsc - a.tsc) / (b.ns - a.ns) * 1e9L);
}

// Measures the TSC against CLOCK_MONOTONIC (the clock the runtime anchors its
// ticks to; CLOCK_MONOTONIC_RAW is no better: under kvm-clock it jitters by
// 10 ppm over 16 ms) over two consecutive 8 ms spans; `agree` says the two
// spans gave the same rate within 20 ppm. Returns the rate of both.
double measure_tsc(bool& agree) {
  ClockPair p0 = clock_pair();
  std::this_thread::sleep_for(std::chrono::milliseconds(8));
  ClockPair p1 = clock_pair();
  std::this_thread::sleep_for(std::chrono::milliseconds(8));
  ClockPair p2 = clock_pair();
  double h1 = hz_between(p0, p1), h2 = hz_between(p1, p2);
  agree = h1 > 0 && std::fabs(h1 - h2) <= 20e-6 * h1;
  return hz_between(p0, p2);
}

std::string read_line(const char* path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}

// ~/.cache/strata/tsc (or $XDG_CACHE_HOME/strata/tsc): one line "<key> <hz>",
// valid while the key (boot id and CPU model) matches.
std::string tsc_cache_path() {
  if (const char* x = getenv("XDG_CACHE_HOME"); x && *x == '/') return std::string(x) + "/strata/tsc";
  if (const char* h = getenv("HOME"); h && *h == '/') return std::string(h) + "/.cache/strata/tsc";
  return "";
}
#endif

// TSC ticks per second when the TSC is invariant (constant and non-stop),
// else 0. A measurement takes ~16 ms, so its result is cached per boot and
// CPU model: later runs only read the cache file.
double calibrate_tsc() {
#if defined(__x86_64__)
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, model;
  bool constant = false, nonstop = false;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0 && model.empty()) {
      size_t colon = line.find(':');
      if (colon != std::string::npos) model = line.substr(colon + 1);
      continue;
    }
    if (line.rfind("flags", 0) != 0) continue;
    constant = line.find(" constant_tsc") != std::string::npos;
    nonstop = line.find(" nonstop_tsc") != std::string::npos;
    break;
  }
  if (!constant || !nonstop) return 0;
  std::string boot = read_line("/proc/sys/kernel/random/boot_id");
  std::string key = boot + "|" + model;
  for (char& c : key)
    if (c == ' ' || c == '\n') c = '_';
  std::string cache = boot.empty() ? "" : tsc_cache_path();
  if (!cache.empty()) {
    std::ifstream in(cache);
    std::string k;
    double hz = 0;
    if (in >> k >> hz && k == key && hz > 1e8 && hz < 1e11) return hz;
  }
  bool agree = false;
  double hz = measure_tsc(agree);
  if (!agree) hz = measure_tsc(agree);  // preempted or migrated: once more
  if (agree && !cache.empty()) {
    std::error_code ec;
    fs::create_directories(fs::path(cache).parent_path(), ec);
    std::string tmp = cache + "." + std::to_string(getpid());
    {
      std::ofstream out(tmp);
      char buf[64];
      std::snprintf(buf, sizeof buf, " %.3f\n", hz);
      out << key << buf;
    }
    fs::rename(tmp, cache, ec);
    if (ec) fs::remove(tmp, ec);
  }
  return hz;
#else
  return 0;
#endif
}

std::string default_out(const std::string& cmd) {
  std::string base = fs::path(cmd).filename().string();
  for (char& c : base)
    if (!isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  char stamp[32];
  time_t now = time(nullptr);
  strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", localtime(&now));
  return "strata-" + base + "-" + stamp;
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

void set_environment(const RunOptions& o, const std::string& dir) {
  std::string lib = find_runtime();
  const char* pre = getenv("LD_PRELOAD");
  setenv("LD_PRELOAD", (pre && *pre ? lib + ":" + pre : lib).c_str(), 1);
  setenv("STRATA_DIR", dir.c_str(), 1);
  setenv("STRATA_MODE", o.mode.c_str(), 1);
  setenv(forwarded_signal::kLauncherPidVariable, std::to_string(getpid()).c_str(), 1);
  // A value the user set wins (e.g. STRATA_TSC_HZ=0 to force CLOCK_MONOTONIC).
  if (!getenv("STRATA_TSC_HZ")) {
    if (double hz = calibrate_tsc(); hz > 0) setenv("STRATA_TSC_HZ", std::to_string(hz).c_str(), 1);
  }
  if (!o.exclude.empty()) setenv("STRATA_EXCLUDE", join(o.exclude, ":").c_str(), 1);
  if (!o.include.empty()) setenv("STRATA_INCLUDE", join(o.include, ":").c_str(), 1);
  if (!o.layers.empty()) setenv("STRATA_LAYERS", o.layers.c_str(), 1);
  if (!o.buffer_size.empty()) setenv("STRATA_BUFFER_SIZE", o.buffer_size.c_str(), 1);
  if (o.flush_interval_ms > 0) setenv("STRATA_FLUSH_INTERVAL_MS", std::to_string(o.flush_interval_ms).c_str(), 1);
  std::string py = o.no_python ? "" : find_python_layer();
  if (!py.empty()) {
    const char* pp = getenv("PYTHONPATH");
    std::string entries = py + "/autoload:" + py;
    setenv("PYTHONPATH", (pp && *pp ? entries + ":" + pp : entries).c_str(), 1);
    setenv("STRATA_PYTHONPATH", py.c_str(), 1);
    // The native modules built beside this strata: found without a search.
    std::error_code nec;
    if (std::string native = self_dir() + "/../python/strata"; fs::is_directory(native, nec) && !getenv("STRATA_PY_NATIVE"))
      setenv("STRATA_PY_NATIVE", fs::canonical(native, nec).c_str(), 1);
  }
}

// Where the command is, found as execvp would before anything is created:
// 0 if it can be run, else the shell's status (127: not found, 126: found but
// not executable) with the message in `why`.
int resolve_command(const std::string& cmd, std::string& why) {
  auto check = [](const std::string& path) {
    struct stat st;
    if (stat(path.c_str(), &st) != 0) return errno == ENOENT || errno == ENOTDIR ? ENOENT : errno;
    if (S_ISDIR(st.st_mode)) return EISDIR;
    if (access(path.c_str(), X_OK) != 0) return EACCES;
    return 0;
  };
  if (cmd.empty()) {
    why = ": command not found";
    return 127;
  }
  if (cmd.find('/') != std::string::npos) {
    int err = check(cmd);
    if (err == 0) return 0;
    why = std::string(": ") + std::strerror(err);
    return err == ENOENT ? 127 : 126;
  }
  const char* path_env = getenv("PATH");
  std::string path = path_env ? path_env : "/bin:/usr/bin";  // glibc's execvp default
  int found_err = 0;
  for (size_t start = 0; start <= path.size();) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string d = path.substr(start, end - start);
    int err = check((d.empty() ? std::string(".") : d) + "/" + cmd);
    if (err == 0) return 0;
    if (err != ENOENT && !found_err) found_err = err;
    start = end + 1;
  }
  if (found_err) {
    why = std::string(": ") + std::strerror(found_err);
    return 126;
  }
  why = ": command not found";
  return 127;
}

// The directories fs::create_directories(dir) would create, outermost first.
std::vector<fs::path> missing_dirs(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  fs::path p = fs::absolute(dir, ec).lexically_normal();
  if (!p.has_filename()) p = p.parent_path();  // "trace/"
  for (int depth = 0; depth < 64 && p.has_relative_path() && !fs::exists(p, ec); ++depth, p = p.parent_path())
    out.insert(out.begin(), p);
  return out;
}

// Whether strata passes a signal on to the command: only one another process
// sent (kill(1), a batch system). Not one from the terminal or the kernel
// (si_pid 0: ^C, ^\ and hang-up reach the command through its process group
// already, and a second copy would count twice), and not one the command
// itself sent to its parent or group.
bool should_forward(const siginfo_t& si, pid_t child) {
  if (si.si_pid == 0 || si.si_pid == child) return false;
  return si.si_code == SI_USER || si.si_code == SI_QUEUE || si.si_code == SI_TKILL;
}

// Sends the command a copy of a signal sent to strata: from the same sender
// (pid and uid), tagged for the runtime in the command to tell it from a copy
// the sender may have sent the command itself (src/runtime/signals.cc). The
// kernel takes only SI_QUEUE as the code of a siginfo given by another
// process. kill() if the kernel cannot queue it (RLIMIT_SIGPENDING).
void forward(pid_t child, int sig, const siginfo_t& received) {
  siginfo_t copy{};
  copy.si_signo = sig;
  copy.si_code = SI_QUEUE;
  copy.si_pid = received.si_pid;
  copy.si_uid = received.si_uid;
  copy.si_value.sival_ptr = reinterpret_cast<void*>(forwarded_signal::value_for(getpid()));
  if (syscall(SYS_rt_sigqueueinfo, child, sig, &copy) != 0) kill(child, sig);
}

// Read by redirect_stray_signal on another thread: atomics (lock-free, so
// safe in a handler), not volatile sig_atomic_t, which is only for a handler
// on the same thread.
std::atomic<pid_t> child_pid{-1};
std::atomic<pid_t> waiting_tid{-1};  // the thread that runs wait_forwarding
static_assert(std::atomic<pid_t>::is_always_lock_free);

// A forwarded signal that reaches another thread of strata, one that does not
// block it: a thread a library preloaded into strata started before
// run_command (a site's monitoring agent). Without a handler it would end
// strata by the signal's default action and leave the command orphaned. It is
// sent on to the waiting thread, which blocks it until sigtimedwait takes it
// and forwards it (the command may not be forked yet: this is one signal
// handler for every moment).
void redirect_stray_signal(int sig, siginfo_t* si, void*) {
  if (!si || !should_forward(*si, child_pid.load())) return;
  const int saved = errno;
  tgkill(getpid(), waiting_tid.load(), sig);
  errno = saved;
}

// Waits for the command while forwarding the signals in `fwd` (blocked, with
// SIGCHLD, in every thread strata starts, from before the fork on). Signals
// are taken synchronously (sigtimedwait), not by a handler: nothing runs at
// an arbitrary point of strata, and a runtime that defers asynchronous
// signals (ThreadSanitizer's) cannot hold one back until the command is gone.
int wait_forwarding(pid_t child, const sigset_t& fwd) {
  sigset_t wake = fwd;
  sigaddset(&wake, SIGCHLD);
  int status = 0;
  for (;;) {
    const pid_t r = waitpid(child, &status, WNOHANG);
    if (r == child) return status;
    if (r < 0 && errno != EINTR) {  // cannot happen while SIGCHLD has its default action; never a success
      std::fprintf(stderr, "strata: lost track of the command (pid %d): waitpid: %s\n", static_cast<int>(child),
                   std::strerror(errno));
      return W_EXITCODE(1, 0);
    }
    siginfo_t si{};
    const timespec tick{1, 0};  // a bound: SIGCHLD wakes it at once
    const int sig = sigtimedwait(&wake, &si, &tick);
    if (sig > 0 && sig != SIGCHLD && should_forward(si, child)) forward(child, sig, si);
  }
}

constexpr int kDescendantGraceMs = 500;

// The process files in dir, by name.
std::set<std::string> process_files(const std::string& dir) {
  std::set<std::string> names;
  std::error_code ec;
  for (auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".strata") names.insert(e.path().filename().string());
  return names;
}

// Whether a running process belongs to this run rather than to another
// strata run writing into the same directory: every traced process carries
// its launcher's pid in STRATA_LAUNCHER_PID (the runtime adds it back to
// any environment an exec passes). One whose environment cannot be read (a
// changed user) is taken as ours.
bool started_by_this_run(int64_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  const std::string key = std::string(forwarded_signal::kLauncherPidVariable) + "=";
  std::string entry;
  while (std::getline(in, entry, '\0'))
    if (entry.rfind(key, 0) == 0) return entry.substr(key.size()) == std::to_string(getpid());
  return true;  // unreadable, or no launcher recorded
}

// After the command returned: the processes it left running (daemonised
// descendants) that still write into the trace, named by pid and command.
void report_still_running(const std::vector<std::string>& files, pid_t child) {
  const std::string host = this_host();
  std::map<int64_t, uint64_t> newest;  // pid -> start of its newest file (exec starts a new one)
  for (const auto& name : files) {
    FileNameParts f;
    if (!parse_file_name(name, f) || f.host != host || f.pid == child || !started_by_this_run(f.pid)) continue;
    auto [it, fresh] = newest.emplace(f.pid, f.start_mono_ns);
    if (!fresh && f.start_mono_ns > it->second) it->second = f.start_mono_ns;
  }
  std::vector<std::pair<int64_t, uint64_t>> live;
  for (auto [pid, start] : newest)
    if (process_running(pid, start)) live.emplace_back(pid, start);
  // A helper that ends as the command's descriptors close (Python's
  // multiprocessing resource tracker, a pipe's last reader) is still alive
  // for a few milliseconds: given up to half a second before it is named.
  for (int waited_ms = 0; !live.empty() && waited_ms < kDescendantGraceMs; waited_ms += 20) {
    timespec step{0, 20 * 1000000L};
    nanosleep(&step, nullptr);
    std::erase_if(live, [](const auto& p) { return !process_running(p.first, p.second); });
  }
  std::vector<std::pair<int64_t, std::string>> running;
  for (auto [pid, start] : live) running.emplace_back(pid, process_cmdline(pid));
  if (running.empty()) return;
  std::fprintf(stderr, "strata: warning: the command returned but %zu of its processes %s still running; "
               "their trace files get their footer when they exit:\n",
               running.size(), running.size() == 1 ? "is" : "are");
  for (auto& [pid, cmd] : running) std::fprintf(stderr, "strata:   pid %lld: %s\n", static_cast<long long>(pid), cmd.c_str());
}

// Process files left empty by processes that have ended: each created its
// file but could write nothing into it (a full file system, a file size
// limit), so its events are lost. The reader skips such files; without this
// the launcher's "trace written" was the only word on them.
void report_empty_files(const std::string& dir, const std::vector<std::string>& files) {
  const std::string host = this_host();
  size_t empty = 0;
  for (const auto& name : files) {
    FileNameParts f;
    std::error_code sec;
    if (!parse_file_name(name, f) || fs::file_size(dir + "/" + name, sec) != 0 || sec) continue;
    if (f.host == host && process_running(f.pid, f.start_mono_ns)) continue;  // not flushed yet
    ++empty;
  }
  if (empty == 0) return;
  struct statvfs vfs {};
  const unsigned long long free_kib =
      statvfs(dir.c_str(), &vfs) == 0 ? static_cast<unsigned long long>(vfs.f_bavail) * vfs.f_frsize / 1024 : 0;
  std::fprintf(stderr, "strata: warning: %zu of %zu process files are empty: those processes could write nothing "
               "of their trace (file system full? %llu KiB free; file size limit?)\n", empty, files.size(), free_kib);
}

// A command killed by a signal: strata ends by the same signal, so whoever
// started it sees the status it would see for the command (a shell stops a
// script at ^C only when its child died of SIGINT; Python's returncode is -N).
// strata's own core dump is off: it would overwrite the command's `core`.
// Returns only if the signal did not end strata.
void end_like_the_command(int status, bool quiet) {
  if (!WIFSIGNALED(status)) return;
  const int sig = WTERMSIG(status);
  if (WCOREDUMP(status) && !quiet) std::fprintf(stderr, "strata: the command dumped core\n");
  std::fflush(nullptr);
  prctl(PR_SET_DUMPABLE, 0);
  const rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  signal(sig, SIG_DFL);
  sigset_t only;
  sigemptyset(&only);
  sigaddset(&only, sig);
  pthread_sigmask(SIG_UNBLOCK, &only, nullptr);
  raise(sig);
}

#ifndef STRATA_LEAN_RUN
// The live server of `strata run --live`, serving while the command runs.
// The job never depends on it: a server that cannot start is a warning.
std::unique_ptr<live::Server> start_live_server(const RunOptions& o, const std::string& dir) {
  live::ServerOptions so;
  so.trace_dir = dir;
  so.port = o.port;
  so.listen = o.listen;
  try {
    auto server = std::make_unique<live::Server>(so);
    server->start();
    if (o.listen != "127.0.0.1" && o.listen != "::1" && o.listen != "localhost")
      std::fprintf(stderr, "strata: warning: live server listening on %s: anyone who can reach it and has the token "
                   "can read and steer the job\n", o.listen.c_str());
    if (!o.quiet) std::fprintf(stderr, "strata: live at %s\n", server->url().c_str());
    return server;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata: warning: no live server (%s); strata ctl %s still works\n", e.what(), dir.c_str());
    return nullptr;
  }
}
#else
// The lean launcher (front.cc) hands every --live run to strata-tools.
struct NoServer {
  void stop() {}
};
std::unique_ptr<NoServer> start_live_server(const RunOptions&, const std::string&) { return nullptr; }
#endif

int run_command(RunOptions o) {
  if (o.live && !o.mode_given) o.mode = "profile";
  if (!o.live && (o.port != 0 || o.listen != "127.0.0.1"))
    throw std::runtime_error("--port and --listen need --live");
  if (o.command.empty()) throw std::runtime_error("no command given: strata run [options] -- command args...");
  // Nothing is created for a command that cannot run.
  std::string why;
  if (int code = resolve_command(o.command[0], why)) {
    std::fprintf(stderr, "strata: %s%s\n", o.command[0].c_str(), why.c_str());
    return code;
  }
  std::string dir = o.out.empty() ? default_out(o.command[0]) : o.out;
  std::error_code ec;
  const std::vector<fs::path> created = missing_dirs(dir);
  fs::create_directories(dir, ec);
  dir = fs::absolute(dir).lexically_normal().string();
  if (!dir.empty() && dir.back() == '/') dir.pop_back();
  if (ec && !o.quiet) std::fprintf(stderr, "strata: warning: cannot create %s: %s\n", dir.c_str(), ec.message().c_str());
  // Removes what strata created if nothing was written into it.
  auto remove_created = [&] {
    std::error_code rec;
    for (auto it = created.rbegin(); it != created.rend(); ++it)
      if (!fs::remove(*it, rec)) break;  // not empty (or not ours): keep it and its parents
  };
  set_environment(o, dir);
#ifndef STRATA_LEAN_RUN
  if (o.live) {
    setenv("STRATA_LIVE", "1", 1);
    live::create_channel(dir, live::parse_mode(o.mode));
  }
#endif
  // Where processes that cannot create their own trace file (a changed user,
  // a full disk) say so; writable by all, removed again if nobody wrote.
  const std::string unwritable_log = dir + "/" + format::kUnwritableLog;
  if (int fd = open(unwritable_log.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0666); fd >= 0) {
    fchmod(fd, 0666);
    close(fd);
  }
  auto drop_empty_log = [&] {
    std::error_code lec;
    if (fs::file_size(unwritable_log, lec) == 0 && !lec) fs::remove(unwritable_log, lec);
  };

  // Files already there (an earlier run, or one still writing here) are not
  // this run's: not counted, not reported on, but the readers will take them
  // with this run's as one trace.
  const std::set<std::string> earlier = process_files(dir);
  if (!earlier.empty() && !o.quiet)
    std::fprintf(stderr, "strata: warning: %s already held %zu process file%s (an earlier or concurrent run): the "
                 "readers will take them and this run's as one trace (a new -o keeps runs apart)\n",
                 dir.c_str(), earlier.size(), earlier.size() == 1 ? "" : "s");

  std::vector<char*> argv;
  for (auto& a : o.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  // The signals strata forwards, and SIGCHLD, are blocked from before the
  // fork on in strata (the live server's threads inherit the mask) and taken
  // by wait_forwarding (a thread strata did not start hands them on with
  // redirect_stray_signal); the command gets strata's own mask and dispositions
  // back before exec: one ignored by whoever started strata stays ignored by
  // the command, which drops a forwarded copy as it would the original.
  // SIGCHLD is set to its default in strata alone: ignored, the kernel would
  // reap the command before strata could read its status.
  sigset_t fwd, blocked, old_mask;
  sigemptyset(&fwd);
  for (int sig : forwarded_signal::kSignals) sigaddset(&fwd, sig);
  blocked = fwd;
  sigaddset(&blocked, SIGCHLD);
  sigprocmask(SIG_BLOCK, &blocked, &old_mask);
  struct sigaction old_chld {}, dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(SIGCHLD, &dfl, &old_chld);
  waiting_tid = gettid();
  struct sigaction old_act[std::size(forwarded_signal::kSignals)];
  for (size_t i = 0; i < std::size(forwarded_signal::kSignals); ++i) {
    struct sigaction sa {};
    sa.sa_sigaction = redirect_stray_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigfillset(&sa.sa_mask);
    sigaction(forwarded_signal::kSignals[i], &sa, &old_act[i]);
  }
  // The child reports a failed exec through this pipe (closed by a good exec).
  int report[2] = {-1, -1};
  if (pipe2(report, O_CLOEXEC) != 0) report[0] = report[1] = -1;
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    sigaction(SIGCHLD, &old_chld, nullptr);
    for (size_t i = 0; i < std::size(forwarded_signal::kSignals); ++i) sigaction(forwarded_signal::kSignals[i], &old_act[i], nullptr);
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    if (report[0] >= 0) close(report[0]);
    execvp(argv[0], argv.data());
    int err = errno;
    if (report[1] >= 0) (void)!write(report[1], &err, sizeof err);
    _exit(err == ENOENT ? 127 : 126);
  }
  child_pid = pid;
  // Started after the fork: the command inherits none of its sockets.
  auto server = o.live ? start_live_server(o, dir) : nullptr;
  int exec_err = 0;
  if (report[1] >= 0) {
    close(report[1]);
    ssize_t n;
    while ((n = read(report[0], &exec_err, sizeof exec_err)) < 0 && errno == EINTR) {
    }
    if (n != sizeof exec_err) exec_err = 0;
    close(report[0]);
  }
  // Signals stay blocked to the end: one that comes after the command ended
  // has nobody to go to, and must not end strata before it reports.
  const int status = wait_forwarding(pid, fwd);
  child_pid = -1;
  if (server) server->stop();
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  drop_empty_log();
  if (exec_err) {
    std::fprintf(stderr, "strata: %s: %s\n", argv[0], std::strerror(exec_err));
    remove_created();
    return code;
  }
  std::vector<std::string> mine;
  for (const auto& name : process_files(dir))
    if (!earlier.contains(name)) mine.push_back(name);
  const size_t files = mine.size();
  if (files == 0) remove_created();
  if (!o.quiet) {
    if (files == 0)
      std::fprintf(stderr, "strata: warning: no trace was written to %s (is it writable? is the command statically linked?)\n",
                   dir.c_str());
    else std::fprintf(stderr, "strata: trace written to %s (%zu process file%s)\n", dir.c_str(), files, files == 1 ? "" : "s");
    if (files) report_empty_files(dir, mine);
    if (files) report_still_running(mine, pid);
  }
  end_like_the_command(status, o.quiet);
  return code;
}

}  // namespace

// --layers: each item one the runtime knows (core.cc reads STRATA_LAYERS);
// an unknown one used to record nothing of it, silently.
static std::string layers_error(std::string& v) {
  static const char* const known[] = {"posix", "stdio", "proc", "app"};
  size_t at = 0;
  while (at <= v.size()) {
    const size_t end = std::min(v.find(',', at), v.size());
    std::string item = v.substr(at, end - at);
    item.erase(0, item.find_first_not_of(' '));  // spaces around items are ignored
    item.erase(item.find_last_not_of(' ') + 1);
    bool ok = item.empty();
    for (const char* k : known) ok = ok || item == k;
    if (!ok) return "unknown layer '" + item + "' (layers: posix, stdio, proc, app)";
    at = end + 1;
  }
  return "";
}

// --buffer-size: digits and an optional K, M or G, from 1 KiB to 1 GiB (the
// runtime rounds it up to a power of two); "abc" used to give 4 MiB and
// "1T" 1 byte, silently.
static std::string buffer_size_error(std::string& v) {
  size_t digits = 0;
  while (digits < v.size() && v[digits] >= '0' && v[digits] <= '9') ++digits;
  const std::string suffix = v.substr(digits);
  if (digits == 0 || digits > 12 || (suffix.size() > 1) ||
      (suffix.size() == 1 && std::string("kKmMgG").find(suffix[0]) == std::string::npos))
    return "bad size '" + v + "' (bytes, or a number with K, M or G)";
  unsigned long long n = std::stoull(v.substr(0, digits));
  const int shift = suffix.empty() ? 0 : (suffix[0] == 'k' || suffix[0] == 'K') ? 10 : (suffix[0] == 'm' || suffix[0] == 'M') ? 20 : 30;
  if (n > (1ull << 40)) return "size '" + v + "' out of range (1K to 1G)";
  n <<= shift;
  if (n < 1024 || n > (1ull << 30)) return "size '" + v + "' out of range (1K to 1G)";
  return "";
}

void add_run(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  auto* cmd = app.add_subcommand("run", "Run a command under the tracer: strata run [options] -- command args...");
  cmd->add_option("-o,--output", o->out, "Trace directory (default: strata-<command>-<time>)");
  auto* mode = cmd->add_option("-m,--mode", o->mode,
                               "trace (all events), profile (per-file counters), smart (full events for the first iterations of the main loop, then counters) or off")
                   ->check(CLI::IsMember({"trace", "profile", "off", "smart"}));
  // One value per occurrence: a vector option takes the arguments that
  // follow it, and swallowed the "--" before the command (whose own options
  // then failed as strata's: `strata run --exclude /data -- sh -c ...`).
  cmd->add_option("--exclude", o->exclude, "Path prefix not to trace (repeatable; /proc, /sys, /dev and the trace are always excluded)")
      ->allow_extra_args(false);
  cmd->add_option("--include", o->include, "Trace only paths under this prefix (repeatable)")->allow_extra_args(false);
  cmd->add_option("--layers", o->layers, "Comma-separated layers to record: posix,stdio,proc,app (default: all)")
      ->check(CLI::Validator(layers_error, "LAYER,..."));
  cmd->add_option("--buffer-size", o->buffer_size, "Event buffer per thread in bytes (K/M/G suffixes; default 4M)")
      ->check(CLI::Validator(buffer_size_error, "SIZE"));
  cmd->add_option("--flush-interval", o->flush_interval_ms, "Write buffered events at least every N ms (default 1000)");
  cmd->add_flag("-q,--quiet", o->quiet, "Print nothing but the command's own output");
  cmd->add_flag("--no-python", o->no_python, "Do not load the Python instrumentation");
  cmd->add_flag("--live", o->live, "Serve the job's live page and API, and let strata ctl steer it (default -m profile)");
  cmd->add_option("--port", o->port, "--live: TCP port of the server (default: a free one)")->check(CLI::Range(1, 65535));
  cmd->add_option("--listen", o->listen, "--live: address to listen on (default 127.0.0.1)");
  cmd->add_option("command", o->command, "The command to run")->required();
  cmd->prefix_command(false);
  cmd->callback([o, mode] {
    o->mode_given = mode->count() > 0;
    std::exit(run_command(*o));
  });
}

}  // namespace strata::cli
