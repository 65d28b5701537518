// The stages of reading one block (internal to src/reader):
//   1. scan  (file order, one thread): header read and checked; where the next block starts;
//   2. load  (any thread): payload read, checksum, decompression, and for
//            EVENTS the columns decoded into an EventBatch;
//   3. apply (file order, the thread calling next()): DICT/STATS/PROFILE/EFG
//            decoded into the reader's state; an EVENTS batch checked against
//            the dictionary as of its place in the file and handed out.
// Only stage 3 reads or grows the dictionary, so stage 2 can run on worker
// threads ahead of the consumer (pipeline.h) without sharing mutable state.
#pragma once

#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "format/format.h"
#include "strata/reader.h"

namespace strata::reader {

// Where a block is, for FormatError: the file, its number (1-based) and offset.
struct BlockPlace {
  const std::string* file = nullptr;
  long index = 0;
  uint64_t offset = 0;
  [[noreturn]] void fail(const std::string& what) const { throw FormatError(*file, index, offset, what); }
};

// ProcessInfo::ticks_to_ns as a small value that decode_events keeps in
// registers: a public member of a -fPIC library is not inlined (it could be
// interposed), and a call per timestamp was a fifth of the decoding work.
struct TickClock {
  uint64_t start_ticks, tick_q32, start_mono_ns;
  explicit TickClock(const ProcessInfo& p)
      : start_ticks(p.start_ticks), tick_q32(p.tick_q32), start_mono_ns(p.start_mono_ns) {}
  uint64_t to_ns(uint64_t ticks) const { return format::ticks_to_ns(ticks, start_ticks, tick_q32, start_mono_ns); }
};

// The largest name, path and context id an EVENTS block uses (stage 2), to
// check against the dictionary in stage 3. A column the block leaves out
// uses no id.
struct EventIds {
  uint32_t max_name = 0, max_path = 0, max_ctx = 0;
};

// Stage 2 for EVENTS: decodes a payload of `count` events into out.
void decode_events(const BlockPlace& at, const TickClock& clock, const uint8_t* payload, size_t size,
                   uint32_t count, EventBatch& out, EventIds& ids);
// Stage 3 for EVENTS: ids MUST be defined before use (format spec section 7).
void check_event_ids(const BlockPlace& at, const EventBatch& batch, const EventIds& ids, const Dictionary& dict);

enum class ScanOutcome : uint8_t {
  kBlock,      // a complete block: header checked, payload within the file
  kEnd,        // clean end of file
  kTruncated,  // the file ends inside this block (a killed writer)
};

// One block on its way through the stages; reused from block to block so
// that its buffers keep their capacity.
struct BlockJob {
  ScanOutcome outcome = ScanOutcome::kEnd;
  BlockPlace place;
  format::BlockHeader header{};
  std::vector<uint8_t> stored, payload;
  EventBatch batch;  // EVENTS blocks
  // Where stage 2 decodes EVENTS: the caller's batch when read in turn
  // (its buffers stay warm in cache), else `batch`, swapped out in stage 3.
  EventBatch* target = nullptr;
  EventIds ids;
  std::exception_ptr error;  // stage 1 or 2 failed: rethrown in stage 3
};

}  // namespace strata::reader
