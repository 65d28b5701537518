#include "convert/json_out.h"

#include <sys/stat.h>
#include <unistd.h>
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
  // lstat: `-o /dev/stdout` redirected to a file is a symbolic link, not
  // strata's file to remove.
  struct stat st {};
  remove_unless_closed_ = path != "-" && ::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

OutputFile::~OutputFile() {
  close_streams();
  if (remove_unless_closed_) ::unlink(path_.c_str());
}

bool OutputFile::close_streams() {
  delete sink_;
  sink_ = nullptr;
  bool ok = true;
  if (gz_) {
    ok = gzclose(static_cast<gzFile>(gz_)) == Z_OK;
    gz_ = nullptr;
  }
  if (plain_) {
    FILE* f = plain_;
    plain_ = nullptr;
    ok = f == stdout ? std::fflush(f) == 0 : std::fclose(f) == 0;
  }
  return ok;
}

void OutputFile::close() {
  const bool gz = gz_ != nullptr;
  if (!close_streams()) {
    const int err = errno;
    if (remove_unless_closed_) ::unlink(path_.c_str());
    remove_unless_closed_ = false;
    throw std::runtime_error(path_ + ": error writing (disk full?)" +
                             (gz ? std::string() : std::string(": ") + std::strerror(err)));
  }
  remove_unless_closed_ = false;
}

}  // namespace strata::convert
