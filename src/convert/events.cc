#include "convert/events.h"

#include "convert/json_out.h"

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

}  // namespace strata::convert
