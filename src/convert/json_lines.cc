// `strata cat`: one JSON object per event and line. The parts that repeat
// (name, category and pid; a path; a tag set) are rendered once per file and
// id, so an event costs a few copies and integer conversions.
#include <string>
#include <vector>

#include "convert/convert.h"
#include "convert/events.h"
#include "convert/json_out.h"
#include "format/format.h"

namespace strata::convert {

namespace fmtf = strata::format;

namespace {

// Renders JSON fragments of one file's dictionary ids on first use.
class Fragments {
 public:
  explicit Fragments(const reader::FileReader& f) : file_(f) {}

  const std::string& name_prefix(uint32_t nid) {
    return get(names_, nid, [&](JsonOut& j) {
      const auto& nm = file_.dict().name(nid);
      j.raw("{\"name\":");
      j.str(nm.name);
      j.raw(",\"cat\":");
      j.str(nm.category);
      j.raw(",\"pid\":");
      j.i64(file_.process().pid);
      j.raw(",\"tid\":");
    });
  }
  const std::string& path(uint32_t sid) {
    return get(paths_, sid, [&](JsonOut& j) {
      j.raw(",\"path\":");
      j.str(file_.dict().str(sid));
    });
  }
  const std::string& tags(uint32_t ctx) {
    return get(tags_, ctx, [&](JsonOut& j) {
      j.raw(",\"tags\":{");
      write_tags(j, file_.dict(), ctx);
      j.ch('}');
    });
  }

 private:
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

  template <class Render>
  const std::string& get(std::vector<std::pair<bool, std::string>>& cache, uint32_t id, Render render) {
    if (id >= cache.size()) cache.resize(id + 1);
    auto& slot = cache[id];
    if (!slot.first) {
      StringSink sink(slot.second);
      JsonOut j(sink);
      render(j);
      j.flush();
      slot.first = true;
    }
    return slot.second;
  }

  const reader::FileReader& file_;
  std::vector<std::pair<bool, std::string>> names_, paths_, tags_;
};

}  // namespace

uint64_t write_json_lines(const std::string& trace, FILE* out) {
  reader::TraceReader tr(trace);
  FileSink sink(out);
  JsonOut j(sink);
  uint64_t n = 0;
  for (const auto& path : tr.files()) {
    reader::FileReader file(path);
    const int64_t shift = tr.to_trace_ns(file.process(), 0);  // host monotonic ns -> trace ns
    Fragments frag(file);
    reader::EventBatch b;
    while (file.next(b)) {
      const auto& dict = file.dict();
      for (size_t i = 0; i < b.size_events(); ++i) {
        const uint32_t f = dict.name(b.name[i]).fields;
        j.raw(frag.name_prefix(b.name[i]));
        j.u64(b.tid);
        j.raw(",\"ts\":");
        j.i64(static_cast<int64_t>(b.ts[i]) + shift);
        j.raw(",\"dur\":");
        j.u64(b.dur[i]);
        if ((f & fmtf::kFieldPath) && b.path[i]) j.raw(frag.path(b.path[i]));
        if (f & fmtf::kFieldFd) { j.raw(",\"fd\":"); j.i64(b.fd[i]); }
        if (f & fmtf::kFieldOffset) { j.raw(",\"offset\":"); j.i64(b.offset[i]); }
        if (f & fmtf::kFieldSize) { j.raw(",\"size\":"); j.i64(b.size[i]); }
        if (f & fmtf::kFieldValue) { j.raw(",\"value\":"); j.i64(b.size[i]); }
        if (f & fmtf::kFieldRet) { j.raw(",\"ret\":"); j.i64(b.ret[i]); }
        if ((f & fmtf::kFieldErrno) && b.err[i]) { j.raw(",\"errno\":"); j.i64(b.err[i]); }
        if (b.ctx[i]) j.raw(frag.tags(b.ctx[i]));
        j.raw("}\n");
        j.maybe_flush();
      }
      n += b.size_events();
    }
  }
  j.flush();
  return n;
}

}  // namespace strata::convert
