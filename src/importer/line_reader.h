// Stage 2 of the importer: lines of a byte stream, bounded in memory.
#pragma once

#include <cstddef>
#include <string>

#include "importer/byte_stream.h"

namespace strata::importer {

// Longest line accepted (a DFTracer event line is < 64 KiB): a longer one is
// an error naming the file and line; memory stays bounded by it plus one
// 1 MiB read buffer, whatever the file (or a gzip bomb) holds.
inline constexpr size_t kMaxLine = size_t{16} << 20;

struct Line {
  const char* p = nullptr;  // without the '\n'
  size_t len = 0;
  size_t cap = 0;           // readable bytes from p (len + at least `padding`)
  size_t no = 0;            // 1-based line number
};

class LineReader {
 public:
  // padding: readable bytes guaranteed after every line (simdjson needs 64).
  explicit LineReader(ByteStream& in, size_t padding = 64) : in_(in), padding_(padding) {
    buf_.reserve((1 << 20) + padding + 4096);
  }
  // The next line; false at the end. Throws ImportError on an overlong line.
  bool next(Line& line);
  size_t line_no() const { return line_no_; }

 private:
  bool refill();
  ByteStream& in_;
  size_t padding_;
  std::string buf_;  // [start_, data_) unread bytes, then padding_
  size_t start_ = 0, data_ = 0;
  bool more_ = true;
  size_t line_no_ = 0;
};

}  // namespace strata::importer
