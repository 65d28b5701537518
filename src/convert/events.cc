#include "convert/events.h"

#include "convert/json_out.h"
#include "format/format.h"

namespace strata::convert {

void visit_trace(const std::string& path, const Visitor& v) {
  for (const auto& f : reader::list_trace_files(path)) {
    reader::FileReader file(f);
    if (v.begin_file) v.begin_file(file);
    reader::EventBatch batch;
    while (file.next(batch)) {
      if (!v.event) continue;
      for (size_t i = 0; i < batch.size_events(); ++i) v.event(EventRef{file, batch, i});
    }
    if (v.end_file) v.end_file(file);
  }
}

void write_tags(JsonOut& out, const reader::Dictionary& dict, uint32_t ctx) {
  bool first = true;
  for (const auto& t : dict.context(ctx)) {
    if (!first) out.ch(',');
    first = false;
    out.key(dict.str(t.key));
    if (t.is_int) out.i64(t.int_value);
    else out.str(dict.str(t.str_value));
  }
}

void write_fields(JsonOut& j, const EventRef& e) {
  namespace f = strata::format;
  const auto& b = e.batch;
  const size_t i = e.i;
  const uint32_t fields = e.name().fields;
  const auto& dict = e.file.dict();
  if ((fields & f::kFieldPath) && b.path[i]) {
    j.raw(",\"path\":");
    j.str(dict.str(b.path[i]));
  }
  auto number = [&](uint32_t bit, const char* key, int64_t v) {
    if (!(fields & bit)) return;
    j.raw(key);
    j.i64(v);
  };
  number(f::kFieldFd, ",\"fd\":", b.fd[i]);
  number(f::kFieldOffset, ",\"offset\":", b.offset[i]);
  number(f::kFieldSize, ",\"size\":", b.size[i]);
  number(f::kFieldValue, ",\"value\":", b.size[i]);
  number(f::kFieldRet, ",\"ret\":", b.ret[i]);
  if (b.err[i]) number(f::kFieldErrno, ",\"errno\":", b.err[i]);
  if (b.mem_align[i]) {
    j.raw(",\"mem_align\":");
    j.i64(static_cast<int64_t>(f::mem_align_bytes(b.mem_align[i])));
  }
  if (b.ctx[i]) {
    j.raw(",\"tags\":{");
    write_tags(j, dict, b.ctx[i]);
    j.ch('}');
  }
}

}  // namespace strata::convert
