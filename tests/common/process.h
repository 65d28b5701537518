// Shared by the C++ test suites: temporary directories and bounded runs of
// real programs (stdout/stderr captured, stdin /dev/null, own process group so
// a timeout ends everything the program started and nothing else, without the
// caller's STRATA_* / LD_PRELOAD).
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace strata_test {

namespace fs = std::filesystem;

// A fresh directory under /tmp, removed with everything in it (kept when
// STRATA_TEST_KEEP is set). `avoid` lists words the random suffix must not
// contain (the analyzer classifies files by name).
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "strata-test", const std::vector<std::string>& avoid = {}) {
    for (int attempt = 0; attempt < 100 && path_.empty(); ++attempt) {
      std::string tmpl = "/tmp/" + prefix + "-XXXXXX";
      char* d = mkdtemp(tmpl.data());
      if (!d) throw std::runtime_error("mkdtemp failed");
      std::string suffix = std::string(d).substr(5 + prefix.size());
      for (char& c : suffix) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      bool bad = std::any_of(avoid.begin(), avoid.end(), [&](const std::string& w) { return suffix.find(w) != std::string::npos; });
      if (bad) {
        rmdir(d);
        continue;
      }
      path_ = d;
    }
    if (path_.empty()) throw std::runtime_error("no usable temporary directory");
  }
  ~TempDir() {
    if (std::getenv("STRATA_TEST_KEEP")) return;
    std::error_code ec;
    fs::permissions(path_, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string sub(const std::string& name) const { return path_ + "/" + name; }
  std::string mkdir(const std::string& name) const {
    fs::create_directories(sub(name));
    return sub(name);
  }

 private:
  std::string path_;
};

struct RunResult {
  int code = -1;   // exit status, or 128 + signal number
  int signal = 0;  // the signal that ended it, 0 if it exited
  bool timed_out = false;
  std::string out, err;
};

struct Child {
  pid_t pid = -1;
  int out_fd = -1, err_fd = -1;
};

// Starts argv; env entries "K=V" are added after STRATA_* and LD_PRELOAD are removed.
inline Child start(const std::vector<std::string>& argv, const std::vector<std::string>& env = {}) {
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    setpgid(0, 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    std::vector<std::string> drop;
    for (char** e = environ; *e; ++e)
      if (std::strncmp(*e, "STRATA_", 7) == 0 || std::strncmp(*e, "LD_PRELOAD=", 11) == 0)
        drop.emplace_back(*e, std::strchr(*e, '=') - *e);
    for (auto& k : drop) unsetenv(k.c_str());
    for (auto& e : env) putenv(const_cast<char*>(e.c_str()));
    execvp(args[0], args.data());
    dprintf(2, "cannot exec %s: %s\n", args[0], strerror(errno));
    _exit(127);
  }
  setpgid(pid, pid);  // from the parent too: no race with a kill of the group
  close(out[1]);
  close(err[1]);
  return Child{pid, out[0], err[0]};
}

// Collects the child's output until it exits; kills its process group after timeout_s.
inline RunResult finish(Child c, int timeout_s = 60) {
  RunResult r;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  bool open[2] = {true, true};
  int fds[2] = {c.out_fd, c.err_fd};
  char buf[65536];
  while (open[0] || open[1]) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      r.timed_out = true;
      kill(-c.pid, SIGKILL);
      break;
    }
    pollfd p[2] = {{open[0] ? fds[0] : -1, POLLIN, 0}, {open[1] ? fds[1] : -1, POLLIN, 0}};
    int n = poll(p, 2, static_cast<int>(std::min<long>(left, 500)));
    if (n < 0 && errno == EINTR) continue;
    for (int i = 0; i < 2; ++i) {
      if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t k = read(fds[i], buf, sizeof buf);
      if (k > 0) (i ? r.err : r.out).append(buf, static_cast<size_t>(k));
      else open[i] = false;
    }
  }
  close(c.out_fd);
  close(c.err_fd);
  int status = 0;
  while (waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) {
    r.code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r.signal = WTERMSIG(status);
    r.code = 128 + r.signal;
  }
  return r;
}

inline RunResult run(const std::vector<std::string>& argv, int timeout_s = 60, const std::vector<std::string>& env = {}) {
  return finish(start(argv, env), timeout_s);
}

// Polls cond every 10 ms for at most timeout_s.
inline bool wait_for(const std::function<bool()>& cond, int timeout_s = 30) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return cond();
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(text.data(), static_cast<std::streamsize>(text.size()));
}

}  // namespace strata_test
