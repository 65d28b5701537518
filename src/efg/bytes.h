// Little byte writer/reader for the builder's serialised state: LEB128
// varints, zigzag for signed values, length-prefixed strings.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace strata::efg {

class ByteWriter {
 public:
  void u(uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>(v | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
  }
  void s(int64_t v) { u((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63)); }
  void str(std::string_view v) {
    u(v.size());
    out_.append(v);
  }
  void raw(std::string_view v) { out_.append(v); }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class ByteReader {
 public:
  explicit ByteReader(std::string_view in) : in_(in) {}
  uint64_t u() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= in_.size()) fail("truncated varint");
      const auto b = static_cast<uint8_t>(in_[pos_++]);
      v |= uint64_t{b & 0x7Fu} << shift;
      if (!(b & 0x80)) return v;
    }
    fail("varint longer than 10 bytes");
  }
  int64_t s() {
    const uint64_t z = u();
    return static_cast<int64_t>((z >> 1) ^ (~(z & 1) + 1));
  }
  // A count of items each at least `min_item_bytes` long: bounded by what is left.
  uint64_t count(size_t min_item_bytes = 1) {
    const uint64_t n = u();
    if (n > (in_.size() - pos_) / min_item_bytes) fail("count larger than the data");
    return n;
  }
  std::string str() {
    const uint64_t n = u();
    if (n > in_.size() - pos_) fail("truncated string");
    std::string v(in_.substr(pos_, n));
    pos_ += n;
    return v;
  }
  void expect(std::string_view magic) {
    if (in_.substr(pos_, magic.size()) != magic) fail("bad magic (not an efg state)");
    pos_ += magic.size();
  }
  bool done() const { return pos_ == in_.size(); }
  [[noreturn]] void fail(const char* what) const {
    throw std::runtime_error(std::string("efg state: ") + what + " at byte " + std::to_string(pos_));
  }

 private:
  std::string_view in_;
  size_t pos_ = 0;
};

}  // namespace strata::efg
