// How `strata run` (src/cli/run.cc) marks a signal it forwards to the command,
// so that the runtime inside the command (signals.cc) can tell that copy from
// the one the same sender may have sent to the command directly. Constants
// only: both sides include it, neither depends on the other.
#pragma once

#include <signal.h>

#include <cstdint>

namespace strata::forwarded_signal {

// The signals strata run forwards when another process sends them to it.
inline constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

// strata run puts its pid here, for the command to know its launcher.
inline constexpr char kLauncherPidVariable[] = "STRATA_LAUNCHER_PID";

// The siginfo's value of a forwarded copy: this tag in the high 32 bits and
// the launcher's pid in the low ones. Its si_code is SI_QUEUE (the kernel
// takes no other from another process), its si_pid and si_uid the original
// sender's.
inline constexpr uint64_t kTag = 0x73747261;  // "stra"

inline constexpr uint64_t value_for(int launcher_pid) { return kTag << 32 | static_cast<uint32_t>(launcher_pid); }

// A copy of the same signal from the same sender arriving within this long of
// the other is the other's twin.
inline constexpr int64_t kTwinWindowNs = 1'000'000'000;

}  // namespace strata::forwarded_signal
