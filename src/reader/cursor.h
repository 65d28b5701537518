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
  uint64_t u() {
    uint64_t v = 0;
    if (!varint(v)) throw std::string("truncated varint");
    return v;
  }
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
