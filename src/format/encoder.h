// Encoding side of the trace format: builds block payloads and frames them.
// Used inside the traced process by the runtime's writer thread (so it does not
// allocate per event: buffers are sized once) and by tools that write traces
// (benchmark generators, tests).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "format/format.h"
#include "format/varint.h"

namespace strata::format {

// One event as handed to the encoder (times already in ns).
struct EncodeEvent {
  uint64_t ts = 0;
  uint64_t dur = 0;
  int64_t offset = -1;
  int64_t size = -1;
  int64_t ret = 0;
  uint32_t name = 0;
  uint32_t path = 0;
  uint32_t ctx = 0;
  int32_t fd = -1;
  int32_t err = 0;
};

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

// Columnar encoder of one EVENTS block (one thread).
class EventsEncoder {
 public:
  explicit EventsEncoder(size_t max_events);
  void begin(uint32_t tid);
  void add(const EncodeEvent& e) {
    uint8_t** c = cur_;
    c[0] = format::put_varint(c[0], e.name);
    c[1] = format::put_varint(c[1], zigzag(static_cast<int64_t>(e.ts - prev_ts_)));
    c[2] = format::put_varint(c[2], e.dur);
    c[3] = format::put_varint(c[3], zigzag(e.fd));
    c[4] = format::put_varint(c[4], e.path);
    c[5] = format::put_varint(c[5], zigzag(e.offset - prev_offset_));
    c[6] = format::put_varint(c[6], zigzag(e.size));
    c[7] = format::put_varint(c[7], zigzag(e.ret - (e.size > 0 ? e.size : 0)));
    c[8] = format::put_varint(c[8], static_cast<uint32_t>(e.err));
    c[9] = format::put_varint(c[9], e.ctx);
    prev_ts_ = e.ts;
    prev_offset_ = e.offset;
    ++count_;
  }
  // Sets the block's base timestamp; call before the first add.
  void set_base_ts(uint64_t ts) { base_ts_ = prev_ts_ = ts; }
  uint32_t count() const { return count_; }
  bool full() const { return count_ >= max_events_; }
  size_t max_events() const { return max_events_; }
  // Writes the uncompressed payload into out (cleared first).
  void finish(ByteSink& out) const;

 private:
  size_t max_events_;
  std::vector<uint8_t> storage_;
  uint8_t* start_[kNumColumns] = {};
  uint8_t* cur_[kNumColumns] = {};
  uint32_t tid_ = 0;
  uint32_t count_ = 0;
  uint64_t base_ts_ = 0;
  uint64_t prev_ts_ = 0;
  int64_t prev_offset_ = 0;
};

// Frames payloads as blocks: compresses (zstd) when asked, hashes, and returns
// header + stored payload as one contiguous byte string ready for write(2).
class BlockFramer {
 public:
  explicit BlockFramer(int zstd_level = 1);
  ~BlockFramer();
  BlockFramer(const BlockFramer&) = delete;
  BlockFramer& operator=(const BlockFramer&) = delete;
  // Returns false if compression failed (then out is unchanged).
  bool frame(BlockType type, uint32_t count, const std::vector<uint8_t>& payload, bool compress,
             std::vector<uint8_t>& out);

 private:
  void* cctx_;
  int level_;
};

FileHeader make_file_header();
Trailer make_trailer(uint64_t footer_offset);
uint64_t payload_hash(const void* p, size_t n);

// PROCESS payload.
struct ProcessRecord {
  int64_t pid = 0, ppid = 0, rank = -1;
  uint64_t start_wall_ns = 0, start_mono_ns = 0;
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
