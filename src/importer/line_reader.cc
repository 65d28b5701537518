#include "importer/line_reader.h"

#include <cstring>

namespace strata::importer {

bool LineReader::refill() {
  if (!more_) return false;
  // Keep at most one partial line at the front, then read more.
  buf_.resize(data_);
  if (start_ > 0) {
    buf_.erase(0, start_);
    start_ = 0;
  }
  more_ = in_.read(buf_, 1 << 20);
  if (more_ && buf_.size() > kMaxLine && !std::memchr(buf_.data(), '\n', buf_.size())) {
    // No end of line within the limit: memory stays bounded (a gzip bomb
    // of one huge line, or not a JSON-lines file at all).
    throw ImportError(in_.path() + ":" + std::to_string(line_no_ + 1) + ": line longer than " +
                      std::to_string(kMaxLine >> 20) +
                      " MiB (the limit for one DFTracer event line; corrupt or not a DFTracer trace)");
  }
  if (!more_ && !buf_.empty() && buf_.back() != '\n') buf_.push_back('\n');
  data_ = buf_.size();
  buf_.resize(data_ + padding_, ' ');
  return true;
}

bool LineReader::next(Line& line) {
  for (;;) {
    if (start_ < data_) {
      const char* nl = static_cast<const char*>(std::memchr(buf_.data() + start_, '\n', data_ - start_));
      if (nl) {
        size_t end = static_cast<size_t>(nl - buf_.data());
        line.p = buf_.data() + start_;
        line.len = end - start_;
        line.cap = buf_.size() - start_;
        line.no = ++line_no_;
        start_ = end + 1;
        return true;
      }
    }
    if (!refill()) return false;
  }
}

}  // namespace strata::importer
