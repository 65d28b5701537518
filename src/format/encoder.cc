#include "format/encoder.h"

#include <array>
#include <cstdlib>
#include <cstring>
#include <utility>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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
      // A run-length pair is two varints of at most 10 bytes; packed columns
      // need at most 8 bytes per value, 12 per frame and 7 of store slack.
      per_column_(max_events * 20 + 32),
      storage_(new uint8_t[per_column_ * (kNumColumns + 1)]),  // + room to re-encode the offset column
      times_(new uint64_t[2 * kPackedFrame + 2]) {}

namespace {
// A run of equal values that began at event `start`: its length is known only
// when it ends, so events that leave a column unchanged cost that column nothing.
struct Run {
  uint64_t value = 0;
  uint64_t start = 0;
};
inline uint8_t* flush_run(uint8_t* p, const Run& r, uint64_t end) {
  return end > r.start ? put_varint(put_varint(p, r.value), end - r.start) : p;
}
// Event i has value v. (An empty run takes any value: its value is 0 and a 0
// just extends it.)
inline uint8_t* run_put(uint8_t* p, Run& r, uint64_t v, uint64_t i) {
  if (v == r.value) return p;
  p = flush_run(p, r, i);
  r.value = v;
  r.start = i;
  return p;
}

inline void store_u64(uint8_t* p, uint64_t v) { std::memcpy(p, &v, 8); }

// The run-length fields of an event (size, ret, name, path, ctx, fd, err,
// mem_align: bytes 24..64), held in registers to compare the next events against.
struct RunKey {
#if defined(__SSE2__)
  __m128i a, b;   // bytes 24..40, 40..56
  uint64_t tail;  // bytes 56..64: err, mem_align
  static uint64_t tail_of(const EncodeEvent* e) {
    uint64_t v;
    std::memcpy(&v, reinterpret_cast<const char*>(e) + 56, 8);
    return v;
  }
  static RunKey of(const EncodeEvent* e) {
    const char* p = reinterpret_cast<const char*>(e);
    return {_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 24)),
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 40)), tail_of(e)};
  }
  // Two 16-byte compares and one 8-byte compare, straight from memory.
  bool matches(const EncodeEvent* e) const {
    const char* p = reinterpret_cast<const char*>(e);
    const __m128i x = _mm_cmpeq_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 24)), a);
    const __m128i y = _mm_cmpeq_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 40)), b);
    return _mm_movemask_epi8(_mm_and_si128(x, y)) == 0xFFFF && tail_of(e) == tail;
  }
  RunKey operator~() const {
    const __m128i ones = _mm_set1_epi32(-1);
    return {_mm_xor_si128(a, ones), _mm_xor_si128(b, ones), ~tail};
  }
#else
  uint64_t w[5];
  static RunKey of(const EncodeEvent* e) {
    RunKey k;
    std::memcpy(k.w, reinterpret_cast<const char*>(e) + 24, 40);
    return k;
  }
  bool matches(const EncodeEvent* e) const {
    const RunKey o = of(e);
    return ((w[0] ^ o.w[0]) | (w[1] ^ o.w[1]) | (w[2] ^ o.w[2]) | (w[3] ^ o.w[3]) | (w[4] ^ o.w[4])) == 0;
  }
  RunKey operator~() const { return {{~w[0], ~w[1], ~w[2], ~w[3], ~w[4]}}; }
#endif
};

// ---- kPacked ------------------------------------------------------------------
// Bits needed for x: 0 for 0, else 1 + floor(log2 x).
inline unsigned bit_length(uint64_t x) { return x ? 64u - static_cast<unsigned>(__builtin_clzll(x)) : 0u; }

// floor(log2 y) for y > 0.
inline size_t floor_log2(uint64_t y) {
#if defined(__x86_64__)
  uint64_t r;
  __asm__("bsrq %1, %0" : "=r"(r) : "rm"(y) : "cc");  // one bsr, no sign extension of clz's int
  return r;
#else
  return 63 ^ static_cast<unsigned>(__builtin_clzll(y));
#endif
}

template <unsigned W>
inline constexpr uint64_t kLowMask = W == 64 ? ~uint64_t{0} : (uint64_t{1} << W) - 1;

// The packers read value j at v[j * S]: the encoder keeps gaps and durations
// interleaved (S = 2).
inline constexpr size_t S = 2;

// Any number of values, any width 1..64: a 64-bit accumulator stored a word
// at a time. Writes ceil(k w / 8) bytes (and may store up to 7 more).
inline uint8_t* pack_bits_any(const uint64_t* v, unsigned k, uint64_t base, unsigned w, uint8_t* p) {
  const uint64_t mask = w == 64 ? ~uint64_t{0} : (uint64_t{1} << w) - 1;
  uint64_t acc = 0;
  unsigned nb = 0;
  for (unsigned i = 0; i < k; ++i) {
    const uint64_t x = (v[i * S] - base) & mask;
    acc |= x << nb;
    nb += w;
    if (nb >= 64) {
      store_u64(p, acc);
      p += 8;
      nb -= 64;
      acc = (x >> 1) >> (w - nb - 1);  // the bits that did not fit (none when nb is 0)
    }
  }
  if (nb) store_u64(p, acc);
  return p + (nb + 7) / 8;
}

// Eight values of W <= 57 bits are exactly W bytes; unrolled, every shift and
// store position is a constant. Whole bytes are stored whenever the next
// value might not fit the accumulator (at most 7 bits stay behind).
template <unsigned W, unsigned J = 0, unsigned NB = 0>
inline __attribute__((always_inline)) void pack8(const uint64_t* v, uint64_t base, uint8_t* p, uint64_t acc) {
  if constexpr (J == 8) {
    static_assert(NB % 8 == 0);
    if constexpr (NB > 0) store_u64(p, acc);
  } else {
    acc |= ((v[J * S] - base) & kLowMask<W>) << NB;
    constexpr unsigned nb = NB + W;
    if constexpr (J + 1 < 8 && nb + W > 64) {
      constexpr unsigned bytes = nb / 8;
      store_u64(p, acc);
      pack8<W, J + 1, nb % 8>(v, base, p + bytes, bytes == 8 ? 0 : acc >> (bytes * 8 % 64));
    } else {
      pack8<W, J + 1, nb>(v, base, p, acc);
    }
  }
}

template <unsigned W>
uint8_t* pack_bits(const uint64_t* v, unsigned k, uint64_t base, uint8_t* p) {
  if constexpr (W > 57) {
    return pack_bits_any(v, k, base, W, p);
  } else {
    const uint64_t* const end8 = v + k / 8 * 8 * S;
    for (; v != end8; v += 8 * S, p += W) pack8<W>(v, base, p, 0);
    return k % 8 ? pack_bits_any(v, k % 8, base, W, p) : p;
  }
}

using PackFn = uint8_t* (*)(const uint64_t*, unsigned, uint64_t, uint8_t*);
template <size_t... W>
constexpr std::array<PackFn, sizeof...(W)> make_packers(std::index_sequence<W...>) {
  return {&pack_bits<W + 1>...};
}
constexpr std::array<PackFn, 64> kPackers = make_packers(std::make_index_sequence<64>());

// The varint codes [p, end) as (value, run) pairs at out; returns their end,
// or nullptr as soon as they are no shorter than the codes (out has room for
// end - p + 20 bytes). Runs of one-byte codes are measured 8 bytes at a time.
uint8_t* runs_of_codes(const uint8_t* p, const uint8_t* end, uint8_t* out) {
  uint8_t* const limit = out + (end - p);
  while (p != end) {
    const uint8_t* const first = p;
    if (*p < 0x80) {
      const uint64_t pattern = 0x0101010101010101ull * *p;
      ++p;
      for (;;) {
        if (end - p < 8) {
          while (p != end && *p == *first) ++p;
          break;
        }
        uint64_t word;
        std::memcpy(&word, p, 8);
        if (const uint64_t diff = word ^ pattern) {
          p += static_cast<unsigned>(__builtin_ctzll(diff)) / 8;
          break;
        }
        p += 8;
      }
      *out++ = *first;
      out = put_varint(out, static_cast<uint64_t>(p - first));
    } else {
      size_t len = 1;
      while (first[len - 1] >= 0x80) ++len;  // (our own varints: well formed)
      uint64_t run = 1;
      for (p += len; static_cast<size_t>(end - p) >= len && std::memcmp(p, first, len) == 0; p += len) ++run;
      std::memcpy(out, first, len);
      out = put_varint(out + len, run);
    }
    if (out >= limit) return nullptr;
  }
  return out;
}

// One frame of k (1..128) values v[j * S] whose minimum is base: u8 w,
// varint base, u8 nexc, packed low bits, nexc x (u8 index, varint high).
uint8_t* pack_frame(const uint64_t* v, unsigned k, uint64_t base, uint8_t* p) {
  // Bit lengths of x = v - base, per value and as a histogram. bit_length(x)
  // is floor(log2(2x + 1)), one bsr, while x < 2^63; redone exactly otherwise.
  uint8_t hist[65] = {};  // counts <= 128
  alignas(8) uint8_t bits[kPackedFrame + 8];
  uint64_t any = 0;
  unsigned i = 0;
  auto count = [&](unsigned j) {
    const uint64_t x = v[j * S] - base;
    any |= x;
    const size_t b = floor_log2(2 * x + 1);
    bits[j] = static_cast<uint8_t>(b);
    ++hist[b];
  };
  for (; i + 2 <= k; i += 2) {  // (unrolled further, gcc merges the bits[] stores at a cost)
    count(i);
    count(i + 1);
  }
  if (i < k) count(i);
  if (any >> 63) {
    std::memset(hist, 0, sizeof(hist));
    for (i = 0; i < k; ++i) {
      bits[i] = static_cast<uint8_t>(bit_length(v[i * S] - base));
      ++hist[bits[i]];
    }
  }
  const unsigned maxbits = bit_length(any);
  // Choose w minimising the frame's bytes: ceil(k w / 8) packed bytes plus,
  // per value of b > w bits, an exception of 1 + ceil((b - w) / 7) bytes.
  // Walk w down from maxbits; stop once the exceptions alone (2 bytes or
  // more each) cost at least the best so far. Ties keep the larger w.
  // The exceptions' bytes are kept up to date in O(1) a step: from w + 1 to
  // w, the values of w + 1 bits become exceptions of 2 bytes, and one of
  // b > w + 1 bits grows by a byte exactly when b - w = 1 (mod 7), so the
  // counts above are also summed by b mod 7 (`by_residue`).
  unsigned w = maxbits, nexc = 0;
  size_t best = (static_cast<size_t>(k) * maxbits + 7) / 8;
  size_t exc_bytes = 0;
  unsigned above = 0, by_residue[7] = {};
  for (unsigned cand = maxbits; cand-- > 0;) {
    const unsigned b = cand + 1, r = b % 7;
    exc_bytes += 2 * static_cast<size_t>(hist[b]) + by_residue[r];  // by_residue: bit lengths > b so far
    by_residue[r] += hist[b];
    above += hist[b];
    if (2 * static_cast<size_t>(above) >= best) break;
    const size_t cost = (static_cast<size_t>(k) * cand + 7) / 8 + exc_bytes;
    if (cost < best) {
      best = cost;
      w = cand;
      nexc = above;
    }
  }
  *p++ = static_cast<uint8_t>(w);
  p = put_varint(p, base);
  *p++ = static_cast<uint8_t>(nexc);
  if (w) p = kPackers[w - 1](v, k, base, p);
  if (nexc) {
    // Values longer than w bits, eight bit lengths at a time: adding 127 - w
    // to a byte b <= 64 sets its top bit exactly when b > w (no carries).
    std::memset(bits + k, 0, 8);
    const uint64_t add = 0x0101010101010101ull * (127 - w);
    for (unsigned g = 0; g < k; g += 8) {
      uint64_t word;
      std::memcpy(&word, bits + g, 8);
      uint64_t over = (word + add) & 0x8080808080808080ull;
      while (over) {
        const unsigned j = g + static_cast<unsigned>(__builtin_ctzll(over)) / 8;
        over &= over - 1;
        *p++ = static_cast<uint8_t>(j);
        p = put_varint(p, (v[j * S] - base) >> w);  // w < 64 when there are exceptions
      }
    }
  }
  return p;
}

// A column of n values v[j * S] as kPacked frames; mins[f * S] is the
// minimum of frame f.
uint8_t* pack_column(const uint64_t* v, const uint64_t* mins, size_t n, uint8_t* out) {
  for (size_t i = 0; i < n; i += kPackedFrame) {
    const size_t k = n - i < kPackedFrame ? n - i : kPackedFrame;
    out = pack_frame(v + i * S, static_cast<unsigned>(k), mins[i / kPackedFrame * S], out);
  }
  return out;
}
}  // namespace

void encode_values(const uint64_t* v, size_t n, ColumnEncoding enc, ByteSink& out) {
  switch (enc) {
    case ColumnEncoding::kVarint:
      for (size_t i = 0; i < n; ++i) out.put_varint(v[i]);
      return;
    case ColumnEncoding::kRunLength:
      for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && v[j] == v[i]) ++j;
        out.put_varint(v[i]);
        out.put_varint(j - i);
        i = j;
      }
      return;
    case ColumnEncoding::kPacked: {
      // The packers read every S-th value: lay the values (and the frames'
      // minima) out at that stride.
      std::vector<uint64_t> spread(n * S), mins((n + kPackedFrame - 1) / kPackedFrame * S);
      for (size_t i = 0; i < n; ++i) {
        spread[i * S] = v[i];
        uint64_t& m = mins[i / kPackedFrame * S];
        if (i % kPackedFrame == 0 || v[i] < m) m = v[i];
      }
      // Per frame: 1 + 10 + 1 header bytes, 8 x 128 packed bytes, 128
      // exceptions of 11 bytes, and the packers' stores past the end.
      std::vector<uint8_t> buf((mins.size() / S) * (12 + 8 * kPackedFrame + 11 * kPackedFrame) + 16);
      uint8_t* end = pack_column(spread.data(), mins.data(), n, buf.data());
      out.put_bytes(buf.data(), static_cast<size_t>(end - buf.data()));
      return;
    }
  }
}

ColumnEncoding encode_values_smallest(const uint64_t* v, size_t n, ByteSink& out) {
  ColumnEncoding best = ColumnEncoding::kVarint;
  ByteSink best_bytes, trial;
  encode_values(v, n, best, best_bytes);
  for (ColumnEncoding e : {ColumnEncoding::kRunLength, ColumnEncoding::kPacked}) {
    trial.clear();
    encode_values(v, n, e, trial);
    if (trial.size() < best_bytes.size()) {
      best = e;
      best_bytes.bytes().swap(trial.bytes());
    }
  }
  out.put_bytes(best_bytes.bytes().data(), best_bytes.size());
  return best;
}

// The ring is walked as its two contiguous segments (before and after the
// wrap), each cut into chunks that end at kPacked frame boundaries. Two tight
// loops per chunk (so that their state fits in registers; the chunk stays in
// L1 between them): one appends to the run-length and offset columns, the
// other stores gaps and durations (interleaved) and tracks their minimum per
// frame. Each complete frame is packed into the time columns at once.
size_t EventsEncoder::encode(uint32_t tid, const EncodeEvent* ring, uint64_t mask, uint64_t first, size_t n,
                             ByteSink& out) {
  uint8_t* base = storage_.get();
  auto col = [&](Column c) { return base + (static_cast<size_t>(c) - 1) * per_column_; };
  uint8_t *c_name = col(Column::kName), *c_fd = col(Column::kFd), *c_path = col(Column::kPath),
          *c_off = col(Column::kOffset), *c_size = col(Column::kSize), *c_ret = col(Column::kRet),
          *c_err = col(Column::kErrno), *c_ctx = col(Column::kCtx), *c_mem = col(Column::kMemAlign);
  uint64_t* const times = times_.get();  // gap, dur of the frame's event i at [2 i], [2 i + 1]
  uint8_t *c_ts = col(Column::kTs), *c_dur = col(Column::kDur);
  Run r_name, r_fd, r_path, r_size, r_ret, r_err, r_ctx, r_mem;
  // Offset codes are written as varints; when most are 0 or 1 (cache hits)
  // they are turned into runs at the end (see runs_of_codes).
  size_t new_deltas = 0;
  // Events whose run-length fields (size..mem_align) all equal the previous
  // event's cost nothing but the comparison; one that changes some of them
  // ends only those columns' runs.
  const size_t at = static_cast<size_t>(first & mask);
  const uint64_t base_ts = n ? ring[at].start : 0;
  uint64_t prev_end = base_ts;
  uint64_t prev_offset_end = 0, d1 = 0, d2 = 0;  // offsets in two's complement
  uint64_t ret_pos = 0;                          // max(ret, 0) of the current run
  RunKey key = n ? ~RunKey::of(&ring[at]) : RunKey{};  // differs from the first event
  uint64_t gmin = ~uint64_t{0}, dmin = ~uint64_t{0};
  // Segments: [at, end of ring) then [0, rest).
  const size_t n1 = mask == ~uint64_t{0} ? n : (n < mask + 1 - at ? n : static_cast<size_t>(mask + 1 - at));
  const EncodeEvent* const seg_begin[2] = {ring + at, ring};
  const EncodeEvent* const seg_end[2] = {ring + at + n1, ring + (n - n1)};
  uint64_t* t = times;
  size_t done = 0;  // events before the chunk
  size_t frame_left = kPackedFrame;
  for (int s = 0; s < 2; ++s) {
    for (const EncodeEvent* chunk = seg_begin[s]; chunk != seg_end[s];) {
      const size_t left = static_cast<size_t>(seg_end[s] - chunk);
      const size_t m = left < frame_left ? left : frame_left;
      const EncodeEvent* const stop = chunk + m;
      for (const EncodeEvent* e = chunk; e != stop; ++e) {
        if (__builtin_expect(!key.matches(e), 0)) {
          const uint64_t i = done + static_cast<size_t>(e - chunk);
          c_name = run_put(c_name, r_name, e->name, i);
          c_fd = run_put(c_fd, r_fd, zigzag(e->fd), i);
          c_path = run_put(c_path, r_path, e->path, i);
          c_size = run_put(c_size, r_size, zigzag(e->size), i);
          c_ret = run_put(c_ret, r_ret, zigzag(e->ret - (e->size > 0 ? e->size : 0)), i);
          c_err = run_put(c_err, r_err, static_cast<uint32_t>(e->err), i);
          c_ctx = run_put(c_ctx, r_ctx, e->ctx, i);
          c_mem = run_put(c_mem, r_mem, e->mem_align, i);
          ret_pos = e->ret > 0 ? static_cast<uint64_t>(e->ret) : 0;
          key = RunKey::of(e);  // loaded again: the loop need not keep the loaded copy
        }
        const int64_t offset = e->offset;
        const uint64_t delta = static_cast<uint64_t>(offset) - prev_offset_end;
        if (delta == d1) {
          *c_off++ = 0;
        } else if (delta == d2) {
          *c_off++ = 1;
          d2 = d1;
          d1 = delta;
        } else {
          c_off = put_varint(c_off, zigzag(static_cast<int64_t>(delta)) + 2);
          ++new_deltas;
          d2 = d1;
          d1 = delta;
        }
        prev_offset_end = static_cast<uint64_t>(offset) + (offset >= 0 ? ret_pos : 0);
      }
      for (const EncodeEvent* e = chunk; e != stop; ++e, t += 2) {
        const uint64_t start = e->start;
        const uint64_t end = e->end > start ? e->end : start;
        const uint64_t gap = zigzag(static_cast<int64_t>(start - prev_end));
        const uint64_t dur = end - start;
        t[0] = gap;
        t[1] = dur;
        gmin = gap < gmin ? gap : gmin;
        dmin = dur < dmin ? dur : dmin;
        prev_end = end;
      }
      chunk = stop;
      done += m;
      frame_left -= m;
      if (frame_left == 0) {
        c_ts = pack_frame(times, kPackedFrame, gmin, c_ts);
        c_dur = pack_frame(times + 1, kPackedFrame, dmin, c_dur);
        t = times;
        gmin = dmin = ~uint64_t{0};
        frame_left = kPackedFrame;
      }
    }
  }
  if (frame_left != kPackedFrame) {
    const unsigned k = static_cast<unsigned>(kPackedFrame - frame_left);
    c_ts = pack_frame(times, k, gmin, c_ts);
    c_dur = pack_frame(times + 1, k, dmin, c_dur);
  }
  const uint8_t* begins[kNumColumns];  // by column id - 1
  uint8_t* ends[kNumColumns];
  ColumnEncoding encs[kNumColumns];
  for (int c = 0; c < kNumColumns; ++c) {
    begins[c] = base + c * per_column_;
    encs[c] = kColumnEncoding[c];
  }
  ends[static_cast<int>(Column::kName) - 1] = flush_run(c_name, r_name, n);
  ends[static_cast<int>(Column::kFd) - 1] = flush_run(c_fd, r_fd, n);
  ends[static_cast<int>(Column::kPath) - 1] = flush_run(c_path, r_path, n);
  ends[static_cast<int>(Column::kSize) - 1] = flush_run(c_size, r_size, n);
  ends[static_cast<int>(Column::kRet) - 1] = flush_run(c_ret, r_ret, n);
  ends[static_cast<int>(Column::kErrno) - 1] = flush_run(c_err, r_err, n);
  ends[static_cast<int>(Column::kCtx) - 1] = flush_run(c_ctx, r_ctx, n);
  ends[static_cast<int>(Column::kMemAlign) - 1] = flush_run(c_mem, r_mem, n);
  ends[static_cast<int>(Column::kTs) - 1] = c_ts;
  ends[static_cast<int>(Column::kDur) - 1] = c_dur;
  // The offset column: varint codes, or their runs when that is smaller.
  // Irregular access (mostly new deltas) is left as varints untried.
  constexpr int kOff = static_cast<int>(Column::kOffset) - 1;
  ends[kOff] = c_off;
  if (new_deltas * 4 <= n) {
    uint8_t* const runs = base + kNumColumns * per_column_;
    if (uint8_t* runs_end = runs_of_codes(begins[kOff], c_off, runs)) {
      begins[kOff] = runs;
      ends[kOff] = runs_end;
      encs[kOff] = ColumnEncoding::kRunLength;
    }
  }
  return finish(tid, base_ts, begins, ends, encs, out);
}

// Directory and column bytes in kColumnOrder; returns the length of the
// prefix before the first packed column.
size_t EventsEncoder::finish(uint32_t tid, uint64_t base_ts, const uint8_t* const* begins, uint8_t* const* ends,
                             const ColumnEncoding* encs, ByteSink& out) {
  out.clear();
  out.put_varint(tid);
  out.put_varint(base_ts);
  out.put_varint(kNumColumns);
  for (Column id : kColumnOrder) {
    const int c = static_cast<int>(id) - 1;
    out.put_u8(static_cast<uint8_t>(id));
    out.put_u8(static_cast<uint8_t>(encs[c]));
    out.put_varint(static_cast<uint64_t>(ends[c] - begins[c]));
  }
  size_t prefix = SIZE_MAX;
  for (Column id : kColumnOrder) {
    const int c = static_cast<int>(id) - 1;
    if (encs[c] == ColumnEncoding::kPacked && prefix == SIZE_MAX) prefix = out.size();
    out.put_bytes(begins[c], static_cast<size_t>(ends[c] - begins[c]));
  }
  return prefix == SIZE_MAX ? out.size() : prefix;
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

// The old bytes are not needed (each block is framed from the start), so the
// buffer is replaced rather than realloc'ed: a realloc copied it, touching
// twice the pages (in a DataLoader worker, ~1 page fault in 4 of the writer's).
// It grows by at least half so that blocks growing a little do not replace it
// each time.
void BlockFramer::reserve(size_t n) {
  if (n <= cap_) return;
  const size_t grown = cap_ + cap_ / 2;
  const size_t want = n > grown ? n : grown;
  std::free(buf_);
  buf_ = static_cast<uint8_t*>(std::malloc(want));
  cap_ = buf_ ? want : 0;
  if (!buf_) size_ = 0;  // data()/size() of a frame() that failed: nothing
}

bool BlockFramer::frame(BlockType type, uint32_t count, const std::vector<uint8_t>& payload, bool compress,
                        size_t compress_prefix) {
  const size_t hdr = sizeof(BlockHeader);
  const size_t prefix = compress_prefix < payload.size() ? compress_prefix : payload.size();
  size_t need = hdr + (compress ? ZSTD_compressBound(prefix) + (payload.size() - prefix) : payload.size());
  reserve(need);
  if (cap_ < need) return false;
  size_t stored = payload.size();
  Codec codec = Codec::kNone;
  if (compress) {
    size_t n = ZSTD_compress2(static_cast<ZSTD_CCtx*>(cctx_), buf_ + hdr, cap_ - hdr, payload.data(), prefix);
    if (ZSTD_isError(n)) return false;
    if (n < prefix) {
      // The rest (the packed time columns of an EVENTS payload) follows the frame as is.
      if (prefix < payload.size()) std::memcpy(buf_ + hdr + n, payload.data() + prefix, payload.size() - prefix);
      stored = n + (payload.size() - prefix);
      codec = prefix == payload.size() ? Codec::kZstd : Codec::kZstdPrefix;
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
