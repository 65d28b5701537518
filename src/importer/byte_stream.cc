#include "importer/byte_stream.h"

#include <cerrno>
#include <cstring>

namespace strata::importer {

ByteStream::ByteStream(const std::string& path) : path_(path) {
  fp_ = std::fopen(path.c_str(), "rb");
  if (!fp_) throw ImportError(path + ": cannot open: " + std::strerror(errno));
  unsigned char magic[2] = {0, 0};
  size_t n = std::fread(magic, 1, 2, fp_);
  std::rewind(fp_);
  gz_ = n == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  if (gz_) {
    std::memset(&zs_, 0, sizeof zs_);
    if (inflateInit2(&zs_, 15 + 32) != Z_OK) {
      std::fclose(fp_);
      throw ImportError(path + ": zlib init failed");
    }
    in_.resize(1 << 18);
  }
}

ByteStream::~ByteStream() {
  if (gz_) inflateEnd(&zs_);
  if (fp_) std::fclose(fp_);
}

bool ByteStream::read(std::string& out, size_t n) {
  if (!gz_) {
    size_t old = out.size();
    out.resize(old + n);
    size_t got = std::fread(out.data() + old, 1, n, fp_);
    out.resize(old + got);
    if (got == 0 && std::ferror(fp_)) throw ImportError(path_ + ": read error");
    return got > 0;
  }
  if (done_) return false;
  size_t old = out.size();
  out.resize(old + n);
  zs_.next_out = reinterpret_cast<Bytef*>(out.data() + old);
  zs_.avail_out = static_cast<uInt>(n);
  while (zs_.avail_out > 0) {
    if (zs_.avail_in == 0) {
      size_t got = std::fread(in_.data(), 1, in_.size(), fp_);
      consumed_ += got;
      if (got == 0) {
        if (!member_end_) throw ImportError(path_ + ": truncated gzip stream (ends inside a member)");
        done_ = true;
        break;
      }
      zs_.next_in = reinterpret_cast<Bytef*>(in_.data());
      zs_.avail_in = static_cast<uInt>(got);
    }
    if (member_end_) {
      // Another gzip member follows (or trailing garbage).
      if (inflateReset(&zs_) != Z_OK) throw ImportError(path_ + ": zlib reset failed");
      member_end_ = false;
    }
    int rc = inflate(&zs_, Z_NO_FLUSH);
    if (rc == Z_STREAM_END) {
      member_end_ = true;
    } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
      throw ImportError(path_ + ": corrupt gzip data near compressed byte " +
                        std::to_string(consumed_ - zs_.avail_in) + ": " + (zs_.msg ? zs_.msg : "inflate error"));
    }
  }
  out.resize(old + (n - zs_.avail_out));
  return out.size() > old || !done_;
}

std::string read_head(const std::string& path, size_t n) {
  std::string out;
  try {
    ByteStream bs(path);
    while (out.size() < n && bs.read(out, n - out.size())) {
    }
  } catch (const ImportError&) {
  }
  if (out.size() > n) out.resize(n);
  return out;
}

}  // namespace strata::importer
