// strata._reader: decodes strata trace files into numpy columns through the
// C++ reader library (include/strata/reader.h). No Python object is made per
// event: every column is a std::vector filled in C++ with the GIL released,
// then handed to numpy without a copy. Ids local to each file (names, paths,
// contexts) are remapped to tables shared by all the files of one call.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#include <exception>
#include <thread>
#include <tuple>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "format/format.h"
#include "runtime/functions.h"
#include "strata/reader.h"
#ifdef STRATA_PY_HAVE_ANALYSIS
#include "analysis/pass.h"
namespace sa = strata::analysis;
#endif

namespace py = pybind11;
using namespace strata::reader;

namespace {

template <typename T>
py::array to_numpy(std::vector<T>&& v) {
  auto* heap = new std::vector<T>(std::move(v));
  py::capsule owner(heap, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  return py::array_t<T>({static_cast<py::ssize_t>(heap->size())}, {sizeof(T)}, heap->data(), owner);
}

// Trace strings (paths, names, command lines, tag values) are bytes, as the
// kernel's paths are: decoded as os.fsdecode does, UTF-8 with each undecodable
// byte as a lone surrogate, so that os.fsencode gives the bytes back. A plain
// std::string -> str conversion raised UnicodeDecodeError on a trace with one
// non-UTF-8 path.
py::str fs_str(std::string_view s) {
  PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<py::ssize_t>(s.size()), "surrogateescape");
  if (!o) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(o);
}

py::list fs_list(const std::vector<std::string>& v) {
  py::list out;
  for (const std::string& s : v) out.append(fs_str(s));
  return out;
}

py::dict process_dict(const ProcessInfo& p) {
  py::dict d;
  d["pid"] = p.pid;
  d["ppid"] = p.ppid;
  d["rank"] = p.rank;
  d["start_wall_ns"] = p.start_wall_ns;
  d["start_mono_ns"] = p.start_mono_ns;
  d["hostname"] = fs_str(p.hostname);
  d["exe"] = fs_str(p.exe);
  d["argv"] = fs_list(p.argv);
  d["version"] = fs_str(p.version);
  d["mode"] = fs_str(p.mode);
  py::dict md;
  for (auto& [k, v] : p.metadata) md[fs_str(k)] = fs_str(v);
  d["metadata"] = md;
  return d;
}

// ---- Parallel decoding into preallocated columns ------------------------------
//
// Phase A (one thread per file, in parallel): decode the file's blocks straight
//   into its slice of the output columns; names, paths and contexts keep their
//   file-local ids for now; note which string ids are used as paths.
// Phase B (serial, small): build tables shared by all files (names, categories,
//   paths, contexts, tag keys) in file order, so the result is deterministic.
// Phase C (parallel): rewrite the id columns of each slice into shared codes
//   and fill the tag columns from per-context tables.

struct FileSpec {
  std::string path;
  int64_t ts_offset;  // added to host-monotonic ts to get trace time
  int64_t first_block;
  int64_t nblocks;    // -1: to the end
  int64_t events;     // events in the range, -1 unknown (counted first)
  int64_t pid;
};

// Large columns are 2 MiB aligned so that transparent huge pages can back
// them (THP "always"); no MADV_HUGEPAGE, which would stall in direct
// compaction. Their page faults are taken by the decoding threads, in parallel.
void* alloc_column(size_t bytes) {
  void* p = nullptr;
  if (bytes >= (4u << 20)) {
    if (posix_memalign(&p, 2u << 20, bytes) != 0) throw std::bad_alloc();
  } else {
    p = std::malloc(bytes ? bytes : 1);
    if (!p) throw std::bad_alloc();
  }
  return p;
}

template <typename T>
struct Col {
  T* p = nullptr;
  size_t n = 0;
  void alloc(size_t k) { p = static_cast<T*>(alloc_column(k * sizeof(T))); n = k; }
  py::array take() {
    if (!p) alloc(0);
    py::capsule owner(p, [](void* q) { std::free(q); });
    T* data = p;
    p = nullptr;
    return py::array_t<T>({static_cast<py::ssize_t>(n)}, {sizeof(T)}, data, owner);
  }
  ~Col() { std::free(p); }
};

struct FileWork {
  const FileSpec* spec;
  size_t begin = 0, count = 0;
  std::unique_ptr<FileReader> reader;
  std::vector<uint8_t> path_used;                    // by local string id
  std::vector<int32_t> name_map, path_map, ctx_map;  // local id -> shared code
};

// Events per EVENTS block of a file, from the block headers alone (format.h):
// no payload is read, decompressed or hashed. Stops where the reader stops
// (end of file or a block cut short by a killed writer).
std::vector<uint64_t> block_counts(const std::string& path) {
  namespace fmt = strata::format;
  std::vector<uint64_t> out;
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw FormatError(path, -1, 0, "cannot open");
  std::fseek(f, 0, SEEK_END);
  const uint64_t file_size = static_cast<uint64_t>(std::ftell(f));
  std::fseek(f, 0, SEEK_SET);
  fmt::FileHeader fh{};
  if (std::fread(&fh, 1, sizeof(fh), f) != sizeof(fh) || std::memcmp(fh.magic, fmt::kFileMagic, 8) != 0) {
    std::fclose(f);
    throw FormatError(path, -1, 0, "not a strata trace file");
  }
  uint64_t pos = fh.header_size;
  while (pos + sizeof(fmt::BlockHeader) <= file_size) {
    fmt::BlockHeader h{};
    if (std::fseek(f, static_cast<long>(pos), SEEK_SET) != 0 || std::fread(&h, 1, sizeof(h), f) != sizeof(h)) break;
    if (h.magic != fmt::kBlockMagic) break;
    if (pos + sizeof(h) + h.stored_size > file_size) break;
    if (h.type == static_cast<uint8_t>(fmt::BlockType::kEvents)) out.push_back(h.count);
    if (h.type == static_cast<uint8_t>(fmt::BlockType::kEfg)) {
      // `strata efg --compress` output: an EFG block holds the batches of
      // several EVENTS blocks; the reader lists them (it decodes the block).
      std::fclose(f);
      out.clear();
      FileReader r(path);
      while (uint64_t n = r.skip_events_block()) out.push_back(n);
      return out;
    }
    pos += sizeof(h) + h.stored_size;
  }
  std::fclose(f);
  return out;
}

int64_t count_events(const FileSpec& s) {
  auto counts = block_counts(s.path);
  int64_t total = 0;
  for (size_t b = static_cast<size_t>(std::max<int64_t>(s.first_block, 0)); b < counts.size(); ++b) {
    if (s.nblocks >= 0 && static_cast<int64_t>(b) >= s.first_block + s.nblocks) break;
    total += static_cast<int64_t>(counts[b]);
  }
  return total;
}

struct Out {
  Col<int64_t> pid, tid, ts, dur, offset, size, ret;
  Col<int32_t> fd, err, mem_align, name, cat, path, ctx;
  Col<int8_t> kind;
};

template <typename T, typename S>
void put(T* dst, const EventColumn<S>& src) {
  for (size_t i = 0; i < src.size(); ++i) dst[i] = static_cast<T>(src[i]);
}

// Phase A: decodes the file's range straight into its slice of the columns,
// with file-local name/path/context ids for now.
void decode_into(FileWork& w, Out& o) {
  const FileSpec& s = *w.spec;
  w.reader = std::make_unique<FileReader>(s.path);
  FileReader& r = *w.reader;
  for (int64_t b = 0; b < s.first_block; ++b)
    if (r.skip_events_block() == 0) break;
  EventBatch batch;
  const int64_t off = s.ts_offset, pid = s.pid;
  size_t at = w.begin;
  const size_t end = w.begin + w.count;
  for (int64_t b = 0; s.nblocks < 0 || b < s.nblocks; ++b) {
    if (!r.next(batch)) break;
    const size_t n = batch.size_events();
    if (at + n > end) throw FormatError(s.path, r.blocks_read(), 0, "more events than the block headers say");
    int64_t* ts = o.ts.p + at;
    for (size_t i = 0; i < n; ++i) ts[i] = static_cast<int64_t>(batch.ts[i]) + off;
    put(o.dur.p + at, batch.dur);
    put(o.offset.p + at, batch.offset);
    put(o.size.p + at, batch.size);
    put(o.ret.p + at, batch.ret);
    put(o.fd.p + at, batch.fd);
    put(o.err.p + at, batch.err);
    int32_t* mem = o.mem_align.p + at;  // the format's code -> bytes (0 = not recorded)
    for (size_t i = 0; i < n; ++i) mem[i] = batch.mem_align[i] ? int32_t{1} << (batch.mem_align[i] - 1) : 0;
    put(o.name.p + at, batch.name);
    put(o.ctx.p + at, batch.ctx);
    put(o.path.p + at, batch.path);
    std::fill(o.pid.p + at, o.pid.p + at + n, pid);
    std::fill(o.tid.p + at, o.tid.p + at + n, static_cast<int64_t>(batch.tid));
    for (uint32_t p : batch.path) {
      if (p >= w.path_used.size()) w.path_used.resize(p + 1 + p / 2, 0);
      w.path_used[p] = 1;
    }
    at += n;
  }
  if (at != end) throw FormatError(s.path, r.blocks_read(), 0, "fewer events than the block headers say");
}

template <typename F>
void parallel_for(size_t n, int threads, F&& f) {
  if (threads <= 1 || n <= 1) {
    for (size_t i = 0; i < n; ++i) f(i);
    return;
  }
  std::atomic<size_t> next{0};
  std::vector<std::exception_ptr> errs(n);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads && static_cast<size_t>(t) < n; ++t)
    pool.emplace_back([&] {
      for (size_t i; (i = next++) < n;) {
        try {
          f(i);
        } catch (...) {
          errs[i] = std::current_exception();
        }
      }
    });
  for (auto& th : pool) th.join();
  for (auto& e : errs)
    if (e) std::rethrow_exception(e);
}

struct Shared {
  std::vector<std::string> names, cats, paths;
  std::unordered_map<std::string, int32_t> name_ix, cat_ix, path_ix;
  std::vector<int32_t> fn_name, fn_cat, fn_kind;  // by function code: (name, category) pair
  std::unordered_map<std::string, int32_t> fn_ix;
  // contexts: key -> value per shared context
  std::vector<std::string> keys;
  std::unordered_map<std::string, int32_t> key_ix;
  std::vector<bool> key_is_int;
  std::vector<std::vector<std::tuple<int32_t, bool, int64_t, std::string>>> ctxs{{}};
  std::unordered_map<std::string, int32_t> ctx_ix;

  static int32_t intern(std::vector<std::string>& v, std::unordered_map<std::string, int32_t>& ix,
                        std::string_view sv) {
    std::string s(sv);
    auto it = ix.find(s);
    if (it != ix.end()) return it->second;
    int32_t id = static_cast<int32_t>(v.size());
    v.push_back(s);
    ix.emplace(s, id);
    return id;
  }
  int32_t function(const NameInfo& n) {
    std::string k = n.name + '\0' + n.category;
    auto it = fn_ix.find(k);
    if (it != fn_ix.end()) return it->second;
    int32_t id = static_cast<int32_t>(fn_name.size());
    fn_name.push_back(intern(names, name_ix, n.name));
    fn_cat.push_back(intern(cats, cat_ix, n.category));
    fn_kind.push_back(n.kind);
    fn_ix.emplace(std::move(k), id);
    return id;
  }
  int32_t context(const Dictionary& d, uint32_t cid) {
    const auto& tags = d.context(cid);
    if (tags.empty()) return 0;
    std::vector<std::tuple<int32_t, bool, int64_t, std::string>> out;
    std::string k;
    for (const auto& t : tags) {
      std::string_view key = d.str(t.key);
      int32_t kid = intern(keys, key_ix, key);
      if (static_cast<size_t>(kid) == key_is_int.size()) key_is_int.push_back(true);
      if (!t.is_int) key_is_int[kid] = false;
      std::string sv = t.is_int ? std::string() : std::string(d.str(t.str_value));
      k += std::to_string(kid) + (t.is_int ? ":" + std::to_string(t.int_value) : "=" + sv) + '\1';
      out.emplace_back(kid, t.is_int, t.int_value, std::move(sv));
    }
    auto it = ctx_ix.find(k);
    if (it != ctx_ix.end()) return it->second;
    int32_t id = static_cast<int32_t>(ctxs.size());
    ctxs.push_back(std::move(out));
    ctx_ix.emplace(std::move(k), id);
    return id;
  }
};

py::dict read_specs(std::vector<FileSpec> specs, int threads) {
  if (threads <= 0) threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<FileWork> work(specs.size());
  Shared sh;
  size_t total = 0, nkeys = 0;
  Out o;
  std::vector<Col<int64_t>> tag_int;
  std::vector<Col<bool>> tag_mask;
  std::vector<Col<int32_t>> tag_code;
  std::vector<std::vector<std::string>> tag_cats;
  {
    py::gil_scoped_release nogil;
    parallel_for(specs.size(), threads, [&](size_t i) {
      if (specs[i].events < 0) specs[i].events = count_events(specs[i]);
    });
    for (size_t i = 0; i < specs.size(); ++i) {
      work[i].spec = &specs[i];
      work[i].begin = total;
      work[i].count = static_cast<size_t>(specs[i].events);
      total += work[i].count;
    }
    for (auto* c : {&o.pid, &o.tid, &o.ts, &o.dur, &o.offset, &o.size, &o.ret}) c->alloc(total);
    for (auto* c : {&o.fd, &o.err, &o.mem_align, &o.name, &o.cat, &o.path, &o.ctx}) c->alloc(total);
    o.kind.alloc(total);
    // Phase A
    parallel_for(work.size(), threads, [&](size_t i) { decode_into(work[i], o); });
    // Phase B: shared tables, in file order
    for (auto& w : work) {
      if (!w.reader) continue;
      const Dictionary& d = w.reader->dict();
      w.name_map.assign(d.num_names(), -1);
      for (size_t j = 1; j < d.num_names(); ++j)  // ids a damaged file skipped: no function
        if (d.has_name(static_cast<uint32_t>(j))) w.name_map[j] = sh.function(d.name(j));
      w.path_map.assign(w.path_used.size(), -1);
      for (size_t j = 1; j < w.path_used.size(); ++j)
        if (w.path_used[j]) w.path_map[j] = Shared::intern(sh.paths, sh.path_ix, d.str(j));
      w.ctx_map.assign(d.num_contexts(), 0);
      for (size_t j = 1; j < d.num_contexts(); ++j) w.ctx_map[j] = sh.context(d, j);
      w.reader.reset();
    }
    nkeys = sh.keys.size();
    std::vector<std::vector<int64_t>> ctx_val(nkeys, std::vector<int64_t>(sh.ctxs.size(), 0));
    std::vector<std::vector<uint8_t>> ctx_has(nkeys, std::vector<uint8_t>(sh.ctxs.size(), 0));
    tag_cats.resize(nkeys);
    std::vector<std::unordered_map<std::string, int32_t>> cat_ix(nkeys);
    for (size_t c = 1; c < sh.ctxs.size(); ++c)
      for (auto& [kid, is_int, iv, sv] : sh.ctxs[c]) {
        ctx_has[kid][c] = 1;
        if (sh.key_is_int[kid])
          ctx_val[kid][c] = iv;
        else
          ctx_val[kid][c] = Shared::intern(tag_cats[kid], cat_ix[kid], is_int ? std::to_string(iv) : sv);
      }
    tag_int.resize(nkeys);
    tag_mask.resize(nkeys);
    tag_code.resize(nkeys);
    for (size_t k = 0; k < nkeys; ++k) {
      if (sh.key_is_int[k]) {
        tag_int[k].alloc(total);
        tag_mask[k].alloc(total);
      } else {
        tag_code[k].alloc(total);
      }
    }
    // Phase C: ids rewritten in place to shared codes, tag columns filled
    parallel_for(work.size(), threads, [&](size_t i) {
      const FileWork& w = work[i];
      const size_t b = w.begin, n = w.count;
      int32_t* name = o.name.p + b;
      int32_t* cat = o.cat.p + b;
      int8_t* kind = o.kind.p + b;
      int32_t* path = o.path.p + b;
      int32_t* ctx = o.ctx.p + b;
      for (size_t e = 0; e < n; ++e) {
        uint32_t nm = static_cast<uint32_t>(name[e]);
        int32_t fn = nm > 0 && nm < w.name_map.size() ? w.name_map[nm] : -1;
        name[e] = fn < 0 ? -1 : sh.fn_name[fn];
        cat[e] = fn < 0 ? -1 : sh.fn_cat[fn];
        kind[e] = static_cast<int8_t>(fn < 0 ? -1 : sh.fn_kind[fn]);
        uint32_t p = static_cast<uint32_t>(path[e]);
        path[e] = p > 0 && p < w.path_map.size() ? w.path_map[p] : -1;
        uint32_t cx = static_cast<uint32_t>(ctx[e]);
        ctx[e] = cx > 0 && cx < w.ctx_map.size() ? w.ctx_map[cx] : 0;
      }
      for (size_t k = 0; k < nkeys; ++k) {
        const int64_t* val = ctx_val[k].data();
        const uint8_t* has = ctx_has[k].data();
        if (sh.key_is_int[k]) {
          int64_t* out = tag_int[k].p + b;
          bool* miss = tag_mask[k].p + b;
          for (size_t e = 0; e < n; ++e) {
            out[e] = val[ctx[e]];
            miss[e] = !has[ctx[e]];  // pandas IntegerArray: True = missing
          }
        } else {
          int32_t* out = tag_code[k].p + b;
          for (size_t e = 0; e < n; ++e) out[e] = has[ctx[e]] ? static_cast<int32_t>(val[ctx[e]]) : -1;
        }
      }
    });
  }
  py::dict out;
  out["pid"] = o.pid.take();
  out["tid"] = o.tid.take();
  out["ts"] = o.ts.take();
  out["dur"] = o.dur.take();
  out["offset"] = o.offset.take();
  out["size"] = o.size.take();
  out["ret"] = o.ret.take();
  out["fd"] = o.fd.take();
  out["err"] = o.err.take();
  out["mem_align"] = o.mem_align.take();
  out["name"] = o.name.take();
  out["cat"] = o.cat.take();
  out["kind"] = o.kind.take();
  out["path"] = o.path.take();
  out["ctx"] = o.ctx.take();
  out["names"] = fs_list(sh.names);
  out["cats"] = fs_list(sh.cats);
  out["paths"] = fs_list(sh.paths);
  py::list tags;
  for (size_t k = 0; k < nkeys; ++k) {
    if (sh.key_is_int[k])
      tags.append(py::make_tuple(fs_str(sh.keys[k]), true, tag_int[k].take(), tag_mask[k].take(), py::none()));
    else
      tags.append(py::make_tuple(fs_str(sh.keys[k]), false, tag_code[k].take(), py::none(), fs_list(tag_cats[k])));
  }
  out["tags"] = tags;
  return out;
}

// Lists the files of a trace with their process information, trace-time
// offset, events per EVENTS block and tag keys (no event is decoded).
py::list scan(const std::string& path, bool blocks) {
  TraceReader trace(path);
  py::list out;
  for (const auto& f : trace.files()) {
    std::vector<uint64_t> counts;
    std::vector<std::pair<std::string, bool>> keys;
    ProcessInfo proc;
    FileStats stats;
    bool footer = false;
    uint64_t size = 0;
    {
      py::gil_scoped_release nogil;
      FileReader r(f);
      if (blocks) {
        while (uint64_t n = r.skip_events_block()) counts.push_back(n);
        const Dictionary& d = r.dict();
        std::unordered_map<std::string, bool> seen;
        for (size_t i = 1; i < d.num_contexts(); ++i)
          for (const auto& tag : d.context(i)) {
            std::string_view k = d.str(tag.key);
            auto it = seen.find(std::string(k));
            if (it == seen.end()) {
              seen.emplace(k, tag.is_int);
              keys.emplace_back(k, tag.is_int);
            } else if (!tag.is_int && it->second) {
              it->second = false;
              for (auto& kv : keys)
                if (kv.first == k) kv.second = false;
            }
          }
      }
      proc = r.process();
      stats = r.stats();
      footer = r.has_footer();
      size = r.file_size();
    }
    py::dict d = process_dict(proc);
    d["file"] = fs_str(f);
    d["ts_offset"] = trace.to_trace_ns(proc, proc.start_mono_ns) - static_cast<int64_t>(proc.start_mono_ns);
    d["start_ns"] = trace.to_trace_ns(proc, proc.start_mono_ns);
    d["block_events"] = to_numpy(std::move(counts));
    py::list kl;
    for (auto& [k, is_int] : keys) kl.append(py::make_tuple(fs_str(k), is_int));
    d["tag_keys"] = kl;
    d["has_footer"] = footer;
    d["events_written"] = stats.events_written;
    d["events_dropped"] = stats.events_dropped;
    d["file_size"] = size;
    out.append(d);
  }
  return out;
}

}  // namespace

// The runtime's table of recorded functions (src/runtime/functions.h), one
// dict per function: name, layer (the event category), module (Darshan
// counter module or None), op (counter op, "none" when not counted), fields
// (column mask), positional, data, aliases (other names of the call).
py::list functions_table() {
  namespace rt = strata::runtime;
  py::list out;
  for (uint32_t i = 1; i < rt::kNumFns; ++i) {
    const rt::FnInfo& f = rt::kFnInfo[i];
    const rt::LayerInfo& l = rt::kLayerInfo[static_cast<uint32_t>(f.layer)];
    py::list aliases;
    for (const auto& a : rt::kFnAliases)
      if (static_cast<uint32_t>(a.fn) == i) aliases.append(a.name);
    py::dict d;
    d["name"] = f.name;
    d["layer"] = l.category;
    d["module"] = l.counted ? py::object(py::str(rt::kLayerInfo[static_cast<uint32_t>(l.module)].category)) : py::none();
    d["op"] = strata::counters::op_name(f.op);
    d["fields"] = f.fields;
    d["positional"] = f.positional;
    d["data"] = f.data;
    d["aliases"] = aliases;
    out.append(d);
  }
  return out;
}

// The layer table: category, STRATA_LAYERS item, counted (has Darshan counters).
py::list layers_table() {
  namespace rt = strata::runtime;
  py::list out;
  for (uint32_t i = 0; i < rt::kNumLayers; ++i) {
    py::dict d;
    d["category"] = rt::kLayerInfo[i].category;
    d["item"] = rt::kLayerInfo[i].item;
    d["counted"] = rt::kLayerInfo[i].counted;
    out.append(d);
  }
  return out;
}

#ifdef STRATA_PY_HAVE_ANALYSIS
// The analysis passes, piece by piece, for strata.dask (analysis/pass.h):
// the options are those of `strata analyze` that change figures.
static sa::AnalyzeOptions analysis_options(const std::string& input, const std::string& by,
                                           int64_t stage_capacity, double stage_speedup, int top) {
  sa::AnalyzeOptions o;
  o.input = input;
  o.by = by;
  o.stage_capacity = stage_capacity;
  o.stage_speedup = stage_speedup;
  o.top = top;
  o.threads = 1;
  return o;
}

static void bind_analysis(py::module_& m) {
  static py::exception<sa::InputError> input_error(m, "InputError", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const sa::InputError& e) {
      PyErr_SetString(input_error.ptr(), e.what());
    }
  });
#define STRATA_OPTS                                                                                        \
  py::arg("by") = "", py::arg("stage_capacity") = -1, py::arg("stage_speedup") = 4.0, py::arg("top") = sa::AnalyzeOptions{}.top
  m.def("analysis_units", &sa::list_units, py::arg("input"),
        "the units (process files) of an input, in the order the passes merge them");
  m.def(
      "analyze_unit",
      [](const std::string& input, size_t unit, const std::string& by, int64_t cap, double speedup, int top) {
        std::string b;
        {
          py::gil_scoped_release nogil;
          b = sa::analyze_unit_bytes(analysis_options(input, by, cap, speedup, top), unit);
        }
        return py::bytes(b);
      },
      py::arg("input"), py::arg("unit"), STRATA_OPTS, "the passes' state of one unit, as bytes");
  m.def(
      "merge_states",
      [](const std::string& input, const py::bytes& a, const py::bytes& b, const std::string& by, int64_t cap,
         double speedup, int top) {
        std::string sa_ = a, sb = b;
        std::string r;
        {
          py::gil_scoped_release nogil;
          r = sa::merge_bytes(analysis_options(input, by, cap, speedup, top), sa_, sb);
        }
        return py::bytes(r);
      },
      py::arg("input"), py::arg("first"), py::arg("later"), STRATA_OPTS,
      "the state of units `first` followed by units `later`");
  m.def(
      "analysis_report",
      [](const std::string& input, const py::bytes& state, bool json, const std::string& by, int64_t cap,
         double speedup, int top) {
        std::string s = state;
        return sa::report_from_bytes(analysis_options(input, by, cap, speedup, top), s, json);
      },
      py::arg("input"), py::arg("state"), py::arg("json") = true, STRATA_OPTS,
      "the report of `strata analyze` (JSON or text) from a merged state");
#undef STRATA_OPTS
}
#endif

PYBIND11_MODULE(_reader, m) {
  m.doc() = "strata trace decoding into numpy columns (see strata.read_trace)";
  static py::exception<FormatError> format_error(m, "FormatError", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const FormatError& e) {
      PyErr_SetString(format_error.ptr(), e.what());
    }
  });
  py::class_<FileSpec>(m, "FileSpec")
      .def(py::init([](std::string path, int64_t ts_offset, int64_t first_block, int64_t nblocks,
                       int64_t events, int64_t pid) {
             return FileSpec{std::move(path), ts_offset, first_block, nblocks, events, pid};
           }),
           py::arg("path"), py::arg("ts_offset") = 0, py::arg("first_block") = 0, py::arg("nblocks") = -1,
           py::arg("events") = -1, py::arg("pid") = 0)
      .def_readonly("path", &FileSpec::path)
      .def_readonly("ts_offset", &FileSpec::ts_offset)
      .def_readonly("first_block", &FileSpec::first_block)
      .def_readonly("nblocks", &FileSpec::nblocks)
      .def_readonly("events", &FileSpec::events)
      .def_readonly("pid", &FileSpec::pid);
  m.def("read", &read_specs, py::arg("specs"), py::arg("threads") = 0,
        "Decodes files or block ranges into numpy columns (threads: 0 = one per core).");
  m.def("scan", &scan, py::arg("path"), py::arg("blocks") = true,
        "Files of a trace with process info, trace-time offsets, events per block and tag keys.");
  m.def("functions", &functions_table, "the runtime's table of recorded functions (list of dicts)");
  m.def("layers", &layers_table, "the runtime's table of layers (list of dicts)");
  m.def("list_trace_files", &list_trace_files, py::arg("path"));
#ifdef STRATA_PY_HAVE_ANALYSIS
  bind_analysis(m);
#endif
}
