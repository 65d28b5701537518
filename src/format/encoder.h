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

// One event as handed to the encoder. Times are in the file's clock ticks
// (ns, or TSC cycles converted by readers with the PROCESS block's tick_q32).
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

// Columnar encoder of one EVENTS block (one thread's events). One pass over
// the events appends to ten column buffers; every cursor and run counter is a
// local so it stays in registers (byte stores through members would force
// reloads of all encoder state after each store).
class EventsEncoder {
 public:
  explicit EventsEncoder(size_t max_events);
  size_t max_events() const { return max_events_; }

  // Encodes events get(0) .. get(n-1) (each an EncodeEvent) as an EVENTS
  // payload into out (cleared first). n <= max_events().
  template <class Get>
  void encode(uint32_t tid, size_t n, Get get, ByteSink& out);
  void encode(uint32_t tid, const EncodeEvent* events, size_t n, ByteSink& out) {
    encode(tid, n, [events](size_t i) -> const EncodeEvent& { return events[i]; }, out);
  }

 private:
  void finish(uint32_t tid, uint64_t base_ts, uint8_t* const* ends, ByteSink& out);
  size_t max_events_;
  size_t per_column_;
  std::vector<uint8_t> storage_;
};

namespace detail {
struct Run {
  uint64_t value = 0;
  uint64_t length = 0;
};
inline uint8_t* flush_run(uint8_t* p, const Run& r) {
  return r.length ? put_varint(put_varint(p, r.value), r.length) : p;
}
inline uint8_t* run_put(uint8_t* p, Run& r, uint64_t v) {
  if (v == r.value && r.length) {
    ++r.length;
    return p;
  }
  p = flush_run(p, r);
  r.value = v;
  r.length = 1;
  return p;
}
}  // namespace detail

template <class Get>
void EventsEncoder::encode(uint32_t tid, size_t n, Get get, ByteSink& out) {
  uint8_t* base = storage_.data();
  uint8_t *c_name = base, *c_ts = base + per_column_, *c_dur = base + 2 * per_column_,
          *c_fd = base + 3 * per_column_, *c_path = base + 4 * per_column_, *c_off = base + 5 * per_column_,
          *c_size = base + 6 * per_column_, *c_ret = base + 7 * per_column_, *c_err = base + 8 * per_column_,
          *c_ctx = base + 9 * per_column_;
  detail::Run r_name, r_fd, r_path, r_size, r_ret, r_err, r_ctx;
  // Events whose seven run-length fields all equal the previous event's only
  // bump `same`; it is added to every run when something changes.
  uint64_t same = 0;
  uint64_t base_ts = 0, prev_end = 0;
  int64_t prev_offset_end = 0, d1 = 0, d2 = 0;
  for (size_t i = 0; i < n; ++i) {
    const EncodeEvent e = get(i);
    if (i == 0) base_ts = prev_end = e.ts;
    const uint64_t v_fd = zigzag(e.fd), v_size = zigzag(e.size),
                   v_ret = zigzag(e.ret - (e.size > 0 ? e.size : 0)), v_err = static_cast<uint32_t>(e.err);
    if (i > 0 && ((e.name ^ r_name.value) | (v_fd ^ r_fd.value) | (e.path ^ r_path.value) | (v_size ^ r_size.value) |
                  (v_ret ^ r_ret.value) | (v_err ^ r_err.value) | (e.ctx ^ r_ctx.value)) == 0) {
      ++same;
    } else {
      r_name.length += same, r_fd.length += same, r_path.length += same, r_size.length += same;
      r_ret.length += same, r_err.length += same, r_ctx.length += same;
      same = 0;
      c_name = detail::run_put(c_name, r_name, e.name);
      c_fd = detail::run_put(c_fd, r_fd, v_fd);
      c_path = detail::run_put(c_path, r_path, e.path);
      c_size = detail::run_put(c_size, r_size, v_size);
      c_ret = detail::run_put(c_ret, r_ret, v_ret);
      c_err = detail::run_put(c_err, r_err, v_err);
      c_ctx = detail::run_put(c_ctx, r_ctx, e.ctx);
    }
    c_ts = put_varint(c_ts, zigzag(static_cast<int64_t>(e.ts - prev_end)));
    c_dur = put_varint(c_dur, e.dur);
    const int64_t delta = e.offset - prev_offset_end;
    if (delta == d1) {
      *c_off++ = 0;
    } else if (delta == d2) {
      *c_off++ = 1;
      d2 = d1;
      d1 = delta;
    } else {
      c_off = put_varint(c_off, zigzag(delta) + 2);
      d2 = d1;
      d1 = delta;
    }
    prev_end = e.ts + e.dur;
    prev_offset_end = e.offset + (e.offset >= 0 && e.ret > 0 ? e.ret : 0);
  }
  r_name.length += same, r_fd.length += same, r_path.length += same, r_size.length += same;
  r_ret.length += same, r_err.length += same, r_ctx.length += same;
  uint8_t* ends[kNumColumns] = {
      detail::flush_run(c_name, r_name), c_ts, c_dur, detail::flush_run(c_fd, r_fd),
      detail::flush_run(c_path, r_path), c_off, detail::flush_run(c_size, r_size),
      detail::flush_run(c_ret, r_ret), detail::flush_run(c_err, r_err), detail::flush_run(c_ctx, r_ctx)};
  finish(tid, base_ts, ends, out);
}

// Frames payloads as blocks: compresses (zstd) when asked, hashes, and returns
// header + stored payload as one contiguous byte string ready for write(2).
class BlockFramer {
 public:
  explicit BlockFramer(int zstd_level = 1);
  ~BlockFramer();
  BlockFramer(const BlockFramer&) = delete;
  BlockFramer& operator=(const BlockFramer&) = delete;
  // Frames the payload into an internal buffer (data()/size()); false if compression failed.
  bool frame(BlockType type, uint32_t count, const std::vector<uint8_t>& payload, bool compress);
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
