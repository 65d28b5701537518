// Chrome Trace Event JSON. Complete events become "X" events with args holding
// the I/O fields and tags; processes and threads are named with "M" events.
#include <cstring>
#include <memory>

#include "convert/convert.h"
#include "convert/events.h"
#include "convert/json_out.h"
#include "format/format.h"

namespace strata::convert {

namespace fmtf = strata::format;

namespace {

// Chrome args: the layer, then the event's fields.
void write_args(JsonOut& j, const EventRef& e) {
  j.raw(",\"args\":{\"layer\":");
  j.str(e.name().category);
  write_fields(j, e);
  j.ch('}');
}

}  // namespace

uint64_t write_chrome(const std::string& trace, const std::string& out_path) {
  reader::TraceReader tr(trace);
  FILE* out = out_path == "-" ? stdout : std::fopen(out_path.c_str(), "wb");
  if (!out) throw std::runtime_error(out_path + ": cannot open for writing: " + std::strerror(errno));
  uint64_t n = 0;
  {
    FileSink sink(out);
    JsonOut j(sink);
    j.raw("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"strata\"},\"traceEvents\":[\n");
    bool first = true;
    auto begin = [&] {
      if (!first) j.raw(",\n");
      first = false;
    };
    const reader::ProcessInfo* proc = nullptr;
    Visitor v;
    int64_t shift = 0;  // host monotonic ns -> trace ns, per file
    v.begin_file = [&](const reader::FileReader& f) {
      proc = &f.process();
      shift = tr.to_trace_ns(*proc, 0);
      begin();
      j.raw("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":");
      j.i64(proc->pid);
      j.raw(",\"tid\":");
      j.i64(proc->pid);
      j.raw(",\"args\":{\"name\":");
      j.str(proc->cmdline().empty() ? proc->exe : proc->cmdline());
      j.raw("}}");
    };
    v.end_file = [&](const reader::FileReader& f) {
      // Thread names are known once the file's DICT blocks are read.
      for (const auto& [tid, sid] : f.dict().threads()) {
        if (!sid) continue;
        begin();
        j.raw("{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":");
        j.i64(proc->pid);
        j.raw(",\"tid\":");
        j.u64(tid);
        j.raw(",\"args\":{\"name\":");
        j.str(f.dict().str(sid));
        j.raw("}}");
      }
    };
    v.event = [&](const EventRef& e) {
      const auto& b = e.batch;
      size_t i = e.i;
      const auto& nm = e.name();
      begin();
      const char* ph = "X";
      if (nm.kind == static_cast<uint8_t>(fmtf::EventKind::kInstant)) ph = "i";
      if (nm.kind == static_cast<uint8_t>(fmtf::EventKind::kCounter)) ph = "C";
      j.raw("{\"ph\":\"");
      j.raw(ph);
      j.raw("\",\"name\":");
      j.str(nm.name);
      j.raw(",\"cat\":");
      j.str(nm.category);
      j.raw(",\"pid\":");
      j.i64(proc->pid);
      j.raw(",\"tid\":");
      j.u64(b.tid);
      j.raw(",\"ts\":");
      j.micros(static_cast<int64_t>(b.ts[i]) + shift);
      if (ph[0] == 'X') {
        j.raw(",\"dur\":");
        j.micros(static_cast<int64_t>(b.dur[i]));
        write_args(j, e);
      } else if (ph[0] == 'C') {
        j.raw(",\"args\":{");
        j.key(nm.name);
        j.i64(b.size[i]);
        j.ch('}');
      } else {
        j.raw(",\"s\":\"t\"");
        write_args(j, e);
      }
      j.ch('}');
      j.maybe_flush();
      ++n;
    };
    visit_trace(trace, v);
    j.raw("\n]}\n");
    j.flush();
    if (j.failed()) throw std::runtime_error(out_path + ": write failed");
  }
  if (out != stdout && std::fclose(out) != 0)
    throw std::runtime_error(out_path + ": error writing (disk full?): " + std::strerror(errno));
  return n;
}

}  // namespace strata::convert
