// The live channel of `strata run --live`: how every traced process of a job
// reports to, and takes orders from, the launcher and `strata ctl` while the
// job runs. Shared by the runtime (which writes its own slot) and the tools
// (which read every slot and write requests), like format.h for trace files.
// docs/live.md is the spec.
//
// The channel is a directory, `<trace dir>/.live/` (mode 0700). Each traced
// process image maps one file `<host>-<pid>-<start_mono_ns>.live` (mode 0600,
// the same stem as its trace file) of exactly sizeof(LiveSlot) bytes with
// MAP_SHARED. The file is made complete under a hidden name (`.<name>.tmp`)
// and renamed into place, so a file with the .live suffix always has a full
// slot with its identity filled in; readers still check magic and size. The process writes the status half; controllers write the
// request half and then wake the process's writer thread with FUTEX_WAKE on
// `wake` (a shared futex: the word lives in the file mapping). `job` holds
// one LiveJob: the job-wide mode a process adopts when it starts.
//
// Depends on nothing but the C++ library. Every field is naturally aligned and
// lock-free, so processes of the same machine share it without locks.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace strata::format {

inline constexpr char kLiveDirName[] = ".live";
inline constexpr char kLiveSuffix[] = ".live";
inline constexpr char kLiveJobFile[] = "job";
inline constexpr uint64_t kLiveMagic = 0x314556494c415453ull;  // "STRALIV1" little-endian
inline constexpr uint32_t kLiveVersion = 1;

// What a process records. The values are stored in slots and in the `ret`
// column of the PROC "mode" event that marks each switch in the trace.
enum class LiveMode : uint32_t {
  kOff = 0,      // nothing recorded (interposers pass straight through)
  kProfile = 1,  // counters and rates only: no events in the trace
  kTrace = 2,    // every event in the trace
  kSmart = 3,    // counters for all; events of the first iterations of the main loop and of changed ones (smart.h)
};
inline constexpr uint32_t kNumLiveModes = 4;
inline constexpr const char* kLiveModeNames[kNumLiveModes] = {"off", "profile", "trace", "smart"};
inline constexpr uint32_t kNoMode = 0xffffffffu;

enum class LiveState : uint32_t {
  kStarting = 0,  // slot created, writer not yet reporting
  kRunning = 1,
  kExited = 2,    // the process ended (exit status in exit_status)
  kReplaced = 3,  // the image called exec: its successor has a slot of its own
};

inline constexpr size_t kLiveCommandBytes = 512;
inline constexpr size_t kLiveTagsBytes = 1024;
inline constexpr size_t kLiveFilesBytes = 2048;

struct alignas(64) LiveSlot {
  // ---- identity: written once by the process before `magic` ----
  uint64_t magic;  // kLiveMagic, stored last (release) when the identity is complete
  uint32_t version;
  uint32_t slot_bytes;  // sizeof(LiveSlot)
  int32_t pid;
  int32_t ppid;
  uint64_t start_wall_ns;  // CLOCK_REALTIME at process start
  uint64_t start_mono_ns;  // CLOCK_MONOTONIC at process start (also in the file name)
  char command[kLiveCommandBytes];  // argv joined by spaces, NUL-terminated, truncated

  // ---- status: written by the process's writer thread, at least once per flush interval ----
  std::atomic<uint32_t> state;          // LiveState
  std::atomic<uint32_t> mode;           // LiveMode in force
  std::atomic<int32_t> exit_status;     // valid when state == kExited
  std::atomic<uint32_t> open_files;     // traced descriptors open now
  std::atomic<uint64_t> heartbeat_mono_ns;  // CLOCK_MONOTONIC of the last status update
  std::atomic<uint64_t> events;         // events recorded since the process started (all modes)
  std::atomic<uint64_t> dropped;        // events lost (full rings, failed writes)
  std::atomic<uint64_t> read_bytes;     // bytes returned by recorded read calls
  std::atomic<uint64_t> written_bytes;  // bytes accepted by recorded write calls
  std::atomic<uint64_t> read_ops;
  std::atomic<uint64_t> write_ops;
  std::atomic<uint64_t> meta_ops;       // recorded calls that move no data
  std::atomic<uint64_t> traced_ns;      // time spent in mode trace so far (smart counts as trace)
  // Rates over the last window of at least one second, rounded to integers.
  std::atomic<uint64_t> events_per_s;
  std::atomic<uint64_t> read_bytes_per_s;
  std::atomic<uint64_t> written_bytes_per_s;
  // Text fields below change under a seqlock: odd while being written.
  std::atomic<uint32_t> text_seq;
  uint32_t reserved0;
  char tags[kLiveTagsBytes];    // JSON object: the context tags of the last recorded event
  char files[kLiveFilesBytes];  // open traced files, one path per line, truncated

  // ---- requests: written by controllers ----
  alignas(64) std::atomic<uint32_t> wake;  // futex word: controllers add 1, then FUTEX_WAKE
  std::atomic<uint32_t> requested_mode;    // LiveMode to switch to
  std::atomic<uint64_t> request_seq;       // +1 per mode request (after requested_mode is stored)
  std::atomic<uint64_t> revert_after_ns;   // with a request: go back to the previous mode after this long (0: stay)
  std::atomic<uint64_t> snapshot_seq;      // +1: flush events and write a counters (PROFILE) snapshot now
  // ---- acknowledgements: written by the process ----
  alignas(64) std::atomic<uint64_t> applied_seq;   // request_seq last applied
  std::atomic<uint64_t> snapshot_done;             // snapshot_seq last completed
  std::atomic<uint64_t> revert_at_mono_ns;         // when a timed switch reverts (0: none)
};
static_assert(std::atomic<uint64_t>::is_always_lock_free && std::atomic<uint32_t>::is_always_lock_free);

// The job-wide settings, in `<trace dir>/.live/job`.
struct alignas(64) LiveJob {
  uint64_t magic;  // kLiveMagic
  uint32_t version;
  uint32_t job_bytes;  // sizeof(LiveJob)
  std::atomic<uint32_t> mode;  // LiveMode new processes start in
  uint32_t reserved0;
  std::atomic<uint64_t> revert_at_wall_ns;  // a timed job-wide switch ends then (0: none)
  std::atomic<uint32_t> revert_mode;        // ...back to this mode
};

}  // namespace strata::format
