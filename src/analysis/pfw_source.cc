#include "analysis/pfw_source.h"

#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <simdjson.h>
#include <unordered_map>
#include <unordered_set>

namespace strata::analysis {

namespace fs = std::filesystem;
using namespace simdjson;

namespace {

bool ends_with(const std::string& s, const char* suf) {
  size_t n = std::strlen(suf);
  return s.size() >= n && s.compare(s.size() - n, n, suf) == 0;
}

// Streams the decompressed bytes of a plain or gzip file (multi-member gzip ok).
class ByteStream {
 public:
  explicit ByteStream(const std::string& path) : path_(path) {
    fp_ = std::fopen(path.c_str(), "rb");
    if (!fp_) throw InputError(path + ": cannot open: " + std::strerror(errno));
    unsigned char magic[2] = {0, 0};
    size_t n = std::fread(magic, 1, 2, fp_);
    std::rewind(fp_);
    gz_ = n == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    if (gz_) {
      std::memset(&zs_, 0, sizeof zs_);
      if (inflateInit2(&zs_, 15 + 32) != Z_OK) throw InputError(path + ": zlib init failed");
      in_.resize(1 << 18);
    }
  }
  ~ByteStream() {
    if (gz_) inflateEnd(&zs_);
    if (fp_) std::fclose(fp_);
  }
  // Appends up to ~n bytes to out; returns false at the end.
  bool read(std::string& out, size_t n) {
    if (!gz_) {
      size_t old = out.size();
      out.resize(old + n);
      size_t got = std::fread(out.data() + old, 1, n, fp_);
      out.resize(old + got);
      if (got == 0 && std::ferror(fp_)) throw InputError(path_ + ": read error");
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
          if (!member_end_) throw InputError(path_ + ": truncated gzip stream (ends inside a member)");
          done_ = true;
          break;
        }
        zs_.next_in = reinterpret_cast<Bytef*>(in_.data());
        zs_.avail_in = static_cast<uInt>(got);
      }
      if (member_end_) {
        // Another gzip member follows (or trailing garbage).
        if (inflateReset(&zs_) != Z_OK) throw InputError(path_ + ": zlib reset failed");
        member_end_ = false;
      }
      int rc = inflate(&zs_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        member_end_ = true;
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        throw InputError(path_ + ": corrupt gzip data near compressed byte " +
                         std::to_string(consumed_ - zs_.avail_in) + ": " + (zs_.msg ? zs_.msg : "inflate error"));
      }
    }
    out.resize(old + (n - zs_.avail_out));
    return out.size() > old || !done_;
  }

 private:
  std::string path_;
  FILE* fp_ = nullptr;
  bool gz_ = false;
  z_stream zs_;
  std::vector<char> in_;
  bool member_end_ = false;
  bool done_ = false;
  size_t consumed_ = 0;
};

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

namespace {

struct NameKey {
  std::string name, cat;
  bool operator==(const NameKey& o) const { return name == o.name && cat == o.cat; }
};
struct NameKeyHash {
  size_t operator()(const NameKey& k) const {
    return std::hash<std::string>()(k.name) * 31 + std::hash<std::string>()(k.cat);
  }
};

// Reads the first events of a file to find its first timestamp and whether
// its I/O events carry arguments.
struct Probe {
  int64_t first_ts = INT64_MAX;
  bool has_args = false;
  bool saw_io = false;
};

Probe probe_file(const std::string& path) {
  Probe p;
  try {
    ByteStream bs(path);
    std::string buf;
    while (buf.size() < (1 << 16) && bs.read(buf, 1 << 16)) {
    }
    size_t pos = 0;
    int lines = 0;
    while (pos < buf.size() && lines < 2000) {
      size_t nl = buf.find('\n', pos);
      if (nl == std::string::npos) break;
      std::string_view line(buf.data() + pos, nl - pos);
      pos = nl + 1;
      ++lines;
      size_t t = line.find("\"ts\":");
      if (t != std::string_view::npos && p.first_ts == INT64_MAX)
        p.first_ts = std::strtoll(std::string(line.substr(t + 5, 24)).c_str(), nullptr, 10);
      if (!p.saw_io && (line.find("\"cat\":\"POSIX\"") != std::string_view::npos ||
                        line.find("\"cat\":\"STDIO\"") != std::string_view::npos)) {
        p.saw_io = true;
        p.has_args = line.find("\"args\"") != std::string_view::npos;
      }
      if (p.saw_io && p.first_ts != INT64_MAX) break;
    }
  } catch (const InputError&) {
    // reported when the unit is read
  }
  return p;
}

}  // namespace

bool looks_like_pfw(const std::string& path) {
  return ends_with(path, ".pfw") || ends_with(path, ".pfw.gz");
}

PfwSource::PfwSource(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    for (auto& de : fs::directory_iterator(path, ec)) {
      std::string p = de.path().string();
      if (de.is_regular_file() && looks_like_pfw(p)) files_.push_back(p);
    }
    std::sort(files_.begin(), files_.end());
    if (files_.empty()) throw InputError(path + ": directory holds no .pfw or .pfw.gz file");
  } else if (fs::exists(path, ec)) {
    files_.push_back(path);
  } else {
    throw InputError(path + ": no such file or directory");
  }
  int64_t base = INT64_MAX;
  for (auto& f : files_) base = std::min(base, probe_file(f).first_ts);
  base_us_ = base == INT64_MAX ? 0 : base;
}

void PfwSource::read_unit(size_t idx, UnitConsumer& c) {
  const std::string& path = files_[idx];
  Probe pr = probe_file(path);
  const bool sizes_known = !pr.saw_io || pr.has_args;

  Tables tables;
  std::vector<std::string> strings{""};
  std::unordered_map<uint64_t, uint32_t> hash_to_sid;
  std::unordered_map<std::string, uint32_t> str_to_sid;
  std::unordered_map<NameKey, uint32_t, NameKeyHash> name_ids;
  std::unordered_map<uint64_t, std::string> host_names, str_hashes;
  std::unordered_set<int64_t> child_tids;
  tables.str = [&strings](uint32_t id) -> std::string_view {
    return id < strings.size() ? std::string_view(strings[id]) : std::string_view();
  };
  tables.ctxs.emplace_back();

  auto sid_for_hash = [&](uint64_t h) -> uint32_t {
    auto it = hash_to_sid.find(h);
    if (it != hash_to_sid.end()) return it->second;
    strings.push_back("<fhash:" + std::to_string(h) + ">");
    uint32_t id = static_cast<uint32_t>(strings.size() - 1);
    hash_to_sid.emplace(h, id);
    return id;
  };
  auto sid_for_name = [&](std::string_view s) -> uint32_t {
    auto it = str_to_sid.find(std::string(s));
    if (it != str_to_sid.end()) return it->second;
    strings.emplace_back(s);
    uint32_t id = static_cast<uint32_t>(strings.size() - 1);
    str_to_sid.emplace(std::string(s), id);
    return id;
  };

  c.begin(path, &tables, sizes_known);
  // Owned, unescaped copies of the strings of the current line.
  std::string name_buf, cat_buf, aname_buf, afname_buf;
  const char* line_end = nullptr;

  ByteStream bs(path);
  ondemand::parser parser;
  std::string buf;
  buf.reserve((1 << 20) + SIMDJSON_PADDING + 4096);
  size_t line_no = 0;
  bool saw_open = false, saw_anything = false, saw_close = false;
  const int64_t base = base_us_;

  auto fail = [&](const std::string& what) -> void {
    throw InputError(path + ":" + std::to_string(line_no) + ": " + what);
  };

  auto handle_line = [&](const char* p, size_t len, size_t cap) {
    // trim
    while (len && (p[0] == ' ' || p[0] == '\t' || p[0] == '\r')) {
      ++p;
      --len;
      --cap;
    }
    while (len && (p[len - 1] == ' ' || p[len - 1] == '\t' || p[len - 1] == '\r')) --len;
    if (len == 0) return;
    if (!saw_anything) {
      saw_anything = true;
      if (p[0] == '[') {
        saw_open = true;
        ++p;
        --len;
        --cap;
        while (len && (p[0] == ' ' || p[0] == '\n')) {
          ++p;
          --len;
          --cap;
        }
        if (len == 0) return;
      } else if (p[0] != '{') {
        fail("not a DFTracer trace (expected '[' or a JSON object)");
      }
    }
    if (len == 1 && p[0] == ']') {
      saw_close = true;
      return;
    }
    if (p[len - 1] == ',') --len;
    if (len == 0) return;
    if (p[0] != '{') fail("expected a JSON object");
    line_end = p + len;
    // Strings: our own unescaping (lone-surrogate escapes, see above).
    auto get_str = [&](ondemand::value& v, std::string& buf, std::string_view& out) -> bool {
      ondemand::raw_json_string raw;
      if (v.get_raw_json_string().get(raw)) return false;
      const char* s = reinterpret_cast<const char*>(raw.raw());
      if (const char* bad = unescape_json_string(s, line_end, buf)) fail(std::string("invalid JSON string: ") + bad);
      out = buf;
      return true;
    };
    ondemand::document doc;
    auto err = parser.iterate(p, len, cap).get(doc);
    if (err) fail(std::string("invalid JSON: ") + error_message(err));
    ondemand::object obj;
    if (doc.get_object().get(obj)) fail("invalid JSON object (truncated or malformed)");
    std::string_view name, cat, ph;
    int64_t pid = 0, tid = 0, ts = -1, dur = 0;
    int64_t a_ret = 0, a_count = -1, a_size = -1, a_offset = -1, a_fd = -1, a_ppid = -1;
    uint64_t a_fhash = 0, a_value = 0, a_hhash = 0, a_cmd = 0, a_exec = 0;
    bool has_ret = false, has_fhash = false, has_args = false;
    std::string_view a_name, a_fname, a_value_str;
    bool value_is_str = false;
    for (auto field : obj) {
      std::string_view key;
      if (field.unescaped_key().get(key)) fail("bad key");
      ondemand::value v = field.value();
      if (key == "name") {
        if (!get_str(v, name_buf, name)) fail("\"name\" is not a string");
      } else if (key == "cat") {
        if (!get_str(v, cat_buf, cat)) fail("\"cat\" is not a string");
      } else if (key == "ph") {
        if (v.get_string().get(ph)) fail("\"ph\" is not a string");
      } else if (key == "pid") {
        if (v.get_int64().get(pid)) fail("\"pid\" is not an integer");
      } else if (key == "tid") {
        if (v.get_int64().get(tid)) fail("\"tid\" is not an integer");
      } else if (key == "ts") {
        double d;
        if (v.get_int64().get(ts)) {
          if (v.get_double().get(d)) fail("\"ts\" is not a number");
          ts = static_cast<int64_t>(d);
        }
      } else if (key == "dur") {
        double d;
        if (v.get_int64().get(dur)) {
          if (v.get_double().get(d)) fail("\"dur\" is not a number");
          dur = static_cast<int64_t>(d);
        }
      } else if (key == "args") {
        ondemand::object args;
        if (v.get_object().get(args)) continue;
        has_args = true;
        for (auto af : args) {
          std::string_view ak;
          if (af.unescaped_key().get(ak)) fail("bad key in args");
          ondemand::value av = af.value();
          int64_t iv;
          uint64_t uv;
          if (ak == "ret") {
            if (!av.get_int64().get(iv)) {
              a_ret = iv;
              has_ret = true;
            }
          } else if (ak == "count") {
            if (!av.get_int64().get(iv)) a_count = iv;
          } else if (ak == "size") {
            if (!av.get_int64().get(iv)) a_size = iv;
          } else if (ak == "offset") {
            if (!av.get_int64().get(iv)) a_offset = iv;
          } else if (ak == "fd") {
            if (!av.get_int64().get(iv)) a_fd = iv;
          } else if (ak == "ppid") {
            if (!av.get_int64().get(iv)) a_ppid = iv;
          } else if (ak == "fhash") {
            if (!av.get_uint64().get(uv)) {
              a_fhash = uv;
              has_fhash = true;
            }
          } else if (ak == "hhash") {
            if (!av.get_uint64().get(uv)) a_hhash = uv;
          } else if (ak == "cmd_hash") {
            if (!av.get_uint64().get(uv)) a_cmd = uv;
          } else if (ak == "exec_hash") {
            if (!av.get_uint64().get(uv)) a_exec = uv;
          } else if (ak == "name") {
            if (!get_str(av, aname_buf, a_name)) a_name = {};
          } else if (ak == "fname") {
            if (!get_str(av, afname_buf, a_fname)) a_fname = {};
          } else if (ak == "value") {
            if (!av.get_uint64().get(uv)) {
              a_value = uv;
            } else if (!av.get_string().get(a_value_str)) {
              value_is_str = true;
            }
          }
        }
      }
    }
    if (ph == "M") {
      if (name == "FH") {
        uint32_t id = sid_for_hash(a_value);
        strings[id] = std::string(a_name);
      } else if (name == "HH") {
        host_names[a_value] = std::string(a_name);
      } else if (name == "SH") {
        str_hashes[a_value] = std::string(a_name);
      }
      (void)value_is_str;
      return;
    }
    if (ts < 0) fail("event without \"ts\"");
    if (cat == "dftracer") {
      if (name == "start") {
        ProcessMeta m;
        m.pid = pid;
        m.ppid = a_ppid >= 0 ? a_ppid : 0;
        auto h = host_names.find(a_hhash);
        if (h != host_names.end()) m.host = h->second;
        auto cmd = str_hashes.find(a_cmd);
        if (cmd != str_hashes.end()) {
          m.cmdline = cmd->second;
          std::replace(m.cmdline.begin(), m.cmdline.end(), ';', ' ');
        }
        auto ex = str_hashes.find(a_exec);
        if (ex != str_hashes.end()) m.exe = ex->second;
        m.start_ns = (ts - base) * 1000;
        m.source_file = path;
        c.process(m);
      }
      return;  // start/end markers are not events of the application
    }
    IoEvent e;
    e.pid = pid;
    e.tid = tid;
    // DFTracer 1.0.8 writes a forked child's events with the parent's pid;
    // the child is recognisable by its fork event returning 0 on its tid.
    if (name == "fork" && has_ret && a_ret == 0 && tid != pid && !child_tids.count(tid)) {
      child_tids.insert(tid);
      ProcessMeta m;
      m.pid = tid;
      m.ppid = pid;
      auto h = host_names.find(a_hhash);
      if (h != host_names.end()) m.host = h->second;
      m.start_ns = (ts - base) * 1000;
      m.source_file = path;
      c.process(m);
    }
    if (!child_tids.empty() && child_tids.count(tid)) e.pid = tid;
    e.ts = (ts - base) * 1000;
    e.dur = dur * 1000;
    NameKey k{std::string(name), std::string(cat)};
    auto it = name_ids.find(k);
    uint32_t fid;
    if (it == name_ids.end()) {
      tables.funcs.push_back(classify(name, cat));
      fid = static_cast<uint32_t>(tables.funcs.size() - 1);
      name_ids.emplace(std::move(k), fid);
    } else {
      fid = it->second;
    }
    e.func = fid;
    const FuncInfo& fi = tables.funcs[fid];
    if (!a_fname.empty())
      e.path = sid_for_name(a_fname);
    else if (has_fhash)
      e.path = sid_for_hash(a_fhash);
    e.fd = static_cast<int32_t>(a_fd);
    e.offset = a_offset;
    e.has_ret = has_ret;
    e.ret = a_ret;
    if (fi.layer == Layer::kStdio && fi.data && a_size > 0 && a_count >= 0) {
      // fread/fwrite: count items of `size` bytes; ret counts items.
      e.size = a_count * a_size;
      if (has_ret && a_ret > 0) e.ret = a_ret * a_size;
    } else {
      e.size = a_count;
    }
    if (!has_args) {
      e.has_ret = false;
      e.size = -1;
    }
    c.event(e);
  };

  size_t start = 0;
  bool more = true;
  while (more) {
    // Keep at most one partial line at the front, then refill.
    if (start > 0) {
      buf.erase(0, start);
      start = 0;
    }
    more = bs.read(buf, 1 << 20);
    if (more && buf.size() > kMaxPfwLine && !std::memchr(buf.data(), '\n', buf.size())) {
      // No end of line within the limit: memory stays bounded (a gzip bomb
      // of one huge line, or not a JSON-lines file at all).
      throw InputError(path + ":" + std::to_string(line_no + 1) + ": line longer than " +
                       std::to_string(kMaxPfwLine >> 20) +
                       " MiB (the limit for one DFTracer event line; corrupt or not a DFTracer trace)");
    }
    size_t limit = buf.size();
    if (!more) {
      if (!buf.empty() && buf.back() != '\n') buf.push_back('\n');
      limit = buf.size();
    }
    const size_t data_size = buf.size();
    buf.resize(data_size + SIMDJSON_PADDING, ' ');
    while (start < limit) {
      const char* nl = static_cast<const char*>(std::memchr(buf.data() + start, '\n', limit - start));
      if (!nl) break;
      size_t end = static_cast<size_t>(nl - buf.data());
      ++line_no;
      handle_line(buf.data() + start, end - start, buf.size() - start);
      start = end + 1;
    }
    buf.resize(data_size);
  }
  if (!saw_anything) throw InputError(path + ": empty file (no DFTracer events)");
  (void)line_end;
  if (saw_open && !saw_close) {
    // DFTracer leaves the array open when the process dies; that is fine.
  }
  c.end();
}

}  // namespace strata::analysis
