// Live channel files written by the tests themselves, with the real layout of
// src/format/live.h, for the reader, controller and server tests before (and
// besides) the runtime that fills them in a traced job.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>
#include <string>

#include "cli/live.h"
#include "format/live.h"

namespace strata_test {

inline uint64_t mono_now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// A mapped slot file; unmapped (not removed) on destruction.
class SlotFile {
 public:
  // Creates `<trace>/.live/<host>-<pid>-<start>.live`, identity filled in, running, heartbeat now.
  SlotFile(const std::string& trace, int pid, const std::string& command, uint64_t start_mono_ns = mono_now_ns()) {
    path_ = trace + "/.live/" + strata::cli::this_host() + "-" + std::to_string(pid) + "-" +
            std::to_string(start_mono_ns) + ".live";
    int fd = open(path_.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || ftruncate(fd, sizeof(strata::format::LiveSlot)) != 0) throw std::runtime_error("cannot create " + path_);
    void* m = mmap(nullptr, sizeof(strata::format::LiveSlot), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED) throw std::runtime_error("cannot map " + path_);
    slot_ = static_cast<strata::format::LiveSlot*>(m);
    slot_->version = strata::format::kLiveVersion;
    slot_->slot_bytes = sizeof(strata::format::LiveSlot);
    slot_->pid = pid;
    slot_->ppid = getpid();
    slot_->start_wall_ns = 1;
    slot_->start_mono_ns = start_mono_ns;
    std::strncpy(slot_->command, command.c_str(), sizeof slot_->command - 1);
    slot_->state.store(static_cast<uint32_t>(strata::format::LiveState::kRunning));
    slot_->mode.store(static_cast<uint32_t>(strata::format::LiveMode::kProfile));
    slot_->heartbeat_mono_ns.store(mono_now_ns());
    std::strcpy(slot_->tags, "{}");
    std::atomic_ref<uint64_t>(slot_->magic).store(strata::format::kLiveMagic, std::memory_order_release);
  }
  ~SlotFile() { munmap(slot_, sizeof(strata::format::LiveSlot)); }
  SlotFile(const SlotFile&) = delete;
  SlotFile& operator=(const SlotFile&) = delete;

  strata::format::LiveSlot* operator->() { return slot_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  strata::format::LiveSlot* slot_ = nullptr;
};

}  // namespace strata_test
