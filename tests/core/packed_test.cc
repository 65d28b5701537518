// Format 1.1 at the encoder/reader level, without the runtime: EVENTS blocks
// written with EventsEncoder + BlockFramer (packed time columns after a zstd
// prefix) read back exactly, whatever the time values; malformed packed
// columns and zstd-prefix payloads (with valid checksums, so the decoder's
// own checks are what is tested) give a FormatError naming the file and
// block; 1.0 blocks (zstd codec, varint time columns) still read.
#include <cstring>
#include <random>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "format/encoder.h"
#include "format/format.h"
#include "format/varint.h"
#include "harness.h"

using namespace core_test;
namespace fmtf = strata::format;
using strata::reader::EventBatch;
using strata::reader::FileReader;
using strata::reader::FormatError;

namespace {

constexpr uint32_t kTid = 4242;

// ---- Writing files ---------------------------------------------------------------
// A trace file assembled block by block: FileHeader, PROCESS (ticks are ns),
// then whatever blocks a test adds.
class FileBuilder {
 public:
  explicit FileBuilder(uint16_t minor = fmtf::kVersionMinor) {
    fmtf::FileHeader h = fmtf::make_file_header();
    h.version_minor = minor;
    put(&h, sizeof(h));
    fmtf::ByteSink p;
    fmtf::ProcessRecord rec;
    rec.pid = 77;
    rec.ppid = 1;
    rec.hostname = "host";
    rec.exe = "/bin/test";
    rec.version = "test";
    rec.mode = "trace";
    fmtf::encode_process(rec, p);
    block(fmtf::BlockType::kProcess, 0, p.bytes(), false);
    // Readers require every id an event uses to be defined by an earlier
    // DICT block: strings 1..200, names 1..32, contexts 1..8 cover the tests.
    fmtf::ByteSink d;
    uint32_t count = 0;
    for (uint32_t id = 1; id <= 200; ++id, ++count) fmtf::dict_string(d, id, "s" + std::to_string(id));
    for (uint32_t id = 1; id <= 32; ++id, ++count) fmtf::dict_name(d, id, id, 1, 0, fmtf::EventKind::kComplete);
    for (uint32_t id = 1; id <= 8; ++id, ++count) fmtf::dict_context(d, id, nullptr, 0);
    block(fmtf::BlockType::kDict, count, d.bytes(), false);
  }
  // A block framed by BlockFramer (valid checksums; codec as the framer picks).
  void block(fmtf::BlockType type, uint32_t count, const std::vector<uint8_t>& payload, bool compress,
             size_t compress_prefix = SIZE_MAX) {
    ASSERT_TRUE(framer_.frame(type, count, payload, compress, compress_prefix));
    last_codec_ = framer_.data()[offsetof(fmtf::BlockHeader, codec)];
    put(framer_.data(), framer_.size());
  }
  // A block with any header fields and valid checksums over them.
  void raw_block(fmtf::BlockType type, fmtf::Codec codec, uint32_t count, const std::vector<uint8_t>& stored,
                 uint32_t raw_size) {
    fmtf::BlockHeader h{};
    h.magic = fmtf::kBlockMagic;
    h.type = static_cast<uint8_t>(type);
    h.codec = static_cast<uint8_t>(codec);
    h.stored_size = static_cast<uint32_t>(stored.size());
    h.raw_size = raw_size;
    h.count = count;
    h.header_hash = fmtf::header_hash_of(h);
    h.payload_hash = XXH3_64bits(stored.data(), stored.size());
    put(&h, sizeof(h));
    put(stored.data(), stored.size());
  }
  uint8_t last_codec() const { return last_codec_; }
  // The stored bytes of the last block framed with block().
  std::vector<uint8_t> last_stored() const {
    return {framer_.data() + sizeof(fmtf::BlockHeader), framer_.data() + framer_.size()};
  }
  fmtf::BlockHeader last_header() const {
    fmtf::BlockHeader h;
    std::memcpy(&h, framer_.data(), sizeof(h));
    return h;
  }
  std::string write(const TempDir& tmp, const std::string& name = "t.strata") const {
    std::string path = tmp.sub(name);
    write_text(path, bytes_);
    return path;
  }

 private:
  void put(const void* p, size_t n) { bytes_.append(static_cast<const char*>(p), n); }
  std::string bytes_;
  fmtf::BlockFramer framer_{1};
  uint8_t last_codec_ = 0;
};

// ---- Reading files ---------------------------------------------------------------
struct Ev {
  uint64_t ts, dur;
  int64_t offset, size, ret;
  uint32_t name, path, ctx;
  int32_t fd, err;
  uint32_t mem_align;
  bool operator==(const Ev&) const = default;
};

std::string show(const Ev& e) {
  return "{ts " + std::to_string(e.ts) + " dur " + std::to_string(e.dur) + " off " + std::to_string(e.offset) +
         " size " + std::to_string(e.size) + " ret " + std::to_string(e.ret) + " name " + std::to_string(e.name) +
         " path " + std::to_string(e.path) + " ctx " + std::to_string(e.ctx) + " fd " + std::to_string(e.fd) +
         " err " + std::to_string(e.err) + " mem_align " + std::to_string(e.mem_align) + "}";
}

std::vector<Ev> read_all(const std::string& path, bool check_tid = true) {
  FileReader r(path);
  EventBatch b;
  std::vector<Ev> out;
  while (r.next(b)) {
    if (check_tid) { EXPECT_EQ(b.tid, kTid); }
    for (size_t i = 0; i < b.size_events(); ++i)
      out.push_back({b.ts[i], b.dur[i], b.offset[i], b.size[i], b.ret[i], b.name[i], b.path[i], b.ctx[i], b.fd[i],
                     b.err[i], b.mem_align[i]});
  }
  return out;
}

// What the reader must return for an event handed to the encoder (the
// encoder records an end before the start as a zero duration).
Ev expected(const fmtf::EncodeEvent& e) {
  const uint64_t end = e.end > e.start ? e.end : e.start;
  return {e.start, end - e.start, e.offset, e.size, e.ret, e.name, e.path, e.ctx, e.fd, e.err, e.mem_align};
}

// ---- Synthetic events --------------------------------------------------------------
// Regular I/O fields with every kind of change: runs of names, fds, paths,
// sizes, short reads, errors (errno alone changing too), contexts; offsets
// sequential, strided, random and -1; memory alignments in runs and alone.
std::vector<fmtf::EncodeEvent> io_fields(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<fmtf::EncodeEvent> ev(n);
  int64_t off = 0;
  for (size_t i = 0; i < n; ++i) {
    auto& e = ev[i];
    e.name = 10 + static_cast<uint32_t>(i / 7 % 3);
    e.fd = i % 50 < 45 ? 3 : -1;
    e.path = e.fd >= 0 ? 120 : 0;
    e.size = i % 300 < 200 ? 4096 : 65536;
    e.ret = i % 97 == 5 ? 100 : e.size;
    e.err = 0;
    if (i % 61 == 13) e.err = 5;  // errno alone differs from the neighbours
    if (i % 89 == 17) {
      e.ret = -1;
      e.err = 9;
    }
    e.ctx = i % 400 < 200 ? 0 : 3;
    e.mem_align = i % 53 == 7 ? 1 : static_cast<uint32_t>(i / 23 % 14);  // 0 (none) .. 13, one-event changes
    switch (i / 64 % 4) {
      case 0: e.offset = off; break;                                                    // sequential
      case 1: e.offset = static_cast<int64_t>(i % 2) * 1048576 + off; break;            // two strides
      case 2: e.offset = static_cast<int64_t>(rng() % (1ull << 40)); break;             // random
      default: e.offset = i % 5 ? -1 : static_cast<int64_t>(rng() >> 2); break;         // none / huge
    }
    off = e.offset + (e.ret > 0 ? e.ret : 0);
  }
  return ev;
}

// Sets start/end of every event: gap (start minus the previous end) and
// duration come from the functions (gap as a signed value; i = event index).
template <class Gap, class Dur>
void set_times(std::vector<fmtf::EncodeEvent>& ev, uint64_t t0, Gap gap, Dur dur) {
  uint64_t prev_end = t0;
  for (size_t i = 0; i < ev.size(); ++i) {
    ev[i].start = prev_end + static_cast<uint64_t>(gap(i));
    ev[i].end = ev[i].start + dur(i);
    prev_end = ev[i].end > ev[i].start ? ev[i].end : ev[i].start;
  }
}

// The encoding of column `id` in an EVENTS payload's directory.
int encoding_of(const std::vector<uint8_t>& payload, fmtf::Column id) {
  const uint8_t* p = payload.data();
  const uint8_t* end = p + payload.size();
  uint64_t v, ncols;
  p = fmtf::get_varint(p, end, v);   // tid
  p = fmtf::get_varint(p, end, v);   // base_ts
  p = fmtf::get_varint(p, end, ncols);
  for (uint64_t i = 0; i < ncols && p; ++i) {
    const uint8_t col = p[0], enc = p[1];
    p = fmtf::get_varint(p + 2, end, v);
    if (col == static_cast<uint8_t>(id)) return enc;
  }
  return -1;
}

// Offset column encodings used by round trips so far (run-length, varint).
int offset_encodings_seen[2] = {0, 0};

// Writes ev as EVENTS blocks of at most `block` events, the way the runtime
// does (through a ring whose wrap falls inside some blocks), reads the file
// back and compares every field of every event.
void round_trip(const std::vector<fmtf::EncodeEvent>& ev, size_t block, const std::string& what) {
  SCOPED_TRACE(what + ", blocks of " + std::to_string(block));
  FileBuilder fb;
  fmtf::EventsEncoder enc(block);
  fmtf::ByteSink payload;
  // A ring of 2 * block slots (power of two) whose write position starts
  // near its end: most blocks are split by the wrap somewhere.
  size_t cap = 1;
  while (cap < 2 * block) cap *= 2;
  std::vector<fmtf::EncodeEvent> ring(cap);
  const uint64_t mask = cap - 1;
  uint64_t head = cap - block / 2 - 1;
  int zstd_prefix_blocks = 0;
  for (size_t i = 0; i < ev.size(); i += block) {
    const size_t n = std::min(block, ev.size() - i);
    for (size_t j = 0; j < n; ++j) ring[(head + j) & mask] = ev[i + j];
    const size_t prefix = enc.encode(kTid, ring.data(), mask, head, n, payload);
    ASSERT_LE(prefix, payload.size());
    EXPECT_EQ(encoding_of(payload.bytes(), fmtf::Column::kTs), static_cast<int>(fmtf::ColumnEncoding::kPacked));
    EXPECT_EQ(encoding_of(payload.bytes(), fmtf::Column::kDur), static_cast<int>(fmtf::ColumnEncoding::kPacked));
    const int off_enc = encoding_of(payload.bytes(), fmtf::Column::kOffset);
    if (off_enc == static_cast<int>(fmtf::ColumnEncoding::kRunLength)) ++offset_encodings_seen[0];
    else if (off_enc == static_cast<int>(fmtf::ColumnEncoding::kVarint)) ++offset_encodings_seen[1];
    else ADD_FAILURE() << "offset column encoding " << off_enc;
    fb.block(fmtf::BlockType::kEvents, static_cast<uint32_t>(n), payload.bytes(), true, prefix);
    zstd_prefix_blocks += fb.last_codec() == static_cast<uint8_t>(fmtf::Codec::kZstdPrefix);
    head += n;
  }
  TempDir tmp;
  std::vector<Ev> got = read_all(fb.write(tmp));
  ASSERT_EQ(got.size(), ev.size());
  int bad = 0;
  for (size_t i = 0; i < ev.size() && bad < 5; ++i) {
    Ev want = expected(ev[i]);
    if (!(got[i] == want)) {
      ++bad;
      ADD_FAILURE() << "event " << i << ": got " << show(got[i]) << ", want " << show(want);
    }
  }
  if (ev.size() >= 1000 && block >= 128) { EXPECT_GT(zstd_prefix_blocks, 0) << "no block used the zstd-prefix codec"; }
}

const size_t kBlockSizes[] = {1, 2, 127, 128, 129, 255, 256, 1000};

void round_trips(const std::vector<fmtf::EncodeEvent>& ev, const std::string& what) {
  for (size_t b : kBlockSizes) round_trip(ev, b, what);
}

TEST(Packed, AllEqualTimesGiveWidthZero) {
  auto ev = io_fields(1000, 1);
  set_times(ev, 5000, [](size_t) { return int64_t{0}; }, [](size_t) { return uint64_t{50}; });
  round_trips(ev, "gap 0, dur 50");
  set_times(ev, 5000, [](size_t) { return int64_t{7}; }, [](size_t) { return uint64_t{0}; });
  round_trips(ev, "gap 7, dur 0");
}

TEST(Packed, SmallNoisyTimes) {
  auto ev = io_fields(3000, 2);
  std::mt19937_64 rng(2);
  set_times(ev, 1u << 30, [&](size_t) { return static_cast<int64_t>(rng() % 40); },
            [&](size_t) { return 200 + rng() % 100; });
  round_trips(ev, "noisy");
}

TEST(Packed, ValuesNeedingSixtyFourBits) {
  auto ev = io_fields(1000, 3);
  std::mt19937_64 rng(3);
  // Random 64-bit starts and ends: gaps of any sign and size, durations of
  // any size (ends before starts are recorded as 0).
  for (auto& e : ev) {
    e.start = rng();
    e.end = rng();
  }
  round_trips(ev, "random 64-bit");
  // Extremes: zigzag(gap) = 2^64 - 1 and durations of 2^64 - 1.
  set_times(ev, 0, [](size_t i) { return i % 2 ? INT64_MIN : INT64_MAX; },
            [](size_t i) { return i % 3 ? ~uint64_t{0} - static_cast<uint64_t>(i) : uint64_t{0}; });
  round_trips(ev, "extremes");
  for (size_t i = 0; i < ev.size(); ++i) {
    ev[i].start = ~uint64_t{0} - i;
    ev[i].end = ev[i].start + (i % 2 ? 1 : 0);
  }
  round_trips(ev, "near 2^64");
}

TEST(Packed, OffsetColumnRunLengthOrVarint) {
  // Regular offsets store runs; random ones varints (whichever is smaller).
  auto ev = io_fields(1000, 11);
  set_times(ev, 0, [](size_t) { return int64_t{1}; }, [](size_t) { return uint64_t{2}; });
  offset_encodings_seen[0] = offset_encodings_seen[1] = 0;
  round_trip(ev, 64, "64-event blocks of one offset pattern each");
  EXPECT_GT(offset_encodings_seen[0], 0);
  EXPECT_GT(offset_encodings_seen[1], 0);
}

TEST(Packed, OneHugeOutlierPerFrame) {
  auto ev = io_fields(1000, 4);
  for (uint64_t big : {uint64_t{1} << 20, uint64_t{1} << 40, (uint64_t{1} << 63) + 12345}) {
    for (size_t at : {size_t{0}, size_t{127}, size_t{64}}) {
      std::mt19937_64 rng(at);
      set_times(ev, 100, [&](size_t i) { return static_cast<int64_t>(i % 128 == at ? big : rng() % 16); },
                [&](size_t i) { return i % 128 == (127 - at) ? big : 10 + rng() % 8; });
      round_trips(ev, "outlier " + std::to_string(big) + " at " + std::to_string(at));
    }
  }
  // Exceptions at both ends of every frame, and several in a frame.
  std::mt19937_64 rng(5);
  set_times(ev, 100, [&](size_t i) { return static_cast<int64_t>(i % 128 == 0 || i % 128 == 127 ? 1u << 30 : rng() % 4); },
            [&](size_t i) { return i % 16 == 3 ? uint64_t{1} << 33 : 5 + rng() % 3; });
  round_trips(ev, "exceptions at 0, 127 and every 16");
}

TEST(Packed, NegativeGapsOfNestedEvents) {
  // Regions recorded at their end, after the calls they contain: their
  // start is before the previous event's end (negative gap, zigzag odd).
  auto ev = io_fields(2000, 6);
  std::mt19937_64 rng(6);
  set_times(ev, 1u << 20, [&](size_t i) { return i % 5 == 4 ? -static_cast<int64_t>(3000 + rng() % 500) : static_cast<int64_t>(rng() % 30); },
            [&](size_t i) { return i % 5 == 4 ? 3500 + rng() % 100 : 100 + rng() % 50; });
  round_trips(ev, "nested");
  set_times(ev, 1u << 20, [&](size_t) { return -static_cast<int64_t>(rng() % 1000); },
            [&](size_t) { return rng() % 2000; });
  round_trips(ev, "overlapping");
}

TEST(Packed, EveryBitWidth) {
  // Frame f holds values below 2^(f % 65): every width 0..64, with and
  // without a few values far above the rest.
  auto ev = io_fields(65 * 128 + 77, 7);
  std::mt19937_64 rng(7);
  auto below = [&](size_t i) {
    const unsigned w = static_cast<unsigned>(i / 128 % 65);
    uint64_t v = w == 0 ? 0 : w == 64 ? rng() : rng() % (uint64_t{1} << w);
    if (i % 128 == 99 && w < 40) v += uint64_t{1} << (w + 20);
    return v;
  };
  set_times(ev, 0, [&](size_t i) { return static_cast<int64_t>(below(i)); }, [&](size_t i) { return below(i); });
  for (size_t b : {size_t{128}, size_t{129}, size_t{1000}, size_t{65 * 128 + 77}}) round_trip(ev, b, "widths");
}

// ---- Malformed payloads -----------------------------------------------------------
// An EVENTS payload with the ts column only, encoded as given.
std::vector<uint8_t> ts_only_payload(const std::vector<uint8_t>& column, fmtf::ColumnEncoding enc) {
  fmtf::ByteSink p;
  p.put_varint(kTid);
  p.put_varint(1000);  // base_ts
  p.put_varint(1);
  p.put_u8(static_cast<uint8_t>(fmtf::Column::kTs));
  p.put_u8(static_cast<uint8_t>(enc));
  p.put_varint(column.size());
  p.put_bytes(column.data(), column.size());
  return p.bytes();
}

// Reads the file and returns the FormatError's message ("" if none).
std::string error_of(const std::string& path, long want_block) {
  try {
    read_all(path);
  } catch (const FormatError& e) {
    EXPECT_EQ(e.file(), path);
    EXPECT_EQ(e.block(), want_block) << e.what();
    std::string what = e.what();
    EXPECT_NE(what.find(path), std::string::npos) << what;
    EXPECT_NE(what.find("block " + std::to_string(want_block)), std::string::npos) << what;
    return what;
  }
  return "";
}

std::string packed_column_error(const std::vector<uint8_t>& column, uint32_t count) {
  FileBuilder fb;
  fb.block(fmtf::BlockType::kEvents, count, ts_only_payload(column, fmtf::ColumnEncoding::kPacked), false);
  TempDir tmp;
  return error_of(fb.write(tmp), 3);  // block 1 is the PROCESS block, 2 the DICT
}

// Column 11 (1.2) holds 1 + trailing zero bits capped at 12: a larger value
// is a corrupt block, named with the file and block like every other.
TEST(Packed, MemAlignAboveThirteenIsCorruption) {
  for (uint32_t v : {13u, 14u, 200u}) {
    auto ev = io_fields(300, 11);
    set_times(ev, 5000, [](size_t) { return int64_t{3}; }, [](size_t) { return uint64_t{40}; });
    ev[200].mem_align = v;
    fmtf::EventsEncoder enc(ev.size());
    fmtf::ByteSink payload;
    const size_t prefix = enc.encode(kTid, ev.data(), ev.size(), payload);
    FileBuilder fb;
    fb.block(fmtf::BlockType::kEvents, static_cast<uint32_t>(ev.size()), payload.bytes(), true, prefix);
    TempDir tmp;
    const std::string msg = error_of(fb.write(tmp), 3);  // block 1 is the PROCESS block, 2 the DICT
    if (v == 13) {
      EXPECT_EQ(msg, "");
    } else {
      EXPECT_NE(msg.find("column 11 (memory alignment) holds " + std::to_string(v)), std::string::npos) << msg;
    }
  }
}

// A dictionary whose ids skip some (here strings 201-204, then 203 defined
// later): an event that uses a skipped id is corruption, named at its block,
// even though a larger id is defined; ids defined out of order read fine.
TEST(Packed, IdsADictSkipsAreUndefinedUntilDefined) {
  auto events_with_path = [](uint32_t path) {
    auto ev = io_fields(100, 5);
    set_times(ev, 5000, [](size_t) { return int64_t{3}; }, [](size_t) { return uint64_t{40}; });
    for (auto& e : ev) e.path = e.fd >= 0 ? path : 0;
    fmtf::EventsEncoder enc(ev.size());
    fmtf::ByteSink payload;
    enc.encode(kTid, ev.data(), ev.size(), payload);
    return payload.bytes();
  };
  auto dict_strings = [](std::initializer_list<uint32_t> ids) {
    fmtf::ByteSink d;
    for (uint32_t id : ids) fmtf::dict_string(d, id, "late" + std::to_string(id));
    return d.bytes();
  };
  for (uint32_t used : {205u, 203u, 202u}) {
    SCOPED_TRACE("events use string " + std::to_string(used));
    FileBuilder fb;
    fb.block(fmtf::BlockType::kDict, 1, dict_strings({205}), false);      // block 3
    fb.block(fmtf::BlockType::kDict, 1, dict_strings({203}), false);      // block 4
    fb.block(fmtf::BlockType::kEvents, 100, events_with_path(used), false);  // block 5
    TempDir tmp;
    const std::string path = fb.write(tmp);
    const std::string msg = error_of(path, 5);
    if (used == 202) {
      EXPECT_NE(msg.find("EVENTS block: event 0 uses string (path) id 202, not defined by an earlier DICT block"),
                std::string::npos)
          << msg;
    } else {
      EXPECT_EQ(msg, "");
      FileReader r(path);
      EventBatch b;
      ASSERT_TRUE(r.next(b));
      EXPECT_EQ(r.dict().str(used), "late" + std::to_string(used));
      EXPECT_TRUE(r.dict().has_string(used));
      EXPECT_FALSE(r.dict().has_string(201));
      EXPECT_FALSE(r.dict().has_string(204));
      EXPECT_TRUE(r.dict().has_string(200));
    }
  }
}

// Names and contexts defined out of order (ids 33-39 skipped, then 35
// defined): the reader and `strata analyze` see each once it is defined;
// an id still skipped at its use is corruption, named at its block.
TEST(Packed, NamesAndContextsDefinedOutOfOrderReachTheAnalysis) {
  auto events = [](uint32_t name, uint32_t ctx) {
    auto ev = io_fields(100, 6);
    set_times(ev, 5000, [](size_t) { return int64_t{3}; }, [](size_t) { return uint64_t{40}; });
    for (auto& e : ev) {
      e.name = name;
      e.ctx = ctx;
    }
    fmtf::EventsEncoder enc(ev.size());
    fmtf::ByteSink payload;
    enc.encode(kTid, ev.data(), ev.size(), payload);
    return payload.bytes();
  };
  auto dict = [](auto&& fill) {
    fmtf::ByteSink d;
    uint32_t n = fill(d);
    return std::make_pair(n, d.bytes());
  };
  const fmtf::TagEntry epoch7[] = {{201, true, 7}};
  const fmtf::TagEntry epoch3[] = {{201, true, 3}};
  auto [n1, d1] = dict([&](fmtf::ByteSink& d) {
    fmtf::dict_string(d, 201, "epoch");
    fmtf::dict_string(d, 202, "late_call");
    fmtf::dict_string(d, 203, "early_call");
    fmtf::dict_string(d, 204, "app");
    fmtf::dict_name(d, 40, 202, 204, 0, fmtf::EventKind::kComplete);
    fmtf::dict_context(d, 12, epoch7, 1);
    return 6u;
  });
  auto [n2, d2] = dict([&](fmtf::ByteSink& d) {
    fmtf::dict_name(d, 35, 203, 204, 0, fmtf::EventKind::kComplete);
    fmtf::dict_context(d, 10, epoch3, 1);
    return 2u;
  });
  FileBuilder fb;
  fb.block(fmtf::BlockType::kDict, n1, d1, false);          // block 3
  fb.block(fmtf::BlockType::kEvents, 100, events(40, 12), false);  // block 4
  fb.block(fmtf::BlockType::kDict, n2, d2, false);          // block 5
  fb.block(fmtf::BlockType::kEvents, 100, events(35, 10), false);  // block 6
  TempDir tmp;
  const std::string good = fb.write(tmp, "good.strata");
  EXPECT_EQ(error_of(good, 0), "");
  RunResult an = run({kStrata, "analyze", "--json", good}, 60);
  ASSERT_EQ(an.code, 0) << an.err;
  for (const char* name : {"late_call", "early_call"}) {
    const size_t at = an.out.find(std::string("\"name\": \"") + name + "\"");
    ASSERT_NE(at, std::string::npos) << name << " missing:\n" << an.out.substr(0, 3000);
    EXPECT_NE(an.out.substr(at, 200).find("\"count\": 100"), std::string::npos) << an.out.substr(at, 200);
  }
  const size_t epochs = an.out.find("\"by_epoch\"");
  ASSERT_NE(epochs, std::string::npos);
  for (const char* epoch : {"\"3\"", "\"7\""})
    EXPECT_NE(an.out.substr(epochs, 600).find(epoch), std::string::npos) << epoch << ": " << an.out.substr(epochs, 600);

  FileBuilder early;  // name 35 used before block 5 defines it
  early.block(fmtf::BlockType::kDict, n1, d1, false);
  early.block(fmtf::BlockType::kEvents, 100, events(35, 12), false);
  const std::string bad = early.write(tmp, "bad.strata");
  EXPECT_NE(error_of(bad, 4).find("uses name id 35, not defined by an earlier DICT block"), std::string::npos);
}

TEST(Packed, HandWrittenColumnReads) {
  // 3 values: w 2, base 5, 1 exception; low bits 1, 3, 0 -> byte 0b00'11'01;
  // exception index 2, high 4: value 5 + (0 | 4 << 2) = 21.
  FileBuilder fb;
  fb.block(fmtf::BlockType::kEvents, 3, ts_only_payload({2, 5, 1, 0x0D, 2, 4}, fmtf::ColumnEncoding::kPacked), false);
  TempDir tmp;
  std::vector<Ev> got = read_all(fb.write(tmp));
  ASSERT_EQ(got.size(), 3u);
  // gaps (zigzag) 6, 8, 21 -> +3, +4, -11; durations 0 (no dur column).
  EXPECT_EQ(got[0].ts, 1003u);
  EXPECT_EQ(got[1].ts, 1007u);
  EXPECT_EQ(got[2].ts, 996u);
  EXPECT_EQ(got[2].dur, 0u);
  EXPECT_EQ(got[0].fd, -1);
  EXPECT_EQ(got[0].offset, -1);
}

TEST(Packed, MalformedColumnsNameFileBlockAndColumn) {
  struct Case {
    const char* what;
    std::vector<uint8_t> column;
    uint32_t count;
    const char* message;
  };
  std::vector<uint8_t> truncated = {8, 0, 0};
  truncated.resize(3 + 100, 1);  // 128 values of 8 bits need 128 bytes
  std::vector<uint8_t> two_frames = {1, 0, 0};
  two_frames.resize(3 + 16, 0);
  two_frames.insert(two_frames.end(), {65, 0, 0});  // the second frame is bad
  const Case cases[] = {
      {"w = 65", {65, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 3, "bit width"},
      {"w = 200", {200, 0, 0}, 1, "bit width"},
      {"exception index = k", {1, 0, 1, 0, 3, 1}, 3, "exception index"},
      {"exception index 255", {1, 0, 1, 0, 255, 1}, 3, "exception index"},
      {"exception indices not increasing", {1, 0, 2, 0, 1, 1, 1, 1}, 3, "exception index"},
      {"exception indices decreasing", {1, 0, 2, 0, 2, 1, 0, 1}, 3, "exception index"},
      {"nexc > k", {1, 0, 4, 0, 0, 1, 1, 1, 2, 1, 2, 1}, 3, "more exceptions than values"},
      {"truncated packed bytes", truncated, 128, "past the column"},
      // Caught by the reader's bound (a column's bytes must be able to hold
      // the block's event count) before the frame is decoded.
      {"truncated frame header", {3}, 3, "too few to hold them"},
      {"truncated base varint", {3, 0x80}, 3, "too few to hold them"},
      {"truncated exception", {1, 0, 1, 0, 2}, 3, "truncated exception"},
      {"truncated exception varint", {1, 0, 1, 0, 2, 0x80}, 3, "truncated exception"},
      {"exceptions with w = 64", {64, 0, 1, 1, 2, 3, 4, 5, 6, 7, 8, 0, 1}, 1, "64-bit frame"},
      {"exception over 64 bits", {60, 0, 1, 1, 2, 3, 4, 5, 6, 7, 8, 0, 16}, 1, "over 64 bits"},
      {"bytes after the last frame", {0, 0, 0, 0}, 3, "left after"},
      {"too few frames", {0, 0, 0}, 200, "too few to hold them"},
      {"second frame bad", two_frames, 129, "frame 1"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    std::string msg = packed_column_error(c.column, c.count);
    ASSERT_FALSE(msg.empty()) << "no error";
    EXPECT_NE(msg.find("column 2"), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.message), std::string::npos) << msg;
  }
  // The same bytes, well formed, read (the checks above are not spurious).
  EXPECT_EQ(packed_column_error({0, 0, 0}, 3), "");
  EXPECT_EQ(packed_column_error({64, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8}, 1), "");
  EXPECT_EQ(packed_column_error({60, 0, 1, 1, 2, 3, 4, 5, 6, 7, 8, 0, 15}, 1), "");
}

// Random damage to a real payload, re-framed with valid checksums: the
// decoder's own checks give a FormatError naming the block, or the block
// reads; never a crash, a hang or an out-of-bounds read.
TEST(Packed, DamagedPayloadsWithValidChecksumsNeverCrash) {
  auto ev = io_fields(300, 12);
  std::mt19937_64 rng(12);
  set_times(ev, 1000, [&](size_t i) { return static_cast<int64_t>(i % 50 == 7 ? 1u << 31 : rng() % 64); },
            [&](size_t) { return rng() % 1000; });
  fmtf::EventsEncoder enc(ev.size());
  fmtf::ByteSink payload;
  const size_t prefix = enc.encode(kTid, ev.data(), ev.size(), payload);
  const std::vector<uint8_t> good = payload.bytes();
  TempDir tmp;
  int errors = 0;
  for (int round = 0; round < 2000; ++round) {
    std::vector<uint8_t> bad = good;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) {
      // Mostly in the packed columns (after the prefix).
      const size_t at = rng() % 4 ? prefix + rng() % (bad.size() - prefix) : rng() % bad.size();
      bad[at] = static_cast<uint8_t>(rng() % 3 ? bad[at] ^ (1u << (rng() % 8)) : rng());
    }
    if (rng() % 8 == 0) bad.resize(bad.size() - 1 - rng() % 16);
    FileBuilder fb;
    fb.block(fmtf::BlockType::kEvents, static_cast<uint32_t>(ev.size()), bad, rng() % 2 == 0, prefix);
    const std::string path = fb.write(tmp, std::to_string(round % 4) + "-damaged.strata");
    try {
      read_all(path, false);
    } catch (const FormatError& e) {
      ++errors;
      EXPECT_EQ(e.file(), path);
      EXPECT_EQ(e.block(), 3) << e.what();
    }
  }
  EXPECT_GT(errors, 100);
}

TEST(Packed, UnknownColumnEncodingIsAnError) {
  FileBuilder fb;
  fb.block(fmtf::BlockType::kEvents, 1, ts_only_payload({0}, static_cast<fmtf::ColumnEncoding>(3)), false);
  TempDir tmp;
  std::string msg = error_of(fb.write(tmp), 3);
  EXPECT_NE(msg.find("unknown column encoding 3"), std::string::npos) << msg;
}

// A real EVENTS block framed with kZstdPrefix, and its parts.
struct PrefixBlock {
  std::vector<uint8_t> stored;
  fmtf::BlockHeader header;
  uint32_t count;
};

PrefixBlock prefix_block() {
  auto ev = io_fields(1000, 8);
  std::mt19937_64 rng(8);
  set_times(ev, 1000, [&](size_t) { return static_cast<int64_t>(rng() % 64); }, [&](size_t) { return rng() % 1000; });
  fmtf::EventsEncoder enc(ev.size());
  fmtf::ByteSink payload;
  size_t prefix = enc.encode(kTid, ev.data(), ev.size(), payload);
  FileBuilder fb;
  fb.block(fmtf::BlockType::kEvents, static_cast<uint32_t>(ev.size()), payload.bytes(), true, prefix);
  EXPECT_EQ(fb.last_codec(), static_cast<uint8_t>(fmtf::Codec::kZstdPrefix));
  return {fb.last_stored(), fb.last_header(), static_cast<uint32_t>(ev.size())};
}

std::string prefix_error(const std::vector<uint8_t>& stored, uint32_t raw_size, uint32_t count) {
  FileBuilder fb;
  fb.raw_block(fmtf::BlockType::kEvents, fmtf::Codec::kZstdPrefix, count, stored, raw_size);
  TempDir tmp;
  return error_of(fb.write(tmp), 3);
}

TEST(Packed, MalformedZstdPrefixPayloads) {
  const PrefixBlock b = prefix_block();
  const uint32_t raw = b.header.raw_size;
  ASSERT_GT(raw, b.stored.size());
  // As framed: reads.
  EXPECT_EQ(prefix_error(b.stored, raw, b.count), "");
  // raw_size one more or one less than frame content + tail.
  std::string m = prefix_error(b.stored, raw + 1, b.count);
  EXPECT_NE(m.find("does not decompress"), std::string::npos) << m;
  m = prefix_error(b.stored, raw - 1, b.count);
  EXPECT_NE(m.find("does not decompress"), std::string::npos) << m;
  // raw_size smaller than the raw tail alone.
  m = prefix_error(b.stored, 3, b.count);
  EXPECT_NE(m.find("raw tail"), std::string::npos) << m;
  // The zstd frame cut short, or no zstd frame at all.
  m = prefix_error(std::vector<uint8_t>(b.stored.begin(), b.stored.begin() + 6), raw, b.count);
  EXPECT_NE(m.find("complete zstd frame"), std::string::npos) << m;
  m = prefix_error(std::vector<uint8_t>(100, 0x42), raw, b.count);
  EXPECT_NE(m.find("complete zstd frame"), std::string::npos) << m;
  m = prefix_error({}, 0, 0);
  EXPECT_NE(m.find("complete zstd frame"), std::string::npos) << m;
  // The tail cut short: the columns no longer hold their values.
  std::vector<uint8_t> cut(b.stored.begin(), b.stored.end() - 10);
  m = prefix_error(cut, raw - 10, b.count);
  EXPECT_NE(m.find("EVENTS block"), std::string::npos) << m;
}

// ---- Format 1.0 -------------------------------------------------------------------
// The EVENTS payload of docs/trace-format.md's 1.0 worked example: three preads,
// every column in id order, ts and dur as varints.
const std::vector<uint8_t> kV10Example = {
    0xD2, 0x09, 0xC0, 0x84, 0x3D, 0x0A,                                   // tid, base_ts, 10 columns
    0x01, 0x01, 0x02, 0x02, 0x00, 0x05, 0x03, 0x00, 0x06, 0x04, 0x01, 0x02, 0x05, 0x01, 0x02,  // directory
    0x06, 0x00, 0x05, 0x07, 0x01, 0x03, 0x08, 0x01, 0x05, 0x09, 0x01, 0x02, 0x0A, 0x01, 0x02,
    0x0A, 0x03,                    // name
    0x00, 0xC8, 0x01, 0xC8, 0x01,  // ts
    0xF4, 0x03, 0x90, 0x03, 0xC2, 0x03,  // dur
    0x06, 0x03,                          // fd
    0x78, 0x03,                          // path
    0x00, 0x00, 0x82, 0x80, 0x07,        // offset
    0x80, 0x40, 0x03,                    // size
    0x00, 0x02, 0xB7, 0x3E, 0x01,        // ret
    0x00, 0x03, 0x00, 0x03};             // errno, ctx

// A 1.0 writer's EVENTS payload: all ten columns in id order, ts, dur and
// offset as varints, the others run-length.
constexpr int kV10Columns = 10;  // 1.2 added the memory alignment column
std::vector<uint8_t> v10_payload(const std::vector<fmtf::EncodeEvent>& ev) {
  std::vector<uint8_t> cols[kV10Columns];
  auto var = [](std::vector<uint8_t>& c, uint64_t v) {
    uint8_t tmp[10];
    c.insert(c.end(), tmp, fmtf::put_varint(tmp, v));
  };
  auto runs = [&](int c, auto value) {
    for (size_t i = 0; i < ev.size();) {
      size_t j = i;
      while (j < ev.size() && value(ev[j]) == value(ev[i])) ++j;
      var(cols[c], value(ev[i]));
      var(cols[c], j - i);
      i = j;
    }
  };
  runs(0, [](const fmtf::EncodeEvent& e) -> uint64_t { return e.name; });
  runs(3, [](const fmtf::EncodeEvent& e) { return fmtf::zigzag(e.fd); });
  runs(4, [](const fmtf::EncodeEvent& e) -> uint64_t { return e.path; });
  runs(6, [](const fmtf::EncodeEvent& e) { return fmtf::zigzag(e.size); });
  runs(7, [](const fmtf::EncodeEvent& e) { return fmtf::zigzag(e.ret - (e.size > 0 ? e.size : 0)); });
  runs(8, [](const fmtf::EncodeEvent& e) -> uint64_t { return static_cast<uint32_t>(e.err); });
  runs(9, [](const fmtf::EncodeEvent& e) -> uint64_t { return e.ctx; });
  uint64_t prev_end = ev.empty() ? 0 : ev[0].start;
  int64_t prev_off = 0, d1 = 0, d2 = 0;
  for (auto& e : ev) {
    const uint64_t end = e.end > e.start ? e.end : e.start;
    var(cols[1], fmtf::zigzag(static_cast<int64_t>(e.start - prev_end)));
    var(cols[2], end - e.start);
    prev_end = end;
    const int64_t delta = e.offset - prev_off;
    if (delta == d1) {
      var(cols[5], 0);
    } else if (delta == d2) {
      var(cols[5], 1);
      d2 = d1;
      d1 = delta;
    } else {
      var(cols[5], fmtf::zigzag(delta) + 2);
      d2 = d1;
      d1 = delta;
    }
    prev_off = e.offset + (e.offset >= 0 && e.ret > 0 ? e.ret : 0);
  }
  std::vector<uint8_t> p;
  var(p, kTid);
  var(p, ev.empty() ? 0 : ev[0].start);
  var(p, kV10Columns);
  for (int c = 0; c < kV10Columns; ++c) {
    p.push_back(static_cast<uint8_t>(c + 1));
    p.push_back(c == 1 || c == 2 || c == 5 ? 0 : 1);
    var(p, cols[c].size());
  }
  for (auto& c : cols) p.insert(p.end(), c.begin(), c.end());
  return p;
}

TEST(Packed, Version10BlocksStillRead) {
  FileBuilder fb(0);  // a 1.0 file header
  // The spec's 1.0 example, stored raw (it reads with tid 1234).
  fb.block(fmtf::BlockType::kEvents, 3, kV10Example, false);
  // 2000 events the way a 1.0 writer stored them: varint time columns, zstd codec.
  auto ev = io_fields(2000, 9);
  for (auto& e : ev) e.mem_align = 0;  // no such column before 1.2: read as 0
  std::mt19937_64 rng(9);
  set_times(ev, 1u << 30, [&](size_t i) { return i % 9 == 8 ? -int64_t{2000} : static_cast<int64_t>(rng() % 100); },
            [&](size_t) { return rng() % 5000; });
  fb.block(fmtf::BlockType::kEvents, 2000, v10_payload(ev), true);
  EXPECT_EQ(fb.last_codec(), static_cast<uint8_t>(fmtf::Codec::kZstd));
  TempDir tmp;
  std::string path = fb.write(tmp);
  FileReader r(path);
  EventBatch b;
  ASSERT_TRUE(r.next(b));
  ASSERT_EQ(b.size_events(), 3u);
  EXPECT_EQ(b.tid, 1234u);
  const Ev want3[] = {{1000000, 500, 0, 4096, 4096, 10, 120, 0, 3, 0, 0},
                      {1000600, 400, 4096, 4096, 4096, 10, 120, 0, 3, 0, 0},
                      {1001100, 450, 65536, 4096, 100, 10, 120, 0, 3, 0, 0}};
  for (size_t i = 0; i < 3; ++i) {
    Ev got{b.ts[i], b.dur[i], b.offset[i], b.size[i], b.ret[i], b.name[i], b.path[i], b.ctx[i], b.fd[i], b.err[i], b.mem_align[i]};
    EXPECT_EQ(got, want3[i]) << i << ": " << show(got);
  }
  ASSERT_TRUE(r.next(b));
  ASSERT_EQ(b.size_events(), ev.size());
  for (size_t i = 0; i < ev.size(); ++i) {
    Ev got{b.ts[i], b.dur[i], b.offset[i], b.size[i], b.ret[i], b.name[i], b.path[i], b.ctx[i], b.fd[i], b.err[i], b.mem_align[i]};
    ASSERT_EQ(got, expected(ev[i])) << i << ": " << show(got);
  }
  EXPECT_FALSE(r.next(b));
}

// The framer keeps 1.0's codecs for whole-payload compression and falls back
// to storing raw when zstd does not help.
TEST(Packed, FramerCodecChoice) {
  fmtf::BlockFramer framer(1);
  auto codec = [&] { return framer.data()[offsetof(fmtf::BlockHeader, codec)]; };
  std::vector<uint8_t> zeros(4096, 0), noise(4096);
  std::mt19937_64 rng(10);
  for (auto& x : noise) x = static_cast<uint8_t>(rng());
  ASSERT_TRUE(framer.frame(fmtf::BlockType::kEvents, 1, zeros, true));
  EXPECT_EQ(codec(), static_cast<uint8_t>(fmtf::Codec::kZstd));
  ASSERT_TRUE(framer.frame(fmtf::BlockType::kEvents, 1, zeros, true, 4096));
  EXPECT_EQ(codec(), static_cast<uint8_t>(fmtf::Codec::kZstd));
  ASSERT_TRUE(framer.frame(fmtf::BlockType::kEvents, 1, zeros, true, 1000));
  EXPECT_EQ(codec(), static_cast<uint8_t>(fmtf::Codec::kZstdPrefix));
  EXPECT_LT(framer.size(), sizeof(fmtf::BlockHeader) + 3096 + 100);
  ASSERT_TRUE(framer.frame(fmtf::BlockType::kEvents, 1, noise, true, 1000));
  EXPECT_EQ(codec(), static_cast<uint8_t>(fmtf::Codec::kNone));
  EXPECT_EQ(framer.size(), sizeof(fmtf::BlockHeader) + 4096);
  ASSERT_TRUE(framer.frame(fmtf::BlockType::kEvents, 1, zeros, true, 0));
  EXPECT_EQ(codec(), static_cast<uint8_t>(fmtf::Codec::kNone));
  ASSERT_TRUE(framer.frame(fmtf::BlockType::kEvents, 1, zeros, false, 1000));
  EXPECT_EQ(codec(), static_cast<uint8_t>(fmtf::Codec::kNone));
}

}  // namespace
