// `strata cat`: one JSON object per event and line, at tens of millions of
// lines per second. The parts that repeat (name, category, pid and tid; a
// path; a tag set) are rendered once and copied; the integers are formatted
// straight into one large output buffer that is written in 1 MiB chunks.
#include <bit>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "convert/convert.h"
#include "convert/events.h"
#include "convert/json_out.h"
#include "format/format.h"

namespace strata::convert {

namespace fmtf = strata::format;

namespace {

// ---- Integers -------------------------------------------------------------
// Most of a line's work: formatted straight into the output buffer.

static_assert(std::endian::native == std::endian::little, "digits are stored as one little-endian word");

// The 8 decimal digits of n < 10^8 as byte values 0-9 of one word, the most
// significant digit in the lowest byte (first in memory). SWAR: n splits into
// two 4-digit lanes, each into two 2-digit lanes, each into two digits, all
// lanes at once with multiply-shift divisions that are exact in these ranges
// (x * 10486 >> 20 = x / 100 for x < 10^4; y * 103 >> 10 = y / 10 for y < 100).
inline uint64_t digits8(uint32_t n) {
  const uint64_t four = (n / 10000) | static_cast<uint64_t>(n % 10000) << 32;
  const uint64_t hundreds = (four * 10486 >> 20) & 0x0000007f'0000007f;
  const uint64_t two = (four - 100 * hundreds) << 16 | hundreds;
  const uint64_t tens = (two * 103 >> 10) & 0x000f000f'000f000f;
  return tens + ((two - 10 * tens) << 8);
}

constexpr uint64_t kAsciiZeros = 0x30303030'30303030;

// Writes n < 10^8 without leading zeros; returns the end. Stores 8 bytes.
inline char* put_short(char* p, uint32_t n) {
  const uint64_t d = digits8(n);
  // Leading zero digits are the low zero bytes; the last digit always stays.
  const int zeros = std::countr_zero(d | uint64_t{1} << 56) / 8;
  const uint64_t text = (d + kAsciiZeros) >> (8 * zeros);
  std::memcpy(p, &text, 8);
  return p + 8 - zeros;
}

// Writes n < 10^8 as exactly 8 digits.
inline char* put_8(char* p, uint32_t n) {
  const uint64_t text = digits8(n) + kAsciiZeros;
  std::memcpy(p, &text, 8);
  return p + 8;
}

constexpr uint64_t k1e8 = 100000000;

// Writes v in decimal at p (up to 20 bytes; may store up to 7 bytes past
// the end, which the next write overwrites); returns the end.
[[gnu::always_inline]] inline char* put_u64(char* p, uint64_t v) {
  if (v < k1e8) [[likely]] return put_short(p, static_cast<uint32_t>(v));
  uint64_t hi = v / k1e8;  // 9 to 20 digits: timestamps, large offsets
  const auto lo = static_cast<uint32_t>(v - hi * k1e8);
  if (hi < k1e8) {
    p = put_short(p, static_cast<uint32_t>(hi));
  } else {
    const uint64_t top = hi / k1e8;
    p = put_short(p, static_cast<uint32_t>(top));
    p = put_8(p, static_cast<uint32_t>(hi - top * k1e8));
  }
  return put_8(p, lo);
}

[[gnu::always_inline]] inline char* put_i64(char* p, int64_t v) {
  if (v >= 0) [[likely]] return put_u64(p, static_cast<uint64_t>(v));
  *p = '-';
  return put_u64(p + 1, 0 - static_cast<uint64_t>(v));  // no overflow at INT64_MIN
}

// The text of a column's previous value: I/O traces repeat their fd, size
// and result (4096, 4096, ...), and a repeat is then one fixed-size copy.
class LastNumber {
 public:
  // Writes v at p, which has room for 32 bytes; returns the end.
  char* put(char* p, int64_t v) {
    if (v != value_) {
      value_ = v;
      len_ = static_cast<size_t>(put_i64(text_, v) - text_);
    }
    std::memcpy(p, text_, sizeof text_);
    return p + len_;
  }

 private:
  int64_t value_ = 0;
  size_t len_ = 1;
  char text_[32] = "0";  // room for put_i64's 8-byte stores
};

// Timestamps (ns since the trace start) have 9 to 16 digits, and the digits
// above the last 8 change only every 0.1 s: their text is kept.
class TimestampText {
 public:
  // Writes ts at p, which has room for 32 bytes; returns the end.
  char* put(char* p, int64_t ts) {
    const auto v = static_cast<uint64_t>(ts);
    const uint64_t high = v / k1e8;
    if (high == 0 || high >= k1e8) return put_i64(p, ts);  // short, huge or negative
    if (high != high_) {
      high_ = high;
      len_ = static_cast<size_t>(put_short(text_, static_cast<uint32_t>(high)) - text_);
    }
    std::memcpy(p, text_, sizeof text_);
    return put_8(p + len_, static_cast<uint32_t>(v - high * k1e8));
  }

 private:
  uint64_t high_ = 0;  // never a cached value (those are >= 1)
  size_t len_ = 0;
  char text_[8] = {};
};

// A key like ",\"fd\":": a copy of constant length, i.e. one or two stores.
template <size_t N>
inline char* put_key(char* p, const char (&key)[N]) {
  std::memcpy(p, key, N - 1);
  return p + N - 1;
}

// ---- Rendered fragments -----------------------------------------------------

// A rendered piece of a line, followed by kPad readable bytes so that a short
// one is copied with one fixed-size memcpy (a few vector moves, no call).
constexpr size_t kPad = 64;

struct Fragment {
  std::string text;  // the fragment, then kPad bytes of padding
  size_t len = 0;
  bool ready = false;

  void set(std::string_view s) {
    text.assign(s);
    len = s.size();
    text.resize(len + kPad);
    ready = true;
  }
  // Writes the fragment at p, which has room for len + kPad bytes.
  char* put(char* p) const {
    if (len <= kPad) std::memcpy(p, text.data(), kPad);
    else std::memcpy(p, text.data(), len);
    return p + len;
  }
};

class StringSink : public Sink {
 public:
  explicit StringSink(std::string& s) : s_(s) {}
  bool write(const char* p, size_t n) override {
    s_.append(p, n);
    return true;
  }

 private:
  std::string& s_;
};

// Renders with the JsonOut escaping every converter shares.
template <class Render>
std::string render(Render r) {
  std::string s;
  StringSink sink(s);
  JsonOut j(sink);
  r(j);
  j.flush();
  return s;
}

template <class Render>
const Fragment& cached(std::vector<Fragment>& cache, uint32_t id, Render r) {
  if (id >= cache.size()) cache.resize(id + 1);
  Fragment& f = cache[id];
  if (!f.ready) f.set(render(r));
  return f;
}

// What a line of one function (name id) starts with, and which fields follow.
struct NameSlot {
  uint64_t batch = ~uint64_t{0};  // the batch `head` and `fields` were taken for
  uint32_t tid = 0;
  uint32_t fields = 0;
  Fragment head;  // {"name":..,"cat":..,"pid":..,"tid":..,"ts":
};

// One file's fragments, rendered on first use: a file's dictionary ids never
// change meaning, only grow (the name prefix, path and tags stay as first
// rendered). The field bits are re-read from the dictionary once per batch,
// the granularity at which DICT blocks can arrive.
class Fragments {
 public:
  explicit Fragments(const reader::FileReader& f) : file_(f) {}

  void begin_batch(const reader::EventBatch& b) {
    ++batch_;
    tid_ = b.tid;
  }

  const NameSlot& name(uint32_t nid) {
    if (nid >= slots_.size()) slots_.resize(nid + 1);
    NameSlot& s = slots_[nid];
    if (s.batch != batch_) refresh(s, nid);
    return s;
  }
  const Fragment& path(uint32_t sid) {
    return cached(paths_, sid, [&](JsonOut& j) {
      j.raw(",\"path\":");
      j.str(file_.dict().str(sid));
    });
  }
  const Fragment& tags(uint32_t ctx) {
    return cached(tags_, ctx, [&](JsonOut& j) {
      j.raw(",\"tags\":{");
      write_tags(j, file_.dict(), ctx);
      j.ch('}');
    });
  }

 private:
  // Once per name and batch: the thread id is part of the head.
  void refresh(NameSlot& s, uint32_t nid) {
    const bool fresh = s.batch == ~uint64_t{0};
    s.batch = batch_;
    s.fields = file_.dict().name(nid).fields;
    if (!fresh && s.tid == tid_) return;
    s.tid = tid_;
    const Fragment& prefix = cached(prefixes_, nid, [&](JsonOut& j) {
      const auto& nm = file_.dict().name(nid);
      j.raw("{\"name\":");
      j.str(nm.name);
      j.raw(",\"cat\":");
      j.str(nm.category);
      j.raw(",\"pid\":");
      j.i64(file_.process().pid);
      j.raw(",\"tid\":");
    });
    std::string h(prefix.text.data(), prefix.len);
    char num[24];
    h.append(num, put_u64(num, tid_));
    h.append(",\"ts\":");
    s.head.set(h);
  }

  const reader::FileReader& file_;
  uint64_t batch_ = 0;
  uint32_t tid_ = 0;
  std::vector<NameSlot> slots_;
  std::vector<Fragment> prefixes_, paths_, tags_;
};

// ---- Output -------------------------------------------------------------------

// One large buffer handed to fwrite in ~1 MiB pieces. The formatting loop
// writes through its own pointer (see write_batch) and hands it back with
// commit(). Only whole lines are written, and the destructor writes what is
// formatted even when a later block fails to decode (the error then follows
// the last good line).
class LineBuffer {
 public:
  explicit LineBuffer(FILE* out) : out_(out) { grow(kChunk); }
  ~LineBuffer() { flush(); }
  LineBuffer(const LineBuffer&) = delete;
  LineBuffer& operator=(const LineBuffer&) = delete;

  char* pos() const { return pos_; }
  char* end() const { return end_; }
  void commit(char* p) { pos_ = p; }
  // Writes out the committed lines and makes room for n bytes.
  void make_room(size_t n) {
    flush();
    if (static_cast<size_t>(end_ - pos_) < n) grow(n);  // a line longer than a chunk
  }
  void flush() {
    if (pos_ != buf_.get()) std::fwrite(buf_.get(), 1, static_cast<size_t>(pos_ - buf_.get()), out_);
    pos_ = buf_.get();
  }

 private:
  static constexpr size_t kChunk = size_t{1} << 20;

  void grow(size_t n) {
    buf_ = std::make_unique_for_overwrite<char[]>(n);
    pos_ = buf_.get();
    end_ = pos_ + n;
  }

  FILE* out_;
  std::unique_ptr<char[]> buf_;
  char* pos_ = nullptr;
  char* end_ = nullptr;
};

// Bytes a line needs besides its fragments: keys and "}\n" (71), up to 8
// integers of 20 digits and a sign (168), mem_align's at most 4 digits, and
// the stores past the end of fixed-size copies (at most kPad).
constexpr size_t kLineFixed = 256 + kPad;

// The columns of a batch as plain pointers: the loop writes through a char*,
// which may alias anything, so values held in memory would be reloaded
// after every store; locals are not.
struct Columns {
  explicit Columns(const reader::EventBatch& b)
      : name(b.name.data()), path(b.path.data()), ctx(b.ctx.data()), fd(b.fd.data()), err(b.err.data()),
        ts(b.ts.data()), dur(b.dur.data()), offset(b.offset.data()), size(b.size.data()), ret(b.ret.data()),
        mem_align(b.mem_align.data()) {}
  const uint32_t *name, *path, *ctx;
  const int32_t *fd, *err;
  const uint64_t *ts, *dur;
  const int64_t *offset, *size, *ret;
  const uint8_t* mem_align;
};

// Formats the events of one batch. Consecutive events mostly share their
// function, path and tags, so those lookups are redone only on a change.
void write_batch(const reader::EventBatch& b, int64_t shift, Fragments& frag, LineBuffer& out) {
  frag.begin_batch(b);
  const Columns c(b);
  struct {
    TimestampText ts;
    LastNumber fd, size, ret;
  } last;
  const size_t n = b.size_events();
  if (n == 0) return;
  uint32_t nid = c.name[0], sid = 0, ctx = 0;
  const NameSlot* nm = &frag.name(nid);
  const Fragment* path = nullptr;  // none for sid 0, as for ctx 0
  const Fragment* tags = nullptr;
  char* p = out.pos();
  char* end = out.end();
  for (size_t i = 0; i < n; ++i) {
    if (c.name[i] != nid) nm = &frag.name(nid = c.name[i]);
    const uint32_t f = nm->fields;
    const uint32_t s = f & fmtf::kFieldPath ? c.path[i] : 0;
    if (s != sid) path = (sid = s) ? &frag.path(s) : nullptr;
    if (c.ctx[i] != ctx) tags = (ctx = c.ctx[i]) ? &frag.tags(ctx) : nullptr;
    const size_t need = kLineFixed + nm->head.len + (path ? path->len : 0) + (tags ? tags->len : 0);
    if (static_cast<size_t>(end - p) < need) {
      out.commit(p);
      out.make_room(need);
      p = out.pos();
      end = out.end();
    }
    p = nm->head.put(p);
    p = last.ts.put(p, static_cast<int64_t>(c.ts[i]) + shift);
    p = put_u64(put_key(p, ",\"dur\":"), c.dur[i]);
    if (path) p = path->put(p);
    if (f & fmtf::kFieldFd) p = last.fd.put(put_key(p, ",\"fd\":"), c.fd[i]);
    if (f & fmtf::kFieldOffset) p = put_i64(put_key(p, ",\"offset\":"), c.offset[i]);
    if (f & fmtf::kFieldSize) p = last.size.put(put_key(p, ",\"size\":"), c.size[i]);
    if (f & fmtf::kFieldValue) p = put_i64(put_key(p, ",\"value\":"), c.size[i]);
    if (f & fmtf::kFieldRet) p = last.ret.put(put_key(p, ",\"ret\":"), c.ret[i]);
    if ((f & fmtf::kFieldErrno) && c.err[i]) p = put_i64(put_key(p, ",\"errno\":"), c.err[i]);
    if (c.mem_align[i]) p = put_u64(put_key(p, ",\"mem_align\":"), strata::format::mem_align_bytes(c.mem_align[i]));
    if (tags) p = tags->put(p);
    p = put_key(p, "}\n");
  }
  out.commit(p);
}

}  // namespace

uint64_t write_json_lines(const std::string& trace, FILE* out, unsigned threads) {
  reader::TraceReader tr(trace);
  LineBuffer buf(out);
  uint64_t n = 0;
  reader::ReadOptions options;
  options.decode_threads = threads > 1 ? threads - 1 : 0;
  for (const auto& path : tr.files()) {
    reader::FileReader file(path, options);
    const int64_t shift = tr.to_trace_ns(file.process(), 0);  // host monotonic ns -> trace ns
    Fragments frag(file);
    reader::EventBatch b;
    while (file.next(b)) {
      write_batch(b, shift, frag, buf);
      n += b.size_events();
      if (std::ferror(out)) throw std::runtime_error("error writing the output (disk full?): it is incomplete");
    }
  }
  buf.flush();
  return n;
}

}  // namespace strata::convert
