// EVENTS blocks (docs/trace-format.md §8): one thread's events as columns.
// decode_events is stage 2 (block.h): it reads nothing but its payload and
// the process's clock, so it runs on any thread; check_event_ids is stage 3.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "format/format.h"
#include "reader/block.h"
#include "reader/columns.h"
#include "reader/cursor.h"

namespace strata::reader {

namespace fmt = strata::format;
using columns::decode_any;

namespace {
// An id column (name, path, context); max_id: its largest id, found in the
// same pass. A column given twice counts as its last copy, as the values do.
const char* decode_ids(uint8_t enc, const uint8_t* p, const uint8_t* end, size_t n, uint32_t* out, uint32_t& max_id,
                       size_t& frame) {
  uint32_t m = 0;
  const char* bad = decode_any(enc, p, end, n, out, [&m](uint64_t v) {
    const auto id = static_cast<uint32_t>(v);
    m = std::max(m, id);
    return id;
  }, frame);
  max_id = m;
  return bad;
}
}  // namespace

void decode_events(const BlockPlace& at, const TickClock& tick_clock, const uint8_t* payload, size_t size,
                   uint32_t count, EventBatch& out, EventIds& ids) {
  const TickClock clock = tick_clock;  // a local: stores to the columns cannot alias it
  Cursor c{payload, payload + size};
  struct Col {
    uint8_t id, enc;
    uint64_t len;
  } cols[32];
  uint64_t base_ts = 0, ncols = 0;
  try {
    out.tid = static_cast<uint32_t>(c.u());
    base_ts = c.u();
    ncols = c.u();
    if (ncols > 32) throw std::string("too many columns");
    for (uint64_t i = 0; i < ncols; ++i) cols[i] = {c.byte(), c.byte(), c.u()};
  } catch (const std::string& e) {
    at.fail("EVENTS block: " + e);
  }
  // Bound what the batch allocates by what the payload can encode, before
  // allocating: every event has a timestamp, and a varint takes a byte per
  // value, a packed frame of 128 values at least 3 bytes; run-length columns
  // can describe any count in 2 bytes, hence the cap.
  if (count > kMaxBlockEvents) {
    at.fail("EVENTS block: header claims " + std::to_string(count) + " events, more than the reader's limit of " +
         std::to_string(kMaxBlockEvents) + " per block (corrupt block)");
  }
  {
    bool ts_seen = false;
    uint64_t total = 0;
    for (uint64_t i = 0; i < ncols; ++i) {
      total += cols[i].len;
      if (total > static_cast<uint64_t>(c.end - c.p)) at.fail("EVENTS block: column runs past the block");
      const uint8_t id = cols[i].id;
      if (id < 1 || id > fmt::kNumColumns) continue;
      uint64_t least = 0;
      switch (static_cast<fmt::ColumnEncoding>(cols[i].enc)) {
        case fmt::ColumnEncoding::kVarint: least = count; break;
        case fmt::ColumnEncoding::kRunLength: least = count ? 2 : 0; break;
        case fmt::ColumnEncoding::kPacked: least = 3 * ((uint64_t{count} + fmt::kPackedFrame - 1) / fmt::kPackedFrame); break;
        default: at.fail("EVENTS block: unknown column encoding " + std::to_string(cols[i].enc));
      }
      if (cols[i].len < least) {
        at.fail("EVENTS block: header claims " + std::to_string(count) + " events, but column " + std::to_string(id) +
             " has " + std::to_string(cols[i].len) + " bytes, too few to hold them (corrupt block)");
      }
      if (id == static_cast<uint8_t>(fmt::Column::kTs)) ts_seen = true;
    }
    if (!ts_seen) at.fail("EVENTS block: no timestamp column");
  }
  out.resize(count);
  bool present[fmt::kNumColumns + 1] = {};
  for (uint64_t i = 0; i < ncols; ++i)
    if (cols[i].id >= 1 && cols[i].id <= fmt::kNumColumns) present[cols[i].id] = true;
  // Columns a writer left out take their "none" values (format spec).
  auto absent = [&](fmt::Column c) { return !present[static_cast<int>(c)]; };
  if (absent(fmt::Column::kName)) std::fill(out.name.begin(), out.name.end(), 0);
  if (absent(fmt::Column::kDur)) std::fill(out.dur.begin(), out.dur.end(), 0);
  if (absent(fmt::Column::kFd)) std::fill(out.fd.begin(), out.fd.end(), -1);
  if (absent(fmt::Column::kPath)) std::fill(out.path.begin(), out.path.end(), 0);
  if (absent(fmt::Column::kOffset)) std::fill(out.offset.begin(), out.offset.end(), -1);
  if (absent(fmt::Column::kSize)) std::fill(out.size.begin(), out.size.end(), -1);
  if (absent(fmt::Column::kRet)) std::fill(out.ret.begin(), out.ret.end(), 0);
  if (absent(fmt::Column::kErrno)) std::fill(out.err.begin(), out.err.end(), 0);
  if (absent(fmt::Column::kCtx)) std::fill(out.ctx.begin(), out.ctx.end(), 0);
  if (absent(fmt::Column::kMemAlign)) std::fill(out.mem_align.begin(), out.mem_align.end(), 0);
  const uint8_t* data = c.p;
  const uint8_t* end = payload + size;
  bool have_ts = false, have_offset = false;
  // The largest ids, checked in stage 3 against the dictionary as of this
  // block: found while decoding (an absent column uses none).
  ids = EventIds{};
  for (uint64_t i = 0; i < ncols; ++i) {
    if (cols[i].len > static_cast<uint64_t>(end - data)) at.fail("EVENTS block: column runs past the block");
    const uint8_t* cb = data;
    const uint8_t* ce = data + cols[i].len;
    data = ce;
    const uint8_t enc = cols[i].enc;
    if (enc > static_cast<uint8_t>(fmt::ColumnEncoding::kPacked)) at.fail("EVENTS block: unknown column encoding " + std::to_string(enc));
    const char* bad = nullptr;
    size_t frame = SIZE_MAX;
    switch (static_cast<fmt::Column>(cols[i].id)) {
      case fmt::Column::kName: bad = decode_ids(enc, cb, ce, count, out.name.data(), ids.max_name, frame); break;
      case fmt::Column::kTs:  // gaps; resolved against durations below
        bad = decode_any(enc, cb, ce, count, out.ts.data(), [](uint64_t v) { return v; }, frame);
        have_ts = true;
        break;
      case fmt::Column::kDur: bad = decode_any(enc, cb, ce, count, out.dur.data(), [](uint64_t v) { return v; }, frame); break;
      case fmt::Column::kFd: bad = decode_any(enc, cb, ce, count, out.fd.data(), [](uint64_t v) { return static_cast<int32_t>(fmt::unzigzag(v)); }, frame); break;
      case fmt::Column::kPath: bad = decode_ids(enc, cb, ce, count, out.path.data(), ids.max_path, frame); break;
      case fmt::Column::kOffset:  // delta-cache codes; resolved below
        bad = decode_any(enc, cb, ce, count, out.offset.data(), [](uint64_t v) { return static_cast<int64_t>(v); }, frame);
        have_offset = true;
        break;
      case fmt::Column::kSize: bad = decode_any(enc, cb, ce, count, out.size.data(), [](uint64_t v) { return fmt::unzigzag(v); }, frame); break;
      case fmt::Column::kRet: bad = decode_any(enc, cb, ce, count, out.ret.data(), [](uint64_t v) { return fmt::unzigzag(v); }, frame); break;
      case fmt::Column::kErrno: bad = decode_any(enc, cb, ce, count, out.err.data(), [](uint64_t v) { return static_cast<int32_t>(v); }, frame); break;
      case fmt::Column::kCtx: bad = decode_ids(enc, cb, ce, count, out.ctx.data(), ids.max_ctx, frame); break;
      case fmt::Column::kMemAlign: {
        uint64_t worst = 0;
        bad = decode_any(enc, cb, ce, count, out.mem_align.data(), [&](uint64_t v) {
          worst = std::max(worst, v);
          return static_cast<uint8_t>(v);
        }, frame);
        if (!bad && worst > 1 + fmt::kMemAlignMaxLog2) {
          at.fail("EVENTS block: column 11 (memory alignment) holds " + std::to_string(worst) + ", more than " +
               std::to_string(1 + fmt::kMemAlignMaxLog2) + " (corrupt block)");
        }
        break;
      }
      default: break;  // columns from a newer minor version
    }
    if (bad) {
      std::string what = "EVENTS block: column " + std::to_string(cols[i].id);
      if (enc == static_cast<uint8_t>(fmt::ColumnEncoding::kPacked)) {
        what += " (packed), frame " + std::to_string(frame) + ": " + bad;
      } else {
        what += " does not hold " + std::to_string(count) + " values";
      }
      at.fail(what);
    }
  }
  if (!have_ts) at.fail("EVENTS block: no timestamp column");
  // ret is stored relative to the requested size; start times relative to the
  // previous event's end; offsets relative to the previous access's end.
  uint64_t prev_end = base_ts;
  int64_t prev_offset_end = 0, d1 = 0, d2 = 0;
  const bool ticks = clock.tick_q32 != 0;
  for (uint32_t i = 0; i < count; ++i) {
    out.ret[i] = static_cast<int64_t>(static_cast<uint64_t>(out.ret[i]) +
                                      (out.size[i] > 0 ? static_cast<uint64_t>(out.size[i]) : 0));
    uint64_t t0 = prev_end + static_cast<uint64_t>(fmt::unzigzag(out.ts[i]));
    prev_end = t0 + out.dur[i];
    if (ticks) {
      out.ts[i] = clock.to_ns(t0);
      out.dur[i] = clock.to_ns(prev_end) - out.ts[i];
    } else {
      out.ts[i] = t0;
    }
    if (have_offset) {
      uint64_t code = static_cast<uint64_t>(out.offset[i]);
      int64_t delta;
      if (code == 0) {
        delta = d1;
      } else if (code == 1) {
        delta = d2;
        d2 = d1;
        d1 = delta;
      } else {
        delta = fmt::unzigzag(code - 2);
        d2 = d1;
        d1 = delta;
      }
      // Two's complement wrap-around, as the encoder computes (no signed
      // overflow on damaged or extreme values).
      out.offset[i] = static_cast<int64_t>(static_cast<uint64_t>(prev_offset_end) + static_cast<uint64_t>(delta));
      prev_offset_end = static_cast<int64_t>(static_cast<uint64_t>(out.offset[i]) +
                                             (out.offset[i] >= 0 && out.ret[i] > 0 ? static_cast<uint64_t>(out.ret[i]) : 0));
    }
  }
}


void check_event_ids(const BlockPlace& at, const EventBatch& batch, const EventIds& ids, const Dictionary& dict) {
  // Readers index tables by these ids, so an undefined one is corruption, not a huge table.
  auto check = [&](const EventColumn<uint32_t>& v, uint32_t max, size_t defined, const IdGaps& gaps, const char* what) {
    size_t first = v.size();
    if (max >= defined && max != 0) {
      first = std::find(v.begin(), v.end(), max) - v.begin();
    } else if (!gaps.empty()) {  // only in files whose ids skip some: look at each
      first = std::find_if(v.begin(), v.end(), [&](uint32_t id) { return gaps.contains(id); }) - v.begin();
    }
    if (first == v.size()) return;
    at.fail("EVENTS block: event " + std::to_string(first) + " uses " + what + " id " + std::to_string(v[first]) +
            ", not defined by an earlier DICT block (corrupt block)");
  };
  check(batch.name, ids.max_name, dict.num_names(), dict.name_gaps(), "name");
  check(batch.path, ids.max_path, dict.num_strings(), dict.string_gaps(), "string (path)");
  check(batch.ctx, ids.max_ctx, dict.num_contexts(), dict.context_gaps(), "context");
}

}  // namespace strata::reader
