// libFuzzer target: the payload of one EFG block (`strata efg --compress`,
// docs/trace-format.md §19) through the reader's EFG decoder. The input is
// framed as a valid block (checksums right) after a fixed PROCESS block and
// dictionary, so every mutation reaches the decoder instead of stopping at
// a checksum. Input: u16 event count (little-endian), then the payload.
// A FormatError is a clean rejection; anything else is a bug.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "format/encoder.h"
#include "format/format.h"
#include "strata/reader.h"

namespace ff = strata::format;

namespace {

// Header, PROCESS (ticks ~2.7 ns, so tick conversion runs) and a dictionary
// of 256 names, 1,024 strings and 16 contexts: the ids of small real traces.
std::vector<uint8_t> prefix() {
  std::vector<uint8_t> out;
  ff::FileHeader h = ff::make_file_header();
  h.version_minor = ff::kVersionMinorEfg;
  auto put = [&](const void* p, size_t n) { out.insert(out.end(), static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n); };
  put(&h, sizeof h);
  ff::BlockFramer framer(1);
  ff::ByteSink p;
  ff::ProcessRecord proc;
  proc.pid = 7;
  proc.start_mono_ns = 1'000'000'000;
  proc.start_ticks = 5'000'000'000;
  proc.tick_q32 = 11'453'246'122ull;
  proc.hostname = "h";
  proc.exe = "/x";
  proc.version = "fuzz";
  proc.mode = "trace";
  ff::encode_process(proc, p);
  framer.frame(ff::BlockType::kProcess, 0, p.bytes(), false);
  put(framer.data(), framer.size());
  p.clear();
  uint32_t n = 0;
  for (uint32_t s = 1; s < 1024; ++s, ++n) ff::dict_string(p, s, "/d/" + std::to_string(s % 7) + "/f" + std::to_string(s));
  for (uint32_t k = 1; k < 256; ++k, ++n) ff::dict_name(p, k, k, 1, 0x3f, ff::EventKind::kComplete);
  for (uint32_t c = 1; c < 16; ++c, ++n) {
    ff::TagEntry t{2, true, static_cast<int64_t>(c)};
    ff::dict_context(p, c, &t, 1);
  }
  framer.frame(ff::BlockType::kDict, n, p.bytes(), true);
  put(framer.data(), framer.size());
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<uint8_t> head = prefix();
  static const std::string path = "/tmp/strata-fuzz-efg-" + std::to_string(getpid()) + ".strata";
  static ff::BlockFramer framer(1);
  if (size < 2) return 0;
  const uint32_t count = data[0] | uint32_t{data[1]} << 8;
  const std::vector<uint8_t> payload(data + 2, data + size);
  framer.frame(ff::BlockType::kEfg, count, payload, false);
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  std::fwrite(head.data(), 1, head.size(), f);
  std::fwrite(framer.data(), 1, framer.size(), f);
  std::fclose(f);
  try {
    strata::reader::FileReader r(path);
    strata::reader::EventBatch b;
    uint64_t sum = 0;
    while (r.next(b))
      for (size_t i = 0; i < b.size_events(); ++i) sum += r.dict().name(b.name[i]).name.size() + b.ts[i] + b.dur[i];
    if (sum == 42) std::fputc(0, stderr);
  } catch (const strata::reader::FormatError& e) {
    if (std::getenv("STRATA_FUZZ_VERBOSE")) std::fprintf(stderr, "rejected: %s\n", e.what());
  }
  return 0;
}
