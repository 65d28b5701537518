// Stage 1 of the importer: the decompressed bytes of a plain or gzip file.
#pragma once

#include <zlib.h>

#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

namespace strata::importer {

class ImportError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Streams a plain or gzip file (multi-member gzip ok). Throws ImportError.
class ByteStream {
 public:
  explicit ByteStream(const std::string& path);
  ~ByteStream();
  ByteStream(const ByteStream&) = delete;
  ByteStream& operator=(const ByteStream&) = delete;
  // Appends up to n bytes to out; returns false at the end.
  bool read(std::string& out, size_t n);
  const std::string& path() const { return path_; }
  bool gzip() const { return gz_; }

 private:
  std::string path_;
  FILE* fp_ = nullptr;
  bool gz_ = false;
  z_stream zs_;
  std::vector<char> in_;
  bool member_end_ = false;
  bool done_ = false;
  size_t consumed_ = 0;
};

// The first up to n decompressed bytes of a file ("" if unreadable).
std::string read_head(const std::string& path, size_t n);

}  // namespace strata::importer
