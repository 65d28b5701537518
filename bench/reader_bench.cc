// reader_bench: decode-only loop over a trace with the reader library
// (include/strata/reader.h). Every EVENTS block of every file is decoded into
// an EventBatch (all ten columns, times converted to ns); a checksum over the
// columns keeps the work observable. With decode_threads 0 (the default) it
// is single-threaded, so events per CPU second is the per-core decode rate;
// with decode_threads > 0 the blocks are decoded on that many more threads
// ahead of the loop (reader::ReadOptions), CPU is the whole process's, and
// events per wall second is the figure that grows.
//
//   reader_bench TRACE [repeats=3] [decode_threads=0]
// prints: events=N files=F threads=T best_wall_s=.. best_cpu_s=.. events_per_s=.. (per CPU second)
//         events_per_wall_s=.. (best of repeats)
#include <time.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>

#include "strata/reader.h"

namespace {
double clock_s(clockid_t id) {
  timespec t;
  clock_gettime(id, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: reader_bench TRACE [repeats=3] [decode_threads=0]\n");
    return 2;
  }
  const int repeats = argc > 2 ? std::max(1, std::atoi(argv[2])) : 3;
  strata::reader::ReadOptions options;
  options.decode_threads = argc > 3 ? static_cast<unsigned>(std::max(0, std::atoi(argv[3]))) : 0;
  const clockid_t cpu_clock = options.decode_threads ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_THREAD_CPUTIME_ID;
  try {
    strata::reader::TraceReader trace(argv[1]);
    double best_wall = 1e30, best_cpu = 1e30;
    uint64_t events = 0, check = 0;
    for (int r = 0; r < repeats; ++r) {
      events = 0;
      check = 0;
      double w0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(cpu_clock);
      strata::reader::EventBatch b;
      for (const auto& f : trace.files()) {
        strata::reader::FileReader fr(f, options);
        while (fr.next(b)) {
          const size_t n = b.size_events();
          events += n;
          for (size_t i = 0; i < n; ++i)
            check += b.ts[i] ^ b.dur[i] ^ static_cast<uint64_t>(b.offset[i] + b.size[i] + b.ret[i]) ^ b.name[i] ^
                     b.path[i] ^ b.ctx[i] ^ static_cast<uint32_t>(b.fd[i] + b.err[i]);
        }
      }
      double w1 = clock_s(CLOCK_MONOTONIC), c1 = clock_s(cpu_clock);
      best_wall = std::min(best_wall, w1 - w0);
      best_cpu = std::min(best_cpu, c1 - c0);
    }
    std::printf("events=%" PRIu64 " files=%zu threads=%u best_wall_s=%.4f best_cpu_s=%.4f events_per_s=%.0f "
                "events_per_wall_s=%.0f check=%" PRIx64 "\n",
                events, trace.files().size(), options.decode_threads, best_wall, best_cpu,
                best_cpu > 0 ? events / best_cpu : 0.0, best_wall > 0 ? events / best_wall : 0.0, check);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "reader_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
