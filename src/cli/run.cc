// `strata run [options] -- command...`: runs the command with the runtime
// preloaded and the STRATA_* variables set, so it and every process it starts
// write into one trace directory. Exits with the command's exit code.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <thread>

#include "cli/commands.h"

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

// TSC ticks per second when the TSC is invariant (constant and non-stop), else 0.
double calibrate_tsc() {
#if defined(__x86_64__)
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  bool constant = false, nonstop = false;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    constant = line.find(" constant_tsc") != std::string::npos;
    nonstop = line.find(" nonstop_tsc") != std::string::npos;
    break;
  }
  if (!constant || !nonstop) return 0;
  auto mono = [] {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
  };
  double t0 = mono();
  uint64_t c0 = __rdtsc();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  double t1 = mono();
  uint64_t c1 = __rdtsc();
  return (c1 - c0) / (t1 - t0) * 1e9;
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
  }
}

pid_t child_pid = -1;
void forward_signal(int sig) {
  if (child_pid > 0) kill(child_pid, sig);
}

int run_command(const RunOptions& o) {
  if (o.command.empty()) throw std::runtime_error("no command given: strata run [options] -- command args...");
  std::string dir = o.out.empty() ? default_out(o.command[0]) : o.out;
  std::error_code ec;
  fs::create_directories(dir, ec);
  dir = fs::absolute(dir).lexically_normal().string();
  if (!dir.empty() && dir.back() == '/') dir.pop_back();
  if (ec && !o.quiet) std::fprintf(stderr, "strata: warning: cannot create %s: %s\n", dir.c_str(), ec.message().c_str());
  set_environment(o, dir);

  std::vector<char*> argv;
  for (auto& a : o.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  // The terminal's ^C reaches the command directly; strata waits for it.
  signal(SIGINT, SIG_IGN);
  signal(SIGQUIT, SIG_IGN);
  child_pid = fork();
  if (child_pid < 0) throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
  if (child_pid == 0) {
    signal(SIGINT, SIG_DFL);
    signal(SIGQUIT, SIG_DFL);
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "strata: cannot run %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  signal(SIGTERM, forward_signal);
  signal(SIGHUP, forward_signal);
  int status = 0;
  while (waitpid(child_pid, &status, 0) < 0 && errno == EINTR) {
  }
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  size_t files = 0;
  for (auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".strata") ++files;
  if (!o.quiet) {
    if (files == 0) std::fprintf(stderr, "strata: warning: no trace was written to %s (is it writable?)\n", dir.c_str());
    else std::fprintf(stderr, "strata: trace written to %s (%zu process files)\n", dir.c_str(), files);
  }
  return code;
}

}  // namespace

void add_run(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  auto* cmd = app.add_subcommand("run", "Run a command under the tracer: strata run [options] -- command args...");
  cmd->add_option("-o,--output", o->out, "Trace directory (default: strata-<command>-<time>)");
  cmd->add_option("-m,--mode", o->mode, "trace (all events) or profile (per-file counters)")
      ->check(CLI::IsMember({"trace", "profile"}));
  cmd->add_option("--exclude", o->exclude, "Path prefix not to trace (repeatable; /proc, /sys, /dev and the trace are always excluded)");
  cmd->add_option("--include", o->include, "Trace only paths under this prefix (repeatable)");
  cmd->add_option("--layers", o->layers, "Comma-separated layers to record: posix,stdio,proc,app (default: all)");
  cmd->add_option("--buffer-size", o->buffer_size, "Event buffer per thread in bytes (K/M/G suffixes; default 4M)");
  cmd->add_option("--flush-interval", o->flush_interval_ms, "Write buffered events at least every N ms (default 1000)");
  cmd->add_flag("-q,--quiet", o->quiet, "Print nothing but the command's own output");
  cmd->add_flag("--no-python", o->no_python, "Do not load the Python instrumentation");
  cmd->add_option("command", o->command, "The command to run")->required();
  cmd->prefix_command(false);
  cmd->callback([o] { std::exit(run_command(*o)); });
}

}  // namespace strata::cli
