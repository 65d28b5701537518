#include "convert/json_out.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "format/json_escape.h"

namespace strata::convert {

void JsonOut::str(std::string_view s) { json::append_quoted(buf_, s); }

void JsonOut::micros(int64_t ns) {
  if (ns < 0) {
    buf_.push_back('-');
    ns = -ns;
  }
  fmt::format_to(std::back_inserter(buf_), "{}.{:03}", ns / 1000, ns % 1000);
}

bool JsonOut::flush() {
  if (!buf_.empty() && !sink_.write(buf_.data(), buf_.size())) failed_ = true;
  buf_.clear();
  return !failed_;
}

namespace {

class GzSink : public Sink {
 public:
  explicit GzSink(gzFile f) : f_(f) {}
  bool write(const char* p, size_t n) override {
    return gzwrite(f_, p, static_cast<unsigned>(n)) == static_cast<int>(n);
  }

 private:
  gzFile f_;
};

bool gz_name(const std::string& path) {
  return path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
}

}  // namespace

OutputFile::OutputFile(const std::string& path) : path_(path) {
  if (gz_name(path)) {
    gzFile f = gzopen(path.c_str(), "wb6");
    if (!f) throw std::runtime_error(path + ": cannot open for writing: " + std::strerror(errno));
    gz_ = f;
    sink_ = new GzSink(f);
  } else {
    plain_ = path == "-" ? stdout : std::fopen(path.c_str(), "wb");
    if (!plain_) throw std::runtime_error(path + ": cannot open for writing: " + std::strerror(errno));
    sink_ = new FileSink(plain_);
  }
}

OutputFile::~OutputFile() {
  delete sink_;
  if (gz_) gzclose(static_cast<gzFile>(gz_));
  if (plain_ && plain_ != stdout) std::fclose(plain_);
}

void OutputFile::close() {
  delete sink_;
  sink_ = nullptr;
  if (gz_) {
    const int r = gzclose(static_cast<gzFile>(gz_));
    gz_ = nullptr;
    if (r != Z_OK) throw std::runtime_error(path_ + ": error writing (disk full?)");
  }
  if (plain_) {
    FILE* f = plain_;
    plain_ = nullptr;
    if (f == stdout ? std::fflush(f) != 0 : std::fclose(f) != 0)
      throw std::runtime_error(path_ + ": error writing (disk full?): " + std::strerror(errno));
  }
}

}  // namespace strata::convert
