// Reads the fields of a block payload (internal to src/reader). Overruns
// throw a std::string, which each block decoder turns into a FormatError
// naming its block type.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "format/varint.h"

namespace strata::reader {

struct Cursor {
  const uint8_t* p;
  const uint8_t* end;

  bool varint(uint64_t& v) {
    const uint8_t* n = format::get_varint(p, end, v);
    if (!n) return false;
    p = n;
    return true;
  }
  // Inlined into every decoder loop: the dictionary's ids and tag values
  // are a few bytes each, read by get_varint's unrolled steps.
  [[gnu::always_inline]] uint64_t u() {
    uint64_t v = 0;
    const uint8_t* n = format::get_varint(p, end, v);
    if (!n) truncated_varint();
    p = n;
    return v;
  }
  [[noreturn, gnu::cold, gnu::noinline]] static void truncated_varint() { throw std::string("truncated varint"); }
  int64_t z() { return format::unzigzag(u()); }
  uint8_t byte() {
    if (p >= end) throw std::string("truncated payload");
    return *p++;
  }
  // A view into the payload: copy it before the payload goes.
  std::string_view view() {
    uint64_t n = u();
    if (n > static_cast<uint64_t>(end - p)) throw std::string("string runs past the end of its block");
    std::string_view s(reinterpret_cast<const char*>(p), n);
    p += n;
    return s;
  }
  std::string str() { return std::string(view()); }
};

}  // namespace strata::reader
