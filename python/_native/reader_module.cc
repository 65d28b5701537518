// strata._reader: decodes strata trace files into numpy columns through the
// C++ reader library (include/strata/reader.h). No Python object is made per
// event: every column is a std::vector filled in C++ with the GIL released,
// then handed to numpy without a copy. Ids local to each file (names, paths,
// contexts) are remapped to tables shared by all the files of one call.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "strata/reader.h"

namespace py = pybind11;
using namespace strata::reader;

namespace {

template <typename T>
py::array to_numpy(std::vector<T>&& v) {
  auto* heap = new std::vector<T>(std::move(v));
  py::capsule owner(heap, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  return py::array_t<T>({static_cast<py::ssize_t>(heap->size())}, {sizeof(T)}, heap->data(), owner);
}

template <typename T>
void append(std::vector<T>& dst, const std::vector<T>& src) {
  dst.insert(dst.end(), src.begin(), src.end());
}

py::dict process_dict(const ProcessInfo& p) {
  py::dict d;
  d["pid"] = p.pid;
  d["ppid"] = p.ppid;
  d["rank"] = p.rank;
  d["start_wall_ns"] = p.start_wall_ns;
  d["start_mono_ns"] = p.start_mono_ns;
  d["hostname"] = p.hostname;
  d["exe"] = p.exe;
  d["argv"] = p.argv;
  d["version"] = p.version;
  d["mode"] = p.mode;
  py::dict md;
  for (auto& [k, v] : p.metadata) md[py::str(k)] = v;
  d["metadata"] = md;
  return d;
}

// Shared id tables of one read call.
struct Tables {
  std::vector<std::pair<std::string, std::string>> names;  // (name, category)
  std::vector<uint8_t> kinds;
  std::vector<uint32_t> fields;
  std::unordered_map<std::string, int32_t> name_ix;  // name + '\0' + category
  std::vector<std::string> paths;
  std::unordered_map<std::string, int32_t> path_ix;
  // contexts: tags as (key, is_int, int value, str value); index 0 = no tags
  struct CtxTag {
    std::string key;
    bool is_int;
    int64_t i;
    std::string s;
  };
  std::vector<std::vector<CtxTag>> ctxs{{}};
  std::unordered_map<std::string, int32_t> ctx_ix;

  int32_t name_of(const NameInfo& n) {
    std::string key = n.name;
    key.push_back('\0');
    key += n.category;
    auto it = name_ix.find(key);
    if (it != name_ix.end()) return it->second;
    int32_t id = static_cast<int32_t>(names.size());
    names.emplace_back(n.name, n.category);
    kinds.push_back(n.kind);
    fields.push_back(n.fields);
    name_ix.emplace(std::move(key), id);
    return id;
  }
  int32_t path_of(const std::string& s) {
    auto it = path_ix.find(s);
    if (it != path_ix.end()) return it->second;
    int32_t id = static_cast<int32_t>(paths.size());
    paths.push_back(s);
    path_ix.emplace(s, id);
    return id;
  }
  int32_t ctx_of(const Dictionary& d, uint32_t cid) {
    const auto& tags = d.context(cid);
    if (tags.empty()) return 0;
    std::vector<CtxTag> out;
    std::string key;
    for (const auto& t : tags) {
      CtxTag c{d.str(t.key), t.is_int, t.int_value, t.is_int ? std::string() : d.str(t.str_value)};
      key += c.key;
      key.push_back('\0');
      key += c.is_int ? std::to_string(c.i) : ("s" + c.s);
      key.push_back('\1');
      out.push_back(std::move(c));
    }
    auto it = ctx_ix.find(key);
    if (it != ctx_ix.end()) return it->second;
    int32_t id = static_cast<int32_t>(ctxs.size());
    ctxs.push_back(std::move(out));
    ctx_ix.emplace(std::move(key), id);
    return id;
  }
};

// Per-file local-id -> shared-id maps, grown as the file's dictionary grows.
struct Remap {
  std::vector<int32_t> name, path, ctx;
  void update(const Dictionary& d, Tables& t) {
    for (size_t i = name.size(); i < d.num_names(); ++i) name.push_back(i == 0 ? -1 : t.name_of(d.name(i)));
    path.resize(d.num_strings(), -2);  // -2: not mapped yet (most strings are not paths)
    for (size_t i = ctx.size(); i < d.num_contexts(); ++i) ctx.push_back(i == 0 ? 0 : t.ctx_of(d, i));
  }
};

struct Columns {
  std::vector<int64_t> ts, dur, offset, size, ret, tid;
  std::vector<int32_t> name, path, ctx, fd, err, proc;
};

struct FileSpec {
  std::string path;
  int64_t ts_offset;  // added to host-monotonic ts to get trace time
  int64_t first_block;
  int64_t nblocks;  // -1: to the end
};

void decode_file(const FileSpec& spec, int32_t proc_index, Tables& tables, Columns& c) {
  FileReader r(spec.path);
  for (int64_t b = 0; b < spec.first_block; ++b)
    if (r.skip_events_block() == 0) return;
  Remap remap;
  EventBatch batch;
  for (int64_t b = 0; spec.nblocks < 0 || b < spec.nblocks; ++b) {
    if (!r.next(batch)) break;
    const Dictionary& d = r.dict();
    if (remap.name.size() < d.num_names() || remap.path.size() < d.num_strings() ||
        remap.ctx.size() < d.num_contexts())
      remap.update(d, tables);
    const size_t n = batch.size_events();
    const size_t base = c.ts.size();
    c.ts.resize(base + n);
    for (size_t i = 0; i < n; ++i) c.ts[base + i] = static_cast<int64_t>(batch.ts[i]) + spec.ts_offset;
    append(c.offset, batch.offset);
    append(c.size, batch.size);
    append(c.ret, batch.ret);
    append(c.fd, batch.fd);
    append(c.err, batch.err);
    c.dur.resize(base + n);
    c.name.resize(base + n);
    c.path.resize(base + n);
    c.ctx.resize(base + n);
    for (size_t i = 0; i < n; ++i) {
      c.dur[base + i] = static_cast<int64_t>(batch.dur[i]);
      uint32_t nm = batch.name[i], p = batch.path[i], cx = batch.ctx[i];
      c.name[base + i] = nm < remap.name.size() ? remap.name[nm] : -1;
      int32_t gp = -1;
      if (p != 0 && p < remap.path.size()) {
        gp = remap.path[p];
        if (gp == -2) gp = remap.path[p] = tables.path_of(d.str(p));
      }
      c.path[base + i] = gp;
      c.ctx[base + i] = cx < remap.ctx.size() ? remap.ctx[cx] : 0;
    }
    c.tid.insert(c.tid.end(), n, static_cast<int64_t>(batch.tid));
    c.proc.insert(c.proc.end(), n, proc_index);
  }
}

py::dict result_dict(Columns&& c, Tables&& t) {
  py::dict out;
  out["ts"] = to_numpy(std::move(c.ts));
  out["dur"] = to_numpy(std::move(c.dur));
  out["offset"] = to_numpy(std::move(c.offset));
  out["size"] = to_numpy(std::move(c.size));
  out["ret"] = to_numpy(std::move(c.ret));
  out["tid"] = to_numpy(std::move(c.tid));
  out["name"] = to_numpy(std::move(c.name));
  out["path"] = to_numpy(std::move(c.path));
  out["ctx"] = to_numpy(std::move(c.ctx));
  out["fd"] = to_numpy(std::move(c.fd));
  out["err"] = to_numpy(std::move(c.err));
  out["proc"] = to_numpy(std::move(c.proc));
  py::list names;
  for (size_t i = 0; i < t.names.size(); ++i)
    names.append(py::make_tuple(t.names[i].first, t.names[i].second, t.kinds[i], t.fields[i]));
  out["names"] = names;
  out["paths"] = t.paths;
  py::list ctxs;
  for (auto& tags : t.ctxs) {
    py::list l;
    for (auto& tag : tags) {
      if (tag.is_int)
        l.append(py::make_tuple(tag.key, tag.i));
      else
        l.append(py::make_tuple(tag.key, py::str(tag.s)));
    }
    ctxs.append(l);
  }
  out["contexts"] = ctxs;
  return out;
}

// Reads the given files (or block ranges of them) into one set of columns.
py::dict read_specs(const std::vector<FileSpec>& specs) {
  Columns c;
  Tables t;
  {
    py::gil_scoped_release nogil;
    for (size_t i = 0; i < specs.size(); ++i) decode_file(specs[i], static_cast<int32_t>(i), t, c);
  }
  return result_dict(std::move(c), std::move(t));
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
            const std::string& k = d.str(tag.key);
            auto it = seen.find(k);
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
    d["file"] = f;
    d["ts_offset"] = trace.to_trace_ns(proc, proc.start_mono_ns) - static_cast<int64_t>(proc.start_mono_ns);
    d["start_ns"] = trace.to_trace_ns(proc, proc.start_mono_ns);
    d["block_events"] = to_numpy(std::move(counts));
    py::list kl;
    for (auto& [k, is_int] : keys) kl.append(py::make_tuple(k, is_int));
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
      .def(py::init([](std::string path, int64_t ts_offset, int64_t first_block, int64_t nblocks) {
             return FileSpec{std::move(path), ts_offset, first_block, nblocks};
           }),
           py::arg("path"), py::arg("ts_offset") = 0, py::arg("first_block") = 0, py::arg("nblocks") = -1)
      .def_readonly("path", &FileSpec::path)
      .def_readonly("ts_offset", &FileSpec::ts_offset)
      .def_readonly("first_block", &FileSpec::first_block)
      .def_readonly("nblocks", &FileSpec::nblocks)
      .def(py::pickle(
          [](const FileSpec& s) { return py::make_tuple(s.path, s.ts_offset, s.first_block, s.nblocks); },
          [](py::tuple t) {
            return FileSpec{t[0].cast<std::string>(), t[1].cast<int64_t>(), t[2].cast<int64_t>(),
                            t[3].cast<int64_t>()};
          }));
  m.def("read", &read_specs, py::arg("specs"), "Decodes files or block ranges into numpy columns.");
  m.def("scan", &scan, py::arg("path"), py::arg("blocks") = true,
        "Files of a trace with process info, trace-time offsets, events per block and tag keys.");
  m.def("list_trace_files", &list_trace_files, py::arg("path"));
}
