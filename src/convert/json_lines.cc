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
    write_fields(j, e);
    j.raw("}\n");
    j.maybe_flush();
    ++n;
  };
  visit_trace(trace, v);
  j.flush();
  return n;
}

}  // namespace strata::convert
