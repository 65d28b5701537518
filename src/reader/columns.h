// Column decoders of the reader (format.h, ColumnEncoding): shared by the
// EVENTS block decoder (reader.cc) and the EFG block decoder (efg_decode.cc).
// Internal to src/reader.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "format/format.h"
#include "format/varint.h"

namespace strata::reader::columns {

namespace fmt = strata::format;

// A varint at p, with at least 10 bytes (a varint's most) readable: values
// of up to 3 bytes (ids, time gaps, run lengths) inline without bounds
// checks, longer ones by get_varint. nullptr if longer than 10 bytes.
inline const uint8_t* get_varint_unchecked(const uint8_t* p, const uint8_t* end, uint64_t& v) {
  const uint64_t b0 = p[0];
  if (b0 < 0x80) {
    v = b0;
    return p + 1;
  }
  const uint64_t b1 = p[1];
  if (b1 < 0x80) {
    v = (b0 & 0x7f) | b1 << 7;
    return p + 2;
  }
  const uint64_t b2 = p[2];
  if (b2 < 0x80) {
    v = (b0 & 0x7f) | (b1 & 0x7f) << 7 | b2 << 14;
    return p + 3;
  }
  return fmt::get_varint(p, end, v);
}

// Decodes `n` varints of one column; returns false on overrun.
template <class T, class F>
bool decode_column(const uint8_t* p, const uint8_t* end, size_t n, T* out, F transform) {
  size_t i = 0;
  for (; i < n && end - p >= 10; ++i) {
    uint64_t v;
    p = get_varint_unchecked(p, end, v);
    if (!p) return false;
    out[i] = transform(v);
  }
  for (; i < n; ++i) {  // the column's last bytes: checked
    uint64_t v;
    if (p < end && *p < 0x80) {
      v = *p++;
    } else if (end - p >= 2 && p[1] < 0x80) {  // two bytes (1.0 time columns), inline
      v = (p[0] & 0x7fu) | static_cast<uint64_t>(p[1]) << 7;
      p += 2;
    } else {
      p = fmt::get_varint(p, end, v);
      if (!p) return false;
    }
    out[i] = transform(v);
  }
  return p == end;
}
// Run-length form: (value, run) pairs expanding to exactly n values.
template <class T, class F>
bool decode_runs(const uint8_t* p, const uint8_t* end, size_t n, T* out, F transform) {
  size_t i = 0;
  while (i < n) {
    uint64_t v, run;
    if (end - p >= 20) {  // both varints readable unchecked (runs of 1 are common: new paths)
      p = get_varint_unchecked(p, end, v);
      if (!p) return false;
      p = get_varint_unchecked(p, end, run);
    } else {
      p = fmt::get_varint(p, end, v);
      if (!p) return false;
      p = fmt::get_varint(p, end, run);
    }
    if (!p || run == 0 || run > n - i) return false;
    T value = transform(v);
    if (run == 1) {
      out[i] = value;
    } else {
      std::fill(out + i, out + i + run, value);
    }
    i += run;
  }
  return p == end;
}

inline uint64_t load_u64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// kPacked: frames of up to 128 values (u8 w, varint base, u8 nexc, ceil(k w / 8)
// bytes of low bits, nexc x (u8 index, varint high)). Returns nullptr, or what
// is wrong (frame set to the frame's index).
template <class T, class F>
const char* decode_packed(const uint8_t* p, const uint8_t* end, size_t n, T* out, F transform, size_t& frame) {
  constexpr size_t K = fmt::kPackedFrame;
  uint64_t tmp[K];
  // Low bits are read 8 (9) bytes at a time: a frame too near the end of the
  // column is first copied here, zero-padded.
  uint8_t padded[K * 8 + 16];
  for (size_t i = 0; i < n; i += K) {
    frame = i / K;
    const unsigned k = static_cast<unsigned>(n - i < K ? n - i : K);
    if (end - p < 2) return "truncated frame header";
    const unsigned w = *p++;
    if (w > 64) return "bit width over 64";
    uint64_t base;
    p = fmt::get_varint(p, end, base);
    if (!p || p == end) return "truncated frame header";
    const unsigned nexc = *p++;
    if (nexc > k) return "more exceptions than values";
    if (nexc && w == 64) return "exceptions in a 64-bit frame";
    const size_t nbytes = (static_cast<size_t>(k) * w + 7) / 8;
    if (nbytes > static_cast<size_t>(end - p)) return "packed bits run past the column";
    uint64_t* dst = tmp;  // 64-bit columns are unpacked in place
    if constexpr (std::is_same_v<T, uint64_t>) dst = out + i;
    if (w == 0) {
      for (unsigned j = 0; j < k; ++j) dst[j] = base;
    } else {
      const uint8_t* src = p;
      if (static_cast<size_t>(end - p) < nbytes + 9) {
        std::memcpy(padded, p, nbytes);
        std::memset(padded + nbytes, 0, 16);
        src = padded;
      }
      const uint64_t mask = w == 64 ? ~uint64_t{0} : (uint64_t{1} << w) - 1;
      size_t bit = 0;
      if (w <= 56) {  // a value's bits lie within the 8 bytes from its first byte
        for (unsigned j = 0; j < k; ++j, bit += w) dst[j] = base + ((load_u64(src + (bit >> 3)) >> (bit & 7)) & mask);
      } else {
        for (unsigned j = 0; j < k; ++j, bit += w) {
          const unsigned sh = bit & 7;
          uint64_t x = load_u64(src + (bit >> 3)) >> sh;
          if (sh) x |= static_cast<uint64_t>(src[(bit >> 3) + 8]) << (64 - sh);
          dst[j] = base + (x & mask);
        }
      }
    }
    p += nbytes;
    int prev = -1;
    for (unsigned e = 0; e < nexc; ++e) {
      if (p == end) return "truncated exception";
      const int idx = *p++;
      if (idx <= prev || idx >= static_cast<int>(k)) return "exception index out of order or out of range";
      prev = idx;
      uint64_t high;
      p = fmt::get_varint(p, end, high);
      if (!p) return "truncated exception";
      if (w && (high >> (64 - w))) return "exception value over 64 bits";
      dst[idx] += high << w;
    }
    for (unsigned j = 0; j < k; ++j) out[i + j] = transform(dst[j]);
  }
  frame = n / K;
  return p == end ? nullptr : "bytes left after the last frame";
}

// Any encoding; returns nullptr or what is wrong.
template <class T, class F>
const char* decode_any(uint8_t enc, const uint8_t* p, const uint8_t* end, size_t n, T* out, F transform,
                       size_t& frame) {
  switch (static_cast<fmt::ColumnEncoding>(enc)) {
    case fmt::ColumnEncoding::kVarint:
      return decode_column(p, end, n, out, transform) ? nullptr : "does not hold the block's count of values";
    case fmt::ColumnEncoding::kRunLength:
      return decode_runs(p, end, n, out, transform) ? nullptr : "does not hold the block's count of values";
    case fmt::ColumnEncoding::kPacked: return decode_packed(p, end, n, out, transform, frame);
  }
  return "unknown column encoding";
}

}  // namespace strata::reader::columns
