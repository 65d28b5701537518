// libFuzzer target: the bytes of one .strata file through the reader library,
// as `strata info`/`cat` use it (every block, every event, every dictionary
// lookup). A FormatError is a clean rejection; anything else is a bug.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "strata/reader.h"

namespace {
std::string temp_path() {
  return "/tmp/strata-fuzz-reader-" + std::to_string(getpid()) + ".strata";
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = temp_path();
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  try {
    strata::reader::TraceReader trace(path);
    for (const auto& file : trace.files()) {
      strata::reader::FileReader r(file);
      const auto& d = r.dict();
      strata::reader::EventBatch b;
      uint64_t sum = 0;
      while (r.next(b)) {
        for (size_t i = 0; i < b.size_events(); ++i) {
          sum += d.name(b.name[i]).name.size() + d.str(b.path[i]).size() + d.context(b.ctx[i]).size();
          sum += static_cast<uint64_t>(trace.to_trace_ns(r.process(), b.ts[i] + b.dur[i]));
        }
      }
      for (const auto& p : r.profile()) sum += p.counters.size() + d.str(p.path).size();
      for (const auto& [tid, sid] : d.threads()) sum += d.thread_name(tid).size();
      if (sum == 42) std::fputc(0, stderr);  // keep the loop
    }
    // Skipping EVENTS blocks (the Python bindings' path).
    strata::reader::FileReader r(path);
    while (r.skip_events_block()) {
    }
  } catch (const strata::reader::FormatError&) {
  }
  return 0;
}
