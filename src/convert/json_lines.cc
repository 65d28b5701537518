#include "convert/convert.h"
#include "convert/events.h"
#include "convert/json_out.h"
#include "format/format.h"

namespace strata::convert {

namespace fmtf = strata::format;

uint64_t write_json_lines(const std::string& trace, FILE* out) {
  reader::TraceReader tr(trace);
  FileSink sink(out);
  JsonOut j(sink);
  uint64_t n = 0;
  const reader::ProcessInfo* proc = nullptr;
  int64_t shift = 0;  // host monotonic ns -> trace ns, per file
  Visitor v;
  v.begin_file = [&](const reader::FileReader& f) {
    proc = &f.process();
    shift = tr.to_trace_ns(*proc, 0);
  };
  v.event = [&](const EventRef& e) {
    const auto& b = e.batch;
    size_t i = e.i;
    const auto& nm = e.name();
    const auto& dict = e.file.dict();
    j.raw("{\"name\":");
    j.str(nm.name);
    j.raw(",\"cat\":");
    j.str(nm.category);
    j.raw(",\"pid\":");
    j.i64(proc->pid);
    j.raw(",\"tid\":");
    j.u64(b.tid);
    j.raw(",\"ts\":");
    j.i64(static_cast<int64_t>(b.ts[i]) + shift);
    j.raw(",\"dur\":");
    j.u64(b.dur[i]);
    uint32_t f = nm.fields;
    if ((f & fmtf::kFieldPath) && b.path[i]) {
      j.raw(",\"path\":");
      j.str(dict.str(b.path[i]));
    }
    if (f & fmtf::kFieldFd) {
      j.raw(",\"fd\":");
      j.i64(b.fd[i]);
    }
    if (f & fmtf::kFieldOffset) {
      j.raw(",\"offset\":");
      j.i64(b.offset[i]);
    }
    if (f & fmtf::kFieldSize) {
      j.raw(",\"size\":");
      j.i64(b.size[i]);
    }
    if (f & fmtf::kFieldValue) {
      j.raw(",\"value\":");
      j.i64(b.size[i]);
    }
    if (f & fmtf::kFieldRet) {
      j.raw(",\"ret\":");
      j.i64(b.ret[i]);
    }
    if ((f & fmtf::kFieldErrno) && b.err[i]) {
      j.raw(",\"errno\":");
      j.i64(b.err[i]);
    }
    if (b.ctx[i]) {
      j.raw(",\"tags\":{");
      write_tags(j, dict, b.ctx[i]);
      j.ch('}');
    }
    j.raw("}\n");
    j.maybe_flush();
    ++n;
  };
  visit_trace(trace, v);
  j.flush();
  return n;
}

}  // namespace strata::convert
