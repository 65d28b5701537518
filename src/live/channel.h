// The tools' side of the live channel (docs/live.md, src/format/live.h): find
// the slot of every traced process of a job, read their status, and steer
// them (mode switches, counters snapshots) through the request half of each
// slot and the job file. Used by `strata ctl`, the live server and tests.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "format/live.h"

namespace strata::live {

// A snapshot of one slot, read without locks (text fields under their seqlock).
struct ProcessStatus {
  std::string slot_path;
  std::string host;
  int64_t pid = 0, ppid = 0;
  uint64_t start_wall_ns = 0, start_mono_ns = 0;
  std::string command;
  std::string state;  // running, exited, replaced, gone (starting reads as running)
  std::string mode;   // off, profile, trace, smart ("?" for a value out of range)
  int32_t exit_status = 0;
  uint32_t open_file_count = 0;
  uint64_t heartbeat_age_ns = 0;
  uint64_t events = 0, dropped = 0, read_bytes = 0, written_bytes = 0;
  uint64_t read_ops = 0, write_ops = 0, meta_ops = 0, traced_ns = 0;
  uint64_t events_per_s = 0, read_bytes_per_s = 0, written_bytes_per_s = 0;
  std::string tags_json = "{}";  // a JSON object
  std::vector<std::string> open_files;
  uint64_t revert_at_mono_ns = 0;
};

struct JobStatus {
  bool present = false;  // the job file exists and is valid
  std::string mode;      // what a process starting now adopts (a timed switch that ended reads as reverted)
  uint64_t revert_at_wall_ns = 0;
  std::string revert_mode;
};

// A mode request's outcome per targeted process.
struct SwitchResult {
  std::vector<int64_t> switched;  // acknowledged (applied_seq reached the request)
  std::vector<int64_t> pending;   // not acknowledged within the wait
};

// Parses "30s", "500ms", "2m", "1h", "1.5s" or a plain number of seconds into
// nanoseconds; -1 when malformed or negative.
int64_t parse_duration_ns(const std::string& text);

// Mode name -> value; kNoMode when unknown.
uint32_t parse_mode(const std::string& name);
const char* mode_name(uint32_t mode);

// Thrown when the trace has no live channel or a request cannot be served;
// the message names the trace directory.
struct ChannelError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Channel {
 public:
  // `trace_dir` must hold `.live/`; throws ChannelError naming it otherwise.
  // Warnings (files that are no slot) go to `warn` (stderr when empty).
  explicit Channel(std::string trace_dir, std::function<void(const std::string&)> warn = {});
  ~Channel();
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  const std::string& trace_dir() const { return dir_; }
  std::string live_dir() const;

  // Every slot, rescanning the directory (new processes appear); sorted by
  // start time. A slot is warned about once.
  std::vector<ProcessStatus> processes();
  JobStatus job();

  // Switches `pid` (0: every running process, and the job file for processes
  // that start later) to `mode`; `for_ns` > 0 reverts after that long.
  // Waits up to `wait_ms` for the processes to acknowledge. Throws
  // ChannelError when pid names no running process.
  SwitchResult request_mode(uint32_t mode, int64_t pid, int64_t for_ns, int wait_ms = 1000);

  // Asks every running process for a counters (PROFILE) snapshot and waits
  // up to `wait_ms` for all of them; returns the pids that did not answer.
  std::vector<int64_t> request_snapshot(int wait_ms = 2000);

  // Status JSON of docs/live.md: {"live": true, "job": {...}, "processes": [...]}.
  std::string status_json();

 private:
  struct Slot;
  void rescan();
  static ProcessStatus read_slot(const Slot& s);
  bool slot_running(const Slot& s) const;
  void warn(const std::string& what);

  std::string dir_;
  std::function<void(const std::string&)> warn_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::vector<std::string> warned_;
  void* job_map_ = nullptr;
};

// Creates `<dir>/.live/` (0700) and its job file (0600) with `mode`; used by
// `strata run --live`. Throws ChannelError.
void create_channel(const std::string& dir, uint32_t mode);

// JSON of one process (docs/live.md "A process object").
std::string process_json(const ProcessStatus& p);

}  // namespace strata::live
