// DFTracer .pfw: one JSON object per line, times in microseconds of
// wall-clock time, files and hosts named through FH/HH/SH metadata events
// carrying 64-bit hashes, I/O fields in args as DFTracer writes them with
// metadata on (fhash, fd, offset, count or an open's mode, ret). Version 1 (DFTracer 1.x):
// lines between "[" and "]", "ph" letters, hashes as numbers. Version 2
// (DFTracer 2.x): JSON lines only, integer "ph" and "type" (the layer),
// hashes as hex strings, one "end" record per process.

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <set>
#include <unordered_set>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "convert/convert.h"
#include "convert/events.h"
#include "convert/json_out.h"
#include "format/format.h"

namespace strata::convert {

namespace fmtf = strata::format;

namespace {

uint64_t hash_of(std::string_view s) { return XXH3_64bits(s.data(), s.size()); }

// The open family keeps its mode argument in the size column, not a byte
// count: DFTracer's open/open64/openat/creat64 write it as "mode", and only
// when the call passed one (O_CREAT), where strata records 0.
bool is_open_call(const reader::NameInfo& nm) {
  if (nm.category != "POSIX") return false;
  const std::string& n = nm.name;
  return n == "open" || n == "open64" || n == "openat" || n == "openat64" || n == "creat" || n == "creat64";
}

// The args key of the size column where it holds no byte count. DFTracer's
// brahma interposer writes truncate/ftruncate's new length and mmap's
// length as "length"; munmap, msync, fallocate and sync_file_range (which it
// does not wrap) hold lengths too. Written as "count" they were read as
// bytes moved by the call. A smart-mode `iteration` holds whether its
// events are in the trace (1) or only counted (0). nullptr: bytes, "count".
const char* size_key(const reader::NameInfo& nm) {
  const std::string& n = nm.name;
  if (nm.category == "POSIX") {
    static const std::set<std::string> lengths = {"truncate",  "ftruncate",       "ftruncate64",    "mmap",
                                                  "mmap64",    "munmap",          "msync",          "fallocate",
                                                  "fallocate64", "posix_fallocate", "posix_fallocate64", "sync_file_range"};
    if (lengths.count(n)) return "length";
  }
  if (nm.category == "PROC" && n == "iteration") return "kept";
  return nullptr;
}

class PfwWriter {
 public:
  PfwWriter(JsonOut& j, int version) : j_(j), v2_(version >= 2) {}

  void begin_file(const reader::FileReader& f) {
    proc_ = &f.process();
    seen_files_.clear();
    used_.clear();
    file_events_ = 0;
    last_us_ = wall_us(proc_->start_mono_ns);
    hhash_ = hash_of(proc_->hostname);
    meta("HH", proc_->pid, proc_->hostname, hhash_);
    std::string cmd = proc_->cmdline();
    meta("SH", proc_->pid, cmd, hash_of(cmd));
    line_start("start", "dftracer", proc_->pid, wall_us(proc_->start_mono_ns), 0);
    j_.raw(",\"args\":{\"hhash\":");
    hash(hhash_);
    j_.raw(",\"p_idx\":-1,\"level\":1,\"ppid\":");
    j_.i64(proc_->ppid);
    j_.raw(",\"cmd_hash\":");
    hash(hash_of(cmd));
    j_.raw("}}\n");
  }

  // Version 2: the process's "end" record (event count, configuration, layers used).
  void end_file(const reader::FileReader&) {
    if (!v2_) return;
    line_start("end", "dftracer", proc_->pid, last_us_, 0);
    j_.raw(",\"args\":{\"hhash\":");
    hash(hhash_);
    j_.raw(",\"num_events\":");
    j_.u64(file_events_);
    j_.raw(",\"cfg\":{\"enable\":1,\"metadata\":1,\"time_metric\":\"US\",\"aggregation_enable\":0,"
           "\"writer\":\"strata convert\"},\"build\":{},\"used\":{");
    bool first = true;
    for (int t : used_) {
      if (!first) j_.ch(',');
      first = false;
      j_.raw(type_name(t));
      j_.raw(":1");
    }
    j_.raw("},\"app\":{}}}\n");
  }

  void event(const EventRef& e) {
    const auto& b = e.batch;
    size_t i = e.i;
    const auto& nm = e.name();
    const auto& dict = e.file.dict();
    uint32_t f = nm.fields;
    uint64_t fhash = 0;
    bool has_path = (f & fmtf::kFieldPath) && b.path[i];
    if (has_path) {
      std::string_view path = dict.str(b.path[i]);
      fhash = hash_of(path);
      if (seen_files_.insert(b.path[i]).second) meta("FH", b.tid, path, fhash);
    }
    // The end rounded like the start (as DFTracer takes end - start): a
    // duration rounded on its own can end a child after its parent.
    const int64_t ts_us = wall_us(b.ts[i]), dur_us = wall_us(b.ts[i] + b.dur[i]) - ts_us;
    line_start(nm.name, nm.category, b.tid, ts_us, dur_us);
    last_us_ = std::max(last_us_, ts_us + dur_us);
    ++file_events_;
    if (v2_) used_.insert(layer_of(nm.category));
    j_.raw(",\"args\":{\"hhash\":");
    hash(hhash_);
    j_.raw(",\"p_idx\":-1,\"level\":1");
    if (has_path) { j_.raw(",\"fhash\":"); hash(fhash); }
    if (f & fmtf::kFieldFd) { j_.raw(",\"fd\":"); j_.i64(b.fd[i]); }
    if (f & fmtf::kFieldOffset) { j_.raw(",\"offset\":"); j_.i64(b.offset[i]); }
    if ((f & fmtf::kFieldSize) && is_open_call(nm)) {
      if (b.size[i] > 0) { j_.raw(",\"mode\":"); j_.i64(b.size[i]); }
    } else if (f & fmtf::kFieldSize) {
      const char* key = size_key(nm);
      j_.raw(",\"");
      j_.raw(key ? key : "count");
      j_.raw("\":");
      j_.i64(b.size[i]);
    }
    if (f & fmtf::kFieldValue) { j_.raw(",\"value\":"); j_.i64(b.size[i]); }
    if (f & fmtf::kFieldRet) { j_.raw(",\"ret\":"); j_.i64(b.ret[i]); }
    if ((f & fmtf::kFieldErrno) && b.err[i]) { j_.raw(",\"errno\":"); j_.i64(b.err[i]); }
    if (b.mem_align[i]) { j_.raw(",\"mem_align\":"); j_.i64(static_cast<int64_t>(fmtf::mem_align_bytes(b.mem_align[i]))); }
    if (b.ctx[i]) { j_.ch(','); write_tags(j_, dict, b.ctx[i]); }
    j_.raw("}}\n");
    j_.maybe_flush();
  }

 private:
  int64_t wall_us(uint64_t mono_ns) const {
    int64_t wall = static_cast<int64_t>(mono_ns - proc_->start_mono_ns) + static_cast<int64_t>(proc_->start_wall_ns);
    return wall / 1000;
  }
  // DFTracer 2.x "type" of a strata category.
  static int layer_of(const std::string& cat) {
    if (cat == "POSIX" || cat == "STDIO") return 3;  // LIBC_IO
    if (cat == "dftracer") return 1;                  // DFTRACER
    if (cat == "MPI" || cat == "MPIIO") return 10;
    if (cat == "HDF5") return 5;
    if (cat == "python" || cat == "torch" || cat == "pytorch" || cat == "dataloader") return 6;  // PYTHON
    return 2;                                                                                   // C_APP
  }
  static const char* type_name(int t) {
    switch (t) {
      case 1: return "\"DFTRACER\"";
      case 3: return "\"LIBC_IO\"";
      case 5: return "\"HDF5\"";
      case 6: return "\"PYTHON\"";
      case 10: return "\"MPI\"";
      default: return "\"C_APP\"";
    }
  }
  void hash(uint64_t h) {
    if (!v2_) {
      j_.u64(h);
      return;
    }
    char b[24];
    int n = std::snprintf(b, sizeof b, "\"%016llx\"", static_cast<unsigned long long>(h));
    j_.raw(std::string_view(b, static_cast<size_t>(n)));
  }
  void line_start(const std::string& name, const std::string& cat, uint64_t tid, int64_t ts_us, int64_t dur_us) {
    j_.raw("{\"id\":");
    j_.u64(++id_);
    j_.raw(",\"name\":");
    j_.str(name);
    j_.raw(",\"cat\":");
    j_.str(cat);
    if (v2_) {
      j_.raw(",\"type\":");
      j_.i64(layer_of(cat));
    }
    j_.raw(",\"pid\":");
    j_.i64(proc_->pid);
    j_.raw(",\"tid\":");
    j_.u64(tid);
    j_.raw(",\"ts\":");
    j_.i64(ts_us);
    j_.raw(",\"dur\":");
    j_.i64(dur_us);
    j_.raw(v2_ ? ",\"ph\":1" : ",\"ph\":\"X\"");
  }
  void meta(const char* kind, uint64_t tid, std::string_view name, uint64_t value) {
    j_.raw("{\"id\":");
    j_.u64(++id_);
    j_.raw(",\"name\":\"");
    j_.raw(kind);
    j_.raw(v2_ ? "\",\"cat\":\"dftracer\",\"type\":1,\"pid\":" : "\",\"cat\":\"dftracer\",\"pid\":");
    j_.i64(proc_->pid);
    j_.raw(",\"tid\":");
    j_.u64(tid);
    j_.raw(v2_ ? ",\"ph\":4,\"args\":{\"hhash\":" : ",\"ph\":\"M\",\"args\":{\"hhash\":");
    hash(hhash_);
    j_.raw(",\"name\":");
    j_.str(name);
    j_.raw(",\"value\":");
    hash(value);
    j_.raw("}}\n");
  }

  JsonOut& j_;
  const reader::ProcessInfo* proc_ = nullptr;
  uint64_t hhash_ = 0;
  uint64_t id_ = 0;
  bool v2_ = false;
  uint64_t file_events_ = 0;
  int64_t last_us_ = 0;
  std::set<int> used_;
  std::unordered_set<uint32_t> seen_files_;
};

}  // namespace

uint64_t write_pfw(const std::string& trace, const std::string& out_path, int version) {
  if (version != 1 && version != 2) throw std::runtime_error("--pfw-version must be 1 or 2");
  OutputFile out(out_path);
  uint64_t n = 0;
  {
    JsonOut j(out.sink());
    PfwWriter w(j, version);
    if (version == 1) j.raw("[\n");
    Visitor v;
    v.begin_file = [&](const reader::FileReader& f) { w.begin_file(f); };
    v.event = [&](const EventRef& e) {
      w.event(e);
      ++n;
    };
    v.end_file = [&](const reader::FileReader& f) { w.end_file(f); };
    visit_trace(trace, v);
    if (version == 1) j.raw("]\n");
    j.flush();
    if (j.failed()) throw std::runtime_error(out_path + ": write failed");
  }
  out.close();
  return n;
}

}  // namespace strata::convert
