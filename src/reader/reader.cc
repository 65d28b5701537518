#include "strata/reader.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <type_traits>

#define XXH_INLINE_ALL
#include <xxhash.h>
#include <zstd.h>

#include "format/format.h"
#include "format/varint.h"
#include "reader/columns.h"

namespace strata::reader {

namespace fmt = strata::format;
using columns::decode_any;

FormatError::FormatError(const std::string& file, long block, uint64_t offset, const std::string& what)
    : std::runtime_error(file + (block >= 0 ? ": block " + std::to_string(block) + " at offset " + std::to_string(offset)
                                            : std::string()) +
                         ": " + what),
      file_(file),
      block_(block),
      offset_(offset) {}

namespace {
// ProcessInfo::ticks_to_ns as a small value that decode_events keeps in
// registers: a public member of a -fPIC library is not inlined (it could be
// interposed), and a call per timestamp was a fifth of the decoding work.
struct TickClock {
  uint64_t start_ticks, tick_q32, start_mono_ns;
  explicit TickClock(const ProcessInfo& p)
      : start_ticks(p.start_ticks), tick_q32(p.tick_q32), start_mono_ns(p.start_mono_ns) {}
  uint64_t to_ns(uint64_t ticks) const { return fmt::ticks_to_ns(ticks, start_ticks, tick_q32, start_mono_ns); }
};
}  // namespace

uint64_t ProcessInfo::ticks_to_ns(uint64_t ticks) const { return TickClock(*this).to_ns(ticks); }

std::string ProcessInfo::cmdline() const {
  std::string s;
  for (size_t i = 0; i < argv.size(); ++i) {
    if (i) s += ' ';
    s += argv[i];
  }
  return s;
}

// ---- Dictionary --------------------------------------------------------------
namespace {
const std::string kEmpty;
const NameInfo kUnknownName{"?", "?", 0, 0};
const std::vector<Tag> kNoTags;

template <class T>
void put_at(std::vector<T>& v, uint32_t id, T value) {
  if (v.size() <= id) v.resize(id + 1);
  v[id] = std::move(value);
}
}  // namespace

const std::string& Dictionary::str(uint32_t sid) const { return sid < strings_.size() ? strings_[sid] : kEmpty; }
const NameInfo& Dictionary::name(uint32_t nid) const { return nid < names_.size() ? names_[nid] : kUnknownName; }
const std::vector<Tag>& Dictionary::context(uint32_t cid) const {
  return cid < contexts_.size() ? contexts_[cid] : kNoTags;
}
const std::string& Dictionary::thread_name(uint32_t tid) const {
  for (auto& [t, sid] : threads_)
    if (t == tid) return str(sid);
  return kEmpty;
}
void Dictionary::set_string(uint32_t id, std::string s) { put_at(strings_, id, std::move(s)); }
void Dictionary::set_name(uint32_t id, NameInfo n) { put_at(names_, id, std::move(n)); }
void Dictionary::set_context(uint32_t id, std::vector<Tag> tags) { put_at(contexts_, id, std::move(tags)); }
void Dictionary::set_thread(uint32_t tid, uint32_t name_sid) {
  for (auto& t : threads_)
    if (t.first == tid) {
      t.second = name_sid;
      return;
    }
  threads_.emplace_back(tid, name_sid);
}

void EventBatch::resize(size_t n) {
  name.resize(n);
  path.resize(n);
  ctx.resize(n);
  fd.resize(n);
  err.resize(n);
  ts.resize(n);
  dur.resize(n);
  offset.resize(n);
  size.resize(n);
  ret.resize(n);
  mem_align.resize(n);
}

// ---- Payload cursor ----------------------------------------------------------
namespace {
struct Cursor {
  const uint8_t* p;
  const uint8_t* end;
  const FileReader* owner;
  std::string* error;

  bool varint(uint64_t& v) {
    const uint8_t* n = fmt::get_varint(p, end, v);
    if (!n) return false;
    p = n;
    return true;
  }
  uint64_t u() {
    uint64_t v = 0;
    if (!varint(v)) throw std::string("truncated varint");
    return v;
  }
  int64_t z() { return fmt::unzigzag(u()); }
  uint8_t byte() {
    if (p >= end) throw std::string("truncated payload");
    return *p++;
  }
  std::string str() {
    uint64_t n = u();
    if (n > static_cast<uint64_t>(end - p)) throw std::string("string runs past the end of its block");
    std::string s(reinterpret_cast<const char*>(p), n);
    p += n;
    return s;
  }
};
}  // namespace

// ---- FileReader --------------------------------------------------------------
namespace {
// "<host>-<pid>-<start>.strata" -> pid (0 if the name has another shape).
int64_t pid_from_name(const std::string& path) {
  std::string name = std::filesystem::path(path).filename().string();
  size_t last = name.rfind('-');
  if (last == std::string::npos || last == 0) return 0;
  size_t prev = name.rfind('-', last - 1);
  if (prev == std::string::npos) return 0;
  return std::strtoll(name.c_str() + prev + 1, nullptr, 10);
}
}  // namespace

FileReader::FileReader(const std::string& path) : path_(path) {
  try {
    open_and_read_process();
  } catch (...) {
    if (fp_) std::fclose(fp_);
    ZSTD_freeDCtx(static_cast<ZSTD_DCtx*>(dctx_));
    throw;
  }
}

void FileReader::open_and_read_process() {
  const std::string& path = path_;
  fp_ = std::fopen(path.c_str(), "rb");
  if (!fp_) throw FormatError(path, -1, 0, std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (fstat(fileno(fp_), &st) == 0) file_size_ = static_cast<uint64_t>(st.st_size);
  if (S_ISDIR(st.st_mode)) {
    throw FormatError(path, -1, 0, "is a directory, not a trace file");
  }
  fmt::FileHeader h{};
  if (file_size_ == 0) {
    throw FormatError(path, -1, 0, "empty file, not a strata trace");
  }
  if (file_size_ < sizeof(h)) {
    bool ours = file_size_ >= 8 && std::fread(&h, 1, 8, fp_) == 8 && std::memcmp(h.magic, fmt::kFileMagic, 8) == 0;
    throw FormatError(path, -1, 0, ours ? "file header cut short (" + std::to_string(file_size_) + " of 32 bytes)"
                                        : "not a strata trace file (too short)");
  }
  if (std::fread(&h, 1, sizeof(h), fp_) != sizeof(h) || std::memcmp(h.magic, fmt::kFileMagic, 8) != 0) {
    throw FormatError(path, -1, 0, "not a strata trace file (bad magic)");
  }
  if (h.version_major != fmt::kVersionMajor) {
    throw FormatError(path, -1, 0, "unsupported format version " + std::to_string(h.version_major));
  }
  if (h.header_size < sizeof(h) || h.header_size > file_size_) {
    throw FormatError(path, -1, 0, "bad header size");
  }
  pos_ = h.header_size;
  std::fseek(fp_, static_cast<long>(pos_), SEEK_SET);
  mem_budget_ = kDictMemoryBase + kDictMemoryPerByte * file_size_;
  dctx_ = ZSTD_createDCtx();
  std::vector<uint8_t> payload;
  uint8_t type = 0;
  uint32_t count = 0;
  if (!read_block(payload, type, count)) {
    // The process died (or the disk filled) before its PROCESS block was
    // complete: an empty process, not a corrupt trace. Its pid is in the name.
    process_.pid = pid_from_name(path);
    process_.mode = "trace";
    return;
  }
  if (type != static_cast<uint8_t>(fmt::BlockType::kProcess)) fail("first block is not a PROCESS block");
  decode_process(payload);
  has_process_ = true;
}

FileReader::~FileReader() {
  if (fp_) std::fclose(fp_);
  ZSTD_freeDCtx(static_cast<ZSTD_DCtx*>(dctx_));
}

void FileReader::fail(const std::string& what) const { throw FormatError(path_, block_index_, block_offset_, what); }

// Dictionary entries, PROCESS strings and PROFILE records are kept for the
// whole file; what they may take is bounded by the file's size, so that a few
// bytes naming a huge id, count or a long string many times fail cleanly.
void FileReader::charge(uint64_t bytes) {
  mem_used_ += bytes;
  if (mem_used_ > mem_budget_) {
    fail("dictionary needs more than " + std::to_string(mem_budget_ >> 20) +
         " MiB of memory, more than a file of " + std::to_string(file_size_) +
         " bytes can describe (corrupt file; limit: 256 MiB + 64 x the file size)");
  }
}

// Reads the next block. Returns false at a clean end of file, or at a final
// block cut short (a crashed writer): those bytes were never complete.
bool FileReader::read_block(std::vector<uint8_t>& payload, uint8_t& type, uint32_t& count) {
  if (pos_ >= file_size_) return false;
  block_offset_ = pos_;
  ++block_index_;
  fmt::BlockHeader h{};
  if (file_size_ - pos_ < sizeof(h)) {
    truncated_tail_ = true;
    return false;
  }
  if (std::fread(&h, 1, sizeof(h), fp_) != sizeof(h)) fail("read error");
  if (h.magic != fmt::kBlockMagic) fail("bad block magic (corrupt file)");
  if (fmt::header_hash_of(h) != h.header_hash) fail("block header checksum mismatch (corrupt file)");
  if (h.stored_size > fmt::kMaxBlockPayload || h.raw_size > fmt::kMaxBlockPayload) fail("block size out of range");
  if (pos_ + sizeof(h) + h.stored_size > file_size_) {
    truncated_tail_ = true;  // the writer died while appending this block
    return false;
  }
  stored_.resize(h.stored_size);
  if (h.stored_size && std::fread(stored_.data(), 1, h.stored_size, fp_) != h.stored_size) fail("read error");
  pos_ += sizeof(h) + h.stored_size;
  if (XXH3_64bits(stored_.data(), stored_.size()) != h.payload_hash) fail("payload checksum mismatch (corrupt block)");
  type = h.type;
  count = h.count;
  if (h.codec == static_cast<uint8_t>(fmt::Codec::kNone)) {
    if (h.raw_size != h.stored_size) fail("uncompressed block with raw size != stored size");
    payload.swap(stored_);
  } else if (h.codec == static_cast<uint8_t>(fmt::Codec::kZstd)) {
    payload.resize(h.raw_size);
    size_t n = ZSTD_decompressDCtx(static_cast<ZSTD_DCtx*>(dctx_), payload.data(), payload.size(), stored_.data(),
                                   stored_.size());
    if (ZSTD_isError(n) || n != h.raw_size) fail("zstd payload does not decompress to its raw size");
  } else if (h.codec == static_cast<uint8_t>(fmt::Codec::kZstdPrefix)) {
    // One zstd frame, then raw bytes: payload = decompressed frame + those bytes.
    const size_t frame = ZSTD_findFrameCompressedSize(stored_.data(), stored_.size());
    if (ZSTD_isError(frame) || frame > stored_.size()) fail("zstd-prefix payload does not start with a complete zstd frame");
    const size_t tail = stored_.size() - frame;
    if (tail > h.raw_size) {
      fail("zstd-prefix payload: raw tail of " + std::to_string(tail) + " bytes exceeds the raw size " +
           std::to_string(h.raw_size));
    }
    payload.resize(h.raw_size);
    const size_t want = h.raw_size - tail;
    size_t n = ZSTD_decompressDCtx(static_cast<ZSTD_DCtx*>(dctx_), payload.data(), want, stored_.data(), frame);
    if (ZSTD_isError(n) || n != want) {
      fail("zstd-prefix payload: the zstd frame does not decompress to " + std::to_string(want) +
           " bytes (raw size minus the raw tail)");
    }
    if (tail) std::memcpy(payload.data() + want, stored_.data() + frame, tail);
  } else {
    fail("unknown codec " + std::to_string(h.codec));
  }
  return true;
}

void FileReader::decode_process(const std::vector<uint8_t>& p) {
  Cursor c{p.data(), p.data() + p.size(), this, nullptr};
  try {
    process_.pid = c.z();
    process_.ppid = c.z();
    process_.rank = c.z();
    process_.start_wall_ns = c.u();
    process_.start_mono_ns = c.u();
    process_.start_ticks = c.u();
    process_.tick_q32 = c.u();
    process_.hostname = c.str();
    process_.exe = c.str();
    process_.version = c.str();
    process_.mode = c.str();
    uint64_t argc = c.u();
    if (argc > static_cast<uint64_t>(c.end - c.p)) throw std::string("bad argument count");
    for (uint64_t i = 0; i < argc; ++i) {
      process_.argv.push_back(c.str());
      charge(sizeof(std::string) + process_.argv.back().size());
    }
    uint64_t nmeta = c.u();
    if (nmeta > static_cast<uint64_t>(c.end - c.p)) throw std::string("bad metadata count");
    for (uint64_t i = 0; i < nmeta; ++i) {
      std::string k = c.str();
      process_.metadata.emplace_back(k, c.str());
      charge(2 * sizeof(std::string) + k.size() + process_.metadata.back().second.size());
    }
  } catch (const std::string& e) {
    fail("PROCESS block: " + e);
  }
}

void FileReader::decode_dict(const std::vector<uint8_t>& p, uint32_t count) {
  Cursor c{p.data(), p.data() + p.size(), this, nullptr};
  try {
    for (uint32_t i = 0; i < count; ++i) {
      auto kind = static_cast<fmt::DictKind>(c.byte());
      uint64_t id = c.u();
      if (id > (1u << 28)) throw std::string("dictionary id out of range");
      auto id32 = static_cast<uint32_t>(id);
      // Tables are indexed by id: growing one to `id` costs its new slots.
      auto grow = [&](size_t size, size_t slot) {
        if (id32 >= size) charge((id32 + 1 - size) * slot);
      };
      switch (kind) {
        case fmt::DictKind::kString: {
          grow(dict_.num_strings(), sizeof(std::string));
          std::string s = c.str();
          charge(s.size());
          dict_.set_string(id32, std::move(s));
          break;
        }
        case fmt::DictKind::kName: {
          NameInfo n;
          auto name_sid = static_cast<uint32_t>(c.u());
          auto cat_sid = static_cast<uint32_t>(c.u());
          n.name = dict_.str(name_sid);
          n.category = dict_.str(cat_sid);
          n.fields = static_cast<uint32_t>(c.u());
          n.kind = c.byte();
          grow(dict_.num_names(), sizeof(NameInfo));
          charge(n.name.size() + n.category.size());
          dict_.set_name(id32, std::move(n));
          break;
        }
        case fmt::DictKind::kContext: {
          uint64_t n = c.u();
          if (n > 1024) throw std::string("context with too many tags");
          if (n > static_cast<uint64_t>(c.end - c.p)) throw std::string("context runs past the end of its block");
          std::vector<Tag> tags(n);
          // Readers render a context's string values (cat, analyze): charged
          // here, so that 1,024 tags naming one long string stay bounded.
          uint64_t bytes = n * sizeof(Tag);
          for (auto& t : tags) {
            t.key = static_cast<uint32_t>(c.u());
            t.is_int = c.byte() == static_cast<uint8_t>(fmt::TagType::kInt);
            if (t.is_int) t.int_value = c.z();
            else t.str_value = static_cast<uint32_t>(c.u());
            bytes += dict_.str(t.key).size() + (t.is_int ? 0 : dict_.str(t.str_value).size());
          }
          grow(dict_.num_contexts(), sizeof(std::vector<Tag>));
          charge(bytes);
          dict_.set_context(id32, std::move(tags));
          break;
        }
        case fmt::DictKind::kThread:
          charge(2 * sizeof(uint32_t));
          dict_.set_thread(id32, static_cast<uint32_t>(c.u()));
          break;
        case fmt::DictKind::kMetadata: {
          auto k = static_cast<uint32_t>(c.u());
          auto v = static_cast<uint32_t>(c.u());
          charge(2 * sizeof(std::string) + dict_.str(k).size() + dict_.str(v).size());
          process_.metadata.emplace_back(dict_.str(k), dict_.str(v));
          break;
        }
        default: throw std::string("unknown dictionary entry kind " + std::to_string(static_cast<int>(kind)));
      }
    }
  } catch (const std::string& e) {
    fail("DICT block: " + e);
  }
}

void FileReader::decode_stats(const std::vector<uint8_t>& p) {
  Cursor c{p.data(), p.data() + p.size(), this, nullptr};
  try {
    stats_.events_written = c.u();
    stats_.events_dropped = c.u();
  } catch (const std::string& e) {
    fail("STATS block: " + e);
  }
}

void FileReader::decode_profile(const std::vector<uint8_t>& p) {
  Cursor c{p.data(), p.data() + p.size(), this, nullptr};
  try {
    uint64_t n = c.u();
    // A record takes at least 4 bytes (module, path, two counts).
    if (n > static_cast<uint64_t>(c.end - c.p) / 4) throw std::string("bad record count");
    // The last PROFILE block replaces the records: charged against the
    // budget left by the dictionary, not accumulated.
    const uint64_t used = mem_used_;
    charge(n * sizeof(ProfileRecord));
    std::vector<ProfileRecord> records(n);
    for (auto& r : records) {
      r.module = c.byte();
      r.path = static_cast<uint32_t>(c.u());
      uint64_t nc = c.u();
      if (nc > 4096) throw std::string("too many counters");
      if (nc > static_cast<uint64_t>(c.end - c.p)) throw std::string("counters run past the end of the block");
      charge(nc * sizeof(int64_t));
      r.counters.resize(nc);
      for (auto& v : r.counters) v = c.z();
      uint64_t nf = c.u();
      if (nf > 4096 || nf * sizeof(double) > static_cast<uint64_t>(c.end - c.p)) throw std::string("bad fcounters");
      charge(nf * sizeof(double));
      r.fcounters.resize(nf);
      std::memcpy(r.fcounters.data(), c.p, nf * sizeof(double));
      c.p += nf * sizeof(double);
    }
    profile_ = std::move(records);
    mem_used_ = used;
  } catch (const std::string& e) {
    fail("PROFILE block: " + e);
  }
}

void FileReader::decode_events(const std::vector<uint8_t>& p, uint32_t count, EventBatch& out) {
  Cursor c{p.data(), p.data() + p.size(), this, nullptr};
  struct Col {
    uint8_t id, enc;
    uint64_t len;
  } cols[32];
  uint64_t base_ts = 0, ncols = 0;
  try {
    out.tid = static_cast<uint32_t>(c.u());
    base_ts = c.u();
    ncols = c.u();
    if (ncols > 32) throw std::string("too many columns");
    for (uint64_t i = 0; i < ncols; ++i) cols[i] = {c.byte(), c.byte(), c.u()};
  } catch (const std::string& e) {
    fail("EVENTS block: " + e);
  }
  // Bound what the batch allocates by what the payload can encode, before
  // allocating: every event has a timestamp, and a varint takes a byte per
  // value, a packed frame of 128 values at least 3 bytes; run-length columns
  // can describe any count in 2 bytes, hence the cap.
  if (count > kMaxBlockEvents) {
    fail("EVENTS block: header claims " + std::to_string(count) + " events, more than the reader's limit of " +
         std::to_string(kMaxBlockEvents) + " per block (corrupt block)");
  }
  {
    bool ts_seen = false;
    uint64_t total = 0;
    for (uint64_t i = 0; i < ncols; ++i) {
      total += cols[i].len;
      if (total > static_cast<uint64_t>(c.end - c.p)) fail("EVENTS block: column runs past the block");
      const uint8_t id = cols[i].id;
      if (id < 1 || id > fmt::kNumColumns) continue;
      uint64_t least = 0;
      switch (static_cast<fmt::ColumnEncoding>(cols[i].enc)) {
        case fmt::ColumnEncoding::kVarint: least = count; break;
        case fmt::ColumnEncoding::kRunLength: least = count ? 2 : 0; break;
        case fmt::ColumnEncoding::kPacked: least = 3 * ((uint64_t{count} + fmt::kPackedFrame - 1) / fmt::kPackedFrame); break;
        default: fail("EVENTS block: unknown column encoding " + std::to_string(cols[i].enc));
      }
      if (cols[i].len < least) {
        fail("EVENTS block: header claims " + std::to_string(count) + " events, but column " + std::to_string(id) +
             " has " + std::to_string(cols[i].len) + " bytes, too few to hold them (corrupt block)");
      }
      if (id == static_cast<uint8_t>(fmt::Column::kTs)) ts_seen = true;
    }
    if (!ts_seen) fail("EVENTS block: no timestamp column");
  }
  out.resize(count);
  bool present[fmt::kNumColumns + 1] = {};
  for (uint64_t i = 0; i < ncols; ++i)
    if (cols[i].id >= 1 && cols[i].id <= fmt::kNumColumns) present[cols[i].id] = true;
  // Columns a writer left out take their "none" values (format spec).
  auto absent = [&](fmt::Column c) { return !present[static_cast<int>(c)]; };
  if (absent(fmt::Column::kName)) std::fill(out.name.begin(), out.name.end(), 0);
  if (absent(fmt::Column::kDur)) std::fill(out.dur.begin(), out.dur.end(), 0);
  if (absent(fmt::Column::kFd)) std::fill(out.fd.begin(), out.fd.end(), -1);
  if (absent(fmt::Column::kPath)) std::fill(out.path.begin(), out.path.end(), 0);
  if (absent(fmt::Column::kOffset)) std::fill(out.offset.begin(), out.offset.end(), -1);
  if (absent(fmt::Column::kSize)) std::fill(out.size.begin(), out.size.end(), -1);
  if (absent(fmt::Column::kRet)) std::fill(out.ret.begin(), out.ret.end(), 0);
  if (absent(fmt::Column::kErrno)) std::fill(out.err.begin(), out.err.end(), 0);
  if (absent(fmt::Column::kCtx)) std::fill(out.ctx.begin(), out.ctx.end(), 0);
  if (absent(fmt::Column::kMemAlign)) std::fill(out.mem_align.begin(), out.mem_align.end(), 0);
  const uint8_t* data = c.p;
  const uint8_t* end = p.data() + p.size();
  bool have_ts = false, have_offset = false;
  for (uint64_t i = 0; i < ncols; ++i) {
    if (cols[i].len > static_cast<uint64_t>(end - data)) fail("EVENTS block: column runs past the block");
    const uint8_t* cb = data;
    const uint8_t* ce = data + cols[i].len;
    data = ce;
    const uint8_t enc = cols[i].enc;
    if (enc > static_cast<uint8_t>(fmt::ColumnEncoding::kPacked)) fail("EVENTS block: unknown column encoding " + std::to_string(enc));
    const char* bad = nullptr;
    size_t frame = SIZE_MAX;
    switch (static_cast<fmt::Column>(cols[i].id)) {
      case fmt::Column::kName: bad = decode_any(enc, cb, ce, count, out.name.data(), [](uint64_t v) { return static_cast<uint32_t>(v); }, frame); break;
      case fmt::Column::kTs:  // gaps; resolved against durations below
        bad = decode_any(enc, cb, ce, count, out.ts.data(), [](uint64_t v) { return v; }, frame);
        have_ts = true;
        break;
      case fmt::Column::kDur: bad = decode_any(enc, cb, ce, count, out.dur.data(), [](uint64_t v) { return v; }, frame); break;
      case fmt::Column::kFd: bad = decode_any(enc, cb, ce, count, out.fd.data(), [](uint64_t v) { return static_cast<int32_t>(fmt::unzigzag(v)); }, frame); break;
      case fmt::Column::kPath: bad = decode_any(enc, cb, ce, count, out.path.data(), [](uint64_t v) { return static_cast<uint32_t>(v); }, frame); break;
      case fmt::Column::kOffset:  // delta-cache codes; resolved below
        bad = decode_any(enc, cb, ce, count, out.offset.data(), [](uint64_t v) { return static_cast<int64_t>(v); }, frame);
        have_offset = true;
        break;
      case fmt::Column::kSize: bad = decode_any(enc, cb, ce, count, out.size.data(), [](uint64_t v) { return fmt::unzigzag(v); }, frame); break;
      case fmt::Column::kRet: bad = decode_any(enc, cb, ce, count, out.ret.data(), [](uint64_t v) { return fmt::unzigzag(v); }, frame); break;
      case fmt::Column::kErrno: bad = decode_any(enc, cb, ce, count, out.err.data(), [](uint64_t v) { return static_cast<int32_t>(v); }, frame); break;
      case fmt::Column::kCtx: bad = decode_any(enc, cb, ce, count, out.ctx.data(), [](uint64_t v) { return static_cast<uint32_t>(v); }, frame); break;
      case fmt::Column::kMemAlign: {
        uint64_t worst = 0;
        bad = decode_any(enc, cb, ce, count, out.mem_align.data(), [&](uint64_t v) {
          worst = std::max(worst, v);
          return static_cast<uint8_t>(v);
        }, frame);
        if (!bad && worst > 1 + fmt::kMemAlignMaxLog2) {
          fail("EVENTS block: column 11 (memory alignment) holds " + std::to_string(worst) + ", more than " +
               std::to_string(1 + fmt::kMemAlignMaxLog2) + " (corrupt block)");
        }
        break;
      }
      default: break;  // columns from a newer minor version
    }
    if (bad) {
      std::string what = "EVENTS block: column " + std::to_string(cols[i].id);
      if (enc == static_cast<uint8_t>(fmt::ColumnEncoding::kPacked)) {
        what += " (packed), frame " + std::to_string(frame) + ": " + bad;
      } else {
        what += " does not hold " + std::to_string(count) + " values";
      }
      fail(what);
    }
  }
  if (!have_ts) fail("EVENTS block: no timestamp column");
  // Ids MUST be defined before use (format spec section 7); readers index
  // tables by them, so an undefined one is corruption, not a huge table.
  auto check_ids = [&](const std::vector<uint32_t>& v, size_t defined, fmt::Column col, const char* what) {
    if (!present[static_cast<int>(col)]) return;
    uint32_t m = 0;
    for (uint32_t i = 0; i < count; ++i) m = std::max(m, v[i]);
    if (m >= defined && m != 0) {
      size_t at = std::find(v.begin(), v.end(), m) - v.begin();
      fail("EVENTS block: event " + std::to_string(at) + " uses " + what + " id " + std::to_string(m) +
           ", not defined by an earlier DICT block (corrupt block)");
    }
  };
  check_ids(out.name, dict_.num_names(), fmt::Column::kName, "name");
  check_ids(out.path, dict_.num_strings(), fmt::Column::kPath, "string (path)");
  check_ids(out.ctx, dict_.num_contexts(), fmt::Column::kCtx, "context");
  // ret is stored relative to the requested size; start times relative to the
  // previous event's end; offsets relative to the previous access's end.
  uint64_t prev_end = base_ts;
  int64_t prev_offset_end = 0, d1 = 0, d2 = 0;
  const bool ticks = process_.tick_q32 != 0;
  const TickClock clock(process_);
  for (uint32_t i = 0; i < count; ++i) {
    out.ret[i] = static_cast<int64_t>(static_cast<uint64_t>(out.ret[i]) +
                                      (out.size[i] > 0 ? static_cast<uint64_t>(out.size[i]) : 0));
    uint64_t t0 = prev_end + static_cast<uint64_t>(fmt::unzigzag(out.ts[i]));
    prev_end = t0 + out.dur[i];
    if (ticks) {
      out.ts[i] = clock.to_ns(t0);
      out.dur[i] = clock.to_ns(prev_end) - out.ts[i];
    } else {
      out.ts[i] = t0;
    }
    if (have_offset) {
      uint64_t code = static_cast<uint64_t>(out.offset[i]);
      int64_t delta;
      if (code == 0) {
        delta = d1;
      } else if (code == 1) {
        delta = d2;
        d2 = d1;
        d1 = delta;
      } else {
        delta = fmt::unzigzag(code - 2);
        d2 = d1;
        d1 = delta;
      }
      // Two's complement wrap-around, as the encoder computes (no signed
      // overflow on damaged or extreme values).
      out.offset[i] = static_cast<int64_t>(static_cast<uint64_t>(prev_offset_end) + static_cast<uint64_t>(delta));
      prev_offset_end = static_cast<int64_t>(static_cast<uint64_t>(out.offset[i]) +
                                             (out.offset[i] >= 0 && out.ret[i] > 0 ? static_cast<uint64_t>(out.ret[i]) : 0));
    }
  }
}

bool FileReader::next(EventBatch& out) {
  if (next_efg_batch(out)) return true;
  std::vector<uint8_t>& payload = raw_;
  uint8_t type;
  uint32_t count;
  while (read_block(payload, type, count)) {
    switch (static_cast<fmt::BlockType>(type)) {
      case fmt::BlockType::kEvents: decode_events(payload, count, out); return true;
      case fmt::BlockType::kEfg:
        decode_efg(payload, count);
        if (next_efg_batch(out)) return true;
        break;
      case fmt::BlockType::kDict: decode_dict(payload, count); break;
      case fmt::BlockType::kStats: decode_stats(payload); break;
      case fmt::BlockType::kProfile: decode_profile(payload); break;
      case fmt::BlockType::kFooter: footer_seen_ = true; break;
      case fmt::BlockType::kProcess: fail("second PROCESS block");
      default: break;  // unknown block types are skipped (forward compatible)
    }
  }
  return false;
}

uint64_t FileReader::skip_events_block() {
  // EVENTS payloads are skipped unread (their count is in the checked
  // header); other blocks are read as usual (dictionaries, stats, profile).
  // An EFG block is decoded (it holds the batches of several EVENTS blocks).
  if (efg_next_ < efg_batches_.size()) return efg_batches_[efg_next_++].size_events();
  std::vector<uint8_t>& payload = raw_;
  while (pos_ < file_size_) {
    fmt::BlockHeader h{};
    if (file_size_ - pos_ < sizeof(h)) {
      truncated_tail_ = true;
      return 0;
    }
    if (std::fread(&h, 1, sizeof(h), fp_) != sizeof(h)) fail("read error");
    std::fseek(fp_, static_cast<long>(pos_), SEEK_SET);
    if (h.type == static_cast<uint8_t>(fmt::BlockType::kEvents) && h.magic == fmt::kBlockMagic &&
        fmt::header_hash_of(h) == h.header_hash && h.stored_size <= fmt::kMaxBlockPayload) {
      if (pos_ + sizeof(h) + h.stored_size > file_size_) {
        truncated_tail_ = true;
        return 0;
      }
      block_offset_ = pos_;
      ++block_index_;
      if (h.count > kMaxBlockEvents) {
        fail("EVENTS block: header claims " + std::to_string(h.count) + " events, more than the reader's limit of " +
             std::to_string(kMaxBlockEvents) + " per block (corrupt block)");
      }
      pos_ += sizeof(h) + h.stored_size;
      std::fseek(fp_, static_cast<long>(pos_), SEEK_SET);
      return h.count;
    }
    uint8_t type;
    uint32_t count;
    if (!read_block(payload, type, count)) return 0;  // reports a bad header itself
    switch (static_cast<fmt::BlockType>(type)) {
      case fmt::BlockType::kEfg:
        decode_efg(payload, count);
        if (efg_next_ < efg_batches_.size()) return efg_batches_[efg_next_++].size_events();
        break;
      case fmt::BlockType::kDict: decode_dict(payload, count); break;
      case fmt::BlockType::kStats: decode_stats(payload); break;
      case fmt::BlockType::kProfile: decode_profile(payload); break;
      case fmt::BlockType::kFooter: footer_seen_ = true; break;
      default: break;
    }
  }
  return 0;
}

// ---- Trace -------------------------------------------------------------------
std::vector<std::string> list_trace_files(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  auto st = fs::status(path, ec);
  if (ec || !fs::exists(st)) throw FormatError(path, -1, 0, "no such file or directory");
  if (!fs::is_directory(st)) return {path};
  std::vector<std::string> files;
  for (auto& e : fs::directory_iterator(path, ec)) {
    if (e.path().extension() == fmt::kFileSuffix) files.push_back(e.path().string());
  }
  if (ec) throw FormatError(path, -1, 0, "cannot list directory: " + ec.message());
  if (files.empty()) throw FormatError(path, -1, 0, "directory holds no *.strata trace file");
  std::sort(files.begin(), files.end());
  return files;
}

namespace {
// "" when the file is worth opening with FileReader; else why it holds
// nothing (cut before its PROCESS block could start).
std::string why_empty(const std::string& file) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return "";
  if (st.st_size == 0) return "empty";
  if (st.st_size >= static_cast<off_t>(sizeof(fmt::FileHeader))) return "";
  // Shorter than the header: ours if it starts like the magic.
  char head[8] = {};
  FILE* fp = std::fopen(file.c_str(), "rb");
  if (!fp) return "";
  size_t n = std::fread(head, 1, sizeof head, fp);
  std::fclose(fp);
  if (n == 0 || std::memcmp(head, fmt::kFileMagic, n) != 0) return "";
  return "cut at byte " + std::to_string(st.st_size) + " inside the 32-byte file header";
}
std::string why_no_process(const FileReader& r) {
  return "cut at byte " + std::to_string(r.file_size()) + " inside block " + std::to_string(r.blocks_read()) +
         " (its PROCESS block, at offset 32)";
}
}  // namespace

std::string why_unreadable(const std::string& file) {
  std::string why = why_empty(file);
  if (!why.empty()) return why;
  FileReader r(file);
  return r.has_process() ? std::string() : why_no_process(r);
}

TraceReader::TraceReader(const std::string& path) {
  // Time base: per host, wall - mono of that host's earliest process.
  std::vector<std::pair<std::string, std::pair<uint64_t, int64_t>>> hosts;  // host -> (start_wall, offset)
  for (auto& f : list_trace_files(path)) {
    std::string why = why_empty(f);
    if (!why.empty()) {
      skipped_.push_back({f, why});
      continue;
    }
    FileReader r(f);
    if (!r.has_process()) {
      skipped_.push_back({f, why_no_process(r)});
      continue;
    }
    files_.push_back(f);
    const ProcessInfo& p = r.process();
    int64_t off = static_cast<int64_t>(p.start_wall_ns) - static_cast<int64_t>(p.start_mono_ns);
    auto it = std::find_if(hosts.begin(), hosts.end(), [&](auto& h) { return h.first == p.hostname; });
    if (it == hosts.end()) hosts.push_back({p.hostname, {p.start_wall_ns, off}});
    else if (p.start_wall_ns < it->second.first) it->second = {p.start_wall_ns, off};
  }
  if (files_.empty()) {
    std::string what = "no readable trace file (";
    for (size_t i = 0; i < skipped_.size(); ++i)
      what += (i ? "; " : "") + skipped_[i].file + ": " + skipped_[i].why;
    throw FormatError(path, -1, 0, what + ")");
  }
  start_wall_ns_ = ~0ull;
  for (auto& h : hosts) {
    host_offsets_.emplace_back(h.first, h.second.second);
    start_wall_ns_ = std::min(start_wall_ns_, h.second.first);
  }
}

int64_t TraceReader::to_trace_ns(const ProcessInfo& proc, uint64_t mono_ns) const {
  for (auto& [host, off] : host_offsets_)
    if (host == proc.hostname) return static_cast<int64_t>(mono_ns) + off - static_cast<int64_t>(start_wall_ns_);
  return static_cast<int64_t>(mono_ns) - static_cast<int64_t>(proc.start_mono_ns) +
         static_cast<int64_t>(proc.start_wall_ns) - static_cast<int64_t>(start_wall_ns_);
}

}  // namespace strata::reader
