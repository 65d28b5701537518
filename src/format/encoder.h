// Encoding side of the trace format: builds block payloads and frames them.
// Used inside the traced process by the runtime's writer thread (so it does not
// allocate per event: buffers are sized once) and by tools that write traces
// (benchmark generators, tests).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

#include "format/format.h"
#include "format/varint.h"

namespace strata::format {

// One event as handed to the encoder: also the runtime's in-memory record, so
// the encoder reads the runtime's rings in place. Times are in the file's
// clock ticks (ns, or TSC-based ticks converted with the PROCESS block's
// tick_q32). Fields size..mem_align are contiguous: the encoder compares them
// as one block of bytes to detect runs. The runtime fills records field by
// name (make_event in src/runtime/runtime.h).
struct EncodeEvent {
  uint64_t start = 0;
  uint64_t end = 0;
  int64_t offset = -1;
  int64_t size = -1;
  int64_t ret = 0;
  uint32_t name = 0;
  uint32_t path = 0;
  uint32_t ctx = 0;
  int32_t fd = -1;
  int32_t err = 0;
  uint32_t mem_align = 0;  // Column::kMemAlign value (0 = not recorded)
};
static_assert(sizeof(EncodeEvent) == 64);
inline constexpr size_t kRunFieldsOffset = offsetof(EncodeEvent, size);
inline constexpr size_t kRunFieldsSize = sizeof(EncodeEvent) - offsetof(EncodeEvent, size);
static_assert(kRunFieldsOffset == 24 && kRunFieldsSize == 40 && offsetof(EncodeEvent, err) == 56 &&
              offsetof(EncodeEvent, mem_align) == 60);

// Appends byte-level values to a growable buffer (reserve once, reuse).
class ByteSink {
 public:
  void clear() { buf_.clear(); }
  void reserve(size_t n) { buf_.reserve(n); }
  void put_u8(uint8_t v) { buf_.push_back(v); }
  void put_varint(uint64_t v);
  void put_zigzag(int64_t v);
  void put_bytes(const void* p, size_t n);
  void put_string(std::string_view s) { put_varint(s.size()); put_bytes(s.data(), s.size()); }
  std::vector<uint8_t>& bytes() { return buf_; }
  const std::vector<uint8_t>& bytes() const { return buf_; }
  size_t size() const { return buf_.size(); }

 private:
  std::vector<uint8_t> buf_;
};

// Columnar encoder of one EVENTS block (one thread's events). A walk over
// the events (two tight loops per 128 events) appends to the run-length and
// offset column buffers and stores the time gaps and durations in a scratch
// array, which is then bit packed frame by frame (ColumnEncoding::kPacked).
// Every cursor and run counter of the walk is a local so it stays in
// registers (byte stores through members would force reloads of all encoder
// state after each store). No allocation per block: all storage is sized in
// the constructor.
class EventsEncoder {
 public:
  explicit EventsEncoder(size_t max_events);
  size_t max_events() const { return max_events_; }

  // Encodes events ring[(first + i) & mask] for i < n as an EVENTS payload
  // into out (cleared first). n <= max_events(). A flat array: mask = ~0.
  // Returns the length of the payload's prefix worth compressing (everything
  // before the packed time columns, which are last): pass it to
  // BlockFramer::frame as compress_prefix.
  size_t encode(uint32_t tid, const EncodeEvent* ring, uint64_t mask, uint64_t first, size_t n, ByteSink& out);
  size_t encode(uint32_t tid, const EncodeEvent* events, size_t n, ByteSink& out) {
    return encode(tid, events, ~uint64_t{0}, 0, n, out);
  }

 private:
  size_t finish(uint32_t tid, uint64_t base_ts, const uint8_t* const* begins, uint8_t* const* ends,
                const ColumnEncoding* encs, ByteSink& out);
  size_t max_events_;
  size_t per_column_;
  // Not zero-filled: a traced process pays only for the pages it uses
  // (a std::vector would write all of them at start-up, ~13 M instructions).
  std::unique_ptr<uint8_t[]> storage_;
  // One kPacked frame's gaps and durations (interleaved), packed as soon as
  // the frame is complete: a whole block's (16 bytes an event) touched ~200
  // fresh pages in every traced process and left L2 before being packed.
  std::unique_ptr<uint64_t[]> times_;
};

// Encodes n values as one column in the given encoding (format.h,
// ColumnEncoding), appended to out. For tools that write columns outside the
// runtime's EVENTS blocks (the EFG blocks of `strata efg --compress`); the
// runtime uses EventsEncoder.
void encode_values(const uint64_t* v, size_t n, ColumnEncoding enc, ByteSink& out);
// The encoding of the three that stores v in the fewest bytes (ties: the
// simpler one), appended to out.
ColumnEncoding encode_values_smallest(const uint64_t* v, size_t n, ByteSink& out);

// Frames payloads as blocks: compresses (zstd) when asked, hashes, and returns
// header + stored payload as one contiguous byte string ready for write(2).
class BlockFramer {
 public:
  explicit BlockFramer(int zstd_level = 1);
  ~BlockFramer();
  BlockFramer(const BlockFramer&) = delete;
  BlockFramer& operator=(const BlockFramer&) = delete;
  // Frames the payload into an internal buffer (data()/size()); false if
  // compression failed. With compress, the first compress_prefix bytes (all by
  // default) go through zstd: codec kZstd when that is the whole payload,
  // kZstdPrefix (zstd frame + the rest raw) otherwise; kNone when compressing
  // does not make them smaller.
  bool frame(BlockType type, uint32_t count, const std::vector<uint8_t>& payload, bool compress,
             size_t compress_prefix = SIZE_MAX);
  const uint8_t* data() const { return buf_; }
  size_t size() const { return size_; }

 private:
  void reserve(size_t n);
  void* cctx_;
  int level_;
  uint8_t* buf_ = nullptr;  // not zero-filled on growth: framing runs per block
  size_t cap_ = 0, size_ = 0;
};

FileHeader make_file_header();
Trailer make_trailer(uint64_t footer_offset);
uint64_t payload_hash(const void* p, size_t n);

// PROCESS payload.
struct ProcessRecord {
  int64_t pid = 0, ppid = 0, rank = -1;
  uint64_t start_wall_ns = 0, start_mono_ns = 0;
  uint64_t start_ticks = 0;  // clock ticks at start_mono_ns
  uint64_t tick_q32 = 0;     // ns per tick, fixed point 32.32; 0 = ticks are ns
  std::string_view hostname, exe, version, mode;
  std::vector<std::string_view> argv;
  std::vector<std::pair<std::string_view, std::string_view>> metadata;
};
void encode_process(const ProcessRecord& p, ByteSink& out);

// DICT entries.
void dict_string(ByteSink& out, uint32_t id, std::string_view s);
void dict_name(ByteSink& out, uint32_t id, uint32_t name_sid, uint32_t cat_sid, uint32_t fields,
               EventKind kind);
void dict_thread(ByteSink& out, uint32_t tid, uint32_t name_sid);
void dict_metadata(ByteSink& out, uint32_t id, uint32_t key_sid, uint32_t value_sid);
// Context: tags as (key_sid, is_int, value) triples; value is a zigzag int or a sid.
struct TagEntry {
  uint32_t key_sid;
  bool is_int;
  int64_t value;
};
void dict_context(ByteSink& out, uint32_t id, const TagEntry* tags, size_t n);

// STATS payload.
void encode_stats(ByteSink& out, uint64_t events_written, uint64_t events_dropped);

// FOOTER payload: index entries then the trailer.
struct IndexEntry {
  uint8_t type;
  uint64_t offset;
  uint32_t count;
};
void encode_footer(ByteSink& out, const std::vector<IndexEntry>& index, uint64_t events,
                   uint64_t dropped, uint64_t footer_offset);

}  // namespace strata::format
