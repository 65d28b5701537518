#include "format/encoder.h"

#include <cstdlib>
#include <cstring>

#define XXH_INLINE_ALL
#include <xxhash.h>
#include <zstd.h>

#include "format/varint.h"

namespace strata::format {

void ByteSink::put_varint(uint64_t v) {
  uint8_t tmp[10];
  uint8_t* e = format::put_varint(tmp, v);
  buf_.insert(buf_.end(), tmp, e);
}
void ByteSink::put_zigzag(int64_t v) { put_varint(zigzag(v)); }
void ByteSink::put_bytes(const void* p, size_t n) {
  auto* b = static_cast<const uint8_t*>(p);
  buf_.insert(buf_.end(), b, b + n);
}

EventsEncoder::EventsEncoder(size_t max_events)
    : max_events_(max_events),
      per_column_(max_events * 20 + 32),  // a run-length pair is two varints of at most 10 bytes
      storage_(new uint8_t[per_column_ * kNumColumns]) {}

namespace {
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
}  // namespace

// One pass appends to ten column buffers. Cursors and run state are locals so
// they stay in registers; byte stores through members would force reloads.
void EventsEncoder::encode(uint32_t tid, const EncodeEvent* ring, uint64_t mask, uint64_t first, size_t n,
                           ByteSink& out) {
  uint8_t* base = storage_.get();
  uint8_t *c_name = base, *c_ts = base + per_column_, *c_dur = base + 2 * per_column_,
          *c_fd = base + 3 * per_column_, *c_path = base + 4 * per_column_, *c_off = base + 5 * per_column_,
          *c_size = base + 6 * per_column_, *c_ret = base + 7 * per_column_, *c_err = base + 8 * per_column_,
          *c_ctx = base + 9 * per_column_;
  Run r_name, r_fd, r_path, r_size, r_ret, r_err, r_ctx;
  // Events whose run-length fields (size..err) all equal the previous event's
  // only bump `same`; it is added to every run when something changes.
  uint64_t same = 0;
  const uint64_t base_ts = n ? ring[first & mask].start : 0;
  uint64_t prev_end = base_ts;
  int64_t prev_offset_end = 0, d1 = 0, d2 = 0;
  const EncodeEvent* prev = nullptr;
  for (size_t i = 0; i < n; ++i) {
    const EncodeEvent& e = ring[(first + i) & mask];
    if (prev && std::memcmp(reinterpret_cast<const char*>(&e) + kRunFieldsOffset,
                            reinterpret_cast<const char*>(prev) + kRunFieldsOffset, kRunFieldsSize) == 0) {
      ++same;
    } else {
      r_name.length += same, r_fd.length += same, r_path.length += same, r_size.length += same;
      r_ret.length += same, r_err.length += same, r_ctx.length += same;
      same = 0;
      c_name = run_put(c_name, r_name, e.name);
      c_fd = run_put(c_fd, r_fd, zigzag(e.fd));
      c_path = run_put(c_path, r_path, e.path);
      c_size = run_put(c_size, r_size, zigzag(e.size));
      c_ret = run_put(c_ret, r_ret, zigzag(e.ret - (e.size > 0 ? e.size : 0)));
      c_err = run_put(c_err, r_err, static_cast<uint32_t>(e.err));
      c_ctx = run_put(c_ctx, r_ctx, e.ctx);
    }
    prev = &e;
    const uint64_t end = e.end > e.start ? e.end : e.start;
    c_ts = put_varint(c_ts, zigzag(static_cast<int64_t>(e.start - prev_end)));
    c_dur = put_varint(c_dur, end - e.start);
    prev_end = end;
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
    prev_offset_end = e.offset + (e.offset >= 0 && e.ret > 0 ? e.ret : 0);
  }
  r_name.length += same, r_fd.length += same, r_path.length += same, r_size.length += same;
  r_ret.length += same, r_err.length += same, r_ctx.length += same;
  uint8_t* ends[kNumColumns] = {flush_run(c_name, r_name), c_ts, c_dur, flush_run(c_fd, r_fd),
                                flush_run(c_path, r_path), c_off, flush_run(c_size, r_size),
                                flush_run(c_ret, r_ret), flush_run(c_err, r_err), flush_run(c_ctx, r_ctx)};
  finish(tid, base_ts, ends, out);
}

void EventsEncoder::finish(uint32_t tid, uint64_t base_ts, uint8_t* const* ends, ByteSink& out) {
  out.clear();
  out.put_varint(tid);
  out.put_varint(base_ts);
  out.put_varint(kNumColumns);
  for (int c = 0; c < kNumColumns; ++c) {
    out.put_u8(static_cast<uint8_t>(c + 1));
    out.put_u8(static_cast<uint8_t>(kColumnIsRunLength[c] ? ColumnEncoding::kRunLength : ColumnEncoding::kVarint));
    out.put_varint(static_cast<uint64_t>(ends[c] - (storage_.get() + c * per_column_)));
  }
  for (int c = 0; c < kNumColumns; ++c) {
    const uint8_t* start = storage_.get() + c * per_column_;
    out.put_bytes(start, static_cast<size_t>(ends[c] - start));
  }
}

BlockFramer::BlockFramer(int zstd_level) : cctx_(ZSTD_createCCtx()), level_(zstd_level) {
  auto* c = static_cast<ZSTD_CCtx*>(cctx_);
  ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level_);
  // Time columns are noise in their low bytes: short matches found there cost
  // more to encode than they save. Measured on 1M preads: -50 instructions per
  // event at the same size as the default minimum match (4-6).
  ZSTD_CCtx_setParameter(c, ZSTD_c_minMatch, 7);
}
BlockFramer::~BlockFramer() {
  ZSTD_freeCCtx(static_cast<ZSTD_CCtx*>(cctx_));
  std::free(buf_);
}

uint32_t header_hash_of(const BlockHeader& h) {
  return static_cast<uint32_t>(XXH3_64bits(&h, offsetof(BlockHeader, header_hash)));
}
uint64_t payload_hash(const void* p, size_t n) { return XXH3_64bits(p, n); }

void BlockFramer::reserve(size_t n) {
  if (n <= cap_) return;
  auto* p = static_cast<uint8_t*>(std::realloc(buf_, n));
  if (!p) return;
  buf_ = p;
  cap_ = n;
}

bool BlockFramer::frame(BlockType type, uint32_t count, const std::vector<uint8_t>& payload, bool compress) {
  const size_t hdr = sizeof(BlockHeader);
  size_t need = hdr + (compress ? ZSTD_compressBound(payload.size()) : payload.size());
  reserve(need);
  if (cap_ < need) return false;
  size_t stored = payload.size();
  Codec codec = Codec::kNone;
  if (compress) {
    size_t n = ZSTD_compress2(static_cast<ZSTD_CCtx*>(cctx_), buf_ + hdr, cap_ - hdr, payload.data(), payload.size());
    if (ZSTD_isError(n)) return false;
    if (n < payload.size()) {
      stored = n;
      codec = Codec::kZstd;
    }
  }
  if (codec == Codec::kNone && !payload.empty()) std::memcpy(buf_ + hdr, payload.data(), payload.size());
  size_ = hdr + stored;
  BlockHeader h{};
  h.magic = kBlockMagic;
  h.type = static_cast<uint8_t>(type);
  h.codec = static_cast<uint8_t>(codec);
  h.stored_size = static_cast<uint32_t>(stored);
  h.raw_size = static_cast<uint32_t>(payload.size());
  h.count = count;
  h.header_hash = header_hash_of(h);
  h.payload_hash = payload_hash(buf_ + hdr, stored);
  std::memcpy(buf_, &h, hdr);
  return true;
}

FileHeader make_file_header() {
  FileHeader h{};
  std::memcpy(h.magic, kFileMagic, sizeof(h.magic));
  h.version_major = kVersionMajor;
  h.version_minor = kVersionMinor;
  h.header_size = sizeof(FileHeader);
  return h;
}

Trailer make_trailer(uint64_t footer_offset) {
  Trailer t{};
  t.footer_offset = footer_offset;
  std::memcpy(t.magic, kTrailerMagic, sizeof(t.magic));
  return t;
}

void encode_process(const ProcessRecord& p, ByteSink& out) {
  out.put_zigzag(p.pid);
  out.put_zigzag(p.ppid);
  out.put_zigzag(p.rank);
  out.put_varint(p.start_wall_ns);
  out.put_varint(p.start_mono_ns);
  out.put_varint(p.start_ticks);
  out.put_varint(p.tick_q32);
  out.put_string(p.hostname);
  out.put_string(p.exe);
  out.put_string(p.version);
  out.put_string(p.mode);
  out.put_varint(p.argv.size());
  for (auto a : p.argv) out.put_string(a);
  out.put_varint(p.metadata.size());
  for (auto& [k, v] : p.metadata) {
    out.put_string(k);
    out.put_string(v);
  }
}

void dict_string(ByteSink& out, uint32_t id, std::string_view s) {
  out.put_u8(static_cast<uint8_t>(DictKind::kString));
  out.put_varint(id);
  out.put_string(s);
}

void dict_name(ByteSink& out, uint32_t id, uint32_t name_sid, uint32_t cat_sid, uint32_t fields,
               EventKind kind) {
  out.put_u8(static_cast<uint8_t>(DictKind::kName));
  out.put_varint(id);
  out.put_varint(name_sid);
  out.put_varint(cat_sid);
  out.put_varint(fields);
  out.put_u8(static_cast<uint8_t>(kind));
}

void dict_thread(ByteSink& out, uint32_t tid, uint32_t name_sid) {
  out.put_u8(static_cast<uint8_t>(DictKind::kThread));
  out.put_varint(tid);
  out.put_varint(name_sid);
}

void dict_metadata(ByteSink& out, uint32_t id, uint32_t key_sid, uint32_t value_sid) {
  out.put_u8(static_cast<uint8_t>(DictKind::kMetadata));
  out.put_varint(id);
  out.put_varint(key_sid);
  out.put_varint(value_sid);
}

void dict_context(ByteSink& out, uint32_t id, const TagEntry* tags, size_t n) {
  out.put_u8(static_cast<uint8_t>(DictKind::kContext));
  out.put_varint(id);
  out.put_varint(n);
  for (size_t i = 0; i < n; ++i) {
    out.put_varint(tags[i].key_sid);
    out.put_u8(static_cast<uint8_t>(tags[i].is_int ? TagType::kInt : TagType::kString));
    if (tags[i].is_int) out.put_zigzag(tags[i].value);
    else out.put_varint(static_cast<uint64_t>(tags[i].value));
  }
}

void encode_stats(ByteSink& out, uint64_t events_written, uint64_t events_dropped) {
  out.put_varint(events_written);
  out.put_varint(events_dropped);
}

void encode_footer(ByteSink& out, const std::vector<IndexEntry>& index, uint64_t events,
                   uint64_t dropped, uint64_t footer_offset) {
  out.put_varint(events);
  out.put_varint(dropped);
  out.put_varint(index.size());
  for (auto& e : index) {
    out.put_u8(e.type);
    out.put_varint(e.offset);
    out.put_varint(e.count);
  }
  Trailer t = make_trailer(footer_offset);
  out.put_bytes(&t, sizeof(t));
}

}  // namespace strata::format
