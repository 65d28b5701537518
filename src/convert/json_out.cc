#include "convert/json_out.h"

namespace strata::convert {

void JsonOut::str(std::string_view s) {
  buf_.push_back('"');
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      buf_.push_back('\\');
      buf_.push_back(c);
    } else if (u < 0x20) {
      fmt::format_to(std::back_inserter(buf_), "\\u{:04x}", u);
    } else {
      buf_.push_back(c);
    }
  }
  buf_.push_back('"');
}

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

}  // namespace strata::convert
