// LEB128 varints and zigzag, the integer encoding of every strata column.
#pragma once

#include <cstdint>

namespace strata::format {

inline uint64_t zigzag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
inline int64_t unzigzag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

// Writes v at p (at most 10 bytes) and returns the byte after it.
inline uint8_t* put_varint(uint8_t* p, uint64_t v) {
  if (__builtin_expect(v < 0x80, 1)) {
    *p = static_cast<uint8_t>(v);
    return p + 1;
  }
  if (v < 0x4000) {
    p[0] = static_cast<uint8_t>(v) | 0x80;
    p[1] = static_cast<uint8_t>(v >> 7);
    return p + 2;
  }
  if (v < 0x200000) {
    p[0] = static_cast<uint8_t>(v) | 0x80;
    p[1] = static_cast<uint8_t>(v >> 7) | 0x80;
    p[2] = static_cast<uint8_t>(v >> 14);
    return p + 3;
  }
  while (v >= 0x80) {
    *p++ = static_cast<uint8_t>(v) | 0x80;
    v >>= 7;
  }
  *p++ = static_cast<uint8_t>(v);
  return p;
}

// Reads a varint from [p, end); returns nullptr on overrun or a value longer than 10 bytes.
inline const uint8_t* get_varint(const uint8_t* p, const uint8_t* end, uint64_t& out) {
  if (p < end && *p < 0x80) {  // the common one-byte case
    out = *p;
    return p + 1;
  }
  if (end - p >= 10) {
    // A varint takes at most 10 bytes: with 10 left, no byte needs a bounds
    // check; the 2- to 4-byte values (ids, tag values, time gaps) come
    // first, unrolled.
    uint64_t v = p[0] & 0x7fu;
    uint64_t b = p[1];
    v |= (b & 0x7f) << 7;
    if (b < 0x80) {
      out = v;
      return p + 2;
    }
    b = p[2];
    v |= (b & 0x7f) << 14;
    if (b < 0x80) {
      out = v;
      return p + 3;
    }
    b = p[3];
    v |= (b & 0x7f) << 21;
    if (b < 0x80) {
      out = v;
      return p + 4;
    }
    for (int i = 4; i < 10; ++i) {
      b = p[i];
      v |= (b & 0x7f) << (7 * i);
      if (b < 0x80) {
        out = v;
        return p + i + 1;
      }
    }
    return nullptr;
  }
  uint64_t v = 0;
  for (int shift = 0; shift < 70 && p < end; shift += 7) {
    uint8_t b = *p++;
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (b < 0x80) {
      out = v;
      return p;
    }
  }
  return nullptr;
}

}  // namespace strata::format
