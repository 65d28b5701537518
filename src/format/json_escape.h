// The one JSON string escaper of every strata JSON writer (`strata cat`, the
// Chrome and DFTracer converters, `strata info --json`, `strata analyze
// --json/--html`). Header-only and dependent on the standard library alone, so
// every part may use it.
//
// Trace strings (paths above all) are byte strings, not necessarily UTF-8. The
// output is valid UTF-8 JSON for any input and lossless, by Python's
// "surrogateescape" convention:
//   - valid UTF-8 passes through unchanged (no \u escapes for non-ASCII text);
//   - each byte 0x80..0xFF that is not part of a valid UTF-8 sequence (stray
//     continuation bytes, truncated or overlong sequences, encoded surrogates,
//     code points above U+10FFFF) becomes the lone low surrogate \udcXX;
//   - '"' and '\\' are escaped, control characters 0x00..0x1F become \b \f \n
//     \r \t or \u00XX.
// In Python, json.loads(line)[...].encode("utf-8", "surrogateescape") gives the
// original bytes back. docs/trace-format.md, "JSON output".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace strata::json {

namespace detail {

// 1 for bytes that can be copied as they are: printable ASCII except '"' and '\\'.
struct PlainTable {
  bool v[256] = {};
  constexpr PlainTable() {
    for (int c = 0x20; c < 0x80; ++c) v[c] = c != '"' && c != '\\';
  }
};
inline constexpr PlainTable kPlain{};

// Length of the valid UTF-8 sequence at p (lead byte >= 0x80), or 0 if the
// bytes there are not one (RFC 3629: shortest form, no surrogates, <= U+10FFFF).
inline size_t utf8_sequence(const unsigned char* p, const unsigned char* end) {
  const unsigned char c = p[0];
  const size_t avail = static_cast<size_t>(end - p);
  auto cont = [&](size_t i) { return i < avail && (p[i] & 0xC0) == 0x80; };
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xE0 && p[1] < 0xA0) return 0;   // overlong
    if (c == 0xED && p[1] >= 0xA0) return 0;  // U+D800..U+DFFF
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xF0 && p[1] < 0x90) return 0;   // overlong
    if (c == 0xF4 && p[1] >= 0x90) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;  // 0x80..0xC1 (continuation or overlong lead), 0xF5..0xFF
}

}  // namespace detail

// Appends the escaped body of s (no quotes) to out.
inline void append_escaped(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* end = p + s.size();
  while (p < end) {
    // Fast path: a run of plain ASCII is copied in one append.
    const auto* run = p;
    while (p < end && detail::kPlain.v[*p]) ++p;
    if (p != run) out.append(reinterpret_cast<const char*>(run), static_cast<size_t>(p - run));
    if (p == end) break;
    const unsigned char c = *p;
    if (c >= 0x80) {
      if (size_t n = detail::utf8_sequence(p, end)) {
        out.append(reinterpret_cast<const char*>(p), n);
        p += n;
      } else {
        const char esc[6] = {'\\', 'u', 'd', 'c', kHex[c >> 4], kHex[c & 15]};
        out.append(esc, 6);
        ++p;
      }
      continue;
    }
    ++p;
    switch (c) {
      case '"': out.append("\\\"", 2); break;
      case '\\': out.append("\\\\", 2); break;
      case '\b': out.append("\\b", 2); break;
      case '\f': out.append("\\f", 2); break;
      case '\n': out.append("\\n", 2); break;
      case '\r': out.append("\\r", 2); break;
      case '\t': out.append("\\t", 2); break;
      default: {
        const char esc[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
        out.append(esc, 6);
      }
    }
  }
}

// Appends s quoted and escaped.
inline void append_quoted(std::string& out, std::string_view s) {
  out.push_back('"');
  append_escaped(out, s);
  out.push_back('"');
}

inline std::string quoted(std::string_view s) {
  std::string o;
  o.reserve(s.size() + 2);
  append_quoted(o, s);
  return o;
}

}  // namespace strata::json
