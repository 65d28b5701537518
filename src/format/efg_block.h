// EFG blocks (format 1.3): the events of a file as temporal event flow
// graphs, written by `strata efg --compress` in place of EVENTS blocks and
// read back by the reader as the same batches. The layout is specified in
// docs/trace-format.md §19; this header holds what the writer
// (src/efg/compress.cc) and the reader (src/reader/efg_decode.cc) must agree
// on: the payload's flags, its per-node columns and how each event's fields
// turn into column values and back. Standard library only.
#pragma once

#include <cstdint>
#include <unordered_map>

namespace strata::format {

// An EFG block holds at most this many events (its header's count), so that
// a reader decodes a bounded segment at a time and the payload stays under
// kMaxBlockPayload whatever the events hold.
inline constexpr uint32_t kEfgMaxEvents = 1u << 18;

// Payload flags (the first varint).
inline constexpr uint64_t kEfgNoTimes = 1;  // ts and dur columns left out (--no-times)
inline constexpr uint64_t kEfgTicks = 2;    // times in the file's clock ticks (PROCESS block), not ns

// The per-node columns, in payload order. The time columns come last and
// are absent under kEfgNoTimes.
enum class EfgColumn : uint8_t { kPath, kFd, kSize, kRet, kOffset, kErrno, kCtx, kMemAlign, kTs, kDur };
inline constexpr int kEfgColumns = 10;
inline constexpr int kEfgColumnsNoTimes = 8;

// One event's fields as the reader hands them out (EventBatch: times in ns).
struct EfgFields {
  uint32_t path = 0, ctx = 0;
  int32_t fd = -1, err = 0;
  int64_t offset = -1, size = -1, ret = 0;
  uint64_t ts = 0, dur = 0;
  uint8_t mem_align = 0;
};

// The state one thread's walk carries from event to event: the transforms
// store each field relative to what came before it in the thread, so that
// the values of one node (a loop's `read`) repeat and pack well. All
// arithmetic wraps (two's complement): every 64-bit value round-trips.
class EfgThreadCoder {
 public:
  explicit EfgThreadCoder(uint64_t first_ts) : prev_end_(first_ts) {}

  // Column values of e, in EfgColumn order; advances the state.
  void encode(const EfgFields& e, uint64_t* v) {
    v[int(EfgColumn::kPath)] = zz(int64_t(uint64_t(e.path) - uint64_t(prev_path_)));
    v[int(EfgColumn::kFd)] = zz(e.fd);
    v[int(EfgColumn::kSize)] = zz(e.size);
    v[int(EfgColumn::kRet)] = zz(int64_t(uint64_t(e.ret) - uint64_t(e.size > 0 ? e.size : 0)));
    v[int(EfgColumn::kOffset)] = offset_code(e);
    v[int(EfgColumn::kErrno)] = zz(e.err);
    v[int(EfgColumn::kCtx)] = zz(int64_t(uint64_t(e.ctx) - uint64_t(prev_ctx_)));
    v[int(EfgColumn::kMemAlign)] = e.mem_align;
    v[int(EfgColumn::kTs)] = zz(int64_t(e.ts - prev_end_));
    v[int(EfgColumn::kDur)] = e.dur;
    advance(e);
  }

  // The event of column values v (times only when `times`); advances the
  // state. `index` is the event's position in its thread (times made up
  // without the time columns: first_ts + index, duration 0).
  EfgFields decode(const uint64_t* v, bool times, uint64_t index, uint64_t first_ts) {
    EfgFields e;
    e.path = uint32_t(uint64_t(prev_path_) + uint64_t(unzz(v[int(EfgColumn::kPath)])));
    e.fd = int32_t(unzz(v[int(EfgColumn::kFd)]));
    e.size = unzz(v[int(EfgColumn::kSize)]);
    e.ret = int64_t(uint64_t(unzz(v[int(EfgColumn::kRet)])) + uint64_t(e.size > 0 ? e.size : 0));
    e.offset = offset_of(v[int(EfgColumn::kOffset)], e);
    e.err = int32_t(unzz(v[int(EfgColumn::kErrno)]));
    e.ctx = uint32_t(uint64_t(prev_ctx_) + uint64_t(unzz(v[int(EfgColumn::kCtx)])));
    e.mem_align = uint8_t(v[int(EfgColumn::kMemAlign)]);
    if (times) {
      e.ts = prev_end_ + uint64_t(unzz(v[int(EfgColumn::kTs)]));
      e.dur = v[int(EfgColumn::kDur)];
    } else {
      e.ts = first_ts + index;
      e.dur = 0;
    }
    advance(e);
    return e;
  }

 private:
  static uint64_t zz(int64_t x) { return (uint64_t(x) << 1) ^ uint64_t(x >> 63); }
  static int64_t unzz(uint64_t x) { return int64_t(x >> 1) ^ -int64_t(x & 1); }

  // Offsets continue where the last access of the same file through the
  // same descriptor ended; a descriptor that now names another file (closed
  // and reopened) starts at 0. Sequential reads then store 1s.
  struct FdState {
    uint32_t path = 0;
    int64_t end = 0;
  };
  int64_t offset_ref(const EfgFields& e) const {
    auto it = fds_.find(e.fd);
    return it != fds_.end() && it->second.path == e.path ? it->second.end : 0;
  }
  // Offset -1 (none) is code 0, any other offset 1 + zigzag(offset - ref).
  // The one delta whose code wraps to 0 (INT64_MIN) takes the code the
  // delta of offset -1 would have had, which is free.
  uint64_t offset_code(const EfgFields& e) const {
    if (e.offset == -1) return 0;
    const uint64_t ref = uint64_t(offset_ref(e));
    const uint64_t code = 1 + zz(int64_t(uint64_t(e.offset) - ref));
    return code ? code : 1 + zz(int64_t(~uint64_t{0} - ref));
  }
  int64_t offset_of(uint64_t code, const EfgFields& e) const {
    if (code == 0) return -1;
    const uint64_t ref = uint64_t(offset_ref(e));
    if (code == 1 + zz(int64_t(~uint64_t{0} - ref))) return int64_t(ref + (uint64_t{1} << 63));
    return int64_t(ref + uint64_t(unzz(code - 1)));
  }
  void advance(const EfgFields& e) {
    prev_path_ = e.path;
    prev_ctx_ = e.ctx;
    prev_end_ = e.ts + e.dur;
    FdState& s = fds_[e.fd];
    if (e.offset != -1) {
      s.end = int64_t(uint64_t(e.offset) + (e.offset >= 0 && e.ret > 0 ? uint64_t(e.ret) : 0));
      s.path = e.path;
    } else if (s.path != e.path) {
      s = {e.path, 0};
    }
  }

  uint32_t prev_path_ = 0, prev_ctx_ = 0;
  uint64_t prev_end_;
  std::unordered_map<int32_t, FdState> fds_;
};

}  // namespace strata::format
