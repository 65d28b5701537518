// How the command `strata run` started ended, as far as its trace says: the
// "cut short" line of both `strata info` and `strata analyze`, which read the
// trace through different models (the reader's files, the analysis's
// processes) and hand it the same few facts per process image. Header-only:
// the analysis library is also built without the reader.
#pragma once

#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace strata::reader {

// One process image (a process, or what it exec'd into) of a trace.
struct ProcessImage {
  std::string host;
  int64_t pid = 0, ppid = 0;
  int64_t start = 0;   // start time, on any clock common to the images
  int64_t signal = 0;  // the fatal signal its handler saw, 0 none
  bool footer = true;  // its file was closed by the runtime
};

// Why the run ended early: the command (the earliest image whose parent, on
// its host, is not in the trace, followed through its execs to its last
// image) died of a signal its handler saw (a timeout's SIGTERM, Ctrl-C), or
// its file has no footer (SIGKILL, the out-of-memory killer, or still
// running). "" when the trace says neither.
inline std::string cut_short(const std::vector<ProcessImage>& images) {
  std::set<std::pair<std::string, int64_t>> pids;
  for (const auto& m : images) pids.emplace(m.host, m.pid);
  const ProcessImage* c = nullptr;
  for (const auto& m : images)
    if ((!pids.count({m.host, m.ppid}) || m.ppid == m.pid) && (!c || m.start < c->start)) c = &m;
  if (!c) return "";
  const ProcessImage* last = c;
  for (const auto& m : images)
    if (m.host == c->host && m.pid == c->pid && m.start > last->start) last = &m;
  const std::string who = "the command (pid " + std::to_string(last->pid) + ")";
  if (last->signal > 0) {
    const char* abbrev = sigabbrev_np(static_cast<int>(last->signal));
    return who + " was killed by " + (abbrev ? "SIG" + std::string(abbrev) : "signal " + std::to_string(last->signal));
  }
  return last->footer ? "" : who + " wrote no footer: killed by SIGKILL or out of memory, or still running";
}

}  // namespace strata::reader
