#include "analysis/pfw_source.h"

#include "format/format.h"
#include "importer/detect.h"
#include "importer/line_reader.h"
#include "importer/pfw_parser.h"

#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <deque>
#include <unordered_map>
#include <unordered_set>

namespace strata::analysis {

namespace fs = std::filesystem;
using importer::NumField;
using importer::Phase;
using importer::PfwRecord;

namespace {

constexpr int64_t kMaxAggregatedCalls = int64_t{1} << 30;

// Call i of n of a numeric field: plain value, or min (first), max (last)
// and the rest of sum shared by the others (sum stays exact).
int64_t share(const NumField& f, int64_t i, int64_t n) {
  if (!f.ranged) return f.v;
  if (n == 1) return f.sum;
  if (n == 2) {
    if (f.min + f.max == f.sum) return i == 0 ? f.min : f.max;
  } else {
    int64_t rest = f.sum - f.min - f.max, k = n - 2;
    int64_t q = rest / k, m = rest % k;
    if (rest >= 0 && q >= f.min && q + (m ? 1 : 0) <= f.max) {
      if (i == 0) return f.min;
      if (i == n - 1) return f.max;
      return q + (i - 1 < m ? 1 : 0);
    }
  }
  // Inconsistent min/max/sum: share the sum evenly.
  int64_t q = f.sum / n, m = f.sum % n;
  return q + (i < (m < 0 ? -m : m) ? (m < 0 ? -1 : 1) : 0);
}
// Offsets: spread from min to max.
int64_t spread(const NumField& f, int64_t i, int64_t n) {
  if (n <= 1) return f.min;
  long double t = static_cast<long double>(f.max - f.min) * i / (n - 1);
  return f.min + static_cast<int64_t>(t);
}

}  // namespace

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
    std::string buf = importer::read_head(path, 1 << 16);
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
                        line.find("\"cat\":\"STDIO\"") != std::string_view::npos ||
                        line.find("\"type\":3,") != std::string_view::npos)) {
        p.saw_io = true;
        p.has_args = line.find("\"args\"") != std::string_view::npos;
      }
      if (p.saw_io && p.first_ts != INT64_MAX) break;
    }
  } catch (const std::exception&) {
    // reported when the unit is read
  }
  return p;
}

}  // namespace

bool looks_like_pfw(const std::string& path) { return importer::looks_like_pfw(path); }

const char* unescape_json_string(const char* p, const char* end, std::string& out) {
  return importer::unescape_json_string(p, end, out);
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

namespace {

// One .pfw file streamed into a consumer: the id tables it builds as it goes
// (strings, function ids) and the per-record steps.
class PfwUnit {
 public:
  PfwUnit(const std::string& path, int64_t base_us, UnitConsumer& c) : path_(path), base_(base_us), c_(c) {
    tables_.str = [this](uint32_t id) -> std::string_view {
      return id < strings_.size() ? std::string_view(strings_[id]) : std::string_view();
    };
    tables_.ctxs.emplace_back();
  }

  void run() {
    Probe pr = probe_file(path_);
    c_.begin(path_, &tables_, !pr.saw_io || pr.has_args);
    try {
      importer::ByteStream bs(path_);
      importer::LineReader lines(bs);
      importer::PfwParser parser(path_);
      importer::Line line;
      PfwRecord rec;
      while (lines.next(line)) {
        line_no_ = line.no;
        if (parser.parse(line, rec)) handle(rec);
      }
      if (!parser.saw_anything()) throw InputError(path_ + ": empty file (no DFTracer events)");
    } catch (const importer::ImportError& e) {
      throw InputError(e.what());
    }
    c_.end();
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(path_ + ":" + std::to_string(line_no_) + ": " + what);
  }
  // us -> ns relative to `origin`, without signed overflow.
  int64_t to_ns(int64_t us, int64_t origin, const char* what) const {
    int64_t d, ns;
    if (__builtin_sub_overflow(us, origin, &d) || __builtin_mul_overflow(d, int64_t{1000}, &ns))
      fail(std::string("\"") + what + "\" out of range");
    return ns;
  }
  uint32_t sid_for_hash(uint64_t h) {
    auto it = hash_to_sid_.find(h);
    if (it != hash_to_sid_.end()) return it->second;
    strings_.push_back("<fhash:" + std::to_string(h) + ">");
    uint32_t id = static_cast<uint32_t>(strings_.size() - 1);
    hash_to_sid_.emplace(h, id);
    return id;
  }
  uint32_t sid_for_name(std::string_view s) {
    auto it = str_to_sid_.find(std::string(s));
    if (it != str_to_sid_.end()) return it->second;
    strings_.emplace_back(s);
    uint32_t id = static_cast<uint32_t>(strings_.size() - 1);
    str_to_sid_.emplace(std::string(s), id);
    return id;
  }
  uint32_t func_id(const PfwRecord& r) {
    NameKey k{std::string(r.name), std::string(r.cat)};
    auto it = name_ids_.find(k);
    if (it != name_ids_.end()) return it->second;
    tables_.funcs.push_back(classify(r.name, r.cat));
    uint32_t fid = static_cast<uint32_t>(tables_.funcs.size() - 1);
    name_ids_.emplace(std::move(k), fid);
    return fid;
  }
  std::string host_of(uint64_t hhash) const {
    auto h = host_names_.find(hhash);
    return h != host_names_.end() ? h->second : std::string();
  }

  void handle(const PfwRecord& r) {
    if (r.ph == Phase::kMetadata) return metadata(r);
    if (!r.has_ts) fail("event without \"ts\"");
    // Counter samples (psutil telemetry) and records of unknown phase are not calls.
    if (r.ph != Phase::kComplete && r.ph != Phase::kAggregated) return;
    if (r.cat == "dftracer" || r.type == importer::EventType::kDftracer) return marker(r);
    if (r.cnt > kMaxAggregatedCalls) fail("\"dft_cnt\" out of range (more than 2^30 calls in one record)");
    if (r.approx_fields && !told_approx_) {
      told_approx_ = true;
      for (const char* f : {"sizes", "offsets", "quantiles", "timeline"}) c_.approximate(f);
    }
    note_fork_child(r);
    calls(r);
  }

  // FH / HH / SH: names of file, host and string hashes.
  void metadata(const PfwRecord& r) {
    if (!r.has_value) return;
    if (r.name == "FH")
      strings_[sid_for_hash(r.value)] = std::string(r.a_name);
    else if (r.name == "HH")
      host_names_[r.value] = std::string(r.a_name);
    else if (r.name == "SH")
      str_hashes_[r.value] = std::string(r.a_name);
  }

  // DFTracer's own start/end markers: process metadata, not application events.
  void marker(const PfwRecord& r) {
    if (r.name != "start") return;
    ProcessMeta m;
    m.pid = r.pid;
    m.ppid = r.ppid >= 0 ? r.ppid : 0;
    m.host = host_of(r.hhash);
    auto cmd = str_hashes_.find(r.cmd_hash);
    if (cmd != str_hashes_.end()) {
      m.cmdline = cmd->second;
      std::replace(m.cmdline.begin(), m.cmdline.end(), ';', ' ');
    }
    auto ex = str_hashes_.find(r.exec_hash);
    if (ex != str_hashes_.end()) m.exe = ex->second;
    m.start_ns = to_ns(r.ts, base_, "ts");
    m.source_file = path_;
    c_.process(m);
  }

  // DFTracer 1.0.8 writes a forked child's events with the parent's pid; the
  // child is recognisable by its fork event returning 0 on its tid.
  void note_fork_child(const PfwRecord& r) {
    if (r.name != "fork" || !r.ret.present || r.ret.ranged || r.ret.v != 0 || r.tid == r.pid ||
        child_tids_.count(r.tid))
      return;
    child_tids_.insert(r.tid);
    ProcessMeta m;
    m.pid = r.tid;
    m.ppid = r.pid;
    m.host = host_of(r.hhash);
    m.start_ns = to_ns(r.ts, base_, "ts");
    m.source_file = path_;
    c_.process(m);
  }

  // The context id of a record's tags (0: none), one id per distinct set.
  uint32_t ctx_of(std::span<const importer::PfwTag> tags) {
    if (tags.empty()) return 0;
    ctx_key_.clear();
    for (const importer::PfwTag& t : tags) {
      ctx_key_ += t.key;
      ctx_key_ += '\x1f';
      ctx_key_ += t.value;
      ctx_key_ += t.is_int ? '\x1e' : '\x1d';
    }
    auto it = ctx_ids_.find(ctx_key_);
    if (it != ctx_ids_.end()) return it->second;
    const uint32_t id = static_cast<uint32_t>(tables_.ctxs.size());
    tables_.ctxs.begin_next();
    for (const importer::PfwTag& t : tags) {
      CtxTag& tag = tables_.ctxs.add_tag();
      tag.key = ctx_strings_.emplace_back(t.key);  // a deque: views stay valid
      tag.value = ctx_strings_.emplace_back(t.value);
      tag.is_int = t.is_int;
      tag.int_value = t.int_value;
    }
    ctx_ids_.emplace(ctx_key_, id);
    return id;
  }

  // The calls a record stands for: one, or dft_cnt of an aggregated record.
  void calls(const PfwRecord& r) {
    const int64_t n = r.cnt;
    const bool has_ret = r.ret.present;
    IoEvent e;
    e.ctx = ctx_of(r.tags);
    e.pid = !child_tids_.empty() && child_tids_.count(r.tid) ? r.tid : r.pid;
    e.tid = r.tid;
    e.func = func_id(r);
    const FuncInfo& fi = tables_.funcs[e.func];
    if (!r.a_fname.empty())
      e.path = sid_for_name(r.a_fname);
    else if (r.has_fhash)
      e.path = sid_for_hash(r.fhash);
    e.has_ret = has_ret;
    int64_t t_ns = to_ns(r.ts, base_, "ts");
    const NumField& durf = r.ph == Phase::kAggregated ? r.args_dur : NumField{true, false, r.dur};
    for (int64_t i = 0; i < n; ++i) {
      // One call of the record: exact when n == 1 or the field is plain;
      // otherwise the first call takes _min, the last _max, the others share
      // the rest of _sum (totals stay exact).
      e.fd = static_cast<int32_t>(r.fd.present ? share(r.fd, i, n) : -1);
      e.offset = r.offset.present ? (r.offset.ranged ? spread(r.offset, i, n) : r.offset.v) : -1;
      e.ret = has_ret ? share(r.ret, i, n) : 0;
      int64_t a_count = r.count.present ? share(r.count, i, n) : -1;
      int64_t a_size = r.size.present ? share(r.size, i, n) : -1;
      e.err = static_cast<int32_t>(r.err.present && !r.err.ranged ? r.err.v : 0);
      // A folded record's calls share one alignment only when all had it (a plain field).
      e.mem_align = static_cast<uint8_t>(r.mem_align.present && !r.mem_align.ranged && r.mem_align.v > 0
                                             ? format::mem_align_code_of_bytes(static_cast<uint64_t>(r.mem_align.v))
                                             : 0);
      e.ts = t_ns;
      e.dur = to_ns(durf.present ? share(durf, i, n) : 0, 0, "dur");
      if (__builtin_add_overflow(t_ns, e.dur, &t_ns)) fail("\"ts\" out of range");
      if (fi.layer == Layer::kStdio && fi.data && a_size > 0 && a_count >= 0) {
        // fread/fwrite: count items of `size` bytes; ret counts items.
        if (__builtin_mul_overflow(a_count, a_size, &e.size)) fail("\"count\" x \"size\" out of range");
        if (has_ret && e.ret > 0 && __builtin_mul_overflow(e.ret, a_size, &e.ret)) fail("\"ret\" x \"size\" out of range");
      } else {
        e.size = a_count;
      }
      if (!r.has_args) {
        e.has_ret = false;
        e.size = -1;
      }
      c_.event(e);
    }
  }

  const std::string& path_;
  const int64_t base_;
  UnitConsumer& c_;
  size_t line_no_ = 0;
  bool told_approx_ = false;
  Tables tables_;
  std::vector<std::string> strings_{""};
  std::unordered_map<uint64_t, uint32_t> hash_to_sid_;
  std::unordered_map<std::string, uint32_t> str_to_sid_;
  std::unordered_map<NameKey, uint32_t, NameKeyHash> name_ids_;
  std::unordered_map<uint64_t, std::string> host_names_, str_hashes_;
  std::unordered_set<int64_t> child_tids_;
  std::string ctx_key_;
  std::unordered_map<std::string, uint32_t> ctx_ids_;
  std::deque<std::string> ctx_strings_;
};

}  // namespace

void PfwSource::read_unit(size_t idx, UnitConsumer& c) { PfwUnit(files_[idx], base_us_, c).run(); }

}  // namespace strata::analysis
