// Which trace files are still being written: a process file without footer
// whose process is still running on this host. Used by `strata run` (to name
// the descendants still running when the command returns) and `strata info`.
#pragma once

#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <string_view>

namespace strata::cli {

inline std::string this_host() {
  utsname u{};
  return uname(&u) == 0 ? std::string(u.nodename) : std::string();
}

// The parts of a process file name `<host>-<pid>-<start_mono_ns>.strata`
// (src/runtime/writer.cc open_file(); the host may contain '-').
struct FileNameParts {
  std::string host;
  int64_t pid = 0;
  uint64_t start_mono_ns = 0;
};

inline bool parse_file_name(const std::string& name, FileNameParts& out) {
  static constexpr std::string_view kSuffix = ".strata";
  if (name.size() <= kSuffix.size() || name.compare(name.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0)
    return false;
  std::string stem = name.substr(0, name.size() - kSuffix.size());
  size_t d2 = stem.rfind('-');
  if (d2 == std::string::npos || d2 == 0) return false;
  size_t d1 = stem.rfind('-', d2 - 1);
  if (d1 == std::string::npos) return false;
  char* end = nullptr;
  std::string pid = stem.substr(d1 + 1, d2 - d1 - 1), start = stem.substr(d2 + 1);
  if (pid.empty() || start.empty()) return false;
  out.pid = std::strtoll(pid.c_str(), &end, 10);
  if (*end || out.pid <= 0) return false;
  out.start_mono_ns = std::strtoull(start.c_str(), &end, 10);
  if (*end) return false;
  out.host = stem.substr(0, d1);
  return true;
}

// True if `pid` on this machine is the running (not zombie) process that
// started writing a file at CLOCK_MONOTONIC `start_mono_ns`: the process must
// have started before that instant, so a pid reused since is not mistaken for
// it. Call only for files of this host.
inline bool process_running(int64_t pid, uint64_t start_mono_ns) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!in || !std::getline(in, stat)) return false;
  size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return false;
  std::istringstream fields(stat.substr(paren + 1));
  std::string state, f;
  fields >> state;  // field 3
  if (state == "Z" || state == "X" || state == "x") return false;
  unsigned long long starttime = 0;
  for (int i = 4; i <= 22 && (fields >> f); ++i)
    if (i == 22) starttime = std::strtoull(f.c_str(), nullptr, 10);
  if (starttime == 0) return true;  // unknown: trust the pid
  long hz = sysconf(_SC_CLK_TCK);
  if (hz <= 0) return true;
  // starttime counts clock ticks since boot on CLOCK_BOOTTIME, which runs
  // ahead of CLOCK_MONOTONIC by the time spent suspended.
  timespec b{}, m{};
  clock_gettime(CLOCK_BOOTTIME, &b);
  clock_gettime(CLOCK_MONOTONIC, &m);
  const long double boot_minus_mono = (b.tv_sec - m.tv_sec) * 1e9L + (b.tv_nsec - m.tv_nsec);
  const long double started_boot_ns = static_cast<long double>(starttime) * 1e9L / hz;
  const long double slack_ns = 2e9L / hz + 5e7L;  // tick rounding
  return started_boot_ns <= static_cast<long double>(start_mono_ns) + boot_minus_mono + slack_ns;
}

// The command line of a running process, arguments separated by spaces.
inline std::string process_cmdline(int64_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!s.empty() && s.back() == '\0') s.pop_back();
  for (char& c : s)
    if (c == '\0') c = ' ';
  if (s.empty()) {
    std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
    std::getline(comm, s);
  }
  return s;
}

}  // namespace strata::cli
