#include "importer/pfw_parser.h"

#include <simdjson.h>

#include <cstring>
#include <string>
#include <vector>

namespace strata::importer {

using namespace simdjson;
static_assert(SIMDJSON_PADDING <= 64, "LineReader pads lines with 64 bytes");

namespace {

// Appends the UTF-8 of code point cp.
void put_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool hex4(const char* p, uint32_t& v) {
  v = 0;
  for (int i = 0; i < 4; ++i) {
    char c = p[i];
    v <<= 4;
    if (c >= '0' && c <= '9') v |= static_cast<uint32_t>(c - '0');
    else if (c >= 'a' && c <= 'f') v |= static_cast<uint32_t>(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') v |= static_cast<uint32_t>(c - 'A' + 10);
    else return false;
  }
  return true;
}

}  // namespace

// Unescapes the JSON string whose content starts at p (after the opening
// quote) and ends at the first unescaped quote before `end`. Surrogate pairs
// become UTF-8; a lone low surrogate \udc80..\udcff becomes the single raw
// byte 0x80..0xff (Python's "surrogateescape": how strata's writers keep
// non-UTF-8 path bytes). Returns nullptr, or what is wrong.
const char* unescape_json_string(const char* p, const char* end, std::string& out) {
  out.clear();
  while (p < end) {
    const char* q = p;
    while (q < end && *q != '"' && *q != '\\' && static_cast<unsigned char>(*q) >= 0x20) ++q;
    out.append(p, q);
    p = q;
    if (p == end) break;
    if (*p == '"') return nullptr;
    if (*p != '\\') return "control character in a string";
    if (end - p < 2) break;
    char e = p[1];
    p += 2;
    switch (e) {
      case '"': out.push_back('"'); break;
      case '\\': out.push_back('\\'); break;
      case '/': out.push_back('/'); break;
      case 'b': out.push_back('\b'); break;
      case 'f': out.push_back('\f'); break;
      case 'n': out.push_back('\n'); break;
      case 'r': out.push_back('\r'); break;
      case 't': out.push_back('\t'); break;
      case 'u': {
        uint32_t cp;
        if (end - p < 4 || !hex4(p, cp)) return "bad \\u escape";
        p += 4;
        if (cp >= 0xD800 && cp < 0xDC00) {
          uint32_t lo;
          if (end - p >= 6 && p[0] == '\\' && p[1] == 'u' && hex4(p + 2, lo) && lo >= 0xDC00 && lo < 0xE000) {
            p += 6;
            put_utf8(out, 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00));
          } else {
            return "lone high surrogate in a \\u escape";
          }
        } else if (cp >= 0xDC80 && cp <= 0xDCFF) {
          out.push_back(static_cast<char>(cp - 0xDC00));  // surrogateescape: one raw byte
        } else if (cp >= 0xDC00 && cp < 0xE000) {
          return "lone low surrogate in a \\u escape (only \\udc80..\\udcff, raw bytes, are allowed)";
        } else {
          put_utf8(out, cp);
        }
        break;
      }
      default: return "bad escape in a string";
    }
  }
  return "unterminated string";
}


const char* phase_name(Phase p) {
  switch (p) {
    case Phase::kComplete: return "COMPLETE";
    case Phase::kCounter: return "COUNTER";
    case Phase::kAggregated: return "AGGREGATED";
    case Phase::kMetadata: return "METADATA";
    default: return "UNKNOWN";
  }
}

const char* event_type_name(EventType t) {
  static const char* const kNames[] = {"UNKNOWN", "DFTRACER", "C_APP",       "LIBC_IO", "HIP", "HDF5",
                                       "PYTHON",  "PSUTIL",   "FINSTRUMENT", "CPP_APP", "MPI", "CUDA"};
  auto i = static_cast<size_t>(t);
  return i < sizeof kNames / sizeof kNames[0] ? kNames[i] : "UNKNOWN";
}

EventType event_type_of(int64_t v) {
  return v >= 1 && v <= kMaxEventType ? static_cast<EventType>(v) : EventType::kUnknown;
}

bool parse_hash_string(std::string_view s, uint64_t& out) {
  if (s.empty() || s.size() > 16) return false;
  uint64_t v = 0;
  for (char c : s) {
    v <<= 4;
    if (c >= '0' && c <= '9') v |= static_cast<uint64_t>(c - '0');
    else if (c >= 'a' && c <= 'f') v |= static_cast<uint64_t>(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') v |= static_cast<uint64_t>(c - 'A' + 10);
    else return false;
  }
  out = v;
  return true;
}

struct PfwParser::Impl {
  ondemand::parser parser;
  // Owned, unescaped copies of the strings of the current line.
  std::string name_buf, cat_buf, aname_buf, afname_buf, value_buf;
  std::vector<PfwTag> tags;  // the current record's tags (PfwRecord::tags), storage kept
};

PfwParser::PfwParser(std::string path) : impl_(std::make_unique<Impl>()), path_(std::move(path)) {}
PfwParser::~PfwParser() = default;

bool PfwParser::parse(const Line& line, PfwRecord& r) {
  const char* p = line.p;
  size_t len = line.len, cap = line.cap;
  auto fail = [&](const std::string& what) -> void {
    throw ImportError(path_ + ":" + std::to_string(line.no) + ": " + what);
  };
  auto as_int = [&](double d, const char* what) -> int64_t {
    if (!(d > -9.2e18 && d < 9.2e18)) fail(std::string("\"") + what + "\" out of range");
    return static_cast<int64_t>(d);
  };
  while (len && (p[0] == ' ' || p[0] == '\t' || p[0] == '\r')) {
    ++p;
    --len;
    --cap;
  }
  while (len && (p[len - 1] == ' ' || p[len - 1] == '\t' || p[len - 1] == '\r')) --len;
  if (len == 0) return false;
  if (!saw_anything_) {
    saw_anything_ = true;
    if (p[0] == '[') {
      ++p;
      --len;
      --cap;
      while (len && (p[0] == ' ' || p[0] == '\n')) {
        ++p;
        --len;
        --cap;
      }
      if (len == 0) return false;
    } else if (p[0] != '{') {
      fail("not a DFTracer trace (expected '[' or a JSON object)");
    }
  }
  if (len == 1 && p[0] == ']') return false;
  if (p[len - 1] == ',') --len;
  if (len == 0) return false;
  if (p[0] != '{') fail("expected a JSON object");
  const char* line_end = p + len;
  r = PfwRecord{};
  Impl& m = *impl_;
  auto get_str = [&](ondemand::value& v, std::string& buf, std::string_view& out) -> bool {
    ondemand::raw_json_string raw;
    if (v.get_raw_json_string().get(raw)) return false;
    const char* s = reinterpret_cast<const char*>(raw.raw());
    if (const char* bad = unescape_json_string(s, line_end, buf)) fail(std::string("invalid JSON string: ") + bad);
    out = buf;
    return true;
  };
  auto get_i64 = [&](ondemand::value& v, int64_t& out) -> bool {
    if (!v.get_int64().get(out)) return true;
    double d;
    if (v.get_double().get(d)) return false;
    out = as_int(d, "number");
    return true;
  };
  // A hash: a number or a hex string.
  auto get_hash = [&](ondemand::value& v, uint64_t& out) -> bool {
    if (!v.get_uint64().get(out)) return true;
    int64_t i;
    if (!v.get_int64().get(i)) {
      out = static_cast<uint64_t>(i);
      return true;
    }
    std::string_view s;
    if (!v.get_string().get(s)) return parse_hash_string(s, out);
    return false;
  };
  // Tags: integers and strings only (an object or a float is not one).
  size_t ntags = 0;
  auto add_tag = [&](std::string_view key, ondemand::value& v) {
    if (ntags == m.tags.size()) m.tags.emplace_back();
    PfwTag& t = m.tags[ntags];
    int64_t iv;
    std::string_view sv;
    if (!v.get_int64().get(iv)) {
      t.is_int = true;
      t.int_value = iv;
      t.value = std::to_string(iv);
    } else if (get_str(v, t.value, sv)) {
      t.is_int = false;
      t.int_value = 0;
    } else {
      return;
    }
    t.key.assign(key);
    ++ntags;
  };
  ondemand::document doc;
  auto err = m.parser.iterate(p, len, cap).get(doc);
  if (err) fail(std::string("invalid JSON: ") + error_message(err));
  ondemand::object obj;
  if (doc.get_object().get(obj)) fail("invalid JSON object (truncated or malformed)");
  bool has_ph = false;
  for (auto field : obj) {
    std::string_view key;
    if (field.unescaped_key().get(key)) fail("bad key");
    ondemand::value v = field.value();
    if (key == "name") {
      if (!get_str(v, m.name_buf, r.name)) fail("\"name\" is not a string");
    } else if (key == "cat") {
      if (!get_str(v, m.cat_buf, r.cat)) fail("\"cat\" is not a string");
    } else if (key == "ph") {
      has_ph = true;
      int64_t iv;
      std::string_view sv;
      if (!v.get_int64().get(iv)) {
        r.version = 2;
        r.ph = iv >= 1 && iv <= 4 ? static_cast<Phase>(iv) : Phase::kUnknown;
      } else if (!v.get_string().get(sv)) {
        r.ph = sv == "X" ? Phase::kComplete : sv == "C" ? Phase::kCounter : sv == "M" ? Phase::kMetadata
                                                                                     : Phase::kUnknown;
      } else {
        fail("\"ph\" is not a string or an integer");
      }
    } else if (key == "type") {
      int64_t iv;
      if (v.get_int64().get(iv)) fail("\"type\" is not an integer");
      r.has_type = true;
      r.raw_type = iv;
      r.type = event_type_of(iv);
    } else if (key == "pid") {
      if (v.get_int64().get(r.pid)) fail("\"pid\" is not an integer");
    } else if (key == "tid") {
      if (v.get_int64().get(r.tid)) fail("\"tid\" is not an integer");
    } else if (key == "ts") {
      double d;
      if (v.get_int64().get(r.ts)) {
        if (v.get_double().get(d)) fail("\"ts\" is not a number");
        r.ts = as_int(d, "ts");
      }
      r.has_ts = true;
    } else if (key == "dur") {
      double d;
      if (v.get_int64().get(r.dur)) {
        if (v.get_double().get(d)) fail("\"dur\" is not a number");
        r.dur = as_int(d, "dur");
      }
    } else if (key == "args") {
      ondemand::object args;
      if (v.get_object().get(args)) continue;
      r.has_args = true;
      for (auto af : args) {
        std::string_view ak;
        if (af.unescaped_key().get(ak)) fail("bad key in args");
        ondemand::value av = af.value();
        // Numeric fields, plain or (aggregated) as _min/_max/_sum.
        std::string_view base = ak;
        int part = 0;  // 0 plain, 1 min, 2 max, 3 sum
        if (ak.size() > 4) {
          std::string_view suf = ak.substr(ak.size() - 4);
          if (suf == "_min") part = 1;
          else if (suf == "_max") part = 2;
          else if (suf == "_sum") part = 3;
          if (part) base = ak.substr(0, ak.size() - 4);
        }
        NumField* nf = base == "ret" ? &r.ret : base == "count" ? &r.count : base == "size" ? &r.size
                     : base == "offset" ? &r.offset : base == "fd" ? &r.fd : base == "errno" ? &r.err
                     : base == "dur" ? &r.args_dur : base == "mem_align" ? &r.mem_align : nullptr;
        if (nf) {
          int64_t iv;
          if (!get_i64(av, iv)) continue;
          if (part == 0) {
            nf->v = iv;
          } else {
            if (!nf->ranged) ++r.approx_fields;
            nf->ranged = true;
            nf->parts |= static_cast<uint8_t>(1u << (part - 1));
            (part == 1 ? nf->min : part == 2 ? nf->max : nf->sum) = iv;
          }
          nf->present = true;
          continue;
        }
        if (ak == "dft_cnt") {
          int64_t iv;
          if (!get_i64(av, iv) || iv < 1) fail("\"dft_cnt\" is not a positive integer");
          r.cnt = iv;
        } else if (ak == "ppid") {
          get_i64(av, r.ppid);
        } else if (ak == "num_events") {
          get_i64(av, r.num_events);
        } else if (ak == "fhash") {
          r.has_fhash = get_hash(av, r.fhash);
        } else if (ak == "hhash") {
          get_hash(av, r.hhash);
        } else if (ak == "cmd_hash") {
          get_hash(av, r.cmd_hash);
        } else if (ak == "exec_hash") {
          get_hash(av, r.exec_hash);
        } else if (ak == "name") {
          if (!get_str(av, m.aname_buf, r.a_name)) r.a_name = {};
        } else if (ak == "fname") {
          if (!get_str(av, m.afname_buf, r.a_fname)) r.a_fname = {};
        } else if (ak == "value") {
          uint64_t uv;
          if (!av.get_uint64().get(uv)) {
            r.value = uv;
            r.has_value = true;
          } else if (get_str(av, m.value_buf, r.value_str)) {
            // 2.x writes hashes as hex strings: the string is also the value.
            r.has_value = parse_hash_string(r.value_str, r.value);
          }
        } else if (ak != "p_idx" && ak != "level" && ak != "cfg") {
          add_tag(ak, av);
        }
      }
    }
  }
  r.tags = std::span<const PfwTag>(m.tags.data(), ntags);
  if (!has_ph) r.ph = Phase::kComplete;  // as DFTracer 1.x readers did
  if (r.has_type) r.version = 2;
  // Aggregated: dur lives in args (plain or ranged); the record has none.
  if (r.ph == Phase::kAggregated && r.args_dur.present) r.dur = r.args_dur.total(r.cnt);
  return true;
}

}  // namespace strata::importer
