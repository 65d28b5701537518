// `strata ctl TRACE status|mode|counters` (steer a live job through its
// channel files, no server needed) and `strata serve TRACE` (the live
// server over a finished trace). docs/live.md.
#include <signal.h>

#include <cstdio>
#include <iostream>
#include <memory>

#include "analysis/analyze.h"
#include "cli/commands.h"
#include "live/channel.h"
#include "live/counters_json.h"
#include "live/server.h"

namespace strata::cli {
namespace {

struct CtlOptions {
  std::string trace;
  bool json = false;
  std::string mode;
  int64_t pid = 0;
  std::string for_text;
  std::string path;
};

std::string human_bytes(uint64_t n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", v, units[u]);
  return buf;
}

void print_status(live::Channel& channel) {
  const auto procs = channel.processes();
  const live::JobStatus job = channel.job();
  std::printf("%s: job mode %s, %zu process%s\n", channel.trace_dir().c_str(), job.present ? job.mode.c_str() : "?",
              procs.size(), procs.size() == 1 ? "" : "es");
  std::printf("%8s %8s %-8s %-7s %10s %9s %10s %10s %11s %11s  %s\n", "PID", "PPID", "STATE", "MODE", "EVENTS",
              "EVENTS/S", "READ", "WRITTEN", "READ/S", "WRITTEN/S", "COMMAND");
  for (const auto& p : procs)
    std::printf("%8lld %8lld %-8s %-7s %10llu %9llu %10s %10s %11s %11s  %s\n", static_cast<long long>(p.pid),
                static_cast<long long>(p.ppid), p.state.c_str(), p.mode.c_str(),
                static_cast<unsigned long long>(p.events), static_cast<unsigned long long>(p.events_per_s),
                human_bytes(p.read_bytes).c_str(), human_bytes(p.written_bytes).c_str(),
                human_bytes(p.read_bytes_per_s).c_str(), human_bytes(p.written_bytes_per_s).c_str(),
                p.command.c_str());
}

std::string joined(const std::vector<int64_t>& pids) {
  std::string s;
  for (int64_t p : pids) s += (s.empty() ? "" : ", ") + std::to_string(p);
  return s;
}

int run_mode(const CtlOptions& o) {
  const uint32_t mode = live::parse_mode(o.mode);
  if (mode == format::kNoMode) throw CLI::ValidationError("mode", o.mode + ": not a mode (off, profile, trace, smart)");
  int64_t for_ns = 0;
  if (!o.for_text.empty() && (for_ns = live::parse_duration_ns(o.for_text)) <= 0)
    throw CLI::ValidationError("--for", o.for_text + ": not a duration (e.g. 30s, 500ms, 2m)");
  live::Channel channel(o.trace);
  const live::SwitchResult r = channel.request_mode(mode, o.pid, for_ns);
  const std::string span = o.for_text.empty() ? "" : " for " + o.for_text;
  if (r.switched.empty() && r.pending.empty())
    std::fprintf(stderr, "strata ctl: %s: no process is running; processes that start later begin in %s%s\n",
                 o.trace.c_str(), o.mode.c_str(), span.c_str());
  if (!r.switched.empty())
    std::fprintf(stderr, "strata ctl: switched %s to %s%s\n", joined(r.switched).c_str(), o.mode.c_str(), span.c_str());
  if (!r.pending.empty()) {
    std::fprintf(stderr, "strata ctl: warning: %s did not acknowledge within 1 s (the request stays in their slot)\n",
                 joined(r.pending).c_str());
    return 1;
  }
  return 0;
}

int run_counters(const CtlOptions& o) {
  live::Channel channel(o.trace);
  const auto silent = channel.request_snapshot(2000);
  if (!silent.empty())
    std::fprintf(stderr, "strata ctl: warning: no counters snapshot from %s within 2 s: their counters lag\n",
                 joined(silent).c_str());
  if (o.json) {
    std::cout << live::trace_counters_json(o.trace, o.path) << "\n";
    return 0;
  }
  analysis::AnalyzeOptions a;
  a.input = o.trace;
  a.darshan = true;
  a.path = o.path;
  return analysis::run_analyze(a, std::cout, std::cerr);
}

int run_serve(const live::ServerOptions& options) {
  // Blocked before the server's threads start, so they inherit the mask and
  // only sigwait below takes these signals.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&stop_signals, sig);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  live::Server server(options);
  server.start();
  if (options.listen != "127.0.0.1" && options.listen != "::1" && options.listen != "localhost")
    std::fprintf(stderr, "strata: warning: serving on %s: anyone who can reach it and has the token can read the trace\n",
                 options.listen.c_str());
  std::fprintf(stderr, "strata: serving %s at %s (Ctrl-C stops)\n", options.trace_dir.c_str(), server.url().c_str());
  int sig = 0;
  sigwait(&stop_signals, &sig);
  server.stop();
  return 0;
}

}  // namespace

void add_ctl(CLI::App& app) {
  auto o = std::make_shared<CtlOptions>();
  auto* ctl = app.add_subcommand("ctl", "Look at and steer a job run with strata run --live: status, mode, counters");
  ctl->add_option("trace", o->trace, "The live trace directory")->required();
  ctl->require_subcommand(1);
  auto* status = ctl->add_subcommand("status", "The job's processes: state, mode, events/s, bytes/s");
  status->add_flag("--json", o->json, "As JSON (the body of GET /api/status)");
  status->callback([o] {
    live::Channel channel(o->trace);
    if (o->json) std::cout << channel.status_json() << "\n";
    else print_status(channel);
  });
  auto* mode = ctl->add_subcommand("mode", "Switch the recording mode of every process, or of one (--pid)");
  mode->add_option("mode", o->mode, "off, profile, trace or smart")->required();
  mode->add_option("--pid", o->pid, "Only this process");
  mode->add_option("--for", o->for_text, "Go back to the previous mode after this long (30s, 500ms, 2m)");
  mode->callback([o] {
    if (int rc = run_mode(*o)) throw CLI::RuntimeError(rc);
  });
  auto* counters = ctl->add_subcommand("counters", "Darshan counters so far (asks every process for a snapshot)");
  counters->add_flag("--json", o->json, "As JSON (the body of GET /api/counters)");
  counters->add_option("--path", o->path, "Only files whose path starts with PREFIX");
  counters->callback([o] {
    if (int rc = run_counters(*o)) throw CLI::RuntimeError(rc);
  });
}

void add_serve(CLI::App& app) {
  auto o = std::make_shared<live::ServerOptions>();
  o->finished = true;
  auto* serve = app.add_subcommand("serve", "Serve the live page's API and the report page over a finished trace");
  serve->add_option("trace", o->trace_dir, "The trace directory")->required()->check(CLI::ExistingDirectory);
  serve->add_option("--port", o->port, "TCP port (default: a free one)")->check(CLI::Range(1, 65535));
  serve->add_option("--listen", o->listen, "Address to listen on (default 127.0.0.1; another one is reachable by others)");
  serve->callback([o] { std::exit(run_serve(*o)); });
}

}  // namespace strata::cli
