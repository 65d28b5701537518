#include "convert/json_out.h"

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

}  // namespace strata::convert
