// Fast JSON text output into a growable buffer that is flushed to a sink in
// large chunks. Used by `strata cat` and the converters (millions of lines).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace strata::convert {

// Where the text goes: a FILE* or a gzip stream.
class Sink {
 public:
  virtual ~Sink() = default;
  virtual bool write(const char* p, size_t n) = 0;
};

class FileSink : public Sink {
 public:
  explicit FileSink(FILE* f) : f_(f) {}
  bool write(const char* p, size_t n) override { return std::fwrite(p, 1, n, f_) == n; }

 private:
  FILE* f_;
};

// The converters' output file: `-` is stdout, a name ending in `.gz` is
// gzip-compressed, anything else plain. close() reports what the writes
// could not (a full disk shows at the last flush).
// An output file (gzip-compressed for a name ending in .gz; "-" is stdout).
// A regular file that is not closed successfully (a conversion that threw, a
// full disk) is removed: a script that ignores the exit status must not take
// a cut-short file for a converted trace. Pipes and devices are left alone.
class OutputFile {
 public:
  explicit OutputFile(const std::string& path);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  Sink& sink() { return *sink_; }
  void close();  // throws std::runtime_error naming the file

 private:
  bool close_streams();  // false if buffered output could not be written
  std::string path_;
  void* gz_ = nullptr;  // gzFile, kept out of this header
  FILE* plain_ = nullptr;
  Sink* sink_ = nullptr;
  bool remove_unless_closed_ = false;
};

class JsonOut {
 public:
  explicit JsonOut(Sink& sink) : sink_(sink) { buf_.reserve(kChunk * 2); }
  ~JsonOut() { flush(); }
  void raw(std::string_view s) { buf_.append(s); }
  void ch(char c) { buf_.push_back(c); }
  void str(std::string_view s);  // quoted and escaped (format/json_escape.h)
  void i64(int64_t v) {
    fmt::format_int f(v);
    buf_.append(f.data(), f.size());
  }
  void u64(uint64_t v) {
    fmt::format_int f(v);
    buf_.append(f.data(), f.size());
  }
  // Microseconds with three decimals from ns (Chrome trace time unit).
  void micros(int64_t ns);
  void key(std::string_view k) {
    str(k);
    ch(':');
  }
  void maybe_flush() {
    if (buf_.size() >= kChunk) flush();
  }
  bool flush();
  bool failed() const { return failed_; }

 private:
  static constexpr size_t kChunk = 1 << 20;
  Sink& sink_;
  std::string buf_;
  bool failed_ = false;
};

}  // namespace strata::convert
