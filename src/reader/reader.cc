#include "strata/reader.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <type_traits>

#include <zstd.h>

#include "format/format.h"
#include "format/varint.h"
#include "reader/block.h"
#include "reader/cursor.h"
#include "reader/pipeline.h"

namespace strata::reader {

namespace fmt = strata::format;

FormatError::FormatError(const std::string& file, long block, uint64_t offset, const std::string& what)
    : std::runtime_error(file + (block >= 0 ? ": block " + std::to_string(block) + " at offset " + std::to_string(offset)
                                            : std::string()) +
                         ": " + what),
      file_(file),
      block_(block),
      offset_(offset) {}

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
const NameInfo kUnknownName{"?", "?", 0, 0};
}  // namespace

template <class T>
T* Dictionary::Pool<T>::take(size_t n) {
  if (n == 0) return nullptr;
  if (n > left) {
    // Chunks of 64 KiB (or one entry's size when larger): a few allocations
    // per file, and no more than a chunk's tail wasted each time.
    constexpr size_t kChunk = (64u << 10) / sizeof(T);
    size_t size = std::max(n, kChunk);
    chunks.push_back(std::make_unique_for_overwrite<T[]>(size));
    next = chunks.back().get();
    left = size;
  }
  T* p = next;
  next += n;
  left -= n;
  return p;
}

const NameInfo& Dictionary::name(uint32_t nid) const {
  if (nid >= names_.size() || name_gaps_.contains(nid)) return kUnknownName;
  return names_[nid];
}
std::string_view Dictionary::thread_name(uint32_t tid) const {
  for (auto& [t, sid] : threads_)
    if (t == tid) return str(sid);
  return {};
}
void Dictionary::set_string(uint32_t id, std::string_view s) {
  char* p = chars_->take(s.size());
  if (!s.empty()) std::memcpy(p, s.data(), s.size());
  put_at(strings_, string_gaps_, id, std::string_view(p, s.size()));
}
void Dictionary::set_name(uint32_t id, NameInfo n) { put_at(names_, name_gaps_, id, std::move(n)); }

bool IdGaps::contains_slow(uint32_t id) const {
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), id, [](uint32_t v, const auto& r) { return v < r.second; });
  return it != ranges_.end() && it->first <= id;
}
void IdGaps::add(uint32_t lo, uint32_t hi) {
  if (lo >= hi) return;
  if (!ranges_.empty() && ranges_.back().second == lo) {
    ranges_.back().second = hi;
  } else {
    ranges_.emplace_back(lo, hi);
  }
}
void IdGaps::remove(uint32_t id) {
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), id, [](uint32_t v, const auto& r) { return v < r.second; });
  if (it == ranges_.end() || it->first > id) return;
  const uint32_t lo = it->first, hi = it->second;
  if (lo == id && hi == id + 1) {
    ranges_.erase(it);
  } else if (lo == id) {
    it->first = id + 1;
  } else if (hi == id + 1) {
    it->second = id;
  } else {
    it->second = id;
    ranges_.insert(it + 1, {id + 1, hi});
  }
}
std::span<Tag> Dictionary::new_context(size_t n) { return {tags_.take(n), n}; }
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

FileReader::FileReader(const std::string& path, ReadOptions options) : path_(path), options_(options) {
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
  fd_ = fileno(fp_);
  scan_pos_ = h.header_size;
  ahead_ = options_.decode_threads > 0 && file_size_ >= kDecodeAheadMinBytes;
  mem_budget_ = kDictMemoryBase + kDictMemoryPerByte * file_size_;
  dctx_ = ZSTD_createDCtx();
  job_ = std::make_unique<BlockJob>();
  BlockJob& job = *job_;
  job.outcome = scan_block(job);
  if (job.outcome != ScanOutcome::kEnd) {
    block_index_ = job.place.index;
    block_offset_ = job.place.offset;
  }
  if (job.outcome != ScanOutcome::kBlock) {
    // The process died (or the disk filled) before its PROCESS block was
    // complete: an empty process, not a corrupt trace. Its pid is in the name.
    truncated_tail_ = job.outcome == ScanOutcome::kTruncated;
    process_.pid = pid_from_name(path);
    process_.mode = "trace";
    return;
  }
  load_block(job, dctx_, false);
  if (job.header.type != static_cast<uint8_t>(fmt::BlockType::kProcess)) fail("first block is not a PROCESS block");
  decode_process(job.payload);
  has_process_ = true;
}

FileReader::~FileReader() {
  pipeline_.reset();  // its workers read the file
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

void FileReader::decode_process(const std::vector<uint8_t>& p) {
  Cursor c{p.data(), p.data() + p.size()};
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

namespace {
// Out of line: decode_dict checks every string id an entry names.
[[noreturn, gnu::noinline]] void undefined_string(const char* entry, uint64_t id, uint32_t sid) {
  throw std::string(entry) + " " + std::to_string(id) + " uses string id " + std::to_string(sid) +
      ", not defined by an earlier entry";
}
}  // namespace

void FileReader::decode_dict(const std::vector<uint8_t>& p, uint32_t count) {
  Cursor c{p.data(), p.data() + p.size()};
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
      // Strings an entry names are defined before it (format spec section 7).
      auto defined = [&](uint32_t sid, const char* entry) {
        if (!dict_.has_string(sid)) [[unlikely]]
          undefined_string(entry, id, sid);
        return sid;
      };
      switch (kind) {
        case fmt::DictKind::kString: {
          grow(dict_.num_strings(), sizeof(std::string_view));
          std::string_view s = c.view();
          charge(s.size());
          dict_.set_string(id32, s);
          break;
        }
        case fmt::DictKind::kName: {
          NameInfo n;
          auto name_sid = defined(static_cast<uint32_t>(c.u()), "name");
          auto cat_sid = defined(static_cast<uint32_t>(c.u()), "name");
          n.name = std::string(dict_.str(name_sid));
          n.category = std::string(dict_.str(cat_sid));
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
          std::span<Tag> tags = dict_.new_context(n);
          // Readers render a context's string values (cat, analyze): charged
          // here, so that 1,024 tags naming one long string stay bounded.
          uint64_t bytes = n * sizeof(Tag);
          for (auto& t : tags) {
            t = Tag{};
            t.key = defined(static_cast<uint32_t>(c.u()), "context");
            t.is_int = c.byte() == static_cast<uint8_t>(fmt::TagType::kInt);
            if (t.is_int) t.int_value = c.z();
            else t.str_value = defined(static_cast<uint32_t>(c.u()), "context");
            bytes += dict_.str(t.key).size() + (t.is_int ? 0 : dict_.str(t.str_value).size());
          }
          grow(dict_.num_contexts(), sizeof(std::span<const Tag>));
          charge(bytes);
          dict_.set_context(id32, tags);
          break;
        }
        case fmt::DictKind::kThread:
          charge(2 * sizeof(uint32_t));
          dict_.set_thread(id32, defined(static_cast<uint32_t>(c.u()), "thread"));
          break;
        case fmt::DictKind::kMetadata: {
          auto k = defined(static_cast<uint32_t>(c.u()), "metadata");
          auto v = defined(static_cast<uint32_t>(c.u()), "metadata");
          charge(2 * sizeof(std::string) + dict_.str(k).size() + dict_.str(v).size());
          process_.metadata.emplace_back(std::string(dict_.str(k)), std::string(dict_.str(v)));
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
  Cursor c{p.data(), p.data() + p.size()};
  try {
    stats_.events_written = c.u();
    stats_.events_dropped = c.u();
  } catch (const std::string& e) {
    fail("STATS block: " + e);
  }
}

void FileReader::decode_profile(const std::vector<uint8_t>& p) {
  Cursor c{p.data(), p.data() + p.size()};
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
